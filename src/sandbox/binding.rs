//! The sandbox's JavaScript surface: `class Sandbox` (`api.md` §2), and `NapiHost`, the bridge's
//! host side on Node's main thread.
//!
//! Every message for the host — calls, events, results — goes into one queue per sandbox, in the
//! order it was sent, and one threadsafe function over a small JS router (`host.js`) drains it:
//! one wake-up of Node's thread takes everything queued since the last, so many executions' calls
//! cost one hop, and the host sees each execution's messages in order, its result last. The
//! threadsafe function exists only while the sandbox has live executions (made when the first
//! starts, released when the last result is delivered), so an idle sandbox keeps nothing alive in
//! Node's event loop and leaves no handle behind.

use crate::common::InvalidArgument;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, FunctionCallContext, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use super::bridge::{
  Approval, ApprovalAnswer, ApprovalAsk, CallResult, CallTarget, Event, HostCall, HostFailure, Reply,
};
use super::config::{ExecuteConfig, Isolation, SandboxConfig};
use super::json::JsonWriter;
use super::outcome::{Completed, Outcome};
use super::runner::{QueueProbe, Runner};
use super::shared::{lock, Host, Shared};
use super::warnings::Warnings;
use crate::common::{args, ErrorCode, Glob, JsRef, Preset};
use crate::validator::{Language, PolicyOverrides};

const HOST_JS: &str = include_str!("host.js");

/// host.js's factory: `(reply, limit) => { register, route, settle }`.
type HostJsFactory<'env> = Function<'env, FnArgs<(Function<'env, (), ()>, f64)>, Object<'env>>;

/// Puts an adapter (the engine's) around the host of one execution.
pub(crate) type WrapHost = dyn Fn(Arc<dyn Host>) -> Arc<dyn Host>;

impl args::KnownKeys for SandboxOptions {
  const KEYS: &'static [&'static str] = &[
    "preset",
    "timeoutMs",
    "memoryLimitBytes",
    "maxStackBytes",
    "allowLoops",
    "maxIterations",
    "maxToolCalls",
    "maxConcurrentCalls",
    "allowConsole",
    "maxConsoleBytes",
    "maxResultBytes",
    "maxScriptBytes",
    "disabledBuiltins",
    "disabledGlobals",
    "isolation",
    "poolSize",
    "maxQueue",
    "queueTimeoutMs",
  ];
}

/// The keys of `ExecuteOptions` (read by hand in `read_execute_options`).
pub(crate) const EXECUTE_OPTION_KEYS: &[&str] =
  &["language", "context", "input", "allowedTools", "timeoutMs", "maxToolCalls", "signal"];

/// Options of `new Sandbox(options)`. Every field defaults to the preset's value (`api.md` §2.1).
#[napi(object)]
#[derive(Default)]
pub struct SandboxOptions {
  /// The policy the other options start from.
  /// @default 'secure'
  #[napi(ts_type = "Preset")]
  pub preset: Option<String>,
  /// Wall-clock limit from the start of a script to its result, including time awaiting the host.
  /// @default 3500 ('secure'; 2000 'locked_down', 5000 'balanced', 30000 'experimental')
  pub timeout_ms: Option<f64>,
  /// QuickJS heap of one execution.
  /// @default 33554432 (32 MiB, 'secure')
  pub memory_limit_bytes: Option<f64>,
  /// QuickJS stack of one execution.
  /// @default 524288 (512 KiB, 'secure')
  pub max_stack_bytes: Option<f64>,
  /// Allow loop statements.
  /// @default false ('secure', 'locked_down')
  pub allow_loops: Option<bool>,
  /// Loop iterations in one execution, all loops together.
  /// @default 10000 ('balanced'), 1000000 ('experimental')
  pub max_iterations: Option<f64>,
  /// `callTool` and host-function calls in one execution.
  /// @default 100 ('secure')
  pub max_tool_calls: Option<f64>,
  /// Host calls in flight at once (`TOO_MANY_PENDING_CALLS` beyond).
  /// @default 20
  pub max_concurrent_calls: Option<f64>,
  /// Define `console` and capture it into `logs`.
  /// @default true (false in 'locked_down')
  pub allow_console: Option<bool>,
  /// Console output kept per execution; later lines are dropped and counted.
  /// @default 65536
  pub max_console_bytes: Option<f64>,
  /// Largest result, as JSON (`RESULT_TOO_LARGE` beyond).
  /// @default 1048576
  pub max_result_bytes: Option<f64>,
  /// Largest script (refused before parsing beyond).
  /// @default 102400
  pub max_script_bytes: Option<f64>,
  /// Identifiers the validator refuses as builtins; `eval` and `Function` always are.
  /// @default ['eval', 'Function']
  pub disabled_builtins: Option<Vec<String>>,
  /// Identifiers the validator refuses as globals, also removed from the sandbox's global object.
  /// @default the preset's list
  pub disabled_globals: Option<Vec<String>>,
  /// Where scripts run: `'process'` runs them in worker processes (an engine crash or a runaway
  /// builtin never touches this process; seccomp on Linux), `'thread'` in this process (fastest,
  /// for trusted code).
  /// @default 'process' on Linux and macOS, 'thread' elsewhere
  #[napi(ts_type = "'thread' | 'process'")]
  pub isolation: Option<String>,
  /// Executions that run at once (an execution awaiting a tool does not count): threads
  /// (`'thread'`), or executor threads over the worker processes (`'process'`, two per worker,
  /// started as needed). Beyond it they wait, up to `queueTimeoutMs`.
  /// @default the number of CPU cores
  pub pool_size: Option<f64>,
  /// Executions waiting to start (`QUEUE_FULL` beyond).
  /// @default 1000
  pub max_queue: Option<f64>,
  /// Longest wait to start (`QUEUE_TIMEOUT` beyond).
  /// @default 10000
  pub queue_timeout_ms: Option<f64>,
}

