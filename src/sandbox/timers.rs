//! A heap of timers ordered by when they fire (ties by insertion), shared by the thread pool's
//! watchdog and the process pool's supervisor.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

struct Entry<T> {
  at: Instant,
  seq: u64,
  item: T,
}

impl<T> PartialEq for Entry<T> {
  fn eq(&self, other: &Self) -> bool {
    (self.at, self.seq) == (other.at, other.seq)
  }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
  fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
    Some(self.cmp(other))
  }
}
impl<T> Ord for Entry<T> {
  fn cmp(&self, other: &Self) -> std::cmp::Ordering {
    (self.at, self.seq).cmp(&(other.at, other.seq))
  }
}

pub struct Timers<T> {
  heap: BinaryHeap<Reverse<Entry<T>>>,
  seq: u64,
}

impl<T> Default for Timers<T> {
  fn default() -> Self {
    Self { heap: BinaryHeap::new(), seq: 0 }
  }
}

impl<T> Timers<T> {
  /// Adds a timer; returns whether it is now the earliest (whoever waits must wake up earlier).
  pub fn add(&mut self, at: Instant, item: T) -> bool {
    self.seq += 1;
    let earliest = self.next().is_none_or(|e| at < e);
    self.heap.push(Reverse(Entry { at, seq: self.seq, item }));
    earliest
  }

  /// When the earliest timer fires.
  pub fn next(&self) -> Option<Instant> {
    self.heap.peek().map(|Reverse(e)| e.at)
  }

  #[cfg_attr(not(unix), allow(dead_code))] // read by the process supervisor only
  pub fn is_empty(&self) -> bool {
    self.heap.is_empty()
  }

  /// The timers due at `now`, earliest first.
  pub fn pop_due(&mut self, now: Instant) -> Vec<T> {
    let mut due = Vec::new();
    while self.next().is_some_and(|at| at <= now) {
      if let Some(Reverse(entry)) = self.heap.pop() {
        due.push(entry.item);
      }
    }
    due
  }

  /// Every timer, in no particular order; the heap is left empty.
  pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
    self.heap.drain().map(|Reverse(e)| e.item)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::time::Duration;

  #[test]
  fn fires_in_time_order_then_insertion_order() {
    let t0 = Instant::now();
    let mut timers = Timers::default();
    assert!(timers.add(t0 + Duration::from_millis(20), "late"));
    assert!(timers.add(t0 + Duration::from_millis(10), "a"));
    assert!(!timers.add(t0 + Duration::from_millis(10), "b"));
    assert_eq!(timers.pop_due(t0 + Duration::from_millis(15)), vec!["a", "b"]);
    assert_eq!(timers.next(), Some(t0 + Duration::from_millis(20)));
    assert_eq!(timers.drain().collect::<Vec<_>>(), vec!["late"]);
    assert!(timers.is_empty());
  }
}
