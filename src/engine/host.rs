//! The engine's side of the host-call bridge: wraps the host's pipeline (`CodeCallHost`) so that a
//! script reaches only tools in the CodeCall index (the sandbox's `getTool` is answered from the
//! registry, so any other name is `TOOL_NOT_FOUND` before the host is asked), so that a call that
//! needs a person's yes (§9) is asked about first, and so that MCP `CallToolResult`s are unwrapped
//! before the script sees them. Every call still goes to the host's `callTool`: the engine never
//! runs a tool any other way.
//!
//! Approvals live here, on the host side of both isolations (a worker process is not trusted to
//! ask): the sandbox has already sent the call's `tool_call_start` when the call arrives, so that
//! event is held back until the person said yes, and a call that is not approved has neither start
//! nor end. Calls that need asking wait in call order and are asked one at a time; the others go on.
//! While a person decides, the execution's deadline stands still (`Shared::hold`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::approval::{ApprovalPolicy, Decision, ToolApproval};
use super::scripts::{SavedCtx, SavedRun, ScriptRef, PREFIX as SAVED_PREFIX};
use super::unwrap::unwrap_json;
use crate::common::ErrorCode;
use crate::sandbox::{Approval, ApprovalAnswer, ApprovalAsk, Completed, HostFailure, Shared};
use crate::sandbox::{CallResult, CallTarget, Event, Host, HostCall, Reply};

/// One indexed tool as scripts may call it: what the sandbox's `getTool` answers (JSON), and what
/// §9 decides by.
#[derive(Debug)]
pub struct CallableTool {
  pub info: Arc<str>,
  pub approval: Option<ToolApproval>,
  pub annotations: Option<Value>,
}

/// The indexed tools, by name. Shared with the registry: a tool removed while a script runs is no
/// longer callable from it.
pub type Callable = Arc<RwLock<HashMap<String, Arc<CallableTool>>>>;

pub struct EngineHost {
  inner: Arc<dyn Host>,
  callable: Callable,
  /// `None` when the policy can never ask or deny (the default): no bookkeeping at all.
  approvals: Option<Arc<Approvals>>,
  /// The host's `toolFunctions`: host functions called `(server, tool, input)` that call the
  /// indexed tool `<server>:<tool>` (the gateway's `mcp.callTool`, `call_tool`). §9 holds for them.
  /// `true`: a refusal is the function's result `{ ok: false, error }` (seed 004's `call_tool`
  /// never throws), else a thrown error.
  tool_functions: Vec<(String, bool)>,
  /// Saved scripts are on (§11): `saved:` calls run nested, every call counts against the budget
  /// the whole tree shares.
  saved: Option<Arc<SavedCtx>>,
}

impl EngineHost {
  pub fn new(inner: Arc<dyn Host>, callable: Callable, policy: &ApprovalPolicy) -> Self {
    let approvals = (!policy.is_off()).then(|| {
      Arc::new(Approvals {
        policy: policy.clone(),
        state: Mutex::new(State::default()),
        shared: Mutex::new(Vec::new()),
      })
    });
    Self { inner, callable, approvals, tool_functions: Vec::new(), saved: None }
  }

  /// Runs the saved scripts this execution's script calls (§11).
  pub fn with_saved(mut self, run: SavedRun) -> Self {
    self.saved = Some(Arc::new(SavedCtx::new(run)));
    self
  }

  /// A `saved:` tool, while saved scripts are on: the engine runs it, nobody is asked about it.
  fn is_saved(&self, name: &str) -> bool {
    self.saved.is_some() && name.starts_with(SAVED_PREFIX)
  }

  /// See `tool_functions`.
  pub fn with_tool_functions(mut self, names: Vec<(String, bool)>) -> Self {
    self.tool_functions = names;
    self
  }

  fn tool(&self, name: &str) -> Option<Arc<CallableTool>> {
    self.callable.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
  }

