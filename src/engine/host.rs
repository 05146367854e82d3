//! The engine's side of the host-call bridge: wraps the host's pipeline (`CodeCallHost`) so that a
//! script reaches only tools in the CodeCall index (the sandbox's `getTool` is answered from the
//! registry, so any other name is `TOOL_NOT_FOUND` before the host is asked), and so that MCP
//! `CallToolResult`s are unwrapped before the script sees them. Every call still goes to the host's
//! `callTool`: the engine never runs a tool any other way.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::unwrap::unwrap_json;
use crate::sandbox::Completed;
use crate::sandbox::{CallResult, CallTarget, Event, Host, HostCall, Reply};

/// The indexed tools, by name, as the sandbox's `getTool` answers them (JSON). Shared with the
/// registry: a tool removed while a script runs is no longer callable from it.
pub type Callable = Arc<RwLock<HashMap<String, Arc<str>>>>;

pub struct EngineHost {
  inner: Arc<dyn Host>,
  callable: Callable,
}

impl EngineHost {
  pub fn new(inner: Arc<dyn Host>, callable: Callable) -> Self {
    Self { inner, callable }
  }
}

struct UnwrapReply(Box<dyn Reply>);

impl Reply for UnwrapReply {
  fn send(self: Box<Self>, result: CallResult) {
    let result = match result {
      CallResult::Ok(json) => match unwrap_json(json) {
        Ok(v) => CallResult::Ok(v),
        Err(failure) => CallResult::Err(failure),
      },
      err @ CallResult::Err(_) => err,
    };
    self.0.send(result);
  }
}

impl Host for EngineHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    match call.target {
      CallTarget::Tool => self.inner.call(call, Box::new(UnwrapReply(reply))),
      CallTarget::Function => self.inner.call(call, reply),
    }
  }

  fn event(&self, event: Event) {
    self.inner.event(event);
  }

  fn get_tool(&self, name: &str, _timeout: Duration) -> Option<String> {
    let tools = self.callable.read().unwrap_or_else(|p| p.into_inner());
    tools.get(name).map(|json| json.to_string())
  }

  fn get_tool_now(&self, name: &str) -> Option<Option<String>> {
    Some(self.get_tool(name, Duration::ZERO))
  }

  fn complete(&self, completed: Completed) {
    self.inner.complete(completed);
  }
}
