//! The fences a worker process puts around itself (`docs/design/process-isolation.md` §1, §3, §5):
//! self-fences at the top of `main()`, one malloc arena, and a seccomp allowlist installed for every
//! thread once they have all warmed up.
//!
//! The filter is classic BPF built by hand over `libc` alone. Each rule is a self-contained block that
//! falls through to the next block on a mismatch; the program ends in `KILL_PROCESS`, and a call made
//! under any other audit arch is killed before any rule is looked at. Only x86_64 and aarch64
//! (little-endian) are supported: the arch constant and the argument offsets are theirs.

#[cfg(unix)]
use std::io;

/// Sets a resource limit (soft and hard) to `value`, or to the current hard limit if that is lower. A macro
/// because the type of the resource argument differs between libcs.
#[cfg(unix)]
macro_rules! set_rlimit {
  ($resource:expr, $value:expr) => {{
    let wanted: libc::rlim_t = $value;
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `current` is a valid, writable rlimit for getrlimit to fill in.
    let known = unsafe { libc::getrlimit($resource, &mut current) } == 0;
    let value = if known && current.rlim_max != libc::RLIM_INFINITY { wanted.min(current.rlim_max) } else { wanted };
    let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
    // SAFETY: `limit` is a valid rlimit that setrlimit only reads.
    if unsafe { libc::setrlimit($resource, &limit) } == 0 {
      Ok(())
    } else {
      Err(io::Error::last_os_error())
    }
  }};
}

/// Self-fences of a worker process, run first in main(): PR_SET_PDEATHSIG(SIGKILL) then exit(0) at once if
/// getppid() != expected_parent (when Some); PR_SET_DUMPABLE 0; RLIMIT_CORE 0; RLIMIT_AS = address_space (when
/// Some); close every fd >= 3 (close_range(3, u32::MAX, 0) syscall, falling back to a loop over /proc/self/fd or
/// 3..1024 if close_range fails).
///
/// Returns human-readable warnings for steps that failed (never panics). On non-Linux unix does what applies
/// (rlimits, the fd closing loop over `/dev/fd`) and skips prctl.
///
/// Closing the fds is only sound while nothing in the process owns one of them, hence "first in main()".
/// Both limits are set as soft and hard limit, so the worker cannot raise them again; `address_space` is
/// clamped to an existing lower hard limit.
pub fn fence_self(expected_parent: Option<u32>, address_space: Option<u64>) -> Vec<String> {
  let mut warnings = Vec::new();
  #[cfg(unix)]
  {
    #[cfg(target_os = "linux")]
    if let Err(error) = set_prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) {
      warnings.push(format!("prctl(PR_SET_PDEATHSIG, SIGKILL) failed: {error}"));
    }
    // After PDEATHSIG: a parent that dies from here on kills us, one that died before shows as a new parent.
    if let Some(parent) = expected_parent {
      if std::os::unix::process::parent_id() != parent {
        // SAFETY: `_exit` ends the process at once; nothing of ours is set up yet that would need to run first.
        unsafe { libc::_exit(0) }
      }
    }
    #[cfg(target_os = "linux")]
    if let Err(error) = set_prctl(libc::PR_SET_DUMPABLE, 0) {
      warnings.push(format!("prctl(PR_SET_DUMPABLE, 0) failed: {error}"));
    }
    if let Err(error) = set_rlimit!(libc::RLIMIT_CORE, 0) {
      warnings.push(format!("setrlimit(RLIMIT_CORE, 0) failed: {error}"));
    }
    if let Some(bytes) = address_space {
      if let Err(error) = set_rlimit!(libc::RLIMIT_AS, to_rlim(bytes)) {
        warnings.push(format!("setrlimit(RLIMIT_AS, {bytes}) failed: {error}"));
      }
    }
    if let Some(warning) = close_inherited_fds() {
      warnings.push(warning);
    }
  }
  #[cfg(not(unix))]
  {
    let _ = (expected_parent, address_space);
    warnings.push("self-fencing is not supported on this platform".to_owned());
  }
  warnings
}

/// glibc only (cfg(all(target_os = "linux", target_env = "gnu"))): mallopt(M_ARENA_MAX, 1). No-op elsewhere.
///
/// Call it before any thread starts: a thread keeps the arena it got at its first malloc. With one arena
/// the JS heap grows by a few `brk` calls instead of one `mprotect` per 4 KiB, and no thread arena ever
/// shrinks (which would open `/proc/sys/vm/overcommit_memory` under the filter).
pub fn limit_malloc_arenas() {
  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  // SAFETY: mallopt only changes a malloc tunable; it takes no pointers.
  unsafe {
    libc::mallopt(libc::M_ARENA_MAX, 1);
    // Keep freed heap instead of giving it back after every execution (a runtime's heap is freed
    // and allocated again for the next one: trimming and growing it costs brk calls and page faults).
    libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    libc::mallopt(libc::M_TOP_PAD, 4 << 20);
    libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
  }
}

