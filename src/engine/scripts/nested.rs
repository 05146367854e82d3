//! A saved script run by a plan — `callTool('saved:<name>[@<version>]', input)` — as a nested
//! execution (§11): it runs on the same sandbox as its caller, under the caller's policy (its
//! `allowedTools`, the host's `deniedTools` and functions, approvals), within the caller's time
//! (it gets what is left of the caller's deadline) and tool-call budget (one [`Budget`] for the
//! whole tree), and its result is the call's result. Depth past `maxDepth` and a script that
//! reaches itself are refused with `ACCESS_DENIED` naming the chain.
//!
//! The host's `callTool` never sees the `saved:` call itself; every tool call inside it goes
//! through the host as usual, with its own `executionId`, and its events carry the caller's as
//! `parentExecutionId`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Value};

use super::store::Store;
use super::{SavedScript, ScriptRef};
use crate::common::ErrorCode;
use crate::engine::approval::ApprovalPolicy;
use crate::engine::examples::first_mismatch;
use crate::engine::host::{Callable, EngineHost};
use crate::sandbox::{
  ApprovalAnswer, ApprovalAsk, CallResult, Completed, Event, ExecuteConfig, Host, HostCall, HostFailure, Outcome,
  Reply, Shared, Submitter,
};

/// Saved scripts one plan may have running (or waiting on the host) at once, all depths together:
/// each is a runtime with its own heap, so a plan that fans out over saved scripts must not hold
/// `maxToolCalls` heaps at a time.
pub const MAX_NESTED_AT_ONCE: u64 = 8;

/// The tool calls one plan and every saved script under it may make together (`maxToolCalls`),
/// and the nested runs it has going.
#[derive(Debug)]
pub struct Budget {
  limit: u64,
  used: AtomicU64,
  nested: AtomicU64,
}

impl Budget {
  pub fn new(limit: u64) -> Self {
    Self { limit, used: AtomicU64::new(0), nested: AtomicU64::new(0) }
  }

  /// Counts a nested run in; false when [`MAX_NESTED_AT_ONCE`] are going.
  fn enter(&self) -> bool {
    if self.nested.fetch_add(1, Ordering::AcqRel) < MAX_NESTED_AT_ONCE {
      return true;
    }
    self.leave();
    false
  }

  fn leave(&self) {
    self.nested.fetch_sub(1, Ordering::AcqRel);
  }

  /// Counts one call; false when it is one too many.
  pub fn take(&self) -> bool {
    self.used.fetch_add(1, Ordering::AcqRel) < self.limit
  }

  pub fn left(&self) -> u64 {
    self.limit.saturating_sub(self.used.load(Ordering::Acquire))
  }

  pub fn limit(&self) -> u64 {
    self.limit
  }
}

/// Where an execution stands among saved scripts: the chain from the plan down to it.
#[derive(Clone)]
pub struct Lineage {
  /// The saved scripts running above and including this one, outermost first: `(name, label)`.
  pub chain: Vec<(String, String)>,
  pub budget: Arc<Budget>,
  /// The executions above this one, whose clocks stand still too while a person decides here.
  pub ancestors: Vec<Weak<Shared>>,
}

impl Lineage {
  /// A plan's own lineage (`chain` empty), or a saved script run by name (`chain` = it).
  pub fn root(limit: u64, chain: Vec<(String, String)>) -> Self {
    Self { chain, budget: Arc::new(Budget::new(limit)), ancestors: Vec::new() }
  }

  fn shown(&self, last: &str) -> String {
    let mut parts: Vec<&str> = self.chain.iter().map(|(_, label)| label.as_str()).collect();
    parts.push(last);
    parts.join(" → ")
  }
}

/// What an execution needs to run the saved scripts its script calls.
#[derive(Clone)]
pub struct SavedRun {
  pub store: Arc<dyn Store>,
  pub submitter: Submitter,
  /// The caller's settings, which a nested run inherits.
  pub exec: ExecuteConfig,
  pub max_depth: usize,
  pub lineage: Lineage,
  pub callable: Callable,
  pub approval: ApprovalPolicy,
  pub tool_functions: Vec<(String, bool)>,
}

/// One execution's side of saved scripts: its settings, itself, the nested runs it started.
pub struct SavedCtx {
  pub run: SavedRun,
  me: Mutex<Weak<Shared>>,
  children: Mutex<Vec<Weak<Shared>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
  m.lock().unwrap_or_else(|p| p.into_inner())
}

fn failure(code: ErrorCode, message: String, details: Option<Value>) -> CallResult {
  CallResult::Err(HostFailure {
    message,
    code: Some(code.as_str().into()),
    details_json: details.map(|d| d.to_string()),
  })
}

