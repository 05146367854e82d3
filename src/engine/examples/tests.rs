//! The examples module's tests: generated values, validation, formats, patterns, hostile schemas.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::engine::tests::{drop_iteratively, object};
use serde_json::json;

fn examples(name: &str, description: Option<&str>, schema: Value) -> Vec<UsageExample> {
  usage_examples(name, description, Some(&schema), &[], 5)
}

/// The input of the first generated example for a one-property schema `{ x: <prop> }`, required.
fn value_for(prop: Value) -> Value {
  let schema = json!({ "type": "object", "properties": { "x": prop }, "required": ["x"] });
  let ex = examples("t:run", None, schema.clone());
  assert!(!ex.is_empty(), "no example for {schema}");
  let input = ex[0].input.clone();
  assert_valid(&schema, &input);
  input["x"].clone()
}

fn assert_valid(schema: &Value, input: &Value) {
  let info = ToolInfo::new("t:run", None);
  let mut engine = Engine::new(schema, &info);
  assert_eq!(engine.check(input, schema, 0), Verdict::Valid, "{input} against {schema}");
}

fn verdict(schema: &Value, value: &Value) -> Verdict {
  let info = ToolInfo::new("t:run", None);
  let mut engine = Engine::new(schema, &info);
  engine.check(value, schema, 0)
}

fn has_loop(code: &str) -> bool {
  split_words(code).iter().any(|w| w == "for" || w == "while" || w == "do")
}

#[test]
fn spec_example() {
  let schema = json!({ "type": "object", "properties": { "limit": { "type": "integer" } } });
  let ex = examples("users:list", Some("List users with pagination."), schema);
  assert_eq!(ex.len(), 1);
  assert_eq!(ex[0].description, "List users");
  assert_eq!(ex[0].code, "const page = await callTool('users:list', { limit: 10 });\nreturn page;");
  assert_eq!(ex[0].input, json!({ "limit": 10 }));
}

#[test]
fn intent_detection() {
  let cases = [
    ("users:list", Intent::List),
    ("github:list_issues", Intent::List),
    ("getAllUsers", Intent::List),
    ("users:get", Intent::Get),
    ("jira.getIssue", Intent::Get),
    ("fetch-page", Intent::Get),
    ("tickets:search", Intent::Search),
    ("findRepositories", Intent::Search),
    ("create_or_update_file", Intent::Create),
    ("addComment", Intent::Create),
    ("users:update", Intent::Update),
    ("setStatus", Intent::Update),
    ("users:delete", Intent::Delete),
    ("removeLabel", Intent::Delete),
    ("search:run", Intent::Search),
    ("send_message", Intent::Generic),
  ];
  for (name, intent) in cases {
    assert_eq!(detect_intent(name, None), intent, "{name}");
  }
  assert_eq!(detect_intent("tickets:run", Some("Searches tickets by text")), Intent::Search);
  assert_eq!(detect_intent("x:go", Some("Use this to list all the projects")), Intent::List);
  assert_eq!(detect_intent("x:go", Some("Retrieves one project")), Intent::Get);
  assert_eq!(detect_intent("x:go", Some("Creates a project")), Intent::Create);
  assert_eq!(detect_intent("x:go", Some("Modifies a project")), Intent::Update);
  assert_eq!(detect_intent("x:go", Some("Removing stuff")), Intent::Delete);
  assert_eq!(detect_intent("x:go", Some("Does a thing")), Intent::Generic);
  assert_eq!(split_words("getHTTPServer_v2.list-all:Items"), ["get", "http", "server", "v2", "list", "all", "items"]);
}

