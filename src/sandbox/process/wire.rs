//! The pipe protocol between a host and its worker processes: the bridge's messages (`bridge.rs`)
//! framed as `u32 LE length | u8 kind | body`, where the length counts kind and body.
//!
//! Bodies use a small hand-written codec: integers little-endian, strings as `u32 length | UTF-8`,
//! JSON carried as opaque strings (never re-escaped). Both sides treat the other as untrusted when
//! decoding: every length is bounded, every string checked as UTF-8, every body must be consumed
//! exactly, and any violation is an error (the host then kills the worker).

use std::io::Read;
use std::time::Duration;

use crate::common::{Glob, Preset};
use crate::sandbox::bridge::{CallResult, CallTarget, Event, HostCall, HostFailure};
use crate::sandbox::config::{ExecuteConfig, Isolation, SandboxConfig};
use crate::sandbox::error::Violation;
use crate::validator::{Language, Policy, SelfReference};

/// Bumped whenever a frame changes; a worker of another protocol is refused.
pub const PROTOCOL: u32 = 5;
/// The crate version both sides were built from.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// No frame may be larger than this, whatever the limits (defined with the limits it caps).
#[cfg_attr(not(unix), allow(unused_imports))] // the pipe exists only with process isolation
pub use crate::sandbox::config::MAX_FRAME;

// Host → worker.
const HELLO: u8 = 1;
const START: u8 = 2;
const REPLY: u8 = 3;
const TOOL_INFO: u8 = 4;
const STOP: u8 = 5;
const HOLD: u8 = 6;
// Worker → host.
const READY: u8 = 64;
const STARTED: u8 = 65;
const CALL: u8 = 66;
const GET_TOOL: u8 = 67;
const EVENT: u8 = 68;
const COMPLETE: u8 = 69;
const UNCONFINED: u8 = 70;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
  #[error("the pipe closed")]
  Closed,
  #[error("pipe read failed: {0}")]
  Io(String),
  #[error("frame of {0} bytes is larger than allowed")]
  TooLarge(usize),
  #[error("malformed frame: {0}")]
  Malformed(&'static str),
}

/// A message for a worker.
#[derive(Debug, Clone)]
pub enum ToWorker {
  /// First frame: the sandbox every execution of this worker runs under.
  Hello {
    config: SandboxConfig,
  },
  Start {
    key: u64,
    id: String,
    script: String,
    exec: ExecuteConfig,
  },
  /// The answer to the worker's call `token`.
  Reply {
    token: u64,
    result: CallResult,
  },
  /// The answer to the worker's `getTool` question `token`.
  ToolInfo {
    token: u64,
    json: Option<String>,
  },
  /// Abort one execution (its `AbortSignal` fired, or it waited too long to start).
  Stop {
    key: u64,
  },
  /// Stop (`held`) or restart one execution's deadline clock: a person is deciding about one of
  /// its calls (spec §9).
  Hold {
    key: u64,
    held: bool,
  },
}

/// A message from a worker.
#[derive(Debug, Clone, PartialEq)]
pub enum FromWorker {
  /// Sent once, after the worker's threads are up and its seccomp filter is in (or could not be).
  Ready {
    protocol: u32,
    version: String,
    /// `Err`: why the filter is not in, as text (a `SeccompError` in the worker; the host only
    /// shows it in a warning, so the wire carries words, not the enum). On macOS `Ok` means the
    /// Seatbelt profile holds (a worker that could not apply it says `Unconfined` instead).
    seccomp: Result<(), String>,
    warnings: Vec<String>,
  },
  /// Execution `key` left the worker's queue and is running: its deadline starts now.
  Started {
    key: u64,
  },
  Call {
    key: u64,
    token: u64,
    call: HostCall,
  },
  GetTool {
    key: u64,
    token: u64,
    name: String,
  },
  Event {
    key: u64,
    event: Event,
  },
  /// The execution's `ExecuteResult`, as JSON.
  Complete {
    key: u64,
    json: String,
  },
  /// Sent instead of `Ready` by a worker that could not confine itself where confinement is the
  /// promise (macOS: Seatbelt): it runs no script, and the host ends its executions with
  /// `WORKER_STARTUP_FAILED` and the reason.
  Unconfined {
    reason: String,
  },
}

// ---- encoding ------------------------------------------------------------------------------

/// Builds one frame.
pub struct Enc(Vec<u8>);

