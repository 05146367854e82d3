//! One execution: its own QuickJS runtime (own heap, own memory limit) and context, the globals of
//! `api.md` §2.3, and the loop that runs it until it settles or parks.
//!
//! An execution never blocks its thread while it waits for the host: when its promise is pending
//! and only host calls can move it, `pump` returns `Step::Parked` and the worker thread serves
//! other executions. A host result (`resume`) resolves the call's promise and pumps again.
//!
//! Lifetimes: every `Persistent` handle (pending calls' resolvers, the script's promise) is dropped
//! before the context, and the context before the runtime (`Drop` below), so no handle can outlive
//! the runtime it belongs to.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use rquickjs::function::Opt;
use rquickjs::promise::PromiseState;
use rquickjs::{qjs, Ctx, Exception, Function, Object, Persistent, Promise, Value};

use super::compile::{self, CompileError};
use super::errors;
use super::serialize::{self, SerializeError};
use super::spare::{Slot, Spare};
use super::strings::{js_string_lossy, Lossy};
use super::Engine;
use crate::common::ErrorCode;
use crate::sandbox::bridge::{CallResult, CallTarget, Event, HostCall, Reply};
use crate::sandbox::config::{ExecuteConfig, SandboxConfig};
use crate::sandbox::outcome::{Completed, ErrorSource, Outcome, Stats};
use crate::sandbox::shared::{Shared, Stop};
use crate::validator::{self, Location, PrepareOptions, Rejection, SourceMapping};

/// Headroom added to the memory limit while a result or error is being read out, so that an
/// execution that ran out of memory can still be reported.
const REPORTING_HEADROOM: usize = 4 << 20;

/// What `start` / `resume` / `pump` leave behind.
#[allow(clippy::large_enum_variant)] // short-lived, returned once per step
pub enum Step {
  Done(Completed),
  Parked,
}

/// Sends a host call's answer back to the execution (each execution has its own sink).
pub trait ReplySink: Clone + Send + 'static {
  fn reply(&self, call_id: u64, result: CallResult);
}

struct SinkReply<S: ReplySink> {
  sink: S,
  call_id: u64,
}

impl<S: ReplySink> Reply for SinkReply<S> {
  fn send(self: Box<Self>, result: CallResult) {
    self.sink.reply(self.call_id, result);
  }
}

struct PendingCall {
  resolve: Persistent<Function<'static>>,
  target: CallTarget,
  name: String,
  args_json: String,
  started: Instant,
  call_id: String,
}

/// What the native functions installed in the context share with the execution.
pub(crate) struct State {
  id: String,
  shared: Arc<Shared>,
  sandbox: Arc<SandboxConfig>,
  exec: Arc<ExecuteConfig>,
  send_call: Box<dyn Fn(u64) -> Box<dyn Reply>>,
  tool_calls: u64,
  next_call: u64,
  pending: HashMap<u64, PendingCall>,
  logs: Vec<String>,
  log_bytes: u64,
  dropped_log_bytes: u64,
  iterations: Rc<Cell<u64>>,
  iteration_exceeded: Rc<Cell<bool>>,
  /// Set when the script tried to send more than one message may carry (`message_limit`): what it
  /// was, for the `RESULT_TOO_LARGE` that ends the execution.
  too_large: Rc<OnceCell<String>>,
  serializing: bool,
  get_tool_cache: HashMap<String, Option<String>>,
  deadline: Instant,
  /// Set before reading out an error: the heap was at its limit (QuickJS may throw `null` then).
  out_of_memory_hint: bool,
}

pub struct Execution {
  // Field order is drop order: JS handles first; the spare holds the context and the runtime.
  state: Rc<RefCell<State>>,
  promise: Option<Persistent<Promise<'static>>>,
  spare: Spare<State>,
  mapping: SourceMapping,
  started: Instant,
  memory_limit: usize,
}

impl Drop for Execution {
  fn drop(&mut self) {
    // Before the context is freed: no request to stop may reach it after this.
    self.state.borrow().shared.disarm_poll();
    // Persistent handles first: none may outlive the runtime.
    self.state.borrow_mut().pending.clear();
    self.promise = None;
    // Break the cycle native functions -> slot -> state.
    self.spare.slot.borrow_mut().take();
  }
}

/// Everything needed to start one execution.
pub struct Job {
  pub script: String,
  pub sandbox: Arc<SandboxConfig>,
  pub exec: Arc<ExecuteConfig>,
  pub shared: Arc<Shared>,
}

