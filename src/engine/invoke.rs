//! `codecall:invoke`, one tool through the host's pipeline without a VM — every decision in plain
//! Rust, the I/O left to whoever drives it:
//! 1. [`InvokeInput::read`] reads `{ tool, input? }` (bad input, another key among it, is an
//!    argument error);
//! 2. [`Engine::begin_invoke`] applies the checks (direct calls on, not a meta-tool, indexed, on the
//!    allowlist, `directCalls.filter`) — a refusal is already invoke's result, the host never hears
//!    of it — and otherwise returns an [`Invocation`]: the [`HostCall`] to make and its
//!    `tool_call_start` event;
//! 3. [`Invocation::finish`] turns the host's answer (MCP `CallToolResult`s unwrapped) into
//!    invoke's result and its `tool_call_end` event.
//!
//! [`Engine::invoke`] drives the three over a sandbox [`Host`] (what `cargo test` uses); the napi
//! binding drives them on Node's thread, calling the host's `callTool` directly.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::codecall::{Engine, Refusal};
use super::meta::Meta;
use super::registry::ToolDef;
use super::unwrap::unwrap_json;
use crate::common::{ErrorCode, Glob, InvalidArgument};
use crate::sandbox::{CallResult, CallTarget, Event, Host, HostCall, Reply};

/// `codecall:invoke`'s input, read.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeInput {
  pub tool: String,
  /// The tool's input; omitted or `null` is `{}`.
  pub input: Value,
}

impl InvokeInput {
  /// Reads `{ tool, input? }`; another key is refused, named with `called`, the name the
  /// client called the meta-tool by.
  pub fn read(input: Value, called: &str) -> Result<Self, InvalidArgument> {
    let Value::Object(mut input) = input else { return Err(InvalidArgument::new("input must be an object")) };
    Meta::Invoke.check_keys(&input, called)?;
    let tool = match input.remove("tool") {
      Some(Value::String(s)) => s,
      _ => return Err(InvalidArgument::new("input.tool must be a string")),
    };
    let input = match input.remove("input") {
      None | Some(Value::Null) => Value::Object(Map::new()),
      Some(v) => v,
    };
    Ok(Self { tool, input })
  }
}

/// A direct call the engine allowed: what to ask the host, and how its answer becomes the result.
#[derive(Debug)]
pub struct Invocation {
  call: HostCall,
  input: Value,
  started: Instant,
}

/// An invocation's end: the result for the caller and the `tool_call_end` event.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
  pub result: Value,
  pub end: Event,
}

impl Invocation {
  /// The call to make: `callTool(call.name, input, { callId, executionId })`. Both ids are the
  /// invocation's id: a direct call is its own execution.
  pub fn call(&self) -> &HostCall {
    &self.call
  }

  pub fn start_event(&self) -> Event {
    Event::ToolCallStart {
      execution_id: self.call.execution_id.clone(),
      call_id: self.call.call_id.clone(),
      tool_name: self.call.name.clone(),
      input_json: self.call.args_json.clone(),
    }
  }

  /// The host answered (its error as the host reported it, or its value as JSON).
  pub fn finish(self, answer: CallResult) -> Finished {
    let unwrapped = match answer {
      CallResult::Ok(json) => unwrap_json(json),
      CallResult::Err(failure) => Err(failure),
    };
    let (result, error) = match unwrapped {
      Ok(value) => {
        let mut o = Map::new();
        o.insert("status".into(), Value::String("ok".into()));
        if let Some(v) = value.and_then(|v| serde_json::from_str::<Value>(&v).ok()) {
          o.insert("result".into(), v);
        }
        (Value::Object(o), None)
      }
      Err(f) => {
        let code = f.code.unwrap_or_else(|| ErrorCode::ToolExecutionError.as_str().into());
        let details = f.details_json.and_then(|d| serde_json::from_str::<Value>(&d).ok());
        let result = error_result(&code, &f.message, &self.call.name, self.input, details);
        (result, Some((code, f.message)))
      }
    };
    let end = Event::ToolCallEnd {
      execution_id: self.call.execution_id,
      call_id: self.call.call_id,
      tool_name: self.call.name,
      input_json: self.call.args_json,
      ok: error.is_none(),
      duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
      error,
    };
    Finished { result, end }
  }
}

