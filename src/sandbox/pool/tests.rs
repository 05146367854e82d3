//! The scheduler: a ready execution runs on any free thread, and a thread stuck in native code
//! (here: a host `getTool` that blocks the execution's thread and ignores its deadline, which is
//! what a builtin that does not poll the interrupt looks like to the pool) holds only its own.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Pool;
use crate::sandbox::bridge::{CallResult, Event, HostCall, Reply};
use crate::sandbox::config::{ExecuteConfig, SandboxConfig};
use crate::sandbox::outcome::{Completed, Outcome};
use crate::sandbox::shared::{Host, Shared};
use crate::sandbox::warnings::Warnings;

/// Answers every tool call after `delay` (from another thread, as a real host does); `getTool`
/// blocks its caller's thread for `stuck`, whatever time the execution has left.
struct SlowHost {
  delay: Duration,
  stuck: Duration,
  done: Mutex<Sender<(String, Completed, Instant)>>,
  id: String,
}

impl Host for SlowHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    let delay = self.delay;
    std::thread::spawn(move || {
      std::thread::sleep(delay);
      reply.send(CallResult::Ok(Some(format!("\"{}\"", call.name))));
    });
  }
  fn event(&self, _: Event) {}
  fn get_tool(&self, _: &str, _timeout: Duration) -> Option<String> {
    std::thread::sleep(self.stuck);
    None
  }
  fn complete(&self, c: Completed) {
    if let Ok(d) = self.done.lock() {
      let _ = d.send((self.id.clone(), c, Instant::now()));
    }
  }
}

struct Bench {
  pool: Pool,
  config: Arc<SandboxConfig>,
  tx: Sender<(String, Completed, Instant)>,
  rx: Receiver<(String, Completed, Instant)>,
}

impl Bench {
  fn new(pool_size: usize, warnings: Option<Arc<Mutex<Warnings>>>) -> Self {
    // A debug build's QuickJS frames are large: room for the recursion below.
    let mut config = SandboxConfig { pool_size, max_stack_bytes: 4 << 20, ..SandboxConfig::default() };
    config.policy.allow_loops = true;
    config.max_iterations = Some(1 << 50);
    let config = Arc::new(config);
    let pool = match warnings {
      Some(w) => Pool::reporting_to(config.clone(), w),
      None => Pool::new(config.clone()),
    }
    .unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = channel();
    Self { pool, config, tx, rx }
  }

  /// Submits `script`; its host answers tool calls after `delay_ms` and blocks in `getTool` for
  /// `stuck_ms`. Returns the execution's shared state (to abort it).
  fn submit(&self, id: &str, script: &str, timeout_ms: u64, delay_ms: u64, stuck_ms: u64) -> Arc<Shared> {
    let host = Arc::new(SlowHost {
      delay: Duration::from_millis(delay_ms),
      stuck: Duration::from_millis(stuck_ms),
      done: Mutex::new(self.tx.clone()),
      id: id.into(),
    });
    let mut exec = ExecuteConfig::new(&self.config);
    exec.timeout = Duration::from_millis(timeout_ms);
    exec.host_get_tool = stuck_ms > 0;
    let shared = Arc::new(Shared::new(id.into(), host, exec.timeout));
    self.pool.submit(script.into(), exec, shared.clone());
    shared
  }

