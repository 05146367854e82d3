//! Saved scripts for JavaScript: `options.scripts` read, a host's `ScriptStore` behind the
//! [`Store`] trait, and the store operations Node's thread starts (`CodeCall.scripts`, save,
//! search's refresh, runs by name) as promises.
//!
//! Two ways reach a store. On Node's thread an operation is a promise: a host's store is called
//! directly (engine.js `storeCall`), the SQLite store answers at once. From another thread — a
//! saved script that a plan calls, asked for on a sandbox thread — a host's store is reached
//! through a (weak) threadsafe function; an execution is live then, which keeps Node running.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{FnArgs, Function, FunctionCallContext, Object, Unknown};
use napi::threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsValue, ValueType};
use serde_json::Value;

use super::store::{answer_now, Answer, Store, StoreOp};
use super::{NewScript, SavedScript, ScriptsSettings, SqliteStore};
use crate::common::args::{self, object_arg, present};

/// The keys of `options.scripts`.
pub const SCRIPTS_KEYS: &[&str] = &["store", "historySize", "maxDepth"];
/// The methods a `ScriptStore` must have.
const STORE_METHODS: [&str; 5] = ["latest", "get", "put", "list", "remove"];

/// `options.scripts`, read: its settings, and either the SQLite store it names or the host's
/// store object (wrapped later, once engine.js is there).
pub enum StoreChoice<'env> {
  Sqlite(Arc<SqliteStore>),
  Host(Object<'env>),
}

pub fn read_options<'env>(env: &Env, v: &Unknown<'env>) -> napi::Result<(ScriptsSettings, StoreChoice<'env>)> {
  let o = object_arg(env, v, "options.scripts")?;
  args::check_keys(env, &o, "options.scripts", SCRIPTS_KEYS)?;
  let mut settings = ScriptsSettings::default();
  if let Some(v) = present(&o, "historySize")? {
    settings.history_size = count(env, &v, "options.scripts.historySize", 0, 10_000)?;
  }
  if let Some(v) = present(&o, "maxDepth")? {
    settings.max_depth = count(env, &v, "options.scripts.maxDepth", 1, 64)?;
  }
  let store = match present(&o, "store")? {
    None => {
      return Err(args::invalid_arg(
        env,
        "options.scripts.store is required: a SQLite file path, ':memory:', or a ScriptStore object",
      ))
    }
    Some(s) if s.get_type()? == ValueType::String => {
      let path = args::string_arg(env, &s, "options.scripts.store")?;
      StoreChoice::Sqlite(Arc::new(SqliteStore::open(&path).map_err(|m| args::invalid_arg(env, m))?))
    }
    Some(s) if s.get_type()? == ValueType::Object => {
      let store = Object::from_raw(env.raw(), s.raw());
      for method in STORE_METHODS {
        let f: Option<Unknown> = store.get(method)?;
        if !matches!(f.map(|f| f.get_type()), Some(Ok(ValueType::Function))) {
          return Err(args::invalid_arg(
            env,
            format!(
              "options.scripts.store.{method} must be a function (a ScriptStore has latest, get, put, list, remove)"
            ),
          ));
        }
      }
      StoreChoice::Host(store)
    }
    Some(_) => {
      return Err(args::invalid_arg(
        env,
        "options.scripts.store must be a SQLite file path, ':memory:', or a ScriptStore object",
      ))
    }
  };
  Ok((settings, store))
}

fn count(env: &Env, v: &Unknown, name: &str, min: u32, max: u32) -> napi::Result<usize> {
  if v.get_type()? != ValueType::Number {
    return Err(args::invalid_arg(env, format!("{name} must be a number")));
  }
  // SAFETY: `v` is a live number handle of this call's scope.
  let n = unsafe { <f64 as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }?;
  if !(n.is_finite() && n.fract() == 0.0 && n >= f64::from(min) && n <= f64::from(max)) {
    return Err(args::invalid_arg(env, format!("{name} must be an integer from {min} to {max} (got {n})")));
  }
  Ok(n as usize)
}

