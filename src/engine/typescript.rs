//! TypeScript declarations for tools, written from their JSON Schemas.
//!
//! [`declaration`] turns one tool into one overload of an ambient `callTool` function:
//!
//! ```ts
//! /** List users with pagination. */
//! declare function callTool(name: 'users:list', input: {
//!   /** Page size */
//!   limit?: number;
//!   role?: 'admin' | 'member';
//! }): Promise<{ items: { id: string; email: string }[]; total: number }>;
//! ```
//!
//! Declarations of many tools concatenated into one `.d.ts` file compile under `tsc --strict`.
//!
//! What is read: `type` (one or a list), `properties` / `required` / `additionalProperties` /
//! `patternProperties`, `items` / `prefixItems` / `additionalItems` / `minItems` (tuples), `enum`,
//! `const`, `anyOf` / `oneOf` (unions), `allOf` (intersections), `nullable`, `description` (JSDoc)
//! and local `$ref`s (`#`, `#/$defs/X`, `#/definitions/X`, any JSON Pointer into the same schema).
//! Anything else, and anything that is not a schema at all, becomes `unknown`.
//!
//! Hostile schemas are safe: nesting deeper than [`MAX_DEPTH`] levels, a `$ref` already being
//! expanded on the current path (recursion), and everything past the output budget (about
//! [`INPUT_BUDGET`] bytes for the input type, [`OUTPUT_BUDGET`] for the result type) render as
//! `unknown`. Recursion depth is bounded, so the stack is too; nothing here panics.
//!
//! `$ref` resolution and JS quoting come from `schema`, shared with the usage examples.

use std::collections::HashSet;

use super::schema::{is_identifier, quote, resolve_ref};

use serde_json::{Map, Value};

/// Schemas nested deeper than this render as `unknown`.
pub const MAX_DEPTH: usize = 12;
/// About this many bytes of TypeScript are written for one input type; deeper parts past it become `unknown`.
pub const INPUT_BUDGET: usize = 12 * 1024;
/// The same budget for the result type.
pub const OUTPUT_BUDGET: usize = 4 * 1024;
/// Property descriptions are cut to this many characters.
const MAX_DOC_CHARS: usize = 200;
/// The tool description is cut to this many characters.
const MAX_TOOL_DOC_CHARS: usize = 400;
/// String literals longer than this (in `enum` / `const`) are written as `string`.
const MAX_LITERAL_CHARS: usize = 256;
/// An object whose members fit in this many characters (and carry no JSDoc) is written on one line.
const INLINE_WIDTH: usize = 72;
/// An index signature type built as a union of the declared property types is kept under this length.
const MAX_INDEX_UNION: usize = 160;
/// At most this many branches of one union / members of one enum / elements of one tuple.
const MAX_PARTS: usize = 256;
/// `const` / `enum` values that are objects or arrays are described this many levels deep.
const MAX_LITERAL_DEPTH: usize = 4;

/// One overload of `declare function callTool(...)` for a tool, JSDoc included, ending in a newline.
///
/// `input_schema: None` (or JSON `null`) declares `input?: Record<string, unknown>`;
/// `output_schema: None` declares `Promise<unknown>`.
pub fn declaration(
  name: &str,
  description: Option<&str>,
  input_schema: Option<&Value>,
  output_schema: Option<&Value>,
) -> String {
  let mut out = String::new();
  if let Some(doc) = description.and_then(|d| doc_text(d, MAX_TOOL_DOC_CHARS)) {
    out.push_str("/** ");
    out.push_str(&doc);
    out.push_str(" */\n");
  }
  out.push_str("declare function callTool(name: ");
  out.push_str(&quote(name));
  match input_schema.filter(|s| !s.is_null()) {
    None => out.push_str(", input?: Record<string, unknown>"),
    Some(schema) => {
      out.push_str(", input: ");
      out.push_str(&type_with_budget(schema, INPUT_BUDGET));
    }
  }
  out.push_str("): Promise<");
  match output_schema.filter(|s| !s.is_null()) {
    None => out.push_str("unknown"),
    Some(schema) => out.push_str(&type_with_budget(schema, OUTPUT_BUDGET)),
  }
  out.push_str(">;\n");
  out
}

