//! The host side of `isolation: 'process'` (`api.md` §2.6): a pool of worker processes.
//!
//! - Workers start lazily: a new one only when every live one is busy and there are fewer than
//!   `poolSize`. One supervisor thread spawns them (a worker's parent-death signal is tied to the
//!   thread that spawned it, so that thread lives as long as the pool) and owns the timers.
//! - Each worker has a reader thread (frames in; EOF means it is gone, and it is reaped there) and
//!   an outbox (frames out; written without blocking from any thread, the rest flushed by a writer
//!   thread), so a worker that stops reading can never block Node's thread.
//! - Time: a worker reports its own timeouts (with logs). If it has not by the deadline plus a
//!   grace, one of its threads is stuck in a builtin: the host reports `TIMEOUT` itself and stops
//!   giving that worker work. The worker's other executions go on, on its spare threads (a stuck
//!   thread holds only its own execution, `pool.rs` in the sandbox), and the host kills the worker
//!   once every one of them has ended — never at a fixed time that would end them. Each has a
//!   deadline of its own, which the host enforces too, so that is bounded by the longest of them.
//! - Death: executions of a dead worker that had not called a tool are retried once, each on a
//!   fresh worker of its own (so a script that crashes its worker every time takes only itself
//!   down); the others end with `WORKER_CRASHED`.
//! - The worker is untrusted: frames are bounded and checked, answers go only to executions of
//!   that worker, results must be well-formed `ExecuteResult`s, and any violation kills it.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::outbox::Outbox;
use super::spawn::{FromWorkerPipe, Spawned, WorkerChild};
use super::wire::{check_result, read_frame, FromWorker, ToWorker, WireError, PROTOCOL, VERSION};
use super::worker::{ENV_ADDRESS_SPACE, ENV_PARENT, THREADS};
use crate::common::ErrorCode;
use crate::sandbox::bridge::{CallResult, Event, Reply};
use crate::sandbox::config::{ExecuteConfig, SandboxConfig};
use crate::sandbox::error::{StartError, Violation};
use crate::sandbox::outcome::{Completed, Outcome, Stats};
use crate::sandbox::pool::RESERVE;
use crate::sandbox::shared::{lock, Shared, Stop, HOLD_RECHECK};
use crate::sandbox::timers::Timers;
use crate::sandbox::warnings::Warnings;

/// How long after a deadline the host waits for the worker's own report.
const REPORT_GRACE: Duration = Duration::from_millis(40);
/// RLIMIT_AS of a worker, before the heaps of the executions running at once.
const ADDRESS_SPACE_BASE: u64 = 16 << 30;
/// How long a worker that closed its pipe may take to exit before it is killed.
const REAP_GRACE: Duration = Duration::from_secs(2);
/// At most this many fresh workers take the retries of one dead worker.
const MAX_QUARANTINE: usize = 4;
/// How long a new worker may take to say `Ready`.
const STARTUP_LIMIT: Duration = Duration::from_secs(10);

/// One execution, as the host tracks it.
struct Run {
  key: u64,
  shared: Arc<Shared>,
  script: String,
  exec: ExecuteConfig,
  /// Left the queue (the worker said `Started`).
  started: AtomicBool,
  /// No longer counted as queued.
  dequeued: AtomicBool,
  /// Asked the host for a tool or function: not safe to run twice.
  called: AtomicBool,
  /// Already retried once.
  retried: AtomicBool,
  /// Host calls the worker asked for, checked against `maxToolCalls` again on this side.
  calls: AtomicU64,
  worker: Mutex<Weak<Proc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
  Starting,
  Ready,
  Dead,
}

struct ProcState {
  phase: Phase,
  /// Sent to the worker, not yet completed by it.
  runs: HashMap<u64, Arc<Run>>,
  /// Waiting for the worker to be ready.
  pending: Vec<Arc<Run>>,
}

/// One worker process.
struct Proc {
  /// Runs one retried execution only, and is killed after it.
  quarantine: bool,
  /// Its executor threads: how many of its executions run at once (its share of `poolSize`).
  executors: usize,
  draining: AtomicBool,
  dead: AtomicBool,
  load: AtomicUsize,
  out: OnceLock<Arc<Outbox>>,
  child: Mutex<Option<WorkerChild>>,
  st: Mutex<ProcState>,
  threads: Mutex<Vec<JoinHandle<()>>>,
  /// Why it ends, when the host or the worker itself said so before it died: it could not
  /// confine itself (macOS), or the host killed it for its memory footprint.
  ended_because: Mutex<Option<String>>,
}

impl Proc {
  fn new(quarantine: bool, executors: usize) -> Arc<Self> {
    Arc::new(Self {
      quarantine,
      executors,
      draining: AtomicBool::new(false),
      dead: AtomicBool::new(false),
      load: AtomicUsize::new(0),
      out: OnceLock::new(),
      child: Mutex::new(None),
      st: Mutex::new(ProcState { phase: Phase::Starting, runs: HashMap::new(), pending: Vec::new() }),
      threads: Mutex::new(Vec::new()),
      ended_because: Mutex::new(None),
    })
  }