#[test]
fn descriptions_by_intent() {
  let obj = |props: Value, req: Value| json!({ "type": "object", "properties": props, "required": req });
  let ex = examples(
    "users:list",
    None,
    obj(json!({ "limit": { "type": "integer" }, "role": { "type": "string" } }), json!([])),
  );
  assert_eq!(ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(), ["List users", "List users, with options"]);
  assert_eq!(ex[1].input, json!({ "limit": 10, "role": "example" }));
  let ex = examples("users:get", None, obj(json!({ "id": { "type": "string" } }), json!(["id"])));
  assert_eq!(ex[0].description, "Get one user by id");
  assert_eq!(ex[0].input, json!({ "id": "user_123" }));
  assert_eq!(ex[0].code, "const item = await callTool('users:get', { id: 'user_123' });\nreturn item;");
  let ex = examples(
    "tickets:search",
    None,
    obj(json!({ "query": { "type": "string" }, "limit": { "type": "integer" } }), json!([])),
  );
  assert_eq!(ex[0].description, "Search tickets by text");
  assert_eq!(ex[0].input, json!({ "query": "ticket", "limit": 10 }));
  assert_eq!(ex.len(), 1, "no other optional properties: no options example");
  let ex =
    examples("users:create", None, obj(json!({ "email": { "type": "string", "format": "email" } }), json!(["email"])));
  assert_eq!(ex[0].description, "Create a user");
  assert_eq!(ex[0].input, json!({ "email": "user@example.com" }));
  let ex = examples("github:create_or_update_file", None, obj(json!({}), json!([])));
  assert_eq!(ex[0].description, "Create a file");
  let ex = examples(
    "issues:update",
    None,
    obj(json!({ "issueId": { "type": "string" }, "title": { "type": "string" } }), json!([])),
  );
  assert_eq!(ex[0].description, "Update an issue");
  assert_eq!(ex[0].input, json!({ "issueId": "issue_123", "title": "Example title" }));
  let ex = examples("x:delete_label", None, obj(json!({ "label_id": { "type": "integer" } }), json!(["label_id"])));
  assert_eq!(ex[0].description, "Delete a label");
  let ex = examples("slack:send_message", None, obj(json!({ "channel": { "type": "string" } }), json!(["channel"])));
  assert_eq!(ex[0].description, "Send message");
  assert_eq!(
    ex[0].code,
    "const result = await callTool('slack:send_message', { channel: 'example' });\nreturn result;"
  );
  let ex =
    examples("slack:slack_send_message", Some("Posts a message to a channel.\nMore text."), obj(json!({}), json!([])));
  assert_eq!(ex[0].description, "Posts a message to a channel");
  let ex = examples("linear:linear_archiveTeam", Some(&"x".repeat(90)), obj(json!({}), json!([])));
  assert_eq!(ex[0].description, "Archive team");
  let ex =
    examples("gitlab:get_file_blame", None, obj(json!({ "project_id": { "type": "string" } }), json!(["project_id"])));
  assert_eq!(ex[0].description, "Get a file blame");
  let ex = examples("x:get_user", None, obj(json!({ "user_id": { "type": "string" } }), json!(["user_id"])));
  assert_eq!(ex[0].description, "Get one user by user_id");
}

#[test]
fn no_schema_and_junk_names() {
  let ex = usage_examples("a'b\\c\n", None, None, &[], 5);
  assert_eq!(ex.len(), 1);
  assert_eq!(ex[0].code, "const result = await callTool('a\\'b\\\\c\\n', {});\nreturn result;");
  assert_eq!(ex[0].description, "A b c");
  assert!(usage_examples("x", None, None, &[], 0).is_empty());
  let long = "n".repeat(5000);
  assert!(usage_examples(&long, None, None, &[], 5).is_empty(), "code would pass MAX_CODE_BYTES");
}

#[test]
fn user_examples_first_and_max() {
  let schema = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "q": { "type": "string" } } });
  let users = vec![
    json!({ "description": "First page", "input": { "limit": 5 }, "output": { "items": [], "note": "a\u{2028}b\nc" } }),
    json!({ "input": { "q": "x" } }),
    json!({ "description": 42, "input": { "limit": 1 } }),
    json!("not an object"),
    json!({ "description": "No input" }),
    json!({ "nothing": true }),
  ];
  let ex = usage_examples("users:list", None, Some(&schema), &users, 5);
  let descriptions: Vec<&str> = ex.iter().map(|e| e.description.as_str()).collect();
  assert_eq!(descriptions, ["First page", "Example", "Example", "No input", "List users"]);
  assert_eq!(
    ex[0].code,
    "const result = await callTool('users:list', { limit: 5 });\n// Example result: {\"items\":[],\"note\":\"a\\u2028b\\nc\"}\nreturn result;"
  );
  assert_eq!(ex[3].input, json!({}));
  for max in 0..7 {
    assert!(usage_examples("users:list", None, Some(&schema), &users, max).len() <= max);
  }
  assert_eq!(usage_examples("users:list", None, Some(&schema), &users, 2).len(), 2);
  // Required input: an entry without one is skipped.
  let strict = json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] });
  let ex = usage_examples("users:get", None, Some(&strict), &[json!({ "description": "No input" })], 5);
  assert_eq!(ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(), ["Get one user by id"]);
}