/// The TypeScript type of one JSON Schema (its own root for `$ref`s), at most about [`INPUT_BUDGET`]
/// bytes: what `declaration` writes for a parameter, alone (the tests' door).
#[cfg(test)]
pub fn type_expression(schema: &Value) -> String {
  type_with_budget(schema, INPUT_BUDGET)
}

fn type_with_budget(schema: &Value, budget: usize) -> String {
  // The budget is counted as text is produced; should the result still come out far larger (it
  // cannot by much), try again shallower.
  let mut max_depth = MAX_DEPTH;
  loop {
    let mut renderer = Renderer { root: schema, refs: Vec::new(), used: 0, budget, max_depth };
    let ty = renderer.render(schema, 0, 0);
    if ty.text.len() <= budget.saturating_mul(2) || max_depth == 0 {
      return if ty.text.len() <= budget.saturating_mul(2) { ty.text } else { "unknown".to_string() };
    }
    max_depth /= 2;
  }
}

/// How tightly a type expression binds, to know when it needs parentheses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prec {
  /// `A | B`
  Union,
  /// `A & B`
  Intersection,
  /// `-1` (a prefix expression: fine in unions, not before `[]`)
  Prefix,
  /// keywords, literals, `{...}`, `[...]`, `T[]`, `(...)`
  Atom,
}

#[derive(Clone, Debug)]
struct Ty {
  text: String,
  prec: Prec,
}

impl Ty {
  fn atom(text: impl Into<String>) -> Ty {
    Ty { text: text.into(), prec: Prec::Atom }
  }
  fn unknown() -> Ty {
    Ty::atom("unknown")
  }
  fn is_unknown(&self) -> bool {
    self.text == "unknown"
  }
  fn is_never(&self) -> bool {
    self.text == "never"
  }
  /// The text, parenthesised unless it binds at least as tightly as `min`.
  fn wrapped(&self, min: Prec) -> String {
    let tight = match min {
      Prec::Atom => self.prec == Prec::Atom,
      Prec::Prefix => matches!(self.prec, Prec::Atom | Prec::Prefix),
      Prec::Intersection => self.prec != Prec::Union,
      Prec::Union => true,
    };
    if tight {
      self.text.clone()
    } else {
      format!("({})", self.text)
    }
  }
}

/// `A | B | ...` without repeats; `unknown` swallows the union, `never` members drop out.
fn union(parts: Vec<Ty>) -> Ty {
  let mut seen: Vec<Ty> = Vec::new();
  for part in parts {
    if part.is_unknown() {
      return Ty::unknown();
    }
    if part.is_never() || seen.iter().any(|s| s.text == part.text) {
      continue;
    }
    seen.push(part);
  }
  match seen.len() {
    0 => Ty::atom("never"),
    1 => seen.pop().unwrap_or_else(Ty::unknown),
    _ => Ty { text: seen.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" | "), prec: Prec::Union },
  }
}

/// `A & B & ...` without repeats; `unknown` members drop out, `never` swallows the intersection.
fn intersection(parts: Vec<Ty>) -> Ty {
  let mut seen: Vec<Ty> = Vec::new();
  for part in parts {
    if part.is_never() {
      return part;
    }
    if part.is_unknown() || seen.iter().any(|s| s.text == part.text) {
      continue;
    }
    seen.push(part);
  }
  match seen.len() {
    0 => Ty::unknown(),
    1 => seen.pop().unwrap_or_else(Ty::unknown),
    _ => Ty {
      text: seen.iter().map(|t| t.wrapped(Prec::Intersection)).collect::<Vec<_>>().join(" & "),
      prec: Prec::Intersection,
    },
  }
}

struct Member {
  key: String,
  optional: bool,
  ty: Ty,
  doc: Option<String>,
}

struct Renderer<'a> {
  root: &'a Value,
  /// `$ref`s being expanded on the current path.
  refs: Vec<&'a str>,
  /// Bytes of output produced so far (approximately).
  used: usize,
  budget: usize,
  max_depth: usize,
}

impl<'a> Renderer<'a> {
  fn exhausted(&self) -> bool {
    self.used >= self.budget
  }

  fn charge(&mut self, bytes: usize) {
    self.used = self.used.saturating_add(bytes);
  }

