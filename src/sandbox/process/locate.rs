//! Finding the worker executable (`codecall-worker`) at run time.
//!
//! In order: `CODECALL_WORKER_PATH`; next to the loaded `.node` file (an installed platform
//! package ships it there); under `target/<triple>/<profile>/` beside the `.node` (a source
//! checkout after `npm run build`), for the triple and profile this addon was built with.

use std::path::{Path, PathBuf};

use crate::sandbox::error::StartError;

pub const ENV_WORKER_PATH: &str = "CODECALL_WORKER_PATH";
/// The library the launcher loads: the host's own `.node`, or this variable of the host's
/// environment (a test-hooks build of the library).
pub const ENV_WORKER_LIBRARY: &str = "CODECALL_WORKER_LIBRARY";
/// `codecall-worker` (`.exe` on Windows).
pub const WORKER_NAME: &str = if cfg!(windows) { "codecall-worker.exe" } else { "codecall-worker" };

/// The worker executable to use, or why there is none.
pub fn worker_path() -> Result<PathBuf, StartError> {
  if let Some(path) = std::env::var_os(ENV_WORKER_PATH).filter(|p| !p.is_empty()) {
    let path = PathBuf::from(path);
    return if is_executable(&path) {
      Ok(path)
    } else {
      Err(StartError::NoWorker(format!("{ENV_WORKER_PATH} names {}, which is not an executable file", path.display())))
    };
  }
  let Some(addon) = crate::common::addon_path() else {
    return Err(StartError::NoWorker("the addon could not find its own file".into()));
  };
  let dir = addon.parent().unwrap_or(Path::new("."));
  let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
  let candidates = [
    dir.join(WORKER_NAME),
    dir.join("target").join(env!("CODECALL_TARGET")).join(profile).join(WORKER_NAME),
    dir.join("target").join(profile).join(WORKER_NAME),
  ];
  candidates.iter().find(|p| is_executable(p)).cloned().ok_or_else(|| {
    StartError::NoWorker(format!(
      "no {WORKER_NAME} executable next to {} (looked in {})",
      addon.display(),
      candidates[0].display()
    ))
  })
}

/// The library a worker runs: `CODECALL_WORKER_LIBRARY` of this process, else the addon itself
/// (the exact library the host runs, so host and worker never differ in version).
pub fn worker_library() -> Result<PathBuf, StartError> {
  if let Some(path) = std::env::var_os(ENV_WORKER_LIBRARY).filter(|p| !p.is_empty()) {
    let path = PathBuf::from(path);
    return if path.is_file() {
      Ok(path)
    } else {
      Err(StartError::NoWorker(format!("{ENV_WORKER_LIBRARY} names {}, which is not a file", path.display())))
    };
  }
  crate::common::addon_path().ok_or_else(|| StartError::NoWorker("the addon could not find its own file".into()))
}

#[cfg(windows)]
fn is_executable(path: &Path) -> bool {
  std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
  use std::os::unix::fs::PermissionsExt;
  std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
