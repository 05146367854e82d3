//! `class CodeCall` for JavaScript (`api.md` §5). Thin: argument checks, the host's callbacks, and
//! JSON across the edge; the engine is plain Rust (`codecall.rs`) and runs scripts on the sandbox
//! layer's `Sandbox`.
//!
//! Values cross as JSON: inputs are `JSON.stringify`d (a cycle or BigInt is `ERR_INVALID_ARG`) and
//! results `JSON.parse`d, so nothing the host passes is kept alive or mutated by the engine.
//! Methods returning a promise never throw: bad arguments reject with the `TypeError`.

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::{FnArgs, Function, FunctionCallContext, JsObjectValue, Object, This, ToNapiValue, Unknown};
use napi::{Env, JsValue, Status, ValueType};
use napi_derive::napi;
use serde_json::Value;

use super::approval::{ApprovalPolicy, Decision, APPROVAL_KEYS};
use super::codecall::{Engine, EngineOptions};
use super::error::EngineError;
use super::host::EngineHost;
use super::invoke::{Finished, InvokeInput};
use super::meta::{Meta, MetaNames};
use super::registry::{Mode, ToolDef};
use super::scripts::binding::{read_options as read_scripts, store_call, HostStore, StoreChoice};
use super::scripts::StoreOp;
use super::scripts::{self, Lineage, Ran, SaveInput, SavedRun, SavedScript, Store};
use super::telemetry;
use super::ExecuteScript;
use crate::common::args::{self, array_arg, object_arg, present};
use crate::common::{ErrorCode, JsRef};
use crate::sandbox::ExecuteConfig;
use crate::sandbox::Host;
use crate::sandbox::{
  event_json, host_answer, json_of, read_denied_tools, read_host, signal_arg, Sandbox, SandboxOptions,
};
use crate::search::IndexOptions;

const ENGINE_JS: &str = include_str!("engine.js");

/// The keys of `CodeCallOptions` (§5, §9).
const CODECALL_OPTION_KEYS: &[&str] = &[
  "mode",
  "topK",
  "maxDefinitions",
  "includeTools",
  "onToolsChanged",
  "directCalls",
  "vm",
  "search",
  "metaToolPrefix",
  "metaToolSeparator",
  "approval",
  "scripts",
  "stateKey",
];

/// The fewest bytes of `options.stateKey` (§12).
const MIN_STATE_KEY_BYTES: usize = 16;

/// The code-mode engine: a tool registry, the meta-tools and their dispatch (`api.md` §5).
#[napi]
pub struct CodeCall {
  // Interior mutability, borrowed only briefly and never across a call into the host's JavaScript
  // (`includeTools`, `filter`, `onToolsChanged`), so those callbacks may call this CodeCall back;
  // napi-rs would refuse that re-entry while a `&self` method is running.
  /// `None` once disposed: the index (and its writer's threads), the tools and the store went
  /// with it.
  engine: EngineCell,
  sandbox: Rc<RefCell<Sandbox>>,
  /// `{ helper, includeTools?, filter?, onToolsChanged?, store?, after?, scriptsApi?, known?,
  /// queue?, otel? }`. Held by the CodeCall object itself (a hidden property): this reference is
  /// weak, so a callback that reaches the engine (an adapter's `onToolsChanged`) is a cycle the GC
  /// collects, not a root. `dispose()` drops every slot but `helper`.
  refs: JsRef,
  /// The meta-tools' names and which are on: `handle` dispatches by them after a dispose too.
  names: MetaNames,
  direct_calls: bool,
  scripts_on: bool,
  /// `@opentelemetry/api` is there (`refs.otel`, engine/telemetry.js): each meta-tool call asks
  /// it for a run. False: no telemetry work at all.
  otel: bool,
  /// The isolation the sandbox really runs (`codecall.isolation` of execute spans).
  isolation: &'static str,
  /// Where `EXTERNAL_BYTES` was reported, until `dispose()` or the drop takes it back.
  external: Cell<Option<napi::sys::napi_env>>,
}

/// What an engine holds outside V8's heap (its index, sandbox and store; about 2.5 MB measured),
/// as told to V8 (`napi_adjust_external_memory`): V8 sees only a small object, and would let
/// hundreds of engines let go of without `dispose()` pile up before it collects one.
const EXTERNAL_BYTES: i64 = 2 << 20;

type Fn1<'env, A, R> = Function<'env, A, R>;
/// The engine while the CodeCall is not disposed.
type EngineCell = Rc<RefCell<Option<Engine>>>;
/// The slots of `refs` that `dispose()` drops: the host's callbacks and store, and what reaches
/// them. `scriptsApi` stays (`scripts` keeps answering, with `POOL_DISPOSED`); it holds a host
/// store only as long as the disposed CodeCall object itself is reachable.
const RELEASED_SLOTS: &[&str] =
  &["includeTools", "filter", "onToolsChanged", "store", "after", "known", "queue", "otel"];
/// `invoke(host, name, inputJson, meta, startJson, finish, askJson, run, signal)` of engine.js.
type InvokeFn<'env> = Function<
  'env,
  FnArgs<(
    Object<'env>,
    String,
    String,
    Object<'env>,
    String,
    Unknown<'env>,
    Option<String>,
    Unknown<'env>,
    Option<Object<'env>>,
  )>,
  Unknown<'env>,
>;

