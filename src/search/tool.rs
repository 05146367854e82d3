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
  /// How the tool's MCP server describes itself (`IndexedTool.server`), shared by its tools.
  pub server: Option<ServerText>,
}

/// A server's own words (MCP `initialize`: `serverInfo.title`, `serverInfo.description`,
/// `instructions`), each cut to a bound ([`ServerText::new`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerText {
  pub title: Option<String>,
  pub description: Option<String>,
  pub instructions: Option<String>,
}

/// At most this many characters of a server's title or description are kept.
pub const MAX_SERVER_TITLE_CHARS: usize = 512;
/// At most this many characters of a server's `instructions` are kept (they can be pages long).
pub const MAX_SERVER_INSTRUCTIONS_CHARS: usize = 2000;

impl ServerText {
  /// The parts given, each cut to its bound; blank parts count as missing. `None` when nothing is left.
  pub fn new(title: Option<String>, description: Option<String>, instructions: Option<String>) -> Option<Self> {
    let keep =
      |s: Option<String>, max: usize| s.map(|s| cut_chars(s.trim(), max).to_string()).filter(|s| !s.is_empty());
    let text = Self {
      title: keep(title, MAX_SERVER_TITLE_CHARS),
      description: keep(description, MAX_SERVER_TITLE_CHARS),
      instructions: keep(instructions, MAX_SERVER_INSTRUCTIONS_CHARS),
    };
    (text != Self::default()).then_some(text)
  }
}

/// The first `max` characters of `s`.
fn cut_chars(s: &str, max: usize) -> &str {
  s.char_indices().nth(max).map_or(s, |(i, _)| &s[..i])
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
  fn server_text_is_bounded_and_blank_is_none() {
    assert_eq!(ServerText::new(None, Some("  ".into()), None), None);
    let long = ServerText::new(Some(" T ".into()), None, Some("é".repeat(5000)));
    assert_eq!(long.as_ref().and_then(|l| l.title.as_deref()), Some("T"));
    assert_eq!(long.as_ref().and_then(|l| l.description.as_deref()), None);
    let instructions = long.as_ref().and_then(|l| l.instructions.as_deref()).unwrap_or_default();
    assert_eq!(instructions.chars().count(), MAX_SERVER_INSTRUCTIONS_CHARS);
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
