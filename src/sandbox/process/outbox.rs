//! Frames to a worker process, never blocking the sender: a queue per worker, written by one
//! flusher thread at a time. Unix: the pipe is non-blocking and a sender writes what it takes at
//! once. Windows (an anonymous pipe cannot be non-blocking): every frame goes through the queue
//! and only the writer thread ever blocks on the pipe.

use std::collections::VecDeque;
#[cfg(unix)]
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex};

use super::spawn::ToWorkerPipe;
use crate::sandbox::shared::lock;

struct OutState {
  queue: VecDeque<Vec<u8>>,
  flushing: bool,
  closed: bool,
}

pub(super) struct Outbox {
  pipe: ToWorkerPipe,
  st: Mutex<OutState>,
  wake: Condvar,
}

impl Outbox {
  pub(super) fn new(pipe: ToWorkerPipe) -> std::io::Result<Arc<Self>> {
    #[cfg(unix)]
    let fd = pipe.as_raw_fd();
    #[cfg(unix)]
    {
      // SAFETY: `fd` is the open write end of the worker's stdin pipe, owned by `pipe`.
      let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
      // SAFETY: as above; only O_NONBLOCK is added to the flags just read.
      if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
      }
    }
    Ok(Arc::new(Self {
      pipe,
      st: Mutex::new(OutState { queue: VecDeque::new(), flushing: false, closed: false }),
      wake: Condvar::new(),
    }))
  }

  /// Writes what the pipe takes now; the rest goes to the writer thread. Never blocks.
  pub(super) fn send(&self, frame: Vec<u8>) -> bool {
    let mut st = lock(&self.st);
    if st.closed {
      return false;
    }
    if cfg!(unix) && st.queue.is_empty() && !st.flushing {
      match self.write(&frame) {
        Ok(n) if n == frame.len() => return true,
        Ok(n) => st.queue.push_back(frame[n..].to_vec()),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => st.queue.push_back(frame),
        Err(_) => {
          st.closed = true;
          return false;
        }
      }
    } else {
      st.queue.push_back(frame);
    }
    self.wake.notify_one();
    true
  }

  #[cfg(windows)]
  fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
    use std::io::Write;
    (&self.pipe).write(buf)
  }

  #[cfg(unix)]
  fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
    // SAFETY: `buf` is a live slice; the fd is open for as long as `self.pipe` is.
    let n = unsafe { libc::write(self.pipe.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
      Err(std::io::Error::last_os_error())
    } else {
      Ok(n as usize)
    }
  }

  pub(super) fn close(&self) {
    lock(&self.st).closed = true;
    self.wake.notify_all();
  }

  /// The writer thread: flushes what `send` could not write at once.
  pub(super) fn flush_loop(&self) {
    loop {
      let mut chunk = {
        let mut st = lock(&self.st);
        loop {
          if st.closed {
            return;
          }
          if let Some(chunk) = st.queue.pop_front() {
            st.flushing = true;
            break chunk;
          }
          st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
      };
      let mut done = 0;
      while done < chunk.len() {
        match self.write(&chunk[done..]) {
          Ok(n) => done += n,
          Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {
            #[cfg(unix)]
            {
              let mut pfd = libc::pollfd { fd: self.pipe.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
              // SAFETY: one valid pollfd; a timeout so that `close` is noticed.
              unsafe { libc::poll(&mut pfd, 1, 200) };
            }
            if lock(&self.st).closed {
              return;
            }
          }
          Err(_) => {
            lock(&self.st).closed = true;
            return;
          }
        }
      }
      chunk.clear();
      lock(&self.st).flushing = false;
    }
  }
}