#[test]
fn generated_never_duplicates() {
  let schema = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "role": { "enum": ["admin", "member"] } } });
  let users = vec![json!({ "description": "Mine", "input": { "limit": 10 } })];
  let ex = usage_examples("users:list", None, Some(&schema), &users, 5);
  assert_eq!(ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(), ["Mine", "List users, with options"]);
  assert_eq!(ex[1].input, json!({ "limit": 10, "role": "admin" }));
  for e in &ex {
    assert!(!has_loop(&e.code));
  }
}

#[test]
fn types_enum_const_default_examples() {
  assert_eq!(value_for(json!({ "type": ["null", "string"] })), json!("example"));
  assert_eq!(value_for(json!({ "type": ["null", "integer"] })), json!(1));
  assert_eq!(value_for(json!({ "type": "null" })), json!(null));
  assert_eq!(value_for(json!({ "type": "boolean" })), json!(true));
  assert_eq!(value_for(json!({ "type": "string", "nullable": true })), json!("example"));
  assert_eq!(value_for(json!({ "enum": ["b", "a"] })), json!("b"));
  assert_eq!(value_for(json!({ "type": "string", "enum": [1, "z"] })), json!("z"));
  assert_eq!(value_for(json!({ "const": { "k": [1] } })), json!({ "k": [1] }));
  assert_eq!(value_for(json!({ "type": "integer", "default": 7 })), json!(7));
  assert_eq!(value_for(json!({ "type": "string", "examples": ["ex"], "default": "d" })), json!("ex"));
  assert_eq!(value_for(json!({ "type": "string", "default": 5 })), json!("example"));
  assert_eq!(value_for(json!({ "type": "string", "default": "" })), json!("example"));
  assert_eq!(value_for(json!({ "type": "string", "maxLength": 0, "default": "" })), json!(""));
  assert_eq!(value_for(json!({})), json!("example"));
  assert_eq!(value_for(json!(true)), json!("example"));
}

#[test]
fn formats() {
  let cases = [
    ("email", "user@example.com"),
    ("date-time", "2026-01-15T09:30:00Z"),
    ("date", "2026-01-15"),
    ("time", "09:30:00Z"),
    ("uri", "https://example.com"),
    ("url", "https://example.com"),
    ("uuid", "3f1c2a9e-8b4d-4c6a-9e2f-1a2b3c4d5e6f"),
    ("hostname", "example.com"),
    ("ipv4", "192.0.2.1"),
    ("ipv6", "2001:db8::1"),
  ];
  for (format, expected) in cases {
    assert_eq!(value_for(json!({ "type": "string", "format": format })), json!(expected), "{format}");
    assert_eq!(format_verdict(format, expected), Verdict::Valid);
  }
  assert_eq!(format_verdict("email", "nope"), Verdict::Invalid);
  assert_eq!(format_verdict("date", "2026-02-30"), Verdict::Invalid);
  assert_eq!(format_verdict("date-time", "2026-01-15T09:30:00"), Verdict::Invalid);
  assert_eq!(format_verdict("uuid", "3f1c2a9e-8b4d-4c6a-9e2f"), Verdict::Invalid);
  assert_eq!(format_verdict("ipv4", "192.168.01.1"), Verdict::Invalid);
  assert_eq!(format_verdict("hostname", "-bad.com"), Verdict::Invalid);
  assert_eq!(format_verdict("frobnicate", "anything"), Verdict::Valid);
  // A v4 uuid.
  let uuid = format_value("uuid", 0).unwrap();
  assert_eq!(&uuid[14..15], "4");
  assert!("89ab".contains(&uuid[19..20]));
  // Name-aware strings.
  let by_key = |key: &str| {
    let schema = json!({ "type": "object", "properties": { key: { "type": "string" } }, "required": [key] });
    examples("docs:search_pages", None, schema)[0].input[key].clone()
  };
  assert_eq!(by_key("email"), json!("user@example.com"));
  assert_eq!(by_key("userId"), json!("user_123"));
  assert_eq!(by_key("id"), json!("page_123"));
  assert_eq!(by_key("query"), json!("page"));
  assert_eq!(by_key("q"), json!("page"));
  assert_eq!(by_key("name"), json!("Example"));
  assert_eq!(by_key("homepageUrl"), json!("https://example.com"));
  assert_eq!(by_key("createdAt"), json!("2026-01-15T09:30:00Z"));
}