impl Enc {
  fn frame(kind: u8) -> Self {
    let mut buf = Vec::with_capacity(64);
    buf.extend_from_slice(&[0, 0, 0, 0, kind]);
    Self(buf)
  }
  fn u8(&mut self, v: u8) -> &mut Self {
    self.0.push(v);
    self
  }
  fn bool(&mut self, v: bool) -> &mut Self {
    self.u8(v as u8)
  }
  fn u32(&mut self, v: u32) -> &mut Self {
    self.0.extend_from_slice(&v.to_le_bytes());
    self
  }
  fn u64(&mut self, v: u64) -> &mut Self {
    self.0.extend_from_slice(&v.to_le_bytes());
    self
  }
  fn f64(&mut self, v: f64) -> &mut Self {
    self.0.extend_from_slice(&v.to_le_bytes());
    self
  }
  fn str(&mut self, s: &str) -> &mut Self {
    self.u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
    self.0.extend_from_slice(s.as_bytes());
    self
  }
  fn opt_str(&mut self, s: Option<&str>) -> &mut Self {
    match s {
      Some(s) => self.u8(1).str(s),
      None => self.u8(0),
    }
  }
  fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
    match v {
      Some(v) => self.u8(1).u64(v),
      None => self.u8(0),
    }
  }
  fn strs(&mut self, list: &[String]) -> &mut Self {
    self.u32(u32::try_from(list.len()).unwrap_or(u32::MAX));
    for s in list {
      self.str(s);
    }
    self
  }
  fn finish(mut self) -> Vec<u8> {
    let len = u32::try_from(self.0.len() - 4).unwrap_or(u32::MAX);
    self.0[..4].copy_from_slice(&len.to_le_bytes());
    self.0
  }
}

impl ToWorker {
  pub fn encode(&self) -> Vec<u8> {
    match self {
      Self::Hello { config } => {
        let mut e = Enc::frame(HELLO);
        e.u32(PROTOCOL).str(VERSION);
        sandbox_config(&mut e, config);
        e.finish()
      }
      Self::Start { key, id, script, exec } => {
        let mut e = Enc::frame(START);
        e.u64(*key).str(id).str(script);
        execute_config(&mut e, exec);
        e.finish()
      }
      Self::Reply { token, result } => {
        let mut e = Enc::frame(REPLY);
        e.u64(*token);
        match result {
          CallResult::Ok(json) => e.u8(0).opt_str(json.as_deref()),
          CallResult::Err(f) => e.u8(1).str(&f.message).opt_str(f.code.as_deref()).opt_str(f.details_json.as_deref()),
        };
        e.finish()
      }
      Self::ToolInfo { token, json } => {
        let mut e = Enc::frame(TOOL_INFO);
        e.u64(*token).opt_str(json.as_deref());
        e.finish()
      }
      Self::Stop { key } => {
        let mut e = Enc::frame(STOP);
        e.u64(*key);
        e.finish()
      }
      Self::Hold { key, held } => {
        let mut e = Enc::frame(HOLD);
        e.u64(*key).bool(*held);
        e.finish()
      }
    }
  }
}

impl FromWorker {
  pub fn encode(&self) -> Vec<u8> {
    match self {
      Self::Ready { protocol, version, seccomp, warnings } => {
        let mut e = Enc::frame(READY);
        e.u32(*protocol).str(version).opt_str(seccomp.as_ref().err().map(String::as_str)).strs(warnings);
        e.finish()
      }
      Self::Started { key } => {
        let mut e = Enc::frame(STARTED);
        e.u64(*key);
        e.finish()
      }
      Self::Call { key, token, call } => {
        let mut e = Enc::frame(CALL);
        e.u64(*key).u64(*token);
        e.str(&call.execution_id).str(&call.call_id).bool(call.target == CallTarget::Function);
        e.str(&call.name).str(&call.args_json);
        e.finish()
      }
      Self::GetTool { key, token, name } => {
        let mut e = Enc::frame(GET_TOOL);
        e.u64(*key).u64(*token).str(name);
        e.finish()
      }
      Self::Event { key, event } => {
        let mut e = Enc::frame(EVENT);
        e.u64(*key);
        match event {
          Event::ToolCallStart { execution_id, call_id, tool_name, input_json } => {
            e.u8(0).str(execution_id).str(call_id).str(tool_name).str(input_json);
          }
          Event::ToolCallEnd { execution_id, call_id, tool_name, input_json, ok, duration_ms, error } => {
            e.u8(1).str(execution_id).str(call_id).str(tool_name).str(input_json).bool(*ok).f64(*duration_ms);
            match error {
              Some((code, message)) => e.u8(1).str(code).str(message),
              None => e.u8(0),
            };
          }
          Event::Log { execution_id, level, message, metadata_json } => {
            e.u8(2).str(execution_id).str(level).str(message).opt_str(metadata_json.as_deref());
          }
          Event::Notify { execution_id, event, payload_json } => {
            e.u8(3).str(execution_id).str(event).str(payload_json);
          }
          // Made on the host side only; a worker has none to send (and the host refuses tag 4).
          Event::Approval { execution_id, .. } => {
            e.u8(4).str(execution_id);
          }
          Event::Nested { parent_execution_id, .. } => {
            e.u8(4).str(parent_execution_id);
          }
        }
        e.finish()
      }
      Self::Complete { key, json } => {
        let mut e = Enc::frame(COMPLETE);
        e.u64(*key).str(json);
        e.finish()
      }
      Self::Unconfined { reason } => {
        let mut e = Enc::frame(UNCONFINED);
        e.str(reason);
        e.finish()
      }
    }
  }
}

