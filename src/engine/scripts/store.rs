//! Where saved scripts live: the [`Store`] trait. Every method answers through a callback, exactly
//! once, so one trait covers the SQLite store (which answers before it returns) and a host's
//! JavaScript `ScriptStore` (whose methods may be async and run on Node's thread).

use super::{NewScript, SavedScript};

/// Where one store operation's answer goes: `Err` is the store's own failure, as text.
pub type Answer<T> = Box<dyn FnOnce(Result<T, String>) + Send>;

pub trait Store: Send + Sync + 'static {
  /// The latest version of `name`, if any.
  fn latest(&self, name: &str, done: Answer<Option<SavedScript>>);
  /// Version `version` of `name`, if it exists.
  fn get(&self, name: &str, version: u64, done: Answer<Option<SavedScript>>);
  /// Stores the next version of `script.name` (latest + 1, atomically) and answers it.
  fn put(&self, script: NewScript, done: Answer<SavedScript>);
  /// The latest version of each name.
  fn list(&self, done: Answer<Vec<SavedScript>>);
  /// Removes every version of `name`; answers whether there was one.
  fn remove(&self, name: &str, done: Answer<bool>);
  /// A token that changes whenever the store may have changed (any process), when the store can
  /// tell cheaply; `None`: it cannot, so every search lists it again.
  fn stamp(&self) -> Option<u64> {
    None
  }
  /// Answers before each method returns (the SQLite store): search can refresh from it inline.
  fn synchronous(&self) -> bool {
    false
  }
  /// The engine was disposed: let go of files and connections; later calls fail.
  fn close(&self) {}
}

impl dyn Store {
  /// `latest` or `get`, by an optional version.
  pub fn fetch(&self, name: &str, version: Option<u64>, done: Answer<Option<SavedScript>>) {
    match version {
      Some(v) => self.get(name, v, done),
      None => self.latest(name, done),
    }
  }
}
