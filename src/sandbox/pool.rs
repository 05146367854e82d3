//! The thread pool (`isolation: 'thread'`, and inside each worker process, `api.md` §2.6) and its
//! watchdog.
//!
//! - **The execution, not the thread, is what the pool schedules.** Every execution is a `Slot`
//!   owned by the pool: queued to start, running on some thread, or parked awaiting the host (then
//!   it is just data in its slot, so 10 000 of them park on two threads). An execution that is
//!   ready to run — started, or a host answer arrived — goes to one ready queue that every thread
//!   serves: it runs on whichever thread is free, never behind another execution's CPU on "its"
//!   thread. A QuickJS runtime moves between threads whole (`Movable`); each slice of it first
//!   points QuickJS's stack check at the thread it now runs on.
//! - At most `poolSize` executions run at once (the permits of the queue). `maxQueue` bounds how
//!   many may wait to start (`QUEUE_FULL`), `queueTimeoutMs` how long (`QUEUE_TIMEOUT`).
//! - The watchdog owns time. At an execution's deadline it asks for the execution to stop (the
//!   interrupt handler ends running JS; a parked one is woken and ends) and, if nothing answered
//!   shortly after, reports `TIMEOUT` itself: the result is on time even when a thread is stuck
//!   inside a native builtin that does not poll the interrupt.
//! - **A stuck thread holds only its own execution.** A thread busy `STUCK_AFTER` past the deadline
//!   of what it runs is set aside: it gives back its permit, so a free thread takes the ready
//!   executions, and it leaves the pool when its builtin returns. In this process a fresh thread
//!   takes its place (at most `max_set_aside` are set aside at once; past that a warning says so
//!   and ready executions wait for a thread). A worker process cannot start threads once its
//!   seccomp filter is in: it starts `RESERVE` spare threads up front, and a set-aside thread
//!   rejoins as a spare when it returns; its host stops giving it work and kills it once its other
//!   executions have ended (`process/pool.rs`).

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::bridge::CallResult;
use super::config::{ExecuteConfig, SandboxConfig};
use super::engine::{Engine, Execution, Job, ReplySink, Step};
use super::error::StartError;
use super::outcome::{Completed, Outcome};
use super::shared::{lock, Shared, Stop, HOLD_RECHECK};
use super::timers::Timers;
use super::warnings::Warnings;
use crate::common::ErrorCode;

/// Worker threads' stack: QuickJS's own limit (`maxStackBytes`, at most a few MiB) plus room for
/// the host side of every call; validation brings its own stack.
const WORKER_STACK: usize = 16 << 20;
/// How long after a deadline the watchdog waits for the execution's own report (which has the logs).
const REPORT_GRACE: Duration = Duration::from_millis(40);
/// How long past its execution's deadline a thread may stay busy before it is set aside. The
/// interrupt stops bytecode within microseconds and the patched builtins within milliseconds, so
/// a thread still busy by then is in native code that does not poll.
const STUCK_AFTER: Duration = Duration::from_millis(100);
/// How often, after a deadline, the request that the stopped execution's next poll happen now is
/// repeated while it still runs (a request can be lost to the running thread's own decrement of
/// the counter, in a window of one instruction), and for how long.
const REPOLL_EVERY: Duration = Duration::from_millis(5);
const REPOLL_FOR: Duration = Duration::from_secs(2);
/// Spare threads a worker process starts up front, for the threads it may have to set aside.
pub const RESERVE: usize = 4;

/// One execution's runtime, moved whole between the pool's threads.
struct Movable<T>(T);

// SAFETY: an `Execution` is not `Send` only because of what it owns: a QuickJS runtime and
// context (rquickjs without `parallel`: `Rc`-counted handles and raw pointers), `Persistent`
// handles into that runtime, and `Rc`/`Cell` state shared with the native functions installed in
// that same context. Every one of those `Rc`s, handles and pointers is reachable only from inside
// this execution: nothing outside it (the engine of the thread that started it, other executions,
// the host) keeps a clone or a pointer into its runtime — the host side holds only `Arc`s (`Shared`,
// the reply sink's `Weak`s). The whole graph moves at once, inside its slot's mutex, and exactly
// one thread touches it at a time (the one that took it out of the slot), so no non-atomic count
// is ever touched from two threads. QuickJS keeps no thread-local state of a runtime; its one
// thread-bound value, the stack top its stack-overflow check reads, is reset on the thread that
// runs each slice (`Execution::enter_thread`) before any JS runs.
unsafe impl Send for Movable<Execution> {}