#[test]
fn numbers() {
  assert_eq!(value_for(json!({ "type": "integer", "minimum": 5 })), json!(5));
  assert_eq!(value_for(json!({ "type": "integer", "maximum": -3 })), json!(-3));
  assert_eq!(value_for(json!({ "type": "integer", "exclusiveMinimum": 1 })), json!(2));
  assert_eq!(value_for(json!({ "type": "integer", "exclusiveMaximum": 1 })), json!(0));
  assert_eq!(value_for(json!({ "type": "number", "exclusiveMinimum": 1 })), json!(2));
  assert_eq!(value_for(json!({ "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 })), json!(0.5));
  assert_eq!(value_for(json!({ "type": "number", "minimum": 0.25, "maximum": 0.75 })), json!(0.75));
  assert_eq!(value_for(json!({ "type": "integer", "multipleOf": 7 })), json!(0));
  assert_eq!(value_for(json!({ "type": "integer", "multipleOf": 7, "minimum": 1 })), json!(7));
  assert_eq!(value_for(json!({ "type": "integer", "minimum": 1, "exclusiveMinimum": true })), json!(2));
  let x = value_for(json!({ "type": "number", "multipleOf": 0.01, "minimum": 0.5, "maximum": 0.6 }));
  assert!(x.as_f64().unwrap() >= 0.5 && x.as_f64().unwrap() <= 0.6);
  let limit = json!({ "type": "object", "properties": { "limit": { "type": "integer", "minimum": 1, "maximum": 5 } } });
  assert_eq!(examples("x:list", None, limit)[0].input, json!({ "limit": 5 }));
  let limit = json!({ "type": "object", "properties": { "per_page": { "type": "number", "maximum": 100 } } });
  assert_eq!(examples("x:list", None, limit)[0].input, json!({ "per_page": 10 }));
  // Unsatisfiable bounds: no generated example.
  let bad = json!({ "type": "object", "properties": { "n": { "type": "integer", "minimum": 3, "maximum": 2 } }, "required": ["n"] });
  assert!(examples("x:run", None, bad).is_empty());
}

#[test]
fn strings_lengths_and_patterns() {
  assert_eq!(value_for(json!({ "type": "string", "minLength": 10 })), json!("examplexxx"));
  assert_eq!(value_for(json!({ "type": "string", "maxLength": 3 })), json!("exa"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^\\d+px$" })), json!("1px"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^[A-Z]{3}-\\d{2}$" })), json!("AAA-11"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^(today|tomorrow|\\d{4})$" })), json!("today"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^[a-z]+$", "examples": ["hello"] })), json!("hello"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^[a-z]+$", "default": "NOPE" })), json!("example"));
  assert_eq!(
    value_for(json!({ "type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://" })),
    json!("https://example.com")
  );
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^#[0-9A-Fa-f]{6}$" })), json!("#aaaaaa"));
  assert_eq!(value_for(json!({ "type": "string", "pattern": "^(?!.*bad).*$" })), json!("example"));
  // A pattern the engine cannot read: omitted when optional, best effort when required.
  let schema = json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "(x)\\1" }, "b": { "type": "string" } }, "required": ["b"] });
  let ex = examples("x:run", None, schema);
  assert!(ex.iter().all(|e| e.input.get("a").is_none()));
  let schema = json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "(x)\\1", "examples": ["xx"] } }, "required": ["a"] });
  assert_eq!(examples("x:run", None, schema)[0].input, json!({ "a": "xx" }));
}

#[test]
fn arrays() {
  assert_eq!(value_for(json!({ "type": "array", "items": { "type": "string" } })), json!(["example"]));
  assert_eq!(value_for(json!({ "type": "array", "maxItems": 0 })), json!([]));
  assert_eq!(
    value_for(json!({ "type": "array", "items": { "type": "integer" }, "minItems": 3, "uniqueItems": true })),
    json!([1, 2, 3])
  );
  assert_eq!(
    value_for(json!({ "type": "array", "items": { "enum": ["a", "b"] }, "minItems": 2, "uniqueItems": true })),
    json!(["a", "b"])
  );
  assert_eq!(
    value_for(
      json!({ "type": "array", "items": { "type": "string", "format": "email" }, "minItems": 2, "uniqueItems": true })
    ),
    json!(["user@example.com", "user2@example.com"])
  );
  assert_eq!(
    value_for(json!({ "type": "array", "prefixItems": [{ "type": "integer" }, { "type": "boolean" }], "minItems": 2 })),
    json!([1, true])
  );
  assert_eq!(
    value_for(json!({ "type": "array", "items": [{ "const": "a" }], "additionalItems": false, "minItems": 1 })),
    json!(["a"])
  );
  assert_eq!(
    value_for(json!({ "type": "array", "items": { "type": "integer" }, "contains": { "minimum": 5 } })),
    json!([5])
  );
  let ids = json!({ "type": "object", "properties": { "userIds": { "type": "array", "items": { "type": "string" } } }, "required": ["userIds"] });
  assert_eq!(examples("x:run", None, ids)[0].input, json!({ "userIds": ["user_123"] }));
  // Impossible: three distinct booleans.
  let bad = json!({ "type": "object", "properties": { "a": { "type": "array", "items": { "type": "boolean" }, "minItems": 3, "uniqueItems": true } }, "required": ["a"] });
  assert!(examples("x:run", None, bad).is_empty());
}

