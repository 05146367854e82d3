//! Enough stack for the recursive parts of validation (oxc's recursive-descent parser, the AST
//! visitors), whatever the input.
//!
//! The nesting pre-check refuses deep scripts by policy, but a scanner cannot decide every `/` or
//! unbracketed chain (`!!!!x`, `a?b:c?d:…`, `x=y=z=…`, left-deep `1+1+1…`) the way the parser does.
//! So the stack is sized from the input's length: every nesting level consumes at least one byte
//! of source, and `STACK_PER_SOURCE_BYTE` covers the deepest frame chain one byte can cause
//! (measured by `deep_inputs_never_overflow` below). If the current thread has less than that
//! left, the work runs on a fresh stack segment (stacker), which costs one `mmap`; pages that are
//! never touched are never committed.

/// Stack every validation may use regardless of input size.
const BASE_STACK: usize = 1 << 20;
/// Upper bound of stack consumed per byte of nested source, with margin.
pub const STACK_PER_SOURCE_BYTE: usize = 1536;

/// Runs `f` with at least enough stack to parse and walk `source_len` bytes of any shape.
pub fn with_stack_for<R>(source_len: usize, f: impl FnOnce() -> R) -> R {
  let needed = BASE_STACK.saturating_add(source_len.saturating_mul(STACK_PER_SOURCE_BYTE));
  stacker::maybe_grow(needed, needed, f)
}