  fn send(&self, msg: &ToWorker) -> bool {
    self.out.get().is_some_and(|out| out.send(msg.encode()))
  }

  /// SIGKILL (Windows: its job ends), under the same lock as the reaping `wait`, so a reused pid
  /// is never signalled.
  fn kill(&self) {
    if let Some(child) = lock(&self.child).as_mut() {
      child.kill();
    }
  }

  /// Executions on it that have not been completed yet (by it or by the host).
  fn live(&self) -> usize {
    let st = lock(&self.st);
    st.runs.values().chain(st.pending.iter()).filter(|r| !r.shared.is_completed()).count()
  }
}

enum What {
  Queue(Arc<Run>),
  Deadline(Arc<Run>),
  Report(Arc<Run>),
  Startup(Weak<Proc>),
}

#[derive(Default)]
struct State {
  workers: Vec<Arc<Proc>>,
  timers: Timers<What>,
  to_spawn: Vec<Arc<Proc>>,
  queued: usize,
  shutdown: bool,
}

struct Inner {
  config: Arc<SandboxConfig>,
  exe: PathBuf,
  /// The library the launcher maps (`CODECALL_WORKER_LIBRARY` of the worker).
  library: PathBuf,
  state: Mutex<State>,
  wake: Condvar,
  disposed: AtomicBool,
  next_key: AtomicU64,
  warnings: Arc<Mutex<Warnings>>,
  frame_limit: usize,
  address_space: u64,
}

/// The process pool behind one `Sandbox`.
pub struct ProcessPool {
  inner: Arc<Inner>,
  supervisor: Option<JoinHandle<()>>,
}

impl ProcessPool {
  pub fn new(
    config: Arc<SandboxConfig>,
    exe: PathBuf,
    library: PathBuf,
    warnings: Arc<Mutex<Warnings>>,
  ) -> Result<Self, StartError> {
    // Results and logs are bounded by the limits; everything else a worker says is small.
    let frame_limit = config.frame_limit();
    // Address space: a fence against runaway native allocation, not a budget (each execution's
    // heap has its own limit). Thousands of executions parked on one worker need a few GiB; the
    // executions running at once are the executors' and, past stuck ones, the spares'.
    let running = (THREADS + RESERVE) as u64 + 2;
    let address_space = ADDRESS_SPACE_BASE.saturating_add(config.memory_limit_bytes.saturating_mul(running));
    let inner = Arc::new(Inner {
      config,
      exe,
      library,
      state: Mutex::new(State::default()),
      wake: Condvar::new(),
      disposed: AtomicBool::new(false),
      next_key: AtomicU64::new(0),
      warnings,
      frame_limit,
      address_space,
    });
    let weak = Arc::downgrade(&inner);
    let supervisor = std::thread::Builder::new()
      .name("codecall-supervisor".into())
      .spawn(move || supervise(weak))
      .map_err(|e| StartError::Thread("the worker supervisor thread", e))?;
    Ok(Self { inner, supervisor: Some(supervisor) })
  }

  /// Queues a script. The result arrives through `shared.host.complete`, exactly once.
  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    submit_to(&self.inner, script, exec, shared);
  }

  pub fn aborter(&self) -> ProcessAborter {
    ProcessAborter(Arc::downgrade(&self.inner))
  }

  /// How many executions wait to start, while the pool lives (telemetry's queue gauge).
  pub fn queue_probe(&self) -> impl Fn() -> Option<usize> + Send + 'static {
    let inner = Arc::downgrade(&self.inner);
    move || inner.upgrade().filter(|i| !i.disposed.load(Ordering::Acquire)).map(|i| lock(&i.state).queued)
  }

  /// Ends every queued and running execution with `POOL_DISPOSED` and kills every worker.
  /// Returns the threads to join.
  pub fn dispose(&mut self) -> Vec<JoinHandle<()>> {
    let inner = &self.inner;
    if inner.disposed.swap(true, Ordering::AcqRel) {
      return Vec::new();
    }
    let (workers, mut timers) = {
      let mut st = lock(&inner.state);
      st.shutdown = true;
      st.to_spawn.clear();
      (std::mem::take(&mut st.workers), std::mem::take(&mut st.timers))
    };
    inner.wake.notify_all();
    let mut runs: Vec<Arc<Run>> = Vec::new();
    for what in timers.drain() {
      if let What::Queue(run) | What::Deadline(run) | What::Report(run) = what {
        runs.push(run);
      }
    }
    for proc in &workers {
      proc.dead.store(true, Ordering::Release);
      let st = lock(&proc.st);
      runs.extend(st.runs.values().cloned());
      runs.extend(st.pending.iter().cloned());
    }
    for run in runs {
      if run.shared.request_stop(Stop::Disposed) {
        run.shared.report_stop();
      }
    }
    for proc in &workers {
      proc.kill();
      if let Some(out) = proc.out.get() {
        out.close();
      }
    }
    // Reap now, so no process is left once `dispose()` has returned (SIGKILL ends a process in
    // microseconds; one that takes longer is reaped by its reader thread).
    let until = Instant::now() + Duration::from_millis(200);
    for proc in &workers {
      let mut child = lock(&proc.child);
      while let Some(c) = child.as_mut() {
        match c.has_ended() {
          Ok(false) if Instant::now() < until => std::thread::sleep(Duration::from_micros(200)),
          Ok(false) => break,
          _ => {
            *child = None;
          }
        }
      }
    }
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    for proc in &workers {
      threads.append(&mut lock(&proc.threads));
    }
    if let Some(t) = self.supervisor.take() {
      threads.push(t);
    }
    threads
  }

  pub fn is_disposed(&self) -> bool {
    self.inner.disposed.load(Ordering::Acquire)
  }
}

