//! `isolation: 'process'` (`api.md` §2.6): scripts run in worker processes of the package's own
//! executable, so an engine crash or a builtin that ignores the interrupt never touches the host.
//!
//! | file      | owns                                                                          |
//! |-----------|-------------------------------------------------------------------------------|
//! | `wire`    | the pipe protocol: the bridge's messages as compact frames, decoded defensively |
//! | `worker`  | the worker executable's main: fences, thread pool, seccomp, frame routing      |
//! | `seccomp` | the Linux system-call filter and the worker's other fences (rlimits, fds)      |
//! | `seatbelt`| macOS: the worker's Seatbelt profile, applied to itself; the host's footprint cap |
//! | `windows` | Windows: the job object, handle list and mitigations; Low integrity            |
//! | `winjob`  | those settings as plain numbers, unit-tested on every OS                      |
//! | `spawn`   | starting a worker per OS: the child, its pipes, how it ended                   |
//! | `pool`    | the host side: lazy workers, deadlines that kill, retries, crash reporting     |
//! | `outbox`  | the host's frames to one worker, queued so that no sender ever blocks           |
//! | `locate`  | where the worker executable is (installed package or source checkout)         |
//! | `entry`   | `codecall_worker_main`, which the launcher executable calls in this library    |
//! | `hooks`   | test-only globals (`test-hooks` feature; refused in release builds)            |

#[cfg(any(unix, windows))]
mod entry;
#[cfg(any(unix, windows))]
mod locate;
#[cfg(any(unix, windows))]
mod outbox;
#[cfg(any(unix, windows))]
mod pool;
#[cfg(unix)]
mod seatbelt;
#[cfg(unix)]
mod seccomp;
#[cfg(any(unix, windows))]
mod spawn;
#[cfg(windows)]
mod windows;
#[cfg(any(windows, test))]
mod winjob;
mod wire;
#[cfg(any(unix, windows))]
mod worker;

#[cfg(feature = "test-hooks")]
mod hooks;

// What the rest of the sandbox layer (and the worker executable) uses.
#[cfg(feature = "test-hooks")]
pub use hooks::install as install_test_hooks;
#[cfg(any(unix, windows))]
pub use locate::{worker_library, worker_path};
#[cfg(any(unix, windows))]
pub use pool::{ProcessAborter, ProcessPool};
pub use wire::{check_result, read_frame, FromWorker, ToWorker};
#[cfg(any(unix, windows))]
pub use worker::main as worker_main;
