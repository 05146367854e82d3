//! The thread pool (`isolation: 'thread'`, `api.md` §2.6) and its watchdog.
//!
//! - A small, fixed set of worker threads. Each owns the executions it started (QuickJS runtimes
//!   are not `Send`) and serves them from one channel: start, host result, stop. An execution
//!   awaiting the host is just data in its worker's map, so 10 000 of them park on two threads.
//! - New work goes to the worker with the fewest live executions. `maxQueue` bounds how many
//!   executions may wait to start (`QUEUE_FULL`), `queueTimeoutMs` how long (`QUEUE_TIMEOUT`).
//! - The watchdog owns time. At an execution's deadline it asks the worker to stop it (the
//!   interrupt handler ends running JS; a parked one is dropped) and, if the worker has not
//!   answered shortly after, reports `TIMEOUT` itself: the result is on time even when a thread is
//!   stuck inside a native builtin that never checks the interrupt. Such a thread is retired and
//!   replaced, so new work never queues behind it.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::bridge::CallResult;
use super::config::{ExecuteConfig, SandboxConfig};
use super::engine::{Engine, Execution, Job, ReplySink, Step};
use super::error::StartError;
use super::outcome::Outcome;
use super::shared::{lock, Shared, Stop, HOLD_RECHECK};
use super::timers::Timers;
use crate::common::ErrorCode;

/// Worker threads' stack: QuickJS's own limit (`maxStackBytes`, at most a few MiB) plus room for
/// the host side of every call; validation brings its own stack.
const WORKER_STACK: usize = 16 << 20;
/// How long after a deadline the watchdog waits for the worker's own report (which has the logs).
const REPORT_GRACE: Duration = Duration::from_millis(40);
/// How long past its deadline a worker may stay busy before it counts as stuck and is replaced.
const STUCK_AFTER: Duration = Duration::from_millis(500);

pub enum WorkerMsg {
  Start(Box<Job>),
  Reply { key: u64, call_id: u64, result: CallResult },
  Stop { key: u64 },
  Shutdown,
}

#[derive(Clone)]
struct WorkerSink(Sender<WorkerMsg>);

impl ReplySink for WorkerSink {
  fn reply(&self, key: u64, call_id: u64, result: CallResult) {
    // A send fails only when the worker is gone; the execution has been completed by then.
    let _ = self.0.send(WorkerMsg::Reply { key, call_id, result });
  }
}

struct Worker {
  sender: Sender<WorkerMsg>,
  /// Live executions on this worker (started or queued to start).
  load: AtomicUsize,
  /// Milliseconds since the pool's epoch until which the current work may run; 0 when idle.
  busy_until: AtomicU64,
  /// The execution the current work belongs to: a hold on its deadline (§9) is not being stuck.
  running: Mutex<Option<Arc<Shared>>>,
  retired: AtomicBool,
  thread: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
  config: Arc<SandboxConfig>,
  epoch: Instant,
  workers: Mutex<Vec<Arc<Worker>>>,
  /// Executions submitted and not yet started.
  queued: AtomicUsize,
  /// Round-robin start for picking a worker.
  cursor: AtomicUsize,
  disposed: AtomicBool,
  watchdog: Watchdog,
  /// Inside a worker process: no thread may be created once the seccomp filter is in, so a stuck
  /// thread is only set aside (the host kills the process), and only the thread running an
  /// execution reports it (the host reports a stuck one itself, and then kills the process).
  in_worker_process: bool,
}

/// The pool behind one `Sandbox`.
pub struct Pool {
  inner: Arc<Inner>,
  watchdog_thread: Option<JoinHandle<()>>,
}

impl Pool {
  pub fn new(config: Arc<SandboxConfig>) -> Result<Self, StartError> {
    Self::create(config, false)
  }

  /// The pool of a worker process (`process/worker.rs`): every thread is started here, none later.
  pub fn for_worker_process(config: Arc<SandboxConfig>) -> Result<Self, StartError> {
    Self::create(config, true)
  }