#[napi]
impl CodeCall {
  /// Throws `TypeError` (`ERR_INVALID_ARG`) for invalid options.
  #[napi(constructor, ts_args_type = "options?: CodeCallOptions")]
  pub fn new(env: Env, this: This<Object>, options: Option<Unknown>) -> napi::Result<Self> {
    let mut refs = Object::new(&env)?;

    let mut o = EngineOptions::default();
    let mut vm = SandboxOptions::default();
    let (mut prefix, mut separator) = (None, None);
    let mut scripts_choice = None;
    if let Some(options) = options.filter(|v| !args::is_nullish(v)) {
      let options = object_arg(&env, &options, "options")?;
      args::check_keys(&env, &options, "options", CODECALL_OPTION_KEYS)?;
      if let Some(v) = present(&options, "mode")? {
        let mode = args::string_arg(&env, &v, "options.mode")?;
        o.mode = Mode::parse(&mode).ok_or_else(|| {
          args::invalid_arg(
            &env,
            format!("options.mode must be 'codecall_only', 'codecall_opt_in' or 'metadata_driven' (got '{mode}')"),
          )
        })?;
      }
      if let Some(v) = present(&options, "topK")? {
        o.top_k = positive(&env, &v, "options.topK")?;
      }
      if let Some(v) = present(&options, "maxDefinitions")? {
        o.max_definitions = positive(&env, &v, "options.maxDefinitions")?;
      }
      for (key, slot) in [("includeTools", "includeTools"), ("onToolsChanged", "onToolsChanged")] {
        if let Some(v) = present(&options, key)? {
          refs.set(slot, function_arg(&env, v, &format!("options.{key}"))?)?;
        }
      }
      if let Some(v) = present(&options, "directCalls")? {
        let d = object_arg(&env, &v, "options.directCalls")?;
        args::check_keys(&env, &d, "options.directCalls", &["enabled", "allowedTools", "filter"])?;
        if let Some(v) = present(&d, "enabled")? {
          o.direct_calls = bool_arg(&env, &v, "options.directCalls.enabled")?;
        }
        if let Some(v) = present(&d, "allowedTools")? {
          let list: Vec<String> = string_list(&env, &v, "options.directCalls.allowedTools")?;
          o.direct_allowed = Some(list.into_iter().collect::<HashSet<_>>());
        }
        if let Some(v) = present(&d, "filter")? {
          refs.set("filter", function_arg(&env, v, "options.directCalls.filter")?)?;
        }
      }
      if let Some(v) = present(&options, "vm")? {
        vm = args::checked_options(&env, Some(&v), "options.vm")?.unwrap_or_default();
      }
      if let Some(v) = present(&options, "search")? {
        let s = object_arg(&env, &v, "options.search")?;
        args::check_keys(
          &env,
          &s,
          "options.search",
          &["synonyms", "fuzzy", "semantic", "similarityThreshold", "cacheDir"],
        )?;
        let defaults = IndexOptions::default();
        o.index = IndexOptions {
          synonyms: match present(&s, "synonyms")? {
            Some(v) => bool_arg(&env, &v, "options.search.synonyms")?,
            None => defaults.synonyms,
          },
          fuzzy: match present(&s, "fuzzy")? {
            Some(v) => bool_arg(&env, &v, "options.search.fuzzy")?,
            None => defaults.fuzzy,
          },
          semantic: match present(&s, "semantic")? {
            Some(v) => bool_arg(&env, &v, "options.search.semantic")?,
            None => defaults.semantic,
          },
          cache_dir: match present(&s, "cacheDir")? {
            Some(v) => Some(crate::search::cache_dir_arg(&env, &v, "options.search.cacheDir")?),
            None => None,
          },
        };
        if let Some(v) = present(&s, "similarityThreshold")? {
          let t = number(&env, &v, "options.search.similarityThreshold")?;
          if !(0.0..=1.0).contains(&t) {
            return Err(args::invalid_arg(
              &env,
              format!("options.search.similarityThreshold must be a number from 0 to 1 (got {t})"),
            ));
          }
          o.min_score = t;
        }
      }
      if let Some(v) = present(&options, "approval")? {
        let a = object_arg(&env, &v, "options.approval")?;
        args::check_keys(&env, &a, "options.approval", APPROVAL_KEYS)?;
        let json = json_of(&env, v, "options.approval")?.unwrap_or_default();
        let json: Value =
          serde_json::from_str(&json).map_err(|e| args::invalid_arg(&env, format!("options.approval: {e}")))?;
        o.approval = ApprovalPolicy::read(&json, "options.approval").map_err(|m| args::invalid_arg(&env, m))?;
      }
      if let Some(v) = present(&options, "scripts")? {
        let (settings, choice) = read_scripts(&env, &v)?;
        o.scripts = Some(settings);
        scripts_choice = Some(choice);
      }
      if let Some(v) = present(&options, "stateKey")? {
        // §12: seals `requestState` for approvals across requests. The engine does not use it;
        // the JavaScript that does (adapters, `ApprovalRounds`) reads it off the CodeCall object.
        let key = args::string_arg(&env, &v, "options.stateKey")?;
        if key.len() < MIN_STATE_KEY_BYTES {
          return Err(args::invalid_arg(
            &env,
            format!("options.stateKey must be at least {MIN_STATE_KEY_BYTES} bytes (got {})", key.len()),
          ));
        }
        refs.set("stateKey", key)?;
      }
      if let Some(v) = present(&options, "metaToolPrefix")? {
        prefix = Some(args::string_arg(&env, &v, "options.metaToolPrefix")?);
      }
      if let Some(v) = present(&options, "metaToolSeparator")? {
        separator = Some(args::string_arg(&env, &v, "options.metaToolSeparator")?);
      }
    }
    o.names = MetaNames::new(prefix, separator).map_err(|m| args::invalid_arg(&env, m))?;
    let mut config = vm.to_config().map_err(|m| args::invalid_arg(&env, format!("options.vm: {m}")))?;
    config.policy.self_reference = o.names.self_reference();
    o.allow_loops = config.policy.allow_loops;
    o.allow_console = config.policy.allow_console;
    o.timeout_ms = config.timeout_ms;
    let semantic = o.index.semantic;
    let save_policy = config.policy.clone();
    let engine = Engine::new(o).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    if semantic {
      crate::search::warn_without_model(&env);
    }
    let sandbox = Sandbox::from_config(&env, config)?;
    let helper_factory: Function<Unknown, Object> = env.run_script(ENGINE_JS)?;
    let kit: Object = helper_factory.call(sandbox.settle(&env)?)?;
    refs.set("helper", kit)?;
    let engine = engine_with_store(&env, &kit, &mut refs, engine, scripts_choice)?;
    let (names, direct_calls, scripts_on) =
      (engine.options().names.clone(), engine.options().direct_calls, engine.saved().is_some());
    let engine: EngineCell = Rc::new(RefCell::new(Some(engine)));
    let sandbox = Rc::new(RefCell::new(sandbox));
    if scripts_on {
      let after = after_fn(&env, engine.clone(), sandbox.clone())?;
      let op = op_fn(&env, engine.clone(), save_policy)?;
      refs.set("after", after)?;
      let store: Option<Unknown> = refs.get("store")?;
      let api: Function<FnArgs<(Unknown, Option<Unknown>, Unknown)>, Unknown> =
        kit.get("scriptsApi")?.ok_or_else(|| napi::Error::from_reason("scriptsApi"))?;
      refs.set("scriptsApi", api.apply(kit, FnArgs::from((op, store, after)))?)?;
    }
    // §10: looked for once per Node environment; absent, nothing below exists.
    let isolation = sandbox.borrow().isolation();
    let otel = match telemetry::get(&env) {
      Some(t) => {
        let callable = live(&env, &engine)?.callable();
        let known = env.create_function_from_closure::<Unknown, bool, _>(
          "known",
          move |ctx: FunctionCallContext| -> napi::Result<bool> {
            let name: String = ctx.get(0)?;
            Ok(callable.read().unwrap_or_else(|p| p.into_inner()).contains_key(&name))
          },
        )?;
        refs.set("known", known)?;
        let probe = sandbox.borrow().queue_probe();
        if let Some(probe) = probe {
          let read = env.create_function_from_closure::<Unknown, f64, _>(
            "queued",
            move |_ctx: FunctionCallContext| -> napi::Result<f64> { Ok(probe().map_or(-1.0, |n| n as f64)) },
          )?;
          if let Some(q) = telemetry::call(&env, &t, "watchQueue", FnArgs::from((read, isolation))) {
            refs.set("queue", q)?;
          }
        }
        refs.set("otel", t)?;
        true
      }
      None => false,
    };
    // The CodeCall object holds `refs`; Rust only looks it up (see `refs`).
    let keep: Fn1<FnArgs<(Object, Object)>, ()> = kit.get("keep")?.ok_or_else(|| napi::Error::from_reason("keep"))?;
    keep.apply(kit, FnArgs::from((*this, refs)))?;
    let external = env.adjust_external_memory(EXTERNAL_BYTES).ok().map(|_| env.raw());
    Ok(Self {
      engine,
      sandbox,
      refs: JsRef::weak(&env, &refs)?,
      names,
      direct_calls,
      scripts_on,
      otel,
      isolation,
      external: Cell::new(external),
    })
  }

