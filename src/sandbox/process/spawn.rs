//! Starting a worker process, per OS: the child, its two pipes, and how it ended.
//!
//! - Unix: `std::process::Command` with a cleared environment; the worker fences itself
//!   (`seccomp`, `seatbelt`).
//! - Windows: `windows::spawn` — created suspended in a job object of its own, only its pipes
//!   inherited, mitigation policies on; it lowers itself to Low integrity before any script.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The worker's environment: only what the host sets (module `worker`'s `ENV_*`).
pub(super) type Env = Vec<(OsString, OsString)>;

/// A started worker.
pub(super) struct Spawned {
  pub child: WorkerChild,
  pub stdin: ToWorkerPipe,
  pub stdout: FromWorkerPipe,
  /// What of the confinement could not be applied (Windows).
  pub warnings: Vec<String>,
}

#[cfg(unix)]
pub(super) type ToWorkerPipe = std::process::ChildStdin;
#[cfg(windows)]
pub(super) type ToWorkerPipe = std::fs::File;

/// A worker process. `kill` and `wait` are called under the pool's lock on it, so a pid that has
/// been reaped is never signalled.
pub(super) struct WorkerChild {
  #[cfg(unix)]
  child: std::process::Child,
  #[cfg(windows)]
  worker: super::windows::Worker,
}

impl WorkerChild {
  #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
  pub fn id(&self) -> u32 {
    #[cfg(unix)]
    return self.child.id();
    #[cfg(windows)]
    return self.worker.id();
  }

  /// Ends it at once (SIGKILL; Windows: its job is terminated).
  pub fn kill(&mut self) {
    #[cfg(unix)]
    let _ = self.child.kill();
    #[cfg(windows)]
    self.worker.kill();
  }

  /// Whether it has ended (reaping it if so), without waiting.
  pub fn has_ended(&mut self) -> std::io::Result<bool> {
    #[cfg(unix)]
    return self.child.try_wait().map(|s| s.is_some());
    #[cfg(windows)]
    return Ok(self.worker.has_ended());
  }

  /// Waits up to `grace` for it to end by itself, then kills it; how it ended, in words.
  pub fn reap(&mut self, grace: Duration) -> Option<String> {
    let until = std::time::Instant::now() + grace;
    while !self.has_ended().unwrap_or(true) {
      if std::time::Instant::now() >= until {
        self.kill();
        break;
      }
      std::thread::sleep(Duration::from_millis(5));
    }
    self.wait()
  }

  /// Waits for it to end; how it ended, in words ("exited with code 3").
  pub fn wait(&mut self) -> Option<String> {
    #[cfg(unix)]
    return self.child.wait().ok().map(describe_exit);
    #[cfg(windows)]
    return self.worker.wait().map(super::windows::describe_exit);
  }
}

/// Starts `exe` with exactly `env`; its stderr is ours when `stderr`, else discarded.
pub(super) fn spawn(exe: &Path, env: Env, stderr: bool, memory: u64) -> Result<Spawned, String> {
  #[cfg(unix)]
  {
    use std::process::{Command, Stdio};
    let _ = memory; // Unix workers set their own RLIMIT_AS; macOS's footprint is watched by the pool.
    let mut command = Command::new(exe);
    let err = if stderr { Stdio::inherit() } else { Stdio::null() };
    command.env_clear().envs(env).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(err);
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    Ok(Spawned { child: WorkerChild { child }, stdin, stdout: FromWorkerPipe::new(stdout), warnings: Vec::new() })
  }
  #[cfg(windows)]
  {
    use std::os::windows::io::AsHandle;
    let mut env = env;
    // The loader and Winsock's providers read these; the rest of the environment is cleared. Under
    // Wine, its own variables too (the prefix, DLL paths) and PATH, where a Wine without a DLL
    // Windows ships finds a stand-in (test-platforms' bcryptprimitives.dll): on Windows the worker
    // has no PATH, so no DLL is ever looked for outside the system's own folders.
    let wine = super::windows::under_wine();
    for (name, value) in std::env::vars_os() {
      let keep = name.to_str().is_some_and(|n| {
        let upper = n.to_ascii_uppercase();
        upper == "SYSTEMROOT" || upper == "WINDIR" || (wine && (upper.starts_with("WINE") || upper == "PATH"))
      });
      if keep {
        env.push((name, value));
      }
    }
    let err = if stderr { std::io::stderr().as_handle().try_clone_to_owned().ok() } else { None };
    let s = super::windows::spawn(exe, &env, err, memory)?;
    Ok(Spawned {
      child: WorkerChild { worker: s.worker },
      stdin: s.stdin,
      stdout: FromWorkerPipe(s.stdout),
      warnings: s.warnings,
    })
  }
}

/// The read end of a worker's stdout. Unix: non-blocking, spinning briefly before it sleeps in
/// `poll` (`wire::SpinRead`); Windows: a blocking anonymous pipe.
#[cfg(unix)]
pub(super) struct FromWorkerPipe {
  spin: super::wire::SpinRead,
  /// Owns the fd `spin` reads.
  _owner: std::process::ChildStdout,
}

#[cfg(unix)]
impl FromWorkerPipe {
  /// How long a reader spins for a worker's next frame before it sleeps.
  const SPIN: Duration = Duration::from_micros(150);

  fn new(stdout: std::process::ChildStdout) -> Self {
    use std::os::fd::AsRawFd;
    Self { spin: super::wire::SpinRead::new(stdout.as_raw_fd(), Self::SPIN), _owner: stdout }
  }
}

#[cfg(unix)]
impl Read for FromWorkerPipe {
  fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
    self.spin.read(buf)
  }
}

#[cfg(windows)]
pub(super) struct FromWorkerPipe(std::fs::File);

#[cfg(windows)]
impl Read for FromWorkerPipe {
  fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
    // std reads a closed pipe's ERROR_BROKEN_PIPE as the end of the stream.
    self.0.read(buf)
  }
}

#[cfg(unix)]
fn describe_exit(status: std::process::ExitStatus) -> String {
  use std::os::unix::process::ExitStatusExt;
  match (status.code(), status.signal()) {
    (_, Some(signal)) => {
      let name = match signal {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGSYS => " (SIGSYS: a forbidden system call)",
        libc::SIGBUS => " (SIGBUS)",
        _ => "",
      };
      format!("was killed by signal {signal}{name}")
    }
    (Some(code), None) => format!("exited with code {code}"),
    (None, None) => "ended".into(),
  }
}
