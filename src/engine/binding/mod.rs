//! `class CodeCall` for JavaScript (`api.md` §5). Thin: argument checks, the host's callbacks, and
//! JSON across the edge; the engine is plain Rust (`codecall.rs`) and runs scripts on the sandbox
//! layer's `Sandbox`.
//!
//! Values cross as JSON: inputs are `JSON.stringify`d (a cycle or BigInt is `ERR_INVALID_ARG`) and
//! results `JSON.parse`d, so nothing the host passes is kept alive or mutated by the engine.
//! Methods returning a promise never throw: bad arguments reject with the `TypeError`.
//!
//! | file      | owns                                                                            |
//! |-----------|---------------------------------------------------------------------------------|
//! | this one  | the class and its methods as JavaScript sees them; `handle`'s dispatch          |
//! | `options` | `CodeCallOptions` read into the engine's, the sandbox's and the store's         |
//! | `invoke`  | `codecall:invoke`: checks and approval, the host's `callTool` through engine.js |
//! | `saved`   | saved scripts (§11): `CodeCall.scripts`, `codecall:save`, the store's answers   |
//! | `plan`    | `codecall:execute`: a plan, or a saved script by name, launched on the sandbox  |
//! | `store`   | store calls as promises (engine.js `chain`), the engine's store or a host's     |
//! | `runs`    | telemetry runs of meta-tool calls (§10)                                         |
//! | `inner`   | what a CodeCall holds; tools in, values in and out, promises, search, describe  |
//! | `edge`    | the engine's cell (busy, disposed), coded errors, JSON into Node                |
//!
//! A file uses only files further down the table, never this one: the methods on `Inner` that
//! `invoke`, `plan`, `runs` and `saved` add are called from here, and from each other, without an
//! import.

mod edge;
mod inner;
mod invoke;
mod options;
mod plan;
mod runs;
mod saved;
mod store;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use napi::bindgen_prelude::{FnArgs, Function, FunctionCallContext, JsObjectValue, Object, This, ToNapiValue, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;

use super::codecall::Engine;
use super::meta::Meta;
use super::telemetry;
use crate::common::args;
use crate::common::JsRef;
use crate::sandbox::Sandbox;
use edge::{busy, live, release_engine, EngineCell, Fn1};
use inner::{Inner, EXTERNAL_BYTES};
use options::string_list;
use saved::{after_fn, op_fn};
use store::{chain, engine_with_store};

const ENGINE_JS: &str = include_str!("../engine.js");

/// The code-mode engine: a tool registry, the meta-tools and their dispatch (`api.md` §5).
#[napi]
pub struct CodeCall {
  inner: Inner,
}

/// The slots of `refs` that `dispose()` drops: the host's callbacks and store, and what reaches
/// them. `scriptsApi` stays (`scripts` keeps answering, with `POOL_DISPOSED`); it holds a host
/// store only as long as the disposed CodeCall object itself is reachable.
const RELEASED_SLOTS: &[&str] =
  &["includeTools", "filter", "onToolsChanged", "store", "after", "known", "queue", "otel", "runs"];

#[napi]
impl CodeCall {
  /// Throws `TypeError` (`ERR_INVALID_ARG`) for invalid options.
  #[napi(constructor, ts_args_type = "options?: CodeCallOptions")]
  pub fn new(env: Env, this: This<Object>, options: Option<Unknown>) -> napi::Result<Self> {
    let mut refs = Object::new(&env)?;

    let (mut o, vm, scripts_choice) = options::read(&env, options, &mut refs)?;
    let mut config = vm.to_config().map_err(|m| args::invalid_arg(&env, format!("options.vm: {m}")))?;
    config.policy.self_reference = o.names.self_reference();
    o.allow_loops = config.policy.allow_loops;
    o.allow_console = config.policy.allow_console;
    o.timeout_ms = config.timeout_ms;
    let semantic = o.index.semantic;
    if semantic {
      o.index.model = crate::search::available_model(&env, o.index.model);
    }
    let model = o.index.model;
    let save_policy = config.policy.clone();
    let engine = Engine::new(o).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    if semantic {
      crate::search::warn_without_model(&env, model);
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
      inner: Inner {
        engine,
        sandbox,
        refs: JsRef::weak(&env, &refs)?,
        names,
        direct_calls,
        scripts_on,
        otel,
        isolation,
        external: Cell::new(external),
      },
    })
  }