  /// Replaces every tool. Calls `onToolsChanged` if `listTools()` or the index changed. Throws
  /// `TypeError` (`ERR_INVALID_ARG`) if a tool is malformed (then nothing changes).
  #[napi(ts_args_type = "tools: ToolDefinition[]")]
  pub fn set_tools(&self, env: Env, tools: Unknown) -> napi::Result<()> {
    let defs = self.read_tools(&env, &tools)?;
    let changed = self.engine_mut(&env)?.set_tools(defs).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    self.warn_without_model(&env);
    self.tools_changed(&env, changed)
  }

  /// Adds tools or replaces them by name. Calls `onToolsChanged` if `listTools()` or the index
  /// changed. Throws `TypeError` (`ERR_INVALID_ARG`) if a tool is malformed (then nothing changes).
  #[napi(ts_args_type = "tools: ToolDefinition[]")]
  pub fn upsert_tools(&self, env: Env, tools: Unknown) -> napi::Result<()> {
    let defs = self.read_tools(&env, &tools)?;
    let changed = self.engine_mut(&env)?.upsert_tools(defs).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    self.warn_without_model(&env);
    self.tools_changed(&env, changed)
  }

  /// Removes tools by name (unknown names are ignored). Calls `onToolsChanged` if `listTools()` or
  /// the index changed.
  #[napi(ts_args_type = "names: string[]")]
  pub fn remove_tools(&self, env: Env, names: Unknown) -> napi::Result<()> {
    let names = string_list(&env, &names, "names")?;
    let changed = self.engine_mut(&env)?.remove_tools(&names);
    self.tools_changed(&env, changed)
  }

