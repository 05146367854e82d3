//! Saved scripts (§11) on Node's thread: `CodeCall.scripts` (`op`), what follows a store's
//! answer (`after`: the index refreshed, a saved script run), `codecall:save`, and search /
//! describe once the index caught up with a host's store.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{FnArgs, FunctionCallContext, Object, ToNapiValue, Unknown};
use napi::{Env, JsValue, ValueType};
use serde_json::Value;

use super::edge::{json_text, json_to_js, live_mut, EngineCell, Raw};
use super::inner::Inner;
use super::plan::{launch_plan, Plan};
use super::store::{chain, store_error, store_parts, Fail};
use crate::common::args;
use crate::engine::error::EngineError;
use crate::engine::meta::Meta;
use crate::engine::scripts::binding::store_call;
use crate::engine::scripts::{self, SaveInput, SavedScript, Store, StoreOp};
use crate::sandbox::{json_of, Sandbox};

/// Where a store operation goes on once the store answered (engine.js `chain`): `(kind, json,
/// extra, host, run)`. Kinds: `listed` (refresh the index), `got`, `stored`, `removed`, `ran` (run
/// the script fetched for `execute({ scriptName })`; `extra` is execute's input).
pub(super) fn after_fn<'env>(
  env: &'env Env,
  engine: EngineCell,
  sandbox: Rc<RefCell<Sandbox>>,
) -> napi::Result<Unknown<'env>> {
  let f = env.create_function_from_closure::<Unknown, Raw, _>("after", move |ctx: FunctionCallContext| {
    let env: &Env = &*ctx.env;
    let r = (|| -> napi::Result<Unknown> {
      let kind: String = ctx.get(0)?;
      let answer: Unknown = ctx.get(1)?;
      let json = json_text(env, &answer)?;
      let value: Value = match &json {
        Some(j) => serde_json::from_str(j).map_err(|e| store_error(env, e))?,
        None => Value::Null,
      };
      match kind.as_str() {
        "listed" => {
          let items = match &value {
            Value::Array(items) => items.iter().map(SavedScript::from_json).collect::<Result<Vec<_>, _>>(),
            Value::Null => Ok(Vec::new()),
            _ => Err("list must answer an array".to_string()),
          }
          .map_err(|e| store_error(env, e))?;
          live_mut(env, &engine)?
            .refresh_saved(items.clone(), None)
            .map_err(|e| napi::Error::from_reason(e.to_string()))?;
          json_to_js(env, &Value::Array(items.iter().map(SavedScript::to_json).collect()))
        }
        "got" => {
          if value.is_null() {
            return ().into_unknown(env);
          }
          let script = SavedScript::from_json(&value).map_err(|e| store_error(env, e))?;
          json_to_js(env, &script.to_json())
        }
        "stored" => {
          let script = SavedScript::from_json(&value).map_err(|e| store_error(env, e))?;
          let result = scripts::save_result(&script.name, script.version);
          let name = script.name.clone();
          let mut e = live_mut(env, &engine)?;
          e.saved_changed(&name, Some(script)).map_err(|e| napi::Error::from_reason(e.to_string()))?;
          json_to_js(env, &result)
        }
        "removed" => {
          let removed = value == Value::Bool(true);
          let name: Option<String> = ctx.get(2)?;
          if let Some(name) = name {
            let mut e = live_mut(env, &engine)?;
            e.saved_changed(&name, None).map_err(|e| napi::Error::from_reason(e.to_string()))?;
          }
          removed.into_unknown(env)
        }
        "ran" => {
          let input: Unknown = ctx.get(2)?;
          let host: Option<Unknown> = ctx.get(3)?;
          let run: Option<Unknown> = ctx.get(4)?;
          let kit: Object = ctx.get(5)?;
          let input = match json_text(env, &input)? {
            Some(j) => serde_json::from_str(&j).map_err(|e| napi::Error::from_reason(e.to_string()))?,
            None => Value::Null,
          };
          if value.is_null() {
            let name = input.get("scriptName").and_then(Value::as_str).unwrap_or_default();
            return Err(args::invalid_arg(env, format!("input.scriptName: no saved script '{name}'")));
          }
          let script = SavedScript::from_json(&value).map_err(|e| store_error(env, e))?;
          let host = host.filter(|h| !args::is_nullish(h));
          let run = run.filter(|r| !args::is_nullish(r));
          launch_plan(
            env,
            &kit,
            &engine,
            &sandbox,
            Plan { input, host, run, saved: Some(script), store: None, after: None },
          )
        }
        other => Err(napi::Error::from_reason(format!("after: unknown kind {other}"))),
      }
    })();
    r.map(|v| Raw(v.raw()))
  })?;
  Ok(f.to_unknown())
}