#[test]
fn objects_refs_and_combinators() {
  let nested = json!({
    "type": "object", "required": ["user"],
    "properties": { "user": { "type": "object", "required": ["name", "address"], "additionalProperties": false,
      "properties": { "name": { "type": "string" }, "nick": { "type": "string" },
        "address": { "$ref": "#/$defs/address" } } } },
    "$defs": { "address": { "type": "object", "required": ["city"], "properties": { "city": { "type": "string" } } } }
  });
  assert_eq!(
    examples("x:run", None, nested)[0].input,
    json!({ "user": { "name": "Example", "address": { "city": "example" } } })
  );
  let defs = json!({ "type": "object", "properties": { "x": { "$ref": "#/definitions/n" } }, "required": ["x"], "definitions": { "n": { "type": "integer", "minimum": 4 } } });
  assert_eq!(examples("x:run", None, defs)[0].input, json!({ "x": 4 }));
  assert_eq!(value_for(json!({ "anyOf": [{ "type": "null" }, { "type": "integer", "minimum": 3 }] })), json!(3));
  // oneOf: the first branch's value would match both branches, so the second is used.
  let one = json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] });
  assert_eq!(value_for(one), json!(1.5));
  let one = json!({ "oneOf": [{ "type": "string", "maxLength": 3 }, { "type": "string", "minLength": 5 }] });
  assert_eq!(value_for(one), json!("exa"));
  let all = json!({ "allOf": [{ "type": "string" }, { "minLength": 9 }, { "maxLength": 9 }] });
  assert_eq!(value_for(all), json!("examplexx"));
  let all = json!({ "allOf": [{ "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] },
    { "properties": { "b": { "type": "integer" } }, "required": ["b"] }] });
  assert_eq!(value_for(all), json!({ "a": "example", "b": 1 }));
  // additionalProperties: false never gets extra keys; minProperties; dependentRequired.
  let closed = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": false, "minProperties": 1 });
  assert_eq!(value_for(closed), json!({ "a": "example" }));
  let open = json!({ "type": "object", "minProperties": 2, "additionalProperties": { "type": "integer" } });
  assert_eq!(value_for(open), json!({ "key1": 1, "key2": 1 }));
  let deps = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "cursor": { "type": "string" } },
    "dependentRequired": { "limit": ["cursor"] } });
  assert_eq!(examples("x:list", None, deps)[0].input, json!({ "limit": 10, "cursor": "example" }));
  let deps = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "cursor": { "type": "string" } },
    "dependencies": { "limit": ["cursor"] } });
  assert_eq!(examples("x:list", None, deps)[0].input, json!({ "limit": 10, "cursor": "example" }));
  let pattern_props = json!({ "type": "object", "required": ["x-a"], "patternProperties": { "^x-": { "type": "integer" } }, "additionalProperties": false });
  assert_eq!(
    examples("x:run", None, pattern_props)[0].code,
    "const result = await callTool('x:run', { 'x-a': 1 });\nreturn result;"
  );
  // A required key that additionalProperties: false forbids: unsatisfiable.
  let bad = json!({ "type": "object", "required": ["z"], "properties": { "a": {} }, "additionalProperties": false });
  assert!(examples("x:run", None, bad).is_empty());
  let not = json!({ "type": "string", "not": { "const": "example" } });
  assert_ne!(value_for(not), json!("example"));
}

#[test]
fn if_then_else_and_forbidden_keys() {
  let schema = json!({ "type": "object", "properties": { "__proto__": { "type": "string" }, "constructor": { "type": "string" }, "a": { "type": "string" } } });
  let ex = examples("x:run", None, schema);
  assert!(ex.iter().all(|e| !e.code.contains("proto") && !e.code.contains("constructor")));
  let schema =
    json!({ "type": "object", "properties": { "constructor": { "type": "string" } }, "required": ["constructor"] });
  assert!(examples("x:run", None, schema).is_empty());
  let ite = json!({ "type": "object", "if": { "required": ["a"] }, "then": { "required": ["b"] } });
  assert_eq!(verdict(&ite, &json!({ "a": 1 })), Verdict::Invalid);
  assert_eq!(verdict(&ite, &json!({ "a": 1, "b": 2 })), Verdict::Valid);
}