  /// What the server's `list_tools` answers: the meta-tools, then the tools the mode shows.
  #[napi(ts_return_type = "McpTool[]")]
  pub fn list_tools<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    self.to_js(env, &Value::Array(self.engine(env)?.list_tools()))
  }

  /// The meta-tools alone (`invoke` only with `directCalls.enabled`).
  #[napi(ts_return_type = "McpTool[]")]
  pub fn meta_tools<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    self.to_js(env, &Value::Array(self.engine(env)?.meta_tools()))
  }

  /// `codecall:search`. Throws `TypeError` (`ERR_INVALID_ARG`) for malformed input.
  #[napi(ts_args_type = "input: CodeCallSearchInput", ts_return_type = "CodeCallSearchResult")]
  pub fn search<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let run = self.begin(env, "search");
    let r = self.search_inner(env, input);
    self.answered(env, run, r, input)
  }

  /// `codecall:describe`. Throws `TypeError` (`ERR_INVALID_ARG`) for malformed input.
  #[napi(ts_args_type = "input: CodeCallDescribeInput", ts_return_type = "CodeCallDescribeResult")]
  pub fn describe<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let run = self.begin(env, "describe");
    let r = self.describe_inner(env, input);
    self.answered(env, run, r, input)
  }

  /// `codecall:execute`: validates and runs the script; every `callTool` goes to `host.callTool`
  /// (only for tools in the index), MCP `CallToolResult`s unwrapped. Resolves to an
  /// `ExecuteResult`; rejects with `TypeError` (`ERR_INVALID_ARG`) for malformed input.
  #[napi(ts_args_type = "input: CodeCallExecuteInput, host: CodeCallHost", ts_return_type = "Promise<ExecuteResult>")]
  pub fn execute<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let r = self.execute_inner(env, input, host);
    self.rejecting(env, r)
  }

  /// `codecall:invoke`: one tool through the host's pipeline, no VM. Resolves to
  /// `{ status: 'ok', result }` or `{ status: 'error', error }`; rejects with `TypeError`
  /// (`ERR_INVALID_ARG`) for malformed input.
  #[napi(
    ts_args_type = "input: CodeCallInvokeInput, host: CodeCallHost",
    ts_return_type = "Promise<CodeCallInvokeResult>"
  )]
  pub fn invoke<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let r = self.invoke_inner(env, input, host);
    self.rejecting(env, r)
  }

  /// Dispatches a `tools/call` of a meta-tool by its name. Rejects with `TypeError`
  /// (`ERR_INVALID_ARG`) for a name that is not a meta-tool, or malformed arguments.
  #[napi(ts_args_type = "name: string, args: unknown, host: CodeCallHost", ts_return_type = "Promise<unknown>")]
  pub fn handle<'env>(
    &self,
    env: &'env Env,
    name: Unknown<'env>,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let r = self.handle_inner(env, name, input, host);
    self.rejecting(env, r)
  }

  /// Resolves once every indexed tool has its sentence-model vector (`ToolIndex.ready()`, spec §4).
  /// `search` never waits for it: until then it ranks lexically. Never rejects.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn ready<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    let engine = self.engine.try_borrow().map_err(|_| busy())?;
    match engine.as_ref() {
      Some(engine) => crate::search::ready_promise(env, |waiter| engine.when_ready(waiter)),
      // Disposed: nothing is left to wait for.
      None => crate::search::ready_promise(env, |waiter| waiter()),
    }
  }

  /// Saved scripts (§11) when `options.scripts` is set: `list()`, `get(name, version?)`,
  /// `save(input)`, `remove(name)`, each a promise. `undefined` otherwise.
  #[napi(getter, ts_return_type = "CodeCallScripts | undefined")]
  pub fn scripts<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    match self.callback(env, "scriptsApi")? {
      Some(api) => Ok(api),
      None => ().into_unknown(env),
    }
  }

  /// Releases everything at once: running executions end with `POOL_DISPOSED`, the sandbox's
  /// threads and worker processes stop, the index and its threads, the tools and the
  /// saved-scripts store (its file closed) go, and the callbacks given in the options are let go
  /// of (whatever they reference can be collected). Later `execute` calls resolve to
  /// `POOL_DISPOSED`, `invoke` to `{ status: 'error', error: { code: 'POOL_DISPOSED' } }`; other
  /// methods throw (or reject) an `Error` whose `code` is `POOL_DISPOSED`. Calling it again does
  /// nothing.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn dispose<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    if let (Some(otel), Ok(Some(q))) = (self.otel(env), self.callback(env, "queue")) {
      telemetry::call(env, &otel, "unwatchQueue", FnArgs::from((q,)));
    }
    let engine = self.engine.try_borrow_mut().map_err(|_| busy())?.take();
    release_engine(engine);
    if self.external.take().is_some() {
      let _ = env.adjust_external_memory(-EXTERNAL_BYTES);
    }
    // Nothing the host passed stays reachable from this CodeCall.
    let mut refs = self.refs.get(env)?;
    for slot in RELEASED_SLOTS {
      refs.delete_named_property(slot)?;
    }
    self.sandbox_mut()?.dispose(env)
  }
}

impl CodeCall {
  /// A model file found damaged is known once tools were indexed (which reads it): say so once.
  fn warn_without_model(&self, env: &Env) {
    let semantic = self.engine.try_borrow().ok().and_then(|e| e.as_ref().map(|e| e.options().index.semantic));
    if semantic == Some(true) {
      crate::search::warn_without_model(env);
    }
  }

  fn search_inner<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
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

