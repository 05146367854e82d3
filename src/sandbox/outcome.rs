//! The six result shapes of `api.md` §2.4, as Rust data, and their JSON form.

use crate::common::ErrorCode;
use crate::validator::{Location, Rejection};

use super::json::JsonWriter;

/// Who caused a `runtime_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
  Script,
  Sandbox,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
  Ok {
    result_json: Option<String>,
  },
  Rejected(Rejection),
  RuntimeError {
    source: ErrorSource,
    code: ErrorCode,
    message: String,
    name: Option<String>,
    stack: Option<String>,
    location: Option<Location>,
  },
  ToolError {
    code: String,
    tool_name: String,
    tool_input_json: String,
    message: String,
    details_json: Option<String>,
  },
  Timeout {
    timeout_ms: u64,
  },
  /// A whole `ExecuteResult` as a worker process reported it (already checked by the host).
  Relayed(String),
}

impl Outcome {
  pub fn sandbox(code: ErrorCode, message: impl Into<String>) -> Self {
    Self::RuntimeError {
      source: ErrorSource::Sandbox,
      code,
      message: message.into(),
      name: None,
      stack: None,
      location: None,
    }
  }

  /// `TIMEOUT` after `timeout` (`timeoutMs`).
  pub fn timed_out(timeout: std::time::Duration) -> Self {
    Self::Timeout { timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) }
  }

  pub fn status(&self) -> &'static str {
    match self {
      Self::Ok { .. } => "ok",
      Self::Rejected(r) => r.status(),
      Self::RuntimeError { .. } => "runtime_error",
      Self::ToolError { .. } => "tool_error",
      Self::Timeout { .. } => "timeout",
      Self::Relayed(json) => relayed_field(json, "status").map_or("runtime_error", |s| match s.as_str() {
        "ok" => "ok",
        "syntax_error" => "syntax_error",
        "illegal_access" => "illegal_access",
        "tool_error" => "tool_error",
        "timeout" => "timeout",
        _ => "runtime_error",
      }),
    }
  }

  /// The error code, if the outcome is an error.
  pub fn code(&self) -> Option<String> {
    match self {
      Self::Ok { .. } => None,
      Self::Rejected(r) => Some(r.code().as_str().into()),
      Self::RuntimeError { code, .. } => Some(code.as_str().into()),
      Self::ToolError { code, .. } => Some(code.clone()),
      Self::Timeout { .. } => Some(ErrorCode::Timeout.as_str().into()),
      Self::Relayed(json) => relayed_field(json, "code"),
    }
  }
}

/// `status`, or `error.code` for `"code"`, of a relayed result.
fn relayed_field(json: &str, field: &str) -> Option<String> {
  let value: serde_json::Value = serde_json::from_str(json).ok()?;
  let v = if field == "code" { value.get("error")?.get("code")? } else { value.get(field)? };
  v.as_str().map(str::to_string)
}

/// Counters of one execution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
  pub execution_id: String,
  pub duration_ms: f64,
  pub tool_calls: u64,
  pub iterations: Option<u64>,
  pub memory_bytes: Option<u64>,
}

/// A finished execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
  pub outcome: Outcome,
  pub logs: Vec<String>,
  pub stats: Stats,
}

impl Completed {
  /// The `ExecuteResult` object as JSON (parsed once on the host side).
  pub fn to_json(&self) -> String {
    if let Outcome::Relayed(json) = &self.outcome {
      return json.clone();
    }
    let mut w = JsonWriter::default();
    w.begin_object();
    w.key("status").string(self.outcome.status());
    match &self.outcome {
      Outcome::Ok { result_json } => {
        if let Some(json) = result_json {
          w.key("result").raw(json);
        }
      }
      Outcome::Rejected(rejection) => {
        w.key("error").begin_object();
        w.key("code").string(rejection.code().as_str());
        if let Some(kind) = rejection.kind() {
          w.key("kind").string(kind);
        }
        w.key("message").string(rejection.message());
        if let Some(location) = rejection.location() {
          write_location(&mut w, location);
        }
        w.end_object();
      }
      Outcome::RuntimeError { source, code, message, name, stack, location } => {
        w.key("error").begin_object();
        w.key("source").string(match source {
          ErrorSource::Script => "script",
          ErrorSource::Sandbox => "sandbox",
        });
        w.key("code").string(code.as_str());
        w.key("message").string(message);
        if let Some(name) = name {
          w.key("name").string(name);
        }
        if let Some(stack) = stack {
          w.key("stack").string(stack);
        }
        if let Some(location) = location {
          write_location(&mut w, *location);
        }
        w.end_object();
      }
      Outcome::ToolError { code, tool_name, tool_input_json, message, details_json } => {
        w.key("error").begin_object();
        w.key("source").string("tool");
        w.key("code").string(code);
        w.key("toolName").string(tool_name);
        w.key("toolInput").raw(tool_input_json);
        w.key("message").string(message);
        if let Some(details) = details_json {
          w.key("details").raw(details);
        }
        w.end_object();
      }
      Outcome::Relayed(_) => {}
      Outcome::Timeout { timeout_ms } => {
        w.key("error").begin_object();
        w.key("code").string(ErrorCode::Timeout.as_str());
        w.key("message").string(&format!("Script execution timed out after {timeout_ms}ms"));
        w.end_object();
      }
    }
    let has_logs = !matches!(self.outcome, Outcome::Rejected(_));
    if has_logs && !self.logs.is_empty() {
      w.key("logs").begin_array();
      for line in &self.logs {
        w.string(line);
      }
      w.end_array();
    }
    w.key("stats").begin_object();
    w.key("executionId").string(&self.stats.execution_id);
    w.key("durationMs").number(self.stats.duration_ms);
    w.key("toolCalls").number(self.stats.tool_calls as f64);
    if let Some(iterations) = self.stats.iterations {
      w.key("iterations").number(iterations as f64);
    }
    if let Some(memory) = self.stats.memory_bytes {
      w.key("memoryBytes").number(memory as f64);
    }
    w.end_object();
    w.end_object();
    w.finish()
  }
}

fn write_location(w: &mut JsonWriter, location: Location) {
  w.key("location").begin_object();
  w.key("line").number(location.line.into());
  w.key("column").number(location.column.into());
  w.end_object();
}
