//! The worker process (`codecall-worker`, `src/bin/codecall-worker.rs`): runs executions for one
//! host on its own small thread pool, with the thread mode's engine, limits and globals.
//!
//! Start-up order matters under seccomp (`docs/design/process-isolation.md`): fence the process
//! (parent death, no core, address-space limit, no inherited fds), make glibc use one arena, read
//! the host's `Hello`, start every thread — the executors and `pool::RESERVE` spares for threads
//! that may be set aside, stuck in a builtin — each making its engine and a prepared context, run
//! a few executions, then install the filter (macOS: apply the Seatbelt profile) and say `Ready`. From then on no thread is created
//! and none exits: the process ends with `_exit` when the host closes the pipe.
//!
//! Windows has no filter: the host started the worker confined (`windows::spawn`: job object,
//! handle list, mitigations) and the worker lowers itself to Low integrity at that same point.
//!
//! fd 0 carries frames from the host, fd 1 frames to it, fd 2 a panic's text.

use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(unix)]
use super::seccomp;
use super::wire::{read_frame, FromWorker, ToWorker, WireError, MAX_FRAME, PROTOCOL, VERSION};
use crate::sandbox::bridge::{Event, HostCall, Reply};
use crate::sandbox::config::{ExecuteConfig, SandboxConfig};
use crate::sandbox::outcome::Completed;
use crate::sandbox::pool::{Aborter, Pool};
use crate::sandbox::shared::{lock, Host, Shared};

/// Most executor threads per worker process. Executions awaiting the host hold no thread, so two
/// serve many; more processes give more cores. The host's `Hello` says how many this one runs
/// (its share of `poolSize`, which bounds the executions running at once over all workers).
pub const THREADS: usize = 2;

/// How long the frame reader spins for the host's next frame before it sleeps.
#[cfg(unix)]
const SPIN: Duration = Duration::from_micros(150);

/// Environment variables the host sets for its worker (the rest of the environment is cleared).
pub const ENV_PARENT: &str = "CODECALL_PARENT_PID";
pub const ENV_ADDRESS_SPACE: &str = "CODECALL_ADDRESS_SPACE";
/// The host's time zone, passed on as it has it (the rest of the environment is cleared), so a
/// worker's local time is the host's: Node reads `TZ` too, else `/etc/localtime`, as the worker then does.
pub const ENV_TZ: &str = "TZ";

/// The worker's `main`. Never returns.
pub fn main() -> ! {
  exit_now(run())
}

/// Ends the process at once, without running destructors or joining threads (worker threads never
/// exit: under the filter, thread teardown would be a forbidden syscall).
fn exit_now(code: i32) -> ! {
  #[cfg(unix)]
  // SAFETY: `_exit` ends the process; nothing of it needs tearing down.
  unsafe {
    libc::_exit(code)
  }
  #[cfg(windows)]
  {
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};
    // SAFETY: ends this process (the pseudo-handle is always valid); it does not return.
    unsafe { TerminateProcess(GetCurrentProcess(), code as u32) };
    std::process::exit(code)
  }
}

