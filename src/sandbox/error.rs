//! The sandbox layer's errors. Their text is what users read (`new Sandbox` throws it; an execution
//! that cannot start ends `WORKER_STARTUP_FAILED` with it; a missing worker becomes a warning), so
//! each variant keeps one exact wording.

/// Why the sandbox, or a part of it, could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
  /// A thread of the pool (an executor, the watchdog, the process supervisor) could not be spawned.
  #[error("could not start {0}: {1}")]
  Thread(&'static str, #[source] std::io::Error),
  /// QuickJS could not make a runtime or a context (`what` says which, as users read it).
  #[error("{what}: {detail}")]
  QuickJs { what: &'static str, detail: String },
  /// The prelude (`engine/prelude.js`) did not compile or did not run.
  #[error("{0}")]
  Prelude(String),
  /// Process isolation: no worker executable where the addon looks for it.
  #[error("{0}")]
  NoWorker(String),
}

/// Something a worker process sent that the protocol does not allow (wrong protocol, a second
/// `Ready`, a call it may not make, a result that is not one). The worker is killed and replaced;
/// its executions end `WORKER_CRASHED`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(pub String);
