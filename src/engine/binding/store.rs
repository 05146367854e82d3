//! Saved scripts' store calls as promises on Node's thread (§11): the engine's store or a host's
//! store object, and engine.js's `chain`, which goes on once the store answered.

use std::sync::Arc;

use napi::bindgen_prelude::{FnArgs, Function, Object, ToNapiValue, Unknown};
use napi::Env;

use super::edge::{coded_error, live, EngineCell, Fn1};
use crate::engine::codecall::Engine;
use crate::engine::scripts::binding::{HostStore, StoreChoice};
use crate::engine::scripts::Store;

/// A store's answer that is not what §11 says: that call fails with `TOOL_EXECUTION_ERROR`.
pub(super) fn store_error(env: &Env, why: impl std::fmt::Display) -> napi::Error {
  coded_error(env, "TOOL_EXECUTION_ERROR", format!("The saved-scripts store answered something unexpected: {why}"))
}

/// The engine with saved scripts on, when `options.scripts` chose a store.
pub(super) fn engine_with_store(
  env: &Env,
  kit: &Object,
  refs: &mut Object,
  engine: Engine,
  choice: Option<StoreChoice>,
) -> napi::Result<Engine> {
  Ok(match choice {
    None => engine,
    Some(StoreChoice::Sqlite(store)) => {
      let store: Arc<dyn Store> = store;
      let mut engine = engine.with_store(store);
      engine.refresh_saved_now();
      engine
    }
    Some(StoreChoice::Host(object)) => {
      let store: Arc<dyn Store> = Arc::new(HostStore::new(env, kit, object)?);
      refs.set("store", object)?;
      engine.with_store(store)
    }
  })
}

/// engine.js `fail(code, message, locationJson)`.
pub(super) type Fail<'env> = Fn1<'env, FnArgs<(&'static str, String, Option<String>)>, Unknown<'env>>;

/// engine.js `chain(promise, next, kind, extra, host, run)`.
pub(super) type Chain<'env> = Function<
  'env,
  FnArgs<(Unknown<'env>, Unknown<'env>, &'static str, Unknown<'env>, Option<Unknown<'env>>, Option<Unknown<'env>>)>,
  Unknown<'env>,
>;

#[allow(clippy::too_many_arguments)]
pub(super) fn chain<'env>(
  env: &'env Env,
  kit: &Object<'env>,
  promise: Unknown<'env>,
  after: Unknown<'env>,
  kind: &'static str,
  extra: Option<Unknown<'env>>,
  host: Option<Unknown<'env>>,
  run: Option<Unknown<'env>>,
) -> napi::Result<Unknown<'env>> {
  let f: Chain = kit.get("chain")?.ok_or_else(|| napi::Error::from_reason("chain"))?;
  let extra = match extra {
    Some(e) => e,
    None => ().into_unknown(env)?,
  };
  f.apply(kit, FnArgs::from((promise, after, kind, extra, host, run)))
}

/// The engine's store and a host store object, if there is one.
pub(super) fn store_parts<'env>(
  env: &Env,
  engine: &EngineCell,
  store: &Option<Object<'env>>,
) -> napi::Result<(Arc<dyn Store>, Option<Object<'env>>)> {
  let e = live(env, engine)?;
  let saved = e.saved().ok_or_else(|| napi::Error::from_reason("saved scripts are off"))?;
  Ok((saved.store.clone(), *store))
}