fn run() -> i32 {
  #[cfg(unix)]
  let (mut warnings, mut input) = {
    let parent = std::env::var(ENV_PARENT).ok().and_then(|v| v.parse::<u32>().ok());
    let address_space = std::env::var(ENV_ADDRESS_SPACE).ok().and_then(|v| v.parse::<u64>().ok());
    let warnings = seccomp::fence_self(parent, address_space);
    seccomp::limit_malloc_arenas();
    seccomp::warm_libc();
    (warnings, BufReader::with_capacity(64 << 10, super::wire::SpinRead::new(0, SPIN)))
  };
  // Windows: the job ends the worker with its host; no error box may hold a crashed one.
  #[cfg(windows)]
  let (mut warnings, mut input) = {
    super::windows::quiet_errors();
    (Vec::<String>::new(), BufReader::with_capacity(64 << 10, std::io::stdin().lock()))
  };

  let mut body = Vec::new();
  let config = match read_frame(&mut input, MAX_FRAME, &mut body).and_then(|k| ToWorker::decode(k, &body)) {
    Ok(ToWorker::Hello { config }) => config,
    Ok(_) => return 2,
    Err(WireError::Closed) => return 0,
    Err(_) => return 2,
  };

  let router = Arc::new(Router::default());
  let mut config = config;
  let threads = config.pool_size.clamp(1, THREADS);
  config.pool_size = threads;
  config.max_queue = usize::MAX;
  // Never dropped: a dropped pool would let its threads exit, and a thread's exit makes system
  // calls the filter forbids. The process ends with `_exit` instead.
  let pool = match Pool::for_worker_process(Arc::new(config)) {
    Ok(pool) => std::mem::ManuallyDrop::new(pool),
    Err(error) => {
      warnings.push(error.to_string());
      return 3;
    }
  };
  warm_up(&pool, threads);
  // macOS: Seatbelt, applied to the whole process now that every thread is up and warm; a worker
  // that cannot be confined runs no script (the host ends its executions with the reason).
  #[cfg(target_os = "macos")]
  let seccomp = match super::seatbelt::confine() {
    Ok(how) => {
      if how == super::seatbelt::Confined::Inherited {
        warnings.push(
          "runs under the sandbox it inherited from its host (a second Seatbelt profile cannot be applied)".into(),
        );
      }
      Ok(())
    }
    Err(reason) => {
      send(&FromWorker::Unconfined { reason }.encode());
      return 3;
    }
  };
  // Linux: the system-call filter. The reason crosses the pipe as text (the host only shows it in
  // a warning).
  #[cfg(all(unix, not(target_os = "macos")))]
  let seccomp = seccomp::install_filter().map_err(|e| e.to_string());
  // Windows: Low integrity and no dynamic code, or no script at all.
  #[cfg(windows)]
  let seccomp = match super::windows::confine() {
    Ok(more) => {
      warnings.extend(more);
      Ok(())
    }
    Err(reason) => {
      send(&FromWorker::Unconfined { reason }.encode());
      return 3;
    }
  };
  send(&FromWorker::Ready { protocol: PROTOCOL, version: VERSION.into(), seccomp, warnings }.encode());

  let aborter = pool.aborter();
  loop {
    let msg = match read_frame(&mut input, MAX_FRAME, &mut body).and_then(|k| ToWorker::decode(k, &body)) {
      Ok(msg) => msg,
      Err(WireError::Closed) => return 0,
      Err(_) => return 2,
    };
    match msg {
      ToWorker::Start { key, id, script, exec } => start(&pool, &router, key, id, script, exec),
      ToWorker::Reply { token, result } => {
        let reply = lock(&router.replies).remove(&token);
        if let Some(reply) = reply {
          reply.send(result);
        }
      }
      ToWorker::ToolInfo { token, json } => {
        if let Some(tx) = lock(&router.tools).remove(&token) {
          let _ = tx.try_send(json);
        }
      }
      ToWorker::Stop { key } => stop(&aborter, &router, key),
      ToWorker::Hold { key, held } => {
        let shared = lock(&router.executions).get(&key).cloned();
        match (shared, held) {
          (Some(shared), true) => shared.hold(),
          (Some(shared), false) => shared.release(),
          (None, _) => {}
        }
      }
      ToWorker::Hello { .. } => return 2,
    }
  }
}

fn start(pool: &Pool, router: &Arc<Router>, key: u64, id: String, script: String, exec: ExecuteConfig) {
  let host = Arc::new(PipeHost { key, router: router.clone() });
  let shared = Arc::new(Shared::new(id, host, exec.timeout));
  lock(&router.executions).insert(key, shared.clone());
  pool.submit(script, exec, shared);
}

fn stop(aborter: &Aborter, router: &Router, key: u64) {
  let shared = lock(&router.executions).get(&key).cloned();
  if let Some(shared) = shared {
    aborter.abort(&shared);
  }
}