impl SavedCtx {
  pub fn new(run: SavedRun) -> Self {
    Self { run, me: Mutex::new(Weak::new()), children: Mutex::new(Vec::new()) }
  }

  pub fn budget(&self) -> &Budget {
    &self.run.lineage.budget
  }

  pub fn ancestors(&self) -> &[Weak<Shared>] {
    &self.run.lineage.ancestors
  }

  pub fn attached(&self, shared: &Arc<Shared>) {
    *lock(&self.me) = Arc::downgrade(shared);
  }

  /// The execution ended: the nested runs it started end too (their results go nowhere).
  pub fn finished(&self) {
    let children: Vec<Weak<Shared>> = std::mem::take(&mut *lock(&self.children));
    for child in children.iter().filter_map(Weak::upgrade) {
      self.run.submitter.abort(&child);
    }
  }

  /// Counts a call against the tree's budget: the refusal when it is one too many.
  pub fn over_budget(&self) -> Option<CallResult> {
    if self.budget().take() {
      return None;
    }
    Some(failure(
      ErrorCode::MaxToolCallsExceeded,
      format!(
        "More than {} tool calls in one execution, those of the saved scripts it runs included (maxToolCalls)",
        self.budget().limit()
      ),
      None,
    ))
  }

  /// `callTool('saved:…')`: checks depth and cycles, reads the script from the store, checks the
  /// input and starts the nested run; `reply` gets its result.
  pub fn call(self: &Arc<Self>, inner: Arc<dyn Host>, call: HostCall, reply: Box<dyn Reply>) {
    let wanted = match ScriptRef::of_tool(&call.name) {
      Some(Ok(r)) => r,
      Some(Err(why)) => {
        return reply.send(failure(ErrorCode::ToolNotFound, format!("Tool '{}' was not found: {why}", call.name), None))
      }
      None => return reply.send(failure(ErrorCode::ToolNotFound, format!("Tool '{}' was not found", call.name), None)),
    };
    let lineage = &self.run.lineage;
    if lineage.chain.iter().any(|(name, _)| *name == wanted.name) {
      return reply.send(failure(
        ErrorCode::AccessDenied,
        format!("A saved script may not reach itself: {}", lineage.shown(&wanted.label())),
        None,
      ));
    }
    if lineage.chain.len() + 1 > self.run.max_depth {
      return reply.send(failure(
        ErrorCode::AccessDenied,
        format!(
          "Saved scripts may nest at most {} deep (scripts.maxDepth): {}",
          self.run.max_depth,
          lineage.shown(&wanted.label())
        ),
        None,
      ));
    }
    let this = self.clone();
    let store = self.run.store.clone();
    let (name, version) = (wanted.name.clone(), wanted.version);
    let asked = wanted.clone();
    store.fetch(
      &name,
      version,
      Box::new(move |found| match found {
        Ok(Some(script)) => this.start(inner, call, reply, asked, script),
        Ok(None) => {
          reply.send(failure(ErrorCode::ToolNotFound, format!("Saved script '{}' was not found", asked.label()), None))
        }
        Err(why) => reply.send(failure(
          ErrorCode::ToolExecutionError,
          format!("The saved-scripts store failed reading '{}': {why}", asked.label()),
          None,
        )),
      }),
    );
  }

