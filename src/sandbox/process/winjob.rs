//! The Windows worker's confinement settings as plain numbers (`windows.rs` applies them and
//! asserts at compile time that they are Windows' own constants), so their unit tests run on every
//! OS: the job object's limits, its UI restrictions, the creation mitigation policies, and how an
//! exit code reads.

/// `PROCESS_CREATION_MITIGATION_POLICY_*_ALWAYS_ON` (winbase.h macros, not in windows-sys): the
/// policies a worker is created with.
pub mod mitigation {
  pub const HEAP_TERMINATE: u64 = 1 << 12;
  pub const EXTENSION_POINT_DISABLE: u64 = 1 << 32;
  pub const PROHIBIT_DYNAMIC_CODE: u64 = 1 << 36;
  /// Not in `WORKER`: a package installed on a network drive or a UNC path (roaming profiles)
  /// would not load. The worker loads nothing after start-up either way.
  #[allow(dead_code)] // named so that a test holds it out of `WORKER`
  pub const IMAGE_LOAD_NO_REMOTE: u64 = 1 << 52;
  pub const IMAGE_LOAD_NO_LOW_LABEL: u64 = 1 << 56;
  /// Not in `WORKER`: without it a DLL that loads user32 still starts (no win32k lockdown).
  #[allow(dead_code)] // named so that a test holds it out of `WORKER`
  pub const WIN32K_SYSTEM_CALL_DISABLE: u64 = 1 << 28;
  /// QuickJS has no JIT; the worker loads only the package's `.node` and system DLLs, before it
  /// lowers itself to Low.
  pub const WORKER: u64 = HEAP_TERMINATE | EXTENSION_POINT_DISABLE | PROHIBIT_DYNAMIC_CODE | IMAGE_LOAD_NO_LOW_LABEL;
}

/// `PROCESS_CREATION_CHILD_PROCESS_RESTRICTED`: the worker may not create a process.
pub const CHILD_PROCESS_RESTRICTED: u32 = 1;

/// `JOB_OBJECT_LIMIT_*`: killed when the job's last handle (the host's) closes, at most
/// `ActiveProcessLimit` processes, a per-process commit limit, no error box on a crash.
pub const KILL_ON_JOB_CLOSE: u32 = 0x2000;
pub const ACTIVE_PROCESS: u32 = 0x8;
pub const PROCESS_MEMORY: u32 = 0x100;
pub const DIE_ON_UNHANDLED_EXCEPTION: u32 = 0x400;
pub const LIMIT_FLAGS: u32 = KILL_ON_JOB_CLOSE | ACTIVE_PROCESS | PROCESS_MEMORY | DIE_ON_UNHANDLED_EXCEPTION;

/// `JOB_OBJECT_UILIMIT_*` the job sets — handles, read/write clipboard, system parameters, display
/// settings, global atoms, desktop, exit Windows: nothing of the user's session is its business.
pub const UI_LIMITS: u32 = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80;

/// The exit code a worker killed by the host ends with (`TerminateJobObject`).
pub const KILLED: u32 = 0xC0DE_0009;

/// A worker's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSettings {
  pub limit_flags: u32,
  pub active_processes: u32,
  /// Bytes of commit one process may have (`ProcessMemoryLimit`).
  pub process_memory: u64,
}

impl JobSettings {
  /// The job of a worker that may use `memory` bytes (`pool::memory_cap`).
  pub fn worker(memory: u64) -> Self {
    Self { limit_flags: LIMIT_FLAGS, active_processes: 1, process_memory: memory }
  }
}

/// How a worker's exit code reads in a message.
pub fn describe_exit(code: u32) -> String {
  let name = match code {
    KILLED => return "was killed (TerminateJobObject)".into(),
    0xC000_0005 => " (STATUS_ACCESS_VIOLATION)",
    0xC000_00FD => " (STATUS_STACK_OVERFLOW)",
    0xC000_0409 => " (STATUS_STACK_BUFFER_OVERRUN: a fail-fast abort)",
    0xC000_0374 => " (STATUS_HEAP_CORRUPTION)",
    0xC000_0017 | 0xC000_012D => " (out of memory: the job's commit limit)",
    0xC000_001D => " (STATUS_ILLEGAL_INSTRUCTION)",
    0xC000_0135 => " (STATUS_DLL_NOT_FOUND)",
    0xC000_0142 => " (STATUS_DLL_INIT_FAILED)",
    _ if code >= 0xC000_0000 => " (an NTSTATUS error)",
    _ => return format!("exited with code {code}"),
  };
  format!("crashed with status {code:#010X}{name}")
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_job_kills_with_the_hosts_handle_holds_one_process_and_caps_commit() {
    let job = JobSettings::worker(3 << 30);
    for flag in [KILL_ON_JOB_CLOSE, ACTIVE_PROCESS, PROCESS_MEMORY, DIE_ON_UNHANDLED_EXCEPTION] {
      assert_ne!(job.limit_flags & flag, 0, "{flag:#x}");
    }
    assert_eq!(job.active_processes, 1);
    assert_eq!(job.process_memory, 3 << 30);
    assert_eq!(UI_LIMITS, 0xFF);
  }

  #[test]
  fn the_worker_is_created_without_dynamic_code_or_children_but_may_load_from_a_network_drive() {
    use mitigation::*;
    assert_eq!(WORKER & PROHIBIT_DYNAMIC_CODE, PROHIBIT_DYNAMIC_CODE);
    assert_eq!(WORKER & EXTENSION_POINT_DISABLE, EXTENSION_POINT_DISABLE);
    assert_eq!(WORKER & IMAGE_LOAD_NO_LOW_LABEL, IMAGE_LOAD_NO_LOW_LABEL);
    assert_eq!(WORKER & IMAGE_LOAD_NO_REMOTE, 0);
    assert_eq!(WORKER & WIN32K_SYSTEM_CALL_DISABLE, 0);
    assert_eq!(CHILD_PROCESS_RESTRICTED, 1);
  }

  #[test]
  fn exit_codes_read_as_what_happened() {
    assert_eq!(describe_exit(KILLED), "was killed (TerminateJobObject)");
    assert!(describe_exit(0xC000_00FD).contains("STACK_OVERFLOW"));
    assert!(describe_exit(0xC000_0409).contains("fail-fast"));
    assert!(describe_exit(0xC000_9999).contains("NTSTATUS"));
    assert_eq!(describe_exit(3), "exited with code 3");
  }
}
