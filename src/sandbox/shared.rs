//! What an execution's worker, the watchdog and the host side share: the one-time completion and
//! the reason to stop. Whoever completes first wins; later completions are dropped.
//!
//! The `Host` those parties report to is defined here too, not in `bridge.rs` with the messages
//! it takes: `Shared` holds its host, and a host is handed the `Shared` (`Host::attached`), so
//! the two name each other. Beside each other they keep the dependency one way: this file uses
//! `bridge.rs`'s messages, and `bridge.rs` uses nothing of the sandbox.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rquickjs::qjs;

use super::bridge::{Approval, ApprovalAnswer, ApprovalAsk, Event, HostCall, Reply};
use super::outcome::{Completed, Outcome, Stats};
use crate::common::ErrorCode;

/// Locks a mutex, also after a panic elsewhere poisoned it (the data is plain and stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
  m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why an execution must stop, if it must.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
  Running = 0,
  Timeout = 1,
  Aborted = 2,
  Disposed = 3,
  QueueTimeout = 4,
}

impl Stop {
  /// The result a reason to stop stands for — the one place that maps one to the other. `None`
  /// while running (a running execution past its deadline is a timeout: the caller knows when).
  pub fn outcome(self, timeout: Duration) -> Option<Outcome> {
    match self {
      Stop::Running => None,
      Stop::Timeout => Some(Outcome::timed_out(timeout)),
      Stop::Aborted => Some(Outcome::sandbox(ErrorCode::ExecutionAborted, "Execution was aborted by its AbortSignal")),
      Stop::Disposed => {
        Some(Outcome::sandbox(ErrorCode::PoolDisposed, "The sandbox was disposed before this execution finished"))
      }
      Stop::QueueTimeout => {
        Some(Outcome::sandbox(ErrorCode::QueueTimeout, "Execution waited too long in the queue (queueTimeoutMs)"))
      }
    }
  }
}

/// Asks the worker that runs an execution to stop it (returns false if that worker is gone).
pub(crate) type StopLink = Box<dyn Fn() -> bool + Send + Sync>;

extern "C" {
  fn JS_RequestInterrupt(ctx: *mut qjs::JSContext);
}

/// The vendored QuickJS's `JS_RequestInterrupt` (`vendor/rquickjs-sys/CODECALL-PATCHES.md`): sets
/// the context's interrupt counter to 0 with a relaxed atomic store, so the next poll of the thread
/// running it calls the interrupt handler.
///
/// # Safety
/// `ctx` must be alive; any thread may call this.
pub(crate) unsafe fn request_interrupt(ctx: NonNull<qjs::JSContext>) {
  // SAFETY: the caller keeps `ctx` alive; the function does one relaxed atomic store into it.
  unsafe { JS_RequestInterrupt(ctx.as_ptr()) }
}

/// The QuickJS context an execution runs in, while it is alive: where a request to stop makes the
/// next poll happen now (issue 40: the deadline seen within one native step, not 10 000 branches).
struct PollTarget(NonNull<qjs::JSContext>);

// SAFETY: the pointer is only passed to `JS_RequestInterrupt`, which does one relaxed atomic store
// into the context (the running thread reads and writes that field with relaxed atomics too), and
// only under `Shared::poll`'s lock; the execution clears it under the same lock before its runtime
// is freed (`Execution`'s `Drop`), so no store reaches freed memory.
unsafe impl Send for PollTarget {}

/// Passes a hold (`true`) or its release (`false`) on to the worker process that runs the
/// execution, whose own clock must stand still too.
pub(crate) type HoldLink = Box<dyn Fn(bool) + Send + Sync>;

/// The deadline's holds (§9: a person deciding about a call does not use up the script's time).
#[derive(Default)]
struct Holds {
  /// Holds open now (approvals are asked one at a time, but a hold is counted, not assumed).
  open: u32,
  /// When the first open hold began.
  since: Option<Instant>,
  /// Time spent held so far: the deadline is that much later.
  total: Duration,
}