/// A unit of work in the ready queue.
enum Task {
  Start(Box<Job>, Arc<Slot>),
  Run(Arc<Slot>),
}

/// One execution of this pool, wherever it is.
struct Slot {
  key: u64,
  shared: Arc<Shared>,
  st: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
  /// The runtime while it is parked; `None` before it starts, while a thread runs it, and after.
  execution: Option<Movable<Execution>>,
  /// Host answers that arrived since it last ran.
  inbox: Vec<(u64, CallResult)>,
  /// Run it again even with an empty inbox (a request to stop).
  poke: bool,
  /// In the ready queue or on a thread: a new answer needs no new task. False exactly while it
  /// is parked.
  scheduled: bool,
  done: bool,
}

/// Host answers go straight to their execution's slot.
#[derive(Clone)]
struct SlotSink {
  slot: Weak<Slot>,
  pool: Weak<Inner>,
}

impl ReplySink for SlotSink {
  fn reply(&self, call_id: u64, result: CallResult) {
    // Either is gone only once the execution has been completed.
    if let (Some(slot), Some(pool)) = (self.slot.upgrade(), self.pool.upgrade()) {
      wake(&pool, &slot, Some((call_id, result)));
    }
  }
}

/// The ready queue, with the permits that bound how many executions run at once.
struct Queue {
  tasks: VecDeque<Task>,
  /// Tasks being run by threads that hold a permit (set-aside threads hold none).
  active: usize,
  /// Threads set aside and not yet returned.
  set_aside: usize,
  /// Idle threads polling `waiting` before they sleep: a new task needs no wake-up then.
  spinning: usize,
  /// Idle threads asleep on `warm` (they hold a prepared context) and on `ready` (they do not).
  warm_waiting: usize,
  cold_waiting: usize,
  shutdown: bool,
}

/// One thread of the pool, as the watchdog sees it.
struct Thread {
  /// Milliseconds since the pool's epoch until which the current slice may run; 0 when idle.
  busy_until: AtomicU64,
  /// The execution the current slice belongs to: a hold on its deadline (§9) is not being stuck.
  running: Mutex<Option<Arc<Shared>>>,
  /// Set aside by the watchdog (changed under the queue's lock).
  set_aside: AtomicBool,
  handle: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
  config: Arc<SandboxConfig>,
  epoch: Instant,
  queue: Mutex<Queue>,
  /// Where idle threads without a prepared context sleep; `warm`, those with one: a start goes
  /// to a thread that has its context ready (made on that thread, so its memory is that
  /// thread's), an answer to any other first.
  ready: Condvar,
  warm: Condvar,
  /// Tasks in the queue, readable without its lock (idle threads poll it briefly before sleeping).
  waiting: AtomicUsize,
  /// Executions submitted and not yet started.
  queued: AtomicUsize,
  /// Prepared contexts held by idle threads, or being made: at most `poolSize` (a worker's spare
  /// threads hold none until they start something).
  spares: AtomicUsize,
  /// Every execution not yet done, by key: parked runtimes live here.
  slots: Mutex<HashMap<u64, Arc<Slot>>>,
  next_key: AtomicU64,
  threads: Mutex<Vec<Arc<Thread>>>,
  disposed: AtomicBool,
  watchdog: Watchdog,
  /// Inside a worker process: no thread may be created once the seccomp filter is in, so the
  /// spares are started up front, and only the thread running an execution reports it (the host
  /// reports a stuck one itself, and then retires the process).
  in_worker_process: bool,
  /// How many executions run at once (`poolSize`), and prepared contexts are kept at most.
  permits: usize,
  /// At most this many threads are set aside at once; past it ready executions wait for a thread.
  max_set_aside: usize,
  warnings: Option<Arc<Mutex<Warnings>>>,
}

/// The pool behind one `Sandbox`.
pub struct Pool {
  inner: Arc<Inner>,
  watchdog_thread: Option<JoinHandle<()>>,
}

impl Pool {
  pub fn new(config: Arc<SandboxConfig>) -> Result<Self, StartError> {
    Self::create(config, false, None)
  }