/// See `ProcessPool::submit`.
fn submit_to(inner: &Arc<Inner>, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
  if inner.disposed.load(Ordering::Acquire) {
    shared.complete_from_outside(Outcome::sandbox(ErrorCode::PoolDisposed, "The sandbox has been disposed"));
    return;
  }
  let mut st = lock(&inner.state);
  if st.queued >= inner.config.max_queue {
    drop(st);
    shared.complete_from_outside(Outcome::sandbox(
      ErrorCode::QueueFull,
      format!("More than {} executions are waiting to start (maxQueue)", inner.config.max_queue),
    ));
    return;
  }
  st.queued += 1;
  let run = Arc::new(Run {
    key: inner.next_key.fetch_add(1, Ordering::Relaxed) + 1,
    shared,
    script,
    exec,
    started: AtomicBool::new(false),
    dequeued: AtomicBool::new(false),
    called: AtomicBool::new(false),
    retried: AtomicBool::new(false),
    calls: AtomicU64::new(0),
    worker: Mutex::new(Weak::new()),
  });
  let at = run.shared.submitted + Duration::from_millis(inner.config.queue_timeout_ms);
  add_timer(inner, &mut st, at, What::Queue(run.clone()));
  let proc = pick(inner, &mut st);
  drop(st);
  assign(inner, &proc, run);
}

impl Drop for ProcessPool {
  fn drop(&mut self) {
    drop(self.dispose());
  }
}

/// Stops single executions (their `AbortSignal` fired); does not keep the pool alive.
#[derive(Clone)]
pub struct ProcessAborter(Weak<Inner>);

impl ProcessAborter {
  /// `ProcessPool::submit` from any thread; `POOL_DISPOSED` once the pool is gone.
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
    let Some(inner) = self.0.upgrade() else {
      shared.report_stop();
      return;
    };
    let run = find_run(&inner, shared);
    match run {
      Some(run) => {
        if let Some(proc) = lock(&run.worker).upgrade() {
          proc.send(&ToWorker::Stop { key: run.key });
        }
        let mut st = lock(&inner.state);
        add_timer(&inner, &mut st, Instant::now() + REPORT_GRACE, What::Report(run));
      }
      None => shared.report_stop(),
    }
  }
}

fn find_run(inner: &Inner, shared: &Arc<Shared>) -> Option<Arc<Run>> {
  let workers = lock(&inner.state).workers.clone();
  workers.iter().find_map(|proc| {
    let st = lock(&proc.st);
    st.runs.values().chain(st.pending.iter()).find(|r| Arc::ptr_eq(&r.shared, shared)).cloned()
  })
}

fn add_timer(inner: &Inner, st: &mut State, at: Instant, what: What) {
  if st.timers.add(at, what) {
    inner.wake.notify_all();
  }
}

/// The worker for new work: the least loaded live one (executions per executor thread), or a new
/// one while every live one has work and their threads are fewer than `poolSize`.
///
/// `poolSize` bounds the executions that run at once, as in thread mode: it is the number of
/// executor threads over all workers, `THREADS` per worker (the last one may have fewer). An
/// execution waits in its worker's queue until one of that worker's threads is free, and the
/// queue timer (`queueTimeoutMs`) runs until the worker says it started.
fn pick(inner: &Inner, st: &mut State) -> Arc<Proc> {
  let live: Vec<&Arc<Proc>> = st
    .workers
    .iter()
    .filter(|p| !p.quarantine && !p.draining.load(Ordering::Acquire) && !p.dead.load(Ordering::Acquire))
    .collect();
  let executors: usize = live.iter().map(|p| p.executors).sum();
  let room = inner.config.pool_size.max(1).saturating_sub(executors);
  let best = live
    .iter()
    .min_by(|a, b| {
      let (la, lb) = (a.load.load(Ordering::Acquire), b.load.load(Ordering::Acquire));
      la.saturating_mul(b.executors).cmp(&lb.saturating_mul(a.executors))
    })
    .map(|p| (*p).clone());
  match best {
    Some(p) if p.load.load(Ordering::Acquire) == 0 || room == 0 => p,
    _ => new_proc(inner, st, false, room.clamp(1, THREADS)),
  }
}

