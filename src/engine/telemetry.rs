//! OpenTelemetry (`api.md` §10): `@opentelemetry/api` is an optional peer dependency. It is looked
//! for once per Node environment, the first time a `CodeCall` is made, and only from this package's
//! own place (the addon's file, then `@codecall/native`'s package.json) — never from the
//! application's working directory. Without it (or on a Node without `process.getBuiltinModule`,
//! < 20.16) nothing is required, compiled, allocated or measured: `CodeCall` keeps no telemetry
//! object and its paths are the plain ones.
//!
//! With it, `telemetry.js` is compiled once per environment; the engine calls it at the edges of
//! each meta-tool call, and host.js / engine.js at each host callback.

use std::cell::RefCell;

use napi::bindgen_prelude::{FnArgs, Function, Object, ObjectRef, Unknown};
use napi::{Env, Status};

const TELEMETRY_JS: &str = include_str!("telemetry.js");

/// Finds `@opentelemetry/api` from the package that declares it as a peer: from the addon's file
/// to `@codecall/native/package.json` (the addon may sit in a platform package next to it), else
/// from the addon's own folder. Answers the API or `null`; never throws.
const LOADER_JS: &str = r#"(function (addonUrl) {
  'use strict';
  try {
    const { createRequire } = process.getBuiltinModule('node:module');
    const fromAddon = createRequire(addonUrl);
    let from = fromAddon;
    try {
      from = createRequire(fromAddon.resolve('@codecall/native/package.json'));
    } catch (_) {}
    let file;
    try {
      file = from.resolve('@opentelemetry/api');
    } catch (_) {
      return null;
    }
    const api = from(file);
    const ok = api !== null && typeof api === 'object' && typeof api.trace === 'object' && typeof api.context === 'object'
      && typeof api.metrics === 'object' && typeof api.createNoopMeter === 'function' && api.SpanStatusCode !== undefined;
    return ok ? api : null;
  } catch (_) {
    return null;
  }
})"#;

const CAN_LOAD_JS: &str =
  "typeof process === 'object' && process !== null && typeof process.getBuiltinModule === 'function'";

thread_local! {
  /// The environment (its raw pointer) this thread loaded for, and what it found. One Node
  /// environment per thread: the main thread's, or a worker_thread's. A reference is never
  /// deleted (`ObjectRef<false>` does not), so an environment's teardown never touches it.
  static LOADED: RefCell<Option<(usize, Option<ObjectRef<false>>)>> = const { RefCell::new(None) };
}

/// The telemetry object of this environment, or `None` when `@opentelemetry/api` is not there.
/// Looked for once per environment; a failure to look is "not there", never an error.
pub fn get<'env>(env: &'env Env) -> Option<Object<'env>> {
  let key = env.raw() as usize;
  let cached = LOADED.with(|slot| match slot.borrow().as_ref() {
    Some((k, found)) if *k == key => Some(found.as_ref().and_then(|r| r.get_value(env).ok())),
    _ => None,
  });
  if let Some(found) = cached {
    return found;
  }
  let found = match load(env) {
    Ok(found) => found,
    Err(e) => {
      if e.status == Status::PendingException {
        crate::common::args::take_exception(env);
      }
      None
    }
  };
  let stored = found.as_ref().and_then(|o| o.create_ref::<false>().ok());
  LOADED.with(|slot| *slot.borrow_mut() = Some((key, stored)));
  found
}

fn load<'env>(env: &'env Env) -> napi::Result<Option<Object<'env>>> {
  // `node_api_get_module_file_name` is N-API 9: only called on a Node that has it (≥ 20.16 has
  // `process.getBuiltinModule` and N-API 9).
  let can: bool = env.run_script(CAN_LOAD_JS)?;
  if !can {
    return Ok(None);
  }
  let file = env.get_module_file_name()?;
  if file.is_empty() {
    return Ok(None);
  }
  let loader: Function<String, Unknown> = env.run_script(LOADER_JS)?;
  let api = loader.call(file)?;
  if api.get_type()? != napi::ValueType::Object {
    return Ok(None);
  }
  let factory: Function<FnArgs<(Unknown, &str)>, Object> = env.run_script(TELEMETRY_JS)?;
  factory.call(FnArgs::from((api, env!("CARGO_PKG_VERSION")))).map(Some)
}

/// Calls `telemetry[name](...args)`; telemetry never fails the call it watches.
pub fn call<'env, Args: napi::bindgen_prelude::JsValuesTupleIntoVec>(
  env: &'env Env,
  otel: &Object<'env>,
  name: &str,
  args: Args,
) -> Option<Unknown<'env>> {
  let f: Function<Args, Unknown> = match otel.get(name) {
    Ok(Some(f)) => f,
    _ => return None,
  };
  match f.call(args) {
    Ok(v) => Some(v),
    Err(e) => {
      if e.status == Status::PendingException {
        crate::common::args::take_exception(env);
      }
      None
    }
  }
}

/// `Some(run)` when the value is a run (not `undefined`).
pub fn run_of(v: Option<Unknown<'_>>) -> Option<Unknown<'_>> {
  v.filter(|v| matches!(v.get_type(), Ok(napi::ValueType::Object)))
}