pub struct Shared {
  pub id: String,
  pub host: Arc<dyn Host>,
  /// The execution's time limit (`timeoutMs`), counted from its start.
  pub timeout: Duration,
  pub submitted: Instant,
  /// Start + `timeout`, set once when a worker starts the execution.
  deadline: OnceLock<Instant>,
  completed: AtomicBool,
  stop: AtomicU8,
  started: AtomicBool,
  tool_calls: AtomicU64,
  /// The worker and key that run this execution, once started: where stop requests go.
  pub(crate) link: Mutex<Option<StopLink>>,
  holds: Mutex<Holds>,
  /// Where holds go besides this clock (the process pool's worker), once started.
  pub(crate) hold_link: Mutex<Option<HoldLink>>,
  /// The execution's QuickJS context while it exists (see [`Shared::force_poll`]).
  poll: Mutex<Option<PollTarget>>,
}

impl Shared {
  pub fn new(id: String, host: Arc<dyn Host>, timeout: Duration) -> Self {
    Self {
      id,
      host,
      timeout,
      submitted: Instant::now(),
      deadline: OnceLock::new(),
      completed: AtomicBool::new(false),
      stop: AtomicU8::new(Stop::Running as u8),
      started: AtomicBool::new(false),
      tool_calls: AtomicU64::new(0),
      link: Mutex::new(None),
      holds: Mutex::new(Holds::default()),
      hold_link: Mutex::new(None),
      poll: Mutex::new(None),
    }
  }

  /// Records the context this execution runs in, until [`Shared::disarm_poll`].
  ///
  /// # Safety
  /// `ctx` must stay alive until `disarm_poll` is called.
  pub(crate) unsafe fn arm_poll(&self, ctx: NonNull<qjs::JSContext>) {
    *lock(&self.poll) = Some(PollTarget(ctx));
  }

  /// Forgets the context: called before it is freed. Waits for a [`Shared::force_poll`] under way.
  pub(crate) fn disarm_poll(&self) {
    lock(&self.poll).take();
  }

  /// Makes the thread running this execution call its interrupt handler at its next poll — the next
  /// bytecode branch, call or polling builtin — instead of after up to 10 000 branches, each of which
  /// may be a long builtin. Returns whether a context was there to poke.
  pub(crate) fn force_poll(&self) -> bool {
    let target = lock(&self.poll);
    match target.as_ref() {
      Some(t) => {
        // SAFETY: see `PollTarget`: the context is alive while it is recorded, and we hold the lock.
        unsafe { request_interrupt(t.0) };
        true
      }
      None => false,
    }
  }

  /// Stops the deadline's clock until [`Shared::release`]: time held is added to the deadline.
  pub fn hold(&self) {
    let first = {
      let mut h = lock(&self.holds);
      h.open += 1;
      if h.open == 1 {
        h.since = Some(Instant::now());
      }
      h.open == 1
    };
    if first {
      if let Some(link) = lock(&self.hold_link).as_ref() {
        link(true);
      }
    }
  }

  /// Ends one [`Shared::hold`]; the last one restarts the clock.
  pub fn release(&self) {
    let last = {
      let mut h = lock(&self.holds);
      if h.open == 0 {
        return;
      }
      h.open -= 1;
      if h.open == 0 {
        let held = h.since.take().map(|s| s.elapsed()).unwrap_or_default();
        h.total += held;
      }
      h.open == 0
    };
    if last {
      if let Some(link) = lock(&self.hold_link).as_ref() {
        link(false);
      }
    }
  }

  /// The deadline now, holds counted: `None` while held (it cannot pass), else `base` plus the time
  /// held so far.
  pub fn deadline_after(&self, base: Instant) -> Option<Instant> {
    let h = lock(&self.holds);
    if h.open > 0 {
      return None;
    }
    Some(base.checked_add(h.total).unwrap_or_else(far_future))
  }

  /// The deadline now, holds counted: `None` while held, and before the execution started.
  pub fn effective_deadline(&self) -> Option<Instant> {
    self.deadline.get().and_then(|base| self.deadline_after(*base))
  }

  /// Whether the deadline `base` (holds counted) has passed at `now`.
  pub fn past_deadline(&self, base: Instant, now: Instant) -> bool {
    self.deadline_after(base).is_some_and(|d| now >= d)
  }

  /// The time left before the deadline (holds counted); the whole timeout before the start, and
  /// while held.
  pub fn remaining(&self) -> Duration {
    match self.effective_deadline() {
      Some(d) => d.saturating_duration_since(Instant::now()),
      None => self.timeout,
    }
  }

  /// Tool calls counted so far.
  pub fn tool_calls(&self) -> u64 {
    self.tool_calls.load(Ordering::Relaxed)
  }