  fn describe_inner<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let input = self.json_value(env, input, "input")?;
    let out = self.engine_mut(env)?.describe(&input).map_err(|m| args::invalid_arg(env, m))?;
    self.to_js(env, &out)
  }

  /// The telemetry object, when `@opentelemetry/api` is there.
  fn otel<'env>(&self, env: &'env Env) -> Option<Object<'env>> {
    if !self.otel {
      return None;
    }
    self.refs.get(env).ok()?.get::<Object>("otel").ok().flatten()
  }

  /// A telemetry run for one meta-tool call, or `None` (no API, or nothing records).
  fn begin<'env>(&self, env: &'env Env, kind: &str) -> Option<Unknown<'env>> {
    let otel = self.otel(env)?;
    let isolation = (kind == "execute").then_some(self.isolation);
    telemetry::run_of(telemetry::call(env, &otel, "begin", FnArgs::from((kind, isolation))))
  }

  /// search / describe: the run ends with the answer's counts, or failed.
  fn answered<'env>(
    &self,
    env: &'env Env,
    run: Option<Unknown<'env>>,
    r: napi::Result<Unknown<'env>>,
    input: Unknown<'env>,
  ) -> napi::Result<Unknown<'env>> {
    let Some(run) = run else { return r };
    match r {
      Ok(out) => {
        let requested = requested_names(env, &input);
        if let Some(otel) = self.otel(env) {
          telemetry::call(env, &otel, "answered", FnArgs::from((run, out, requested)));
        }
        Ok(out)
      }
      Err(e) => Err(self.failed(env, Some(run), e)),
    }
  }

  /// Ends `run` as failed with the error's code (`ERR_INVALID_ARG` for a bad argument), and gives
  /// back the error with its exception still pending.
  fn failed(&self, env: &Env, run: Option<Unknown>, e: napi::Error) -> napi::Error {
    let Some(run) = run else { return e };
    if e.status != Status::PendingException {
      if let Some(otel) = self.otel(env) {
        telemetry::call(env, &otel, "failed", FnArgs::from((run, "INTERNAL_ERROR")));
      }
      return e;
    }
    // Nothing else can be called while the exception is pending: take it, record, throw it again.
    let Some(thrown) = args::take_exception(env) else { return e };
    let code: Option<String> = match thrown.get_type() {
      Ok(ValueType::Object) => match Object::from_raw(env.raw(), thrown.raw()).get::<Unknown>("code") {
        Ok(Some(c)) if matches!(c.get_type(), Ok(ValueType::String)) => {
          // SAFETY: `c` is a live string handle of this scope.
          unsafe { <String as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), c.raw()) }.ok()
        }
        Ok(_) => None,
        Err(_) => {
          // A throwing `code` getter: not this call's error to report.
          args::take_exception(env);
          None
        }
      },
      _ => None,
    };
    if let Some(otel) = self.otel(env) {
      telemetry::call(env, &otel, "failed", FnArgs::from((run, code.unwrap_or_else(|| "_OTHER".into()))));
    }
    // SAFETY: rethrows the same live exception value, in the same scope, with none pending.
    unsafe { napi::sys::napi_throw(env.raw(), thrown.raw()) };
    e
  }

  fn engine(&self, env: &Env) -> napi::Result<Ref<'_, Engine>> {
    live(env, &self.engine)
  }

  fn engine_mut(&self, env: &Env) -> napi::Result<RefMut<'_, Engine>> {
    live_mut(env, &self.engine)
  }

  fn sandbox(&self) -> napi::Result<Ref<'_, Sandbox>> {
    self.sandbox.try_borrow().map_err(|_| busy())
  }

  fn sandbox_mut(&self) -> napi::Result<RefMut<'_, Sandbox>> {
    self.sandbox.try_borrow_mut().map_err(|_| busy())
  }

  fn helper<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    let refs = self.refs.get(env)?;
    refs.get("helper")?.ok_or_else(|| napi::Error::from_reason("engine helper missing"))
  }

  fn callback<'env>(&self, env: &'env Env, slot: &str) -> napi::Result<Option<Unknown<'env>>> {
    let refs = self.refs.get(env)?;
    refs.get(slot)
  }

  fn to_js<'env>(&self, env: &'env Env, value: &Value) -> napi::Result<Unknown<'env>> {
    let parse: Fn1<String, Unknown> =
      self.helper(env)?.get("parse")?.ok_or_else(|| napi::Error::from_reason("parse"))?;
    parse.call(value.to_string())
  }

  fn json_value(&self, env: &Env, value: Unknown, what: &str) -> napi::Result<Value> {
    match json_of(env, value, what)? {
      None => Ok(Value::Null),
      Some(json) => serde_json::from_str(&json).map_err(|e| args::invalid_arg(env, format!("{what}: {e}"))),
    }
  }

  /// A thrown argument error becomes the returned promise's rejection.
  fn rejecting<'env>(&self, env: &'env Env, r: napi::Result<Unknown<'env>>) -> napi::Result<Unknown<'env>> {
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

  fn resolved<'env>(&self, env: &'env Env, value: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let resolve: Fn1<Unknown, Unknown> =
      self.helper(env)?.get("resolve")?.ok_or_else(|| napi::Error::from_reason("resolve"))?;
    resolve.call(value)
  }

  fn read_tools(&self, env: &Env, tools: &Unknown) -> napi::Result<Vec<ToolDef>> {
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

  fn tools_changed(&self, env: &Env, changed: bool) -> napi::Result<()> {
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

  fn execute_inner<'env>(
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

  fn invoke_inner<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let run = self.begin(env, "invoke");
    self.invoke_run(env, input, host, run).map_err(|e| self.failed(env, run, e))
  }

  /// An invoke the engine refused before the host: the run ends with the refusal.
  fn refused<'env>(&self, env: &'env Env, run: Option<Unknown<'env>>, out: &Value) -> napi::Result<Unknown<'env>> {
    let out = self.to_js(env, out)?;
    if let (Some(run), Some(otel)) = (run, self.otel(env)) {
      telemetry::call(env, &otel, "invoked", FnArgs::from((run, out)));
    }
    self.resolved(env, out)
  }

  fn invoke_run<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
    run: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let host = match host.filter(|h| !args::is_nullish(h)) {
      Some(h) if h.get_type()? == ValueType::Object => Object::from_raw(env.raw(), h.raw()),
      _ => return Err(args::invalid_arg(env, "host must be an object with a callTool function")),
    };
    if !matches!(host.get::<Unknown>("callTool")?.map(|f| f.get_type()), Some(Ok(ValueType::Function))) {
      return Err(args::invalid_arg(env, "host.callTool must be a function"));
    }
    let signal = signal_arg(env, &host, "host")?;
    let input = self.json_value(env, input, "input")?;
    if self.engine.try_borrow().map_err(|_| busy())?.is_none() {
      let refused = serde_json::json!({ "status": "error", "error": { "code": ErrorCode::PoolDisposed.as_str(),
        "message": DISPOSED, "toolName": input.get("tool").cloned().unwrap_or(Value::Null),
        "toolInput": input.get("input").cloned().unwrap_or(Value::Null) } });
      return self.refused(env, run, &refused);
    }
    let called = self.engine(env)?.meta_name(Meta::Invoke);
    let input = InvokeInput::read(input, &called).map_err(|e| args::invalid_arg(env, e))?;
    // §11: invoke of `saved:<name>` runs the saved script (no VM-less shortcut for a plan).
    let saved_on = self.engine(env)?.saved().is_some();
    if saved_on && input.tool.starts_with(scripts::PREFIX) {
      let direct = self.engine(env)?.options().direct_calls;
      let allowed = self.engine(env)?.options().direct_allowed.as_ref().is_none_or(|a| a.contains(&input.tool));
      if !direct || !allowed {
        let message = if direct {
          format!("Tool '{}' is not allowed for direct calls", input.tool)
        } else {
          "Direct calls are not enabled (directCalls.enabled)".to_string()
        };
        let refused = serde_json::json!({ "status": "error", "error": { "code": "ACCESS_DENIED", "message": message,
          "toolName": input.tool, "toolInput": input.input } });
        return self.refused(env, run, &refused);
      }
      let name = input.tool[scripts::PREFIX.len()..].to_string();
      let plan_input = serde_json::json!({ "scriptName": name, "input": input.input });
      let kit = self.helper(env)?;
      let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
      let after = self.callback(env, "after")?;
      let promise = launch_plan(
        env,
        &kit,
        &self.engine,
        &self.sandbox,
        Plan { input: plan_input, host: Some(host.to_unknown()), run: None, saved: None, store, after },
      )?;
      let shape: Fn1<FnArgs<(Unknown, String, String)>, Unknown> =
        kit.get("invokeResult")?.ok_or_else(|| napi::Error::from_reason("invokeResult"))?;
      return shape.apply(kit, FnArgs::from((promise, input.tool.clone(), input.input.to_string())));
    }
    let denied = read_denied_tools(env, &host)?;
    let filter = self.callback(env, "filter")?;
    let allow_fn: Option<Fn1<FnArgs<(Unknown, String)>, bool>> = self.helper(env)?.get("allow")?;
    let mut filter_error = None;
    // Its executionId and callId: unguessable, as every execution's (§12).
    let id = crate::common::random_id("invoke");
    // A shared borrow: the filter may read this CodeCall (listTools, describe), not change it.
    let begun = self.engine(env)?.begin_invoke(input, &id, &denied, |def| match (filter, &allow_fn) {
      (Some(filter), Some(allow)) => match allow.call(FnArgs::from((filter, def.summary().to_string()))) {
        Ok(allowed) => allowed,
        Err(e) => {
          filter_error = Some(e);
          false
        }
      },
      _ => true,
    });
    if let Some(e) = filter_error {
      return Err(e);
    }
    let invocation = match begun {
      Ok(invocation) => invocation,
      Err(refused) => return self.refused(env, run, &refused),
    };
    let call = invocation.call().clone();
    // §9: the approval policy, after every other check.
    let ask = {
      let engine = self.engine(env)?;
      let def = engine.tool(&call.name);
      match engine.options().approval.decide(
        &call.name,
        def.and_then(|d| d.approval),
        def.and_then(|d| d.annotations.as_ref()),
      ) {
        Decision::Allow => None,
        Decision::Deny(message) => {
          let refused = serde_json::json!({ "status": "error", "error": {
            "code": "ACCESS_DENIED", "message": message, "toolName": call.name,
            "toolInput": serde_json::from_str::<Value>(&call.args_json).unwrap_or(Value::Null) } });
          drop(engine);
          return self.refused(env, run, &refused);
        }
        Decision::Ask(reason) => {
          let policy = &engine.options().approval;
          let mut request = serde_json::Map::new();
          request.insert("executionId".into(), Value::String(call.execution_id.clone()));
          request.insert("callId".into(), Value::String(call.call_id.clone()));
          request.insert("toolName".into(), Value::String(call.name.clone()));
          request.insert("input".into(), serde_json::from_str(&call.args_json).unwrap_or(Value::Null));
          if let Some(a) = def.and_then(|d| d.annotations.clone()) {
            request.insert("annotations".into(), a);
          }
          request.insert("reason".into(), Value::String(reason.as_str().into()));
          Some(
            serde_json::json!({
              "request": request,
              "timeoutMs": policy.timeout.as_millis() as u64,
              "allowWhenUnavailable": policy.allow_when_unavailable,
            })
            .to_string(),
          )
        }
      }
    };
    let mut meta = Object::new(env)?;
    meta.set("callId", call.call_id.as_str())?;
    meta.set("executionId", call.execution_id.as_str())?;
    let start = event_json(&invocation.start_event());
    let finish = {
      let pending = Cell::new(Some(invocation));
      let limit = self.sandbox()?.answer_limit();
      env.create_function_from_closure::<Unknown, String, _>(
        "finish",
        move |ctx: FunctionCallContext| -> napi::Result<String> {
          let invocation = pending.take().ok_or_else(|| napi::Error::from_reason("invoke finished twice"))?;
          // engine.js passes settle's count of an answer refused unserialized (host.js).
          let counted: Option<f64> = if ctx.length() > 2 { ctx.get(2)? } else { None };
          let Finished { result, end } = invocation.finish(host_answer(ctx.get(0)?, ctx.get(1)?, counted, limit));
          Ok(format!(r#"{{"result":{result},"end":{}}}"#, event_json(&end)))
        },
      )?
    };
    let invoke: InvokeFn = self.helper(env)?.get("invoke")?.ok_or_else(|| napi::Error::from_reason("invoke"))?;
    let run_value: Unknown = match run {
      Some(r) => r,
      None => ().into_unknown(env)?,
    };
    invoke.call(FnArgs::from((
      host,
      call.name,
      call.args_json,
      meta,
      start,
      finish.to_unknown(),
      ask,
      run_value,
      signal,
    )))
  }

  fn handle_inner<'env>(
    &self,
    env: &'env Env,
    name: Unknown<'env>,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let name = args::string_arg(env, &name, "name")?;
    let meta = self.names.parse(&name, self.direct_calls, self.scripts_on);
    match meta {
      // A host's store may be async: the index is brought up to date with it first.
      Some(m @ (Meta::Search | Meta::Describe)) if self.callback(env, "store")?.is_some() => {
        let kit = self.helper(env)?;
        let relisted = self.relisted(env, &kit)?;
        let answer = self.handle_after(env, matches!(m, Meta::Search))?;
        chain(env, &kit, relisted, answer, "", Some(input), None, None)
      }
      Some(Meta::Search) => {
        let out = self.search(env, input)?;
        self.resolved(env, out)
      }
      Some(Meta::Describe) => {
        let out = self.describe(env, input)?;
        self.resolved(env, out)
      }
      Some(Meta::Save) => self.save_inner(env, input, host),
      Some(Meta::Execute) => self.execute_inner(env, input, host),
      Some(Meta::Invoke) => self.invoke_inner(env, input, host),
      None => Err(args::invalid_arg(env, format!("name '{name}' is not one of this CodeCall's meta-tools"))),
    }
  }
}