impl Execution {
  /// Validates, prepares and starts a script; it either finishes at once or parks. `deadline` is
  /// the one `Shared::mark_started` set.
  pub fn start<S: ReplySink>(
    engine: &mut Engine,
    job: Job,
    deadline: Instant,
    sink: S,
  ) -> Result<(Execution, Step), Box<Completed>> {
    let started = Instant::now();
    let Job { script, sandbox, exec, shared } = job;
    let stats = |started: Instant| Stats {
      execution_id: shared.id.clone(),
      duration_ms: started.elapsed().as_secs_f64() * 1000.0,
      ..Stats::default()
    };
    let mut policy = sandbox.policy.clone();
    policy.language = exec.language;
    let prepared =
      validator::prepare(&script, &policy, PrepareOptions { count_iterations: sandbox.max_iterations.is_some() })
        .map_err(|rejection| {
          Box::new(Completed { outcome: Outcome::Rejected(rejection), logs: Vec::new(), stats: stats(started) })
        })?;
    let mapping = prepared.source.mapping.clone();
    let bytecode = engine.compile_script(&prepared.source.code).map_err(|e: CompileError| {
      let location = match (e.line, e.column) {
        (Some(l), Some(c)) => mapping.to_user(l, c),
        (Some(l), None) => mapping.to_user(l, 1),
        _ => Location { line: 1, column: 1 },
      };
      Completed {
        outcome: Outcome::Rejected(Rejection::Syntax { message: e.message, location }),
        logs: Vec::new(),
        stats: stats(started),
      }
    })?;

    let spare = engine.take_spare(&sandbox).map_err(|message| {
      Box::new(Completed {
        outcome: Outcome::sandbox(ErrorCode::WorkerStartupFailed, message.to_string()),
        logs: Vec::new(),
        stats: stats(started),
      })
    })?;
    let memory_limit = usize::try_from(sandbox.memory_limit_bytes).unwrap_or(usize::MAX);
    let iteration_exceeded = Rc::new(Cell::new(false));
    let too_large: Rc<OnceCell<String>> = Rc::new(OnceCell::new());
    {
      let shared = shared.clone();
      let exceeded = iteration_exceeded.clone();
      let too_large = too_large.clone();
      spare.runtime.set_interrupt_handler(Some(Box::new(move || {
        exceeded.get()
          || too_large.get().is_some()
          || shared.stop() != Stop::Running
          || shared.past_deadline(deadline, Instant::now())
      })));
    }

    let state = Rc::new(RefCell::new(State {
      id: shared.id.clone(),
      shared: shared.clone(),
      sandbox: sandbox.clone(),
      exec: exec.clone(),
      send_call: Box::new(move |call_id| Box::new(SinkReply { sink: sink.clone(), call_id })),
      tool_calls: 0,
      next_call: 0,
      pending: HashMap::new(),
      logs: Vec::new(),
      log_bytes: 0,
      dropped_log_bytes: 0,
      iterations: Rc::new(Cell::new(0)),
      iteration_exceeded,
      too_large,
      serializing: false,
      get_tool_cache: HashMap::new(),
      deadline,
      out_of_memory_hint: false,
    }));

    *spare.slot.borrow_mut() = Some(state.clone());
    // Where a request to stop reaches this runtime (`Shared::force_poll`): its context does not
    // change when the runtime moves between threads.
    spare.context.with(|ctx| {
      // SAFETY: the context lives as long as this execution's spare; `Drop for Execution` disarms
      // it before the spare (context, then runtime) is dropped.
      unsafe { shared.arm_poll(ctx.as_raw()) }
    });
    let mut execution = Execution { state, promise: None, spare, mapping, started, memory_limit };
    // The prepared context was made on this thread, but deeper or shallower in its stack.
    execution.enter_thread();

    let configure_fn = execution.spare.configure.clone();
    let setup = execution.spare.context.with(|ctx| -> rquickjs::Result<Persistent<Promise<'static>>> {
      let configure_fn = configure_fn.ok_or(rquickjs::Error::Unknown)?.restore(&ctx)?;
      configure(&ctx, &configure_fn, &execution.state)?;
      let tick = make_tick(&ctx, &execution.state)?;
      let outer: Function = compile::run(&ctx, &bytecode)?.get()?;
      let inner: Function = outer.call((tick,))?;
      let promise: Promise = inner.call(())?;
      Ok(Persistent::save(&ctx, promise))
    });
    match setup {
      Ok(promise) => {
        execution.promise = Some(promise);
      }
      Err(_) => {
        let completed = execution.finish_with_exception();
        return Err(Box::new(completed));
      }
    }
    let step = execution.pump();
    Ok((execution, step))
  }

  /// Points QuickJS's stack-overflow check at the current thread's stack. The pool runs each slice
  /// of an execution on whichever thread is free; QuickJS measures `maxStackBytes` down from the
  /// stack top it recorded, which must be this thread's (rquickjs does this only with its
  /// `parallel` feature). Called before any JS of the slice runs, from the slice's outermost frame.
  pub fn enter_thread(&self) {
    self.spare.context.with(|ctx| {
      // SAFETY: `ctx` is a live context of this execution's runtime, used on this thread only
      // (see the pool's `Movable`); `JS_GetRuntime` reads its runtime pointer, and
      // `JS_UpdateStackTop` only stores the current stack pointer and the limit derived from it.
      unsafe { qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(ctx.as_raw().as_ptr())) }
    });
  }

  /// When this execution's time is up, holds counted (`None` while a person decides about a call).
  pub fn deadline(&self) -> Option<Instant> {
    let s = self.state.borrow();
    s.shared.deadline_after(s.deadline)
  }

  /// Delivers a host call's answer and runs the script as far as it can go.
  pub fn resume(&mut self, call_id: u64, result: CallResult) -> Step {
    let pending = self.state.borrow_mut().pending.remove(&call_id);
    if let Some(call) = pending {
      let delivered = self.spare.context.with(|ctx| -> rquickjs::Result<()> {
        let resolve = call.resolve.clone().restore(&ctx)?;
        let record = match &result {
          CallResult::Ok(json) => ok_record(&ctx, json.as_deref())?,
          CallResult::Err(failure) => failure_record(
            &ctx,
            failure.code.as_deref().unwrap_or(ErrorCode::ToolExecutionError.as_str()),
            &failure.message,
            failure.details_json.as_deref(),
          )?,
        };
        resolve.call::<_, ()>((record,))
      });
      let state = self.state.borrow();
      if call.target == CallTarget::Tool && state.exec.events {
        let (ok, error) = match &result {
          CallResult::Ok(_) => (true, None),
          CallResult::Err(f) => (
            false,
            Some((f.code.clone().unwrap_or_else(|| ErrorCode::ToolExecutionError.as_str().into()), f.message.clone())),
          ),
        };
        state.shared.host.event(Event::ToolCallEnd {
          execution_id: state.id.clone(),
          call_id: call.call_id,
          tool_name: call.name,
          input_json: call.args_json,
          ok,
          duration_ms: call.started.elapsed().as_secs_f64() * 1000.0,
          error,
        });
      }
      drop(state);
      if delivered.is_err() {
        // Resolving failed (out of memory, interrupted): the pump reports why.
        self.spare.context.with(|ctx| drop(ctx.catch()));
      }
    }
    self.pump()
  }

  /// Ends the execution because it was stopped from outside (timeout, abort, dispose).
  pub fn stopped(&mut self) -> Completed {
    let outcome =
      self.stop_outcome().unwrap_or_else(|| Outcome::sandbox(ErrorCode::ExecutionAborted, "Execution was aborted"));
    self.completed(outcome)
  }

  fn stop_outcome(&self) -> Option<Outcome> {
    let state = self.state.borrow();
    match state.shared.stop() {
      Stop::Running if state.shared.past_deadline(state.deadline, Instant::now()) => {
        Some(Outcome::timed_out(state.shared.timeout))
      }
      stop => stop.outcome(state.shared.timeout),
    }
  }

  /// Runs jobs until the script settles, parks on host calls, or must stop.
  pub fn pump(&mut self) -> Step {
    loop {
      if let Some(outcome) = self.stop_outcome() {
        return Step::Done(self.completed(outcome));
      }
      let state = match &self.promise {
        Some(promise) => self.spare.context.with(|ctx| promise.clone().restore(&ctx).map(|p| p.state())),
        None => return Step::Done(self.finish_with_exception()),
      };
      match state {
        Ok(PromiseState::Resolved) => return Step::Done(self.finish_resolved()),
        Ok(PromiseState::Rejected) => return Step::Done(self.finish_rejected()),
        Ok(PromiseState::Pending) => {
          if self.spare.runtime.is_job_pending() {
            // A job that throws has already rejected whatever it was settling.
            let _ = self.spare.runtime.execute_pending_job();
            continue;
          }
          if !self.state.borrow().pending.is_empty() {
            return Step::Parked;
          }
          if let Some(outcome) = self.limit_outcome() {
            return Step::Done(self.completed(outcome));
          }
          return Step::Done(self.completed(Outcome::RuntimeError {
            source: ErrorSource::Script,
            code: ErrorCode::ExecutionError,
            message: "The script is awaiting a promise that can never settle (no host call is pending)".into(),
            name: None,
            stack: None,
            location: None,
          }));
        }
        Err(_) => return Step::Done(self.finish_with_exception()),
      }
    }
  }

  fn completed(&mut self, outcome: Outcome) -> Completed {
    let mut state = self.state.borrow_mut();
    let mut logs = std::mem::take(&mut state.logs);
    if state.dropped_log_bytes > 0 {
      logs.push(format!("[truncated] {} bytes of console output dropped (maxConsoleBytes)", state.dropped_log_bytes));
    }
    let counting = state.sandbox.max_iterations.is_some();
    let limit = state.sandbox.message_limit();
    let mut completed = Completed {
      outcome,
      logs,
      stats: Stats {
        execution_id: state.id.clone(),
        duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
        tool_calls: state.tool_calls,
        iterations: counting.then(|| state.iterations.get()),
        memory_bytes: Some(self.spare.budget.used() as u64),
      },
    };
    // A result is bounded by maxResultBytes and logs by maxConsoleBytes; an error the script threw
    // is not, and JSON's escapes can make it six times its length. Over the limit, it would break
    // the pipe the worker's other executions share: it becomes this execution's RESULT_TOO_LARGE.
    if matches!(completed.outcome, Outcome::RuntimeError { .. } | Outcome::ToolError { .. }) {
      let size = completed.to_json().len();
      if size > limit {
        completed.outcome = Outcome::RuntimeError {
          source: ErrorSource::Script,
          code: ErrorCode::ResultTooLarge,
          message: format!(
            "The error the script threw is {size} bytes as JSON, more than the {limit} bytes one message may carry"
          ),
          name: None,
          stack: None,
          location: None,
        };
      }
    }
    completed
  }

  /// A limit of the sandbox (not the script) ended the run, whatever the script did after.
  fn limit_outcome(&self) -> Option<Outcome> {
    if self.spare.budget.exhausted() || self.state.borrow().out_of_memory_hint {
      return Some(Outcome::sandbox(
        ErrorCode::MemoryLimitExceeded,
        format!("Script exceeded the memory limit of {} bytes (memoryLimitBytes)", self.memory_limit),
      ));
    }
    let state = self.state.borrow();
    if let Some(what) = state.too_large.get() {
      return Some(Outcome::RuntimeError {
        source: ErrorSource::Script,
        code: ErrorCode::ResultTooLarge,
        message: what.clone(),
        name: None,
        stack: None,
        location: None,
      });
    }
    if state.iteration_exceeded.get() {
      let limit = state.sandbox.max_iterations.unwrap_or_default();
      return Some(Outcome::sandbox(
        ErrorCode::IterationLimitExceeded,
        format!("Script exceeded the iteration limit of {limit} loop iterations (maxIterations)"),
      ));
    }
    None
  }

  fn finish_resolved(&mut self) -> Completed {
    if let Some(outcome) = self.limit_outcome() {
      return self.completed(outcome);
    }
    self.note_memory();
    self.spare.budget.set_limit(self.memory_limit.saturating_add(REPORTING_HEADROOM));
    self.state.borrow_mut().serializing = true;
    let limit = self.state.borrow().sandbox.max_result_bytes;
    let promise = self.promise.clone();
    let outcome = self.spare.context.with(|ctx| {
      let Some(promise) = promise.and_then(|p| p.restore(&ctx).ok()) else {
        return Outcome::sandbox(ErrorCode::ExecutionError, "The script's promise was lost");
      };
      let value: Value = match promise.result::<Value>() {
        Some(Ok(v)) => v,
        _ => return Outcome::sandbox(ErrorCode::ExecutionError, "The script's result could not be read"),
      };
      match serialize::to_json(&ctx, value, limit) {
        Ok(result_json) => Outcome::Ok { result_json },
        Err(SerializeError::Unrepresentable { what, path }) => Outcome::RuntimeError {
          source: ErrorSource::Script,
          code: ErrorCode::SerializationError,
          message: format!("The result contains {what} at {path}; results must be JSON-representable"),
          name: None,
          stack: None,
          location: None,
        },
        Err(SerializeError::TooLarge { limit }) => Outcome::RuntimeError {
          source: ErrorSource::Script,
          code: ErrorCode::ResultTooLarge,
          message: format!("The result is larger than {limit} bytes (maxResultBytes)"),
          name: None,
          stack: None,
          location: None,
        },
        Err(SerializeError::Threw) => {
          let thrown = ctx.catch();
          match self.classify_special(&ctx, &thrown) {
            Some(outcome) => outcome,
            None => Outcome::RuntimeError {
              source: ErrorSource::Script,
              code: ErrorCode::SerializationError,
              message: format!("Serializing the result threw: {}", describe_thrown(&thrown)),
              name: None,
              stack: None,
              location: None,
            },
          }
        }
      }
    });
    let outcome = self.stop_outcome().or_else(|| self.limit_outcome()).unwrap_or(outcome);
    self.completed(outcome)
  }

  /// Notes whether an allocation was refused (the budget is read outside `with`).
  fn note_memory(&mut self) {
    self.state.borrow_mut().out_of_memory_hint = self.spare.budget.exhausted();
  }

  fn finish_rejected(&mut self) -> Completed {
    self.note_memory();
    // Reading the error may run its getters or toJSON: no host call may start from here on.
    self.state.borrow_mut().serializing = true;
    self.spare.budget.set_limit(self.memory_limit.saturating_add(REPORTING_HEADROOM));
    let promise = self.promise.clone();
    let outcome = self.spare.context.with(|ctx| {
      let reason = promise.and_then(|p| p.restore(&ctx).ok()).map(|p| {
        // SAFETY: `p` is a live promise of this context; JS_PromiseResult returns a new reference.
        let raw = unsafe { qjs::JS_PromiseResult(ctx.as_raw().as_ptr(), p.as_raw()) };
        // SAFETY: an owned value of this context.
        unsafe { Value::from_raw(ctx.clone(), raw) }
      });
      match reason {
        Some(reason) => self.classify(&ctx, reason),
        None => Outcome::sandbox(ErrorCode::ExecutionError, "The script's promise was lost"),
      }
    });
    self.completed(outcome)
  }

  fn finish_with_exception(&mut self) -> Completed {
    if let Some(outcome) = self.stop_outcome() {
      return self.completed(outcome);
    }
    self.note_memory();
    self.state.borrow_mut().serializing = true;
    self.spare.budget.set_limit(self.memory_limit.saturating_add(REPORTING_HEADROOM));
    let outcome = self.spare.context.with(|ctx| {
      let thrown = ctx.catch();
      self.classify(&ctx, thrown)
    });
    self.completed(outcome)
  }

  /// Errors that mean a limit, whatever the script made of them.
  fn classify_special<'js>(&self, ctx: &Ctx<'js>, thrown: &Value<'js>) -> Option<Outcome> {
    if let Some(outcome) = self.stop_outcome().or_else(|| self.limit_outcome()) {
      return Some(outcome);
    }
    let (name, message) = error_name_and_message(ctx, thrown);
    if self.state.borrow().out_of_memory_hint {
      return Some(Outcome::sandbox(
        ErrorCode::MemoryLimitExceeded,
        format!("Script exceeded the memory limit of {} bytes (memoryLimitBytes)", self.memory_limit),
      ));
    }
    if message.contains("stack overflow") || message.contains("Maximum call stack size exceeded") {
      return Some(Outcome::sandbox(ErrorCode::StackOverflow, "Script exceeded the stack limit (maxStackBytes)"));
    }
    if name.as_deref() == Some("InternalError") && message == "interrupted" {
      return Some(Outcome::timed_out(self.state.borrow().shared.timeout));
    }
    None
  }

  fn classify<'js>(&self, ctx: &Ctx<'js>, thrown: Value<'js>) -> Outcome {
    if let Some(outcome) = self.classify_special(ctx, &thrown) {
      return outcome;
    }
    let is_tool_error = self
      .spare
      .is_tool_error
      .clone()
      .and_then(|f| f.restore(ctx).ok())
      .and_then(|f| f.call::<_, bool>((thrown.clone(),)).ok())
      .unwrap_or(false);
    if is_tool_error {
      if let Some(object) = thrown.as_object() {
        let text = |key: &str| object.get::<_, Value>(key).ok().and_then(|v| v.as_string().map(js_string_lossy));
        let json = |key: &str| {
          object
            .get::<_, Value>(key)
            .ok()
            .filter(|v| !v.is_undefined())
            .and_then(|v| serialize::to_json(ctx, v, 1 << 20).ok().flatten())
        };
        return Outcome::ToolError {
          code: text("code").unwrap_or_else(|| ErrorCode::ToolExecutionError.as_str().into()),
          tool_name: text("toolName").unwrap_or_default(),
          tool_input_json: json("toolInput").unwrap_or_else(|| "null".into()),
          message: text("message").unwrap_or_default(),
          details_json: json("details"),
        };
      }
    }
    let (name, message) = error_name_and_message(ctx, &thrown);
    let stack =
      thrown.as_object().and_then(|o| o.get::<_, Value>("stack").ok()).and_then(|v| v.as_string().map(js_string_lossy));
    let (stack, location) = match stack {
      Some(stack) => {
        let (s, l) = errors::user_stack(name.as_deref().unwrap_or("Error"), &message, &stack, &self.mapping);
        (Some(s), l)
      }
      None => (None, None),
    };
    Outcome::RuntimeError {
      source: ErrorSource::Script,
      code: ErrorCode::ExecutionError,
      message,
      name,
      stack,
      location,
    }
  }
}