fn sandbox_config(e: &mut Enc, c: &SandboxConfig) {
  let p = &c.policy;
  e.str(p.preset.as_str()).u8(matches!(p.language, Language::TypeScript) as u8);
  e.bool(p.allow_loops).bool(p.allow_console).strs(&p.disabled_builtins).strs(&p.disabled_globals);
  e.bool(p.forbid_prototype_members).u64(p.max_script_bytes).u32(p.max_nesting_depth).strs(&p.reserved_prefixes);
  e.strs(&p.self_reference.prefixes).strs(&p.self_reference.names);
  // No `timeout_ms`: the worker never reads it, every execution carries its own timeout.
  e.u64(c.memory_limit_bytes).u64(c.max_stack_bytes).opt_u64(c.max_iterations);
  e.u64(c.max_tool_calls).u64(c.max_concurrent_calls).u64(c.max_console_bytes).u64(c.max_result_bytes);
  e.u64(c.pool_size as u64).u64(c.max_queue as u64).u64(c.queue_timeout_ms);
}

fn execute_config(e: &mut Enc, x: &ExecuteConfig) {
  e.u8(matches!(x.language, Language::TypeScript) as u8).str(&x.context_json).opt_str(x.input_json.as_deref());
  match &x.allowed_tools {
    Some(list) => e.u8(1).strs(list),
    None => e.u8(0),
  };
  let (globs, reasons): (Vec<String>, Vec<String>) =
    x.denied_tools.iter().map(|(g, r)| (g.as_str().to_string(), r.clone())).unzip();
  e.strs(&globs).strs(&reasons);
  e.u64(u64::try_from(x.timeout.as_micros()).unwrap_or(u64::MAX)).u64(x.max_tool_calls);
  e.strs(&x.functions).bool(x.host_get_tool).bool(x.events);
  e.opt_u64(x.clock_ms).opt_u64(x.random_seed);
}

// ---- decoding ------------------------------------------------------------------------------

/// Reads one frame's body.
pub struct Dec<'a> {
  buf: &'a [u8],
  pos: usize,
}