fn new_proc(inner: &Inner, st: &mut State, quarantine: bool, executors: usize) -> Arc<Proc> {
  let proc = Proc::new(quarantine, executors);
  st.workers.push(proc.clone());
  st.to_spawn.push(proc.clone());
  let at = Instant::now() + STARTUP_LIMIT;
  add_timer(inner, st, at, What::Startup(Arc::downgrade(&proc)));
  inner.wake.notify_all();
  proc
}

/// Gives a run to a worker: sent now if it is ready, else when it is.
fn assign(inner: &Inner, proc: &Arc<Proc>, run: Arc<Run>) {
  *lock(&run.worker) = Arc::downgrade(proc);
  proc.load.fetch_add(1, Ordering::AcqRel);
  let mut st = lock(&proc.st);
  match st.phase {
    Phase::Ready => {
      st.runs.insert(run.key, run.clone());
      drop(st);
      send_start(proc, &run);
    }
    Phase::Starting => st.pending.push(run),
    Phase::Dead => {
      drop(st);
      dequeue(inner, &run);
      crashed(&run, "The worker process for this execution is gone");
    }
  }
}

fn send_start(proc: &Proc, run: &Run) {
  let msg =
    ToWorker::Start { key: run.key, id: run.shared.id.clone(), script: run.script.clone(), exec: run.exec.clone() };
  proc.send(&msg);
}

fn dequeue(inner: &Inner, run: &Run) {
  if !run.dequeued.swap(true, Ordering::AcqRel) {
    let mut st = lock(&inner.state);
    st.queued = st.queued.saturating_sub(1);
  }
}

fn crashed(run: &Run, message: &str) {
  run.shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerCrashed, message));
}

// ---- supervisor: spawning and timers -------------------------------------------------------

fn supervise(inner: Weak<Inner>) {
  loop {
    let Some(pool) = inner.upgrade() else { return };
    let (spawn, due) = {
      let mut st = lock(&pool.state);
      loop {
        if st.shutdown {
          return;
        }
        let now = Instant::now();
        let next = st.timers.next();
        if !st.to_spawn.is_empty() || next.is_some_and(|at| at <= now) {
          break;
        }
        let wait = next.map_or(Duration::from_secs(1), |at| at - now);
        // macOS: workers' footprints are looked at this often (the kernel caps no address space).
        #[cfg(target_os = "macos")]
        let wait = wait.min(FOOTPRINT_EVERY);
        st = pool.wake.wait_timeout(st, wait).unwrap_or_else(|p| p.into_inner()).0;
        if next.is_none() && st.to_spawn.is_empty() && st.timers.is_empty() {
          // Idle: let go of the pool so it can be dropped, then look again.
          break;
        }
      }
      let spawn = std::mem::take(&mut st.to_spawn);
      (spawn, st.timers.pop_due(Instant::now()))
    };
    for proc in spawn {
      spawn_proc(&pool, &proc);
    }
    for what in due {
      on_timer(&pool, what);
    }
    #[cfg(target_os = "macos")]
    watch_footprints(&pool);
  }
}

/// How often the host looks at its workers' memory footprints (macOS).
#[cfg(target_os = "macos")]
const FOOTPRINT_EVERY: Duration = Duration::from_millis(250);

/// macOS ignores `RLIMIT_AS`: a worker whose physical footprint passes its cap
/// (`memory_cap`) is killed here, as Linux's kernel would refuse it the memory.
/// Its executions end as a crashed worker's do (retried once when they had called no tool).
#[cfg(target_os = "macos")]
fn watch_footprints(inner: &Arc<Inner>) {
  let limit = memory_cap(inner.config.memory_limit_bytes);
  let workers: Vec<Arc<Proc>> = lock(&inner.state).workers.clone();
  for proc in workers {
    let pid = lock(&proc.child).as_ref().map(|c| c.id());
    let Some(footprint) = pid.and_then(super::seatbelt::footprint) else { continue };
    if footprint > limit && !proc.dead.load(Ordering::Acquire) {
      *lock(&proc.ended_because) = Some(format!(
        "was killed: its memory footprint ({} MiB) passed its limit ({} MiB)",
        footprint >> 20,
        limit >> 20
      ));
      proc.kill();
    }
  }
}