fn error_name_and_message(ctx: &Ctx<'_>, thrown: &Value<'_>) -> (Option<String>, String) {
  match thrown.as_object() {
    Some(object) if thrown.is_error() || object.contains_key("message").unwrap_or(false) => {
      let name = match read_text(ctx, object, "name") {
        Field::Text(name) => Some(name),
        _ => None,
      };
      let message = match read_text(ctx, object, "message") {
        Field::Text(message) => message,
        Field::Absent => String::new(),
        // A getter that spins (or throws) while the error is read: say so, or the model learns
        // nothing from an empty message.
        Field::Stuck => "The script threw an error whose 'message' could not be read: its getter was still running \
                         when the execution's time ran out"
          .into(),
        Field::Threw => "The script threw an error whose 'message' could not be read: its getter threw".into(),
      };
      (name, message)
    }
    _ => (None, describe_thrown(thrown)),
  }
}

/// A property of a thrown object, read the way a getter may make it go.
enum Field {
  Text(String),
  /// Missing, or not a string.
  Absent,
  /// The read was interrupted: a getter ran until the deadline.
  Stuck,
  /// A getter threw.
  Threw,
}

fn read_text(ctx: &Ctx<'_>, object: &Object<'_>, key: &str) -> Field {
  match object.get::<_, Value>(key) {
    Ok(v) => v.as_string().map_or(Field::Absent, |s| Field::Text(js_string_lossy(s))),
    Err(_) => {
      // The exception is pending on the context: take it, so it cannot leak into what follows.
      let caught = ctx.catch();
      let interrupted = caught.as_object().is_some_and(|o| {
        caught.is_error()
          && o.get::<_, Value>("message").ok().and_then(|m| m.as_string().map(js_string_lossy)).as_deref()
            == Some("interrupted")
      });
      if interrupted {
        Field::Stuck
      } else {
        Field::Threw
      }
    }
  }
}