  /// The indexed tool a `toolFunctions` call calls, and its input as JSON.
  fn tool_of_function(&self, call: &HostCall) -> Option<(String, String, bool)> {
    let as_result = self.tool_functions.iter().find(|(f, _)| f == &call.name)?.1;
    let Ok(Value::Array(args)) = serde_json::from_str::<Value>(&call.args_json) else { return None };
    let (Some(Value::String(server)), Some(Value::String(tool))) = (args.first(), args.get(1)) else { return None };
    let name = format!("{server}:{tool}");
    // A tool outside the index is refused by the function itself: nobody is asked about it.
    self.tool(&name)?;
    let input = args.get(2).filter(|v| !v.is_null()).map_or_else(|| "{}".to_string(), Value::to_string);
    Some((name, input, as_result))
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
    if let Some(saved) = &self.saved {
      if let Some(refused) = saved.over_budget() {
        return reply.send(refused);
      }
      if call.target == CallTarget::Tool && call.name.starts_with(SAVED_PREFIX) {
        return saved.call(self.inner.clone(), call, reply);
      }
    }
    // Without a policy (the default) nothing is looked at or copied: the bridge's hot path.
    let Some(approvals) = &self.approvals else {
      return match call.target {
        CallTarget::Tool => self.inner.call(call, Box::new(UnwrapReply(reply))),
        CallTarget::Function => self.inner.call(call, reply),
      };
    };
    let (tool, input_json, reply): (String, String, Box<dyn Reply>) = match call.target {
      CallTarget::Tool => (call.name.clone(), call.args_json.clone(), Box::new(UnwrapReply(reply))),
      CallTarget::Function => match self.tool_of_function(&call) {
        Some((tool, input, true)) => (tool, input, Box::new(AsResult(reply))),
        Some((tool, input, false)) => (tool, input, reply),
        None => return self.inner.call(call, reply),
      },
    };
    match approvals.verdict(&call.call_id, &tool, || self.tool(&tool)) {
      Verdict::Go => {
        approvals.release_start(&call.call_id, &*self.inner);
        self.inner.call(call, reply);
      }
      Verdict::Refuse(message) => {
        approvals.refused(&call.call_id);
        reply.send(denied(message));
      }
      Verdict::Ask(ask) => approvals.enqueue(Pending { call, reply, ask, tool, input_json }, &self.inner),
    }
  }

  fn event(&self, event: Event) {
    let Some(approvals) = &self.approvals else { return self.inner.event(event) };
    match &event {
      // Held back until the call is approved (or dropped if it is not).
      Event::ToolCallStart { tool_name, .. } if self.is_saved(tool_name) => self.inner.event(event),
      Event::ToolCallStart { call_id, tool_name, .. } => {
        if let Verdict::Go = approvals.verdict(call_id, tool_name, || self.tool(tool_name)) {
          return self.inner.event(event);
        }
        let mut st = approvals.lock();
        if !st.refused.contains(call_id) {
          st.starts.insert(call_id.clone(), event);
        }
      }
      Event::ToolCallEnd { call_id, .. } => {
        if !approvals.lock().refused.remove(call_id) {
          self.inner.event(event);
        }
      }
      _ => self.inner.event(event),
    }
  }

  fn get_tool(&self, name: &str, _timeout: Duration) -> Option<String> {
    if let Some(t) = self.tool(name) {
      return Some(t.info.to_string());
    }
    // A saved script not indexed yet (saved by another host, or a pinned `@version`): the store
    // answers when it is called.
    if self.is_saved(name) && matches!(ScriptRef::of_tool(name), Some(Ok(_))) {
      let info = serde_json::json!({ "name": name, "appId": super::scripts::APP_ID, "description": "",
        "inputSchema": { "type": "object" }, "outputSchema": null });
      return Some(info.to_string());
    }
    None
  }

  fn get_tool_now(&self, name: &str) -> Option<Option<String>> {
    Some(self.get_tool(name, Duration::ZERO))
  }

  fn started(&self) {
    self.inner.started();
  }

  fn attached(&self, shared: &Arc<Shared>) {
    if let Some(approvals) = &self.approvals {
      // Its own clock, and those of the executions that called it (a saved script's caller waits).
      let mut hold = vec![Arc::downgrade(shared)];
      if let Some(saved) = &self.saved {
        hold.extend(saved.ancestors().iter().cloned());
      }
      *approvals.shared.lock().unwrap_or_else(|p| p.into_inner()) = hold;
    }
    if let Some(saved) = &self.saved {
      saved.attached(shared);
    }
    self.inner.attached(shared);
  }

  fn approve(&self, ask: ApprovalAsk, answer: ApprovalAnswer) {
    self.inner.approve(ask, answer);
  }

  fn complete(&self, completed: Completed) {
    if let Some(approvals) = &self.approvals {
      approvals.finish();
    }
    if let Some(saved) = &self.saved {
      saved.finished();
    }
    self.inner.complete(completed);
  }
}

/// A `toolFunctions` function that never throws: its refusal is `{ ok: false, error }`. Answers
/// from the function itself pass through unchanged.
struct AsResult(Box<dyn Reply>);

impl Reply for AsResult {
  fn send(self: Box<Self>, result: CallResult) {
    let result = match result {
      CallResult::Err(HostFailure { message, code: Some(code), .. }) if code == ErrorCode::AccessDenied.as_str() => {
        let refused = serde_json::json!({ "ok": false, "error": { "code": code, "message": message } });
        CallResult::Ok(Some(refused.to_string()))
      }
      other => other,
    };
    self.0.send(result);
  }
}

