//! What a `CodeCall` holds, and its plain parts: the engine and the sandbox it borrows briefly,
//! the host's callbacks (`refs`), values in and out as JSON, promises, and the tools' calls.

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::rc::Rc;

use napi::bindgen_prelude::{FnArgs, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, Status, ValueType};
use serde_json::Value;

use super::edge::{busy, live, live_mut, release_engine, EngineCell, Fn1};
use crate::common::args;
use crate::common::JsRef;
use crate::engine::codecall::Engine;
use crate::engine::error::EngineError;
use crate::engine::meta::MetaNames;
use crate::engine::registry::ToolDef;
use crate::engine::scripts;
use crate::sandbox::{json_of, Sandbox};

/// What an engine holds outside V8's heap (its index, sandbox and store; about 2.5 MB measured),
/// as told to V8 (`napi_adjust_external_memory`): V8 sees only a small object, and would let
/// hundreds of engines let go of without `dispose()` pile up before it collects one.
pub(super) const EXTERNAL_BYTES: i64 = 2 << 20;

/// The state of one `CodeCall` object (the napi class is `super::CodeCall`, which holds it).
pub(super) struct Inner {
  // Interior mutability, borrowed only briefly and never across a call into the host's JavaScript
  // (`includeTools`, `filter`, `onToolsChanged`), so those callbacks may call this CodeCall back;
  // napi-rs would refuse that re-entry while a `&self` method is running.
  /// `None` once disposed: the index (and its writer's threads), the tools and the store went
  /// with it.
  pub(super) engine: EngineCell,
  pub(super) sandbox: Rc<RefCell<Sandbox>>,
  /// `{ helper, includeTools?, filter?, onToolsChanged?, store?, after?, scriptsApi?, known?,
  /// queue?, otel? }`. Held by the CodeCall object itself (a hidden property): this reference is
  /// weak, so a callback that reaches the engine (an adapter's `onToolsChanged`) is a cycle the GC
  /// collects, not a root. `dispose()` drops every slot but `helper`.
  pub(super) refs: JsRef,
  /// The meta-tools' names and which are on: `handle` dispatches by them after a dispose too.
  pub(super) names: MetaNames,
  pub(super) direct_calls: bool,
  pub(super) scripts_on: bool,
  /// `@opentelemetry/api` is there (`refs.otel`, engine/telemetry.js): each meta-tool call asks
  /// it for a run. False: no telemetry work at all.
  pub(super) otel: bool,
  /// The isolation the sandbox really runs (`codecall.isolation` of execute spans).
  pub(super) isolation: &'static str,
  /// Where `EXTERNAL_BYTES` was reported, until `dispose()` or the drop takes it back.
  pub(super) external: Cell<Option<napi::sys::napi_env>>,
}

impl Drop for Inner {
  /// Collected without `dispose()`: the engine goes as it would have (its sandbox stops with the
  /// last reference to it).
  fn drop(&mut self) {
    if let Ok(mut engine) = self.engine.try_borrow_mut() {
      release_engine(engine.take());
    }
    // Dropped on the environment's thread (CodeCall is not `Send`), by its finalizer.
    if let Some(env) = self.external.take() {
      let _ = Env::from_raw(env).adjust_external_memory(-EXTERNAL_BYTES);
    }
  }
}

impl Inner {
  /// A model file found damaged is known once tools were indexed (which reads it): say so once.
  pub(super) fn warn_without_model(&self, env: &Env) {
    let index = self
      .engine
      .try_borrow()
      .ok()
      .and_then(|e| e.as_ref().map(|e| (e.options().index.semantic, e.options().index.model)));
    if let Some((true, model)) = index {
      crate::search::warn_without_model(env, model);
    }
  }