/// Runs one small execution on every executor thread at once, so that each thread has made every
/// system call of its start-up (thread-local set-up, first allocations, a QuickJS runtime) before
/// the filter goes in.
fn warm_up(pool: &Pool, threads: usize) {
  let (tx, rx) = std::sync::mpsc::channel();
  let host: Arc<dyn Host> = Arc::new(WarmUpHost(Mutex::new(tx)));
  let sandbox = SandboxConfig::default();
  for i in 0..threads {
    let mut exec = ExecuteConfig::new(&sandbox);
    exec.timeout = Duration::from_secs(10);
    let shared = Arc::new(Shared::new(format!("warm-up-{i}"), host.clone(), exec.timeout));
    // Local time too (`seccomp::warm_libc` loaded the zone; this walks QuickJS's own path to it).
    let script = "const o = { a: [1, 2, 3], s: 'x'.repeat(1000) }, d = new Date(2020, 0, 1);\n\
                  JSON.stringify(o).length + d.getHours() + d.toString().length + d.toLocaleString().length +\n\
                  Date.parse('2020-01-01T00:00:00') + Math.random()";
    pool.submit(script.into(), exec, shared);
  }
  for _ in 0..threads {
    let _ = rx.recv_timeout(Duration::from_secs(10));
  }
}

struct WarmUpHost(Mutex<std::sync::mpsc::Sender<()>>);

impl Host for WarmUpHost {
  fn call(&self, _call: HostCall, _reply: Box<dyn Reply>) {}
  fn event(&self, _event: Event) {}
  fn get_tool(&self, _name: &str, _timeout: Duration) -> Option<String> {
    None
  }
  fn complete(&self, _completed: Completed) {
    let _ = lock(&self.0).send(());
  }
}

/// What the worker's host adapters share: executions by key, and the answers they wait for.
#[derive(Default)]
struct Router {
  next_token: AtomicU64,
  executions: Mutex<HashMap<u64, Arc<Shared>>>,
  replies: Mutex<HashMap<u64, Box<dyn Reply>>>,
  tools: Mutex<HashMap<u64, SyncSender<Option<String>>>>,
}

impl Router {
  fn token(&self) -> u64 {
    self.next_token.fetch_add(1, Ordering::Relaxed) + 1
  }
}

/// The bridge's host side inside a worker: every message becomes a frame to the real host.
struct PipeHost {
  key: u64,
  router: Arc<Router>,
}

impl Host for PipeHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    let token = self.router.token();
    lock(&self.router.replies).insert(token, reply);
    send(&FromWorker::Call { key: self.key, token, call }.encode());
  }

  fn event(&self, event: Event) {
    send(&FromWorker::Event { key: self.key, event }.encode());
  }

  fn get_tool(&self, name: &str, timeout: Duration) -> Option<String> {
    let token = self.router.token();
    let (tx, rx) = sync_channel(1);
    lock(&self.router.tools).insert(token, tx);
    send(&FromWorker::GetTool { key: self.key, token, name: name.to_string() }.encode());
    let answer = rx.recv_timeout(timeout).ok().flatten();
    lock(&self.router.tools).remove(&token);
    answer
  }

  fn started(&self) {
    send(&FromWorker::Started { key: self.key }.encode());
  }

  fn complete(&self, completed: Completed) {
    lock(&self.router.executions).remove(&self.key);
    send(&FromWorker::Complete { key: self.key, json: completed.to_json() }.encode());
  }
}

/// Serializes writes of whole frames to fd 1.
static OUT: Mutex<()> = Mutex::new(());

#[cfg(windows)]
fn send(frame: &[u8]) {
  use std::io::Write;
  let _guard = lock(&OUT);
  let mut out = std::io::stdout().lock();
  if out.write_all(frame).and_then(|()| out.flush()).is_err() {
    // The host is gone: nothing is left to do.
    exit_now(0)
  }
}

#[cfg(unix)]
fn send(frame: &[u8]) {
  let _guard = lock(&OUT);
  let mut rest = frame;
  while !rest.is_empty() {
    // SAFETY: `rest` is a live slice; fd 1 is the pipe to the host for the life of the process.
    let n = unsafe { libc::write(1, rest.as_ptr().cast(), rest.len()) };
    if n > 0 {
      rest = &rest[n as usize..];
    } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
      continue;
    } else {
      // The host is gone: nothing is left to do.
      exit_now(0)
    }
  }
}