impl SandboxOptions {
  pub fn to_config(&self) -> Result<SandboxConfig, InvalidArgument> {
    let preset = Preset::from_option(self.preset.as_deref())?;
    let mut c = SandboxConfig::from_preset(preset);
    let n = |v: Option<f64>, name: &str| args::non_negative(v, &format!("options.{name}"));
    if let Some(v) = n(self.timeout_ms, "timeoutMs")? {
      c.timeout_ms = v;
    }
    if let Some(v) = n(self.memory_limit_bytes, "memoryLimitBytes")? {
      c.memory_limit_bytes = v;
    }
    if let Some(v) = n(self.max_stack_bytes, "maxStackBytes")? {
      c.max_stack_bytes = v;
    }
    if let Some(v) = n(self.max_iterations, "maxIterations")? {
      c.max_iterations = Some(v);
    }
    if let Some(v) = n(self.max_tool_calls, "maxToolCalls")? {
      c.max_tool_calls = v;
    }
    if let Some(v) = n(self.max_concurrent_calls, "maxConcurrentCalls")? {
      c.max_concurrent_calls = v;
    }
    if let Some(v) = n(self.max_console_bytes, "maxConsoleBytes")? {
      c.max_console_bytes = v;
    }
    if let Some(v) = n(self.max_result_bytes, "maxResultBytes")? {
      c.max_result_bytes = v;
    }
    c.policy.apply(PolicyOverrides {
      allow_loops: self.allow_loops,
      allow_console: self.allow_console,
      disabled_builtins: self.disabled_builtins.as_deref(),
      disabled_globals: self.disabled_globals.as_deref(),
      max_script_bytes: n(self.max_script_bytes, "maxScriptBytes")?,
    });
    if let Some(isolation) = &self.isolation {
      c.isolation = match isolation.as_str() {
        "thread" => Isolation::Thread,
        "process" => Isolation::Process,
        other => return Err(format!("options.isolation must be 'thread' or 'process' (got '{other}')").into()),
      };
    }
    if let Some(v) = n(self.pool_size, "poolSize")? {
      if v == 0 || v > 256 {
        return Err(format!("options.poolSize must be between 1 and 256 (got {v})").into());
      }
      c.pool_size = v as usize;
    }
    if let Some(v) = n(self.max_queue, "maxQueue")? {
      c.max_queue = usize::try_from(v).unwrap_or(usize::MAX);
    }
    if let Some(v) = n(self.queue_timeout_ms, "queueTimeoutMs")? {
      c.queue_timeout_ms = v;
    }
    if c.memory_limit_bytes < 1 << 20 {
      return Err("options.memoryLimitBytes must be at least 1048576 (1 MiB)".into());
    }
    if c.max_stack_bytes < 64 << 10 || c.max_stack_bytes > 8 << 20 {
      return Err("options.maxStackBytes must be between 65536 and 8388608".into());
    }
    c.normalize();
    Ok(c)
  }
}

/// Where host answers wait: a token per call or `getTool` question, answered on the main thread.
enum Waiting {
  Call(Box<dyn Reply>),
  GetTool(SyncSender<Option<String>>),
  Approve(ApprovalAnswer),
}

#[derive(Default)]
struct Replies {
  next: AtomicU64,
  waiting: Mutex<HashMap<u64, Waiting>>,
}

impl Replies {
  fn park(&self, waiting: Waiting) -> u64 {
    let token = self.next.fetch_add(1, Ordering::Relaxed) + 1;
    lock(&self.waiting).insert(token, waiting);
    token
  }

  fn take(&self, token: u64) -> Option<Waiting> {
    lock(&self.waiting).remove(&token)
  }
}

/// One message for the JS router: execution `key`'s `dispatch(kind, payload, token)`.
struct HostMsg {
  key: f64,
  kind: &'static str,
  payload: String,
  token: f64,
}