/// `{ status: 'error', error: { code, message, toolName, toolInput, details? } }`.
fn error_result(code: &str, message: &str, tool: &str, tool_input: Value, details: Option<Value>) -> Value {
  let mut e = Map::new();
  e.insert("code".into(), Value::String(code.into()));
  e.insert("message".into(), Value::String(message.into()));
  e.insert("toolName".into(), Value::String(tool.into()));
  e.insert("toolInput".into(), tool_input);
  if let Some(d) = details {
    e.insert("details".into(), d);
  }
  json!({ "status": "error", "error": Value::Object(e) })
}

impl Engine {
  /// Step 2: the checks. `Err` is invoke's result already (a refusal; the host is not called).
  /// `filter_allows` is `directCalls.filter`, asked only for indexed tools on the allowlist.
  pub fn begin_invoke(
    &self,
    input: InvokeInput,
    id: &str,
    denied: &[(Glob, String)],
    filter_allows: impl FnOnce(&ToolDef) -> bool,
  ) -> Result<Invocation, Value> {
    let mut checked = self.check_invoke(&input.tool, filter_allows);
    // The host's own policy (`deniedTools`, e.g. the gateway's allowedServers) names itself
    // where the index alone would say "not found".
    if let Some((_, reason)) = denied.iter().find(|(glob, _)| glob.matches(&input.tool)) {
      if matches!(&checked, Ok(()) | Err(Refusal { code: ErrorCode::ToolNotFound, .. })) {
        checked = Err(Refusal {
          code: ErrorCode::AccessDenied,
          message: format!("Tool '{}' is not allowed: {reason}", input.tool),
        });
      }
    }
    if let Err(Refusal { code, message }) = checked {
      return Err(error_result(code.as_str(), &message, &input.tool, input.input, None));
    }
    let call = HostCall {
      execution_id: id.to_string(),
      call_id: id.to_string(),
      target: CallTarget::Tool,
      args_json: input.input.to_string(),
      name: input.tool,
      parent_execution_id: None,
    };
    Ok(Invocation { call, input: input.input, started: Instant::now() })
  }

  /// `codecall:invoke` over a sandbox host, without JavaScript: `done` gets the result exactly
  /// once — at once for a refusal, else when the host answers. Events go to `host.event`.
  pub fn invoke<H: Host + ?Sized>(
    &self,
    input: Value,
    id: &str,
    filter_allows: impl FnOnce(&ToolDef) -> bool,
    host: Arc<H>,
    done: impl FnOnce(Value) + Send + 'static,
  ) -> Result<(), InvalidArgument> {
    let input = InvokeInput::read(input, &self.meta_name(Meta::Invoke))?;
    match self.begin_invoke(input, id, &[], filter_allows) {
      Err(refused) => done(refused),
      Ok(invocation) => {
        host.event(invocation.start_event());
        let call = invocation.call().clone();
        host.clone().call(call, Box::new(Answer { invocation, host, done }));
      }
    }
    Ok(())
  }
}

/// The host's answer to an invocation, finished where it arrives.
struct Answer<H: ?Sized, D> {
  invocation: Invocation,
  host: Arc<H>,
  done: D,
}

impl<H: Host + ?Sized, D: FnOnce(Value) + Send> Reply for Answer<H, D> {
  fn send(self: Box<Self>, answer: CallResult) {
    let Answer { invocation, host, done } = *self;
    let Finished { result, end } = invocation.finish(answer);
    host.event(end);
    done(result);
  }
}
