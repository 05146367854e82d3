//! Sandbox limits, resolved from a preset and explicit options (`api.md` §2.1), and the
//! per-execution settings of §2 (`ExecuteOptions`), which may only lower the sandbox's own limits.

use std::time::Duration;

use crate::common::{Glob, Preset, FALLBACK_MAX_ITERATIONS};
use crate::validator::{Language, Policy};

/// Where scripts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
  /// In this process, on a small pool of threads.
  Thread,
  /// In worker processes of the package's own executable.
  Process,
}

impl Isolation {
  /// `'process'` where worker processes are supported (Linux, macOS, Windows), else `'thread'`.
  pub const DEFAULT: Isolation =
    if cfg!(any(target_os = "linux", target_os = "macos", windows)) { Isolation::Process } else { Isolation::Thread };
}

/// A sandbox's whole configuration.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
  pub policy: Policy,
  pub timeout_ms: u64,
  pub memory_limit_bytes: u64,
  pub max_stack_bytes: u64,
  /// `None` when loops are not allowed.
  pub max_iterations: Option<u64>,
  pub max_tool_calls: u64,
  pub max_concurrent_calls: u64,
  pub max_console_bytes: u64,
  pub max_result_bytes: u64,
  pub isolation: Isolation,
  pub pool_size: usize,
  pub max_queue: usize,
  pub queue_timeout_ms: u64,
}

/// No frame on the worker pipe is ever larger (the worker's own read limit).
pub const MAX_FRAME: usize = 256 << 20;

impl SandboxConfig {
  /// The largest frame a worker may send: results and logs are bounded by their limits, and
  /// everything else an execution says must fit beside them.
  pub fn frame_limit(&self) -> usize {
    usize::try_from(self.max_result_bytes.saturating_add(self.max_console_bytes))
      .unwrap_or(usize::MAX)
      .saturating_mul(2)
      .saturating_add(16 << 20)
      .min(MAX_FRAME)
  }

  /// The most one message of an execution may carry — an event, a host call's name and input, an
  /// error — in both isolations, so that a script that says too much fails alone
  /// (`RESULT_TOO_LARGE`) instead of breaking the worker pipe its neighbours share (spec §2.6).
  pub fn message_limit(&self) -> usize {
    self.frame_limit().saturating_sub(64 << 10)
  }

  pub fn from_preset(preset: Preset) -> Self {
    let d = preset.defaults();
    Self {
      policy: Policy::from_preset(preset),
      timeout_ms: d.timeout_ms.into(),
      memory_limit_bytes: d.memory_limit_bytes,
      max_stack_bytes: d.max_stack_bytes,
      max_iterations: d.max_iterations,
      max_tool_calls: d.max_tool_calls.into(),
      max_concurrent_calls: d.max_concurrent_calls.into(),
      max_console_bytes: d.max_console_bytes,
      max_result_bytes: d.max_result_bytes,
      isolation: Isolation::DEFAULT,
      pool_size: std::thread::available_parallelism().map_or(2, |n| n.get()),
      max_queue: 1000,
      queue_timeout_ms: 10_000,
    }
  }

  /// Loops on with no iteration budget of their own get the fallback budget.
  pub fn normalize(&mut self) {
    if self.policy.allow_loops && self.max_iterations.is_none() {
      self.max_iterations = Some(FALLBACK_MAX_ITERATIONS);
    }
  }
}

impl Default for SandboxConfig {
  fn default() -> Self {
    Self::from_preset(Preset::Secure)
  }
}

/// One execution's settings, after `ExecuteOptions` were applied to the sandbox's.
#[derive(Debug, Clone)]
pub struct ExecuteConfig {
  pub language: Language,
  /// `codecallContext` as JSON (`{}` when absent).
  pub context_json: String,
  /// `input` as JSON (`None`: the global is `undefined`).
  pub input_json: Option<String>,
  pub allowed_tools: Option<Vec<String>>,
  /// The host's `deniedTools`: tools matching a glob are refused with `ACCESS_DENIED` and this
  /// reason (a policy such as the gateway's `allowedServers`), and `getTool` answers `null`.
  pub denied_tools: Vec<(Glob, String)>,
  pub timeout: Duration,
  pub max_tool_calls: u64,
  /// Names of the host's extra async globals (`functions`), dotted names included.
  pub functions: Vec<String>,
  /// The host answers `getTool`.
  pub host_get_tool: bool,
  /// Someone listens to events (the host has `onEvent`): without a listener, tool-call, log and
  /// notify events are never built or sent (no wake-up of Node's thread, no frame on the pipe).
  pub events: bool,
  /// The host's `clock` (epoch milliseconds): the script's `Date` reads it throughout — the clock
  /// stands still, so a run replayed from its journal sees the same time (api.md §12).
  pub clock_ms: Option<u64>,
  /// The host's `randomSeed`: `Math.random` is a generator seeded from it (a replay sees the same
  /// numbers), not the engine's own.
  pub random_seed: Option<u64>,
}

impl ExecuteConfig {
  /// The reason `name` is denied by the host's `deniedTools`, if it is.
  pub fn denial(&self, name: &str) -> Option<&str> {
    self.denied_tools.iter().find(|(glob, _)| glob.matches(name)).map(|(_, reason)| reason.as_str())
  }

  pub fn new(sandbox: &SandboxConfig) -> Self {
    Self {
      language: Language::JavaScript,
      context_json: "{}".into(),
      input_json: None,
      allowed_tools: None,
      denied_tools: Vec::new(),
      timeout: Duration::from_millis(sandbox.timeout_ms),
      max_tool_calls: sandbox.max_tool_calls,
      functions: Vec::new(),
      host_get_tool: false,
      events: true,
      clock_ms: None,
      random_seed: None,
    }
  }
}
