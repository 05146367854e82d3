//! `class SqliteRunStore` — the default `RunStore` (api.md §12) for JavaScript, and
//! `options.runs` of `CodeCall` read: an SQLite path opens one, an object is the application's own
//! store (checked for its methods). The engine keeps it on the CodeCall object for the package's
//! JavaScript (`Symbol.for('codecall.runs')`), which journals and resumes runs.

use napi::bindgen_prelude::{JavaScriptClassExt, Object, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use super::SqliteRuns;
use crate::common::args::{self, object_arg, present};

/// The keys of `options.runs`.
pub const RUNS_KEYS: &[&str] = &["store"];
/// The methods a `RunStore` must have.
const RUN_STORE_METHODS: [&str; 3] = ["put", "get", "delete"];

/// A `RunStore` over an SQLite file (or `':memory:'`): its own table, `codecall_runs`, so the saved
/// scripts' file may be the same. Several processes may share the file. Methods answer at once.
#[napi]
pub struct SqliteRunStore {
  inner: SqliteRuns,
}

#[napi]
impl SqliteRunStore {
  /// Opens (creating if missing) the store at `path`; throws `ERR_INVALID_ARG` naming the path
  /// when it cannot (a missing folder — folders are not created —, not a database).
  #[napi(constructor)]
  pub fn new(env: Env, path: Unknown) -> napi::Result<Self> {
    let path = args::string_arg(&env, &path, "path")?;
    Ok(Self { inner: SqliteRuns::open(&path, "SqliteRunStore").map_err(|m| args::invalid_arg(&env, m))? })
  }

  /// Stores (or replaces) the journal of run `id` until `expiresAt` (epoch milliseconds).
  #[napi]
  pub fn put(&self, env: Env, id: String, journal: String, expires_at: f64) -> napi::Result<()> {
    if !expires_at.is_finite() {
      return Err(args::invalid_arg(&env, "expiresAt must be a finite number of epoch milliseconds"));
    }
    self.inner.put(&id, &journal, expires_at as i64).map_err(napi::Error::from_reason)
  }

  /// The journal of run `id`, or `undefined` (none, or expired).
  #[napi]
  pub fn get(&self, id: String) -> napi::Result<Option<String>> {
    self.inner.get(&id).map_err(napi::Error::from_reason)
  }

  /// Removes run `id`'s journal: `true` only when this call removed a live one (the claim).
  #[napi]
  pub fn delete(&self, id: String) -> napi::Result<bool> {
    self.inner.delete(&id).map_err(napi::Error::from_reason)
  }

  /// The path it was opened with (`':memory:'` for an in-memory store).
  #[napi(getter)]
  pub fn path(&self) -> String {
    self.inner.path().to_string()
  }

  /// Closes the file; later calls throw.
  #[napi]
  pub fn close(&self) {
    self.inner.close();
  }
}

/// `options.runs` (`{ store: string | RunStore }`): the store to keep on the CodeCall object, and
/// whether it was opened here (from a path).
pub fn read_options<'env>(env: &'env Env, v: &Unknown<'env>) -> napi::Result<(Unknown<'env>, bool)> {
  let o = object_arg(env, v, "options.runs")?;
  args::check_keys(env, &o, "options.runs", RUNS_KEYS)?;
  match present(&o, "store")? {
    None => Err(args::invalid_arg(
      env,
      "options.runs.store is required: a SQLite file path, ':memory:', or a RunStore object ({ put, get, delete })",
    )),
    Some(s) if s.get_type()? == ValueType::String => {
      let path = args::string_arg(env, &s, "options.runs.store")?;
      let inner = SqliteRuns::open(&path, "options.runs.store").map_err(|m| args::invalid_arg(env, m))?;
      let instance = SqliteRunStore { inner }.into_instance(env)?;
      Ok((instance.as_object(env).to_unknown(), true))
    }
    Some(s) if s.get_type()? == ValueType::Object => {
      let store = Object::from_raw(env.raw(), s.raw());
      for method in RUN_STORE_METHODS {
        let f: Option<Unknown> = store.get(method)?;
        if !matches!(f.map(|f| f.get_type()), Some(Ok(ValueType::Function))) {
          return Err(args::invalid_arg(
            env,
            format!("options.runs.store must be a path or a RunStore: it has no {method}() method"),
          ));
        }
      }
      Ok((s, false))
    }
    Some(_) => Err(args::invalid_arg(env, "options.runs.store must be a SQLite file path or a RunStore object")),
  }
}
