//! `codecall-worker`: the worker process of `isolation: 'process'`. A launcher: it maps the
//! library the host names in `CODECALL_WORKER_LIBRARY` (the host's own `.node`) and runs its
//! `codecall_worker_main` (`sandbox/process/entry.rs`), so the engine ships once per platform
//! package. It never names the crate, so none of it is linked here. Run by hand it needs that
//! variable, then waits for a `Hello` frame on stdin.
//!
//! With the `fat-worker` feature it is the whole worker instead (the crate linked in): musl builds,
//! whose executables are static and cannot map a library.

/// Must equal `WORKER_ABI` of `sandbox/process/entry.rs` (a test holds them together).
#[cfg(all(any(unix, windows), not(feature = "fat-worker")))]
const WORKER_ABI: u32 = 1;

#[cfg(all(any(unix, windows), feature = "fat-worker"))]
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

/// Windows: the same launcher over `LoadLibraryW` / `GetProcAddress`. The host started it suspended
/// in its job with only its pipes inherited; the library lowers it to Low integrity after warm-up.
#[cfg(all(windows, not(feature = "fat-worker")))]
fn main() {
  use std::os::windows::ffi::OsStrExt;
  use windows_sys::Win32::System::Diagnostics::Debug::{SetErrorMode, SEM_FAILCRITICALERRORS, SEM_NOGPFAULTERRORBOX};
  use windows_sys::Win32::System::LibraryLoader::{
    GetModuleHandleW, GetProcAddress, LoadLibraryExW, SetDefaultDllDirectories, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR,
    LOAD_LIBRARY_SEARCH_SYSTEM32,
  };

  fn fail(what: &str) -> ! {
    eprintln!("codecall-worker: {what}");
    std::process::exit(4)
  }

  // No "cannot load" or crash dialog: a desktop client's worker has no one to click it away.
  // SAFETY: sets this process's error mode; no memory is involved.
  unsafe { SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX) };
  let Some(library) = std::env::var_os("CODECALL_WORKER_LIBRARY").filter(|l| !l.is_empty()) else {
    fail("CODECALL_WORKER_LIBRARY is not set (the host sets it to its own .node)")
  };
  let wide: Vec<u16> = library.encode_wide().chain(Some(0)).collect();
  if wide[..wide.len() - 1].contains(&0) {
    fail("CODECALL_WORKER_LIBRARY holds a NUL character")
  }
  // DLLs are looked for only beside the library and in System32 (not in the current directory or
  // PATH). Under Wine, whose System32 may lack a DLL Windows ships, the usual search stays:
  // test-platforms puts a stand-in on PATH.
  let ntdll: Vec<u16> = "ntdll.dll".encode_utf16().chain(Some(0)).collect();
  // SAFETY: NUL-terminated names; ntdll is mapped in every process.
  let wine = unsafe {
    let module = GetModuleHandleW(ntdll.as_ptr());
    !module.is_null() && GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_some()
  };
  let flags = if wine { 0 } else { LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_SYSTEM32 };
  if !wine {
    // SAFETY: sets this process's default DLL search to System32; no memory is involved.
    unsafe { SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_SYSTEM32) };
  }
  // SAFETY: `wide` is a NUL-terminated UTF-16 absolute path that outlives the call (the host names
  // its own `.node` by its full path); no file handle. The library is the host's own addon: its
  // load-time initializers only fill static registries (no Node-API call).
  let module = unsafe { LoadLibraryExW(wide.as_ptr(), std::ptr::null_mut(), flags) };
  if module.is_null() {
    fail(&format!("cannot load {}: {}", library.to_string_lossy(), std::io::Error::last_os_error()))
  }
  // SAFETY: `module` is a live module handle; the name is NUL-terminated.
  let Some(entry) = (unsafe { GetProcAddress(module, c"codecall_worker_main".as_ptr().cast()) }) else {
    fail(&format!("{} has no codecall_worker_main", library.to_string_lossy()))
  };
  // SAFETY: the symbol is `extern "C" fn(u32) -> c_int` in the library (entry.rs); it is never
  // unloaded, so the pointer stays valid for the life of the process.
  let run: extern "C" fn(u32) -> i32 = unsafe { std::mem::transmute(entry) };
  std::process::exit(run(WORKER_ABI))
}

#[cfg(not(any(unix, windows)))]
fn main() {
  eprintln!("codecall-worker: process isolation is not supported on this platform");
  std::process::exit(2);
}
