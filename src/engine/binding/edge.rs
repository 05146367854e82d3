//! What every part of the binding uses at the JavaScript edge: the engine's cell (busy, disposed),
//! coded errors, JSON values into Node, and a callback's answer of any type.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use napi::bindgen_prelude::{Function, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::{Env, JsValue, Status, ValueType};
use serde_json::Value;

use crate::common::ErrorCode;
use crate::engine::codecall::Engine;

pub(super) type Fn1<'env, A, R> = Function<'env, A, R>;
/// The engine while the CodeCall is not disposed.
pub(super) type EngineCell = Rc<RefCell<Option<Engine>>>;

/// A callback tried to change this CodeCall while it was being changed (e.g. `setTools` from
/// inside `includeTools`).
pub(super) fn busy() -> napi::Error {
  napi::Error::from_reason("CodeCall is busy: a callback cannot change it while it is being changed")
}

/// The engine, unless the CodeCall was disposed (then an `Error` with code `POOL_DISPOSED` is
/// thrown).
pub(super) fn live<'a>(env: &Env, cell: &'a EngineCell) -> napi::Result<Ref<'a, Engine>> {
  let engine = cell.try_borrow().map_err(|_| busy())?;
  Ref::filter_map(engine, Option::as_ref).map_err(|_| disposed(env))
}

pub(super) fn live_mut<'a>(env: &Env, cell: &'a EngineCell) -> napi::Result<RefMut<'a, Engine>> {
  let engine = cell.try_borrow_mut().map_err(|_| busy())?;
  RefMut::filter_map(engine, Option::as_mut).map_err(|_| disposed(env))
}

pub(super) const DISPOSED: &str = "The CodeCall has been disposed";

pub(super) fn disposed(env: &Env) -> napi::Error {
  coded_error(env, ErrorCode::PoolDisposed.as_str(), DISPOSED.to_string())
}

/// Lets go of a disposed engine: its store closes its file now (Windows cannot remove an open
/// one); the rest — the index, whose writer's threads are joined — is dropped off Node's thread.
pub(super) fn release_engine(engine: Option<Engine>) {
  let Some(engine) = engine else { return };
  if let Some(saved) = engine.saved() {
    saved.store.close();
  }
  // A thread that cannot start drops it here instead (the closure is dropped with the error).
  let _ = std::thread::Builder::new().name("codecall-release".into()).spawn(move || drop(engine));
}

/// `JSON.parse(value)` in Node.
pub(super) fn json_to_js<'env>(env: &'env Env, value: &Value) -> napi::Result<Unknown<'env>> {
  let json: Object = env.get_global()?.get_named_property("JSON")?;
  let parse: Function<String, Unknown> = json.get_named_property("parse")?;
  parse.call(value.to_string())
}

/// The JS value of a JSON string answer (`undefined` for none).
pub(super) fn json_text(env: &Env, v: &Unknown) -> napi::Result<Option<String>> {
  match v.get_type()? {
    ValueType::String => {
      // SAFETY: `v` is a live string handle of this call's scope.
      Ok(Some(unsafe { <String as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }?))
    }
    _ => Ok(None),
  }
}

/// Throws an `Error` whose `code` is `code`; the returned error says it is pending.
pub(super) fn coded_error(env: &Env, code: &str, message: String) -> napi::Error {
  let make = || -> napi::Result<()> {
    let mut error = env.create_error(napi::Error::from_reason(message.clone()))?;
    error.set("code", code)?;
    // SAFETY: throws a live error object of this scope; nothing is pending (checked by napi).
    unsafe { napi::sys::napi_throw(env.raw(), error.raw()) };
    Ok(())
  };
  match make() {
    Ok(()) => napi::Error::new(Status::PendingException, message),
    Err(e) => e,
  }
}

/// A value made in a callback's own scope, handed back as its result (the binding's callbacks
/// answer values of several types).
pub(super) struct Raw(pub(super) napi::sys::napi_value);

impl ToNapiValue for Raw {
  unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> napi::Result<napi::sys::napi_value> {
    // SAFETY: the handle was made in the scope of the very callback that returns it, which is still
    // open while napi reads the result.
    Ok(val.0)
  }
}