#[test]
fn with_options_prefers_plain_values() {
  let schema = json!({
    "type": "object",
    "required": ["owner", "repo"],
    "properties": {
      "owner": { "type": "string" }, "repo": { "type": "string" },
      "filter": { "type": "object", "properties": { "x": { "type": "string" } } },
      "state": { "type": "string", "enum": ["open", "closed"] },
      "old": { "type": "string", "deprecated": true },
      "sort": { "type": "string" }, "direction": { "type": "string" }, "labels": { "type": "array", "items": { "type": "string" } }
    }
  });
  let ex = examples("github:list_issues", None, schema);
  assert_eq!(ex.len(), 2);
  assert_eq!(ex[0].description, "List issues");
  assert_eq!(ex[0].input, json!({ "owner": "example-user", "repo": "example-repo" }));
  assert_eq!(ex[1].description, "List issues, with options");
  let keys: Vec<&str> = ex[1].input.as_object().unwrap().keys().map(String::as_str).collect();
  assert_eq!(keys.len(), 5);
  assert!(!keys.contains(&"old") && !keys.contains(&"filter") && !keys.contains(&"labels"));
  assert!(ex[1].code.starts_with("const page = await callTool('github:list_issues', {\n  "));
  assert!(ex[1].code.ends_with("\n});\nreturn page;"));
}

#[test]
fn printing() {
  let v = json!({ "a-b": "it's", "ok": [1, 2.5, null, true], "__x": {}, "n": { "deep": [] } });
  let code = render_code("t", "r", &v, None).unwrap();
  assert!(code.contains("'a-b': 'it\\'s'"));
  assert!(code.contains("'__x': {}"));
  assert!(code.contains("ok: [1, 2.5, null, true]"));
  let big: Map<String, Value> = (0..12).map(|i| (format!("property_{i}"), json!(format!("value {i}")))).collect();
  let code = render_code("t", "r", &Value::Object(big), None).unwrap();
  assert_eq!(code.lines().count(), 15);
  assert!(code.lines().nth(1).unwrap().starts_with("  property_"));
  let huge = json!({ "a": "x".repeat(3000) });
  assert!(render_code("t", "r", &huge, None).is_none());
  assert_eq!(clean_text("  a\n\tb  ", 10).unwrap(), "a b");
  assert_eq!(clean_text("abcdef", 3).unwrap(), "abc…");
  assert_eq!(clean_text(" \n", 3), None);
}

#[test]
fn regex_engine() {
  let m = |p: &str, t: &str| regex_search(&parse_regex(p).unwrap(), t, usize::MAX).0;
  assert_eq!(m("^\\d+px$", "12px"), Some(true));
  assert_eq!(m("^\\d+px$", "12p"), Some(false));
  assert_eq!(m("b", "abc"), Some(true));
  assert_eq!(m("^[^@\\s]+@[^@\\s]+$", "a@b"), Some(true));
  assert_eq!(m("^(?:a|bc)*$", "abca"), Some(true));
  assert_eq!(m("^(?:a|bc)*$", "abcb"), Some(false));
  assert_eq!(m("^a{2,3}$", "aaaa"), Some(false));
  assert_eq!(m("^a{2,}?$", "aaaa"), Some(true));
  assert_eq!(m("^(?!.*x).*$", "abc"), Some(true));
  assert_eq!(m("^(?!.*x).*$", "axc"), Some(false));
  assert_eq!(m("^(?=.*\\d)\\w+$", "ab1"), Some(true));
  assert_eq!(m("\\bcat\\b", "a cat!"), Some(true));
  assert_eq!(m("^[\\w.-]+$", "a.b-c_d"), Some(true));
  assert_eq!(m("^[^]$", "\n"), Some(true));
  assert_eq!(m("^.$", "\n"), Some(false));
  assert_eq!(m("^\\u0041\\x42\\u{43}$", "ABC"), Some(true));
  assert_eq!(m("^(?<year>\\d{4})$", "2026"), Some(true));
  assert_eq!(m("^[\\D]$", "a"), Some(true));
  // Catastrophic backtracking hits the budget, not the stack.
  let evil = parse_regex("^(a+)+$").unwrap();
  let (r, steps) = regex_search(&evil, &format!("{}b", "a".repeat(60)), usize::MAX);
  assert!(r.is_none() && steps <= RE_MAX_STEPS + 1);
  assert_eq!(regex_search(&evil, &format!("{}b", "a".repeat(60)), 100), (None, 100));
  assert!(regex_search(&evil, &"a".repeat(1000), usize::MAX).0.is_none());
  for bad in ["(x)\\1", "(?<=a)b", "\\p{L}", "a**", "[b-a]", "(", ")", "a{2,1}", "\\k<n>", "x{99999}"] {
    assert!(parse_regex(bad).is_none(), "{bad}");
  }
  assert!(parse_regex(&"(".repeat(100)).is_none());
  // Balanced but deeper than RE_MAX_NEST, up to the length limit: read, then refused, on a small stack.
  let deep = format!("{}a{}", "(".repeat(499), ")".repeat(499));
  let refused = std::thread::Builder::new()
    .stack_size(256 << 10)
    .spawn(move || parse_regex(&deep).is_none())
    .unwrap()
    .join()
    .unwrap();
  assert!(refused);
  assert!(parse_regex(&format!("{}a{}", "(?:".repeat(RE_MAX_NEST - 1), ")".repeat(RE_MAX_NEST - 1))).is_some());
  assert!(parse_regex(&"a".repeat(RE_MAX_LEN + 1)).is_none());
  let mut s = String::new();
  let mut steps = 100;
  sample(&parse_regex("((((a{0,256}){0,256}){0,256}){0,256})").unwrap(), 256, 0, &mut s, &mut steps);
  assert!(s.len() <= 700);
}