/// The most memory a worker may use (macOS: its physical footprint, watched here; Windows: its
/// commit, the job's per-process limit), where the kernel enforces no address-space limit: the
/// engine's own share plus a heap limit for each execution that may run at once. A backstop
/// against a native allocation that escapes QuickJS's own accounting — each heap has its limit.
pub(super) fn memory_cap(memory_limit_bytes: u64) -> u64 {
  MEMORY_BASE.saturating_add(memory_limit_bytes.saturating_mul((THREADS + RESERVE) as u64 + 2))
}

/// A worker's memory before any execution's heap: the engine, its threads' stacks, a few thousand
/// parked executions.
pub(super) const MEMORY_BASE: u64 = 1 << 30;

/// A worker's words, cut to what a message shows.
fn clip(text: &str) -> String {
  const MAX: usize = 512;
  if text.len() <= MAX {
    return text.to_string();
  }
  let mut end = MAX;
  while !text.is_char_boundary(end) {
    end -= 1;
  }
  format!("{}…", &text[..end])
}

fn on_timer(inner: &Arc<Inner>, what: What) {
  match what {
    What::Queue(run) => {
      if !run.started.load(Ordering::Acquire) && run.shared.request_stop(Stop::QueueTimeout) {
        run.shared.report_stop();
        dequeue(inner, &run);
        if let Some(proc) = lock(&run.worker).upgrade() {
          proc.send(&ToWorker::Stop { key: run.key });
          after_release(&proc);
        }
      }
    }
    What::Deadline(run) => {
      if run.shared.is_completed() {
        return;
      }
      // A hold (a person deciding about a call) moved the deadline, or holds it still: look again
      // then.
      let now = Instant::now();
      let later = match run.shared.effective_deadline() {
        None => Some(now + HOLD_RECHECK),
        Some(deadline) if deadline + REPORT_GRACE > now => Some(deadline + REPORT_GRACE),
        Some(_) => None,
      };
      if let Some(at) = later {
        let mut st = lock(&inner.state);
        add_timer(inner, &mut st, at, What::Deadline(run));
        return;
      }
      run.shared.request_stop(Stop::Timeout);
      run.shared.report_stop();
      // A thread of its worker is stuck in something that ignores the interrupt: no new work for
      // that worker, and it dies once its other executions have ended.
      if let Some(proc) = lock(&run.worker).upgrade() {
        proc.draining.store(true, Ordering::Release);
        after_release(&proc);
      }
    }
    What::Report(run) => {
      if !run.shared.is_completed() {
        run.shared.report_stop();
        if let Some(proc) = lock(&run.worker).upgrade() {
          after_release(&proc);
        }
      }
    }
    What::Startup(proc) => {
      if let Some(proc) = proc.upgrade() {
        if lock(&proc.st).phase == Phase::Starting {
          proc.kill();
        }
      }
    }
  }
}

fn spawn_proc(inner: &Arc<Inner>, proc: &Arc<Proc>) {
  let mut env: super::spawn::Env = vec![
    (ENV_PARENT.into(), std::process::id().to_string().into()),
    (ENV_ADDRESS_SPACE.into(), inner.address_space.to_string().into()),
    (super::locate::ENV_WORKER_LIBRARY.into(), inner.library.clone().into_os_string()),
  ];
  // Read when the worker starts: a worker started before the host changed `TZ` keeps the old zone.
  if let Some(tz) = std::env::var_os(super::worker::ENV_TZ) {
    env.push((super::worker::ENV_TZ.into(), tz));
  }
  let stderr = std::env::var_os("CODECALL_WORKER_STDERR").is_some();
  let Spawned { child, stdin, stdout, warnings } =
    match super::spawn::spawn(&inner.exe, env, stderr, memory_cap(inner.config.memory_limit_bytes)) {
      Ok(parts) => parts,
      Err(e) => {
        let message = format!("Could not start the worker process {}: {e}", inner.exe.display());
        startup_failed(inner, proc, &message);
        return;
      }
    };
  if !warnings.is_empty() {
    let mut w = lock(&inner.warnings);
    for warning in warnings {
      w.push(format!("Worker process: {warning}"));
    }
  }
  *lock(&proc.child) = Some(child);
  let out = match Outbox::new(stdin) {
    Ok(out) => out,
    Err(e) => {
      proc.kill();
      startup_failed(inner, proc, &format!("Could not set up the worker's pipe: {e}"));
      return;
    }
  };
  let _ = proc.out.set(out.clone());
  // The worker runs `proc.executors` executions at once: its share of `poolSize`.
  let config = SandboxConfig { pool_size: proc.executors, ..(*inner.config).clone() };
  out.send(ToWorker::Hello { config }.encode());
  let writer = {
    let out = out.clone();
    std::thread::Builder::new().name("codecall-pipe-out".into()).spawn(move || out.flush_loop())
  };
  let reader = {
    let inner = Arc::downgrade(inner);
    let proc = proc.clone();
    std::thread::Builder::new().name("codecall-pipe-in".into()).spawn(move || read_loop(inner, proc, stdout))
  };
  match (writer, reader) {
    (Ok(w), Ok(r)) => lock(&proc.threads).extend([w, r]),
    (w, r) => {
      proc.kill();
      out.close();
      lock(&proc.threads).extend(w.into_iter().chain(r));
      startup_failed(inner, proc, "Could not start the worker's pipe threads");
    }
  }
}

