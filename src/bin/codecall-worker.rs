//! `codecall-worker`: the worker process of `isolation: 'process'`. A launcher: it maps the
//! library the host names in `CODECALL_WORKER_LIBRARY` (the host's own `.node`) and runs its
//! `codecall_worker_main` (`sandbox/process/entry.rs`), so the engine ships once per platform
//! package. It never names the crate, so none of it is linked here. Run by hand it needs that
//! variable, then waits for a `Hello` frame on stdin.
//!
//! With the `fat-worker` feature it is the whole worker instead (the crate linked in): musl builds,
//! whose executables are static and cannot map a library.

/// Must equal `WORKER_ABI` of `sandbox/process/entry.rs` (a test holds them together).
#[cfg(all(unix, not(feature = "fat-worker")))]
const WORKER_ABI: u32 = 1;

#[cfg(all(unix, feature = "fat-worker"))]
fn main() {
  codecall_native::sandbox::worker_main()
}

#[cfg(all(unix, not(feature = "fat-worker")))]
fn main() {
  use std::ffi::{CStr, CString};
  use std::os::unix::ffi::OsStrExt;

  fn fail(what: &str) -> ! {
    eprintln!("codecall-worker: {what}");
    // SAFETY: ends the process at once; nothing of it needs tearing down.
    unsafe { libc::_exit(4) }
  }

  // The parent may die while the library loads: go with it (the entry's fences repeat this).
  #[cfg(any(target_os = "linux", target_os = "android"))]
  // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number reads no memory of ours.
  unsafe {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
  }
  let Some(library) = std::env::var_os("CODECALL_WORKER_LIBRARY").filter(|l| !l.is_empty()) else {
    fail("CODECALL_WORKER_LIBRARY is not set (the host sets it to its own .node)")
  };
  let Ok(path) = CString::new(library.as_bytes()) else { fail("CODECALL_WORKER_LIBRARY holds a NUL byte") };
  // SAFETY: `path` is a NUL-terminated string that outlives the call. The library is the host's
  // own addon: its load-time constructors only fill static registries (no Node-API call).
  let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
  if handle.is_null() {
    // SAFETY: dlerror returns NULL or a NUL-terminated message valid until the next dl* call.
    let why = unsafe { libc::dlerror() };
    let why = if why.is_null() { "unknown error".into() } else { unsafe { CStr::from_ptr(why) }.to_string_lossy() };
    fail(&format!("cannot load {}: {why}", library.to_string_lossy()))
  }
  // SAFETY: `handle` is a live handle from dlopen; the name is NUL-terminated.
  let entry = unsafe { libc::dlsym(handle, c"codecall_worker_main".as_ptr()) };
  if entry.is_null() {
    fail(&format!("{} has no codecall_worker_main", library.to_string_lossy()))
  }
  // SAFETY: the symbol is `extern "C" fn(u32) -> c_int` in the library (entry.rs); it is never
  // unloaded (no dlclose), so the pointer stays valid for the life of the process.
  let run: extern "C" fn(u32) -> libc::c_int = unsafe { std::mem::transmute(entry) };
  let code = run(WORKER_ABI);
  // SAFETY: as above: the process ends here.
  unsafe { libc::_exit(if code == 2 { 2 } else { code }) }
}

#[cfg(not(unix))]
fn main() {
  eprintln!("codecall-worker: process isolation is not supported on this platform");
  std::process::exit(2);
}
