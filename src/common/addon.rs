//! Where this addon's own file is: the worker executable and the search's model file ship next to
//! the `.node` of a platform package.

use std::path::PathBuf;

/// The path of the shared object this code was loaded from (the `.node` file), via `dladdr`. In a
/// test or example executable it is that executable.
#[cfg(unix)]
pub fn addon_path() -> Option<PathBuf> {
  let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
  let here = addon_path as *const () as *const libc::c_void;
  // SAFETY: `here` is an address inside this object; `info` is a writable Dl_info.
  let found = unsafe { libc::dladdr(here, info.as_mut_ptr()) };
  if found == 0 {
    return None;
  }
  // SAFETY: dladdr returned non-zero, so it filled `info`.
  let info = unsafe { info.assume_init() };
  if info.dli_fname.is_null() {
    return None;
  }
  // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader, valid while loaded.
  let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
  use std::os::unix::ffi::OsStrExt;
  let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
  std::fs::canonicalize(&path).ok().or(Some(path))
}

/// The path of the DLL this code was loaded from (the `.node` file), via `GetModuleHandleExW`
/// with an address inside it. In a test or example executable it is that executable.
#[cfg(windows)]
pub fn addon_path() -> Option<PathBuf> {
  use std::os::windows::ffi::OsStringExt;
  type Module = *mut std::ffi::c_void;
  const FROM_ADDRESS: u32 = 0x4;
  const UNCHANGED_REFCOUNT: u32 = 0x2;
  #[link(name = "kernel32")]
  extern "system" {
    fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut Module) -> i32;
    fn GetModuleFileNameW(module: Module, name: *mut u16, size: u32) -> u32;
  }
  let mut module: Module = std::ptr::null_mut();
  let here = addon_path as *const () as *const u16;
  // SAFETY: with FROM_ADDRESS, `name` is read as an address inside a loaded module (this
  // function's code is in the `.node`); UNCHANGED_REFCOUNT leaves no handle to release; `module`
  // is a writable out-pointer.
  if unsafe { GetModuleHandleExW(FROM_ADDRESS | UNCHANGED_REFCOUNT, here, &mut module) } == 0 {
    return None;
  }
  let mut name = vec![0u16; 32_768];
  // SAFETY: `module` is a loaded module's handle; `name` is writable for the length passed.
  let n = unsafe { GetModuleFileNameW(module, name.as_mut_ptr(), name.len() as u32) } as usize;
  if n == 0 || n >= name.len() {
    return None;
  }
  Some(PathBuf::from(std::ffi::OsString::from_wide(&name[..n])))
}

/// Elsewhere the addon does not know its own file (the model is then found through
/// `CODECALL_EMBEDDINGS_PATH`).
#[cfg(not(any(unix, windows)))]
pub fn addon_path() -> Option<PathBuf> {
  None
}