  /// `level` is the indentation level of the line the type starts on.
  fn render(&mut self, schema: &'a Value, depth: usize, level: usize) -> Ty {
    if depth > self.max_depth || self.exhausted() {
      self.charge(7);
      return Ty::unknown();
    }
    let ty = match schema {
      Value::Bool(false) => Ty::atom("never"),
      Value::Object(map) => self.render_map(map, depth, level),
      _ => Ty::unknown(),
    };
    self.charge(if ty.prec == Prec::Atom && !ty.text.contains('\n') { ty.text.len().min(16) } else { 4 });
    ty
  }

  fn render_map(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
    let ty = match map.get("$ref") {
      Some(Value::String(r)) => self.render_ref(r, depth, level),
      _ => self.render_plain(map, depth, level),
    };
    if map.get("nullable") == Some(&Value::Bool(true)) && !ty.is_unknown() {
      union(vec![ty, Ty::atom("null")])
    } else {
      ty
    }
  }

  fn render_ref(&mut self, r: &'a str, depth: usize, level: usize) -> Ty {
    if self.refs.contains(&r) {
      return Ty::unknown();
    }
    let Some(target) = resolve_ref(self.root, r) else { return Ty::unknown() };
    self.refs.push(r);
    let ty = self.render(target, depth + 1, level);
    self.refs.pop();
    ty
  }

  fn render_plain(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
    let mut parts = Vec::new();
    if let Some(value) = map.get("const") {
      parts.push(self.literal(value, 0));
    } else if let Some(Value::Array(values)) = map.get("enum") {
      parts.push(self.literal_union(values));
    } else {
      parts.push(self.render_types(map, depth, level));
    }
    for (key, is_union) in [("anyOf", true), ("oneOf", true), ("allOf", false)] {
      let Some(Value::Array(branches)) = map.get(key) else { continue };
      if branches.is_empty() {
        continue;
      }
      let mut rendered = Vec::new();
      for branch in branches.iter().take(MAX_PARTS) {
        if self.exhausted() {
          rendered.push(Ty::unknown());
          break;
        }
        rendered.push(self.render(branch, depth + 1, level));
        self.charge(3);
      }
      if branches.len() > MAX_PARTS && is_union {
        rendered.push(Ty::unknown());
      }
      if is_union {
        parts.push(union(rendered));
      } else {
        parts.extend(rendered);
      }
    }
    intersection(parts)
  }

  /// The type from `type` (or, without it, from the keywords that imply one); `unknown` when nothing says.
  fn render_types(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
    match map.get("type") {
      Some(Value::String(t)) => self.render_type_name(t, map, depth, level),
      Some(Value::Array(types)) => {
        let mut parts = Vec::new();
        for t in types.iter().take(16) {
          match t {
            Value::String(t) => parts.push(self.render_type_name(t, map, depth, level)),
            _ => return Ty::unknown(),
          }
        }
        if parts.is_empty() {
          Ty::unknown()
        } else {
          union(parts)
        }
      }
      Some(_) => Ty::unknown(),
      None => {
        let has = |k: &str| map.contains_key(k);
        if has("properties") || has("additionalProperties") || has("patternProperties") || has("required") {
          self.render_object(map, depth, level, false)
        } else if has("items") || has("prefixItems") {
          self.render_array(map, depth, level)
        } else {
          Ty::unknown()
        }
      }
    }
  }

  fn render_type_name(&mut self, name: &str, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
    match name {
      "string" => Ty::atom("string"),
      "number" | "integer" => Ty::atom("number"),
      "boolean" => Ty::atom("boolean"),
      "null" => Ty::atom("null"),
      "object" => self.render_object(map, depth, level, true),
      "array" => self.render_array(map, depth, level),
      _ => Ty::unknown(),
    }
  }

