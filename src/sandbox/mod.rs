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
//! | `shared`      | the once-only completion and the stop → result mapping parties share    |
//! | `timers`      | the timer heap of the watchdog and the process supervisor               |
//! | `outcome`     | the six result shapes and their JSON                                    |
//! | `warnings`    | a sandbox's warnings, kept and each sent once as a `log` event          |
//! | `binding`     | the `Sandbox` class for JavaScript, and the host adapter on Node's thread |
//!
//! The sandbox never decides what a script may say: the validator layer does, first, with the
//! sandbox's policy. Nothing here knows napi except `binding`.

pub mod binding;
pub mod bridge;
pub mod config;
pub mod engine;
pub mod error;
pub mod json;
pub mod outcome;
pub mod pool;
pub mod process;
pub mod runner;
pub mod shared;
pub mod timers;
pub mod warnings;

#[cfg(test)]
mod tests;