#[test]
fn validator_keywords() {
  let s = json!({ "type": "object", "properties": { "a": { "type": "integer" } }, "additionalProperties": false });
  assert_eq!(verdict(&s, &json!({ "a": 1 })), Verdict::Valid);
  assert_eq!(verdict(&s, &json!({ "a": 1.5 })), Verdict::Invalid);
  assert_eq!(verdict(&s, &json!({ "b": 1 })), Verdict::Invalid);
  assert_eq!(
    verdict(&json!({ "multipleOf": 0.1 }), &json!(0.3)),
    Verdict::Invalid,
    "as ajv: 0.3 / 0.1 is not an integer"
  );
  assert_eq!(verdict(&json!({ "enum": [1] }), &json!(1.0)), Verdict::Valid);
  assert_eq!(verdict(&json!({ "$ref": "https://example.com/s.json" }), &json!(1)), Verdict::Uncertain);
  assert_eq!(verdict(&json!({ "type": "string", "pattern": "(a)\\1" }), &json!("aa")), Verdict::Uncertain);
  assert_eq!(verdict(&json!({ "propertyNames": { "maxLength": 2 } }), &json!({ "abc": 1 })), Verdict::Invalid);
  assert_eq!(
    verdict(&json!({ "type": "array", "uniqueItems": true }), &json!([{ "a": 1 }, { "a": 1 }])),
    Verdict::Invalid
  );
  assert_eq!(
    verdict(&json!({ "dependentSchemas": { "a": { "required": ["b"] } } }), &json!({ "a": 1 })),
    Verdict::Invalid
  );
  assert_eq!(verdict(&json!({ "not": {} }), &json!(1)), Verdict::Invalid);
  assert_eq!(verdict(&json!(false), &json!(1)), Verdict::Invalid);
}

#[test]
fn hostile_depth_does_not_overflow() {
  let mut schema = json!({ "type": "string" });
  for _ in 0..10_000 {
    schema = object([("type", json!("object")), ("properties", object([("a", schema)])), ("required", json!(["a"]))]);
  }
  let ex = usage_examples("deep:get", None, Some(&schema), &[], 5);
  assert!(ex.is_empty(), "needs more than MAX_DEPTH levels");
  drop_iteratively(schema);

  // Optional nesting: an example without it.
  let mut schema = json!({ "type": "string" });
  for _ in 0..10_000 {
    schema = object([("type", json!("object")), ("properties", object([("a", schema)]))]);
  }
  let ex = usage_examples("deep:list", None, Some(&schema), &[], 5);
  assert!(!ex.is_empty());
  assert!(ex.iter().all(|e| e.code.len() <= MAX_CODE_BYTES));
  drop_iteratively(schema);

  let mut arrays = json!({ "type": "string" });
  for _ in 0..10_000 {
    let array = object([("type", json!("array")), ("items", arrays), ("minItems", json!(1))]);
    arrays = object([("anyOf", Value::Array(vec![array, json!({ "$ref": "#" })]))]);
  }
  let schema = object([("type", json!("object")), ("properties", object([("x", arrays)])), ("required", json!(["x"]))]);
  let _ = usage_examples("deep:run", None, Some(&schema), &[], 5);
  drop_iteratively(schema);

  let mut user = json!(1);
  for _ in 0..10_000 {
    user = object([("a", user)]);
  }
  let mut output = json!(1);
  for _ in 0..10_000 {
    output = Value::Array(vec![output]);
  }
  let entry = object([("description", json!("deep")), ("input", user), ("output", output)]);
  let ex = usage_examples("deep:run", None, None, std::slice::from_ref(&entry), 5);
  assert_eq!(ex.len(), 1, "the too-deep user example is dropped, the generated one stays");
  drop_iteratively(entry);
}

