//! Where saved scripts live: the [`Store`] trait. Every method answers through a callback, exactly
//! once, so one trait covers the SQLite store (which answers before it returns) and a host's
//! JavaScript `ScriptStore` (whose methods may be async and run on Node's thread).

use std::sync::{Arc, Mutex};

use serde_json::Value;

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

/// One store operation as data: what `CodeCall.scripts`, a save and a run by name ask of the store
/// on Node's thread, and how a host's `ScriptStore` method is called with it.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
  Latest(String),
  Get(String, u64),
  Put(NewScript),
  List,
  Remove(String),
}

impl StoreOp {
  /// `latest(name)` or `get(name, version)`.
  pub fn fetch(name: &str, version: Option<u64>) -> Self {
    match version {
      Some(v) => Self::Get(name.to_string(), v),
      None => Self::Latest(name.to_string()),
    }
  }

  /// The `ScriptStore` method's name.
  pub fn method(&self) -> &'static str {
    match self {
      Self::Latest(_) => "latest",
      Self::Get(..) => "get",
      Self::Put(_) => "put",
      Self::List => "list",
      Self::Remove(_) => "remove",
    }
  }

  /// The method's arguments, as a JSON array.
  pub fn args(&self) -> Value {
    match self {
      Self::Latest(name) | Self::Remove(name) => Value::from(vec![Value::from(name.as_str())]),
      Self::Get(name, version) => Value::from(vec![Value::from(name.as_str()), Value::from(*version)]),
      Self::Put(script) => Value::from(vec![script.to_json()]),
      Self::List => Value::Array(Vec::new()),
    }
  }

  /// Runs the operation on `store`; `done` gets the answer as the JSON a host's store would give
  /// (`None`: nothing).
  pub fn run(self, store: &dyn Store, done: Answer<Option<String>>) {
    let script = |s: SavedScript| s.to_json().to_string();
    match self {
      Self::Latest(name) => store.latest(&name, Box::new(move |r| done(r.map(|s| s.map(script))))),
      Self::Get(name, version) => store.get(&name, version, Box::new(move |r| done(r.map(|s| s.map(script))))),
      Self::Put(new) => store.put(new, Box::new(move |r| done(r.map(|s| Some(script(s)))))),
      Self::List => store.list(Box::new(move |r| {
        done(r.map(|list| Some(Value::Array(list.iter().map(SavedScript::to_json).collect()).to_string())))
      })),
      Self::Remove(name) => store.remove(&name, Box::new(move |r| done(r.map(|b| Some(b.to_string()))))),
    }
  }
}

/// The answer of a store that answers before it returns (the SQLite store), or `None` for one that
/// answers later.
pub fn answer_now<T: Send + 'static>(ask: impl FnOnce(Answer<T>)) -> Option<Result<T, String>> {
  let slot: Arc<Mutex<Option<Result<T, String>>>> = Arc::default();
  let put = slot.clone();
  ask(Box::new(move |r| *put.lock().unwrap_or_else(|p| p.into_inner()) = Some(r)));
  let answer = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
  answer
}