  /// A sandbox's pool, whose warnings (threads set aside past the limit) go to `warnings`.
  pub fn reporting_to(config: Arc<SandboxConfig>, warnings: Arc<Mutex<Warnings>>) -> Result<Self, StartError> {
    Self::create(config, false, Some(warnings))
  }

  /// The pool of a worker process (`process/worker.rs`): every thread is started here, none later.
  pub fn for_worker_process(config: Arc<SandboxConfig>) -> Result<Self, StartError> {
    Self::create(config, true, None)
  }

  fn create(
    config: Arc<SandboxConfig>,
    in_worker_process: bool,
    warnings: Option<Arc<Mutex<Warnings>>>,
  ) -> Result<Self, StartError> {
    let permits = config.pool_size.max(1);
    let threads = if in_worker_process { permits + RESERVE } else { permits };
    let inner = Arc::new(Inner {
      config,
      epoch: Instant::now(),
      queue: Mutex::new(Queue {
        tasks: VecDeque::new(),
        active: 0,
        set_aside: 0,
        spinning: 0,
        warm_waiting: 0,
        cold_waiting: 0,
        shutdown: false,
      }),
      ready: Condvar::new(),
      warm: Condvar::new(),
      waiting: AtomicUsize::new(0),
      queued: AtomicUsize::new(0),
      spares: AtomicUsize::new(0),
      slots: Mutex::new(HashMap::new()),
      next_key: AtomicU64::new(0),
      threads: Mutex::new(Vec::new()),
      disposed: AtomicBool::new(false),
      watchdog: Watchdog::default(),
      in_worker_process,
      permits,
      max_set_aside: if in_worker_process { RESERVE } else { permits.max(4) },
      warnings,
    });
    // The pool exists before its first thread: if a later thread cannot start, dropping it
    // tells the ones already running to leave.
    let mut pool = Self { inner, watchdog_thread: None };
    let (started, all_started) = std::sync::mpsc::channel::<()>();
    for _ in 0..threads {
      spawn_thread(&pool.inner, Some(started.clone()))?;
    }
    drop(started);
    let weak = Arc::downgrade(&pool.inner);
    let (running, is_running) = std::sync::mpsc::channel::<()>();
    let watchdog_thread = std::thread::Builder::new()
      .name("codecall-watchdog".into())
      .spawn(move || {
        let _ = running.send(());
        watchdog_loop(weak)
      })
      .map_err(|e| StartError::Thread("the watchdog thread", e))?;
    pool.watchdog_thread = Some(watchdog_thread);
    if in_worker_process {
      // A thread makes system calls of its own start-up (rseq, robust list, signal stack, name,
      // its engine's first runtime) after `spawn` returns: the worker installs its seccomp filter
      // only once every thread has made its engine and a prepared context.
      let _ = is_running.recv_timeout(Duration::from_secs(10));
      for _ in 0..threads {
        let _ = all_started.recv_timeout(Duration::from_secs(10));
      }
    }
    Ok(pool)
  }