  fn create(config: Arc<SandboxConfig>, in_worker_process: bool) -> Result<Self, StartError> {
    let inner = Arc::new(Inner {
      config: config.clone(),
      epoch: Instant::now(),
      workers: Mutex::new(Vec::new()),
      queued: AtomicUsize::new(0),
      cursor: AtomicUsize::new(0),
      disposed: AtomicBool::new(false),
      watchdog: Watchdog::default(),
      in_worker_process,
    });
    for _ in 0..config.pool_size.max(1) {
      let worker = spawn_worker(&inner)?;
      lock(&inner.workers).push(worker);
    }
    let weak = Arc::downgrade(&inner);
    let (running, is_running) = channel::<()>();
    let watchdog_thread = std::thread::Builder::new()
      .name("codecall-watchdog".into())
      .spawn(move || {
        let _ = running.send(());
        watchdog_loop(weak)
      })
      .map_err(|e| StartError::Thread("the watchdog thread", e))?;
    if in_worker_process {
      // A thread makes system calls of its own start-up (rseq, robust list, signal stack, name)
      // after `spawn` returns: the worker installs its seccomp filter only once this one is running.
      // (The executor threads are proven running by the worker's warm-up executions.)
      let _ = is_running.recv_timeout(Duration::from_secs(10));
    }
    Ok(Self { inner, watchdog_thread: Some(watchdog_thread) })
  }

  /// Queues a script. The result arrives through `shared.host.complete`, exactly once.
  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    let inner = &self.inner;
    if inner.disposed.load(Ordering::Acquire) {
      shared.complete_from_outside(Outcome::sandbox(ErrorCode::PoolDisposed, "The sandbox has been disposed"));
      return;
    }
    if inner.queued.load(Ordering::Acquire) >= inner.config.max_queue {
      shared.complete_from_outside(Outcome::sandbox(
        ErrorCode::QueueFull,
        format!("More than {} executions are waiting to start (maxQueue)", inner.config.max_queue),
      ));
      return;
    }
    let Some(worker) = least_loaded(inner) else {
      shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerStartupFailed, "No worker thread is available"));
      return;
    };
    inner.queued.fetch_add(1, Ordering::AcqRel);
    worker.load.fetch_add(1, Ordering::AcqRel);
    inner.watchdog.add(
      shared.submitted + Duration::from_millis(inner.config.queue_timeout_ms),
      Timer::Queue,
      shared.clone(),
    );
    let job = Job { script, sandbox: inner.config.clone(), exec: Arc::new(exec), shared };
    if let Err(failed) = worker.sender.send(WorkerMsg::Start(Box::new(job))) {
      inner.queued.fetch_sub(1, Ordering::AcqRel);
      if let WorkerMsg::Start(job) = failed.0 {
        job.shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerCrashed, "The worker thread is gone"));
      }
    }
  }

  /// A handle that stops executions of this pool (their `AbortSignal` fired), from any thread.
  pub fn aborter(&self) -> Aborter {
    Aborter(Arc::downgrade(&self.inner))
  }

  /// How many executions wait to start, while the pool lives (telemetry's queue gauge).
  pub fn queue_probe(&self) -> impl Fn() -> Option<usize> + Send + 'static {
    let inner = Arc::downgrade(&self.inner);
    move || inner.upgrade().filter(|i| !i.disposed.load(Ordering::Acquire)).map(|i| i.queued.load(Ordering::Acquire))
  }

  /// Ends every queued and running execution with `POOL_DISPOSED` and stops the threads.
  /// Returns the threads to join (joining may wait for a thread stuck in a builtin).
  pub fn dispose(&mut self) -> Vec<JoinHandle<()>> {
    let inner = &self.inner;
    if inner.disposed.swap(true, Ordering::AcqRel) {
      return Vec::new();
    }
    for shared in inner.watchdog.drain() {
      if shared.request_stop(Stop::Disposed) {
        shared.report_stop();
      }
    }
    let mut threads = Vec::new();
    for worker in lock(&inner.workers).drain(..) {
      let _ = worker.sender.send(WorkerMsg::Shutdown);
      if let Some(thread) = lock(&worker.thread).take() {
        threads.push(thread);
      }
    }
    inner.watchdog.shutdown();
    if let Some(thread) = self.watchdog_thread.take() {
      threads.push(thread);
    }
    threads
  }

  pub fn is_disposed(&self) -> bool {
    self.inner.disposed.load(Ordering::Acquire)
  }
}

/// Stops single executions; does not keep the pool alive.
#[derive(Clone)]
pub struct Aborter(Weak<Inner>);

impl Aborter {
  pub fn abort(&self, shared: &Arc<Shared>) {
    if !shared.request_stop(Stop::Aborted) {
      return;
    }
    match self.0.upgrade() {
      Some(inner) => stop_execution(&inner, shared),
      None => shared.report_stop(),
    }
  }
}

impl Drop for Pool {
  fn drop(&mut self) {
    // Without an explicit dispose, threads are told to stop but not waited for.
    drop(self.dispose());
  }
}

