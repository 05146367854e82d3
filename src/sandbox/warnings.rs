//! A sandbox's warnings (fallbacks, a missing seccomp filter, …): kept for `warnings`, and each
//! sent once as a `log` event.

use std::sync::Mutex;

use super::bridge::Event;
use super::shared::Shared;

/// Warnings of a sandbox: every one is kept (the `warnings` field), and each is also sent once,
/// as a `log` event, to the next execution that has a host to receive it.
#[derive(Default)]
pub struct Warnings {
  pub all: Vec<String>,
  pub unsent: Vec<String>,
}

impl Warnings {
  pub fn push(&mut self, message: String) {
    if !self.all.contains(&message) {
      self.all.push(message.clone());
      self.unsent.push(message);
    }
  }

  /// Sends the unsent warnings to one execution's host (one with an event listener: the warnings
  /// wait for the next execution that has one).
  pub fn deliver(warnings: &Mutex<Warnings>, shared: &Shared) {
    let unsent = std::mem::take(&mut warnings.lock().unwrap_or_else(|p| p.into_inner()).unsent);
    for message in unsent {
      shared.host.event(Event::Log {
        execution_id: shared.id.clone(),
        level: "warning".into(),
        message,
        metadata_json: Some("{\"source\":\"codecall\"}".into()),
      });
    }
  }
}
