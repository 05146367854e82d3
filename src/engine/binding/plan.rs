//! `codecall:execute` (§5): the input read, the host's settings and `toolFunctions`, and the plan
//! launched on the sandbox behind the engine's host (approvals, saved scripts) — or first the
//! saved script it names fetched from the store.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{FnArgs, Object, Unknown};
use napi::{Env, JsValue};
use serde_json::Value;

use super::edge::{busy, live, EngineCell, Fn1};
use super::inner::Inner;
use super::store::{chain, store_error, store_parts};
use crate::common::args::{self, object_arg, present};
use crate::engine::codecall::Engine;
use crate::engine::host::EngineHost;
use crate::engine::scripts::binding::store_call;
use crate::engine::scripts::{Lineage, Ran, SavedRun, SavedScript, StoreOp};
use crate::engine::telemetry;
use crate::engine::ExecuteScript;
use crate::sandbox::{read_host, signal_arg, ExecuteConfig, Host, Sandbox};

impl Inner {
  pub(super) fn execute_inner<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let run = self.begin(env, "execute");
    if let (Some(run), Some(otel)) = (run, self.otel(env)) {
      let known: Option<Unknown> = self.callback(env, "known").ok().flatten();
      telemetry::call(env, &otel, "code", FnArgs::from((run, input, known)));
    }
    self.execute_run(env, input, host, run).map_err(|e| self.failed(env, run, e))
  }

  fn execute_run<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
    run: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let input = self.json_value(env, input, "input")?;
    let kit = self.helper(env)?;
    let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
    let after = self.callback(env, "after")?;
    launch_plan(env, &kit, &self.engine, &self.sandbox, Plan { input, host, run, saved: None, store, after })
  }
}

/// What `launch_plan` runs.
pub(super) struct Plan<'env> {
  /// execute's input (`script` or `scriptName`, `input`, `context`, `allowedTools`, `language`).
  pub(super) input: Value,
  pub(super) host: Option<Unknown<'env>>,
  pub(super) run: Option<Unknown<'env>>,
  /// The saved script `input.scriptName` named, once the store answered.
  pub(super) saved: Option<SavedScript>,
  /// For fetching a saved script: the host's store object, engine.js's `after`.
  pub(super) store: Option<Object<'env>>,
  pub(super) after: Option<Unknown<'env>>,
}