  /// The next `n` results, by id.
  fn results(&self, n: usize) -> Vec<(String, Completed, Instant)> {
    let mut out: Vec<_> =
      (0..n).map(|_| self.rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no result"))).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
  }
}

fn ok(c: &Completed) -> String {
  match &c.outcome {
    Outcome::Ok { result_json } => result_json.clone().unwrap_or_default(),
    other => panic!("expected ok, got {other:?}"),
  }
}

fn code(c: &Completed) -> String {
  c.outcome.code().unwrap_or_else(|| "ok".into())
}

/// `poolSize: 1`: two executions park on a tool; a third gets its only thread stuck far past
/// its deadline. Its answer is `TIMEOUT` on time, and the neighbours' answers — arriving while
/// the thread is still stuck — run on the thread that replaced it, well within their deadlines.
#[test]
fn a_stuck_thread_holds_only_its_own_execution() {
  let bench = Bench::new(1, None);
  let neighbour = "const r = await callTool('slow'); return r + '!'";
  bench.submit("n1", neighbour, 2_500, 1_000, 0);
  bench.submit("n2", neighbour, 2_500, 1_000, 0);
  std::thread::sleep(Duration::from_millis(50));
  let started = Instant::now();
  bench.submit("stuck", "getTool('x'); return 1", 200, 0, 6_000);
  let results = bench.results(3);
  let by = |id: &str| results.iter().find(|r| r.0 == id).unwrap_or_else(|| panic!("{id}"));
  assert_eq!(ok(&by("n1").1), "\"slow!\"");
  assert_eq!(ok(&by("n2").1), "\"slow!\"");
  assert_eq!(code(&by("stuck").1), "TIMEOUT");
  // Not a timing test: the thread stays stuck for 6 s, so the neighbours can only have
  // finished (within their 2.5 s) on another thread.
  assert!(by("n1").2 < started + Duration::from_secs(5));
  // And the pool goes on.
  bench.submit("after", "return 2", 1_000, 0, 0);
  assert_eq!(ok(&bench.results(1)[0].1), "2");
}

/// Two threads, one execution parked on each (the old pool kept a parked execution on the
/// thread that started it); a third spins on one of them until its own deadline. Both answers
/// run as soon as they arrive, on the free thread.
#[test]
fn a_ready_execution_runs_on_any_free_thread() {
  let bench = Bench::new(2, None);
  let neighbour = "const r = await callTool('t'); return r";
  bench.submit("n1", neighbour, 1_500, 300, 0);
  bench.submit("n2", neighbour, 1_500, 300, 0);
  std::thread::sleep(Duration::from_millis(50));
  bench.submit("spin", "while (true) {}", 4_000, 0, 0);
  let first = bench.results(2);
  assert_eq!(first.iter().map(|r| ok(&r.1)).collect::<Vec<_>>(), ["\"t\"", "\"t\""]);
  assert_eq!(code(&bench.results(1)[0].1), "TIMEOUT");
}

/// Past `max_set_aside` stuck threads no more are replaced, and a warning says so; once they
/// return, the pool runs again.
#[test]
fn the_threads_set_aside_are_bounded_and_said() {
  let warnings = Arc::new(Mutex::new(Warnings::default()));
  let bench = Bench::new(1, Some(warnings.clone()));
  // max_set_aside is 4 for a one-thread pool: five stuck executions, one after the other.
  for i in 0..5 {
    bench.submit(&format!("s{i}"), "getTool('x'); return 1", 100, 0, 5_000);
    std::thread::sleep(Duration::from_millis(150));
  }
  let results = bench.results(5);
  assert!(
    results.iter().all(|r| code(&r.1) == "TIMEOUT"),
    "{:?}",
    results.iter().map(|r| code(&r.1)).collect::<Vec<_>>()
  );
  // The fifth is found stuck `STUCK_AFTER` after its timeout was reported.
  let said = || warnings.lock().unwrap_or_else(|p| p.into_inner()).all.clone();
  let until = Instant::now() + Duration::from_secs(5);
  while said().is_empty() && Instant::now() < until {
    std::thread::sleep(Duration::from_millis(20));
  }
  let said = said();
  assert!(said.iter().any(|w| w.contains("threads of this sandbox are set aside")), "{said:?}");
  bench.submit("after", "return 3", 5_000, 0, 0);
  assert_eq!(ok(&bench.results(1)[0].1), "3");
}

/// QuickJS's stack check follows a runtime to the thread it runs on now: after moves, modest
/// recursion works (no false overflow) and runaway recursion is `STACK_OVERFLOW` (not a crash).
#[test]
fn the_stack_check_follows_the_runtime_between_threads() {
  let bench = Bench::new(2, None);
  let moves = "for (let k = 0; k < 4; k++) await callTool('t');\n";
  let deep = format!("{moves}const f = (n) => (n === 0 ? 0 : 1 + f(n - 1)); return f(300)");
  let runaway = format!("{moves}const g = (n) => g(n + 1) + 1; return g(0)");
  for i in 0..40 {
    let script = if i % 2 == 0 { &deep } else { &runaway };
    bench.submit(&format!("e{i:02}"), script, 20_000, 1 + (i % 7), 0);
  }
  for (i, r) in bench.results(40).iter().enumerate() {
    if i % 2 == 0 {
      assert_eq!(ok(&r.1), "300", "{}", r.0);
    } else {
      assert_eq!(code(&r.1), "STACK_OVERFLOW", "{}", r.0);
    }
  }
}

/// `dispose` ends parked and queued executions with `POOL_DISPOSED`, frees their runtimes on the
/// pool's threads, and every thread leaves.
#[test]
fn dispose_ends_everything_and_every_thread_leaves() {
  let mut bench = Bench::new(2, None);
  for i in 0..40 {
    // Answers at 60 s: they park until disposed.
    bench.submit(&format!("p{i:02}"), "await callTool('t'); return 1", 30_000, 60_000, 0);
  }
  for i in 0..3 {
    bench.submit(&format!("s{i}"), "let i = 0; for (;;) i++", 30_000, 0, 0);
  }
  std::thread::sleep(Duration::from_millis(300));
  let threads = bench.pool.dispose();
  let results = bench.results(43);
  assert!(
    results.iter().all(|r| code(&r.1) == "POOL_DISPOSED"),
    "{:?}",
    results.iter().map(|r| code(&r.1)).collect::<Vec<_>>()
  );
  let (tx, rx) = channel();
  std::thread::spawn(move || {
    threads.into_iter().for_each(|t| drop(t.join()));
    let _ = tx.send(());
  });
  assert!(rx.recv_timeout(Duration::from_secs(20)).is_ok(), "a pool thread did not leave");
}

/// An abort (whose report is due 40 ms later) and then `dispose` at once, while the thread is
/// stuck in native code: the result is the abort's, at once — not when the builtin returns.
#[test]
fn dispose_reports_a_stopped_execution_whose_thread_is_stuck() {
  let mut bench = Bench::new(1, None);
  let shared = bench.submit("x", "getTool('x'); return 1", 10_000, 0, 4_000);
  std::thread::sleep(Duration::from_millis(200));
  let aborted = Instant::now();
  bench.pool.aborter().abort(&shared);
  drop(bench.pool.dispose());
  let (_, completed, at) = bench.rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("no result"));
  assert_eq!(code(&completed), "EXECUTION_ABORTED");
  // Not a timing test: the builtin returns 3.8 s after the abort, and the result did not wait
  // for it (it did, before dispose reported what its drained timers would have).
  assert!(at < aborted + Duration::from_secs(3), "reported only when the builtin returned");
}