  /// Replaces every tool. Calls `onToolsChanged` if `listTools()` or the index changed. Throws
  /// `TypeError` (`ERR_INVALID_ARG`) if a tool is malformed (then nothing changes).
  #[napi(ts_args_type = "tools: ToolDefinition[]")]
  pub fn set_tools(&self, env: Env, tools: Unknown) -> napi::Result<()> {
    let defs = self.inner.read_tools(&env, &tools)?;
    let changed = self.inner.engine_mut(&env)?.set_tools(defs).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    self.inner.warn_without_model(&env);
    self.inner.tools_changed(&env, changed)
  }

  /// Adds tools or replaces them by name. Calls `onToolsChanged` if `listTools()` or the index
  /// changed. Throws `TypeError` (`ERR_INVALID_ARG`) if a tool is malformed (then nothing changes).
  #[napi(ts_args_type = "tools: ToolDefinition[]")]
  pub fn upsert_tools(&self, env: Env, tools: Unknown) -> napi::Result<()> {
    let defs = self.inner.read_tools(&env, &tools)?;
    let changed =
      self.inner.engine_mut(&env)?.upsert_tools(defs).map_err(|e| napi::Error::from_reason(e.to_string()))?;
    self.inner.warn_without_model(&env);
    self.inner.tools_changed(&env, changed)
  }

  /// Removes tools by name (unknown names are ignored). Calls `onToolsChanged` if `listTools()` or
  /// the index changed.
  #[napi(ts_args_type = "names: string[]")]
  pub fn remove_tools(&self, env: Env, names: Unknown) -> napi::Result<()> {
    let names = string_list(&env, &names, "names")?;
    let changed = self.inner.engine_mut(&env)?.remove_tools(&names);
    self.inner.tools_changed(&env, changed)
  }

  /// What the server's `list_tools` answers: the meta-tools, then the tools the mode shows.
  #[napi(ts_return_type = "McpTool[]")]
  pub fn list_tools<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    self.inner.to_js(env, &Value::Array(self.inner.engine(env)?.list_tools()))
  }

  /// The meta-tools alone (`invoke` only with `directCalls.enabled`).
  #[napi(ts_return_type = "McpTool[]")]
  pub fn meta_tools<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
    self.inner.to_js(env, &Value::Array(self.inner.engine(env)?.meta_tools()))
  }

  /// `codecall:search`. Throws `TypeError` (`ERR_INVALID_ARG`) for malformed input.
  #[napi(ts_args_type = "input: CodeCallSearchInput", ts_return_type = "CodeCallSearchResult")]
  pub fn search<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let run = self.inner.begin(env, "search");
    let r = self.inner.search_inner(env, input);
    self.inner.answered(env, run, r, input)
  }

  /// `codecall:describe`. Throws `TypeError` (`ERR_INVALID_ARG`) for malformed input.
  #[napi(ts_args_type = "input: CodeCallDescribeInput", ts_return_type = "CodeCallDescribeResult")]
  pub fn describe<'env>(&self, env: &'env Env, input: Unknown<'env>) -> napi::Result<Unknown<'env>> {
    let run = self.inner.begin(env, "describe");
    let r = self.inner.describe_inner(env, input);
    self.inner.answered(env, run, r, input)
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
    let r = self.inner.execute_inner(env, input, host);
    self.inner.rejecting(env, r)
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
    let r = self.inner.invoke_inner(env, input, host);
    self.inner.rejecting(env, r)
  }

  /// Dispatches a `tools/call` of a meta-tool by its name. Rejects with `TypeError`
  /// (`ERR_INVALID_ARG`) for a name that is not a meta-tool, or malformed arguments.
  #[napi(ts_args_type = "name: string, args: unknown, host: CodeCallHost", ts_return_type = "Promise<unknown>")]
  pub fn handle<'env>(
    &self,
    env: &'env Env,
    this: This<'env, Object<'env>>,
    name: Unknown<'env>,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let r = self.handle_inner(env, this, name, input, host);
    self.inner.rejecting(env, r)
  }

  /// Resolves once every indexed tool has its sentence-model vector (`ToolIndex.ready()`, spec §4).
  /// `search` never waits for it: until then it ranks lexically. Never rejects.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn ready<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    let engine = self.inner.engine.try_borrow().map_err(|_| busy())?;
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
    match self.inner.callback(env, "scriptsApi")? {
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
    if let (Some(otel), Ok(Some(q))) = (self.inner.otel(env), self.inner.callback(env, "queue")) {
      telemetry::call(env, &otel, "unwatchQueue", FnArgs::from((q,)));
    }
    let engine = self.inner.engine.try_borrow_mut().map_err(|_| busy())?.take();
    release_engine(engine);
    if self.inner.external.take().is_some() {
      let _ = env.adjust_external_memory(-EXTERNAL_BYTES);
    }
    // Nothing the host passed stays reachable from this CodeCall; a run store opened from a path
    // is closed (its journals stay in the file for other processes).
    let mut refs = self.inner.refs.get(env)?;
    if refs.get::<bool>("runsOpened")? == Some(true) {
      if let Some(store) = refs.get::<Object>("runs")? {
        if let Some(close) = store.get::<Function<(), Unknown>>("close")? {
          close.apply(store, ())?;
        }
      }
    }
    for slot in RELEASED_SLOTS {
      refs.delete_named_property(slot)?;
    }
    self.inner.sandbox_mut()?.dispose(env)
  }
}