  fn render_object(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize, explicit: bool) -> Ty {
    let mut members: Vec<Member> = Vec::new();
    let mut truncated = false;
    let required: Vec<&str> = match map.get("required") {
      Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
      _ => Vec::new(),
    };
    let required_set: HashSet<&str> = required.iter().copied().collect();
    let properties = map.get("properties").and_then(Value::as_object);
    if let Some(props) = properties {
      for (key, sub) in props {
        if self.exhausted() {
          truncated = true;
          break;
        }
        let ty = self.render(sub, depth + 1, level + 1);
        let doc = sub.get("description").and_then(Value::as_str).and_then(|d| doc_text(d, MAX_DOC_CHARS));
        let optional = !required_set.contains(key.as_str());
        let key = property_key(key);
        self.charge(key.len() + doc.as_ref().map_or(0, |d| d.len() + 8) + 2 * (level + 1) + 4);
        members.push(Member { optional, key, ty, doc });
      }
    }
    let mut extra: HashSet<&str> = HashSet::new();
    for name in &required {
      if properties.is_some_and(|p| p.contains_key(*name)) || !extra.insert(name) {
        continue;
      }
      let key = property_key(name);
      if self.exhausted() {
        truncated = true;
        break;
      }
      self.charge(key.len() + 12);
      members.push(Member { key, optional: false, ty: Ty::unknown(), doc: None });
    }

    let has_patterns = map.get("patternProperties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    let mut index = match map.get("additionalProperties") {
      Some(Value::Bool(true)) => Some(Ty::unknown()),
      Some(Value::Object(ap)) if ap.is_empty() => Some(Ty::unknown()),
      Some(ap @ Value::Object(_)) => Some(self.render(ap, depth + 1, level + 1)),
      Some(_) => None,
      None => (explicit && properties.is_none_or(|p| p.is_empty())).then(Ty::unknown),
    };
    if has_patterns || truncated {
      index = Some(Ty::unknown());
    }
    if let Some(ty) = &index {
      if !members.is_empty() && !ty.is_unknown() {
        // Every declared property must fit the index signature: widen it to the union of them all.
        let mut parts = vec![ty.clone()];
        parts.extend(members.iter().map(|m| m.ty.clone()));
        let widened = union(parts);
        index = Some(if widened.text.len() > MAX_INDEX_UNION || widened.text.contains('\n') {
          Ty::unknown()
        } else {
          widened
        });
      }
    }

    if members.is_empty() {
      return match index {
        Some(ty) => Ty::atom(format!("{{ [key: string]: {} }}", ty.text)),
        None if map.get("additionalProperties") == Some(&Value::Bool(false)) => Ty::atom("Record<string, never>"),
        None => Ty::atom("{ [key: string]: unknown }"),
      };
    }

    let mut entries: Vec<(Option<String>, String)> = members
      .into_iter()
      .map(|m| {
        let mark = if m.optional { "?" } else { "" };
        (m.doc, format!("{}{}: {}", m.key, mark, m.ty.text))
      })
      .collect();
    if let Some(ty) = index {
      entries.push((None, format!("[key: string]: {}", ty.text)));
    }
    let inline_len: usize = entries.iter().map(|(_, e)| e.len() + 2).sum();
    let inline = entries.iter().all(|(doc, e)| doc.is_none() && !e.contains('\n')) && inline_len <= INLINE_WIDTH;
    if inline {
      let body = entries.into_iter().map(|(_, e)| e).collect::<Vec<_>>().join("; ");
      return Ty::atom(format!("{{ {body} }}"));
    }
    let pad = "  ".repeat(level + 1);
    let mut text = String::from("{\n");
    for (doc, entry) in entries {
      if let Some(doc) = doc {
        text.push_str(&pad);
        text.push_str("/** ");
        text.push_str(&doc);
        text.push_str(" */\n");
      }
      text.push_str(&pad);
      text.push_str(&entry);
      text.push_str(";\n");
    }
    text.push_str(&"  ".repeat(level));
    text.push('}');
    Ty::atom(text)
  }

  fn render_array(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
    let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
      (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
      (_, Some(Value::Array(prefix))) => (Some(prefix), map.get("additionalItems")),
      (_, items) => (None, items),
    };
    let Some(prefix) = prefix else {
      return match rest {
        Some(Value::Bool(false)) => Ty::atom("[]"),
        None | Some(Value::Bool(true)) => Ty::atom("unknown[]"),
        Some(items) => {
          let item = self.render(items, depth + 1, level);
          Ty::atom(format!("{}[]", item.wrapped(Prec::Atom)))
        }
      };
    };
    let min_items = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let mut elements = Vec::new();
    let mut open = false;
    for (i, element) in prefix.iter().enumerate() {
      if i >= MAX_PARTS || self.exhausted() {
        open = true;
        break;
      }
      let ty = self.render(element, depth + 1, level);
      self.charge(2);
      if (i as u64) < min_items {
        elements.push(ty.text);
      } else {
        elements.push(format!("{}?", ty.wrapped(Prec::Atom)));
      }
    }
    let rest_ty = match rest {
      _ if open => Some(Ty::unknown()),
      Some(Value::Bool(false)) => None,
      None | Some(Value::Bool(true)) => Some(Ty::unknown()),
      Some(items) => Some(self.render(items, depth + 1, level)),
    };
    if let Some(rest) = rest_ty {
      elements.push(format!("...{}[]", rest.wrapped(Prec::Atom)));
    }
    Ty::atom(format!("[{}]", elements.join(", ")))
  }