  /// Queues a script. The result arrives through `shared.host.complete`, exactly once.
  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    submit_to(&self.inner, script, exec, shared);
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
      // Its reason may be set already (a timeout or abort whose `Report` timer was just drained):
      // the first reason stands, and it is reported now, not when a stuck builtin returns.
      shared.request_stop(Stop::Disposed);
      shared.report_stop();
    }
    // Parked runtimes are woken, so that the threads end and free them before they leave.
    let slots: Vec<Arc<Slot>> = lock(&inner.slots).values().cloned().collect();
    for slot in &slots {
      slot.shared.request_stop(Stop::Disposed);
      wake(inner, slot, None);
    }
    lock(&inner.queue).shutdown = true;
    inner.ready.notify_all();
    inner.warm.notify_all();
    let mut threads = Vec::new();
    for thread in lock(&inner.threads).drain(..) {
      if let Some(handle) = lock(&thread.handle).take() {
        threads.push(handle);
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
  /// `Pool::submit` from any thread; `POOL_DISPOSED` once the pool is gone.
  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    match self.0.upgrade() {
      Some(inner) => submit_to(&inner, script, exec, shared),
      None => {
        shared.complete_from_outside(Outcome::sandbox(ErrorCode::PoolDisposed, "The sandbox has been disposed"));
      }
    }
  }

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

/// See `Pool::submit`.
fn submit_to(inner: &Arc<Inner>, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
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
  inner.queued.fetch_add(1, Ordering::AcqRel);
  inner.watchdog.add(
    shared.submitted + Duration::from_millis(inner.config.queue_timeout_ms),
    Timer::Queue,
    shared.clone(),
  );
  let key = inner.next_key.fetch_add(1, Ordering::Relaxed) + 1;
  let slot = Arc::new(Slot {
    key,
    shared: shared.clone(),
    st: Mutex::new(SlotState { scheduled: true, ..SlotState::default() }),
  });
  lock(&inner.slots).insert(key, slot.clone());
  let job = Job { script, sandbox: inner.config.clone(), exec: Arc::new(exec), shared };
  push(inner, Task::Start(Box::new(job), slot));
}

impl Drop for Pool {
  fn drop(&mut self) {
    // Without an explicit dispose, threads are told to stop but not waited for.
    drop(self.dispose());
  }
}

fn push(inner: &Inner, task: Task) {
  let mut q = lock(&inner.queue);
  q.tasks.push_back(task);
  inner.waiting.store(q.tasks.len(), Ordering::Release);
  // A polling thread looks at the queue again under this lock before it sleeps.
  if q.spinning == 0 {
    signal(inner, &q);
  }
}

/// Wakes the idle thread best placed for the task at the front: a start, one with a prepared
/// context; anything else, one without (it has nothing better to keep).
fn signal(inner: &Inner, q: &Queue) {
  let start = matches!(q.tasks.front(), Some(Task::Start(..)));
  let warm = if start { q.warm_waiting > 0 } else { q.cold_waiting == 0 };
  if warm {
    inner.warm.notify_one();
  } else {
    inner.ready.notify_one();
  }
}

/// An answer arrived for a slot (`Some`), or it must look at its stop reason (`None`): a parked
/// execution becomes ready; one on a thread finds it in its inbox before it parks again.
fn wake(inner: &Inner, slot: &Arc<Slot>, reply: Option<(u64, CallResult)>) {
  let mut st = lock(&slot.st);
  if st.done {
    return;
  }
  match reply {
    Some(answer) => st.inbox.push(answer),
    None => st.poke = true,
  }
  if st.scheduled {
    return;
  }
  st.scheduled = true;
  drop(st);
  push(inner, Task::Run(slot.clone()));
}

fn spawn_thread(inner: &Arc<Inner>, started: Option<std::sync::mpsc::Sender<()>>) -> Result<(), StartError> {
  let thread = Arc::new(Thread {
    busy_until: AtomicU64::new(0),
    running: Mutex::new(None),
    set_aside: AtomicBool::new(false),
    handle: Mutex::new(None),
  });
  let weak_inner = Arc::downgrade(inner);
  let me = thread.clone();
  let spawned = std::thread::Builder::new()
    .name("codecall-worker".into())
    .stack_size(WORKER_STACK)
    .spawn(move || thread_loop(me, weak_inner, started));
  match spawned {
    Ok(handle) => {
      *lock(&thread.handle) = Some(handle);
      lock(&inner.threads).push(thread);
      Ok(())
    }
    Err(e) => Err(StartError::Thread("a worker thread", e)),
  }
}

/// Takes one of the `poolSize` places for a prepared context (an execution on a thread that has
/// none makes its own).
fn claim_spare(inner: &Inner) -> bool {
  inner.spares.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < inner.permits).then_some(n + 1)).is_ok()
}

/// Prepares the next execution's context on this thread's engine, in a place `claim_spare` took.
/// Whether it could.
fn prepare_spare(inner: &Inner, engine: &mut Engine) -> bool {
  let _ = catch_unwind(AssertUnwindSafe(|| engine.prepare_spare(&inner.config)));
  if !engine.has_spare() {
    inner.spares.fetch_sub(1, Ordering::AcqRel);
  }
  engine.has_spare()
}

/// How long an idle thread polls for the next task before it sleeps, when a few executions are
/// parked: their answers are usually microseconds away, and waking a sleeping thread costs more
/// than the call. With many parked, answers keep arriving anyway, and polling would only take
/// CPU from Node's thread, which is running the host's tools.
const SPIN: Duration = Duration::from_micros(200);
/// Above this many parked executions an idle thread does not poll.
const SPIN_MAX_PARKED: usize = 2;

