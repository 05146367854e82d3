//! macOS: the worker confines itself with Seatbelt before it reads any script (issue 43), as
//! Chromium's helper processes do: the addon is already mapped, every thread started and warmed up,
//! then the process applies a deny-default profile to itself — irreversibly, for every thread. From
//! then on it cannot open a file, a socket or a Mach service, nor start a process; the pipes it
//! already holds to the host keep working (descriptors opened before the profile are not checked
//! again).
//!
//! The profile is Apple's built-in `pure-computation` ("all operating-system services
//! prohibited"), named through `sandbox_init(kSBXProfilePureComputation, SANDBOX_NAMED, …)`. The
//! functions are private API (Apple deprecated them without a replacement; Chromium, Firefox and
//! the Rust sandboxes still use them): they are looked up at run time with `dlsym`, so a libSystem
//! without them makes the worker refuse scripts rather than fail to load. Whatever happens, the
//! worker checks with `sandbox_check` that it is sandboxed before it says `Ready`; when it cannot
//! be confined it says `Unconfined` with the reason, and the host ends its executions with
//! `WORKER_STARTUP_FAILED` — it never runs a script unconfined.
//!
//! A host that is itself sandboxed (an app's sandbox is inherited by its children) cannot apply a
//! second profile: the worker then runs under the inherited one, which `sandbox_check` confirms.

// Elsewhere only the footprint cap's arithmetic and the tests use it.
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

/// `sandbox_init`'s flag: the profile argument names a built-in profile.
pub const SANDBOX_NAMED: u64 = 0x0001;
/// The data symbol whose value is the built-in profile's name.
pub const PROFILE_SYMBOL: &str = "kSBXProfilePureComputation";
/// The functions, resolved at run time.
pub const INIT_SYMBOL: &str = "sandbox_init";
pub const CHECK_SYMBOL: &str = "sandbox_check";
pub const FREE_ERROR_SYMBOL: &str = "sandbox_free_error";

/// How the worker is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confined {
  /// The `pure-computation` profile was applied now.
  Applied,
  /// The process was already sandboxed (by its parent's sandbox); a second profile cannot be
  /// applied, and the inherited one holds.
  Inherited,
}

/// Confines the calling process (macOS). `Err` says why it could not be done; the caller must
/// then refuse to run scripts.
#[cfg(target_os = "macos")]
pub fn confine() -> Result<Confined, String> {
  use std::ffi::{c_char, c_int, CStr, CString};

  type Init = unsafe extern "C" fn(*const c_char, u64, *mut *mut c_char) -> c_int;
  type Check = unsafe extern "C" fn(libc::pid_t, *const c_char, c_int, ...) -> c_int;
  type FreeError = unsafe extern "C" fn(*mut c_char);

  fn lookup(name: &str) -> Result<*mut libc::c_void, String> {
    let c = CString::new(name).map_err(|_| format!("bad symbol name {name}"))?;
    // SAFETY: RTLD_DEFAULT searches the images already loaded; `c` is NUL-terminated and lives
    // across the call. A missing symbol is a null pointer, handled below.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
    if found.is_null() {
      Err(format!("libSystem has no {name}"))
    } else {
      Ok(found)
    }
  }

  let check = lookup(CHECK_SYMBOL)?;
  // SAFETY: `sandbox_check` is `int sandbox_check(pid_t, const char *operation, enum
  // sandbox_filter_type, ...)` in libsystem_sandbox; the pointer came from dlsym for that name.
  let check: Check = unsafe { std::mem::transmute::<*mut libc::c_void, Check>(check) };
  // SAFETY: getpid has no preconditions; a NULL operation with SANDBOX_FILTER_NONE (0) asks only
  // whether the process is sandboxed at all, and passes no variadic argument.
  let sandboxed = || unsafe { check(libc::getpid(), std::ptr::null(), 0) } == 1;
  if sandboxed() {
    return Ok(Confined::Inherited);
  }

  let init = lookup(INIT_SYMBOL)?;
  // SAFETY: `sandbox_init` is `int sandbox_init(const char *profile, uint64_t flags, char
  // **errorbuf)`; the pointer came from dlsym for that name.
  let init: Init = unsafe { std::mem::transmute::<*mut libc::c_void, Init>(init) };
  let profile = lookup(PROFILE_SYMBOL)? as *const c_char;
  let mut error: *mut c_char = std::ptr::null_mut();
  // SAFETY: `profile` points at the NUL-terminated name libSystem exports under that symbol
  // (`extern const char kSBXProfilePureComputation[]`); `error` is a valid out-pointer, set only
  // on failure to a string that sandbox_free_error releases.
  let status = unsafe { init(profile, SANDBOX_NAMED, &mut error) };
  if status != 0 {
    let why = if error.is_null() {
      std::io::Error::last_os_error().to_string()
    } else {
      // SAFETY: on failure `error` is NULL or a NUL-terminated message owned by libsandbox.
      let text = unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned();
      if let Ok(free) = lookup(FREE_ERROR_SYMBOL) {
        // SAFETY: `sandbox_free_error(char *)` releases the message sandbox_init returned; it is
        // not used afterwards.
        let free: FreeError = unsafe { std::mem::transmute::<*mut libc::c_void, FreeError>(free) };
        // SAFETY: as above.
        unsafe { free(error) };
      }
      text
    };
    return Err(format!("sandbox_init(pure-computation) failed: {why}"));
  }
  if !sandboxed() {
    return Err(
      "sandbox_init(pure-computation) returned success, but sandbox_check says the process is not sandboxed".into(),
    );
  }
  Ok(Confined::Applied)
}

/// Other systems: not this file's business (Linux has its seccomp filter).
#[cfg(not(target_os = "macos"))]
pub fn confine() -> Result<Confined, String> {
  Err(format!("Seatbelt is macOS only (this is {})", std::env::consts::OS))
}

/// The physical footprint of process `pid` (macOS `proc_pid_rusage`), or `None`.
#[cfg(target_os = "macos")]
pub fn footprint(pid: u32) -> Option<u64> {
  let pid = libc::c_int::try_from(pid).ok()?;
  let mut info = std::mem::MaybeUninit::<libc::rusage_info_v4>::zeroed();
  // SAFETY: `info` is a writable rusage_info_v4, the size RUSAGE_INFO_V4 fills in; the kernel
  // writes only into it.
  let status = unsafe { libc::proc_pid_rusage(pid, libc::RUSAGE_INFO_V4, info.as_mut_ptr().cast()) };
  if status != 0 {
    return None;
  }
  // SAFETY: proc_pid_rusage succeeded, so the structure is initialised (it was zeroed before).
  Some(unsafe { info.assume_init() }.ri_phys_footprint)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn symbols_are_the_private_api_names() {
    // Misspelled, dlsym finds nothing and every macOS worker refuses scripts: the names are the ones
    // libsystem_sandbox exports (sandbox.h, Chromium's sandbox/mac/seatbelt.cc).
    assert_eq!(PROFILE_SYMBOL, "kSBXProfilePureComputation");
    assert_eq!((INIT_SYMBOL, CHECK_SYMBOL, FREE_ERROR_SYMBOL), ("sandbox_init", "sandbox_check", "sandbox_free_error"));
    assert_eq!(SANDBOX_NAMED, 1);
  }

  #[cfg(not(target_os = "macos"))]
  #[test]
  fn elsewhere_it_says_it_is_macos_only() {
    assert!(confine().err().is_some_and(|e| e.contains("macOS only")));
  }
}