/// The worker with the fewest live executions; ties go round-robin, so that back-to-back
/// executions alternate and each worker prepares its next context while the other runs.
fn least_loaded(inner: &Inner) -> Option<Arc<Worker>> {
  let workers = lock(&inner.workers);
  let n = workers.len();
  if n == 0 {
    return None;
  }
  let start = inner.cursor.fetch_add(1, Ordering::Relaxed);
  (0..n)
    .map(|i| &workers[(start + i) % n])
    .filter(|w| !w.retired.load(Ordering::Acquire))
    .min_by_key(|w| w.load.load(Ordering::Acquire))
    .cloned()
}

fn spawn_worker(inner: &Arc<Inner>) -> Result<Arc<Worker>, StartError> {
  let (sender, receiver) = channel();
  let worker = Arc::new(Worker {
    sender: sender.clone(),
    load: AtomicUsize::new(0),
    busy_until: AtomicU64::new(0),
    running: Mutex::new(None),
    retired: AtomicBool::new(false),
    thread: Mutex::new(None),
  });
  let weak_inner = Arc::downgrade(inner);
  let me = Arc::downgrade(&worker);
  let thread = std::thread::Builder::new()
    .name("codecall-worker".into())
    .stack_size(WORKER_STACK)
    .spawn(move || worker_loop(receiver, sender, me, weak_inner))
    .map_err(|e| StartError::Thread("a worker thread", e))?;
  *lock(&worker.thread) = Some(thread);
  Ok(worker)
}

/// One execution fewer lives on this worker.
fn release_load(me: &Weak<Worker>) {
  if let Some(w) = me.upgrade() {
    w.load.fetch_sub(1, Ordering::AcqRel);
  }
}