/// What one wake-up hands `route(keys, kinds, payloads, tokens)` in host.js.
type Batch = FnArgs<(Vec<f64>, Vec<&'static str>, Vec<String>, Vec<f64>)>;

/// `register(key, host, signal, abort, run)` from host.js: the execution's promise. `run` is the
/// engine's telemetry run, or `undefined`.
type Register<'env> =
  Function<'env, FnArgs<(f64, Unknown<'env>, Unknown<'env>, Function<'env, (), ()>, Unknown<'env>)>, Unknown<'env>>;

/// The threadsafe function over host.js's `route`, alive (and keeping Node alive) only while the
/// sandbox has live executions.
type Wake = ThreadsafeFunction<(), (), Batch, napi::Status, false>;

/// The queue from every execution of one sandbox to Node's thread.
struct ToNode {
  queue: Mutex<Vec<HostMsg>>,
  /// A wake-up of Node's thread is on its way: later messages ride along with it.
  scheduled: AtomicBool,
  /// Executions started and not yet delivered. Changed only on Node's thread.
  live: AtomicUsize,
  /// Made when the first execution of a busy period starts, released when the last result is
  /// delivered: an idle sandbox holds no handle in Node's event loop.
  wake: Mutex<Option<Wake>>,
}

impl ToNode {
  /// Queues a message; false when Node's thread can no longer be reached.
  fn send(&self, msg: HostMsg) -> bool {
    lock(&self.queue).push(msg);
    if self.scheduled.swap(true, Ordering::AcqRel) {
      return true;
    }
    let sent = lock(&self.wake)
      .as_ref()
      .is_some_and(|w| w.call((), ThreadsafeFunctionCallMode::NonBlocking) == napi::Status::Ok);
    if !sent {
      self.scheduled.store(false, Ordering::Release);
    }
    sent
  }

  /// On Node's thread: takes everything queued. A message queued while the batch runs schedules
  /// the next wake-up.
  fn drain(&self) -> Batch {
    self.scheduled.store(false, Ordering::Release);
    let batch = std::mem::take(&mut *lock(&self.queue));
    let n = batch.len();
    let (mut keys, mut kinds, mut payloads, mut tokens) =
      (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut delivered = 0;
    for msg in batch {
      if msg.kind == "complete" {
        delivered += 1;
      }
      keys.push(msg.key);
      kinds.push(msg.kind);
      payloads.push(msg.payload);
      tokens.push(msg.token);
    }
    if delivered > 0 && self.live.fetch_sub(delivered, Ordering::AcqRel) == delivered {
      // The last live execution's result is in this batch: nothing else will be sent until the
      // next execution starts (and makes a new one).
      drop(lock(&self.wake).take());
    }
    FnArgs::from((keys, kinds, payloads, tokens))
  }
}

/// The host of one execution, as Node's thread serves it.
struct NapiHost {
  key: f64,
  to_node: Arc<ToNode>,
  /// The result was sent: nothing more goes to the host.
  done: AtomicBool,
  replies: Arc<Replies>,
}

impl NapiHost {
  fn send(&self, kind: &'static str, payload: String, token: f64) -> bool {
    !self.done.load(Ordering::Acquire) && self.to_node.send(HostMsg { key: self.key, kind, payload, token })
  }
}

impl Host for NapiHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    let token = self.replies.park(Waiting::Call(reply));
    let mut w = JsonWriter::default();
    w.begin_object();
    w.key("name").string(&call.name);
    let (kind, args_key) = match call.target {
      CallTarget::Tool => ("tool", "input"),
      CallTarget::Function => ("fn", "args"),
    };
    // `args_json` is JSON the sandbox itself produced (JSON.stringify inside QuickJS): embed it as is,
    // so the host side parses each call once.
    w.key(args_key).raw(&call.args_json);
    w.key("callId").string(&call.call_id);
    w.key("executionId").string(&call.execution_id);
    if let Some(parent) = &call.parent_execution_id {
      w.key("parentExecutionId").string(parent);
    }
    w.end_object();
    if !self.send(kind, w.finish(), token as f64) {
      if let Some(Waiting::Call(reply)) = self.replies.take(token) {
        reply.send(CallResult::Err(HostFailure { message: "The host is gone".into(), ..Default::default() }));
      }
    }
  }

  fn event(&self, event: Event) {
    // Only executions whose host has `onEvent` produce events (`ExecuteConfig::events`).
    self.send("event", event_json(&event), 0.0);
  }

  fn get_tool(&self, name: &str, timeout: Duration) -> Option<String> {
    let (tx, rx) = sync_channel(1);
    let token = self.replies.park(Waiting::GetTool(tx));
    if !self.send("getTool", name.to_string(), token as f64) {
      self.replies.take(token);
      return None;
    }
    let answer = rx.recv_timeout(timeout).ok().flatten();
    self.replies.take(token);
    answer.filter(|json| json != "null")
  }

  fn approve(&self, ask: ApprovalAsk, answer: ApprovalAnswer) {
    let token = self.replies.park(Waiting::Approve(answer));
    let mut w = JsonWriter::default();
    w.begin_object();
    w.key("executionId").string(&ask.execution_id);
    w.key("callId").string(&ask.call_id);
    w.key("toolName").string(&ask.tool_name);
    w.key("input").raw(&ask.input_json);
    if let Some(a) = &ask.annotations_json {
      w.key("annotations").raw(a);
    }
    w.key("reason").string(ask.reason);
    w.end_object();
    if !self.send("approve", w.finish(), token as f64) {
      if let Some(Waiting::Approve(answer)) = self.replies.take(token) {
        answer(Approval::Unavailable);
      }
    }
  }

  fn complete(&self, completed: Completed) {
    // The last message of this execution: later calls and events are refused (`done`).
    let payload = completed.to_json();
    if !self.done.swap(true, Ordering::AcqRel) {
      self.to_node.send(HostMsg { key: self.key, kind: "complete", payload, token: 0.0 });
    }
  }
}