#[test]
fn hostile_refs_and_sizes() {
  let schemas = [
    json!({ "$ref": "#" }),
    json!({ "type": "object", "properties": { "self": { "$ref": "#" } }, "required": ["self"] }),
    json!({ "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } }, "$ref": "#/$defs/a" }),
    json!({ "allOf": [{ "$ref": "#" }, { "$ref": "#" }] }),
    json!({ "anyOf": [{ "$ref": "#" }, { "$ref": "#" }], "oneOf": [{ "$ref": "#" }] }),
    json!({ "type": "object", "properties": 5, "required": "a", "minProperties": "x" }),
    json!({ "type": 7, "enum": 3, "items": 5, "anyOf": {}, "allOf": [] }),
    json!([1, 2]),
    json!("schema"),
    json!(false),
    json!({ "type": "object", "properties": { "a": { "type": "array", "minItems": 1_000_000_000u64 } }, "required": ["a"] }),
    json!({ "type": "object", "properties": { "a": { "type": "string", "minLength": 1_000_000_000u64 } }, "required": ["a"] }),
    json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "^(a+)+$", "minLength": 100 } }, "required": ["a"] }),
  ];
  for schema in &schemas {
    for e in usage_examples("x:run", None, Some(schema), &[], 5) {
      assert!(e.code.len() <= MAX_CODE_BYTES);
    }
  }
  let mut defs = Map::new();
  for i in 0..40 {
    defs.insert(
      format!("d{i}"),
      json!({ "type": "object", "required": ["l", "r"], "properties": { "l": { "$ref": format!("#/$defs/d{}", i + 1) }, "r": { "$ref": format!("#/$defs/d{}", i + 1) } } }),
    );
  }
  let fan = json!({ "$ref": "#/$defs/d0", "$defs": defs });
  assert!(usage_examples("x:run", None, Some(&fan), &[], 5).is_empty());
  let mut props = Map::new();
  for i in 0..20_000 {
    props.insert(format!("property_{i}"), json!({ "type": "string" }));
  }
  let required: Vec<String> = (0..20_000).map(|i| format!("property_{i}")).collect();
  let big = json!({ "type": "object", "properties": props, "required": required });
  assert!(usage_examples("x:run", None, Some(&big), &[], 5).is_empty());
  let mut props = Map::new();
  for i in 0..5_000 {
    props.insert(format!("p{i}"), json!({ "type": "string", "pattern": "^(a+)+$" }));
  }
  let required: Vec<String> = (0..5_000).map(|i| format!("p{i}")).collect();
  let evil = json!({ "type": "object", "properties": props, "required": required });
  assert!(usage_examples("x:run", None, Some(&evil), &[], 5).is_empty());
  let patterns: Map<String, Value> = (0..64).map(|i| (format!("^(a+)+{i}$"), json!({ "type": "string" }))).collect();
  let keys: Vec<String> = (0..64).map(|i| format!("{}b", "a".repeat(40 + i))).collect();
  let evil =
    json!({ "type": "object", "patternProperties": patterns, "required": keys, "additionalProperties": false });
  assert!(usage_examples("x:run", None, Some(&evil), &[], 5).is_empty());
  let huge_enum: Vec<Value> = (0..100_000).map(|i| json!(format!("value-{i}"))).collect();
  let schema = json!({ "type": "object", "properties": { "e": { "enum": huge_enum } }, "required": ["e"] });
  assert_eq!(usage_examples("x:run", None, Some(&schema), &[], 5)[0].input, json!({ "e": "value-0" }));
}

#[test]
fn no_loops_and_parseable_shape() {
  let schema = json!({ "type": "object", "properties": { "for": { "type": "string" }, "while": { "type": "integer" } }, "required": ["for"] });
  for e in examples("x:list_for_while", None, schema) {
    // Keys named like loops are data, not statements.
    assert!(e.code.starts_with("const page = await callTool("));
    assert!(e.code.ends_with("return page;"));
  }
}