fn worker_loop(receiver: Receiver<WorkerMsg>, sender: Sender<WorkerMsg>, me: Weak<Worker>, inner: Weak<Inner>) {
  let mut engine = match Engine::new() {
    Ok(engine) => engine,
    Err(message) => {
      // Nothing can run here: answer every start with WORKER_STARTUP_FAILED.
      while let Ok(msg) = receiver.recv() {
        match msg {
          WorkerMsg::Start(job) => {
            job.shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerStartupFailed, message.to_string()));
          }
          WorkerMsg::Shutdown => return,
          _ => {}
        }
      }
      return;
    }
  };
  let sink = WorkerSink(sender);
  let mut executions: HashMap<u64, (Execution, Arc<Shared>)> = HashMap::new();
  let mut next_key: u64 = 0;
  let finish = |shared: &Arc<Shared>, completed, me: &Weak<Worker>| {
    shared.complete(completed);
    release_load(me);
  };

  let config = match inner.upgrade() {
    Some(pool) => pool.config.clone(),
    None => return,
  };
  let mut spare_failed = false;
  loop {
    let msg = match receiver.try_recv() {
      Ok(msg) => Some(msg),
      Err(std::sync::mpsc::TryRecvError::Disconnected) => None,
      Err(std::sync::mpsc::TryRecvError::Empty) => {
        // Idle: prepare the next execution's context first, off every execution's clock (once:
        // if it cannot be made now, the next execution makes its own and reports why).
        if !engine.has_spare() && !spare_failed {
          let _ = catch_unwind(AssertUnwindSafe(|| engine.prepare_spare(&config)));
          spare_failed = !engine.has_spare();
          continue;
        }
        // With one or two executions awaiting the host, the answer is usually microseconds
        // away: poll briefly before sleeping, because waking a sleeping thread costs more than
        // the call. With many parked, answers keep arriving anyway, and polling would only take
        // CPU from Node's thread, which is running the host's tools.
        if executions.is_empty() || executions.len() > SPIN_MAX_PARKED {
          receiver.recv().ok()
        } else {
          receive_soon(&receiver)
        }
      }
    };
    let Some(msg) = msg else { break };
    let Some(pool) = inner.upgrade() else { break };
    let busy = |deadline: Option<Instant>, shared: &Arc<Shared>| {
      if let Some(w) = me.upgrade() {
        // `None`: held (a person decides about a call); the watchdog asks `running` again.
        let until = deadline.map_or(u64::MAX / 2, |d| d.saturating_duration_since(pool.epoch).as_millis() as u64);
        *lock(&w.running) = Some(shared.clone());
        w.busy_until.store(until.max(1), Ordering::Release);
      }
    };
    match msg {
      WorkerMsg::Start(job) => {
        pool.queued.fetch_sub(1, Ordering::AcqRel);
        spare_failed = false;
        let shared = job.shared.clone();
        if shared.stop() != Stop::Running || shared.is_completed() {
          release_load(&me);
          continue;
        }
        let deadline = match shared.mark_started() {
          Some(deadline) => deadline,
          None => {
            release_load(&me);
            continue;
          }
        };
        shared.host.started();
        pool.watchdog.add(deadline, Timer::Deadline, shared.clone());
        next_key += 1;
        let key = next_key;
        let worker = sink.0.clone();
        *lock(&shared.link) = Some(Box::new(move || worker.send(WorkerMsg::Stop { key }).is_ok()));
        busy(Some(deadline), &shared);
        let started =
          catch_unwind(AssertUnwindSafe(|| Execution::start(&mut engine, *job, deadline, key, sink.clone())));
        match started {
          Ok(Ok((execution, Step::Parked))) => {
            executions.insert(key, (execution, shared));
          }
          Ok(Ok((execution, Step::Done(completed)))) => {
            finish(&shared, completed, &me);
            drop(execution);
          }
          Ok(Err(completed)) => finish(&shared, *completed, &me),
          Err(_) => {
            shared.complete_from_outside(crashed());
            release_load(&me);
          }
        }
      }
      WorkerMsg::Reply { key, call_id, result } => {
        let step = match executions.get_mut(&key) {
          Some((execution, shared)) => {
            busy(execution.deadline(), shared);
            catch_unwind(AssertUnwindSafe(|| execution.resume(call_id, result)))
              .unwrap_or_else(|_| Step::Done(crashed_completed()))
          }
          None => continue,
        };
        if let Step::Done(completed) = step {
          if let Some((execution, shared)) = executions.remove(&key) {
            finish(&shared, completed, &me);
            drop(execution);
          }
        }
      }
      WorkerMsg::Stop { key } => {
        if let Some((mut execution, shared)) = executions.remove(&key) {
          let completed =
            catch_unwind(AssertUnwindSafe(|| execution.stopped())).unwrap_or_else(|_| crashed_completed());
          finish(&shared, completed, &me);
          drop(execution);
        }
      }
      WorkerMsg::Shutdown => break,
    }
    if let Some(w) = me.upgrade() {
      w.busy_until.store(0, Ordering::Release);
      *lock(&w.running) = None;
      if w.retired.load(Ordering::Acquire) && executions.is_empty() {
        break;
      }
    }
  }
  for (_, (mut execution, shared)) in executions.drain() {
    if !shared.is_completed() {
      shared.request_stop(Stop::Disposed);
      let completed = execution.stopped();
      shared.complete(completed);
    }
  }
}

/// How long an idle worker with parked executions polls before it blocks.
const SPIN: Duration = Duration::from_micros(200);
/// Above this many parked executions a worker does not poll.
const SPIN_MAX_PARKED: usize = 2;

fn receive_soon(receiver: &Receiver<WorkerMsg>) -> Option<WorkerMsg> {
  let start = Instant::now();
  loop {
    match receiver.try_recv() {
      Ok(msg) => return Some(msg),
      Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
      Err(std::sync::mpsc::TryRecvError::Empty) => {
        if start.elapsed() > SPIN {
          return receiver.recv().ok();
        }
        std::thread::yield_now();
      }
    }
  }
}

/// A bug in the sandbox itself surfaced as a panic while running this execution.
fn crashed() -> Outcome {
  Outcome::sandbox(ErrorCode::WorkerCrashed, "The sandbox failed while running this execution (internal error)")
}

fn crashed_completed() -> super::outcome::Completed {
  super::outcome::Completed { outcome: crashed(), logs: Vec::new(), stats: Default::default() }
}

/// Asks the execution's worker to stop it now; if it cannot report in time, the watchdog will.
fn stop_execution(inner: &Arc<Inner>, shared: &Arc<Shared>) {
  let asked = lock(&shared.link).as_ref().map(|ask| ask());
  match asked {
    Some(_) => {
      if !inner.in_worker_process {
        inner.watchdog.add(Instant::now() + REPORT_GRACE, Timer::Report, shared.clone());
      }
    }
    // Not started yet: nothing runs, report now.
    None => shared.report_stop(),
  }
}

// ---- watchdog ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
  /// Still not started at `queueTimeoutMs`.
  Queue,
  /// `timeoutMs` reached.
  Deadline,
  /// The worker was asked to stop the execution and had time to report.
  Report,
}