/// `CodeCall.scripts`' one entry point (engine.js `scriptsApi`): `(method, argJson, store, kit,
/// after)`.
pub(super) fn op_fn<'env>(
  env: &'env Env,
  engine: EngineCell,
  policy: crate::validator::Policy,
) -> napi::Result<Unknown<'env>> {
  let f = env.create_function_from_closure::<Unknown, Raw, _>("op", move |ctx: FunctionCallContext| {
    let env: &Env = &*ctx.env;
    let r = (|| -> napi::Result<Unknown> {
      let method: String = ctx.get(0)?;
      let arg: Option<String> = ctx.get(1)?;
      let store: Option<Object> =
        ctx.get::<Option<Unknown>>(2)?.filter(|s| !args::is_nullish(s)).map(|s| Object::from_raw(env.raw(), s.raw()));
      let kit: Object = ctx.get(3)?;
      let after: Unknown = ctx.get(4)?;
      let arg: Value = match arg {
        Some(a) => serde_json::from_str(&a).map_err(|e| args::invalid_arg(env, e.to_string()))?,
        None => Value::Null,
      };
      let (rust_store, host_store) = store_parts(env, &engine, &store)?;
      let name_arg = |what: &str| -> napi::Result<String> {
        let name = arg
          .get(0)
          .and_then(Value::as_str)
          .ok_or_else(|| args::invalid_arg(env, format!("{what}: name must be a string")))?;
        let name = name.strip_prefix(scripts::PREFIX).unwrap_or(name);
        scripts::check_name(name).map_err(|m| args::invalid_arg(env, format!("{what}: {m}")))?;
        Ok(name.to_string())
      };
      match method.as_str() {
        "list" => {
          let p = store_call(&kit, host_store, &rust_store, StoreOp::List)?;
          chain(env, &kit, p, after, "listed", None, None, None)
        }
        "get" => {
          let name = name_arg("scripts.get(name, version?)")?;
          let version = match arg.get(1) {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 1.0 && n.fract() == 0.0) {
              Some(n) => Some(n as u64),
              None => {
                return Err(args::invalid_arg(env, "scripts.get(name, version?): version must be a positive integer"))
              }
            },
          };
          let p = store_call(&kit, host_store, &rust_store, StoreOp::fetch(&name, version))?;
          chain(env, &kit, p, after, "got", None, None, None)
        }
        "remove" => {
          let name = name_arg("scripts.remove(name)")?;
          let p = store_call(&kit, host_store, &rust_store, StoreOp::Remove(name.clone()))?;
          let extra = env.create_string(&name)?.to_unknown();
          chain(env, &kit, p, after, "removed", Some(extra), None, None)
        }
        "save" => {
          let input = SaveInput::read(arg, "scripts.save").map_err(|m| args::invalid_arg(env, m))?;
          save_prepared(env, &kit, &engine, &policy, input, "", host_store, &rust_store, after)
        }
        other => Err(args::invalid_arg(env, format!("scripts: no method '{other}'"))),
      }
    })();
    r.map(|v| Raw(v.raw()))
  })?;
  Ok(f.to_unknown())
}

