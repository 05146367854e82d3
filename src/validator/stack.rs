//! Enough stack for the recursive parts of validation (oxc's recursive-descent parser, the AST
//! walk), whatever the input.
//!
//! The nesting pre-check refuses deep scripts by policy, but a scanner cannot decide every `/` or
//! unbracketed chain (`!!!!x`, `a?b:c?d:…`, `x=y=z=…`, `if(a)if(b)…`) the way the parser does. So
//! the stack is sized from the input's length: every level of nesting consumes at least one byte of
//! source, and `STACK_PER_SOURCE_BYTE` bounds the stack one byte can cost. The worst measured in a
//! release build is 960 B/byte (`((((…`; `cargo run --release --example stack_usage` prints them
//! all); the bound adds 60 % for other compilers and targets.
//!
//! Where the current stack has less left than that, the work moves to another one: on Unix a
//! 64 MiB stack mapped once per thread and reused (a guard page below it, pages committed only as
//! touched), otherwise — and for inputs that need more — a fresh one from stacker.

/// Stack every validation may use regardless of input size.
const BASE_STACK: usize = 1 << 20;
/// Upper bound of stack consumed per byte of nested source, with margin.
pub const STACK_PER_SOURCE_BYTE: usize = 1536;

/// Runs `f` with at least enough stack to parse and walk `source_len` bytes of any shape.
pub fn with_stack_for<R>(source_len: usize, f: impl FnOnce() -> R) -> R {
  let needed = BASE_STACK.saturating_add(source_len.saturating_mul(STACK_PER_SOURCE_BYTE));
  if stacker::remaining_stack().is_some_and(|left| left >= needed) {
    return f();
  }
  #[cfg(unix)]
  let f = match cached::run(needed, f) {
    Ok(result) => return result,
    Err(f) => f,
  };
  stacker::grow(needed, f)
}

#[cfg(unix)]
mod cached {
  use std::cell::Cell;
  use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

  const SIZE: usize = 64 << 20;
  const GUARD: usize = 64 << 10;

  /// A mapping of `GUARD + SIZE` bytes; the lowest `GUARD` bytes are inaccessible.
  struct Stack {
    mapping: *mut libc::c_void,
  }

  impl Stack {
    fn map() -> Option<Self> {
      // SAFETY: an anonymous private mapping with no address hint; the result is checked before use.
      let mapping = unsafe {
        libc::mmap(
          std::ptr::null_mut(),
          GUARD + SIZE,
          libc::PROT_READ | libc::PROT_WRITE,
          libc::MAP_PRIVATE | libc::MAP_ANON | MAP_NORESERVE,
          -1,
          0,
        )
      };
      if mapping == libc::MAP_FAILED {
        return None;
      }
      let stack = Self { mapping };
      // SAFETY: the first GUARD bytes lie inside the mapping just created.
      if unsafe { libc::mprotect(mapping, GUARD, libc::PROT_NONE) } != 0 {
        return None; // `stack` unmaps on drop
      }
      Some(stack)
    }

    fn base(&self) -> *mut u8 {
      // SAFETY: GUARD < GUARD + SIZE, so the offset stays inside the mapping.
      unsafe { self.mapping.cast::<u8>().add(GUARD) }
    }
  }

  impl Drop for Stack {
    fn drop(&mut self) {
      // SAFETY: `mapping` came from mmap with this length and is unmapped exactly once.
      unsafe { libc::munmap(self.mapping, GUARD + SIZE) };
    }
  }

  #[cfg(any(target_os = "linux", target_os = "android"))]
  const MAP_NORESERVE: libc::c_int = libc::MAP_NORESERVE;
  #[cfg(not(any(target_os = "linux", target_os = "android")))]
  const MAP_NORESERVE: libc::c_int = 0;

  thread_local! {
    /// This thread's reusable stack; `None` while it is in use (or before first use).
    static STACK: Cell<Option<Stack>> = const { Cell::new(None) };
  }

  /// Runs `f` on this thread's cached stack, or hands `f` back when that cannot be done (input too
  /// large for it, already in use, or the mapping failed).
  pub fn run<R, F: FnOnce() -> R>(needed: usize, f: F) -> Result<R, F> {
    if needed > SIZE {
      return Err(f);
    }
    let Some(stack) = STACK.with(Cell::take).or_else(Stack::map) else {
      return Err(f);
    };
    let mut outcome = None;
    // SAFETY: `base` is page-aligned, `SIZE` is a multiple of the page size, and the region is
    // mapped read-write with a guard below it. The callback cannot unwind: panics are caught
    // inside and resumed once back on the thread's own stack.
    unsafe {
      psm::on_stack(stack.base(), SIZE, || {
        outcome = Some(catch_unwind(AssertUnwindSafe(f)));
      });
    }
    STACK.with(|slot| slot.set(Some(stack)));
    match outcome {
      Some(Ok(result)) => Ok(result),
      Some(Err(panic)) => resume_unwind(panic),
      // The closure always runs; this arm only satisfies the type.
      None => resume_unwind(Box::new("validator stack callback did not run")),
    }
  }
}
