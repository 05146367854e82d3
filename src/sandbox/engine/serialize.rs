//! The result crosses as JSON, serialized here, inside the sandbox and under its limits
//! (`api.md` §2.4):
//! - functions, symbols, BigInts and cycles anywhere are errors naming the path (`$.items[3].fn`);
//! - past `maxResultBytes` the result is refused (`RESULT_TOO_LARGE`) without building the rest;
//! - lone UTF-16 surrogates become U+FFFD;
//! - `toJSON` is honoured (dates), getters run under the execution's deadline, and host calls
//!   are refused while this runs.
//!
//! Keys such as `__proto__` are written as plain keys; the host parses them as own properties.

use rquickjs::{Ctx, Function, Object, Type, Value};

use super::strings::js_string_lossy;
use crate::sandbox::json::escape_into;

/// How deep a result may nest; deeper is refused rather than risking the native stack.
pub const MAX_DEPTH: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerializeError {
  /// Not representable (function, symbol, BigInt, cycle, too deep), at a path.
  Unrepresentable { what: String, path: String },
  /// Larger than the limit.
  TooLarge { limit: u64 },
  /// A getter or `toJSON` threw; the exception is pending in the context.
  Threw,
}

/// Serializes `value`; `Ok(None)` for `undefined`.
pub fn to_json<'js>(ctx: &Ctx<'js>, value: Value<'js>, limit: u64) -> Result<Option<String>, SerializeError> {
  if value.is_undefined() {
    return Ok(None);
  }
  let _ = ctx;
  let mut s = Serializer { out: String::new(), limit, path: vec![PathPart::Root], seen: Vec::new() };
  s.value(value, "")?;
  Ok(Some(s.out))
}

enum PathPart {
  Root,
  Key(String),
  Index(usize),
}

struct Serializer<'js> {
  out: String,
  limit: u64,
  path: Vec<PathPart>,
  /// Objects on the current path, for cycle detection.
  seen: Vec<Object<'js>>,
}

impl<'js> Serializer<'js> {
  fn path(&self) -> String {
    let mut out = String::new();
    for part in &self.path {
      match part {
        PathPart::Root => out.push('$'),
        PathPart::Index(i) => out.push_str(&format!("[{i}]")),
        PathPart::Key(k) => {
          let ident = !k.is_empty()
            && k.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            && !k.starts_with(|c: char| c.is_ascii_digit());
          if ident {
            out.push('.');
            out.push_str(k);
          } else {
            out.push('[');
            escape_into(&mut out, k);
            out.push(']');
          }
        }
      }
    }
    out
  }

  fn fail(&self, what: &str) -> SerializeError {
    SerializeError::Unrepresentable { what: what.to_string(), path: self.path() }
  }

  fn check_size(&self) -> Result<(), SerializeError> {
    if self.out.len() as u64 > self.limit {
      return Err(SerializeError::TooLarge { limit: self.limit });
    }
    Ok(())
  }

  /// Writes one value. `key` is what `toJSON` receives.
  fn value(&mut self, value: Value<'js>, key: &str) -> Result<(), SerializeError> {
    let value = self.apply_to_json(value, key)?;
    match value.type_of() {
      Type::Undefined | Type::Uninitialized | Type::Null => self.out.push_str("null"),
      Type::Bool => self.out.push_str(if value.as_bool().unwrap_or(false) { "true" } else { "false" }),
      Type::Int => self.out.push_str(&value.as_int().unwrap_or(0).to_string()),
      Type::Float => {
        let f = value.as_float().unwrap_or(f64::NAN);
        if f.is_finite() {
          if f == 0.0 {
            self.out.push('0');
          } else {
            self.out.push_str(&format_number(f));
          }
        } else {
          self.out.push_str("null");
        }
      }
      Type::String => {
        let text = value.as_string().map(js_string_lossy).unwrap_or_default();
        if (self.out.len() + text.len()) as u64 > self.limit {
          return Err(SerializeError::TooLarge { limit: self.limit });
        }
        escape_into(&mut self.out, &text);
      }
      Type::Symbol => return Err(self.fail("a symbol")),
      Type::BigInt => return Err(self.fail("a BigInt")),
      Type::Function | Type::Constructor => return Err(self.fail("a function")),
      Type::Module | Type::Unknown => return Err(self.fail("an unsupported value")),
      Type::Array | Type::Object | Type::Promise | Type::Exception | Type::Proxy => {
        let Some(object) = value.as_object().cloned() else { return Err(self.fail("an unsupported value")) };
        if self.seen.iter().any(|o| o.as_value() == object.as_value()) {
          return Err(self.fail("a cycle"));
        }
        if self.seen.len() >= MAX_DEPTH {
          return Err(self.fail(&format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.seen.push(object.clone());
        let result = if value.is_array() { self.array(&object) } else { self.object(&object) };
        self.seen.pop();
        result?;
      }
    }
    self.check_size()
  }

  fn apply_to_json(&mut self, value: Value<'js>, key: &str) -> Result<Value<'js>, SerializeError> {
    let Some(object) = value.as_object() else { return Ok(value) };
    let to_json = match object.get::<_, Value>("toJSON") {
      Ok(v) => v,
      Err(_) => return Err(SerializeError::Threw),
    };
    match to_json.as_function() {
      Some(f) => {
        let f: Function = f.clone();
        f.call::<_, Value>((rquickjs::function::This(value.clone()), key)).map_err(|_| SerializeError::Threw)
      }
      None => Ok(value),
    }
  }

  fn array(&mut self, array: &Object<'js>) -> Result<(), SerializeError> {
    let length: usize = array.get::<_, f64>("length").map_err(|_| SerializeError::Threw)? as usize;
    self.out.push('[');
    for i in 0..length {
      if i > 0 {
        self.out.push(',');
      }
      let item: Value = array.get(i as u32).map_err(|_| SerializeError::Threw)?;
      self.path.push(PathPart::Index(i));
      self.value(item, &i.to_string())?;
      self.path.pop();
    }
    self.out.push(']');
    Ok(())
  }

  fn object(&mut self, object: &Object<'js>) -> Result<(), SerializeError> {
    self.out.push('{');
    let mut first = true;
    // Each key is read back by its own JS value: its text may hold lone surrogates, which the
    // written key turns into U+FFFD — reading by that text would miss the property.
    let keys: Vec<(Value<'js>, String)> = object
      .keys::<rquickjs::Value>()
      .filter_map(|k| k.ok())
      .filter_map(|k| {
        let text = k.as_string().map(js_string_lossy)?;
        Some((k, text))
      })
      .collect();
    for (raw, key) in keys {
      let item: Value = object.get(raw).map_err(|_| SerializeError::Threw)?;
      if item.is_undefined() {
        continue;
      }
      if !first {
        self.out.push(',');
      }
      first = false;
      escape_into(&mut self.out, &key);
      self.out.push(':');
      self.path.push(PathPart::Key(key.clone()));
      self.value(item, &key)?;
      self.path.pop();
    }
    self.out.push('}');
    Ok(())
  }
}

/// Numbers as JavaScript prints them (shortest round-trip form).
fn format_number(f: f64) -> String {
  if f.fract() == 0.0 && f.abs() < 1e21 {
    format!("{f:.0}")
  } else {
    let s = format!("{f}");
    if f.abs() >= 1e21 || (f.abs() < 1e-6 && f != 0.0) {
      format!("{f:e}").replace('e', "e+").replace("e+-", "e-")
    } else {
      s
    }
  }
}