/// How long the meta-tool's search waits for tools' vectors still being computed (a search after
/// `setTools` in a fresh process): a model's round trip takes seconds, and a lexical-only answer
/// that misses the tool costs it more than this. `search()` itself never waits.
pub const SEARCH_WAIT_MS: u32 = 5_000;

impl CodeCall {
  fn handle_inner<'env>(
    &self,
    env: &'env Env,
    this: This<'env, Object<'env>>,
    name: Unknown<'env>,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let name = args::string_arg(env, &name, "name")?;
    let meta = self.inner.names.parse(&name, self.inner.direct_calls, self.inner.scripts_on);
    match meta {
      // A host's store may be async: the index is brought up to date with it first.
      Some(m @ (Meta::Search | Meta::Describe)) if self.inner.callback(env, "store")?.is_some() => {
        let kit = self.inner.helper(env)?;
        let relisted = self.inner.relisted(env, &kit)?;
        let answer = self.inner.handle_after(env, matches!(m, Meta::Search))?;
        chain(env, &kit, relisted, answer, "", Some(input), None, None)
      }
      // The meta-tool's search ranks by meaning from the first query: while tools' vectors are
      // still being computed it waits for them, up to SEARCH_WAIT_MS (`search()` itself never waits).
      Some(Meta::Search) if !self.inner.engine(env)?.is_ready() => {
        let ready = self.ready(env)?;
        let kit = self.inner.helper(env)?;
        let after: Function<FnArgs<(Object, u32, Object, Unknown)>, Unknown> =
          kit.get("searchAfter")?.ok_or_else(|| napi::Error::from_reason("searchAfter"))?;
        after.apply(kit, FnArgs::from((ready, SEARCH_WAIT_MS, this.object, input)))
      }
      Some(Meta::Search) => {
        let out = self.search(env, input)?;
        self.inner.resolved(env, out)
      }
      Some(Meta::Describe) => {
        let out = self.describe(env, input)?;
        self.inner.resolved(env, out)
      }
      Some(Meta::Save) => self.inner.save_inner(env, input, host),
      Some(Meta::Execute) => self.inner.execute_inner(env, input, host),
      Some(Meta::Invoke) => self.inner.invoke_inner(env, input, host),
      None => Err(args::invalid_arg(env, format!("name '{name}' is not one of this CodeCall's meta-tools"))),
    }
  }
}