/// A worker that never became ready: its executions get one more chance on a new worker, then
/// `WORKER_STARTUP_FAILED`.
fn startup_failed(inner: &Arc<Inner>, proc: &Arc<Proc>, message: &str) {
  proc.dead.store(true, Ordering::Release);
  let pending = {
    let mut st = lock(&proc.st);
    st.phase = Phase::Dead;
    std::mem::take(&mut st.pending)
  };
  lock(&inner.state).workers.retain(|p| !Arc::ptr_eq(p, proc));
  for run in pending {
    if run.shared.is_completed() {
      continue;
    }
    if !run.retried.swap(true, Ordering::AcqRel) && !inner.disposed.load(Ordering::Acquire) {
      let fresh = {
        let mut st = lock(&inner.state);
        pick(inner, &mut st)
      };
      assign(inner, &fresh, run);
    } else {
      dequeue(inner, &run);
      run.shared.complete_from_outside(Outcome::sandbox(ErrorCode::WorkerStartupFailed, message));
    }
  }
}

// ---- reader: frames from a worker ----------------------------------------------------------

fn read_loop(inner: Weak<Inner>, proc: Arc<Proc>, stdout: FromWorkerPipe) {
  let limit = inner.upgrade().map_or(super::wire::MAX_FRAME, |i| i.frame_limit);
  let mut reader = BufReader::with_capacity(256 << 10, stdout);
  let mut body = Vec::new();
  let why = loop {
    let msg = read_frame(&mut reader, limit, &mut body).and_then(|kind| FromWorker::decode(kind, &body));
    let Some(pool) = inner.upgrade() else { break None };
    match msg {
      Ok(msg) => {
        if let Err(violation) = on_frame(&pool, &proc, msg) {
          break Some(violation.0);
        }
      }
      Err(WireError::Closed) => break None,
      Err(e) => break Some(e.to_string()),
    }
  };
  if why.is_some() {
    proc.kill();
  }
  // Reap it outside the lock (a `kill` from another thread must never wait behind this), killing
  // it if it runs on with its end of the pipe closed; the exit status says how it ended.
  let child = lock(&proc.child).take();
  let status = child.and_then(|mut c| c.reap(REAP_GRACE));
  if let Some(out) = proc.out.get() {
    out.close();
  }
  if let Some(pool) = inner.upgrade() {
    on_death(&pool, &proc, why, status);
  }
}