#[derive(Default)]
struct WatchdogState {
  timers: Timers<(Timer, Arc<Shared>)>,
  shutdown: bool,
}

#[derive(Default)]
struct Watchdog {
  state: Mutex<WatchdogState>,
  wake: Condvar,
}

impl Watchdog {
  fn add(&self, at: Instant, timer: Timer, shared: Arc<Shared>) {
    if lock(&self.state).timers.add(at, (timer, shared)) {
      self.wake.notify_one();
    }
  }

  /// Every execution that still has a timer, i.e. every one that may not have finished.
  fn drain(&self) -> Vec<Arc<Shared>> {
    let mut guard = lock(&self.state);
    let mut out: Vec<Arc<Shared>> = Vec::new();
    for (_, shared) in guard.timers.drain() {
      if !shared.is_completed() && !out.iter().any(|s| Arc::ptr_eq(s, &shared)) {
        out.push(shared);
      }
    }
    out
  }

  fn shutdown(&self) {
    lock(&self.state).shutdown = true;
    self.wake.notify_all();
  }
}

/// How often the watchdog looks for stuck workers when no timer is due sooner.
const STUCK_CHECK: Duration = Duration::from_millis(100);

fn watchdog_loop(inner: Weak<Inner>) {
  loop {
    let Some(pool) = inner.upgrade() else { return };
    let due = {
      let mut guard = lock(&pool.watchdog.state);
      if guard.shutdown {
        return;
      }
      let now = Instant::now();
      let next = guard.timers.next();
      if next.is_none_or(|at| at > now) {
        let wait = next.map_or(STUCK_CHECK, |at| at.saturating_duration_since(now)).min(STUCK_CHECK);
        let (g, _) = pool.watchdog.wake.wait_timeout(guard, wait).unwrap_or_else(|p| p.into_inner());
        guard = g;
        if guard.shutdown {
          return;
        }
      }
      guard.timers.pop_due(Instant::now())
    };
    for (timer, shared) in due {
      let shared = &shared;
      if shared.is_completed() {
        continue;
      }
      match timer {
        Timer::Queue => {
          if !shared.is_started() && shared.request_stop(Stop::QueueTimeout) {
            shared.report_stop();
          }
        }
        Timer::Deadline => {
          // A hold (a person deciding about a call, §9) moved the deadline or holds it still.
          let now = Instant::now();
          match shared.effective_deadline() {
            None => pool.watchdog.add(now + HOLD_RECHECK, Timer::Deadline, shared.clone()),
            Some(deadline) if deadline > now => pool.watchdog.add(deadline, Timer::Deadline, shared.clone()),
            Some(_) => {
              shared.request_stop(Stop::Timeout);
              stop_execution(&pool, shared);
            }
          }
        }
        Timer::Report => shared.report_stop(),
      }
    }
    replace_stuck_workers(&pool);
  }
}

/// A worker busy well past the deadline of what it runs is stuck in native code: it takes no new
/// work, a fresh thread takes its place, and it exits on its own if it ever returns.
fn replace_stuck_workers(pool: &Arc<Inner>) {
  if pool.disposed.load(Ordering::Acquire) {
    return;
  }
  let now = pool.epoch.elapsed().as_millis() as u64;
  let stuck: Vec<Arc<Worker>> = lock(&pool.workers)
    .iter()
    .filter(|w| {
      let until = w.busy_until.load(Ordering::Acquire);
      let past = until != 0 && now > until.saturating_add(STUCK_AFTER.as_millis() as u64);
      // Past the deadline it started with — unless a hold moved it (a person decided about a call
      // meanwhile, §9) or holds it still.
      let moved = || {
        lock(&w.running).as_ref().is_some_and(|s| {
          s.effective_deadline()
            .is_none_or(|d| d.saturating_duration_since(pool.epoch) + STUCK_AFTER > pool.epoch.elapsed())
        })
      };
      past && !w.retired.load(Ordering::Acquire) && !moved()
    })
    .cloned()
    .collect();
  for worker in stuck {
    worker.retired.store(true, Ordering::Release);
    if pool.in_worker_process {
      continue;
    }
    if let Ok(fresh) = spawn_worker(pool) {
      let mut workers = lock(&pool.workers);
      workers.retain(|w| !Arc::ptr_eq(w, &worker));
      workers.push(fresh);
    }
    // Its thread is detached: joining could wait for as long as the builtin runs.
    drop(lock(&worker.thread).take());
  }
}