/// A callback tried to change this CodeCall while it was being changed (e.g. `setTools` from
/// inside `includeTools`).
fn busy() -> napi::Error {
  napi::Error::from_reason("CodeCall is busy: a callback cannot change it while it is being changed")
}

/// The engine, unless the CodeCall was disposed (then an `Error` with code `POOL_DISPOSED` is
/// thrown).
fn live<'a>(env: &Env, cell: &'a EngineCell) -> napi::Result<Ref<'a, Engine>> {
  let engine = cell.try_borrow().map_err(|_| busy())?;
  Ref::filter_map(engine, Option::as_ref).map_err(|_| disposed(env))
}

fn live_mut<'a>(env: &Env, cell: &'a EngineCell) -> napi::Result<RefMut<'a, Engine>> {
  let engine = cell.try_borrow_mut().map_err(|_| busy())?;
  RefMut::filter_map(engine, Option::as_mut).map_err(|_| disposed(env))
}

const DISPOSED: &str = "The CodeCall has been disposed";

fn disposed(env: &Env) -> napi::Error {
  coded_error(env, ErrorCode::PoolDisposed.as_str(), DISPOSED.to_string())
}

/// Lets go of a disposed engine: its store closes its file now (Windows cannot remove an open
/// one); the rest — the index, whose writer's threads are joined — is dropped off Node's thread.
fn release_engine(engine: Option<Engine>) {
  let Some(engine) = engine else { return };
  if let Some(saved) = engine.saved() {
    saved.store.close();
  }
  // A thread that cannot start drops it here instead (the closure is dropped with the error).
  let _ = std::thread::Builder::new().name("codecall-release".into()).spawn(move || drop(engine));
}