/// `dispose` while the watchdog holds an execution's queue timer it has popped and not yet
/// handled: the execution, never started, is still reported (`POOL_DISPOSED`).
#[test]
fn dispose_racing_a_popped_queue_timer_still_reports() {
  use crate::sandbox::shared::{lock, Stop};
  let mut bench = Bench::new(1, None);
  bench.submit("blocker", "let i = 0; for (;;) i++", 2_000, 0, 0);
  std::thread::sleep(Duration::from_millis(100));
  bench.submit("s", "return 1", 2_000, 0, 0);
  // What the watchdog's `pop_due` would have taken out for "s".
  let popped: Vec<Arc<Shared>> = {
    let mut st = lock(&bench.pool.inner.watchdog.state);
    let all: Vec<_> = st.timers.drain().collect();
    let mut popped = Vec::new();
    for (timer, shared) in all {
      if shared.id == "s" {
        popped.push(shared);
      } else {
        st.timers.add(Instant::now() + Duration::from_secs(60), (timer, shared));
      }
    }
    popped
  };
  assert_eq!(popped.len(), 1);
  drop(bench.pool.dispose());
  // The watchdog goes on with the popped timer, as `watchdog_loop` does.
  for shared in &popped {
    if !shared.is_started() && shared.request_stop(Stop::QueueTimeout) {
      shared.report_stop();
    }
  }
  let results = bench.results(2);
  assert_eq!(
    results.iter().map(|r| (r.0.as_str(), code(&r.1))).collect::<Vec<_>>(),
    [("blocker", "POOL_DISPOSED".to_string()), ("s", "POOL_DISPOSED".to_string())]
  );
}

/// Many executions parked at once move between threads as their answers come: every one ends
/// with its own answer.
#[test]
fn parked_executions_move_between_threads() {
  let bench = Bench::new(2, None);
  for i in 0..200 {
    bench.submit(
      &format!("e{i:03}"),
      &format!("let s = 0; for (let k = 0; k < 3; k++) s += (await callTool('t{i}')).length; return s + {i}"),
      10_000,
      5,
      0,
    );
  }
  let results = bench.results(200);
  for (i, r) in results.iter().enumerate() {
    assert_eq!(ok(&r.1), format!("{}", 3 * format!("t{i}").len() + i), "{}", r.0);
  }
}