/// A thrown non-error, as text (`throw 'x'`, `throw 42`, `throw { a: 1 }`).
fn describe_thrown(thrown: &Value<'_>) -> String {
  if let Some(s) = thrown.as_string() {
    return js_string_lossy(s);
  }
  if thrown.is_undefined() {
    return "undefined".into();
  }
  if thrown.is_null() {
    return "null".into();
  }
  if let Some(n) = thrown.as_number() {
    return n.to_string();
  }
  if let Some(b) = thrown.as_bool() {
    return b.to_string();
  }
  let ctx = thrown.ctx();
  match ctx.json_stringify(thrown.clone()) {
    Ok(Some(s)) => js_string_lossy(&s),
    _ => {
      let _ = ctx.catch();
      "[object]".into()
    }
  }
}

fn ok_record<'js>(ctx: &Ctx<'js>, json: Option<&str>) -> rquickjs::Result<Object<'js>> {
  let record = Object::new(ctx.clone())?;
  record.set("ok", true)?;
  if let Some(json) = json {
    record.set("data", ctx.json_parse(json)?)?;
  }
  Ok(record)
}

fn failure_record<'js>(
  ctx: &Ctx<'js>,
  code: &str,
  message: &str,
  details_json: Option<&str>,
) -> rquickjs::Result<Object<'js>> {
  let record = Object::new(ctx.clone())?;
  record.set("ok", false)?;
  record.set("code", code)?;
  record.set("message", message)?;
  if let Some(details) = details_json {
    if let Ok(value) = ctx.json_parse(details) {
      record.set("details", value)?;
    } else {
      let _ = ctx.catch();
    }
  }
  Ok(record)
}

