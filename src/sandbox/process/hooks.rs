//! Test-only globals for proving the worker's fences (`test-hooks` feature, dev builds only):
//! `__test_abort()` aborts the engine's process, `__test_pid()` is its process id, `__test_open(path)` makes an `open` system call
//! and returns its result, `__test_create(path)` opens a file for writing (creating it),
//! `__test_connect(port)` connects a TCP socket to 127.0.0.1:`port`, `__test_spawn(path)` starts
//! a program (`posix_spawn`) — each returns its system call's result, -1 when refused —, `__test_spin(ms)` busy-waits in native code without polling the
//! interrupt (a builtin that ignores it: every QuickJS builtin that loops long now polls, so the
//! pool's kill of a worker stuck past its deadline needs this to be tested). A release build with the feature does not compile, so no shipped
//! binary can contain them.

#[cfg(all(feature = "test-hooks", not(debug_assertions)))]
compile_error!("the `test-hooks` feature is for test builds only: it must never be built in release");

use rquickjs::{Ctx, Function};

pub fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
  let globals = ctx.globals();
  globals.set("__test_abort", Function::new(ctx.clone(), || -> () { std::process::abort() })?)?;
  globals.set("__test_pid", Function::new(ctx.clone(), || -> u32 { std::process::id() })?)?;
  globals.set("__test_open", Function::new(ctx.clone(), |path: String| -> i32 { os::open(&path) })?)?;
  globals.set("__test_create", Function::new(ctx.clone(), |path: String| -> i32 { os::create(&path) })?)?;
  globals.set("__test_connect", Function::new(ctx.clone(), |port: u16| -> i32 { os::connect(port) })?)?;
  globals.set("__test_spawn", Function::new(ctx.clone(), |path: String| -> i32 { os::spawn(&path) })?)?;
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

/// Unix: the system calls themselves (the seccomp filter answers each with SIGSYS, Seatbelt with
/// -1).
#[cfg(unix)]
mod os {
  pub fn open(path: &str) -> i32 {
    let Ok(path) = std::ffi::CString::new(path) else { return -1 };
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) }
  }

  pub fn create(path: &str) -> i32 {
    let Ok(path) = std::ffi::CString::new(path) else { return -1 };
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; the mode is
    // read only with O_CREAT.
    unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o600 as libc::c_uint) }
  }

  pub fn connect(port: u16) -> i32 {
    // SAFETY: plain socket/connect calls on a sockaddr_in that lives across the call.
    unsafe {
      let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
      if fd < 0 {
        return -1;
      }
      let mut addr: libc::sockaddr_in = std::mem::zeroed();
      addr.sin_family = libc::AF_INET as libc::sa_family_t;
      addr.sin_port = port.to_be();
      addr.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) };
      let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
      let done = libc::connect(fd, (&addr as *const libc::sockaddr_in).cast(), len);
      libc::close(fd);
      done
    }
  }

  pub fn spawn(path: &str) -> i32 {
    let Ok(path) = std::ffi::CString::new(path) else { return -1 };
    let argv = [path.as_ptr() as *mut libc::c_char, std::ptr::null_mut()];
    let envp = [std::ptr::null_mut::<libc::c_char>()];
    let mut pid: libc::pid_t = 0;
    // SAFETY: `path`, `argv` and `envp` are NUL-terminated and live across the call; no file
    // actions or attributes.
    let status = unsafe {
      libc::posix_spawn(&mut pid, path.as_ptr(), std::ptr::null(), std::ptr::null(), argv.as_ptr(), envp.as_ptr())
    };
    if status == 0 {
      pid
    } else {
      -1
    }
  }
}

/// Windows: the same four through std (CreateFileW, WSAConnect, CreateProcessW); 0 (a pid for
/// `spawn`) when the system allowed it, -1 when it refused.
#[cfg(windows)]
mod os {
  pub fn open(path: &str) -> i32 {
    if std::fs::File::open(path).is_ok() {
      0
    } else {
      -1
    }
  }

  pub fn create(path: &str) -> i32 {
    if std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path).is_ok() {
      0
    } else {
      -1
    }
  }

  pub fn connect(port: u16) -> i32 {
    if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
      0
    } else {
      -1
    }
  }

  pub fn spawn(path: &str) -> i32 {
    match std::process::Command::new(path).spawn() {
      Ok(mut child) => {
        let pid = child.id() as i32;
        let _ = child.kill();
        pid
      }
      Err(_) => -1,
    }
  }
}