/// Loads, before the filter goes in, what the C library reads lazily the first time a builtin asks
/// for it (issue 40). Local time: QuickJS's `getTimezoneOffset` (every local-time `Date` method,
/// `Date.parse` of a local time, `toString`, `toLocaleString`) calls `localtime_r`, whose first call
/// opens and reads the zone file — `TZ` as the host has it (`ENV_TZ`), else `/etc/localtime` — and
/// caches it for the life of the process (glibc's `tzset_internal(0)`, musl's `do_tzset` while `TZ`
/// is unchanged). Under the filter that `openat` killed the worker with `SIGSYS`. QuickJS reaches no
/// other lazy libc state: its random seed is the clock, and it formats numbers, dates and locales
/// itself (no `setlocale`, `strftime`, `mktime`, `qsort`); Rust's thread-local hash seeds come from
/// `getrandom`, which the filter allows. `__test__/security/confined-builtins.spec.ts` calls every
/// builtin method in a confined worker.
pub fn warm_libc() {
  #[cfg(unix)]
  extern "C" {
    // POSIX (<time.h>); the `libc` crate does not declare it.
    fn tzset();
  }
  #[cfg(unix)]
  // SAFETY: `tzset` takes nothing; `time(NULL)` writes nothing; `localtime_r` writes only into the
  // local `tm`, which lives across the call. Each is thread-safe, and no other thread runs yet.
  unsafe {
    tzset();
    let now = libc::time(std::ptr::null_mut());
    let mut tm: libc::tm = std::mem::zeroed();
    libc::localtime_r(&now, &mut tm);
  }
}

/// Why the filter is not in. The worker reports it (as text) in its `Ready` frame; the host then
/// warns that its workers run without a filter.
#[derive(Debug)]
// Only Linux on x86_64/aarch64 installs a filter; elsewhere only `Unsupported` is made.
#[cfg_attr(
  not(all(target_os = "linux", target_endian = "little", any(target_arch = "x86_64", target_arch = "aarch64"))),
  allow(dead_code)
)]
pub enum SeccompError {
  /// Not Linux on x86_64 or aarch64.
  #[cfg_attr(
    all(target_os = "linux", target_endian = "little", any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
  )]
  Unsupported { os: &'static str, arch: &'static str },
  /// The program does not fit the kernel's 16-bit length.
  TooLong(usize),
  /// prctl(PR_SET_NO_NEW_PRIVS) failed.
  NoNewPrivs(std::io::Error),
  /// With TSYNC, the id of a thread that could not be synchronized.
  Unsynchronized(i64),
  /// seccomp(SECCOMP_SET_MODE_FILTER) failed.
  Install(std::io::Error),
}

impl std::fmt::Display for SeccompError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::Unsupported { os, arch } => {
        write!(f, "seccomp filter not supported on {os}/{arch} (only Linux on x86_64 and aarch64)")
      }
      Self::TooLong(n) => write!(f, "seccomp filter too long: {n} instructions"),
      Self::NoNewPrivs(error) => write!(f, "prctl(PR_SET_NO_NEW_PRIVS) failed: {error}"),
      Self::Unsynchronized(tid) => write!(f, "seccomp: thread {tid} could not be synchronized (TSYNC)"),
      Self::Install(error) => write!(f, "seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) failed: {error}"),
    }
  }
}

impl std::error::Error for SeccompError {}

/// Installs the filter for every thread of the process (SECCOMP_FILTER_FLAG_TSYNC) after
/// prctl(PR_SET_NO_NEW_PRIVS); on other systems than Linux on x86_64 and aarch64 it is
/// `Unsupported`.
///
/// Every thread must have finished its start-up (and warmed up its allocator) before this is called:
/// anything outside the allowlist kills the whole process from then on, thread exit included.
// macOS confines its workers with Seatbelt instead (`seatbelt.rs`).
#[cfg_attr(target_os = "macos", allow(dead_code))]
pub fn install_filter() -> Result<(), SeccompError> {
  #[cfg(all(target_os = "linux", target_endian = "little", any(target_arch = "x86_64", target_arch = "aarch64")))]
  {
    filter::install()
  }
  #[cfg(not(all(
    target_os = "linux",
    target_endian = "little",
    any(target_arch = "x86_64", target_arch = "aarch64")
  )))]
  {
    Err(SeccompError::Unsupported { os: std::env::consts::OS, arch: std::env::consts::ARCH })
  }
}

/// `rlim_t` is 32 bits on some targets; a limit too large for it means no limit.
#[cfg(unix)]
#[allow(clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
fn to_rlim(bytes: u64) -> libc::rlim_t {
  libc::rlim_t::try_from(bytes).unwrap_or(libc::RLIM_INFINITY)
}