  pub fn stop(&self) -> Stop {
    match self.stop.load(Ordering::Acquire) {
      1 => Stop::Timeout,
      2 => Stop::Aborted,
      3 => Stop::Disposed,
      4 => Stop::QueueTimeout,
      _ => Stop::Running,
    }
  }

  /// Records a reason to stop; the first reason wins. Returns whether this call set it.
  pub fn request_stop(&self, reason: Stop) -> bool {
    let set =
      self.stop.compare_exchange(Stop::Running as u8, reason as u8, Ordering::AcqRel, Ordering::Acquire).is_ok();
    // The handler sees the reason at its next poll: make that poll now.
    self.force_poll();
    set
  }

  pub fn is_completed(&self) -> bool {
    self.completed.load(Ordering::Acquire)
  }

  /// Marks the execution started, once: returns its deadline (now + `timeout`), the one every
  /// clock of this execution uses, or `None` if it had started already.
  pub fn mark_started(&self) -> Option<Instant> {
    if self.started.swap(true, Ordering::AcqRel) {
      return None;
    }
    let deadline = Instant::now().checked_add(self.timeout).unwrap_or_else(far_future);
    Some(*self.deadline.get_or_init(|| deadline))
  }

  pub fn is_started(&self) -> bool {
    self.started.load(Ordering::Acquire)
  }

  pub fn note_tool_call(&self) {
    self.tool_calls.fetch_add(1, Ordering::Relaxed);
  }

  /// Delivers the result unless one was delivered already. Returns whether this one was.
  pub fn complete(&self, completed: Completed) -> bool {
    if self.completed.swap(true, Ordering::AcqRel) {
      return false;
    }
    self.host.complete(completed);
    true
  }

  /// Completes from outside the worker (watchdog, abort, dispose), without the worker's logs.
  pub fn complete_from_outside(&self, outcome: Outcome) -> bool {
    let stats = Stats {
      execution_id: self.id.clone(),
      duration_ms: self.submitted.elapsed().as_secs_f64() * 1000.0,
      tool_calls: self.tool_calls.load(Ordering::Relaxed),
      iterations: None,
      memory_bytes: None,
    };
    self.complete(Completed { outcome, logs: Vec::new(), stats })
  }

  /// Completes from outside with the outcome its stop reason stands for (`TIMEOUT`,
  /// `EXECUTION_ABORTED`, `POOL_DISPOSED`, `QUEUE_TIMEOUT`).
  pub fn report_stop(&self) {
    let outcome = self.stop().outcome(self.timeout).unwrap_or_else(|| Outcome::timed_out(self.timeout));
    self.complete_from_outside(outcome);
  }
}

/// The host side of the bridge: the embedding's tool pipeline (napi: the JS host object).
///
/// Implementations must never block the caller except `get_tool`, which is synchronous in the
/// script and waits at most `timeout`.
pub trait Host: Send + Sync + 'static {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>);
  fn event(&self, event: Event);
  /// The host's `getTool(name)` as JSON (`None`: unknown, or no answer in time).
  fn get_tool(&self, name: &str, timeout: Duration) -> Option<String>;
  /// `get_tool` when the answer is at hand without waiting (the engine's registry): `None` means
  /// "ask `get_tool`, which may block". A worker process's reader uses it to avoid a thread hop.
  fn get_tool_now(&self, _name: &str) -> Option<Option<String>> {
    None
  }
  /// The execution left the queue and its clock started (a worker process reports it upstream).
  fn started(&self) {}
  /// Asks a person whether a call may run (§9); `answer` gets exactly one reply, whenever it
  /// comes (the engine bounds the wait). By default the host cannot ask.
  fn approve(&self, _ask: ApprovalAsk, answer: ApprovalAnswer) {
    answer(Approval::Unavailable);
  }
  /// The execution's shared state, once it exists (before the execution is submitted): a host
  /// that holds the deadline while a person decides keeps a weak reference.
  fn attached(&self, _shared: &Arc<Shared>) {}
  /// The execution's result. Called exactly once per execution.
  fn complete(&self, completed: Completed);
}

/// How often a held deadline is looked at again (holds last as long as a person takes).
pub(crate) const HOLD_RECHECK: Duration = Duration::from_millis(50);

/// A deadline for a timeout too long to add to now: in practice never.
fn far_future() -> Instant {
  Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}
