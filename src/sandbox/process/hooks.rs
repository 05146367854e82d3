//! Test-only globals for proving the worker's fences (`test-hooks` feature, dev builds only):
//! `__test_abort()` aborts the engine's process, `__test_open(path)` makes an `open` system call
//! and returns its result, `__test_spin(ms)` busy-waits in native code without polling the
//! interrupt (a builtin that ignores it: every QuickJS builtin that loops long now polls, so the
//! pool's kill of a worker stuck past its deadline needs this to be tested). A release build with the feature does not compile, so no shipped
//! binary can contain them.

#[cfg(all(feature = "test-hooks", not(debug_assertions)))]
compile_error!("the `test-hooks` feature is for test builds only: it must never be built in release");

use rquickjs::{Ctx, Function};

pub fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
  let globals = ctx.globals();
  globals.set("__test_abort", Function::new(ctx.clone(), || -> () { std::process::abort() })?)?;
  globals.set(
    "__test_open",
    Function::new(ctx.clone(), |path: String| -> i32 {
      let Ok(path) = std::ffi::CString::new(path) else { return -1 };
      // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
      unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) }
    })?,
  )?;
  globals.set(
    "__test_spin",
    Function::new(ctx.clone(), |ms: f64| -> f64 {
      let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(ms.clamp(0.0, 60_000.0) / 1000.0);
      let mut spins = 0.0;
      while std::time::Instant::now() < end {
        spins += 1.0;
        std::hint::spin_loop();
      }
      spins
    })?,
  )?;
  Ok(())
}