/// `prctl(option, value, 0, 0, 0)`, with every argument passed at the `unsigned long` width the kernel reads.
#[cfg(target_os = "linux")]
fn set_prctl(option: libc::c_int, value: libc::c_int) -> io::Result<()> {
  let value = libc::c_ulong::try_from(value).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
  let zero: libc::c_ulong = 0;
  // SAFETY: the options used here (PDEATHSIG, DUMPABLE, NO_NEW_PRIVS) take integers only and touch no memory.
  if unsafe { libc::prctl(option, value, zero, zero, zero) } == 0 {
    Ok(())
  } else {
    Err(io::Error::last_os_error())
  }
}

/// Closes every fd >= 3. Returns a warning only if some may have stayed open.
#[cfg(unix)]
fn close_inherited_fds() -> Option<String> {
  #[cfg(target_os = "linux")]
  {
    let (first, flags): (libc::c_uint, libc::c_uint) = (3, 0);
    // SAFETY: close_range takes integers only. Closing fds that other code might own is sound because the
    // caller runs this first in main(), before anything in the process holds an fd >= 3.
    if unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, flags) } == 0 {
      return None;
    }
  }
  // close_range is missing (Linux < 5.9, or refused by a container's own filter) or not Linux: list the fds.
  close_listed_fds()
}

/// Closes every fd >= 3 named in `/proc/self/fd` (`/dev/fd` elsewhere), or 3..1024 if that cannot be listed.
#[cfg(unix)]
fn close_listed_fds() -> Option<String> {
  let dir = if cfg!(target_os = "linux") { "/proc/self/fd" } else { "/dev/fd" };
  match std::fs::read_dir(dir) {
    Ok(entries) => {
      // The listing's own fd is among the names; it is closed when `entries` is dropped at the end of this
      // statement, so closing it again below only gives EBADF (nothing can reuse the number meanwhile).
      let fds: Vec<libc::c_int> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd: &libc::c_int| fd >= 3)
        .collect();
      for fd in fds {
        // SAFETY: as for close_range above (the caller runs first in main()); an fd that is already closed
        // gives EBADF, which is harmless.
        unsafe { libc::close(fd) };
      }
      None
    }
    Err(error) => {
      for fd in 3..1024 {
        // SAFETY: as above.
        unsafe { libc::close(fd) };
      }
      Some(format!("could not list {dir} ({error}); closed fds 3..1024 only"))
    }
  }
}