/// Ends the execution with `RESULT_TOO_LARGE`: the flag makes the interrupt handler stop the
/// script at its next check, whatever it catches; the thrown error only leaves the native call.
fn too_large(ctx: &Ctx<'_>, state: &Rc<RefCell<State>>, what: String) -> rquickjs::Error {
  // The first message too large is the one reported.
  let _ = state.borrow().too_large.set(what);
  request_poll(ctx);
  Exception::throw_internal(ctx, "Message too large")
}

/// Makes this context's next poll call the interrupt handler (which now says stop), instead of
/// after up to 10 000 more branches: the script may catch the error thrown here and go on.
fn request_poll(ctx: &Ctx<'_>) {
  // SAFETY: `ctx` is the live context this native function was called in, on its own thread.
  unsafe { crate::sandbox::shared::request_interrupt(ctx.as_raw()) }
}

/// `what` is `size` bytes: more than one message may carry? Then the text that says so.
fn over_limit(state: &Rc<RefCell<State>>, what: impl FnOnce() -> String, size: usize) -> Option<String> {
  let limit = state.borrow().sandbox.message_limit();
  (size > limit).then(|| format!("{} is {size} bytes, more than the {limit} bytes one message may carry", what()))
}

/// A name as it is shown in a message: long names are cut (their length is said instead).
fn shown(name: &str) -> String {
  const MAX: usize = 100;
  if name.len() <= MAX {
    return name.to_string();
  }
  format!("{}… ({} bytes)", crate::common::char_prefix(name, MAX), name.len())
}

