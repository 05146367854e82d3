//! `codecall-worker`: the worker process of `isolation: 'process'` (see `sandbox/process/worker.rs`).
//! The host starts it; run by hand it waits for a `Hello` frame on stdin.

#[cfg(unix)]
fn main() {
  codecall_native::sandbox::worker_main()
}

#[cfg(not(unix))]
fn main() {
  eprintln!("codecall-worker: process isolation is not supported on this platform");
  std::process::exit(2);
}