#[cfg(all(target_os = "linux", target_endian = "little", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
  use std::io;

  use super::SeccompError;
  use std::mem::offset_of;

  /// `<linux/audit.h>`; not in `libc`.
  pub(super) const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
  pub(super) const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
  /// The only arch whose calls are looked at; any other (i386 `int 0x80`, aarch32 compat) is killed.
  pub(super) const AUDIT_ARCH: u32 = if cfg!(target_arch = "x86_64") { AUDIT_ARCH_X86_64 } else { AUDIT_ARCH_AARCH64 };

  const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
  const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
  const PROT_EXEC: u32 = libc::PROT_EXEC as u32;

  // Offsets into `seccomp_data`. Arguments are 64-bit; on a little-endian target the low 32 bits come first.
  const NR: u32 = offset_of!(libc::seccomp_data, nr) as u32;
  const ARCH: u32 = offset_of!(libc::seccomp_data, arch) as u32;
  const ARG0: u32 = offset_of!(libc::seccomp_data, args) as u32;
  const ARG2: u32 = ARG0 + 2 * 8;

  const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
  const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
  const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
  const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

  #[derive(Clone, Copy)]
  enum Rule {
    /// Allowed with any arguments.
    Any(libc::c_long),
    /// Allowed only when the low 32 bits of arg0 are one of these fds (the kernel reads an fd as `unsigned int`).
    Arg0In(libc::c_long, &'static [u32]),
    /// Allowed only when arg2 has none of these bits (`prot` of mmap/mprotect: its flags are all in the low 32 bits).
    Arg2NoBits(libc::c_long, u32),
  }

  /// Hot entries first (per the strace counts in the design notes: mprotect, brk, futex, write dominate).
  const RULES: &[Rule] = &[
    Rule::Any(libc::SYS_futex),
    Rule::Arg2NoBits(libc::SYS_mprotect, PROT_EXEC),
    Rule::Any(libc::SYS_brk),
    Rule::Arg0In(libc::SYS_write, &[1, 2]),
    Rule::Arg0In(libc::SYS_read, &[0]),
    Rule::Arg2NoBits(libc::SYS_mmap, PROT_EXEC),
    Rule::Any(libc::SYS_munmap),
    Rule::Any(libc::SYS_mremap),
    Rule::Any(libc::SYS_madvise),
    Rule::Any(libc::SYS_clock_gettime),
    Rule::Any(libc::SYS_gettimeofday),
    Rule::Any(libc::SYS_clock_nanosleep),
    Rule::Any(libc::SYS_nanosleep),
    Rule::Any(libc::SYS_sched_yield),
    Rule::Any(libc::SYS_sched_getaffinity),
    Rule::Any(libc::SYS_getrandom),
    // std may ask a thread for its own id lazily; harmless.
    Rule::Any(libc::SYS_gettid),
    // Waiting for the host's next frame after a short spin (`wire::SpinRead`); it only waits.
    Rule::Any(libc::SYS_ppoll),
    #[cfg(target_arch = "x86_64")]
    Rule::Any(libc::SYS_poll),
    Rule::Any(libc::SYS_exit_group),
    Rule::Any(libc::SYS_exit),
  ];

  fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
  }

  fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
  }

  /// The whole filter program.
  pub(super) fn program() -> Vec<libc::sock_filter> {
    let mut p = Vec::with_capacity(4 + 6 * RULES.len());
    // Wrong arch -> kill. (x32 calls carry AUDIT_ARCH_X86_64 but have bit 30 set in nr, so no rule matches them.)
    p.push(stmt(LD_W_ABS, ARCH));
    p.push(jump(JEQ_K, AUDIT_ARCH, 1, 0));
    p.push(stmt(RET_K, KILL));
    for rule in RULES {
      match *rule {
        Rule::Any(nr) => {
          // ld nr; jeq nr ? 0 : 1; ret ALLOW
          p.push(stmt(LD_W_ABS, NR));
          p.push(jump(JEQ_K, nr as u32, 0, 1));
          p.push(stmt(RET_K, ALLOW));
        }
        Rule::Arg0In(nr, fds) => {
          // ld nr; jeq nr ? 0 : 2+2n; ld arg0; { jeq fd ? 0 : 1; ret ALLOW }*n; ret KILL
          // A jump skips at most 255 instructions; a list too long for that is left out (fail closed).
          let Ok(skip) = u8::try_from(2 + 2 * fds.len()) else { continue };
          p.push(stmt(LD_W_ABS, NR));
          p.push(jump(JEQ_K, nr as u32, 0, skip));
          p.push(stmt(LD_W_ABS, ARG0));
          for &fd in fds {
            p.push(jump(JEQ_K, fd, 0, 1));
            p.push(stmt(RET_K, ALLOW));
          }
          p.push(stmt(RET_K, KILL));
        }
        Rule::Arg2NoBits(nr, bits) => {
          // ld nr; jeq nr ? 0 : 4; ld arg2; jset bits ? 0 : 1; ret KILL; ret ALLOW
          // (jf must skip all four: 3 would land on `ret ALLOW` and allow every later syscall.)
          p.push(stmt(LD_W_ABS, NR));
          p.push(jump(JEQ_K, nr as u32, 0, 4));
          p.push(stmt(LD_W_ABS, ARG2));
          p.push(jump(JSET_K, bits, 0, 1));
          p.push(stmt(RET_K, KILL));
          p.push(stmt(RET_K, ALLOW));
        }
      }
    }
    p.push(stmt(RET_K, KILL));
    p
  }

  pub(super) fn install() -> Result<(), SeccompError> {
    let mut program = program();
    let len = u16::try_from(program.len()).map_err(|_| SeccompError::TooLong(program.len()))?;
    let fprog = libc::sock_fprog { len, filter: program.as_mut_ptr() };
    super::set_prctl(libc::PR_SET_NO_NEW_PRIVS, 1).map_err(SeccompError::NoNewPrivs)?;
    let mode = libc::c_ulong::from(libc::SECCOMP_SET_MODE_FILTER);
    // SAFETY: `fprog` points to `len` initialized instructions in `program`, which outlives the call; the
    // kernel copies the program before returning and keeps no pointer into our memory.
    let rc = unsafe {
      libc::syscall(libc::SYS_seccomp, mode, libc::SECCOMP_FILTER_FLAG_TSYNC, &fprog as *const libc::sock_fprog)
    };
    match rc {
      0 => Ok(()),
      // With TSYNC, a positive result is the id of a thread that could not be synchronized.
      tid if tid > 0 => Err(SeccompError::Unsynchronized(tid)),
      _ => Err(SeccompError::Install(io::Error::last_os_error())),
    }
  }
}