/// The host's `approve()` answer (`'approve' | 'approve_always' | 'decline'`; a throw or anything
/// else counts as a decline that says so; no `approve` at all is `Unavailable`).
fn approval_of(error: Option<String>, value: Option<String>, counted: Option<f64>) -> Approval {
  if let Some(error) = error {
    let message = serde_json::from_str::<serde_json::Value>(&error)
      .ok()
      .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
      .unwrap_or_default();
    return Approval::Decline(Some(format!("approve() threw: {}", crate::common::char_prefix(&message, 200))));
  }
  if let Some(counted) = counted {
    return Approval::Decline(Some(format!(
      "approve() answered {counted} bytes of JSON or more, not 'approve', 'approve_always' or 'decline'"
    )));
  }
  match value.as_deref() {
    Some(r#""approve""#) => Approval::Approve,
    Some(r#""approve_always""#) => Approval::ApproveAlways,
    Some(r#""decline""#) => Approval::Decline(None),
    Some(r#""__unavailable""#) => Approval::Unavailable,
    Some(other) => Approval::Decline(Some(format!(
      "approve() answered {}, not 'approve', 'approve_always' or 'decline'",
      crate::common::char_prefix(other, 100)
    ))),
    None => {
      Approval::Decline(Some("approve() answered undefined, not 'approve', 'approve_always' or 'decline'".into()))
    }
  }
}

/// An event as the host's `onEvent` receives it (JSON).
pub(crate) fn event_json(event: &Event) -> String {
  let mut w = JsonWriter::default();
  w.begin_object();
  write_event(&mut w, event, None);
  w.end_object();
  w.finish()
}

/// An event's fields; a nested run's carry `parentExecutionId` after `executionId`.
fn write_event(w: &mut JsonWriter, event: &Event, parent: Option<&str>) {
  let parent_id = |w: &mut JsonWriter| {
    if let Some(p) = parent {
      w.key("parentExecutionId").string(p);
    }
  };
  match event {
    Event::Nested { parent_execution_id, event } => write_event(w, event, Some(parent_execution_id)),
    Event::ToolCallStart { execution_id, call_id, tool_name, input_json } => {
      w.key("type").string("tool_call_start");
      w.key("executionId").string(execution_id);
      parent_id(w);
      w.key("callId").string(call_id);
      w.key("toolName").string(tool_name);
      w.key("input").raw(input_json);
    }
    Event::ToolCallEnd { execution_id, call_id, tool_name, input_json, ok, duration_ms, error } => {
      w.key("type").string("tool_call_end");
      w.key("executionId").string(execution_id);
      parent_id(w);
      w.key("callId").string(call_id);
      w.key("toolName").string(tool_name);
      w.key("input").raw(input_json);
      w.key("status").string(if *ok { "ok" } else { "error" });
      w.key("durationMs").number(*duration_ms);
      if let Some((code, message)) = error {
        w.key("error").begin_object();
        w.key("code").string(code);
        w.key("message").string(message);
        w.end_object();
      }
    }
    Event::Log { execution_id, level, message, metadata_json } => {
      w.key("type").string("log");
      w.key("executionId").string(execution_id);
      parent_id(w);
      w.key("level").string(level);
      w.key("message").string(message);
      if let Some(metadata) = metadata_json {
        w.key("metadata").raw(metadata);
      }
    }
    Event::Notify { execution_id, event, payload_json } => {
      w.key("type").string("notify");
      w.key("executionId").string(execution_id);
      parent_id(w);
      w.key("event").string(event);
      w.key("payload").raw(payload_json);
    }
    Event::Approval { execution_id, call_id, tool_name, decision, waited_ms } => {
      w.key("type").string("approval");
      w.key("executionId").string(execution_id);
      parent_id(w);
      w.key("callId").string(call_id);
      w.key("toolName").string(tool_name);
      w.key("decision").string(decision);
      w.key("waitedMs").number(*waited_ms);
    }
  }
}

/// What host.js's `settle` reported (`errorJson`, `valueJson`, `counted`) as the answer an
/// execution that takes at most `limit` bytes of JSON may take: an answer over it fails that call
/// with `TOOL_EXECUTION_ERROR` saying so — `counted` when host.js refused it before serializing it
/// (at least that many bytes) — and a host error's message and code are cut to a readable size.
pub(crate) fn host_answer(
  error: Option<String>,
  value: Option<String>,
  counted: Option<f64>,
  limit: usize,
) -> CallResult {
  if let Some(counted) = counted {
    // A count from JavaScript: a whole number of characters (saturating `as`: never UB).
    return CallResult::Err(too_large(counted as usize, limit, true));
  }
  match (error, value) {
    (Some(e), _) => CallResult::Err(host_failure(&e, limit)),
    (None, Some(json)) if json.len() > limit => CallResult::Err(too_large(json.len(), limit, false)),
    (None, value) => CallResult::Ok(value),
  }
}

/// An answer of `bytes` bytes of JSON (`at_least`: counted before it was serialized, a lower
/// bound), more than `limit`.
fn too_large(bytes: usize, limit: usize, at_least: bool) -> HostFailure {
  let mut message =
    format!("The tool's answer is {bytes} bytes of JSON, more than this execution can take ({limit} bytes: its memoryLimitBytes)");
  if at_least {
    message.push_str(&format!("; {bytes} is a lower bound, counted without serializing it"));
  }
  HostFailure { message, code: None, details_json: None }
}

/// The largest host answer an execution takes: one it could not parse into its heap, or that no
/// worker frame can carry, fails that call alone (spec §2.6: the host checks an answer's size
/// before it frames it, and host.js before it serializes it).
fn answer_limit(config: &SandboxConfig) -> usize {
  usize::try_from(config.memory_limit_bytes).unwrap_or(usize::MAX).min(super::config::MAX_FRAME - (1 << 20))
}

/// What of a host error crosses back: a message, a code and details of any size would be copied
/// into the script's heap and, as a `tool_call_end` event, through the worker pipe.
const MAX_ERROR_MESSAGE: usize = 16 << 10;
const MAX_ERROR_CODE: usize = 256;

/// `text` cut to at most `max` bytes on a character boundary, saying how long it was: `total`
/// bytes (`at_least`: at least) if host.js already cut it, else its own length.
fn cut(text: String, max: usize, total: Option<usize>, at_least: bool) -> String {
  if text.len() <= max && total.is_none() {
    return text;
  }
  let total = total.unwrap_or(text.len());
  let at_least = if at_least { "at least " } else { "" };
  format!("{}… ({at_least}{total} bytes in all)", crate::common::char_prefix(&text, max))
}

/// Reads `{ message, code?, details? }` as the host side of `host.js` describes an error (with
/// `messageBytes` / `codeBytes`, and `…AtLeast`, where host.js cut a huge one), cut to what an
/// execution taking at most `limit` bytes of answer keeps.
fn host_failure(json: &str, limit: usize) -> HostFailure {
  let value: serde_json::Value = serde_json::from_str(&crate::common::well_formed_escapes(json)).unwrap_or_default();
  let text = |name: &str, max: usize| {
    let text = value.get(name).and_then(|m| m.as_str())?.to_string();
    let total = value.get(format!("{name}Bytes")).and_then(serde_json::Value::as_u64);
    let at_least = value.get(format!("{name}AtLeast")).and_then(serde_json::Value::as_bool).unwrap_or(false);
    Some(cut(text, max, total.and_then(|t| usize::try_from(t).ok()), at_least))
  };
  HostFailure {
    message: text("message", MAX_ERROR_MESSAGE).unwrap_or_else(|| "Host error (its message could not be read)".into()),
    code: text("code", MAX_ERROR_CODE),
    details_json: value
      .get("details")
      .and_then(|d| d.as_str())
      .filter(|d| d.len() <= limit.min(MAX_ERROR_MESSAGE * 64))
      .map(str::to_string),
  }
}

/// A QuickJS sandbox for AgentScript plans (`api.md` §2).
#[napi]
pub struct Sandbox {
  pool: Option<Runner>,
  warnings: Arc<Mutex<Warnings>>,
  config: Arc<SandboxConfig>,
  replies: Arc<Replies>,
  to_node: Arc<ToNode>,
  /// host.js's `{ register, route, settle }` (deleted with the sandbox: never a root past it).
  host_js: JsRef,
  /// The key of the execution `launch` started last (host.js's dispatchers, per sandbox).
  next_id: u64,
  /// The id of the execution `launch` started last.
  last_id: String,
}

#[napi]
impl Sandbox {
  /// Creates a sandbox and its worker threads. Throws `TypeError` (`ERR_INVALID_ARG`) for invalid
  /// options.
  #[napi(constructor, ts_args_type = "options?: SandboxOptions")]
  pub fn new(env: Env, options: Option<Unknown>) -> napi::Result<Self> {
    let options: SandboxOptions = args::checked_options(&env, options.as_ref(), "options")?.unwrap_or_default();
    let config = options.to_config().map_err(|m| args::invalid_arg(&env, m))?;
    Self::from_config(&env, config)
  }

  /// A sandbox for a checked configuration (the engine layer builds its own this way).
  pub(crate) fn from_config(env: &Env, config: SandboxConfig) -> napi::Result<Self> {
    let config = Arc::new(config);
    let warnings = Arc::new(Mutex::new(Warnings::default()));
    let pool = Runner::new(config.clone(), warnings.clone()).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    let replies = Arc::new(Replies::default());
    let answer_limit = answer_limit(&config);
    let reply_fn = {
      let replies = replies.clone();
      env.create_function_from_closure("reply", move |ctx: FunctionCallContext| -> napi::Result<()> {
        let token: f64 = ctx.get(0)?;
        let error: Option<String> = ctx.get(1)?;
        let value: Option<String> = ctx.get(2)?;
        // host.js's count of an answer it refused unserialized (see `host_answer`).
        let counted: Option<f64> = if ctx.length() > 3 { ctx.get(3)? } else { None };
        match replies.take(token as u64) {
          Some(Waiting::Call(reply)) => reply.send(host_answer(error, value, counted, answer_limit)),
          Some(Waiting::GetTool(tx)) => {
            let too_large = counted.is_some() || value.as_ref().is_some_and(|v| v.len() > answer_limit);
            let _ = tx.try_send(if error.is_some() || too_large { None } else { value });
          }
          Some(Waiting::Approve(answer)) => answer(approval_of(error, value, counted)),
          None => {}
        }
        Ok(())
      })?
    };
    let factory: HostJsFactory = env.run_script(HOST_JS)?;
    let host_js: Object = factory.call(FnArgs::from((reply_fn, answer_limit as f64)))?;
    let to_node = Arc::new(ToNode {
      queue: Mutex::new(Vec::new()),
      scheduled: AtomicBool::new(false),
      live: AtomicUsize::new(0),
      wake: Mutex::new(None),
    });
    Ok(Self {
      pool: Some(pool),
      warnings,
      config,
      replies,
      to_node,
      host_js: JsRef::strong(env, &host_js)?,
      next_id: 0,
      last_id: String::new(),
    })
  }

  /// host.js's `settle(fn, self, args, done)`: runs a host function and reports its outcome once,
  /// as JSON (the engine's `invoke` calls the host through it).
  pub(crate) fn settle<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    let host_js = self.host_js.get(env)?;
    host_js.get("settle")?.ok_or_else(|| napi::Error::from_reason("settle missing"))
  }

  pub(crate) fn config(&self) -> &SandboxConfig {
    &self.config
  }

  /// The id of the execution `launch` started last.
  pub(crate) fn last_execution_id(&self) -> String {
    self.last_id.clone()
  }

  /// Queues executions from any thread (a saved script a plan calls, §11); `None` once disposed.
  pub(crate) fn submitter(&self) -> Option<crate::sandbox::Submitter> {
    self.pool.as_ref().filter(|p| !p.is_disposed()).map(Runner::submitter)
  }

  /// The largest host answer its executions take, in bytes of JSON (see `host_answer`).
  pub(crate) fn answer_limit(&self) -> usize {
    answer_limit(&self.config)
  }

  /// See `Runner::queue_probe`; `None` once disposed.
  pub(crate) fn queue_probe(&self) -> Option<QueueProbe> {
    self.pool.as_ref().filter(|p| !p.is_disposed()).map(Runner::queue_probe)
  }

  /// Validates and runs `script`. Resolves to exactly one `ExecuteResult`; a script never makes it
  /// reject. Throws `TypeError` (`ERR_INVALID_ARG`) for invalid arguments.
  #[napi(
    ts_args_type = "script: string, host?: ExecuteHost, options?: ExecuteOptions",
    ts_return_type = "Promise<ExecuteResult>"
  )]
  pub fn execute<'env>(
    &mut self,
    env: &'env Env,
    script: Unknown<'env>,
    host: Option<Unknown<'env>>,
    options: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let script = args::string_arg(env, &script, "script")?;
    let mut exec = ExecuteConfig::new(&self.config);
    let host_object = read_host(env, host, &mut exec)?;
    let signal = read_execute_options(env, options, &mut exec)?;
    self.launch(env, script, host_object, exec, signal, None, None)
  }

  /// Starts one execution (arguments already checked); `wrap` puts the engine's host adapter
  /// around the host's; `run` is the engine's telemetry run (engine/telemetry.js), if it records.
  #[allow(clippy::too_many_arguments)]
  pub(crate) fn launch<'env>(
    &mut self,
    env: &'env Env,
    script: String,
    host_object: Option<Object<'env>>,
    exec: ExecuteConfig,
    signal: Option<Object<'env>>,
    wrap: Option<&WrapHost>,
    run: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    self.next_id += 1;
    // A handle a client holds across requests (§12): unguessable, not a counter.
    let id = crate::common::execution_id();
    self.last_id.clone_from(&id);
    let pool = self.pool.as_ref().filter(|p| !p.is_disposed());

    // The execution's dispatcher in host.js (and the promise the caller gets).
    let shared_slot: Arc<Mutex<Option<Arc<Shared>>>> = Arc::new(Mutex::new(None));
    let abort_fn = {
      let slot = shared_slot.clone();
      let aborter = pool.map(Runner::aborter);
      env.create_function_from_closure("abort", move |_ctx: FunctionCallContext| -> napi::Result<()> {
        if let (Some(shared), Some(aborter)) = (lock(&slot).clone(), aborter.as_ref()) {
          aborter.abort(&shared);
        }
        Ok(())
      })?
    };
    let host_js = self.host_js.get(env)?;
    let register: Register =
      host_js.get("register")?.ok_or_else(|| napi::Error::from_reason("host.js has no register"))?;
    let host_value: Unknown = match &host_object {
      Some(h) => h.to_unknown(),
      None => Object::new(env)?.to_unknown(),
    };
    let signal_value: Unknown = match &signal {
      Some(s) => s.to_unknown(),
      None => ().into_unknown(env)?,
    };
    let key = self.next_id as f64;
    let run_value: Unknown = match run {
      Some(r) => r,
      None => ().into_unknown(env)?,
    };
    let promise = register.call(FnArgs::from((key, host_value, signal_value, abort_fn, run_value)))?;
    if self.to_node.live.fetch_add(1, Ordering::AcqRel) == 0 {
      let route: Function<Batch, ()> =
        host_js.get("route")?.ok_or_else(|| napi::Error::from_reason("host.js has no route"))?;
      let to_node = Arc::downgrade(&self.to_node);
      let wake: napi::Result<Wake> = route.build_threadsafe_function::<()>().build_callback(
        move |_ctx: napi::threadsafe_function::ThreadsafeCallContext<()>| {
          Ok(match to_node.upgrade() {
            Some(to_node) => to_node.drain(),
            None => FnArgs::from((Vec::new(), Vec::new(), Vec::new(), Vec::new())),
          })
        },
      );
      match wake {
        Ok(wake) => *lock(&self.to_node.wake) = Some(wake),
        Err(e) => {
          self.to_node.live.fetch_sub(1, Ordering::AcqRel);
          return Err(e);
        }
      }
    }
    let napi_host: Arc<dyn Host> = Arc::new(NapiHost {
      key,
      to_node: self.to_node.clone(),
      done: AtomicBool::new(false),
      replies: self.replies.clone(),
    });
    let napi_host = match wrap {
      Some(wrap) => wrap(napi_host),
      None => napi_host,
    };
    let shared = Arc::new(Shared::new(id, napi_host, exec.timeout));
    shared.host.attached(&shared);
    *lock(&shared_slot) = Some(shared.clone());

    let aborted_already = match &signal {
      Some(s) => s.get::<bool>("aborted")?.unwrap_or(false),
      None => false,
    };
    match pool {
      None => {
        shared.complete_from_outside(Outcome::sandbox(ErrorCode::PoolDisposed, "The sandbox has been disposed"));
      }
      Some(_) if aborted_already => {
        shared.request_stop(super::shared::Stop::Aborted);
        shared.report_stop();
      }
      Some(pool) => {
        if exec.events {
          Warnings::deliver(&self.warnings, &shared);
        }
        pool.submit(script, exec, shared)
      }
    }
    Ok(promise)
  }

  /// What this sandbox could not do as configured, e.g. run without a seccomp filter or fall back
  /// from `'process'` to `'thread'` isolation. Each warning is also sent once to the next
  /// execution's `onEvent`, as a `log` event with `level: 'warning'`.
  #[napi(getter)]
  pub fn warnings(&self) -> Vec<String> {
    lock(&self.warnings).all.clone()
  }

  /// Where scripts of this sandbox run: `'process'` or `'thread'` (after any fallback).
  #[napi(getter, ts_return_type = "'thread' | 'process'")]
  pub fn isolation(&self) -> &'static str {
    match &self.pool {
      #[cfg(any(unix, windows))]
      Some(Runner::Process(_)) => "process",
      Some(Runner::Thread(_)) => "thread",
      None => match self.config.isolation {
        Isolation::Process => "process",
        Isolation::Thread => "thread",
      },
    }
  }

  /// Ends every queued and running execution with `POOL_DISPOSED` and stops the worker threads.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn dispose<'env>(&mut self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    if let Some(mut pool) = self.pool.take() {
      let threads = pool.dispose();
      // Joining waits for threads to finish what they are doing; never on Node's thread.
      std::thread::spawn(move || threads.into_iter().for_each(|t| drop(t.join())));
    }
    env.run_script::<_, Unknown>("Promise.resolve()")
  }
}

