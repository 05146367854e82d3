//! The worker's entry in the addon library. The `codecall-worker` executable is a small launcher
//! that maps the package's own `.node` (napi's `dyn-symbols`: nothing of Node is needed to load
//! it) and calls this, so a platform package carries the engine once (issue 35). Everything the
//! worker does — its fences, seccomp after warm-up — starts here, in the same order as before.

use std::os::raw::c_int;

/// What the launcher and the library must agree on; a launcher of another version gets 2 back
/// before anything runs (the `Hello` frame's protocol check comes after).
pub const WORKER_ABI: u32 = 1;

/// Runs the worker; returns only for a launcher of another ABI.
#[no_mangle]
pub extern "C" fn codecall_worker_main(abi: u32) -> c_int {
  if abi != WORKER_ABI {
    return 2;
  }
  super::worker::main()
}

#[cfg(test)]
mod tests {
  #[test]
  fn the_launcher_speaks_this_abi() {
    let launcher = include_str!("../../bin/codecall-worker.rs");
    assert!(launcher.contains(&format!("const WORKER_ABI: u32 = {};", super::WORKER_ABI)));
  }
}