#[cfg(all(test, target_os = "linux", target_endian = "little", any(target_arch = "x86_64", target_arch = "aarch64")))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
  use super::filter::{program, AUDIT_ARCH, AUDIT_ARCH_AARCH64, AUDIT_ARCH_X86_64};
  use super::*;
  use libc::{c_long, sock_filter};
  use std::os::unix::process::ExitStatusExt;
  use std::process::{Command, Output, Stdio};

  const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
  const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
  const PROT_EXEC: u64 = libc::PROT_EXEC as u64;
  const RW: u64 = (libc::PROT_READ | libc::PROT_WRITE) as u64;

  // ---- A classic-BPF interpreter for the subset the filter uses --------------------------------------------

  /// Kernel load-time checks that apply to this subset: bounded length, in-range forward jumps, ends in RET.
  fn check(program: &[sock_filter]) {
    assert!(!program.is_empty() && program.len() <= 4096);
    for (pc, ins) in program.iter().enumerate() {
      if u32::from(ins.code) & 0x07 == libc::BPF_JMP {
        assert!(pc + 1 + usize::from(ins.jt.max(ins.jf)) < program.len(), "jump out of range at {pc}");
      }
    }
    assert_eq!(u32::from(program[program.len() - 1].code), libc::BPF_RET | libc::BPF_K);
  }

  fn data(nr: c_long, arch: u32, args: [u64; 6]) -> [u8; 64] {
    let data = libc::seccomp_data { nr: nr as i32, arch, instruction_pointer: 0x4000_1000, args };
    assert_eq!(size_of::<libc::seccomp_data>(), 64);
    let mut bytes = [0u8; 64];
    // SAFETY: seccomp_data is 64 bytes of plain integers with no padding, exactly the kernel's layout.
    unsafe { std::ptr::copy_nonoverlapping((&raw const data).cast::<u8>(), bytes.as_mut_ptr(), 64) };
    bytes
  }

  fn run(program: &[sock_filter], data: &[u8; 64]) -> u32 {
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
      let ins = program[pc];
      match u32::from(ins.code) {
        c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
          let k = ins.k as usize;
          assert!(k & 3 == 0 && k + 4 <= data.len(), "bad load offset {k}");
          acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
          pc += 1;
        }
        c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
          pc += 1 + usize::from(if acc == ins.k { ins.jt } else { ins.jf });
        }
        c if c == libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K => {
          pc += 1 + usize::from(if acc & ins.k != 0 { ins.jt } else { ins.jf });
        }
        c if c == libc::BPF_RET | libc::BPF_K => return ins.k,
        other => panic!("opcode {other:#x} at {pc} is outside the interpreted subset"),
      }
    }
  }

  fn verdict(nr: c_long, args: [u64; 6]) -> u32 {
    run(&program(), &data(nr, AUDIT_ARCH, args))
  }

  fn args(a0: u64, a2: u64) -> [u64; 6] {
    [a0, 0x7f00_0000_0000, a2, 0x22, u64::MAX, 0]
  }

  /// The allowlist, written out again independently of the rules, as plain Rust.
  fn model(nr: c_long, args: [u64; 6]) -> u32 {
    let (fd, prot) = (args[0] as u32, args[2] as u32 as u64);
    let any = [
      libc::SYS_futex,
      libc::SYS_munmap,
      libc::SYS_mremap,
      libc::SYS_madvise,
      libc::SYS_brk,
      libc::SYS_exit,
      libc::SYS_exit_group,
      libc::SYS_clock_gettime,
      libc::SYS_gettimeofday,
      libc::SYS_clock_nanosleep,
      libc::SYS_nanosleep,
      libc::SYS_sched_yield,
      libc::SYS_sched_getaffinity,
      libc::SYS_getrandom,
      libc::SYS_gettid,
      libc::SYS_ppoll,
      #[cfg(target_arch = "x86_64")]
      libc::SYS_poll,
    ];
    let allowed = if nr == libc::SYS_read {
      fd == 0
    } else if nr == libc::SYS_write {
      fd == 1 || fd == 2
    } else if nr == libc::SYS_mmap || nr == libc::SYS_mprotect {
      prot & PROT_EXEC == 0
    } else {
      any.contains(&nr)
    };
    if allowed {
      ALLOW
    } else {
      KILL
    }
  }

  #[test]
  fn program_passes_the_kernel_checks() {
    check(&program());
  }

  #[test]
  fn allowlisted_calls_with_good_arguments_are_allowed() {
    let cases: &[(&str, c_long, [u64; 6])] = &[
      ("futex", libc::SYS_futex, args(0x7f00_1234, 0)),
      ("read fd 0", libc::SYS_read, args(0, 4096)),
      ("write fd 1", libc::SYS_write, args(1, 12)),
      ("write fd 2", libc::SYS_write, args(2, 12)),
      ("mmap rw", libc::SYS_mmap, args(0, RW)),
      ("mmap none", libc::SYS_mmap, args(0, 0)),
      ("mprotect rw", libc::SYS_mprotect, args(0x7f00_0000, RW)),
      ("mprotect read", libc::SYS_mprotect, args(0x7f00_0000, libc::PROT_READ as u64)),
      ("munmap", libc::SYS_munmap, args(0x7f00_0000, 0)),
      ("mremap", libc::SYS_mremap, args(0x7f00_0000, 8192)),
      ("madvise", libc::SYS_madvise, args(0x7f00_0000, libc::MADV_DONTNEED as u64)),
      ("brk", libc::SYS_brk, args(0, 0)),
      ("exit", libc::SYS_exit, args(0, 0)),
      ("exit_group", libc::SYS_exit_group, args(1, 0)),
      ("clock_gettime", libc::SYS_clock_gettime, args(1, 0)),
      ("gettimeofday", libc::SYS_gettimeofday, args(0, 0)),
      ("clock_nanosleep", libc::SYS_clock_nanosleep, args(1, 0)),
      ("nanosleep", libc::SYS_nanosleep, args(0x7ffc_0000, 0)),
      ("sched_yield", libc::SYS_sched_yield, args(0, 0)),
      ("sched_getaffinity", libc::SYS_sched_getaffinity, args(0, 0x7ffc_0000)),
      ("getrandom", libc::SYS_getrandom, args(0x7ffc_0000, 0)),
      ("ppoll", libc::SYS_ppoll, args(0x7ffc_0000, 0)),
      ("gettid", libc::SYS_gettid, args(0, 0)),
    ];
    for &(name, nr, args) in cases {
      assert_eq!(verdict(nr, args), ALLOW, "{name} should be allowed");
    }
  }

  #[test]
  fn everything_else_is_killed() {
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut cases: Vec<(&str, c_long, [u64; 6])> = vec![
      ("read fd 3", libc::SYS_read, args(3, 4096)),
      ("read fd 1", libc::SYS_read, args(1, 4096)),
      ("write fd 0", libc::SYS_write, args(0, 12)),
      ("write fd 3", libc::SYS_write, args(3, 12)),
      ("mmap rx", libc::SYS_mmap, args(0, PROT_EXEC | libc::PROT_READ as u64)),
      ("mmap rwx", libc::SYS_mmap, args(0, PROT_EXEC | RW)),
      ("mmap x", libc::SYS_mmap, args(0, PROT_EXEC)),
      ("mprotect rx", libc::SYS_mprotect, args(0x7f00_0000, PROT_EXEC | libc::PROT_READ as u64)),
      ("mprotect x, high bits set", libc::SYS_mprotect, args(0, 0xffff_ffff_0000_0000 | PROT_EXEC)),
      ("openat", libc::SYS_openat, args(libc::AT_FDCWD as u64, 0)),
      ("getpid", libc::SYS_getpid, args(0, 0)),
      ("clone", libc::SYS_clone, args(0, 0)),
      ("clone3", libc::SYS_clone3, args(0, 0)),
      ("execve", libc::SYS_execve, args(0, 0)),
      ("socket", libc::SYS_socket, args(libc::AF_INET as u64, 0)),
      ("kill", libc::SYS_kill, args(1, 0)),
      ("tgkill", libc::SYS_tgkill, args(1, 9)),
      ("prctl", libc::SYS_prctl, args(libc::PR_SET_NO_NEW_PRIVS as u64, 0)),
      ("ptrace", libc::SYS_ptrace, args(0, 0)),
      ("close", libc::SYS_close, args(1, 0)),
      ("ioctl", libc::SYS_ioctl, args(1, 0)),
      ("seccomp", libc::SYS_seccomp, args(1, 0)),
      ("rt_sigreturn", libc::SYS_rt_sigreturn, args(0, 0)),
      ("rt_sigprocmask", libc::SYS_rt_sigprocmask, args(0, 0)),
      ("sigaltstack", libc::SYS_sigaltstack, args(0, 0)),
      ("pkey_mprotect", libc::SYS_pkey_mprotect, args(0, RW)),
      ("x32 read", libc::SYS_read | 0x4000_0000, args(0, 0)),
    ];
    #[cfg(target_arch = "x86_64")]
    cases.extend([
      ("open", libc::SYS_open, args(0, 0)),
      ("fork", libc::SYS_fork, args(0, 0)),
      ("arch_prctl", libc::SYS_arch_prctl, args(0, 0)),
    ]);
    for &(name, nr, args) in &cases {
      assert_eq!(verdict(nr, args), KILL, "{name} should be killed");
    }
  }

  #[test]
  fn wrong_arch_is_killed() {
    let program = program();
    let other = if AUDIT_ARCH == AUDIT_ARCH_X86_64 { AUDIT_ARCH_AARCH64 } else { AUDIT_ARCH_X86_64 };
    for arch in [other, 0x4000_0003 /* i386 */, 0x4000_0028 /* arm */, 0, u32::MAX] {
      for nr in [libc::SYS_futex, libc::SYS_read, libc::SYS_write, libc::SYS_exit_group] {
        assert_eq!(run(&program, &data(nr, arch, args(1, 0))), KILL, "nr {nr} under arch {arch:#x}");
      }
    }
  }

  /// Every syscall number (and a few argument patterns) against the model: catches a jump that lands one
  /// block too early or too late, which only shows on a neighbouring syscall.
  #[test]
  fn program_matches_the_model_for_every_syscall_number() {
    let program = program();
    let patterns = [
      [0; 6],
      args(1, 0),
      args(2, RW),
      args(3, PROT_EXEC),
      args(0, PROT_EXEC | RW),
      [u64::MAX; 6],
      [0x1_0000_0000, 0, 0x1_0000_0000, 0, 0, 0],
    ];
    for nr in (0..1024).chain([-1, 0x4000_0000, 0x4000_0001, 0x4000_0009, i32::MAX as c_long]) {
      for args in patterns {
        assert_eq!(run(&program, &data(nr, AUDIT_ARCH, args)), model(nr, args), "nr {nr}, args {args:x?}");
      }
    }
  }

  // ---- Real processes: this test binary re-executed in child mode ------------------------------------------

  const CHILD_ENV: &str = "CODECALL_SECCOMP_TEST_CHILD";
  /// Exit code of a child whose install_filter() failed (seccomp unavailable here).
  const UNAVAILABLE: i32 = 77;
  /// Exit code of a child that survived an action that should have killed it.
  const SURVIVED: i32 = 3;

  fn spawn_child(mode: &str) -> Output {
    let path = module_path!();
    let name = format!("{}::child_entry", path.split_once("::").map_or(path, |(_, rest)| rest));
    Command::new(std::env::current_exe().unwrap())
      .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture", "--quiet"])
      .env(CHILD_ENV, mode)
      .stdin(Stdio::null())
      .output()
      .unwrap()
  }

  /// Runs a filtered child; None (after a note) if the kernel refused the filter.
  fn filtered_child(mode: &str) -> Option<Output> {
    let output = spawn_child(mode);
    if output.status.code() == Some(UNAVAILABLE) {
      let stdout = String::from_utf8_lossy(&output.stdout);
      let reason = stdout.lines().find(|line| line.starts_with("install_filter:")).unwrap_or("?");
      eprintln!("note: seccomp unavailable here, `{mode}` not checked ({reason})");
      return None;
    }
    Some(output)
  }

  fn describe(output: &Output) -> String {
    format!(
      "status {:?}\nstdout: {}\nstderr: {}",
      output.status,
      String::from_utf8_lossy(&output.stdout),
      String::from_utf8_lossy(&output.stderr)
    )
  }

  fn assert_sigsys(mode: &str) {
    let Some(output) = filtered_child(mode) else { return };
    assert_eq!(output.status.signal(), Some(libc::SIGSYS), "{mode}: {}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("filtered\n"), "{mode}: {}", describe(&output));
  }

  #[test]
  fn filtered_child_can_write_allocate_sleep_and_exit() {
    let Some(output) = filtered_child("ok") else { return };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("filtered\nok done\n"), "{}", describe(&output));
  }

  #[test]
  fn filtered_child_dies_on_open() {
    assert_sigsys("open");
  }

  #[test]
  fn filtered_child_dies_on_exec_memory() {
    assert_sigsys("exec-mmap");
  }

  #[test]
  fn filtered_child_dies_on_getpid() {
    assert_sigsys("getpid");
  }

  #[test]
  fn filtered_child_dies_on_write_to_another_fd() {
    assert_sigsys("write-fd3");
  }

  #[test]
  fn filter_covers_threads_started_before_it() {
    assert_sigsys("thread-getpid");
  }

  #[test]
  fn fence_self_closes_fds_and_sets_limits() {
    let output = spawn_child("fence");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("fenced\n"), "{}", describe(&output));
  }

  #[test]
  fn fd_listing_fallback_closes_fds() {
    let output = spawn_child("fence-list");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("listed fds closed\n"), "{}", describe(&output));
  }

  #[test]
  fn fence_self_exits_when_the_parent_is_not_the_expected_one() {
    let output = spawn_child("fence-wrong-parent");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("after"), "{}", describe(&output));
  }

  /// The child side of the tests above: does nothing in a normal run.
  #[test]
  fn child_entry() {
    if let Ok(mode) = std::env::var(CHILD_ENV) {
      child_main(&mode);
    }
  }

  /// Writes straight to fd 1 (the harness's capture would allocate and lock; fd 1 is allowed).
  fn say(text: &str) {
    // SAFETY: `text` is valid for `text.len()` bytes.
    unsafe { libc::write(1, text.as_ptr().cast(), text.len()) };
  }

  fn quit(code: i32) -> ! {
    // SAFETY: ends the process at once, without the harness's own teardown (which the filter would kill).
    unsafe { libc::_exit(code) }
  }

  fn churn() {
    for _ in 0..20 {
      let block = std::hint::black_box(vec![1u8; 8 << 20]);
      drop(block);
    }
  }

  fn child_main(mode: &str) -> ! {
    if mode.starts_with("fence") {
      fence_child(mode);
    }
    // A thread that is already running when the filter goes in, parked on a channel (futex).
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let (ready, started) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
      let _ = std::hint::black_box(std::collections::HashMap::<u32, u32>::new());
      churn();
      ready.send(()).unwrap();
      if wait.recv().is_ok() {
        // SAFETY: getpid has no preconditions.
        std::hint::black_box(unsafe { libc::syscall(libc::SYS_getpid) });
        let _ = done.send(());
      }
      loop {
        std::thread::park();
      }
    });
    started.recv().unwrap();
    // Warm-up, as a real worker does before its filter: the same allocations, so that glibc has already
    // made its one-time checks (a thread arena that shrinks reads /proc/sys/vm/overcommit_memory once).
    churn();
    if let Err(error) = install_filter() {
      say(&format!("install_filter: {error}\n"));
      quit(UNAVAILABLE);
    }
    say("filtered\n");
    match mode {
      "ok" => {
        churn();
        let start = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        std::thread::yield_now();
        let mut random = [0u8; 16];
        // SAFETY: `random` is writable for 16 bytes.
        unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
        if start.elapsed() < std::time::Duration::from_millis(2) {
          quit(4);
        }
        say("ok done\n");
        quit(0);
      }
      "open" => {
        // SAFETY: a NUL-terminated path.
        std::hint::black_box(unsafe { libc::open(c"/etc/passwd".as_ptr(), libc::O_RDONLY) });
      }
      "exec-mmap" => {
        let prot = libc::PROT_READ | libc::PROT_EXEC;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        // SAFETY: a fresh anonymous mapping; nothing of ours is at the address it may return.
        std::hint::black_box(unsafe { libc::mmap(std::ptr::null_mut(), 4096, prot, flags, -1, 0) });
      }
      "getpid" => {
        // SAFETY: getpid has no preconditions.
        std::hint::black_box(unsafe { libc::syscall(libc::SYS_getpid) });
      }
      "write-fd3" => {
        // SAFETY: writes from a valid buffer; fd 3 need not even be open, the filter decides first.
        unsafe { libc::write(3, b"x".as_ptr().cast(), 1) };
      }
      "thread-getpid" => {
        let _ = go.send(());
        let _ = finished.recv();
      }
      _ => say("unknown mode\n"),
    }
    say("survived\n");
    quit(SURVIVED)
  }

  fn is_open(fd: libc::c_int) -> bool {
    // SAFETY: F_GETFD only queries the fd.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
  }

  fn fence_child(mode: &str) -> ! {
    // Leak a few fds (without CLOEXEC) at low and high numbers for fence_self to close.
    // SAFETY: dup/dup2 of our own stdout; the new fds belong to nobody else.
    let leaked = unsafe { [libc::dup(1), libc::dup2(1, 200), libc::dup2(1, 1500)] };
    assert!(leaked.iter().all(|&fd| fd >= 3), "{leaked:?}");
    let parent = std::os::unix::process::parent_id();
    let still_open = |fds: &[libc::c_int]| -> Vec<String> {
      fds.iter().filter(|&&fd| is_open(fd)).map(|fd| format!("fd {fd} still open")).collect()
    };
    if mode == "fence-list" {
      let warning = close_listed_fds();
      let problems: Vec<String> = still_open(&leaked).into_iter().chain(warning).collect();
      if problems.is_empty() {
        say("listed fds closed\n");
        quit(0);
      }
      say(&format!("{problems:?}\n"));
      quit(1);
    }
    if mode == "fence-wrong-parent" {
      fence_self(Some(parent.wrapping_add(1)), None);
      say("after fence\n");
      quit(SURVIVED);
    }
    const SPACE: u64 = 64 << 30;
    let warnings = fence_self(Some(parent), Some(SPACE));
    let mut problems = warnings;
    problems.extend(still_open(&leaked));
    for (name, resource, want) in [("core", libc::RLIMIT_CORE, 0), ("as", libc::RLIMIT_AS, SPACE)] {
      let mut limit = libc::rlimit { rlim_cur: 1, rlim_max: 1 };
      // SAFETY: `limit` is writable.
      unsafe { libc::getrlimit(resource, &mut limit) };
      if (limit.rlim_cur, limit.rlim_max) != (want, want) {
        problems.push(format!("RLIMIT_{name} = {}/{}", limit.rlim_cur, limit.rlim_max));
      }
    }
    // SAFETY: PR_GET_DUMPABLE takes no pointer.
    if unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) } != 0 {
      problems.push("still dumpable".to_owned());
    }
    let mut signal: libc::c_int = 0;
    // SAFETY: PR_GET_PDEATHSIG writes one int through the pointer, which is valid.
    unsafe { libc::prctl(libc::PR_GET_PDEATHSIG, &mut signal as *mut libc::c_int) };
    if signal != libc::SIGKILL {
      problems.push(format!("pdeathsig = {signal}"));
    }
    if problems.is_empty() {
      say("fenced\n");
      quit(0);
    }
    say(&format!("{problems:?}\n"));
    quit(1)
  }
}