  fn literal_union(&mut self, values: &'a [Value]) -> Ty {
    let mut parts = Vec::new();
    for value in values.iter().take(MAX_PARTS) {
      if self.exhausted() {
        return Ty::unknown();
      }
      let ty = self.literal(value, 0);
      self.charge(ty.text.len() + 3);
      parts.push(ty);
    }
    if values.len() > MAX_PARTS {
      return Ty::unknown();
    }
    union(parts)
  }

  /// The literal type of a JSON value: `'a'`, `1`, `true`, `null`, `{ k: 'v' }`, `[1, 2]`.
  fn literal(&mut self, value: &Value, depth: usize) -> Ty {
    match value {
      Value::Null => Ty::atom("null"),
      Value::Bool(b) => Ty::atom(b.to_string()),
      Value::Number(n) => {
        let text = n.to_string();
        let prec = if text.starts_with('-') { Prec::Prefix } else { Prec::Atom };
        Ty { text, prec }
      }
      Value::String(s) if s.chars().count() > MAX_LITERAL_CHARS => Ty::atom("string"),
      Value::String(s) => Ty::atom(quote(s)),
      _ if depth >= MAX_LITERAL_DEPTH || self.exhausted() => Ty::unknown(),
      Value::Array(items) => {
        if items.len() > 32 {
          return Ty::atom("unknown[]");
        }
        let parts: Vec<String> = items.iter().map(|v| self.literal(v, depth + 1).text).collect();
        self.charge(parts.len() * 2 + 2);
        Ty::atom(format!("[{}]", parts.join(", ")))
      }
      Value::Object(map) => {
        if map.len() > 32 {
          return Ty::atom("{ [key: string]: unknown }");
        }
        if map.is_empty() {
          return Ty::atom("Record<string, never>");
        }
        let mut parts = Vec::new();
        for (k, v) in map {
          let key = property_key(k);
          let ty = self.literal(v, depth + 1);
          self.charge(key.len() + 4);
          parts.push(format!("{}: {}", key, ty.text));
        }
        Ty::atom(format!("{{ {} }}", parts.join("; ")))
      }
    }
  }
}

/// A property name as an object type member: bare when it is an identifier, quoted otherwise.
fn property_key(key: &str) -> String {
  if is_identifier(key) {
    key.to_string()
  } else {
    quote(key)
  }
}

/// A description as the body of a one-line JSDoc comment: whitespace collapsed, control characters
/// dropped, `*/` escaped, cut to `max` characters. `None` when nothing is left.
pub(crate) fn doc_text(text: &str, max: usize) -> Option<String> {
  let cleaned: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
  let mut words = String::new();
  for word in cleaned.split_whitespace() {
    if !words.is_empty() {
      words.push(' ');
    }
    words.push_str(word);
    if words.len() > max.saturating_mul(4) {
      break;
    }
  }
  if words.is_empty() {
    return None;
  }
  let mut cut: String = words.chars().take(max).collect();
  if cut.len() < words.len() {
    cut = cut.trim_end().to_string();
    cut.push('…');
  }
  Some(cut.replace("*/", "*\\/"))
}

#[cfg(test)]
mod tests {
  #![allow(clippy::unwrap_used, clippy::expect_used)]
  use super::*;
  use crate::engine::tests::{drop_iteratively, object};
  use serde_json::json;

  fn ty(schema: Value) -> String {
    type_expression(&schema)
  }