/// A store's answer as JSON (`None`: nothing), or its failure.
type JsonAnswer = Result<Option<String>, String>;
type Waiting = Box<dyn FnOnce(JsonAnswer) + Send>;
/// engine.js `storeCaller(store, reply)` → `(method, argsJson, token) => void`.
type CallerFactory<'env> = Function<
  'env,
  FnArgs<(Object<'env>, Function<'env, Unknown<'env>, ()>)>,
  Function<'env, FnArgs<(String, String, f64)>, ()>,
>;

/// A call to the host's store from another thread: `(method, argsJson, token)`.
type Caller = ThreadsafeFunction<(String, String, u64), (), FnArgs<(String, String, f64)>, napi::Status, false, true>;

/// A host's `ScriptStore`, reached from any thread.
pub struct HostStore {
  caller: Caller,
  waiting: Arc<Mutex<HashMap<u64, Waiting>>>,
  next: AtomicU64,
}

impl HostStore {
  /// `caller_factory` is engine.js's `storeCaller(store, reply)`.
  pub fn new(env: &Env, kit: &Object, store: Object) -> napi::Result<Self> {
    let waiting: Arc<Mutex<HashMap<u64, Waiting>>> = Arc::default();
    let reply = {
      let waiting = waiting.clone();
      env.create_function_from_closure("reply", move |ctx: FunctionCallContext| -> napi::Result<()> {
        let token: f64 = ctx.get(0)?;
        let error: Option<String> = ctx.get(1)?;
        let value: Option<String> = ctx.get(2)?;
        let done = waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&(token as u64));
        if let Some(done) = done {
          done(match error {
            Some(e) => Err(e),
            None => Ok(value),
          });
        }
        Ok(())
      })?
    };
    let factory: CallerFactory = kit.get("storeCaller")?.ok_or_else(|| napi::Error::from_reason("storeCaller"))?;
    let call = factory.apply(kit, FnArgs::from((store, reply)))?;
    let caller: Caller = call.build_threadsafe_function::<(String, String, u64)>().weak::<true>().build_callback(
      |ctx: ThreadsafeCallContext<(String, String, u64)>| {
        let (method, args, token) = ctx.value;
        Ok(FnArgs::from((method, args, token as f64)))
      },
    )?;
    Ok(Self { caller, waiting, next: AtomicU64::new(0) })
  }

  fn ask(&self, op: StoreOp, done: Waiting) {
    let token = self.next.fetch_add(1, Ordering::Relaxed) + 1;
    self.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(token, done);
    let call = (op.method().to_string(), op.args().to_string(), token);
    let status = self.caller.call(call, ThreadsafeFunctionCallMode::NonBlocking);
    if status != napi::Status::Ok {
      if let Some(done) = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&token) {
        done(Err("Node's thread cannot be reached".into()));
      }
    }
  }
}

fn script_answer(json: Result<Option<String>, String>) -> Result<Option<SavedScript>, String> {
  match json? {
    None => Ok(None),
    Some(json) => {
      let v: Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
      if v.is_null() {
        return Ok(None);
      }
      SavedScript::from_json(&v).map(Some)
    }
  }
}

impl Store for HostStore {
  fn latest(&self, name: &str, done: Answer<Option<SavedScript>>) {
    self.ask(StoreOp::Latest(name.into()), Box::new(move |r| done(script_answer(r))));
  }

  fn get(&self, name: &str, version: u64, done: Answer<Option<SavedScript>>) {
    self.ask(StoreOp::Get(name.into(), version), Box::new(move |r| done(script_answer(r))));
  }

  fn put(&self, script: NewScript, done: Answer<SavedScript>) {
    self.ask(
      StoreOp::Put(script),
      Box::new(move |r| done(script_answer(r).and_then(|s| s.ok_or_else(|| "put answered nothing".to_string())))),
    );
  }

  fn list(&self, done: Answer<Vec<SavedScript>>) {
    self.ask(
      StoreOp::List,
      Box::new(move |r| {
        done(r.and_then(|json| {
          let v: Value =
            json.map_or(Ok(Value::Array(Vec::new())), |j| serde_json::from_str(&j).map_err(|e| e.to_string()))?;
          let items = v.as_array().ok_or("list must answer an array")?;
          items.iter().map(SavedScript::from_json).collect()
        }))
      }),
    );
  }

  fn remove(&self, name: &str, done: Answer<bool>) {
    self.ask(StoreOp::Remove(name.into()), Box::new(move |r| done(r.map(|json| json.as_deref() == Some("true")))));
  }
}

/// A store operation started on Node's thread, as a promise of its answer's JSON (`undefined` for
/// nothing). `host_store` is the host's store object when there is one; else `store` (SQLite)
/// answers at once.
pub fn store_call<'env>(
  kit: &Object<'env>,
  host_store: Option<Object<'env>>,
  store: &Arc<dyn Store>,
  op: StoreOp,
) -> napi::Result<Unknown<'env>> {
  if let Some(host_store) = host_store {
    let call: Function<FnArgs<(Object, &str, String)>, Unknown> =
      kit.get("storeCall")?.ok_or_else(|| napi::Error::from_reason("storeCall"))?;
    return call.apply(kit, FnArgs::from((host_store, op.method(), op.args().to_string())));
  }
  match answer_now(|done| op.run(&**store, done)) {
    Some(Ok(json)) => {
      let resolve: Function<Option<String>, Unknown> =
        kit.get("resolve")?.ok_or_else(|| napi::Error::from_reason("resolve"))?;
      resolve.call(json)
    }
    failed => {
      let why = match failed {
        Some(Err(why)) => why,
        _ => "the store did not answer".into(),
      };
      let failed: Function<String, Unknown> =
        kit.get("storeFailed")?.ok_or_else(|| napi::Error::from_reason("storeFailed"))?;
      failed.call(why)
    }
  }
}