/// What one thread does with the next task; `None` when it must leave the pool.
fn next_task(inner: &Inner, engine: &mut Option<Engine>, spare_failed: &mut bool) -> Option<Task> {
  let permits = inner.permits;
  let mut q = lock(&inner.queue);
  loop {
    // A start waits for a thread with its context ready, if one is asleep (it was signalled);
    // this one makes its own context meanwhile.
    let cold = !engine.as_ref().is_some_and(Engine::has_spare);
    let leave = cold && q.warm_waiting > 0 && matches!(q.tasks.front(), Some(Task::Start(..)));
    if leave {
      signal(inner, &q);
    }
    if !q.tasks.is_empty() && q.active < permits && !leave {
      q.active += 1;
      let task = q.tasks.pop_front();
      inner.waiting.store(q.tasks.len(), Ordering::Release);
      if !q.tasks.is_empty() && q.active < permits {
        signal(inner, &q);
      }
      return task;
    }
    if q.shutdown && q.tasks.is_empty() {
      return None;
    }
    // Idle: prepare the next execution's context first, off every execution's clock (once: if it
    // cannot be made now, the next execution makes its own and reports why).
    if let Some(engine) = engine.as_mut() {
      if !engine.has_spare() && !*spare_failed && claim_spare(inner) {
        drop(q);
        *spare_failed = !prepare_spare(inner, engine);
        q = lock(&inner.queue);
        continue;
      }
    }
    let parked = lock(&inner.slots).len().saturating_sub(q.active);
    if q.tasks.is_empty() && q.spinning == 0 && (1..=SPIN_MAX_PARKED).contains(&parked) {
      q.spinning += 1;
      drop(q);
      let start = Instant::now();
      while inner.waiting.load(Ordering::Acquire) == 0 && start.elapsed() < SPIN {
        std::thread::yield_now();
      }
      q = lock(&inner.queue);
      q.spinning -= 1;
      if !q.tasks.is_empty() {
        continue;
      }
    }
    if engine.as_ref().is_some_and(Engine::has_spare) {
      q.warm_waiting += 1;
      q = inner.warm.wait(q).unwrap_or_else(|p| p.into_inner());
      q.warm_waiting -= 1;
    } else {
      q.cold_waiting += 1;
      q = inner.ready.wait(q).unwrap_or_else(|p| p.into_inner());
      q.cold_waiting -= 1;
    }
  }
}

fn thread_loop(me: Arc<Thread>, inner: Weak<Inner>, started: Option<std::sync::mpsc::Sender<()>>) {
  // Without an engine nothing can start here; executions already started still run.
  let (mut engine, startup_error) = match (Engine::new(), inner.upgrade()) {
    (Ok(mut engine), Some(pool)) => {
      if started.is_some() && claim_spare(&pool) {
        prepare_spare(&pool, &mut engine);
      }
      (Some(engine), None)
    }
    (Ok(engine), None) => (Some(engine), None),
    (Err(message), _) => (None, Some(message.to_string())),
  };
  if let Some(started) = started {
    let _ = started.send(());
  }
  let mut spare_failed = false;
  loop {
    let Some(pool) = inner.upgrade() else { return };
    let Some(task) = next_task(&pool, &mut engine, &mut spare_failed) else { break };
    match task {
      Task::Start(job, slot) => {
        pool.queued.fetch_sub(1, Ordering::AcqRel);
        spare_failed = false;
        match engine.as_mut() {
          Some(engine) => {
            let had_spare = engine.has_spare();
            start(&pool, &me, engine, *job, slot);
            if had_spare && !engine.has_spare() {
              pool.spares.fetch_sub(1, Ordering::AcqRel);
            }
          }
          None => {
            let message = startup_error.clone().unwrap_or_default();
            job.shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerStartupFailed, message));
            forget(&pool, &slot);
          }
        }
      }
      Task::Run(slot) => {
        let taken = lock(&slot.st).execution.take();
        if let Some(Movable(execution)) = taken {
          drive(&pool, &me, &slot, execution, None);
        }
      }
    }
    me.busy_until.store(0, Ordering::Release);
    *lock(&me.running) = None;
    // Give the permit back — unless the watchdog took it already, when it set this thread aside.
    let mut q = lock(&pool.queue);
    if me.set_aside.swap(false, Ordering::AcqRel) {
      q.set_aside -= 1;
      if !pool.in_worker_process {
        // Its replacement is running: leave.
        drop(q);
        if engine.as_ref().is_some_and(Engine::has_spare) {
          pool.spares.fetch_sub(1, Ordering::AcqRel);
        }
        lock(&pool.threads).retain(|t| !Arc::ptr_eq(t, &me));
        return;
      }
      // A worker process keeps it, as a spare.
    } else {
      q.active -= 1;
    }
    if q.shutdown {
      // A thread may sleep beside a task it left to another (`next_task`): once the queue is
      // empty, every thread must see it to leave.
      pool.ready.notify_all();
      pool.warm.notify_all();
    } else if !q.tasks.is_empty() {
      signal(&pool, &q);
    }
  }
}