/// The refusal a script sees for a call that is not approved.
fn denied(message: String) -> CallResult {
  CallResult::Err(HostFailure { message, code: Some(ErrorCode::AccessDenied.as_str().into()), details_json: None })
}

/// What happens to one call.
enum Verdict {
  Go,
  Refuse(String),
  Ask(ApprovalAsk),
}

struct Pending {
  call: HostCall,
  reply: Box<dyn Reply>,
  ask: ApprovalAsk,
  /// The tool the call calls (a `toolFunctions` call's `<server>:<tool>`), and its input.
  tool: String,
  input_json: String,
}

#[derive(Default)]
struct State {
  /// Verdicts already reached, by call id (the start event and the call both ask).
  decided: HashMap<String, Decided>,
  /// `tool_call_start` events held back while their call waits for a person.
  starts: HashMap<String, Event>,
  /// Calls that were not approved: their `tool_call_end` is dropped.
  refused: HashSet<String>,
  /// Tools approved with `approve_always`: the rest of this execution's calls of them just go.
  always: HashSet<String>,
  /// Calls waiting for their turn to be asked, in call order.
  queue: VecDeque<Pending>,
  /// A person is being asked now.
  asking: bool,
  /// The call being asked about, until the answer or the timer takes it.
  in_flight: Option<Weak<Mutex<Option<Asked>>>>,
  /// The execution ended: nothing more is asked.
  finished: bool,
}

/// A call while a person is asked about it: the call, its reply, the executions whose deadlines
/// are held, the tool.
type Asked = (HostCall, Box<dyn Reply>, Vec<Arc<Shared>>, String);

#[derive(Clone)]
enum Decided {
  Go,
  Refuse(String),
  Ask(&'static str, Option<String>),
}

struct Approvals {
  policy: ApprovalPolicy,
  state: Mutex<State>,
  /// The execution and those that called it (saved scripts, §11), to hold their deadlines while a
  /// person decides.
  shared: Mutex<Vec<Weak<Shared>>>,
}

impl Approvals {
  fn lock(&self) -> std::sync::MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(|p| p.into_inner())
  }

  /// The verdict for a call, reached once per call id.
  fn verdict(&self, call_id: &str, tool: &str, lookup: impl FnOnce() -> Option<Arc<CallableTool>>) -> Verdict {
    let decided = {
      let st = self.lock();
      if st.always.contains(tool) {
        return Verdict::Go;
      }
      st.decided.get(call_id).cloned()
    };
    let decided = decided.unwrap_or_else(|| {
      let entry = lookup();
      let d = match self.policy.decide(
        tool,
        entry.as_ref().and_then(|t| t.approval),
        entry.as_ref().and_then(|t| t.annotations.as_ref()),
      ) {
        Decision::Allow => Decided::Go,
        Decision::Deny(message) => Decided::Refuse(message),
        Decision::Ask(reason) => {
          Decided::Ask(reason.as_str(), entry.as_ref().and_then(|t| t.annotations.as_ref()).map(Value::to_string))
        }
      };
      self.lock().decided.insert(call_id.to_string(), d.clone());
      d
    });
    match decided {
      Decided::Go => Verdict::Go,
      Decided::Refuse(message) => Verdict::Refuse(message),
      Decided::Ask(reason, annotations_json) => Verdict::Ask(ApprovalAsk {
        execution_id: String::new(),
        call_id: call_id.to_string(),
        tool_name: tool.to_string(),
        input_json: String::new(),
        annotations_json,
        reason,
      }),
    }
  }

  /// Passes on a held-back start event, if there is one.
  fn release_start(&self, call_id: &str, inner: &dyn Host) {
    let start = {
      let mut st = self.lock();
      st.decided.remove(call_id);
      st.starts.remove(call_id)
    };
    if let Some(start) = start {
      inner.event(start);
    }
  }

  fn refused(&self, call_id: &str) {
    let mut st = self.lock();
    st.decided.remove(call_id);
    st.starts.remove(call_id);
    st.refused.insert(call_id.to_string());
  }

  fn enqueue(self: &Arc<Self>, mut pending: Pending, inner: &Arc<dyn Host>) {
    pending.ask.execution_id = pending.call.execution_id.clone();
    pending.ask.input_json = pending.input_json.clone();
    let start = {
      let mut st = self.lock();
      if st.finished {
        drop(st);
        return pending.reply.send(denied("The execution ended before the call was approved".into()));
      }
      st.queue.push_back(pending);
      !std::mem::replace(&mut st.asking, true)
    };
    if start {
      self.ask_next(inner.clone());
    }
  }

