//! A tool as the index sees it, and the text it takes from a tool's JSON Schema and examples.

use serde_json::Value;

/// The searchable parts of one tool (`api.md` §4 `IndexedTool`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tool {
  pub name: String,
  /// The display title (MCP `title`, else `annotations.title`): read by the semantic signal only.
  pub title: Option<String>,
  pub app_id: Option<String>,
  pub description: Option<String>,
  pub source: Option<String>,
  pub tags: Vec<String>,
  /// Property names of the input schema, nested ones included.
  pub properties: Vec<String>,
  /// Text of the tool's examples (their descriptions, or the strings themselves).
  pub examples: Vec<String>,
  /// Descriptions of the input schema's properties (nested ones included): read by the semantic
  /// signal only.
  pub property_descriptions: Vec<String>,
}

/// At most this many property names are taken from one schema.
const MAX_PROPERTIES: usize = 256;
/// Nested object schemas deeper than this are not read.
pub const MAX_SCHEMA_DEPTH: usize = 4;

/// The property names of a JSON Schema: `properties` keys, recursively through nested objects,
/// `items`, `anyOf`/`oneOf`/`allOf` and `$defs`, without repeats.
pub fn property_names(schema: &Value) -> Vec<String> {
  let mut out = Vec::new();
  walk_properties(schema, 0, &mut out, &|name, _, out| {
    if !out.iter().any(|n| n == name) {
      out.push(name.to_string());
    }
  });
  out
}

/// At most this many characters are kept of one property description.
pub const MAX_PROPERTY_DESCRIPTION_CHARS: usize = 1024;

/// The descriptions of the properties of a JSON Schema (the `description` string of each property
/// schema), walking the same structure as [`property_names`], at most [`MAX_PROPERTIES`] of them,
/// each cut to [`MAX_PROPERTY_DESCRIPTION_CHARS`].
pub fn property_descriptions(schema: &Value) -> Vec<String> {
  let mut out = Vec::new();
  walk_properties(schema, 0, &mut out, &|_, sub, out| {
    if let Some(Value::String(d)) = sub.get("description") {
      if !d.trim().is_empty() {
        out.push(d.chars().take(MAX_PROPERTY_DESCRIPTION_CHARS).collect());
      }
    }
  });
  out
}

/// Calls `visit(name, property schema, out)` for each property of `schema`, recursively through
/// nested objects, `items`, `anyOf`/`oneOf`/`allOf` and `$defs`, down to [`MAX_SCHEMA_DEPTH`];
/// stops taking properties once `out` holds [`MAX_PROPERTIES`].
fn walk_properties(
  schema: &Value,
  depth: usize,
  out: &mut Vec<String>,
  visit: &dyn Fn(&str, &Value, &mut Vec<String>),
) {
  let Value::Object(map) = schema else { return };
  if depth > MAX_SCHEMA_DEPTH {
    return;
  }
  if let Some(Value::Object(props)) = map.get("properties") {
    for (name, sub) in props {
      if out.len() >= MAX_PROPERTIES {
        return;
      }
      visit(name, sub, out);
      walk_properties(sub, depth + 1, out, visit);
    }
  }
  if let Some(items) = map.get("items") {
    walk_properties(items, depth + 1, out, visit);
  }
  for key in ["anyOf", "oneOf", "allOf"] {
    if let Some(Value::Array(list)) = map.get(key) {
      for sub in list {
        walk_properties(sub, depth + 1, out, visit);
      }
    }
  }
  for key in ["$defs", "definitions"] {
    if let Some(Value::Object(defs)) = map.get(key) {
      for sub in defs.values() {
        walk_properties(sub, depth + 1, out, visit);
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn reads_nested_property_names_once() {
    let schema = json!({
      "type": "object",
      "properties": {
        "owner": { "type": "string" },
        "labels": { "type": "array", "items": { "type": "object", "properties": { "name": {}, "color": {} } } },
        "target": { "anyOf": [ { "properties": { "owner": {}, "branchName": {} } } ] }
      },
      "$defs": { "Person": { "properties": { "email": {} } } }
    });
    let mut names = property_names(&schema);
    names.sort();
    assert_eq!(names, ["branchName", "color", "email", "labels", "name", "owner", "target"]);
    assert!(property_names(&json!("not a schema")).is_empty());
  }

  #[test]
  fn reads_property_descriptions() {
    let schema = json!({
      "properties": {
        "owner": { "type": "string", "description": "Repository owner" },
        "labels": { "items": { "properties": { "name": { "description": "Label name" } } } },
        "blank": { "description": "  " },
        "odd": { "description": 3 }
      }
    });
    assert_eq!(property_descriptions(&schema), ["Repository owner", "Label name"]);
    let long = json!({ "properties": { "p": { "description": "x".repeat(5000) } } });
    assert_eq!(property_descriptions(&long)[0].len(), MAX_PROPERTY_DESCRIPTION_CHARS);
  }

  #[test]
  fn deep_schemas_stop() {
    let mut schema = json!({ "properties": { "leaf": {} } });
    for i in 0..100 {
      schema = json!({ "properties": { format!("p{i}"): schema } });
    }
    assert_eq!(property_names(&schema).len(), MAX_SCHEMA_DEPTH + 1);
  }
}