/// Marks this thread busy with `shared` until `deadline` (`None`: held while a person decides).
fn busy(pool: &Inner, me: &Thread, deadline: Option<Instant>, shared: &Arc<Shared>) {
  let until = deadline.map_or(u64::MAX / 2, |d| d.saturating_duration_since(pool.epoch).as_millis() as u64);
  *lock(&me.running) = Some(shared.clone());
  me.busy_until.store(until.max(1), Ordering::Release);
}

fn start(pool: &Arc<Inner>, me: &Thread, engine: &mut Engine, job: Job, slot: Arc<Slot>) {
  let shared = job.shared.clone();
  if shared.stop() != Stop::Running || shared.is_completed() {
    // Whoever stopped it may not have reported it (dispose racing a popped queue timer); a
    // completed one is not completed again.
    shared.report_stop();
    forget(pool, &slot);
    return;
  }
  let Some(deadline) = shared.mark_started() else {
    forget(pool, &slot);
    return;
  };
  shared.host.started();
  pool.watchdog.add(deadline, Timer::Deadline, shared.clone());
  {
    let (slot, pool) = (Arc::downgrade(&slot), Arc::downgrade(pool));
    *lock(&shared.link) = Some(Box::new(move || match (slot.upgrade(), pool.upgrade()) {
      (Some(slot), Some(pool)) => {
        wake(&pool, &slot, None);
        true
      }
      _ => false,
    }));
  }
  busy(pool, me, Some(deadline), &shared);
  let sink = SlotSink { slot: Arc::downgrade(&slot), pool: Arc::downgrade(pool) };
  let started = catch_unwind(AssertUnwindSafe(|| Execution::start(engine, job, deadline, sink)));
  match started {
    Ok(Ok((execution, step))) => drive(pool, me, &slot, execution, Some(step)),
    Ok(Err(completed)) => finish(pool, &slot, *completed),
    Err(_) => {
      shared.complete_from_outside(crashed());
      forget(pool, &slot);
    }
  }
}

/// Runs an execution for as long as it has something to do, then parks it in its slot (or ends it).
fn drive(pool: &Inner, me: &Thread, slot: &Slot, mut execution: Execution, mut step: Option<Step>) {
  loop {
    if let Some(Step::Done(completed)) = step {
      // The result first: freeing a runtime whose heap holds millions of values takes
      // milliseconds, which the host need not wait for (nor a stopped script's own report, which
      // carries its logs, lose to the watchdog's). The thread stays busy until it is freed.
      finish(pool, slot, completed);
      drop(execution);
      return;
    }
    let answers = {
      let mut st = lock(&slot.st);
      if st.inbox.is_empty() && !st.poke {
        st.execution = Some(Movable(execution));
        st.scheduled = false;
        return;
      }
      st.poke = false;
      std::mem::take(&mut st.inbox)
    };
    busy(pool, me, execution.deadline(), &slot.shared);
    let slice = catch_unwind(AssertUnwindSafe(|| {
      execution.enter_thread();
      if answers.is_empty() {
        return execution.pump();
      }
      let mut last = Step::Parked;
      for (call_id, result) in answers {
        last = execution.resume(call_id, result);
        if matches!(last, Step::Done(_)) {
          break;
        }
      }
      last
    }));
    step = Some(slice.unwrap_or_else(|_| Step::Done(crashed_completed())));
  }
}

fn finish(pool: &Inner, slot: &Slot, completed: Completed) {
  slot.shared.complete(completed);
  forget(pool, slot);
}

/// The slot is done: answers for it are dropped from now on.
fn forget(pool: &Inner, slot: &Slot) {
  {
    let mut st = lock(&slot.st);
    st.done = true;
    st.inbox.clear();
  }
  lock(&pool.slots).remove(&slot.key);
}

