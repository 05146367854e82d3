//! What the TypeScript declarations (`typescript`) and the usage examples (`examples/`) both need
//! from a tool's JSON Schema: local `$ref` resolution, and its names and strings written as
//! JavaScript (identifier test, single-quoted literal).

use serde_json::Value;

/// A `$ref` JSON Pointer is followed through at most this many segments.
const MAX_POINTER_SEGMENTS: usize = 64;

/// The schema a local `$ref` points to inside `root`: `#`, or a JSON Pointer fragment (`#/$defs/X`,
/// `#/definitions/X`, `#/properties/a/items`, with `~0`, `~1` and `%XX` escapes). `None` for
/// remote references, anchors and pointers that lead nowhere.
pub fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
  let fragment = reference.strip_prefix('#')?;
  if fragment.is_empty() {
    return Some(root);
  }
  let path = fragment.strip_prefix('/')?;
  let mut current = root;
  for (i, raw) in path.split('/').enumerate() {
    if i >= MAX_POINTER_SEGMENTS {
      return None;
    }
    let segment = percent_decode(raw).replace("~1", "/").replace("~0", "~");
    current = match current {
      Value::Object(map) => map.get(&segment)?,
      Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
      _ => return None,
    };
  }
  Some(current)
}

fn percent_decode(raw: &str) -> String {
  if !raw.contains('%') {
    return raw.to_string();
  }
  let bytes = raw.as_bytes();
  let mut out = Vec::with_capacity(bytes.len());
  let mut i = 0;
  while i < bytes.len() {
    let hex = |b: u8| (b as char).to_digit(16);
    match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
      (b'%', Some(h), Some(l)) => {
        out.push((h * 16 + l) as u8);
        i += 3;
      }
      (b, _, _) => {
        out.push(b);
        i += 1;
      }
    }
  }
  String::from_utf8(out).unwrap_or_else(|_| raw.to_string())
}

/// An ASCII JavaScript identifier (`[A-Za-z_$][A-Za-z0-9_$]*`).
pub(crate) fn is_identifier(s: &str) -> bool {
  let mut chars = s.chars();
  match chars.next() {
    Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
    _ => return false,
  }
  chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A single-quoted JavaScript / TypeScript string literal of `s`, escaped.
pub fn quote(s: &str) -> String {
  let mut out = String::with_capacity(s.len() + 2);
  out.push('\'');
  for c in s.chars() {
    match c {
      '\'' => out.push_str("\\'"),
      '\\' => out.push_str("\\\\"),
      '\n' => out.push_str("\\n"),
      '\r' => out.push_str("\\r"),
      '\t' => out.push_str("\\t"),
      c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{2028}' || c == '\u{2029}' || c == '\u{feff}' => {
        out.push_str(&format!("\\u{:04x}", c as u32));
      }
      c => out.push(c),
    }
  }
  out.push('\'');
  out
}