impl<'a> Dec<'a> {
  pub fn new(buf: &'a [u8]) -> Self {
    Self { buf, pos: 0 }
  }
  fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
    let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(WireError::Malformed("truncated"))?;
    let out = &self.buf[self.pos..end];
    self.pos = end;
    Ok(out)
  }
  fn u8(&mut self) -> Result<u8, WireError> {
    Ok(self.take(1)?[0])
  }
  fn bool(&mut self) -> Result<bool, WireError> {
    match self.u8()? {
      0 => Ok(false),
      1 => Ok(true),
      _ => Err(WireError::Malformed("bad boolean")),
    }
  }
  fn u32(&mut self) -> Result<u32, WireError> {
    let b = self.take(4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
  }
  fn u64(&mut self) -> Result<u64, WireError> {
    let b = self.take(8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
  }
  fn f64(&mut self) -> Result<f64, WireError> {
    Ok(f64::from_bits(self.u64()?))
  }
  fn str(&mut self) -> Result<String, WireError> {
    let len = self.u32()? as usize;
    let bytes = self.take(len)?;
    std::str::from_utf8(bytes).map(str::to_string).map_err(|_| WireError::Malformed("string is not UTF-8"))
  }
  fn opt_str(&mut self) -> Result<Option<String>, WireError> {
    Ok(if self.bool()? { Some(self.str()?) } else { None })
  }
  fn opt_u64(&mut self) -> Result<Option<u64>, WireError> {
    Ok(if self.bool()? { Some(self.u64()?) } else { None })
  }
  fn strs(&mut self) -> Result<Vec<String>, WireError> {
    let n = self.u32()? as usize;
    // Each string takes at least 4 bytes: a count larger than what is left is a lie.
    if n > (self.buf.len() - self.pos) / 4 {
      return Err(WireError::Malformed("list count"));
    }
    (0..n).map(|_| self.str()).collect()
  }
  fn end(&self) -> Result<(), WireError> {
    if self.pos == self.buf.len() {
      Ok(())
    } else {
      Err(WireError::Malformed("trailing bytes"))
    }
  }
  fn language(&mut self) -> Result<Language, WireError> {
    match self.u8()? {
      0 => Ok(Language::JavaScript),
      1 => Ok(Language::TypeScript),
      _ => Err(WireError::Malformed("language")),
    }
  }
}

impl ToWorker {
  /// Decodes one frame (`kind` and `body` as read by `read_frame`).
  pub fn decode(kind: u8, body: &[u8]) -> Result<Self, WireError> {
    let mut d = Dec::new(body);
    let msg = match kind {
      HELLO => {
        let protocol = d.u32()?;
        let version = d.str()?;
        if protocol != PROTOCOL || version != VERSION {
          return Err(WireError::Malformed("host of another protocol or version"));
        }
        Self::Hello { config: read_sandbox_config(&mut d)? }
      }
      START => {
        let key = d.u64()?;
        let id = d.str()?;
        let script = d.str()?;
        Self::Start { key, id, script, exec: read_execute_config(&mut d)? }
      }
      REPLY => {
        let token = d.u64()?;
        let result = match d.u8()? {
          0 => CallResult::Ok(d.opt_str()?),
          1 => CallResult::Err(HostFailure { message: d.str()?, code: d.opt_str()?, details_json: d.opt_str()? }),
          _ => return Err(WireError::Malformed("reply tag")),
        };
        Self::Reply { token, result }
      }
      TOOL_INFO => Self::ToolInfo { token: d.u64()?, json: d.opt_str()? },
      STOP => Self::Stop { key: d.u64()? },
      HOLD => Self::Hold { key: d.u64()?, held: d.bool()? },
      _ => return Err(WireError::Malformed("unknown frame kind for a worker")),
    };
    d.end()?;
    Ok(msg)
  }
}

impl FromWorker {
  pub fn decode(kind: u8, body: &[u8]) -> Result<Self, WireError> {
    let mut d = Dec::new(body);
    let msg = match kind {
      READY => Self::Ready {
        protocol: d.u32()?,
        version: d.str()?,
        seccomp: match d.opt_str()? {
          Some(e) => Err(e),
          None => Ok(()),
        },
        warnings: d.strs()?,
      },
      STARTED => Self::Started { key: d.u64()? },
      CALL => {
        let key = d.u64()?;
        let token = d.u64()?;
        let execution_id = d.str()?;
        let call_id = d.str()?;
        let target = if d.bool()? { CallTarget::Function } else { CallTarget::Tool };
        let call =
          HostCall { execution_id, call_id, target, name: d.str()?, args_json: d.str()?, parent_execution_id: None };
        Self::Call { key, token, call }
      }
      GET_TOOL => Self::GetTool { key: d.u64()?, token: d.u64()?, name: d.str()? },
      EVENT => {
        let key = d.u64()?;
        let event = match d.u8()? {
          0 => Event::ToolCallStart {
            execution_id: d.str()?,
            call_id: d.str()?,
            tool_name: d.str()?,
            input_json: d.str()?,
          },
          1 => Event::ToolCallEnd {
            execution_id: d.str()?,
            call_id: d.str()?,
            tool_name: d.str()?,
            input_json: d.str()?,
            ok: d.bool()?,
            duration_ms: d.f64()?,
            error: if d.bool()? { Some((d.str()?, d.str()?)) } else { None },
          },
          2 => Event::Log { execution_id: d.str()?, level: d.str()?, message: d.str()?, metadata_json: d.opt_str()? },
          3 => Event::Notify { execution_id: d.str()?, event: d.str()?, payload_json: d.str()? },
          _ => return Err(WireError::Malformed("event tag")),
        };
        Self::Event { key, event }
      }
      COMPLETE => Self::Complete { key: d.u64()?, json: d.str()? },
      UNCONFINED => Self::Unconfined { reason: d.str()? },
      _ => return Err(WireError::Malformed("unknown frame kind from a worker")),
    };
    d.end()?;
    Ok(msg)
  }
}

fn read_sandbox_config(d: &mut Dec) -> Result<SandboxConfig, WireError> {
  let preset = Preset::parse(&d.str()?).ok_or(WireError::Malformed("preset"))?;
  let mut policy = Policy::from_preset(preset);
  policy.language = d.language()?;
  policy.allow_loops = d.bool()?;
  policy.allow_console = d.bool()?;
  policy.set_disabled_builtins(d.strs()?);
  policy.disabled_globals = d.strs()?;
  policy.forbid_prototype_members = d.bool()?;
  policy.max_script_bytes = d.u64()?;
  policy.max_nesting_depth = d.u32()?;
  policy.reserved_prefixes = d.strs()?;
  policy.self_reference = SelfReference { prefixes: d.strs()?, names: d.strs()? };
  let usize_of = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
  Ok(SandboxConfig {
    policy,
    // Not sent: every `Execute` carries its own timeout, and the worker reads only that one.
    timeout_ms: 0,
    memory_limit_bytes: d.u64()?,
    max_stack_bytes: d.u64()?,
    max_iterations: d.opt_u64()?,
    max_tool_calls: d.u64()?,
    max_concurrent_calls: d.u64()?,
    max_console_bytes: d.u64()?,
    max_result_bytes: d.u64()?,
    isolation: Isolation::Thread,
    pool_size: usize_of(d.u64()?),
    max_queue: usize_of(d.u64()?),
    queue_timeout_ms: d.u64()?,
  })
}

fn read_execute_config(d: &mut Dec) -> Result<ExecuteConfig, WireError> {
  Ok(ExecuteConfig {
    language: d.language()?,
    context_json: d.str()?,
    input_json: d.opt_str()?,
    allowed_tools: if d.bool()? { Some(d.strs()?) } else { None },
    denied_tools: {
      let globs = d.strs()?;
      let reasons = d.strs()?;
      if globs.len() != reasons.len() {
        return Err(WireError::Malformed("deniedTools globs and reasons differ in number"));
      }
      globs.iter().map(|g| Glob::new(g)).zip(reasons).collect()
    },
    timeout: Duration::from_micros(d.u64()?),
    max_tool_calls: d.u64()?,
    functions: d.strs()?,
    host_get_tool: d.bool()?,
    events: d.bool()?,
    clock_ms: d.opt_u64()?,
    random_seed: d.opt_u64()?,
  })
}

/// Reads a pipe set to `O_NONBLOCK`: when it is empty, spins (yielding) for `spin` before it
/// sleeps in `poll`, because the next frame of a conversation (a tool's answer, the next script)
/// usually comes within microseconds, and waking a sleeping thread costs tens of them.
#[cfg(unix)]
pub struct SpinRead {
  pub fd: std::os::fd::RawFd,
  pub spin: Duration,
}

#[cfg(unix)]
impl SpinRead {
  /// Puts `fd` in non-blocking mode. If that fails the fd stays blocking, and reads simply block.
  pub fn new(fd: std::os::fd::RawFd, spin: Duration) -> Self {
    // SAFETY: fcntl on an fd the caller owns; only O_NONBLOCK is added to its flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags >= 0 {
      // SAFETY: as above.
      unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    }
    Self { fd, spin }
  }
}

