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
  fn deep_schemas_stop() {
    let mut schema = json!({ "properties": { "leaf": {} } });
    for i in 0..100 {
      schema = json!({ "properties": { format!("p{i}"): schema } });
    }
    assert_eq!(property_names(&schema).len(), MAX_SCHEMA_DEPTH + 1);
  }
}