fn is_identifier(s: &str) -> bool {
  let mut chars = s.chars();
  chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
    && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

fn number_arg(env: &Env, value: &Unknown<'_>, name: &str) -> napi::Result<u64> {
  if value.get_type()? != ValueType::Number {
    return Err(args::invalid_arg(env, format!("{name} must be a number")));
  }
  // SAFETY: `value` is a live number handle of this call's scope.
  let n = unsafe { <f64 as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), value.raw()) }?;
  args::non_negative(Some(n), name).map_err(|m| args::invalid_arg(env, m)).map(|v| v.unwrap_or(0))
}

/// `JSON.stringify(value)` in Node, as a caller-argument check.
pub(crate) fn json_of(env: &Env, value: Unknown<'_>, name: &str) -> napi::Result<Option<String>> {
  let json: Object = env.get_global()?.get_named_property("JSON")?;
  let stringify: Function<Unknown, Option<String>> = json.get_named_property("stringify")?;
  match stringify.call(value) {
    Ok(s) => Ok(s),
    Err(e) => {
      // The pending exception (e.g. a cycle) becomes the caller's TypeError.
      Err(args::invalid_arg(env, format!("{name} must be JSON-serializable: {}", e.reason)))
    }
  }
}

/// Checks an `ExecuteHost` (`callTool`, `getTool`, `onEvent`, `functions`) into `exec`.
pub(crate) fn read_host<'env>(
  env: &'env Env,
  host: Option<Unknown<'env>>,
  exec: &mut ExecuteConfig,
) -> napi::Result<Option<Object<'env>>> {
  let host = host.filter(|h| !args::is_nullish(h));
  exec.events = false;
  let host_object = match &host {
    Some(h) if h.get_type()? == ValueType::Object => Some(Object::from_raw(env.raw(), h.raw())),
    Some(_) => return Err(args::invalid_arg(env, "host must be an object")),
    None => None,
  };
  if let Some(host) = &host_object {
    for name in ["callTool", "getTool", "onEvent", "approve"] {
      let value: Option<Unknown> = host.get(name)?;
      if let Some(v) = value.filter(|v| !args::is_nullish(v)) {
        if v.get_type()? != ValueType::Function {
          return Err(args::invalid_arg(env, format!("host.{name} must be a function")));
        }
        match name {
          "getTool" => exec.host_get_tool = true,
          "onEvent" => exec.events = true,
          _ => {}
        }
      }
    }
    let functions: Option<Unknown> = host.get("functions")?;
    if let Some(functions) = functions.filter(|v| !args::is_nullish(v)) {
      if functions.get_type()? != ValueType::Object {
        return Err(args::invalid_arg(env, "host.functions must be an object of functions"));
      }
      let functions = Object::from_raw(env.raw(), functions.raw());
      for key in Object::keys(&functions)? {
        let value: Option<Unknown> = functions.get(&key)?;
        if !matches!(value.map(|v| v.get_type()), Some(Ok(ValueType::Function))) {
          return Err(args::invalid_arg(env, format!("host.functions['{key}'] must be a function")));
        }
        let valid = !key.is_empty() && key.split('.').all(is_identifier);
        if !valid {
          return Err(args::invalid_arg(
            env,
            format!("host.functions key '{key}' must be an identifier or a dotted path"),
          ));
        }
        let root = key.split('.').next().unwrap_or_default();
        if super::engine::GLOBALS.contains(&root) || root.starts_with(crate::common::RESERVED_PREFIX) {
          return Err(args::invalid_arg(
            env,
            format!("host.functions key '{key}' would replace the sandbox's own '{root}'"),
          ));
        }
        exec.functions.push(key);
      }
    }
    exec.denied_tools = read_denied_tools(env, host)?;
    exec.clock_ms = read_whole(env, host, "clock")?;
    exec.random_seed = read_whole(env, host, "randomSeed")?;
  }

  Ok(host_object)
}

