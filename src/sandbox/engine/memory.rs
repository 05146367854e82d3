//! Each execution's heap budget (`memoryLimitBytes`), enforced by the allocator QuickJS uses.
//!
//! Counting in the allocator, rather than only asking QuickJS for its limit, tells for certain
//! that an execution ran out of memory: QuickJS may report exhaustion by throwing `null` (when it
//! cannot even allocate the error), and a script could throw `null` itself.

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::allocator::{Allocator, RustAllocator};

/// Bytes in use, the limit, and whether an allocation was ever refused.
#[derive(Debug, Default)]
pub struct Budget {
  used: Cell<usize>,
  limit: Cell<usize>,
  refused: Cell<bool>,
}

impl Budget {
  pub fn new(limit: usize) -> Rc<Self> {
    Rc::new(Self { used: Cell::new(0), limit: Cell::new(limit), refused: Cell::new(false) })
  }

  pub fn set_limit(&self, limit: usize) {
    self.limit.set(limit);
  }

  pub fn used(&self) -> usize {
    self.used.get()
  }

  /// Was an allocation refused for lack of budget?
  pub fn exhausted(&self) -> bool {
    self.refused.get()
  }

  fn admit(&self, extra: usize) -> bool {
    let ok = self.used.get().checked_add(extra).is_some_and(|total| total <= self.limit.get());
    if !ok {
      self.refused.set(true);
    }
    ok
  }
}

/// Rounds like the inner allocator does, so that admission matches what is counted.
fn rounded(size: usize) -> Option<usize> {
  size.checked_add(7).map(|s| s & !7)
}

pub struct LimitedAllocator {
  budget: Rc<Budget>,
}

impl LimitedAllocator {
  pub fn new(budget: Rc<Budget>) -> Self {
    Self { budget }
  }
}

// SAFETY: every pointer handed out comes from `RustAllocator`, and every pointer taken back is
// passed to it unchanged; the budget only decides whether to ask it at all.
unsafe impl Allocator for LimitedAllocator {
  fn alloc(&mut self, size: usize) -> *mut u8 {
    let Some(want) = rounded(size) else { return std::ptr::null_mut() };
    if !self.budget.admit(want) {
      return std::ptr::null_mut();
    }
    let ptr = RustAllocator.alloc(size);
    if !ptr.is_null() {
      // SAFETY: `ptr` was just returned by RustAllocator.
      self.budget.used.set(self.budget.used.get() + unsafe { RustAllocator::usable_size(ptr) });
    }
    ptr
  }

  fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
    // The inner allocator panics on overflow; refuse instead.
    let Some(total) = count.checked_mul(size).and_then(rounded) else { return std::ptr::null_mut() };
    if !self.budget.admit(total) {
      return std::ptr::null_mut();
    }
    let ptr = RustAllocator.calloc(count, size);
    if !ptr.is_null() {
      // SAFETY: `ptr` was just returned by RustAllocator.
      self.budget.used.set(self.budget.used.get() + unsafe { RustAllocator::usable_size(ptr) });
    }
    ptr
  }

  unsafe fn dealloc(&mut self, ptr: *mut u8) {
    if ptr.is_null() {
      return;
    }
    // SAFETY: `ptr` is live and came from RustAllocator (contract of this trait).
    let size = unsafe { RustAllocator::usable_size(ptr) };
    self.budget.used.set(self.budget.used.get().saturating_sub(size));
    // SAFETY: as above; freed exactly once.
    unsafe { RustAllocator.dealloc(ptr) }
  }

  unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
    if ptr.is_null() {
      return self.alloc(new_size);
    }
    // SAFETY: `ptr` is live and came from RustAllocator.
    let old = unsafe { RustAllocator::usable_size(ptr) };
    let Some(want) = rounded(new_size) else { return std::ptr::null_mut() };
    if want > old && !self.budget.admit(want - old) {
      return std::ptr::null_mut();
    }
    // SAFETY: `ptr` is live and came from RustAllocator; on failure it stays valid.
    let fresh = unsafe { RustAllocator.realloc(ptr, new_size) };
    if !fresh.is_null() {
      // SAFETY: `fresh` was just returned by RustAllocator.
      let now = unsafe { RustAllocator::usable_size(fresh) };
      self.budget.used.set(self.budget.used.get().saturating_sub(old) + now);
    }
    fresh
  }

  unsafe fn usable_size(ptr: *mut u8) -> usize {
    // SAFETY: forwarded under the same contract.
    unsafe { RustAllocator::usable_size(ptr) }
  }
}