/// A save, after its input was read: checked (history, size, validator), then stored.
#[allow(clippy::too_many_arguments)]
fn save_prepared<'env>(
  env: &'env Env,
  kit: &Object<'env>,
  engine: &EngineCell,
  policy: &crate::validator::Policy,
  input: SaveInput,
  session: &str,
  host_store: Option<Object<'env>>,
  store: &Arc<dyn Store>,
  after: Unknown<'env>,
) -> napi::Result<Unknown<'env>> {
  let prepared = {
    let mut e = live_mut(env, engine)?;
    let saved = e.saved_mut().ok_or_else(|| napi::Error::from_reason("saved scripts are off"))?;
    input.prepare(&mut saved.history, session, policy)
  };
  let script = match prepared {
    Ok(s) => s,
    Err(scripts::SaveRefusal::Invalid(m)) => return Err(args::invalid_arg(env, m)),
    Err(scripts::SaveRefusal::Rejected { code, message, location }) => {
      let fail: Fail = kit.get("fail")?.ok_or_else(|| napi::Error::from_reason("fail"))?;
      let location = location.map(|l| serde_json::json!({ "line": l.line, "column": l.column }).to_string());
      return fail.apply(kit, FnArgs::from((code.as_str(), message, location)));
    }
  };
  let p = store_call(kit, host_store, store, StoreOp::Put(script))?;
  chain(env, kit, p, after, "stored", None, None, None)
}

impl Inner {
  /// The index brought up to date with a host's store: a promise of its list, once the index
  /// holds it.
  pub(super) fn relisted<'env>(&self, env: &'env Env, kit: &Object<'env>) -> napi::Result<Unknown<'env>> {
    let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
    let (rust_store, host_store) = store_parts(env, &self.engine, &store)?;
    let listed = store_call(kit, host_store, &rust_store, StoreOp::List)?;
    let after = self.callback(env, "after")?.ok_or_else(|| napi::Error::from_reason("after"))?;
    chain(env, kit, listed, after, "listed", None, None, None)
  }

  /// search / describe once the index caught up with a host's store: `(kind, _, input)`.
  pub(super) fn handle_after<'env>(&self, env: &'env Env, search: bool) -> napi::Result<Unknown<'env>> {
    let engine = self.engine.clone();
    let f = env.create_function_from_closure::<Unknown, Raw, _>("answer", move |ctx: FunctionCallContext| {
      let env: &Env = &*ctx.env;
      let r = (|| -> napi::Result<Unknown> {
        let input: Unknown = ctx.get(2)?;
        let input = match json_of(env, input, "input")? {
          Some(j) => serde_json::from_str::<Value>(&j).map_err(|e| args::invalid_arg(env, e.to_string()))?,
          None => Value::Null,
        };
        let mut e = live_mut(env, &engine)?;
        let out = if search {
          e.search(&input).map_err(|e| match e {
            EngineError::InvalidArgument(e) => args::invalid_arg(env, e),
            EngineError::Index(e) => napi::Error::from_reason(e.to_string()),
          })?
        } else {
          e.describe(&input).map_err(|m| args::invalid_arg(env, m))?
        };
        drop(e);
        json_to_js(env, &out)
      })();
      r.map(|v| Raw(v.raw()))
    })?;
    Ok(f.to_unknown())
  }

  /// `codecall:save` from a client: the host's `sessionId` picks whose executions `executionId`
  /// names.
  pub(super) fn save_inner<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let session = match host.filter(|h| !args::is_nullish(h)) {
      Some(h) if h.get_type()? == ValueType::Object => {
        match Object::from_raw(env.raw(), h.raw()).get::<Unknown>("sessionId")?.filter(|v| !args::is_nullish(v)) {
          Some(v) => args::string_arg(env, &v, "host.sessionId")?,
          None => String::new(),
        }
      }
      _ => String::new(),
    };
    let input = self.json_value(env, input, "input")?;
    let called = self.engine(env)?.meta_name(Meta::Save);
    let input = SaveInput::read(input, &called).map_err(|m| args::invalid_arg(env, m))?;
    let kit = self.helper(env)?;
    let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
    let (rust_store, host_store) = store_parts(env, &self.engine, &store)?;
    let after = self.callback(env, "after")?.ok_or_else(|| napi::Error::from_reason("after"))?;
    let policy = self.sandbox()?.config().policy.clone();
    save_prepared(env, &kit, &self.engine, &policy, input, &session, host_store, &rust_store, after)
  }
}
