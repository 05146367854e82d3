//! The pool behind a `Sandbox`: threads of this process or worker processes (`api.md` §2.6).
//! Both take the same jobs and deliver results the same way; only where the engine runs differs.

use std::sync::{Arc, Mutex};

use std::thread::JoinHandle;

use super::config::{ExecuteConfig, Isolation, SandboxConfig};
use super::error::StartError;
use super::pool::{Aborter, Pool};
#[cfg(any(unix, windows))]
use super::process::{ProcessAborter, ProcessPool};
use super::shared::Shared;
use super::warnings::Warnings;

/// Reads how many executions wait to start; `None` once the pool is gone or disposed.
pub type QueueProbe = Box<dyn Fn() -> Option<usize> + Send>;

pub enum Runner {
  Thread(Pool),
  #[cfg(any(unix, windows))]
  Process(ProcessPool),
}

#[derive(Clone)]
pub enum RunnerAborter {
  Thread(Aborter),
  #[cfg(any(unix, windows))]
  Process(ProcessAborter),
}

impl Runner {
  /// Starts the pool `config.isolation` asks for. Without a worker executable, process isolation
  /// falls back to threads and says so in `warnings`.
  pub fn new(config: Arc<SandboxConfig>, warnings: Arc<Mutex<Warnings>>) -> Result<Self, StartError> {
    match config.isolation {
      Isolation::Thread => Pool::reporting_to(config, warnings).map(Runner::Thread),
      #[cfg(any(unix, windows))]
      Isolation::Process => {
        match super::process::worker_path().and_then(|exe| Ok((exe, super::process::worker_library()?))) {
          Ok((exe, library)) => ProcessPool::new(config, exe, library, warnings).map(Runner::Process),
          Err(why) => {
            warnings
              .lock()
              .unwrap_or_else(|p| p.into_inner())
              .push(format!("isolation 'process' is not available ({why}): scripts run in threads of this process"));
            Pool::reporting_to(config, warnings).map(Runner::Thread)
          }
        }
      }
      #[cfg(not(any(unix, windows)))]
      Isolation::Process => {
        warnings
          .lock()
          .unwrap_or_else(|p| p.into_inner())
          .push("isolation 'process' is not supported on this platform: scripts run in threads".into());
        Pool::reporting_to(config, warnings).map(Runner::Thread)
      }
    }
  }

  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    match self {
      Self::Thread(pool) => pool.submit(script, exec, shared),
      #[cfg(any(unix, windows))]
      Self::Process(pool) => pool.submit(script, exec, shared),
    }
  }

  /// A handle that queues executions on this pool from any thread (a saved script a plan calls,
  /// §11); it does not keep the pool alive.
  pub fn submitter(&self) -> Submitter {
    Submitter(self.aborter())
  }

  pub fn aborter(&self) -> RunnerAborter {
    match self {
      Self::Thread(pool) => RunnerAborter::Thread(pool.aborter()),
      #[cfg(any(unix, windows))]
      Self::Process(pool) => RunnerAborter::Process(pool.aborter()),
    }
  }

  /// See `QueueProbe`.
  pub fn queue_probe(&self) -> QueueProbe {
    match self {
      Self::Thread(pool) => Box::new(pool.queue_probe()),
      #[cfg(any(unix, windows))]
      Self::Process(pool) => Box::new(pool.queue_probe()),
    }
  }

  pub fn dispose(&mut self) -> Vec<JoinHandle<()>> {
    match self {
      Self::Thread(pool) => pool.dispose(),
      #[cfg(any(unix, windows))]
      Self::Process(pool) => pool.dispose(),
    }
  }

  pub fn is_disposed(&self) -> bool {
    match self {
      Self::Thread(pool) => pool.is_disposed(),
      #[cfg(any(unix, windows))]
      Self::Process(pool) => pool.is_disposed(),
    }
  }
}

impl RunnerAborter {
  pub fn abort(&self, shared: &Arc<Shared>) {
    match self {
      Self::Thread(a) => a.abort(shared),
      #[cfg(any(unix, windows))]
      Self::Process(a) => a.abort(shared),
    }
  }
}

/// Queues executions from any thread, while the pool lives (see `Runner::submitter`).
#[derive(Clone)]
pub struct Submitter(RunnerAborter);

impl Submitter {
  /// Queues a script; once the pool is gone it completes at once with `POOL_DISPOSED`.
  pub fn submit(&self, script: String, exec: ExecuteConfig, shared: Arc<Shared>) {
    match &self.0 {
      RunnerAborter::Thread(a) => a.submit(script, exec, shared),
      #[cfg(any(unix, windows))]
      RunnerAborter::Process(a) => a.submit(script, exec, shared),
    }
  }

  pub fn abort(&self, shared: &Arc<Shared>) {
    self.0.abort(shared);
  }
}