  fn start(
    self: &Arc<Self>,
    inner: Arc<dyn Host>,
    call: HostCall,
    reply: Box<dyn Reply>,
    wanted: ScriptRef,
    script: SavedScript,
  ) {
    let label = script.label();
    // A host's store is not trusted to answer what was asked.
    if script.name != wanted.name || wanted.version.is_some_and(|v| v != script.version) {
      return reply.send(failure(
        ErrorCode::ToolExecutionError,
        format!("The saved-scripts store answered {label} for {}", wanted.label()),
        None,
      ));
    }
    if let Some(schema) = &script.input_schema {
      let input: Value = serde_json::from_str(&call.args_json).unwrap_or(Value::Null);
      if let Some(why) = first_mismatch(&input, schema, "input") {
        let message = format!("Invalid input for '{label}': {why}");
        return reply.send(failure(
          ErrorCode::ToolExecutionError,
          message.clone(),
          Some(json!({ "code": ErrorCode::ErrInvalidArg.as_str(), "message": message, "script": label })),
        ));
      }
    }
    let Some(me) = lock(&self.me).upgrade() else {
      return reply.send(failure(ErrorCode::ToolExecutionError, "The calling execution has ended".into(), None));
    };
    if !self.budget().enter() {
      return reply.send(failure(
        ErrorCode::TooManyPendingCalls,
        format!("More than {MAX_NESTED_AT_ONCE} saved scripts running at once in one plan"),
        None,
      ));
    }
    // Its own unguessable id (§12), not one derived from the caller's; events carry the caller's
    // as `parentExecutionId`.
    let id = crate::common::execution_id();
    let mut exec = self.run.exec.clone();
    exec.language = script.language;
    exec.input_json = Some(call.args_json.clone());
    exec.timeout = me.remaining().max(Duration::from_millis(1));
    exec.max_tool_calls = self.budget().left();
    exec.host_get_tool = true;
    let mut lineage = self.run.lineage.clone();
    lineage.chain.push((script.name.clone(), label.clone()));
    lineage.ancestors.push(Arc::downgrade(&me));
    let nested: Arc<dyn Host> = Arc::new(NestedHost {
      parent: inner,
      parent_execution_id: me.id.clone(),
      reply: Mutex::new(Some(reply)),
      label,
      budget: self.run.lineage.budget.clone(),
    });
    let run = SavedRun { exec: exec.clone(), lineage, ..self.run.clone() };
    let host: Arc<dyn Host> = Arc::new(
      EngineHost::new(nested, self.run.callable.clone(), &self.run.approval)
        .with_tool_functions(self.run.tool_functions.clone())
        .with_saved(run),
    );
    let shared = Arc::new(Shared::new(id, host, exec.timeout));
    shared.host.attached(&shared);
    {
      let mut children = lock(&self.children);
      children.retain(|c| c.strong_count() > 0);
      children.push(Arc::downgrade(&shared));
    }
    self.run.submitter.submit(script.script, exec, shared);
  }
}

/// The host of a nested run: its calls, events and approvals go to the caller's host; its result
/// is the answer to the caller's `callTool`.
struct NestedHost {
  parent: Arc<dyn Host>,
  parent_execution_id: String,
  reply: Mutex<Option<Box<dyn Reply>>>,
  /// `saved:<name>@<version>`.
  label: String,
  /// The tree's: the run leaves it when it completes.
  budget: Arc<Budget>,
}

impl Host for NestedHost {
  fn call(&self, mut call: HostCall, reply: Box<dyn Reply>) {
    if call.parent_execution_id.is_none() {
      call.parent_execution_id = Some(self.parent_execution_id.clone());
    }
    self.parent.call(call, reply);
  }

  fn event(&self, event: Event) {
    let event = match event {
      nested @ Event::Nested { .. } => nested,
      event => Event::Nested { parent_execution_id: self.parent_execution_id.clone(), event: Box::new(event) },
    };
    self.parent.event(event);
  }

  fn get_tool(&self, name: &str, timeout: Duration) -> Option<String> {
    self.parent.get_tool(name, timeout)
  }

  fn get_tool_now(&self, name: &str) -> Option<Option<String>> {
    self.parent.get_tool_now(name)
  }

  fn approve(&self, ask: ApprovalAsk, answer: ApprovalAnswer) {
    self.parent.approve(ask, answer);
  }

  fn complete(&self, completed: Completed) {
    let Some(reply) = lock(&self.reply).take() else { return };
    self.budget.leave();
    reply.send(answer_of(&self.label, &completed));
  }
}

/// A nested run's result as its caller's `callTool` answer: the value, or a `TOOL_EXECUTION_ERROR`
/// whose `details` carry the inner error's `code` and `location`.
fn answer_of(label: &str, completed: &Completed) -> CallResult {
  if let Outcome::Ok { result_json } = &completed.outcome {
    return CallResult::Ok(result_json.clone());
  }
  let whole: Value = serde_json::from_str(&completed.to_json()).unwrap_or(Value::Null);
  if whole.get("status").and_then(Value::as_str) == Some("ok") {
    return CallResult::Ok(whole.get("result").map(Value::to_string));
  }
  let error = whole.get("error").cloned().unwrap_or(Value::Null);
  let code = error.get("code").and_then(Value::as_str).unwrap_or(ErrorCode::ExecutionError.as_str()).to_string();
  let message = error.get("message").and_then(Value::as_str).unwrap_or("the saved script failed").to_string();
  let execution_id = whole
    .pointer("/stats/executionId")
    .and_then(Value::as_str)
    .filter(|s| !s.is_empty())
    .unwrap_or(&completed.stats.execution_id)
    .to_string();
  let mut details = json!({ "code": code, "message": message, "script": label, "executionId": execution_id });
  for key in ["location", "toolName", "details"] {
    if let Some(v) = error.get(key).filter(|v| !v.is_null()) {
      details[key] = v.clone();
    }
  }
  failure(ErrorCode::ToolExecutionError, format!("Saved script '{label}' failed ({code}): {message}"), Some(details))
}