/// A resolved promise carrying a failure record (checks that fail before the host is asked).
fn refuse<'js>(ctx: &Ctx<'js>, code: ErrorCode, message: String) -> rquickjs::Result<Promise<'js>> {
  let (promise, resolve, _reject) = ctx.promise()?;
  resolve.call::<_, ()>((failure_record(ctx, code.as_str(), &message, None)?,))?;
  Ok(promise)
}

/// `hostCall(kind, name, argsJson)`: the one way a script reaches the host.
/// Checks, in the order of `api.md` §2.3, then sends the call and returns its promise.
fn host_call<'js>(
  ctx: Ctx<'js>,
  state: &Rc<RefCell<State>>,
  kind: i32,
  name: String,
  args_json: String,
) -> rquickjs::Result<Promise<'js>> {
  let target = if kind == 0 { CallTarget::Tool } else { CallTarget::Function };
  let what = || match target {
    CallTarget::Tool => format!("callTool('{}'): the tool name and input", shown(&name)),
    CallTarget::Function => format!("the host function '{}': its name and arguments", shown(&name)),
  };
  if let Some(message) = over_limit(state, what, name.len() + args_json.len()) {
    return Err(too_large(&ctx, state, message));
  }
  let (sandbox, exec) = {
    let s = state.borrow();
    if s.serializing {
      return Err(Exception::throw_message(&ctx, "Host calls are not allowed while the result is being serialized"));
    }
    (s.sandbox.clone(), s.exec.clone())
  };
  if target == CallTarget::Tool {
    if sandbox.policy.self_reference.matches(&name) {
      return refuse(
        &ctx,
        ErrorCode::SelfReferenceBlocked,
        format!("callTool('{}') is blocked: scripts cannot call CodeCall's own meta-tools", shown(&name)),
      );
    }
    if let Some(allowed) = &exec.allowed_tools {
      if !allowed.iter().any(|t| t == &name) {
        return refuse(
          &ctx,
          ErrorCode::AccessDenied,
          format!("Tool '{}' is not in allowedTools for this execution", shown(&name)),
        );
      }
    }
    if let Some(reason) = exec.denial(&name) {
      return refuse(&ctx, ErrorCode::AccessDenied, format!("Tool '{}' is not allowed: {}", shown(&name), reason));
    }
    if exec.host_get_tool && lookup_tool(state, &name).is_none() {
      return refuse(&ctx, ErrorCode::ToolNotFound, format!("Tool '{}' was not found", shown(&name)));
    }
  }
  let mut s = state.borrow_mut();
  if s.tool_calls >= exec.max_tool_calls {
    drop(s);
    return refuse(
      &ctx,
      ErrorCode::MaxToolCallsExceeded,
      format!("More than {} tool calls in one execution (maxToolCalls)", exec.max_tool_calls),
    );
  }
  if s.pending.len() as u64 >= sandbox.max_concurrent_calls {
    drop(s);
    return refuse(
      &ctx,
      ErrorCode::TooManyPendingCalls,
      format!("More than {} host calls in flight at once (maxConcurrentCalls)", sandbox.max_concurrent_calls),
    );
  }
  let (promise, resolve, _reject) = ctx.promise()?;
  s.tool_calls += 1;
  s.shared.note_tool_call();
  s.next_call += 1;
  let call_number = s.next_call;
  let call_id = format!("{}#{}", s.id, call_number);
  s.pending.insert(
    call_number,
    PendingCall {
      resolve: Persistent::save(&ctx, resolve),
      target: target.clone(),
      name: name.clone(),
      args_json: args_json.clone(),
      started: Instant::now(),
      call_id: call_id.clone(),
    },
  );
  let host = s.shared.host.clone();
  let execution_id = s.id.clone();
  let reply = (s.send_call)(call_number);
  drop(s);
  if target == CallTarget::Tool && exec.events {
    host.event(Event::ToolCallStart {
      execution_id: execution_id.clone(),
      call_id: call_id.clone(),
      tool_name: name.clone(),
      input_json: args_json.clone(),
    });
  }
  host.call(HostCall { execution_id, call_id, target, name, args_json, parent_execution_id: None }, reply);
  Ok(promise)
}