/// `host.clock` / `host.randomSeed`: a whole number from 0 to 2^53 − 1, or absent (`undefined`,
/// `null`).
fn read_whole(env: &Env, host: &Object, name: &str) -> napi::Result<Option<u64>> {
  let value: Option<Unknown> = host.get(name)?;
  let Some(value) = value.filter(|v| !args::is_nullish(v)) else { return Ok(None) };
  const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
  let number =
    if value.get_type()? == ValueType::Number { Some(value.coerce_to_number()?.get_double()?) } else { None };
  match number {
    // A whole number in range: the cast is exact.
    Some(n) if n.fract() == 0.0 && (0.0..=MAX_SAFE).contains(&n) => Ok(Some(n as u64)),
    _ => Err(args::invalid_arg(
      env,
      format!("host.{name} must be a whole number from 0 to 2^53 - 1 (epoch milliseconds for clock)"),
    )),
  }
}

/// The host's `deniedTools` (`{ [glob]: reason }`): tools the host's policy refuses, so that a
/// script naming one gets `ACCESS_DENIED` with the reason instead of `TOOL_NOT_FOUND`.
pub(crate) fn read_denied_tools(env: &Env, host: &Object) -> napi::Result<Vec<(Glob, String)>> {
  let denied: Option<Unknown> = host.get("deniedTools")?;
  let Some(denied) = denied.filter(|v| !args::is_nullish(v)) else { return Ok(Vec::new()) };
  if denied.get_type()? != ValueType::Object || denied.is_array()? {
    return Err(args::invalid_arg(env, "host.deniedTools must be an object of glob → reason strings"));
  }
  let denied = Object::from_raw(env.raw(), denied.raw());
  let mut out = Vec::new();
  for key in Object::keys(&denied)? {
    let what = format!("host.deniedTools['{key}']");
    let reason = match denied.get::<Unknown>(&key)? {
      Some(reason) => args::string_arg(env, &reason, &what)?,
      None => return Err(args::invalid_arg(env, format!("{what} must be a string"))),
    };
    out.push((Glob::new(&key), reason));
  }
  Ok(out)
}

