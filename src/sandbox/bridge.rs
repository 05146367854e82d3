//! The host-call bridge: the messages that cross between an execution and its host.
//!
//! Everything is data (JSON strings, codes), never a live JavaScript value, so the same messages
//! can later cross a pipe to a worker process unchanged:
//! - **call**: the script asks the host to run a tool or a host function (`HostCall`);
//! - **result**: the host answers a call (`CallResult`), delivered to the execution's worker;
//! - **event**: `tool_call_start` / `tool_call_end` / `log` / `notify`, in order (`Event`);
//! - **complete**: the execution's one result (`Completed`), exactly once;
//! - **cancel**: abort and timeout travel the other way, as `Abort` messages to the worker.
//!
//! Only the messages and where an answer goes (`Reply`, `ApprovalAnswer`) live here; the `Host`
//! that receives them is in `shared.rs`, beside the `Shared` state it is handed and that holds
//! it: both name each other, so they stand in one file, and this file uses neither.

/// What a call asks the host to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
  /// `callTool(name, input)`: `args_json` is the input.
  Tool,
  /// A host function from `functions`: `args_json` is the argument array.
  Function,
}

/// A host call requested by a script.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCall {
  pub execution_id: String,
  pub call_id: String,
  pub target: CallTarget,
  pub name: String,
  pub args_json: String,
  /// A nested run's call (a saved script a plan called, §11): the calling execution. Set on the
  /// host side only.
  pub parent_execution_id: Option<String>,
}

/// How the host answered a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
  /// The value as JSON; `None` for `undefined`.
  Ok(Option<String>),
  /// The host threw or rejected.
  Err(HostFailure),
}

/// A host error, kept as the host reported it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostFailure {
  pub message: String,
  /// The host error's own `code`, if it had a string one.
  pub code: Option<String>,
  /// The host error's `details`, as JSON.
  pub details_json: Option<String>,
}

/// Events of `api.md` §2.5. JSON fields are already serialized.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
  ToolCallStart {
    execution_id: String,
    call_id: String,
    tool_name: String,
    input_json: String,
  },
  ToolCallEnd {
    execution_id: String,
    call_id: String,
    tool_name: String,
    input_json: String,
    ok: bool,
    duration_ms: f64,
    error: Option<(String, String)>,
  },
  Log {
    execution_id: String,
    level: String,
    message: String,
    metadata_json: Option<String>,
  },
  Notify {
    execution_id: String,
    event: String,
    payload_json: String,
  },
  /// §9: a person was asked about a call (or could not be), before its `ToolCallStart`. Made on
  /// the host side only: a worker never sends one.
  Approval {
    execution_id: String,
    call_id: String,
    tool_name: String,
    /// `approve`, `approve_always`, `decline`, `timeout` or `unavailable`.
    decision: &'static str,
    waited_ms: f64,
  },
  /// An event of a nested execution (a saved script a plan called, §11): the inner event, and the
  /// execution that called it. Made on the host side only.
  Nested {
    parent_execution_id: String,
    event: Box<Event>,
  },
}

/// What a host is asked about one call that needs a person's yes (§9).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAsk {
  pub execution_id: String,
  pub call_id: String,
  pub tool_name: String,
  pub input_json: String,
  pub annotations_json: Option<String>,
  /// `destructive`, `writes`, `all` or `ask`.
  pub reason: &'static str,
}

/// A host's answer to an [`ApprovalAsk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
  Approve,
  /// This tool, for the rest of the execution.
  ApproveAlways,
  /// No — or an answer that is not one of the three, or a throw (the text says which).
  Decline(Option<String>),
  /// The host (or its client) cannot ask anyone.
  Unavailable,
}

/// Where an approval's answer goes; called exactly once.
pub type ApprovalAnswer = Box<dyn FnOnce(Approval) + Send>;

/// Where a call's answer goes: the worker that owns the execution.
pub trait Reply: Send {
  fn send(self: Box<Self>, result: CallResult);
}