/// The host's `getTool(name)`, asked once per name and execution, within the deadline.
fn lookup_tool(state: &Rc<RefCell<State>>, name: &str) -> Option<String> {
  if let Some(cached) = state.borrow().get_tool_cache.get(name) {
    return cached.clone();
  }
  let (host, remaining) = {
    let s = state.borrow();
    let deadline = s.shared.deadline_after(s.deadline).unwrap_or(s.deadline);
    (s.shared.host.clone(), deadline.saturating_duration_since(Instant::now()))
  };
  let answer = host.get_tool(name, remaining);
  state.borrow_mut().get_tool_cache.insert(name.to_string(), answer.clone());
  answer
}

const LOG_PREFIXES: [&str; 5] = ["", "", "[warn] ", "[error] ", "[debug] "];

/// The slot through which a prepared context's native functions reach their execution's state.
pub(crate) type StateSlot = Slot<State>;

fn with_state<'js, R>(
  ctx: &Ctx<'js>,
  slot: &StateSlot,
  f: impl FnOnce(&Rc<RefCell<State>>) -> rquickjs::Result<R>,
) -> rquickjs::Result<R> {
  let state = slot.borrow().clone();
  match state {
    Some(state) => f(&state),
    None => Err(Exception::throw_internal(ctx, "The sandbox is not ready")),
  }
}