  #[test]
  fn spec_example() {
    let input = json!({
      "type": "object",
      "properties": {
        "limit": { "type": "integer", "description": "Page size" },
        "role": { "enum": ["admin", "member"] }
      }
    });
    let output = json!({
      "type": "object",
      "required": ["items", "total"],
      "properties": {
        "items": { "type": "array", "items": {
          "type": "object", "required": ["id", "email"],
          "properties": { "email": { "type": "string" }, "id": { "type": "string" } } } },
        "total": { "type": "number" }
      }
    });
    let d = declaration("users:list", Some("List users with pagination."), Some(&input), Some(&output));
    assert_eq!(
      d,
      "/** List users with pagination. */\ndeclare function callTool(name: 'users:list', input: {\n  /** Page size */\n  \
       limit?: number;\n  role?: 'admin' | 'member';\n}): Promise<{ items: { email: string; id: string }[]; total: number }>;\n"
    );
  }

  #[test]
  fn missing_schemas() {
    let d = declaration("a", None, None, None);
    assert_eq!(d, "declare function callTool(name: 'a', input?: Record<string, unknown>): Promise<unknown>;\n");
    let d = declaration("a", Some("  "), Some(&Value::Null), Some(&Value::Null));
    assert_eq!(d, "declare function callTool(name: 'a', input?: Record<string, unknown>): Promise<unknown>;\n");
  }

  #[test]
  fn objects_required_optional() {
    let s = json!({ "type": "object", "required": ["a", "z"], "properties": { "a": { "type": "string" }, "b": { "type": "boolean" } } });
    assert_eq!(ty(s), "{ a: string; b?: boolean; z: unknown }");
    assert_eq!(ty(json!({ "type": "object" })), "{ [key: string]: unknown }");
    assert_eq!(ty(json!({ "type": "object", "properties": {} })), "{ [key: string]: unknown }");
    assert_eq!(ty(json!({ "type": "object", "additionalProperties": false })), "Record<string, never>");
  }

  #[test]
  fn additional_properties_forms() {
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": true });
    assert_eq!(ty(s), "{ a?: string; [key: string]: unknown }");
    let s = json!({ "type": "object", "additionalProperties": { "type": "number" } });
    assert_eq!(ty(s), "{ [key: string]: number }");
    // Declared properties must fit the index signature.
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": { "type": "number" } });
    assert_eq!(ty(s), "{ a?: string; [key: string]: number | string }");
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": false });
    assert_eq!(ty(s), "{ a?: string }");
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": {} });
    assert_eq!(ty(s), "{ a?: string; [key: string]: unknown }");
    let s = json!({ "type": "object", "properties": { "a": {} }, "patternProperties": { "^x": { "type": "string" } } });
    assert_eq!(ty(s), "{ a?: unknown; [key: string]: unknown }");
    // Properties only (no additionalProperties): a closed-looking object, no index signature.
    let s = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
    assert_eq!(ty(s), "{ a?: string }");
  }

  #[test]
  fn enums_and_consts() {
    assert_eq!(ty(json!({ "enum": ["a", "it's", 1, -2.5, true, null] })), "'a' | 'it\\'s' | 1 | -2.5 | true | null");
    assert_eq!(ty(json!({ "const": "x" })), "'x'");
    assert_eq!(ty(json!({ "enum": [] })), "never");
    assert_eq!(ty(json!({ "enum": [{ "a": 1 }, [1, "b"]] })), "{ a: 1 } | [1, 'b']");
    assert_eq!(ty(json!({ "type": "array", "items": { "enum": [-1, 2] } })), "(-1 | 2)[]");
    assert_eq!(ty(json!({ "type": "array", "items": { "const": -1 } })), "(-1)[]");
    let long = "x".repeat(MAX_LITERAL_CHARS + 1);
    assert_eq!(ty(json!({ "enum": [long, "b"] })), "string | 'b'");
    assert_eq!(ty(json!({ "const": "a\nb\u{2028}" })), "'a\\nb\\u2028'");
  }

