//! Printing an example: the AgentScript `code` and its JSON literals, within size limits.

use super::*;

/// `const <var> = await callTool('<name>', <input>);` [result comment] `return <var>;`, or `None`
/// when the input cannot be printed or the code would be longer than [`MAX_CODE_BYTES`].
pub(super) fn render_code(name: &str, var: &str, input: &Value, output: Option<&Value>) -> Option<String> {
  let head = format!("const {var} = await callTool({}, ", quote(name));
  if head.len() > MAX_CODE_BYTES {
    return None;
  }
  let args = literal(input, 0, head.len())?;
  let mut code = format!("{head}{args});\n");
  if let Some(output) = output {
    let mut json = String::new();
    let complete = compact_json(output, 0, &mut json, MAX_RESULT_CHARS);
    if !complete {
      json.push('…');
    }
    code.push_str("// Example result: ");
    code.push_str(&json);
    code.push('\n');
  }
  code.push_str("return ");
  code.push_str(var);
  code.push(';');
  (code.len() <= MAX_CODE_BYTES).then_some(code)
}

/// A JavaScript literal for `value`, on one line when it fits in [`INLINE_WIDTH`] columns from
/// `column`, otherwise one member per line, indented by two spaces per `level`.
pub(super) fn literal(value: &Value, level: usize, column: usize) -> Option<String> {
  let mut inline = String::new();
  if !inline_literal(value, 0, &mut inline) {
    return None;
  }
  let nested = match value {
    Value::Object(o) => !o.is_empty(),
    Value::Array(a) => !a.is_empty(),
    _ => false,
  };
  if !nested || column + inline.chars().count() <= INLINE_WIDTH {
    return Some(inline);
  }
  let pad = "  ".repeat(level + 1);
  let mut lines: Vec<String> = Vec::new();
  match value {
    Value::Object(o) => {
      for (k, v) in o {
        let key = object_key(k);
        let member = literal(v, level + 1, pad.len() + key.len() + 2)?;
        lines.push(format!("{pad}{key}: {member}"));
      }
    }
    Value::Array(items) => {
      for v in items {
        lines.push(format!("{pad}{}", literal(v, level + 1, pad.len())?));
      }
    }
    _ => {}
  }
  let (open, close) = if value.is_object() { ('{', '}') } else { ('[', ']') };
  Some(format!("{open}\n{}\n{}{close}", lines.join(",\n"), "  ".repeat(level)))
}

/// Writes the one-line literal; false when it is too large, too deep or has a forbidden key.
pub(super) fn inline_literal(value: &Value, depth: usize, out: &mut String) -> bool {
  if depth > MAX_PRINT_DEPTH || out.len() > MAX_CODE_BYTES {
    return false;
  }
  match value {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => out.push_str(&n.to_string()),
    Value::String(s) => {
      if s.len() > MAX_CODE_BYTES {
        return false;
      }
      out.push_str(&quote(s));
    }
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push_str(", ");
        }
        if !inline_literal(item, depth + 1, out) {
          return false;
        }
      }
      out.push(']');
    }
    Value::Object(o) if o.is_empty() => out.push_str("{}"),
    Value::Object(o) => {
      out.push_str("{ ");
      for (i, (k, v)) in o.iter().enumerate() {
        if FORBIDDEN_KEYS.contains(&k.as_str()) || k.len() > MAX_CODE_BYTES {
          return false;
        }
        if i > 0 {
          out.push_str(", ");
        }
        out.push_str(&object_key(k));
        out.push_str(": ");
        if !inline_literal(v, depth + 1, out) {
          return false;
        }
      }
      out.push_str(" }");
    }
  }
  true
}

/// A key in an object literal: bare when it is a plain identifier, quoted otherwise (and always
/// when it starts with `__`, a prefix the sandbox reserves for identifiers).
pub(super) fn object_key(key: &str) -> String {
  if is_identifier(key) && !key.starts_with("__") {
    key.to_string()
  } else {
    quote(key)
  }
}

/// Compact JSON of `value` into `out`, stopping after about `max` characters (false then). Line
/// terminators are escaped, so the text is safe in a `//` comment.
pub(super) fn compact_json(value: &Value, depth: usize, out: &mut String, max: usize) -> bool {
  if out.len() > max {
    return false;
  }
  if depth > MAX_PRINT_DEPTH {
    out.push('…');
    return false;
  }
  match value {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => out.push_str(&n.to_string()),
    Value::String(s) => json_string(s, out, max),
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        if !compact_json(item, depth + 1, out, max) {
          return false;
        }
      }
      out.push(']');
    }
    Value::Object(o) => {
      out.push('{');
      for (i, (k, v)) in o.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        json_string(k, out, max);
        out.push(':');
        if !compact_json(v, depth + 1, out, max) {
          return false;
        }
      }
      out.push('}');
    }
  }
  if out.len() > max {
    out.truncate(crate::common::char_prefix(out, max).len());
    return false;
  }
  true
}

pub(super) fn json_string(s: &str, out: &mut String, max: usize) {
  out.push('"');
  for c in s.chars() {
    if out.len() > max {
      break;
    }
    match c {
      '"' => out.push_str("\\\""),
      '\\' => out.push_str("\\\\"),
      '\n' => out.push_str("\\n"),
      '\r' => out.push_str("\\r"),
      '\t' => out.push_str("\\t"),
      c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
      c => out.push(c),
    }
  }
  out.push('"');
}