/// The native primitives the prelude builds the globals on.
pub(crate) fn native_primitives<'js>(ctx: &Ctx<'js>, slot: &StateSlot) -> rquickjs::Result<Object<'js>> {
  let native = Object::new(ctx.clone())?;
  {
    let slot = slot.clone();
    native.set(
      "hostCall",
      Function::new(ctx.clone(), move |ctx: Ctx<'js>, kind: i32, name: Lossy, args: Lossy| {
        with_state(&ctx, &slot, |state| host_call(ctx.clone(), state, kind, name.0, args.0))
      })?,
    )?;
  }
  {
    let slot = slot.clone();
    native.set(
      "getTool",
      Function::new(ctx.clone(), move |ctx: Ctx<'js>, name: Lossy| -> rquickjs::Result<Option<String>> {
        let name = name.0;
        with_state(&ctx, &slot, |state| {
          if let Some(message) = over_limit(state, || format!("getTool('{}'): the tool name", shown(&name)), name.len())
          {
            return Err(too_large(&ctx, state, message));
          }
          let allowed = {
            let s = state.borrow();
            if s.serializing || !s.exec.host_get_tool {
              return Ok(None);
            }
            s.exec.allowed_tools.as_ref().is_none_or(|a| a.iter().any(|t| t == &name)) && s.exec.denial(&name).is_none()
          };
          Ok(if allowed { lookup_tool(state, &name) } else { None })
        })
      })?,
    )?;
  }
  {
    let slot = slot.clone();
    native.set(
      "emit",
      Function::new(ctx.clone(), move |ctx: Ctx<'js>, kind: i32, a: Lossy, b: Lossy, c: Opt<Lossy>| {
        let (a, b, c) = (a.0, b.0, c.0.map(|c| c.0));
        with_state(&ctx, &slot, |state| {
          // Checked whether or not anyone listens, so the outcome does not depend on `onEvent`.
          let size = a.len() + b.len() + c.as_ref().map_or(0, String::len);
          let what = || {
            if kind == 0 {
              format!("mcpLog('{}', …): the log message and metadata", shown(&a))
            } else {
              format!("mcpNotify('{}', …): the event and its payload", shown(&a))
            }
          };
          if let Some(message) = over_limit(state, what, size) {
            return Err(too_large(&ctx, state, message));
          }
          let s = state.borrow();
          if !s.exec.events {
            return Ok(());
          }
          let event = if kind == 0 {
            Event::Log { execution_id: s.id.clone(), level: a, message: b, metadata_json: c }
          } else {
            Event::Notify { execution_id: s.id.clone(), event: a, payload_json: b }
          };
          s.shared.host.event(event);
          Ok(())
        })
      })?,
    )?;
  }
  {
    let slot = slot.clone();
    native.set(
      "log",
      Function::new(ctx.clone(), move |ctx: Ctx<'js>, level: i32, text: Lossy| {
        let text = text.0;
        with_state(&ctx, &slot, |state| {
          let mut s = state.borrow_mut();
          let line = format!("{}{}", LOG_PREFIXES.get(level as usize).copied().unwrap_or(""), text);
          let len = line.len() as u64;
          if s.dropped_log_bytes == 0 && s.log_bytes + len <= s.sandbox.max_console_bytes {
            s.log_bytes += len;
            s.logs.push(line);
          } else {
            s.dropped_log_bytes += len;
          }
          Ok(())
        })
      })?,
    )?;
  }
  Ok(native)
}

/// The per-execution part of the prelude: `codecallContext`, `input`, host functions, and a
/// standing clock and seeded `Math.random` when the host gives them.
fn configure<'js>(ctx: &Ctx<'js>, configure: &Function<'js>, state: &Rc<RefCell<State>>) -> rquickjs::Result<()> {
  let config = Object::new(ctx.clone())?;
  {
    let s = state.borrow();
    config.set("contextJson", s.exec.context_json.as_str())?;
    if let Some(input) = &s.exec.input_json {
      config.set("inputJson", input.as_str())?;
    }
    config.set("functions", s.exec.functions.clone())?;
    // Both below 2^53: exact as JavaScript numbers (binding.rs checks them).
    if let Some(clock) = s.exec.clock_ms {
      config.set("clock", clock as f64)?;
    }
    if let Some(seed) = s.exec.random_seed {
      config.set("seed", seed as f64)?;
    }
  }
  configure.call((config,))
}

/// The loop counter passed to the script's wrapper as `__cc_tick`.
fn make_tick<'js>(ctx: &Ctx<'js>, state: &Rc<RefCell<State>>) -> rquickjs::Result<Function<'js>> {
  let (iterations, exceeded, limit) = {
    let s = state.borrow();
    (s.iterations.clone(), s.iteration_exceeded.clone(), s.sandbox.max_iterations.unwrap_or(u64::MAX))
  };
  Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<()> {
    let n = iterations.get() + 1;
    iterations.set(n);
    if n > limit {
      exceeded.set(true);
      request_poll(&ctx);
      return Err(Exception::throw_internal(&ctx, &format!("Iteration limit of {limit} exceeded (maxIterations)")));
    }
    Ok(())
  })
}
