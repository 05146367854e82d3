//! Where this addon's own file is: the worker executable and the search's embedding table ship
//! next to the `.node` of a platform package.

#[cfg(unix)]
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