#[cfg(unix)]
impl Read for SpinRead {
  fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut since: Option<std::time::Instant> = None;
    loop {
      // SAFETY: `buf` is a live, writable slice of `buf.len()` bytes.
      let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
      if n >= 0 {
        return Ok(n as usize);
      }
      let e = std::io::Error::last_os_error();
      match e.kind() {
        std::io::ErrorKind::Interrupted => {}
        std::io::ErrorKind::WouldBlock => {
          let start = *since.get_or_insert_with(std::time::Instant::now);
          if start.elapsed() < self.spin {
            std::thread::yield_now();
          } else {
            let mut pfd = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, waiting without a timeout until the pipe is readable or closed.
            unsafe { libc::poll(&mut pfd, 1, -1) };
          }
        }
        _ => return Err(e),
      }
    }
  }
}

/// Reads one frame: `(kind, body)`. `Closed` at a clean end of stream between frames.
pub fn read_frame(reader: &mut impl Read, limit: usize, body: &mut Vec<u8>) -> Result<u8, WireError> {
  let mut head = [0u8; 4];
  let mut got = 0;
  while got < 4 {
    match reader.read(&mut head[got..]) {
      Ok(0) if got == 0 => return Err(WireError::Closed),
      Ok(0) => return Err(WireError::Malformed("truncated length")),
      Ok(n) => got += n,
      Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
      Err(e) => return Err(WireError::Io(e.to_string())),
    }
  }
  let len = u32::from_le_bytes(head) as usize;
  if len == 0 {
    return Err(WireError::Malformed("empty frame"));
  }
  if len > limit {
    return Err(WireError::TooLarge(len));
  }
  let truncated = |e: std::io::Error| match e.kind() {
    std::io::ErrorKind::UnexpectedEof => WireError::Malformed("truncated frame"),
    _ => WireError::Io(e.to_string()),
  };
  let mut kind = [0u8];
  reader.read_exact(&mut kind).map_err(truncated)?;
  body.clear();
  body.resize(len - 1, 0);
  reader.read_exact(body).map_err(truncated)?;
  Ok(kind[0])
}