/// Handles one frame; `Err` is a protocol violation (the worker is then killed).
fn on_frame(inner: &Arc<Inner>, proc: &Arc<Proc>, msg: FromWorker) -> Result<(), Violation> {
  let run_of = |key: u64| lock(&proc.st).runs.get(&key).cloned();
  match msg {
    FromWorker::Ready { protocol, version, seccomp, warnings } => {
      if protocol != PROTOCOL || version != VERSION {
        return Err(Violation(format!("worker speaks protocol {protocol} of version {version}")));
      }
      {
        let mut w = lock(&inner.warnings);
        if let Err(e) = seccomp {
          w.push(format!("The sandbox's worker processes run without a seccomp filter: {e}"));
        }
        for warning in warnings {
          w.push(format!("Worker process: {warning}"));
        }
      }
      let pending = {
        let mut st = lock(&proc.st);
        if st.phase != Phase::Starting {
          return Err(Violation("second Ready".into()));
        }
        st.phase = Phase::Ready;
        let pending = std::mem::take(&mut st.pending);
        for run in &pending {
          st.runs.insert(run.key, run.clone());
        }
        pending
      };
      for run in pending {
        if run.shared.is_completed() || run.shared.stop() != Stop::Running {
          // Aborted or timed out in the queue while the worker was starting: never sent.
          if !run.shared.is_completed() {
            run.shared.report_stop();
          }
          dequeue(inner, &run);
          release(proc, &run);
          continue;
        }
        if run.exec.events {
          Warnings::deliver(&inner.warnings, &run.shared);
        }
        send_start(proc, &run);
      }
    }
    FromWorker::Started { key } => {
      let Some(run) = run_of(key) else { return Ok(()) };
      if run.started.swap(true, Ordering::AcqRel) && !run.retried.load(Ordering::Acquire) {
        return Err(Violation("execution started twice".into()));
      }
      dequeue(inner, &run);
      // The host side's copy of the deadline (holds counted: §9), and where holds go.
      run.shared.mark_started();
      let weak = Arc::downgrade(&run);
      *lock(&run.shared.hold_link) = Some(Box::new(move |held| {
        if let Some(run) = weak.upgrade() {
          if let Some(proc) = lock(&run.worker).upgrade() {
            proc.send(&ToWorker::Hold { key: run.key, held });
          }
        }
      }));
      let at = Instant::now() + run.exec.timeout + REPORT_GRACE;
      let mut st = lock(&inner.state);
      add_timer(inner, &mut st, at, What::Deadline(run));
    }
    FromWorker::Call { key, token, mut call } => {
      let Some(run) = run_of(key) else { return Ok(()) };
      if run.shared.is_completed() {
        return Ok(());
      }
      // The worker enforces the limits; the host checks them again, so that even a compromised
      // worker can reach only what its execution could.
      let refused = check_call(inner, &run, &call)?;
      run.called.store(true, Ordering::Release);
      let reply = Box::new(PipeReply { out: proc.out.get().cloned(), token });
      if let Some(failure) = refused {
        reply.send(CallResult::Err(failure));
        return Ok(());
      }
      run.shared.note_tool_call();
      call.execution_id = run.shared.id.clone();
      run.shared.host.call(call, reply);
    }
    FromWorker::GetTool { key, token, name } => {
      let Some(run) = run_of(key) else { return Ok(()) };
      let host = run.shared.host.clone();
      let out = proc.out.get().cloned();
      let answer = move |json: Option<String>| {
        if let Some(out) = out {
          out.send(ToWorker::ToolInfo { token, json }.encode());
        }
      };
      match host.get_tool_now(&name) {
        Some(json) => answer(json),
        None => {
          // The host's own getTool runs on Node's thread: wait for it off this reader.
          let timeout = run.exec.timeout;
          let _ = std::thread::Builder::new()
            .name("codecall-get-tool".into())
            .spawn(move || answer(host.get_tool(&name, timeout)));
        }
      }
    }
    FromWorker::Event { key, event } => {
      let Some(run) = run_of(key) else { return Ok(()) };
      if run.shared.is_completed() {
        return Ok(());
      }
      let id = run.shared.id.clone();
      let event = match event {
        Event::ToolCallStart { call_id, tool_name, input_json, .. } => {
          Event::ToolCallStart { execution_id: id, call_id, tool_name, input_json }
        }
        Event::ToolCallEnd { call_id, tool_name, input_json, ok, duration_ms, error, .. } => {
          Event::ToolCallEnd { execution_id: id, call_id, tool_name, input_json, ok, duration_ms, error }
        }
        Event::Log { level, message, metadata_json, .. } => {
          Event::Log { execution_id: id, level, message, metadata_json }
        }
        Event::Notify { event, payload_json, .. } => Event::Notify { execution_id: id, event, payload_json },
        Event::Approval { .. } => return Err(Violation("an approval event from a worker".into())),
        Event::Nested { .. } => return Err(Violation("a nested-run event from a worker".into())),
      };
      run.shared.host.event(event);
    }
    FromWorker::Complete { key, json } => {
      let Some(run) = run_of(key) else { return Ok(()) };
      check_result(&json, &run.shared.id)?;
      release(proc, &run);
      dequeue(inner, &run);
      run.shared.complete(Completed { outcome: Outcome::Relayed(json), logs: Vec::new(), stats: Stats::default() });
      after_release(proc);
    }
    FromWorker::Unconfined { reason } => {
      if lock(&proc.st).phase != Phase::Starting {
        return Err(Violation("Unconfined after Ready".into()));
      }
      // It exits now; its executions end (after one more try on a fresh worker) with the reason.
      *lock(&proc.ended_because) = Some(format!("could not confine itself: {}", clip(&reason)));
    }
  }
  Ok(())
}