/// describe: how many names were asked for (a count, never the names).
fn requested_names(env: &Env, input: &Unknown) -> Option<f64> {
  if input.get_type().ok()? != ValueType::Object {
    return None;
  }
  let o = Object::from_raw(env.raw(), input.raw());
  for key in ["toolNames", "tools"] {
    if let Ok(Some(v)) = o.get::<Unknown>(key) {
      if v.is_array().unwrap_or(false) {
        return Object::from_raw(env.raw(), v.raw()).get_array_length().ok().map(f64::from);
      }
    }
  }
  None
}

fn function_arg<'env>(env: &Env, v: Unknown<'env>, name: &str) -> napi::Result<Unknown<'env>> {
  if v.get_type()? != ValueType::Function {
    return Err(args::invalid_arg(env, format!("{name} must be a function")));
  }
  Ok(v)
}

fn bool_arg(env: &Env, v: &Unknown, name: &str) -> napi::Result<bool> {
  if v.get_type()? != ValueType::Boolean {
    return Err(args::invalid_arg(env, format!("{name} must be a boolean")));
  }
  // SAFETY: `v` is a live boolean handle of this call's scope.
  unsafe { <bool as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }
}

fn number(env: &Env, v: &Unknown, name: &str) -> napi::Result<f64> {
  if v.get_type()? != ValueType::Number {
    return Err(args::invalid_arg(env, format!("{name} must be a number")));
  }
  // SAFETY: `v` is a live number handle of this call's scope.
  unsafe { <f64 as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }
}