/// Checks `ExecuteOptions` into `exec`; returns the `AbortSignal`, if any.
fn read_execute_options<'env>(
  env: &'env Env,
  options: Option<Unknown<'env>>,
  exec: &mut ExecuteConfig,
) -> napi::Result<Option<Object<'env>>> {
  let mut signal: Option<Object> = None;
  if let Some(options) = options.filter(|o| !args::is_nullish(o)) {
    if options.get_type()? != ValueType::Object {
      return Err(args::invalid_arg(env, "options must be an object"));
    }
    let options = Object::from_raw(env.raw(), options.raw());
    args::check_keys(env, &options, "options", EXECUTE_OPTION_KEYS)?;
    if let Some(language) = options.get::<Unknown>("language")?.filter(|v| !args::is_nullish(v)) {
      let language = args::string_arg(env, &language, "options.language")?;
      exec.language = Language::parse(&language).ok_or_else(|| {
        args::invalid_arg(env, format!("options.language must be 'javascript' or 'typescript' (got '{language}')"))
      })?;
    }
    if let Some(context) = options.get::<Unknown>("context")?.filter(|v| !args::is_nullish(v)) {
      if context.get_type()? != ValueType::Object {
        return Err(args::invalid_arg(env, "options.context must be an object"));
      }
      exec.context_json = json_of(env, context, "options.context")?.unwrap_or_else(|| "{}".into());
    }
    if let Some(input) = options.get::<Unknown>("input")? {
      if input.get_type()? != ValueType::Undefined {
        exec.input_json = json_of(env, input, "options.input")?;
      }
    }
    if let Some(allowed) = options.get::<Unknown>("allowedTools")?.filter(|v| !args::is_nullish(v)) {
      let list: Vec<String> = args::options_arg(env, Some(&allowed), "options.allowedTools")?.unwrap_or_default();
      exec.allowed_tools = Some(list);
    }
    if let Some(v) = options.get::<Unknown>("timeoutMs")?.filter(|v| !args::is_nullish(v)) {
      let ms = number_arg(env, &v, "options.timeoutMs")?;
      exec.timeout = exec.timeout.min(Duration::from_millis(ms));
    }
    if let Some(v) = options.get::<Unknown>("maxToolCalls")?.filter(|v| !args::is_nullish(v)) {
      exec.max_tool_calls = exec.max_tool_calls.min(number_arg(env, &v, "options.maxToolCalls")?);
    }
    signal = signal_arg(env, &options, "options")?;
  }

  Ok(signal)
}

