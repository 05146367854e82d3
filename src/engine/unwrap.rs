//! MCP `CallToolResult` unwrapping (`api.md` §5, `codecall:execute`): a script sees what the tool
//! meant, not the MCP envelope.
//!
//! - `isError: true` → the call fails (`TOOL_EXECUTION_ERROR`, the message from the text content,
//!   `structuredContent` as `details`);
//! - else `structuredContent`, if present;
//! - else a single text item, `JSON.parse`d when it parses (else the string);
//! - else the `content` array.
//!
//! Anything that is not a `CallToolResult` (an object whose only keys are `content` — an array of
//! `{ type, ... }` items — and optionally `structuredContent`, `isError`, `_meta`) passes unchanged.

use serde_json::{Map, Value};

use crate::sandbox::HostFailure;

/// Keys a `CallToolResult` may have.
const ENVELOPE_KEYS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];
/// At most this much error text is kept as the message.
const MAX_MESSAGE_CHARS: usize = 4096;

/// Unwraps a host's answer, given as JSON (`None`: `undefined`).
pub fn unwrap_json(json: Option<String>) -> Result<Option<String>, HostFailure> {
  let Some(json) = json else {
    return Ok(None);
  };
  // Only objects with a `content` key can be envelopes: skip parsing everything else.
  if !json.trim_start().starts_with('{') || !json.contains("\"content\"") {
    return Ok(Some(json));
  }
  let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&crate::common::well_formed_escapes(&json)) else {
    return Ok(Some(json));
  };
  match unwrap_value(o) {
    Unwrapped::NotEnvelope => Ok(Some(json)),
    Unwrapped::Value(v) => Ok(Some(v.to_string())),
    Unwrapped::Error(failure) => Err(failure),
  }
}

/// What an answer turned out to be.
#[derive(Debug, PartialEq)]
pub enum Unwrapped {
  NotEnvelope,
  Value(Value),
  Error(HostFailure),
}

pub fn is_envelope(o: &Map<String, Value>) -> bool {
  let content_ok = match o.get("content") {
    Some(Value::Array(items)) => items.iter().all(|i| i.get("type").is_some_and(Value::is_string)),
    _ => false,
  };
  content_ok
    && o.keys().all(|k| ENVELOPE_KEYS.contains(&k.as_str()))
    && matches!(o.get("isError"), None | Some(Value::Bool(_)) | Some(Value::Null))
}

pub fn unwrap_value(mut o: Map<String, Value>) -> Unwrapped {
  if !is_envelope(&o) {
    return Unwrapped::NotEnvelope;
  }
  let content = match o.remove("content") {
    Some(Value::Array(items)) => items,
    _ => Vec::new(),
  };
  let structured = o.remove("structuredContent").filter(|v| !v.is_null());
  if o.get("isError") == Some(&Value::Bool(true)) {
    let text: Vec<&str> = content
      .iter()
      .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
      .filter_map(|i| i.get("text").and_then(Value::as_str))
      .collect();
    let mut message = text.join("\n");
    if message.trim().is_empty() {
      message = "The tool reported an error".into();
    }
    if message.chars().count() > MAX_MESSAGE_CHARS {
      message = message.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
    }
    return Unwrapped::Error(HostFailure { message, code: None, details_json: structured.map(|s| s.to_string()) });
  }
  if let Some(s) = structured {
    return Unwrapped::Value(s);
  }
  if let [only] = content.as_slice() {
    if only.get("type").and_then(Value::as_str) == Some("text") {
      if let Some(text) = only.get("text").and_then(Value::as_str) {
        return Unwrapped::Value(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())));
      }
    }
  }
  Unwrapped::Value(Value::Array(content))
}