  /// Asks about the first call in the queue; when it is answered, the next.
  fn ask_next(self: &Arc<Self>, inner: Arc<dyn Host>) {
    let pending = {
      let mut st = self.lock();
      loop {
        match st.queue.pop_front() {
          // An earlier `approve_always` covers it now.
          Some(p) if st.always.contains(&p.tool) => {
            drop(st);
            self.release_start(&p.call.call_id, &*inner);
            inner.call(p.call, p.reply);
            st = self.lock();
          }
          Some(p) => break Some(p),
          None => {
            st.asking = false;
            break None;
          }
        }
      }
    };
    let Some(Pending { call, reply, ask, tool, .. }) = pending else { return };
    let shared: Vec<Arc<Shared>> =
      self.shared.lock().unwrap_or_else(|p| p.into_inner()).iter().filter_map(Weak::upgrade).collect();
    for s in &shared {
      s.hold();
    }
    let asked = Instant::now();
    // Exactly one of the host's answer and the timer decides.
    let slot: Arc<Mutex<Option<Asked>>> = Arc::new(Mutex::new(Some((call, reply, shared, tool))));
    self.lock().in_flight = Some(Arc::downgrade(&slot));
    let decide = {
      let this = self.clone();
      let inner = inner.clone();
      let slot = slot.clone();
      move |outcome: Outcome| {
        let Some((call, reply, shared, tool)) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        for s in &shared {
          s.release();
        }
        this.answered(call, &tool, reply, outcome, asked.elapsed(), &inner);
        this.ask_next(inner);
      }
    };
    let timeout = self.policy.timeout;
    let on_timeout = decide.clone();
    std::thread::Builder::new()
      .name("codecall-approval".into())
      .spawn(move || {
        // Sleeps in short steps so that an answered ask does not keep the thread for long.
        let until = Instant::now() + timeout;
        while Instant::now() < until {
          if slot.lock().unwrap_or_else(|p| p.into_inner()).is_none() {
            return;
          }
          std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
        on_timeout(Outcome::TimedOut);
      })
      .map(drop)
      .unwrap_or_else(|_| decide.clone()(Outcome::Answer(Approval::Unavailable)));
    inner.approve(ask, Box::new(move |answer| decide(Outcome::Answer(answer))));
  }

  fn answered(
    &self,
    call: HostCall,
    tool: &str,
    reply: Box<dyn Reply>,
    outcome: Outcome,
    waited: Duration,
    inner: &Arc<dyn Host>,
  ) {
    let (decision, go, message): (&'static str, bool, Option<String>) = match outcome {
      Outcome::Answer(Approval::Approve) => ("approve", true, None),
      Outcome::Answer(Approval::ApproveAlways) => {
        self.lock().always.insert(tool.to_string());
        ("approve_always", true, None)
      }
      Outcome::Answer(Approval::Decline(note)) => (
        "decline",
        false,
        Some(match note {
          Some(note) => format!("Tool '{tool}' was not approved: declined by the user ({note})"),
          None => format!("Tool '{tool}' was not approved: declined by the user"),
        }),
      ),
      Outcome::TimedOut => ("timeout", false, Some(format!("Tool '{tool}' was not approved: approval timed out"))),
      Outcome::Answer(Approval::Unavailable) if self.policy.allow_when_unavailable => ("unavailable", true, None),
      Outcome::Answer(Approval::Unavailable) => {
        ("unavailable", false, Some(format!("Tool '{tool}' was not approved: the client cannot ask for approval")))
      }
    };
    let finished = self.lock().finished;
    inner.event(Event::Approval {
      execution_id: call.execution_id.clone(),
      call_id: call.call_id.clone(),
      tool_name: tool.to_string(),
      decision,
      waited_ms: waited.as_secs_f64() * 1000.0,
    });
    if go && !finished {
      self.release_start(&call.call_id, &**inner);
      inner.call(call, reply);
    } else {
      self.refused(&call.call_id);
      reply.send(denied(message.unwrap_or_else(|| "The execution ended before the call was approved".into())));
    }
  }

  /// The execution ended (its result, an abort, a dispose): calls still waiting are refused,
  /// nothing more is asked, and the ask in flight is settled now — its timer thread leaves and the
  /// deadlines it held are released, whether or not the host's `approve()` ever answers.
  fn finish(&self) {
    let (waiting, in_flight) = {
      let mut st = self.lock();
      st.finished = true;
      (st.queue.drain(..).collect::<Vec<Pending>>(), st.in_flight.take())
    };
    let asked =
      in_flight.and_then(|w| w.upgrade()).and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take());
    if let Some((_call, reply, shared, _tool)) = asked {
      for s in &shared {
        s.release();
      }
      reply.send(denied("The execution ended before the call was approved".into()));
    }
    for p in waiting {
      p.reply.send(denied("The execution ended before the call was approved".into()));
    }
  }
}

#[derive(Clone)]
enum Outcome {
  Answer(Approval),
  TimedOut,
}