/// A call must be one the execution's own checks would have let through (`api.md` §2.3).
/// `Err` is a violation (the worker is killed); `Ok(Some(_))` refuses this call only.
fn check_call(
  inner: &Inner,
  run: &Run,
  call: &crate::sandbox::bridge::HostCall,
) -> Result<Option<crate::sandbox::bridge::HostFailure>, Violation> {
  use crate::sandbox::bridge::CallTarget;
  let calls = run.calls.fetch_add(1, Ordering::AcqRel) + 1;
  if calls > run.exec.max_tool_calls {
    return Err(Violation(format!("more than {} tool calls in one execution", run.exec.max_tool_calls)));
  }
  match call.target {
    CallTarget::Tool => {
      if inner.config.policy.self_reference.matches(&call.name) {
        return Err(Violation(format!("a call of the engine's own tool '{}'", call.name)));
      }
      if let Some(allowed) = &run.exec.allowed_tools {
        if !allowed.iter().any(|t| t == &call.name) {
          return Err(Violation(format!("a call of '{}', which is not in allowedTools", call.name)));
        }
      }
      if run.exec.denial(&call.name).is_some() {
        return Err(Violation(format!("a call of '{}', which the host's deniedTools refuse", call.name)));
      }
      // Where the host answers getTool at once (the engine's registry), unknown tools are refused
      // (an answer, not a violation: the tool may have been removed since the worker looked).
      if run.exec.host_get_tool && matches!(run.shared.host.get_tool_now(&call.name), Some(None)) {
        return Ok(Some(crate::sandbox::bridge::HostFailure {
          message: format!("Tool '{}' was not found", call.name),
          code: Some(ErrorCode::ToolNotFound.as_str().into()),
          details_json: None,
        }));
      }
    }
    CallTarget::Function => {
      if !run.exec.functions.iter().any(|f| f == &call.name) {
        return Err(Violation(format!("a call of host function '{}', which the host did not offer", call.name)));
      }
    }
  }
  Ok(None)
}

fn release(proc: &Proc, run: &Run) {
  if lock(&proc.st).runs.remove(&run.key).is_some() {
    proc.load.fetch_sub(1, Ordering::AcqRel);
  }
}

/// A draining worker dies when nothing of it is left; so does a quarantine worker.
fn after_release(proc: &Proc) {
  if (proc.draining.load(Ordering::Acquire) || proc.quarantine) && proc.live() == 0 {
    proc.kill();
  }
}

fn on_death(inner: &Arc<Inner>, proc: &Arc<Proc>, violation: Option<String>, status: Option<String>) {
  proc.dead.store(true, Ordering::Release);
  let (runs, was_ready) = {
    let mut st = lock(&proc.st);
    let was_ready = st.phase == Phase::Ready;
    st.phase = Phase::Dead;
    let mut runs: Vec<Arc<Run>> = st.runs.drain().map(|(_, r)| r).collect();
    runs.append(&mut st.pending);
    (runs, was_ready)
  };
  lock(&inner.state).workers.retain(|p| !Arc::ptr_eq(p, proc));
  if inner.disposed.load(Ordering::Acquire) {
    return;
  }
  let because = lock(&proc.ended_because).take();
  let how = match (&violation, status, because) {
    (_, _, Some(because)) => because,
    (Some(v), _, None) => format!("broke the protocol ({v}) and was killed"),
    (None, Some(s), None) => s,
    (None, None, None) => "ended".to_string(),
  };
  if !was_ready {
    for run in runs.iter().filter(|r| !r.shared.is_completed()) {
      lock(&proc.st).pending.push(run.clone());
    }
    startup_failed(inner, proc, &format!("The worker process {how} before it was ready"));
    return;
  }
  // Retries go to fresh quarantine workers: one each when there are few, so that a script that
  // crashes every worker it runs on takes only itself down; spread over `MAX_QUARANTINE` when a
  // crash took many executions with it (never thousands of processes at once).
  let retriable = runs
    .iter()
    .filter(|r| !r.shared.is_completed() && !r.called.load(Ordering::Acquire) && !r.retried.load(Ordering::Acquire))
    .count();
  let mut quarantine: Vec<Arc<Proc>> = Vec::new();
  for run in runs {
    if run.shared.is_completed() {
      continue;
    }
    let retry = !run.called.load(Ordering::Acquire) && !run.retried.swap(true, Ordering::AcqRel);
    if retry {
      run.started.store(false, Ordering::Release);
      let fresh = if retriable <= MAX_QUARANTINE || quarantine.len() < MAX_QUARANTINE {
        let mut st = lock(&inner.state);
        let p = new_proc(inner, &mut st, true, THREADS);
        quarantine.push(p.clone());
        p
      } else {
        let i = quarantine.iter().enumerate().min_by_key(|(_, p)| p.load.load(Ordering::Acquire)).map_or(0, |(i, _)| i);
        quarantine[i].clone()
      };
      assign(inner, &fresh, run);
    } else {
      dequeue(inner, &run);
      crashed(&run, &format!("The worker process running this execution {how}"));
    }
  }
}

/// Sends a host answer back to the worker that asked.
struct PipeReply {
  out: Option<Arc<Outbox>>,
  token: u64,
}

impl Reply for PipeReply {
  fn send(self: Box<Self>, result: CallResult) {
    if let Some(out) = &self.out {
      out.send(ToWorker::Reply { token: self.token, result }.encode());
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_memory_cap_grows_with_the_heaps_that_may_run_at_once() {
    let running = (THREADS + RESERVE) as u64 + 2;
    assert_eq!(memory_cap(0), MEMORY_BASE);
    assert_eq!(memory_cap(64 << 20), MEMORY_BASE + running * (64 << 20));
    assert_eq!(memory_cap(u64::MAX), u64::MAX);
  }
}
