//! A small JSON writer for the data the sandbox produces itself (results, events, errors).
//! Strings are escaped so the output is always valid JSON, lone surrogates included
//! (they are written as U+FFFD).

#[derive(Default)]
pub struct JsonWriter {
  out: String,
  /// Per open container: has it had an element yet?
  first: Vec<bool>,
  after_key: bool,
}

impl JsonWriter {
  fn separate(&mut self) {
    if self.after_key {
      self.after_key = false;
      return;
    }
    if let Some(first) = self.first.last_mut() {
      if !*first {
        self.out.push(',');
      }
      *first = false;
    }
  }

  pub fn begin_object(&mut self) -> &mut Self {
    self.separate();
    self.out.push('{');
    self.first.push(true);
    self
  }

  pub fn end_object(&mut self) -> &mut Self {
    self.first.pop();
    self.out.push('}');
    self
  }

  pub fn begin_array(&mut self) -> &mut Self {
    self.separate();
    self.out.push('[');
    self.first.push(true);
    self
  }

  pub fn end_array(&mut self) -> &mut Self {
    self.first.pop();
    self.out.push(']');
    self
  }

  pub fn key(&mut self, key: &str) -> &mut Self {
    self.separate();
    escape_into(&mut self.out, key);
    self.out.push(':');
    self.after_key = true;
    self
  }

  pub fn string(&mut self, value: &str) -> &mut Self {
    self.separate();
    escape_into(&mut self.out, value);
    self
  }

  pub fn number(&mut self, value: f64) -> &mut Self {
    self.separate();
    if value.is_finite() {
      if value.fract() == 0.0 && value.abs() < 9.0e15 {
        self.out.push_str(&format!("{}", value as i64));
      } else {
        self.out.push_str(&format!("{value}"));
      }
    } else {
      self.out.push_str("null");
    }
    self
  }

  #[cfg(test)]
  pub fn bool(&mut self, value: bool) -> &mut Self {
    self.separate();
    self.out.push_str(if value { "true" } else { "false" });
    self
  }

  #[cfg(test)]
  pub fn null(&mut self) -> &mut Self {
    self.separate();
    self.out.push_str("null");
    self
  }

  /// Inserts already-serialized JSON.
  pub fn raw(&mut self, json: &str) -> &mut Self {
    self.separate();
    self.out.push_str(json);
    self
  }

  pub fn finish(self) -> String {
    self.out
  }
}

/// Writes `value` as a JSON string literal.
pub fn escape_into(out: &mut String, value: &str) {
  out.push('"');
  for c in value.chars() {
    match c {
      '"' => out.push_str("\\\""),
      '\\' => out.push_str("\\\\"),
      '\n' => out.push_str("\\n"),
      '\r' => out.push_str("\\r"),
      '\t' => out.push_str("\\t"),
      '\u{2028}' => out.push_str("\\u2028"),
      '\u{2029}' => out.push_str("\\u2029"),
      c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
      c => out.push(c),
    }
  }
  out.push('"');
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn writes_nested_json() {
    let mut w = JsonWriter::default();
    w.begin_object();
    w.key("a").number(1.0);
    w.key("b").begin_array();
    w.string("x\"y\n").bool(true).null().number(1.5);
    w.end_array();
    w.key("c").raw("{\"d\":2}");
    w.end_object();
    assert_eq!(w.finish(), r#"{"a":1,"b":["x\"y\n",true,null,1.5],"c":{"d":2}}"#);
  }
}