  #[test]
  fn unions_and_intersections() {
    assert_eq!(ty(json!({ "type": ["string", "null"] })), "string | null");
    assert_eq!(ty(json!({ "type": "integer", "nullable": true })), "number | null");
    assert_eq!(ty(json!({ "anyOf": [{ "type": "string" }, { "type": "number" }] })), "string | number");
    assert_eq!(ty(json!({ "oneOf": [{ "type": "string" }, {}] })), "unknown");
    assert_eq!(
      ty(
        json!({ "allOf": [{ "type": "object", "properties": { "a": { "type": "string" } } }, { "anyOf": [{ "type": "object", "properties": { "b": { "type": "number" } } }, { "type": "object", "properties": { "c": { "type": "number" } } }] }] })
      ),
      "{ a?: string } & ({ b?: number } | { c?: number })"
    );
    assert_eq!(ty(json!({ "type": "array", "items": { "type": ["string", "number"] } })), "(string | number)[]");
    assert_eq!(
      ty(
        json!({ "type": "array", "items": { "allOf": [{ "type": "object", "properties": { "a": {"type": "string"} } }, { "type": "object", "properties": { "b": {"type": "string"} } }] } })
      ),
      "({ a?: string } & { b?: string })[]"
    );
  }

  #[test]
  fn tuples() {
    assert_eq!(
      ty(
        json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }], "minItems": 2, "items": false })
      ),
      "[string, number]"
    );
    assert_eq!(
      ty(json!({ "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }], "minItems": 1 })),
      "[string, number?, ...unknown[]]"
    );
    assert_eq!(
      ty(json!({ "type": "array", "items": [{ "type": "string" }], "additionalItems": { "type": "boolean" } })),
      "[string?, ...boolean[]]"
    );
    assert_eq!(
      ty(json!({ "type": "array", "items": [{ "type": ["string", "null"] }], "additionalItems": false })),
      "[(string | null)?]"
    );
    assert_eq!(ty(json!({ "type": "array" })), "unknown[]");
    assert_eq!(ty(json!({ "type": "array", "items": false })), "[]");
  }

  #[test]
  fn refs_and_defs() {
    let s = json!({
      "type": "object",
      "properties": { "a": { "$ref": "#/$defs/A" }, "b": { "$ref": "#/definitions/B" }, "c": { "$ref": "#/properties/a" }, "d": { "$ref": "#/$defs/a~1b" } },
      "$defs": { "A": { "type": "object", "properties": { "x": { "$ref": "#/$defs/X" } } }, "X": { "type": "integer" }, "a/b": { "type": "boolean" } },
      "definitions": { "B": { "type": "string" } }
    });
    assert_eq!(ty(s), "{ a?: { x?: number }; b?: string; c?: { x?: number }; d?: boolean }");
    assert_eq!(ty(json!({ "$ref": "https://example.com/x.json" })), "unknown");
    assert_eq!(ty(json!({ "$ref": "#/nowhere" })), "unknown");
    assert_eq!(ty(json!({ "$ref": 42 })), "unknown");
  }

  #[test]
  fn recursive_refs() {
    let s = json!({
      "$ref": "#/$defs/node",
      "$defs": { "node": { "type": "object", "properties": { "value": { "type": "string" }, "children": { "type": "array", "items": { "$ref": "#/$defs/node" } } } } }
    });
    // Properties keep the schema's order (serde_json's `preserve_order`).
    assert_eq!(ty(s), "{ value?: string; children?: unknown[] }");
    let s = json!({ "type": "object", "properties": { "self": { "$ref": "#" } } });
    assert_eq!(ty(s), "{ self?: { self?: unknown } }");
    let s = json!({ "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } }, "$ref": "#/$defs/a" });
    assert_eq!(ty(s), "unknown");
  }

  #[test]
  fn weird_keys_and_names() {
    let s = json!({ "type": "object", "properties": { "my-key": { "type": "string" }, "it's": {}, "$ok_1": {}, "1a": {}, "": {}, "é": {} }, "required": ["my-key"] });
    assert_eq!(ty(s), "{\n  'my-key': string;\n  'it\\'s'?: unknown;\n  $ok_1?: unknown;\n  '1a'?: unknown;\n  ''?: unknown;\n  'é'?: unknown;\n}");
    let d = declaration("a'b\\c\n", Some("Ends */ here\n\tand /** more"), None, None);
    assert!(d.starts_with("/** Ends *\\/ here and /** more */\ndeclare function callTool(name: 'a\\'b\\\\c\\n'"));
  }

  #[test]
  fn docs_are_single_line_and_cut() {
    let long = "word ".repeat(100);
    let s = json!({ "type": "object", "properties": { "a": { "type": "string", "description": long } } });
    let t = ty(s);
    let line = t.lines().nth(1).unwrap();
    assert!(line.starts_with("  /** word"));
    assert!(line.ends_with("… */"));
    assert!(line.chars().count() < MAX_DOC_CHARS + 20);
    assert_eq!(doc_text("*/*/", 10).unwrap(), "*\\/*\\/");
    assert_eq!(doc_text(" \n\t", 10), None);
  }

  #[test]
  fn junk_schemas() {
    for junk in [json!(true), json!(42), json!("x"), json!(null), json!([1, 2]), json!({})] {
      assert_eq!(ty(junk), "unknown");
    }
    assert_eq!(ty(json!(false)), "never");
    assert_eq!(ty(json!({ "type": 7 })), "unknown");
    assert_eq!(ty(json!({ "type": "frobnicate" })), "unknown");
    assert_eq!(ty(json!({ "type": "object", "properties": 5, "required": "a" })), "{ [key: string]: unknown }");
    assert_eq!(ty(json!({ "type": "object", "properties": { "a": 5 }, "required": [1, "a"] })), "{ a: unknown }");
    assert_eq!(ty(json!({ "type": "array", "items": 5, "minItems": "x" })), "unknown[]");
    assert_eq!(ty(json!({ "anyOf": 3, "allOf": [], "oneOf": {} })), "unknown");
  }

  #[test]
  fn hostile_depth_does_not_overflow() {
    // `json!` would serialize an interpolated value recursively: build the nesting by hand.
    let mut schema = json!({ "type": "string" });
    for _ in 0..10_000 {
      schema = object([("type", json!("object")), ("properties", object([("a", schema)]))]);
    }
    let t = type_expression(&schema);
    assert!(t.len() < 2 * INPUT_BUDGET);
    assert!(t.contains("unknown"));
    let d = declaration("deep", None, Some(&schema), Some(&schema));
    assert!(d.len() < 2 * (INPUT_BUDGET + OUTPUT_BUDGET));
    drop_iteratively(schema);
    let mut arrays = json!({ "type": "string" });
    for _ in 0..10_000 {
      let array = object([("type", json!("array")), ("items", arrays)]);
      arrays = object([("anyOf", Value::Array(vec![array, json!({ "$ref": "#" })]))]);
    }
    assert!(type_expression(&arrays).len() < 2 * INPUT_BUDGET);
    drop_iteratively(arrays);
  }

  #[test]
  fn output_is_bounded() {
    let mut props = Map::new();
    for i in 0..20_000 {
      props.insert(format!("property_{i}"), json!({ "type": "string", "description": "x".repeat(300) }));
    }
    let s = json!({ "type": "object", "properties": props });
    let d = declaration("big", None, Some(&s), Some(&s));
    assert!(d.len() < 2 * (INPUT_BUDGET + OUTPUT_BUDGET), "{}", d.len());
    assert!(d.contains("[key: string]: unknown"));
    // Fan-out through refs: 2^40 paths, still bounded in time and size.
    let mut defs = Map::new();
    for i in 0..40 {
      defs.insert(format!("d{i}"), json!({ "type": "object", "properties": { "l": { "$ref": format!("#/$defs/d{}", i + 1) }, "r": { "$ref": format!("#/$defs/d{}", i + 1) } } }));
    }
    let s = json!({ "$ref": "#/$defs/d0", "$defs": defs });
    assert!(ty(s).len() < 2 * INPUT_BUDGET);
    let huge_enum: Vec<Value> = (0..100_000).map(|i| json!(format!("value-{i}"))).collect();
    assert_eq!(ty(json!({ "enum": huge_enum })), "unknown");
  }

  #[test]
  fn refs_resolve_pointers() {
    let root = json!({ "a": [{ "b%c": 1 }], "t~": { "/": 2 } });
    assert_eq!(resolve_ref(&root, "#/a/0/b%25c"), Some(&json!(1)));
    assert_eq!(resolve_ref(&root, "#/t~0/~1"), Some(&json!(2)));
    assert_eq!(resolve_ref(&root, "#"), Some(&root));
    assert_eq!(resolve_ref(&root, "#/a/x"), None);
    assert_eq!(resolve_ref(&root, "#anchor"), None);
    assert_eq!(resolve_ref(&root, "other.json#/a"), None);
  }
}