fn positive(env: &Env, v: &Unknown, name: &str) -> napi::Result<usize> {
  let n = number(env, v, name)?;
  if !(n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n <= 1_000_000.0) {
    return Err(args::invalid_arg(env, format!("{name} must be a positive integer (got {n})")));
  }
  Ok(n as usize)
}

fn string_list(env: &Env, v: &Unknown, name: &str) -> napi::Result<Vec<String>> {
  let items = array_arg(env, v, name)?;
  items.iter().enumerate().map(|(i, item)| args::string_arg(env, item, &format!("{name}[{i}]"))).collect()
}

/// `JSON.parse(value)` in Node.
fn json_to_js<'env>(env: &'env Env, value: &Value) -> napi::Result<Unknown<'env>> {
  let json: Object = env.get_global()?.get_named_property("JSON")?;
  let parse: Function<String, Unknown> = json.get_named_property("parse")?;
  parse.call(value.to_string())
}

/// The JS value of a JSON string answer (`undefined` for none).
fn json_text(env: &Env, v: &Unknown) -> napi::Result<Option<String>> {
  match v.get_type()? {
    ValueType::String => {
      // SAFETY: `v` is a live string handle of this call's scope.
      Ok(Some(unsafe { <String as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }?))
    }
    _ => Ok(None),
  }
}

/// A store's answer that is not what §11 says: that call fails with `TOOL_EXECUTION_ERROR`.
fn store_error(env: &Env, why: impl std::fmt::Display) -> napi::Error {
  coded_error(env, "TOOL_EXECUTION_ERROR", format!("The saved-scripts store answered something unexpected: {why}"))
}

/// Throws an `Error` whose `code` is `code`; the returned error says it is pending.
fn coded_error(env: &Env, code: &str, message: String) -> napi::Error {
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

/// The engine with saved scripts on, when `options.scripts` chose a store.
fn engine_with_store(
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
type Fail<'env> = Fn1<'env, FnArgs<(&'static str, String, Option<String>)>, Unknown<'env>>;

/// engine.js `chain(promise, next, kind, extra, host, run)`.
type Chain<'env> = Function<
  'env,
  FnArgs<(Unknown<'env>, Unknown<'env>, &'static str, Unknown<'env>, Option<Unknown<'env>>, Option<Unknown<'env>>)>,
  Unknown<'env>,
>;

#[allow(clippy::too_many_arguments)]
fn chain<'env>(
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
fn store_parts<'env>(
  env: &Env,
  engine: &EngineCell,
  store: &Option<Object<'env>>,
) -> napi::Result<(Arc<dyn Store>, Option<Object<'env>>)> {
  let e = live(env, engine)?;
  let saved = e.saved().ok_or_else(|| napi::Error::from_reason("saved scripts are off"))?;
  Ok((saved.store.clone(), *store))
}

/// Where a store operation goes on once the store answered (engine.js `chain`): `(kind, json,
/// extra, host, run)`. Kinds: `listed` (refresh the index), `got`, `stored`, `removed`, `ran` (run
/// the script fetched for `execute({ scriptName })`; `extra` is execute's input).
fn after_fn<'env>(env: &'env Env, engine: EngineCell, sandbox: Rc<RefCell<Sandbox>>) -> napi::Result<Unknown<'env>> {
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
fn op_fn<'env>(env: &'env Env, engine: EngineCell, policy: crate::validator::Policy) -> napi::Result<Unknown<'env>> {
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

/// What `launch_plan` runs.
struct Plan<'env> {
  /// execute's input (`script` or `scriptName`, `input`, `context`, `allowedTools`, `language`).
  input: Value,
  host: Option<Unknown<'env>>,
  run: Option<Unknown<'env>>,
  /// The saved script `input.scriptName` named, once the store answered.
  saved: Option<SavedScript>,
  /// For fetching a saved script: the host's store object, engine.js's `after`.
  store: Option<Object<'env>>,
  after: Option<Unknown<'env>>,
}

/// `codecall:execute`: reads the input, and runs the plan — or first fetches the saved script it
/// names and then runs that.
fn launch_plan<'env>(
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
        if let Some(why) = super::examples::first_mismatch(&given, schema, "input.input") {
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

impl CodeCall {
  /// The index brought up to date with a host's store: a promise of its list, once the index
  /// holds it.
  fn relisted<'env>(&self, env: &'env Env, kit: &Object<'env>) -> napi::Result<Unknown<'env>> {
    let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
    let (rust_store, host_store) = store_parts(env, &self.engine, &store)?;
    let listed = store_call(kit, host_store, &rust_store, StoreOp::List)?;
    let after = self.callback(env, "after")?.ok_or_else(|| napi::Error::from_reason("after"))?;
    chain(env, kit, listed, after, "listed", None, None, None)
  }

  /// search / describe once the index caught up with a host's store: `(kind, _, input)`.
  fn handle_after<'env>(&self, env: &'env Env, search: bool) -> napi::Result<Unknown<'env>> {
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
  fn save_inner<'env>(
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

impl Drop for CodeCall {
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

/// A value made in a callback's own scope, handed back as its result (the callbacks above answer
/// values of several types).
struct Raw(napi::sys::napi_value);

impl ToNapiValue for Raw {
  unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> napi::Result<napi::sys::napi_value> {
    // SAFETY: the handle was made in the scope of the very callback that returns it, which is still
    // open while napi reads the result.
    Ok(val.0)
  }
}
