//! `isolation: 'process'` (`api.md` §2.6): scripts run in worker processes of the package's own
//! executable, so an engine crash or a builtin that ignores the interrupt never touches the host.
//!
//! | file      | owns                                                                          |
//! |-----------|-------------------------------------------------------------------------------|
//! | `wire`    | the pipe protocol: the bridge's messages as compact frames, decoded defensively |
//! | `worker`  | the worker executable's main: fences, thread pool, seccomp, frame routing      |
//! | `seccomp` | the Linux system-call filter and the worker's other fences (rlimits, fds)      |
//! | `pool`    | the host side: lazy workers, deadlines that kill, retries, crash reporting     |
//! | `outbox`  | the host's frames to one worker, queued so that no sender ever blocks           |
//! | `locate`  | where the worker executable is (installed package or source checkout)         |
//! | `hooks`   | test-only globals (`test-hooks` feature; refused in release builds)            |

#[cfg(unix)]
pub mod locate;
#[cfg(unix)]
mod outbox;
#[cfg(unix)]
pub mod pool;
#[cfg(unix)]
pub mod seccomp;
pub mod wire;
#[cfg(unix)]
pub mod worker;

#[cfg(feature = "test-hooks")]
pub mod hooks;