/// A bug in the sandbox itself surfaced as a panic while running this execution.
fn crashed() -> Outcome {
  Outcome::sandbox(ErrorCode::WorkerCrashed, "The sandbox failed while running this execution (internal error)")
}

fn crashed_completed() -> Completed {
  Completed { outcome: crashed(), logs: Vec::new(), stats: Default::default() }
}

/// Asks the execution to stop now; if it cannot report in time, the watchdog will.
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
  /// The execution was asked to stop and had time to report.
  Report,
  /// `STUCK_AFTER` past the deadline: is a thread still running it?
  Stuck,
  /// After the deadline: ask again for the running execution's next poll (`REPOLL_EVERY`).
  Repoll,
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

/// How often the watchdog looks for stuck threads when no timer is due sooner.
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
      if shared.is_completed() && !matches!(timer, Timer::Stuck | Timer::Repoll) {
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
              // Also makes its next poll happen now (`Shared::force_poll`).
              shared.request_stop(Stop::Timeout);
              stop_execution(&pool, shared);
              pool.watchdog.add(now + STUCK_AFTER, Timer::Stuck, shared.clone());
              pool.watchdog.add(now + REPOLL_EVERY, Timer::Repoll, shared.clone());
            }
          }
        }
        Timer::Report => shared.report_stop(),
        Timer::Repoll => {
          // Until its runtime is gone (`force_poll` finds no context), for a bounded time.
          let past = shared.effective_deadline().map(|d| Instant::now().saturating_duration_since(d));
          if shared.force_poll() && past.is_some_and(|p| p < REPOLL_FOR) {
            pool.watchdog.add(Instant::now() + REPOLL_EVERY, Timer::Repoll, shared.clone());
          }
        }
        // The periodic look below covers it.
        Timer::Stuck => {}
      }
    }
    set_aside_stuck_threads(&pool);
  }
}

/// A thread busy well past the deadline of what it runs is stuck in native code: it gives back
/// its permit (a free thread takes the ready executions), a fresh thread takes its place in this
/// process, and it leaves the pool — or, in a worker process, becomes a spare — when it returns.
fn set_aside_stuck_threads(pool: &Arc<Inner>) {
  if pool.disposed.load(Ordering::Acquire) {
    return;
  }
  let now = pool.epoch.elapsed();
  let stuck_after = STUCK_AFTER.as_millis() as u64;
  let threads: Vec<Arc<Thread>> = lock(&pool.threads).clone();
  for thread in threads {
    let until = thread.busy_until.load(Ordering::Acquire);
    if until == 0 || (now.as_millis() as u64) <= until.saturating_add(stuck_after) {
      continue;
    }
    // Past the deadline it started with — unless a hold moved it (a person decided about a call
    // meanwhile, §9) or holds it still.
    let moved = lock(&thread.running).as_ref().is_some_and(|s| {
      s.effective_deadline().is_none_or(|d| d.saturating_duration_since(pool.epoch) + STUCK_AFTER > now)
    });
    if moved {
      continue;
    }
    let mut q = lock(&pool.queue);
    // Checked again under the queue's lock: the thread gives its permit back under it too.
    if thread.set_aside.load(Ordering::Acquire) || thread.busy_until.load(Ordering::Acquire) != until {
      continue;
    }
    if q.set_aside >= pool.max_set_aside {
      drop(q);
      warn_set_aside_limit(pool);
      continue;
    }
    thread.set_aside.store(true, Ordering::Release);
    q.active -= 1;
    q.set_aside += 1;
    drop(q);
    if !pool.in_worker_process {
      // Its replacement; it is detached too when it leaves (joining could wait as long as the
      // builtin runs).
      let _ = spawn_thread(pool, None);
      lock(&pool.threads).retain(|t| !Arc::ptr_eq(t, &thread));
      drop(lock(&thread.handle).take());
    }
    signal(pool, &lock(&pool.queue));
  }
}

fn warn_set_aside_limit(pool: &Inner) {
  if let Some(warnings) = &pool.warnings {
    lock(warnings).push(format!(
      "{} threads of this sandbox are set aside, each stuck in a native builtin past its execution's deadline: no \
       more are replaced until one returns, and ready executions wait for a free thread",
      pool.max_set_aside
    ));
  }
}

#[cfg(test)]
mod tests;