  pub(super) fn search_inner<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let input = self.json_value(env, input, "input")?;
    // A host's store may be async: this search ranks what the index holds, and the index is
    // brought up to date with the store for the next one (`handle` waits for it instead).
    if self.callback(env, "store")?.is_some() {
      let kit = self.helper(env)?;
      let relisted = self.relisted(env, &kit)?;
      let quiet: Fn1<Unknown, Unknown> = kit.get("quiet")?.ok_or_else(|| napi::Error::from_reason("quiet"))?;
      quiet.call(relisted)?;
    }
    let out = self.engine_mut(env)?.search(&input).map_err(|e| match e {
      EngineError::InvalidArgument(e) => args::invalid_arg(env, e),
      EngineError::Index(e) => napi::Error::from_reason(e.to_string()),
    })?;
    self.to_js(env, &out)
  }

  pub(super) fn describe_inner<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let input = self.json_value(env, input, "input")?;
    let out = self.engine_mut(env)?.describe(&input).map_err(|m| args::invalid_arg(env, m))?;
    self.to_js(env, &out)
  }

  pub(super) fn engine(&self, env: &Env) -> napi::Result<Ref<'_, Engine>> {
    live(env, &self.engine)
  }

  pub(super) fn engine_mut(&self, env: &Env) -> napi::Result<RefMut<'_, Engine>> {
    live_mut(env, &self.engine)
  }

  pub(super) fn sandbox(&self) -> napi::Result<Ref<'_, Sandbox>> {
    self.sandbox.try_borrow().map_err(|_| busy())
  }

  pub(super) fn sandbox_mut(&self) -> napi::Result<RefMut<'_, Sandbox>> {
    self.sandbox.try_borrow_mut().map_err(|_| busy())
  }

  pub(super) fn helper<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    let refs = self.refs.get(env)?;
    refs.get("helper")?.ok_or_else(|| napi::Error::from_reason("engine helper missing"))
  }

  pub(super) fn callback<'env>(&self, env: &'env Env, slot: &str) -> napi::Result<Option<Unknown<'env>>> {
    let refs = self.refs.get(env)?;
    refs.get(slot)
  }

  pub(super) fn to_js<'env>(&self, env: &'env Env, value: &Value) -> napi::Result<Unknown<'env>> {
    let parse: Fn1<String, Unknown> =
      self.helper(env)?.get("parse")?.ok_or_else(|| napi::Error::from_reason("parse"))?;
    parse.call(value.to_string())
  }

  pub(super) fn json_value(&self, env: &Env, value: Unknown, what: &str) -> napi::Result<Value> {
    match json_of(env, value, what)? {
      None => Ok(Value::Null),
      Some(json) => serde_json::from_str(&json).map_err(|e| args::invalid_arg(env, format!("{what}: {e}"))),
    }
  }

  /// A thrown argument error becomes the returned promise's rejection.
  pub(super) fn rejecting<'env>(&self, env: &'env Env, r: napi::Result<Unknown<'env>>) -> napi::Result<Unknown<'env>> {
    let e = match r {
      Ok(v) => return Ok(v),
      Err(e) if e.status == Status::PendingException => e,
      Err(e) => return Err(e),
    };
    let Some(exception) = args::take_exception(env) else { return Err(e) };
    let reject: Fn1<Unknown, Unknown> =
      self.helper(env)?.get("reject")?.ok_or_else(|| napi::Error::from_reason("reject"))?;
    reject.call(exception)
  }

  pub(super) fn resolved<'env>(&self, env: &'env Env, value: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let resolve: Fn1<Unknown, Unknown> =
      self.helper(env)?.get("resolve")?.ok_or_else(|| napi::Error::from_reason("resolve"))?;
    resolve.call(value)
  }

  pub(super) fn read_tools(&self, env: &Env, tools: &Unknown) -> napi::Result<Vec<ToolDef>> {
    if !tools.is_array().unwrap_or(false) {
      return Err(args::invalid_arg(env, "tools must be an array"));
    }
    let list = Object::from_raw(env.raw(), tools.raw());
    let len = list.get_array_length()?;
    let include: Option<Unknown> = self.callback(env, "includeTools")?;
    let include_fn: Option<Fn1<FnArgs<(Unknown, String)>, bool>> = match include {
      Some(_) => self.helper(env)?.get("include")?,
      None => None,
    };
    let reserved = self.engine(env)?.reserved().clone();
    let saved_on = self.engine(env)?.saved().is_some();
    let mut defs = Vec::with_capacity(len as usize);
    for i in 0..len {
      let at = format!("tools[{i}]");
      let item: Unknown = list.get_element(i)?;
      if item.get_type()? != ValueType::Object {
        return Err(args::invalid_arg(env, format!("{at} must be an object")));
      }
      let value = self.json_value(env, item, &at)?;
      let mut def = ToolDef::from_json(value, &at, &reserved).map_err(|m| args::invalid_arg(env, m))?;
      if saved_on && def.name.starts_with(scripts::PREFIX) {
        return Err(args::invalid_arg(
          env,
          format!("{at}.name: names starting 'saved:' are saved scripts' (options.scripts)"),
        ));
      }
      if let (Some(f), Some(include)) = (&include_fn, include) {
        def.included = f.call(FnArgs::from((include, def.summary().to_string())))?;
      }
      defs.push(def);
    }
    Ok(defs)
  }

  pub(super) fn tools_changed(&self, env: &Env, changed: bool) -> napi::Result<()> {
    if !changed {
      return Ok(());
    }
    if let Some(f) = self.callback(env, "onToolsChanged")? {
      let changed: Fn1<Unknown, ()> =
        self.helper(env)?.get("changed")?.ok_or_else(|| napi::Error::from_reason("changed"))?;
      changed.call(f)?;
    }
    Ok(())
  }
}