/// Checks a worker's `Complete` frame before its JSON is relayed as the execution's result: a
/// known `status` and the execution's own id (a worker must not answer for another one).
pub fn check_result(json: &str, id: &str) -> Result<(), Violation> {
  let value: serde_json::Value = serde_json::from_str(json).map_err(|_| Violation("result is not JSON".into()))?;
  let status = value.get("status").and_then(|s| s.as_str()).unwrap_or("");
  let known = ["ok", "syntax_error", "illegal_access", "runtime_error", "tool_error", "timeout"];
  if !known.contains(&status) {
    return Err(Violation(format!("result has an unknown status '{status}'")));
  }
  let stats_id = value.get("stats").and_then(|s| s.get("executionId")).and_then(|v| v.as_str());
  if stats_id != Some(id) {
    return Err(Violation("result is for another execution".into()));
  }
  Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
  use super::*;

  fn roundtrip_from(msg: FromWorker) {
    let frame = msg.encode();
    let mut body = Vec::new();
    let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
    assert_eq!(FromWorker::decode(kind, &body).unwrap(), msg);
  }

  #[test]
  fn worker_messages_round_trip() {
    roundtrip_from(FromWorker::Ready {
      protocol: PROTOCOL,
      version: VERSION.into(),
      seccomp: Err("no seccomp".into()),
      warnings: vec!["a".into(), "é".into()],
    });
    roundtrip_from(FromWorker::Started { key: u64::MAX });
    roundtrip_from(FromWorker::Unconfined { reason: "sandbox_init: Operation not permitted".into() });
    for held in [true, false] {
      let frame = ToWorker::Hold { key: 9, held }.encode();
      let mut body = Vec::new();
      let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
      assert!(matches!(ToWorker::decode(kind, &body).unwrap(), ToWorker::Hold { key: 9, held: h } if h == held));
    }
    // An approval event is the host's to make: a worker that sends one broke the protocol.
    let forged = FromWorker::Event {
      key: 1,
      event: Event::Approval {
        execution_id: "e".into(),
        call_id: "c".into(),
        tool_name: "t".into(),
        decision: "approve",
        waited_ms: 0.0,
      },
    }
    .encode();
    let mut body = Vec::new();
    let kind = read_frame(&mut &forged[..], MAX_FRAME, &mut body).unwrap();
    assert!(FromWorker::decode(kind, &body).is_err());
    roundtrip_from(FromWorker::Complete { key: 7, json: "{\"status\":\"ok\"}".into() });
    roundtrip_from(FromWorker::GetTool { key: 1, token: 2, name: "users:list".into() });
    roundtrip_from(FromWorker::Event {
      key: 3,
      event: Event::ToolCallEnd {
        execution_id: "e".into(),
        call_id: "c".into(),
        tool_name: "t".into(),
        input_json: "{}".into(),
        ok: false,
        duration_ms: 1.5,
        error: Some(("TOOL_EXECUTION_ERROR".into(), "boom".into())),
      },
    });
  }

  #[test]
  fn configs_round_trip() {
    let mut config = SandboxConfig::from_preset(Preset::Balanced);
    config.policy.self_reference = SelfReference::for_meta_tools("cc", "_");
    config.policy.disabled_globals.push("Proxy".into());
    config.max_iterations = Some(42);
    let frame = ToWorker::Hello { config: config.clone() }.encode();
    let mut body = Vec::new();
    let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
    let ToWorker::Hello { config: back } = ToWorker::decode(kind, &body).unwrap() else { panic!("not hello") };
    assert_eq!(format!("{:?}", back.policy), format!("{:?}", config.policy));
    assert_eq!(back.max_iterations, Some(42));
    assert_eq!(back.memory_limit_bytes, config.memory_limit_bytes);

    let mut exec = ExecuteConfig::new(&config);
    exec.allowed_tools = Some(vec!["a".into()]);
    exec.functions = vec!["mcp.callTool".into()];
    exec.denied_tools = vec![(Glob::new("other:*"), "MCP server 'other' is not in allowedServers".into())];
    exec.input_json = Some("[1]".into());
    exec.timeout = Duration::from_millis(1234);
    exec.clock_ms = Some(1_700_000_000_000);
    exec.random_seed = Some((1 << 53) - 1);
    let frame = ToWorker::Start { key: 9, id: "exec-1".into(), script: "return 1".into(), exec }.encode();
    let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
    let ToWorker::Start { key, exec, .. } = ToWorker::decode(kind, &body).unwrap() else { panic!("not start") };
    assert_eq!(key, 9);
    assert_eq!(exec.timeout, Duration::from_millis(1234));
    assert_eq!(exec.allowed_tools, Some(vec!["a".to_string()]));
    assert_eq!(exec.functions, vec!["mcp.callTool".to_string()]);
    assert_eq!(exec.denial("other:x"), Some("MCP server 'other' is not in allowedServers"));
    assert_eq!(exec.denial("mine:x"), None);
    assert_eq!(exec.clock_ms, Some(1_700_000_000_000));
    assert_eq!(exec.random_seed, Some((1 << 53) - 1));
  }

  #[test]
  fn hostile_frames_are_errors_not_panics() {
    let good = FromWorker::Call {
      key: 1,
      token: 2,
      call: HostCall {
        execution_id: "e".into(),
        call_id: "c".into(),
        target: CallTarget::Tool,
        name: "t".into(),
        args_json: "{}".into(),
        parent_execution_id: None,
      },
    }
    .encode();
    // Every truncation and every single-byte corruption decodes to an error or a message, never a panic.
    let mut body = Vec::new();
    for cut in 0..good.len() {
      let _ = read_frame(&mut &good[..cut], MAX_FRAME, &mut body).and_then(|k| FromWorker::decode(k, &body));
    }
    for i in 0..good.len() {
      for b in [0u8, 1, 0x7f, 0xff] {
        let mut bad = good.clone();
        bad[i] = b;
        let _ = read_frame(&mut &bad[..], MAX_FRAME, &mut body).and_then(|k| FromWorker::decode(k, &body));
      }
    }
    // A huge length is refused before anything is allocated.
    let huge = [0xff, 0xff, 0xff, 0xff, CALL];
    assert_eq!(read_frame(&mut &huge[..], MAX_FRAME, &mut body), Err(WireError::TooLarge(u32::MAX as usize)));
    // A list count larger than the body.
    let mut e = Enc::frame(READY);
    e.u32(PROTOCOL).str(VERSION).u8(0).u32(1 << 30);
    let frame = e.finish();
    let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
    assert!(FromWorker::decode(kind, &body).is_err());
    // Unknown kinds and trailing bytes.
    assert!(FromWorker::decode(HELLO, &[]).is_err());
    let mut e = Enc::frame(STARTED);
    e.u64(1).u8(0);
    let frame = e.finish();
    let kind = read_frame(&mut &frame[..], MAX_FRAME, &mut body).unwrap();
    assert_eq!(FromWorker::decode(kind, &body), Err(WireError::Malformed("trailing bytes")));
    assert_eq!(read_frame(&mut &[][..], MAX_FRAME, &mut body), Err(WireError::Closed));
  }
}
