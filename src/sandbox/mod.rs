//! The sandbox layer: runs validated scripts in QuickJS under limits, and bridges every tool call
//! to the host's own pipeline (`api.md` §2).
//!
//! | file / folder | owns                                                                    |
//! |---------------|-------------------------------------------------------------------------|
//! | `config`      | limits from presets and options; per-execution settings                 |
//! | `bridge`      | the messages between an execution and its host (call, result, event, …) |
//! | `engine/`     | everything QuickJS: compile, globals, run loop, result serialization    |
//! | `pool`        | worker threads, queue limits, the watchdog that owns deadlines          |
//! | `process/`    | worker processes: pipe protocol, worker main, seccomp, the process pool  |
//! | `error`       | the layer's errors: what could not start, what a worker may not send     |
//! | `runner`      | the pool of a sandbox: threads or processes, chosen by `isolation`      |
//! | `shared`      | the `Host`; the once-only completion and the stop → result mapping      |
//! | `timers`      | the timer heap of the watchdog and the process supervisor               |
//! | `outcome`     | the six result shapes and their JSON                                    |
//! | `warnings`    | a sandbox's warnings, kept and each sent once as a `log` event          |
//! | `binding`     | the `Sandbox` class for JavaScript, and the host adapter on Node's thread |
//!
//! The sandbox never decides what a script may say: the validator layer does, first, with the
//! sandbox's policy. Nothing here knows napi except `binding`.

// The napi surface: napi registers its class (a test build does not, hence the allow).
#[cfg_attr(test, allow(dead_code))]
mod binding;
mod bridge;
mod config;
mod engine;
mod error;
mod json;
mod outcome;
mod pool;
mod process;
mod runner;
mod shared;
mod timers;
mod warnings;

// The layer's surface. For the engine layer: the bridge's messages and `Host`, the settings, the
// results, and a runner to start executions on.
pub use bridge::{Approval, ApprovalAnswer, ApprovalAsk, CallResult, CallTarget, Event, HostCall, HostFailure, Reply};
pub use config::{ExecuteConfig, Isolation, SandboxConfig};
pub use error::{StartError, Violation};
pub use outcome::{Completed, Outcome};
pub use runner::{Runner, Submitter};
pub use shared::{Host, Shared};
pub use warnings::Warnings;
// For the engine layer's binding, which runs its plans on a `Sandbox` of its own.
pub(crate) use binding::{
  event_json, host_answer, json_of, read_denied_tools, read_host, signal_arg, Sandbox, SandboxOptions,
};
// For the worker executable, the timing example and the fuzz targets: one engine and execution,
// the thread pool, the worker pipe's frames.
pub use engine::{Engine, Execution, Job, ReplySink, Step};
pub use pool::Pool;
#[cfg(any(unix, windows))]
pub use process::worker_main;
pub use process::{check_result, read_frame, FromWorker, ToWorker};

#[cfg(test)]
mod tests;