/// `owner.signal` (`ExecuteOptions.signal`, `CodeCallHost.signal`): an `AbortSignal`, or `None`
/// when it is absent, `undefined` or `null`; anything else is `ERR_INVALID_ARG`.
pub(crate) fn signal_arg<'env>(
  env: &'env Env,
  owner: &Object<'env>,
  owner_name: &str,
) -> napi::Result<Option<Object<'env>>> {
  let Some(s) = owner.get::<Unknown>("signal")?.filter(|v| !args::is_nullish(v)) else { return Ok(None) };
  let is_signal = s.get_type()? == ValueType::Object && {
    let o = Object::from_raw(env.raw(), s.raw());
    matches!(o.get::<Unknown>("addEventListener")?.map(|f| f.get_type()), Some(Ok(ValueType::Function)))
  };
  if !is_signal {
    return Err(args::invalid_arg(env, format!("{owner_name}.signal must be an AbortSignal")));
  }
  Ok(Some(Object::from_raw(env.raw(), s.raw())))
}

#[cfg(test)]
mod answer_tests {
  use super::{host_answer, CallResult, HostFailure, MAX_ERROR_MESSAGE};

  fn message(result: CallResult) -> String {
    match result {
      CallResult::Err(HostFailure { message, code: None, details_json: None }) => message,
      other => panic!("{other:?}"),
    }
  }

  #[test]
  fn answers_over_the_limit_fail_that_call_and_errors_are_cut() {
    assert_eq!(
      message(host_answer(None, Some("x".repeat(101)), None, 100)),
      "The tool's answer is 101 bytes of JSON, more than this execution can take (100 bytes: its memoryLimitBytes)"
    );
    // Refused by host.js before it was serialized.
    assert_eq!(
      message(host_answer(None, None, Some(270e6 + 2.0), 100)),
      "The tool's answer is 270000002 bytes of JSON, more than this execution can take (100 bytes: its memoryLimitBytes); \
       270000002 is a lower bound, counted without serializing it"
    );
    assert!(matches!(host_answer(None, Some("x".repeat(100)), None, 100), CallResult::Ok(Some(s)) if s.len() == 100));
    assert!(matches!(host_answer(None, None, None, 0), CallResult::Ok(None)));
    let huge = serde_json::json!({ "message": "é".repeat(MAX_ERROR_MESSAGE), "code": "C".repeat(1000), "details": "1".repeat(200) });
    match host_answer(Some(huge.to_string()), None, None, 100) {
      CallResult::Err(HostFailure { message, code: Some(code), details_json }) => {
        assert!(
          message.len() < MAX_ERROR_MESSAGE + 40
            && message.ends_with(&format!("… ({} bytes in all)", 2 * MAX_ERROR_MESSAGE)),
          "{message}"
        );
        assert!(code.starts_with("CCC") && code.len() < 300, "{code}");
        assert_eq!(details_json, None);
      }
      other => panic!("{other:?}"),
    }
    // Cut by host.js first: the bridge says how long the whole was.
    let cut = serde_json::json!({ "message": "m".repeat(MAX_ERROR_MESSAGE), "messageBytes": 20_000_000,
      "code": "C".repeat(300), "codeBytes": 1_000_000_000u64, "codeAtLeast": true });
    match host_answer(Some(cut.to_string()), None, None, 100) {
      CallResult::Err(HostFailure { message, code: Some(code), .. }) => {
        assert!(message.ends_with("m… (20000000 bytes in all)") && message.len() < MAX_ERROR_MESSAGE + 40, "{message}");
        assert!(code.ends_with("C… (at least 1000000000 bytes in all)"), "{code}");
      }
      other => panic!("{other:?}"),
    }
  }
}