/// `codecall:execute`: reads the input, and runs the plan — or first fetches the saved script it
/// names and then runs that.
pub(super) fn launch_plan<'env>(
  env: &'env Env,
  kit: &Object<'env>,
  engine_rc: &EngineCell,
  sandbox_rc: &Rc<RefCell<Sandbox>>,
  plan: Plan<'env>,
) -> napi::Result<Unknown<'env>> {
  let Plan { input, host, run, saved, store, after } = plan;
  let input_json = input.to_string();
  let mut exec = ExecuteConfig::new(sandbox_rc.try_borrow().map_err(|_| busy())?.config());
  let host_object = read_host(env, host, &mut exec)?;
  // §5: the host's AbortSignal ends the run (and the saved scripts it runs) as
  // `ExecuteOptions.signal` does a sandbox's.
  let signal = match &host_object {
    Some(h) => signal_arg(env, h, "host")?,
    None => None,
  };
  let session = match &host_object {
    Some(h) => match h.get::<Unknown>("sessionId")?.filter(|v| !args::is_nullish(v)) {
      Some(v) => args::string_arg(env, &v, "host.sessionId")?,
      None => String::new(),
    },
    None => String::new(),
  };
  if engine_rc.try_borrow().map_err(|_| busy())?.is_none() {
    // Disposed: the sandbox answers `POOL_DISPOSED`, as it does for a sandbox's own execute.
    return sandbox_rc.try_borrow_mut().map_err(|_| busy())?.launch(
      env,
      String::new(),
      host_object,
      exec,
      None,
      None,
      run,
    );
  }
  // The engine is borrowed only while the input is read: the launch may run the host's code.
  let (script, callable, approval, scripts_on) = {
    let engine = live(env, engine_rc)?;
    let script = engine.read_execute_input(input, &mut exec).map_err(|message| args::invalid_arg(env, message))?;
    let scripts_on = engine.saved().map(|s| (s.store.clone(), s.settings.max_depth));
    (script, engine.callable(), engine.options().approval.clone(), scripts_on)
  };
  let (script, chain_root, label) = match (script, saved) {
    (ExecuteScript::Inline(s), _) => (s, Vec::new(), None),
    (ExecuteScript::Saved(wanted), None) => {
      let (rust_store, host_store) = store_parts(env, engine_rc, &store)?;
      let p = store_call(kit, host_store, &rust_store, StoreOp::fetch(&wanted.name, wanted.version))?;
      let after = after.ok_or_else(|| napi::Error::from_reason("after"))?;
      let extra = env.create_string(&input_json)?.to_unknown();
      return chain(env, kit, p, after, "ran", Some(extra), host_object.map(|h| h.to_unknown()), run);
    }
    (ExecuteScript::Saved(wanted), Some(script)) => {
      // A host's store is not trusted to answer what was asked.
      if script.name != wanted.name || wanted.version.is_some_and(|v| v != script.version) {
        return Err(store_error(env, format!("it answered {} for {}", script.label(), wanted.label())));
      }
      // The input a saved script is run with must match its schema.
      if let Some(schema) = &script.input_schema {
        let given: Value = exec.input_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or(Value::Null);
        if let Some(why) = crate::engine::examples::first_mismatch(&given, schema, "input.input") {
          return Err(args::invalid_arg(env, format!("Invalid input for '{}': {why}", script.label())));
        }
      }
      exec.language = script.language;
      let label =
        serde_json::json!({ "name": script.tool_name(), "version": script.version, "codeSha256": script.code_sha256 });
      (script.script.clone(), vec![(script.name.clone(), script.label())], Some(label))
    }
  };
  let language = exec.language;
  // `toolFunctions`: host functions `(server, tool, input)` that call `<server>:<tool>` (§9).
  let mut tool_functions = Vec::new();
  if let Some(host) = &host_object {
    if let Some(v) = present(host, "toolFunctions")? {
      let o = object_arg(env, &v, "host.toolFunctions")?;
      for name in Object::keys(&o)? {
        let style = match o.get::<Unknown>(&name)? {
          Some(s) => args::string_arg(env, &s, &format!("host.toolFunctions['{name}']"))?,
          None => String::new(),
        };
        let as_result = match style.as_str() {
          "result" => true,
          "throw" => false,
          _ => return Err(args::invalid_arg(env, format!("host.toolFunctions['{name}'] must be 'throw' or 'result'"))),
        };
        if !exec.functions.contains(&name) {
          return Err(args::invalid_arg(env, format!("host.toolFunctions: '{name}' is not one of host.functions")));
        }
        tool_functions.push((name, as_result));
      }
    }
  }
  let submitter = sandbox_rc.try_borrow().map_err(|_| busy())?.submitter();
  let saved_run = match (scripts_on, submitter) {
    (Some((store, max_depth)), Some(submitter)) => Some(SavedRun {
      store,
      submitter,
      exec: exec.clone(),
      max_depth,
      lineage: Lineage::root(exec.max_tool_calls, chain_root),
      callable: callable.clone(),
      approval: approval.clone(),
      tool_functions: tool_functions.clone(),
    }),
    _ => None,
  };
  let wrap = move |inner: Arc<dyn Host>| -> Arc<dyn Host> {
    let host = EngineHost::new(inner, callable.clone(), &approval).with_tool_functions(tool_functions.clone());
    Arc::new(match &saved_run {
      Some(run) => host.with_saved(run.clone()),
      None => host,
    })
  };
  let ran = script.clone();
  let promise = sandbox_rc.try_borrow_mut().map_err(|_| busy())?.launch(
    env,
    script,
    host_object,
    exec,
    signal,
    Some(&wrap),
    run,
  )?;
  let id = sandbox_rc.try_borrow().map_err(|_| busy())?.last_execution_id();
  if let Ok(mut e) = engine_rc.try_borrow_mut() {
    if let Some(saved) = e.as_mut().and_then(Engine::saved_mut) {
      saved.history.record(&session, Ran { execution_id: id, script: ran, language });
    }
  }
  match label {
    Some(label) => {
      let with: Fn1<FnArgs<(Unknown, String)>, Unknown> =
        kit.get("withSaved")?.ok_or_else(|| napi::Error::from_reason("withSaved"))?;
      with.apply(kit, FnArgs::from((promise, label.to_string())))
    }
    None => Ok(promise),
  }
}
