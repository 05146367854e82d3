//! `CodeCall`'s core, plain Rust: the registry, the index kept in step with it, and the meta-tools
//! (`listTools`, `metaTools`, `search`, `describe`, the checks of `invoke`, and `execute`: its input
//! read into an execution's settings, the host wrapped, the plan started on a sandbox runner).
//! Inputs arrive as JSON values (what a model sent); bad ones are `Err(message)`, which the binding
//! turns into `ERR_INVALID_ARG`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::approval::ApprovalPolicy;
use super::error::EngineError;
use super::examples::usage_examples;
use super::host::{Callable, CallableTool, EngineHost};
use super::meta::{self, Describing, Meta, MetaNames};
use super::registry::{empty_object_schema, Mode, ToolDef};
use super::scripts::{self, History, SavedScript, ScriptRef, ScriptsSettings, Store};
use super::typescript::declaration;
use crate::common::{ErrorCode, InvalidArgument};
use crate::sandbox::ExecuteConfig;
use crate::sandbox::Host;
use crate::sandbox::Runner;
use crate::sandbox::Shared;
use crate::search::{property_names, IndexError, IndexOptions, SearchOptions, Tool, ToolIndex};
use crate::validator::{Language, SelfReference};

/// Most usage examples per described tool (seed 001).
pub const MAX_USAGE_EXAMPLES: usize = 5;
/// Most queries in one `search` (`queries`).
pub const MAX_QUERIES: usize = 16;
/// Most names in one `describe` call, before `maxDefinitions` applies.
pub const MAX_DESCRIBE_NAMES: usize = 256;

/// `CodeCallOptions` without the JavaScript callbacks.
#[derive(Debug, Clone)]
pub struct EngineOptions {
  pub mode: Mode,
  pub top_k: usize,
  pub max_definitions: usize,
  pub direct_calls: bool,
  pub direct_allowed: Option<HashSet<String>>,
  pub index: IndexOptions,
  /// `search.similarityThreshold`: hits below it are dropped.
  pub min_score: f64,
  pub names: MetaNames,
  /// What the execute definition tells the model about the sandbox.
  pub allow_loops: bool,
  pub allow_console: bool,
  pub timeout_ms: u64,
  /// `approval` (§9): which calls need a person's yes.
  pub approval: ApprovalPolicy,
  /// `scripts` (§11), less the store.
  pub scripts: Option<ScriptsSettings>,
}

impl Default for EngineOptions {
  fn default() -> Self {
    Self {
      mode: Mode::CodecallOnly,
      top_k: 8,
      max_definitions: 8,
      direct_calls: false,
      direct_allowed: None,
      index: IndexOptions::default(),
      min_score: 0.0,
      names: MetaNames::default(),
      allow_loops: false,
      allow_console: true,
      timeout_ms: 3500,
      approval: ApprovalPolicy::default(),
      scripts: None,
    }
  }
}

/// Why `invoke` refuses a call before it reaches the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
  pub code: ErrorCode,
  pub message: String,
}

pub struct Engine {
  options: EngineOptions,
  reserved: SelfReference,
  /// Host order, which `listTools` keeps.
  tools: Vec<ToolDef>,
  by_name: HashMap<String, usize>,
  index: ToolIndex,
  callable: Callable,
  /// While `set_tools` runs: the callable set being built, swapped into `callable` at the end.
  staging: Option<HashMap<String, Arc<CallableTool>>>,
  /// Indexed tools per source, for `includeOpenApi` / `includeInline`.
  sources: HashMap<String, usize>,
  /// Saved scripts (§11), when `scripts` is set.
  saved: Option<Saved>,
}

/// The engine's side of saved scripts: the store, each session's history, and the index's copy of
/// each name's latest version (the store stays the truth).
pub struct Saved {
  pub store: Arc<dyn Store>,
  pub settings: ScriptsSettings,
  pub history: History,
  /// `saved:<name>` → its definition as indexed.
  defs: HashMap<String, (SavedScript, ToolDef)>,
  /// The store's stamp when the index last matched it.
  stamp: Option<u64>,
}

impl Engine {
  pub fn new(options: EngineOptions) -> Result<Self, IndexError> {
    Ok(Self {
      reserved: options.names.self_reference(),
      index: ToolIndex::new(options.index.clone())?,
      options,
      tools: Vec::new(),
      by_name: HashMap::new(),
      callable: Callable::default(),
      staging: None,
      sources: HashMap::new(),
      saved: None,
    })
  }

  /// Turns saved scripts on with `store` (`options.scripts`).
  pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
    let settings = self.options.scripts.unwrap_or_default();
    self.options.scripts = Some(settings);
    self.saved =
      Some(Saved { store, settings, history: History::new(settings.history_size), defs: HashMap::new(), stamp: None });
    self
  }

  pub fn saved(&self) -> Option<&Saved> {
    self.saved.as_ref()
  }

  pub fn saved_mut(&mut self) -> Option<&mut Saved> {
    self.saved.as_mut()
  }

  /// Makes the index's saved tools what `list` (the store's latest versions) says.
  pub fn refresh_saved(&mut self, list: Vec<SavedScript>, stamp: Option<u64>) -> Result<(), IndexError> {
    let Some(saved) = self.saved.as_mut() else { return Ok(()) };
    saved.stamp = stamp;
    let fresh: HashMap<String, SavedScript> = list.into_iter().map(|s| (s.tool_name(), s)).collect();
    let gone: Vec<String> = saved.defs.keys().filter(|k| !fresh.contains_key(*k)).cloned().collect();
    let changed: Vec<SavedScript> =
      fresh.into_values().filter(|s| saved.defs.get(&s.tool_name()).map(|(old, _)| old) != Some(s)).collect();
    for name in &gone {
      saved.defs.remove(name);
    }
    let mut to_index = Vec::new();
    let mut entries = Vec::new();
    for script in changed {
      let Ok(def) = ToolDef::from_json(script.tool_json(), "saved script", &self.reserved) else { continue };
      to_index.push(search_tool(&def));
      entries.push((
        def.name.clone(),
        Arc::new(CallableTool { info: def.tool_info().to_string().into(), approval: None, annotations: None }),
      ));
      saved.defs.insert(def.name.clone(), (script, def));
    }
    let n = saved.defs.len();
    self.write_callable(|c| {
      for name in &gone {
        c.remove(name);
      }
      for (name, entry) in entries {
        c.insert(name, entry);
      }
    });
    if n > 0 {
      self.sources.insert(scripts::APP_ID.into(), n);
    } else {
      self.sources.remove(scripts::APP_ID);
    }
    self.index.remove(&gone);
    self.index.upsert(to_index)
  }

  /// For a store that answers at once (SQLite): lists it again if it changed since the index
  /// last matched it. Another host's save is found by the next search or describe.
  pub fn refresh_saved_now(&mut self) {
    let Some(saved) = self.saved.as_ref() else { return };
    if !saved.store.synchronous() {
      return;
    }
    let stamp = saved.store.stamp();
    if stamp.is_some() && stamp == saved.stamp {
      return;
    }
    if let Some(Ok(list)) = scripts::answer_now(|done| saved.store.list(done)) {
      let _ = self.refresh_saved(list, stamp);
    }
  }

  /// One name's latest version is now `latest` (`None`: removed), as this engine's own save or
  /// remove learned; the store is listed again on the next search.
  pub fn saved_changed(&mut self, name: &str, latest: Option<SavedScript>) -> Result<(), IndexError> {
    let Some(saved) = self.saved.as_ref() else { return Ok(()) };
    let mut all: Vec<SavedScript> = saved.defs.values().map(|(s, _)| s).filter(|s| s.name != name).cloned().collect();
    all.extend(latest);
    self.refresh_saved(all, None)
  }

  /// A saved script's index entry, if indexed.
  pub fn saved_script(&self, tool: &str) -> Option<&SavedScript> {
    self.saved.as_ref()?.defs.get(tool).map(|(s, _)| s)
  }

  pub fn options(&self) -> &EngineOptions {
    &self.options
  }

  /// Tool names a script may never call.
  pub fn reserved(&self) -> &SelfReference {
    &self.reserved
  }

  /// The registry's indexed tools as the sandbox's `getTool` sees them (shared, live).
  pub fn callable(&self) -> Callable {
    self.callable.clone()
  }

  pub fn tool(&self, name: &str) -> Option<&ToolDef> {
    self.by_name.get(name).map(|&i| &self.tools[i])
  }

  /// The tool if it is in the CodeCall index.
  pub fn indexed(&self, name: &str) -> Option<&ToolDef> {
    if let Some((_, def)) = self.saved.as_ref().and_then(|s| s.defs.get(name)) {
      return Some(def);
    }
    self.tool(name).filter(|t| t.indexed(self.options.mode))
  }

  pub fn total_indexed(&self) -> usize {
    self.index.len()
  }

  /// Calls `waiter` once every indexed tool has its vector (`ToolIndex::when_ready`).
  pub fn when_ready(&self, waiter: crate::search::Waiter) {
    self.index.when_ready(waiter);
  }

  /// Every indexed tool has its vector (or the index ranks lexically only).
  pub fn is_ready(&self) -> bool {
    self.index.is_ready()
  }

  /// Replaces every tool. Returns whether `list_tools` or the index changed.
  ///
  /// Scripts read the callable set from other threads while this runs (a worker's `getTool`, a
  /// thread executor): the new set is built aside and swapped in at once, so a tool that is in
  /// both the old and the new list is never missing in between.
  pub fn set_tools(&mut self, tools: Vec<ToolDef>) -> Result<bool, IndexError> {
    let old = std::mem::take(&mut self.tools);
    self.by_name.clear();
    self.sources.clear();
    // Refilled below: `ready()` waiters must not be answered by the moment it is empty.
    self.index.clear_for_refill()?;
    self.staging = Some(HashMap::new());
    let upserted = self.upsert_tools(tools);
    // The saved scripts' tools are not the host's: they stay.
    if let Some(saved) = self.saved.as_mut() {
      let keep: Vec<SavedScript> = saved.defs.drain().map(|(_, (s, _))| s).collect();
      let stamp = saved.stamp;
      let _ = self.refresh_saved(keep, stamp);
    }
    self.index.end_refill();
    if let Some(fresh) = self.staging.take() {
      *self.callable.write().unwrap_or_else(|p| p.into_inner()) = fresh;
    }
    upserted?;
    let mode = self.options.mode;
    Ok(fingerprint(&old, mode) != fingerprint(&self.tools, mode))
  }

  /// Adds or replaces tools by name (the last of one name in a batch wins). Returns whether
  /// `list_tools` or the index changed.
  pub fn upsert_tools(&mut self, tools: Vec<ToolDef>) -> Result<bool, IndexError> {
    let mode = self.options.mode;
    // The last definition of a name in one batch wins.
    let last: HashMap<&str, usize> = tools.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let keep: Vec<bool> = (0..tools.len()).map(|i| last.get(tools[i].name.as_str()) == Some(&i)).collect();
    let tools = tools.into_iter().zip(keep).filter_map(|(t, k)| k.then_some(t));
    let mut changed = false;
    let mut to_index = Vec::new();
    let mut to_unindex = Vec::new();
    for tool in tools {
      let relevant = tool.listed() || tool.indexed(mode);
      let old = match self.by_name.get(&tool.name) {
        Some(&i) => Some(std::mem::replace(&mut self.tools[i], tool.clone())),
        None => {
          self.by_name.insert(tool.name.clone(), self.tools.len());
          self.tools.push(tool.clone());
          None
        }
      };
      let was_relevant = old.as_ref().is_some_and(|o| o.listed() || o.indexed(mode));
      if (relevant || was_relevant) && old.as_ref() != Some(&tool) {
        changed = true;
      }
      if let Some(old) = old.filter(|o| o.indexed(mode)) {
        self.count_source(&old.source, false);
        if !tool.indexed(mode) {
          to_unindex.push(old.name);
        }
      }
      if tool.indexed(mode) {
        self.count_source(&tool.source, true);
        let entry = Arc::new(CallableTool {
          info: tool.tool_info().to_string().into(),
          approval: tool.approval,
          annotations: tool.annotations.clone(),
        });
        self.write_callable(|c| {
          c.insert(tool.name.clone(), entry);
        });
        to_index.push(search_tool(&tool));
      } else {
        self.write_callable(|c| {
          c.remove(&tool.name);
        });
      }
    }
    self.index.remove(&to_unindex);
    // Later entries of one name replace earlier ones inside the index's batch too.
    self.index.upsert(to_index)?;
    Ok(changed)
  }

  /// Removes tools by name; unknown names are ignored. Returns whether `list_tools` or the index
  /// changed.
  pub fn remove_tools(&mut self, names: &[String]) -> bool {
    let mode = self.options.mode;
    let remove: HashSet<&str> = names.iter().map(String::as_str).filter(|n| self.by_name.contains_key(*n)).collect();
    if remove.is_empty() {
      return false;
    }
    let mut changed = false;
    let mut unindex = Vec::new();
    let mut kept = Vec::with_capacity(self.tools.len());
    for tool in std::mem::take(&mut self.tools) {
      if remove.contains(tool.name.as_str()) {
        changed |= tool.listed() || tool.indexed(mode);
        if tool.indexed(mode) {
          self.count_source(&tool.source, false);
          unindex.push(tool.name);
        }
      } else {
        kept.push(tool);
      }
    }
    self.tools = kept;
    self.by_name = self.tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
    self.write_callable(|c| unindex.iter().for_each(|n| drop(c.remove(n))));
    self.index.remove(&unindex);
    changed
  }

  fn write_callable(&mut self, f: impl FnOnce(&mut HashMap<String, Arc<CallableTool>>)) {
    if let Some(staging) = self.staging.as_mut() {
      f(staging);
      return;
    }
    let mut guard = self.callable.write().unwrap_or_else(|p| p.into_inner());
    f(&mut guard);
  }

  fn count_source(&mut self, source: &str, add: bool) {
    let n = self.sources.entry(source.to_string()).or_insert(0);
    if add {
      *n += 1;
    } else {
      *n = n.saturating_sub(1);
      if *n == 0 {
        self.sources.remove(source);
      }
    }
  }

  fn describing(&self) -> Describing {
    Describing {
      top_k: self.options.top_k,
      max_definitions: self.options.max_definitions,
      allow_loops: self.options.allow_loops,
      allow_console: self.options.allow_console,
      timeout_ms: self.options.timeout_ms,
      direct_calls: self.options.direct_calls,
      scripts: self.saved.is_some(),
    }
  }

  /// The meta-tools alone.
  pub fn meta_tools(&self) -> Vec<Value> {
    meta::definitions(&self.options.names, &self.describing())
  }

  /// What the server's `list_tools` answers: the meta-tools, then the tools the mode shows.
  pub fn list_tools(&self) -> Vec<Value> {
    let mut out = self.meta_tools();
    out.extend(self.tools.iter().filter(|t| t.listed()).map(ToolDef::mcp_tool));
    out
  }

  /// The name of a meta-tool under this engine's prefix and separator: the name clients call it by.
  pub fn meta_name(&self, meta: Meta) -> String {
    self.options.names.name(meta)
  }

  /// Which meta-tool `name` is (invoke only when direct calls are enabled).
  pub fn meta(&self, name: &str) -> Option<Meta> {
    self.options.names.parse(name, self.options.direct_calls, self.saved.is_some())
  }

  /// `codecall:search`.
  pub fn search(&mut self, input: &Value) -> Result<Value, EngineError> {
    let request = SearchRequest::read(input, &self.options)?;
    self.refresh_saved_now();
    Ok(self.run_search(request)?)
  }

  fn run_search(&mut self, request: SearchRequest) -> Result<Value, IndexError> {
    let SearchRequest { queries, top_k, mut search, exclude } = request;
    let total = self.index.len();
    if !exclude.is_empty() {
      search.sources = self.sources.keys().filter(|s| !exclude.contains(&s.as_str())).cloned().collect::<Vec<_>>();
      if search.sources.is_empty() {
        return Ok(json!({ "tools": [], "totalIndexed": total }));
      }
    }
    let mut best: HashMap<String, crate::search::Hit> = HashMap::new();
    for q in &queries {
      for hit in self.index.search(q, &search)? {
        match best.get(&hit.name) {
          Some(b) if b.score >= hit.score => {}
          _ => {
            best.insert(hit.name.clone(), hit);
          }
        }
      }
    }
    let mut hits: Vec<_> = best.into_values().collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(&b.name)));
    hits.truncate(top_k);
    let tools: Vec<Value> = hits
      .into_iter()
      .map(|h| {
        let mut o = Map::new();
        o.insert("name".into(), Value::String(h.name));
        if let Some(a) = h.app_id {
          o.insert("appId".into(), Value::String(a));
        }
        o.insert("description".into(), Value::String(h.description));
        o.insert("source".into(), h.source.map_or(Value::Null, Value::String));
        o.insert("score".into(), json!(h.score));
        Value::Object(o)
      })
      .collect();
    Ok(json!({ "tools": tools, "totalIndexed": total }))
  }

  /// `codecall:describe`.
  pub fn describe(&mut self, input: &Value) -> Result<Value, InvalidArgument> {
    let o = input_object(input, "input")?;
    self.refresh_saved_now();
    Meta::Describe.check_keys(o, &self.meta_name(Meta::Describe))?;
    let (key, names) = match (o.get("toolNames"), o.get("tools")) {
      (Some(v), _) if !v.is_null() => ("toolNames", v),
      (_, Some(v)) if !v.is_null() => ("tools", v),
      _ => return Err("input.toolNames must be an array of tool names".into()),
    };
    let names = string_list(Some(names), &format!("input.{key}"))?;
    if names.len() > MAX_DESCRIBE_NAMES {
      return Err(format!("input.{key} may hold at most {MAX_DESCRIBE_NAMES} names").into());
    }
    let limit = match o.get("max") {
      None | Some(Value::Null) => self.options.max_definitions,
      Some(v) => positive_int(v).ok_or("input.max must be a positive integer")?.min(self.options.max_definitions),
    };
    let mut seen = HashSet::new();
    let (mut tools, mut not_found, mut omitted) = (Vec::new(), Vec::new(), Vec::new());
    for name in names {
      if !seen.insert(name.clone()) {
        continue;
      }
      match self.indexed(&name) {
        Some(_) if tools.len() >= limit => omitted.push(Value::String(name)),
        Some(tool) => {
          let mut d = describe_tool(tool);
          // A saved script is described with its version and its code (§11).
          if let (Some(script), Value::Object(o)) = (self.saved_script(&name), &mut d) {
            o.insert("version".into(), json!(script.version));
            o.insert("language".into(), Value::String(scripts::language_name(script.language).into()));
            o.insert("script".into(), Value::String(script.script.clone()));
            o.insert("codeSha256".into(), Value::String(script.code_sha256.clone()));
            o.insert("createdAt".into(), Value::String(script.created_at.clone()));
            o.insert("tags".into(), json!(script.tags));
          }
          tools.push(d)
        }
        None => not_found.push(Value::String(name)),
      }
    }
    let mut out = Map::new();
    out.insert("tools".into(), Value::Array(tools));
    if !not_found.is_empty() {
      out.insert("notFound".into(), Value::Array(not_found));
    }
    if !omitted.is_empty() {
      // Found, but past `maxDefinitions`: the model describes them in another call.
      out.insert("omitted".into(), Value::Array(omitted));
    }
    Ok(Value::Object(out))
  }

  /// Reads `codecall:execute`'s input (`{ script, language?, context?, input?, allowedTools? }`)
  /// into `exec` and returns the script. `Err` is an invalid argument (`ERR_INVALID_ARG`), an
  /// unknown key among them.
  pub fn read_execute_input(&self, input: Value, exec: &mut ExecuteConfig) -> Result<ExecuteScript, InvalidArgument> {
    let Value::Object(mut input) = input else { return Err("input must be an object".into()) };
    let off: &[&str] = if self.saved.is_some() { &[] } else { &["scriptName"] };
    Meta::Execute.check_keys_without(&input, &self.meta_name(Meta::Execute), off)?;
    let saved = match input.remove("scriptName") {
      None | Some(Value::Null) => None,
      Some(Value::String(n)) => {
        if self.saved.is_none() {
          return Err("input.scriptName needs saved scripts (options.scripts)".into());
        }
        let n = n.strip_prefix(scripts::PREFIX).unwrap_or(&n);
        Some(ScriptRef::parse(n).map_err(|m| InvalidArgument::new(format!("input.scriptName: {m}")))?)
      }
      Some(_) => return Err("input.scriptName must be a string".into()),
    };
    let script = match (input.remove("script"), saved) {
      (Some(Value::String(s)), None) => ExecuteScript::Inline(s),
      (None | Some(Value::Null), Some(r)) => ExecuteScript::Saved(r),
      (Some(Value::String(_)), Some(_)) => {
        return Err("give exactly one of input.script and input.scriptName, not both".into())
      }
      _ if self.saved.is_some() => {
        return Err("input.script must be a string (or input.scriptName a saved script)".into())
      }
      _ => return Err("input.script must be a string".into()),
    };
    match input.remove("language") {
      None | Some(Value::Null) => {}
      Some(Value::String(l)) => {
        exec.language = Language::parse(&l)
          .ok_or_else(|| format!("input.language must be 'javascript' or 'typescript' (got '{l}')"))?;
      }
      Some(_) => return Err("input.language must be a string".into()),
    }
    match input.remove("context") {
      None | Some(Value::Null) => {}
      Some(c @ Value::Object(_)) => exec.context_json = c.to_string(),
      Some(_) => return Err("input.context must be an object".into()),
    }
    if let Some(v) = input.remove("input") {
      exec.input_json = Some(v.to_string());
    }
    match input.remove("allowedTools") {
      None | Some(Value::Null) => {}
      Some(Value::Array(items)) => {
        let mut list = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
          match item {
            Value::String(s) => list.push(s),
            _ => return Err(format!("input.allowedTools[{i}] must be a string").into()),
          }
        }
        exec.allowed_tools = Some(list);
      }
      Some(_) => return Err("input.allowedTools must be an array of strings".into()),
    }
    // The registry answers the sandbox's getTool: only indexed tools are callable.
    exec.host_get_tool = true;
    Ok(script)
  }

  /// The host a plan runs with: the host's own pipeline behind it, only indexed tools callable,
  /// `CallToolResult`s unwrapped before the script sees them.
  pub fn execution_host(&self, host: Arc<dyn Host>) -> Arc<dyn Host> {
    Arc::new(EngineHost::new(host, self.callable(), &self.options.approval))
  }

  /// `codecall:execute` on a sandbox runner, without JavaScript: the result arrives through
  /// `host.complete`, exactly once. (The binding does the same through the sandbox's napi side,
  /// which adds abort signals and warnings.)
  pub fn execute(
    &self,
    runner: &Runner,
    id: String,
    input: Value,
    mut exec: ExecuteConfig,
    host: Arc<dyn Host>,
  ) -> Result<(), InvalidArgument> {
    let ExecuteScript::Inline(script) = self.read_execute_input(input, &mut exec)? else {
      return Err("saved scripts run through the binding (CodeCall.execute)".into());
    };
    let shared = Arc::new(Shared::new(id, self.execution_host(host), exec.timeout));
    shared.host.attached(&shared);
    runner.submit(script, exec, shared);
    Ok(())
  }

  /// The checks of `codecall:invoke` before the host is called (`filter_allows` is
  /// `directCalls.filter`, asked only for indexed tools on the allowlist).
  pub fn check_invoke(&self, tool: &str, filter_allows: impl FnOnce(&ToolDef) -> bool) -> Result<(), Refusal> {
    let refuse = |code, message: String| Err(Refusal { code, message });
    if !self.options.direct_calls {
      return refuse(ErrorCode::AccessDenied, "Direct calls are not enabled (directCalls.enabled)".into());
    }
    if self.reserved.matches(tool) {
      return refuse(
        ErrorCode::SelfReferenceBlocked,
        format!("'{tool}' is a CodeCall meta-tool and cannot be invoked"),
      );
    }
    let Some(def) = self.indexed(tool) else {
      return refuse(ErrorCode::ToolNotFound, format!("Tool '{tool}' not found"));
    };
    if let Some(allowed) = &self.options.direct_allowed {
      if !allowed.contains(tool) {
        return refuse(ErrorCode::AccessDenied, format!("Tool '{tool}' is not allowed for direct calls"));
      }
    }
    if !filter_allows(def) {
      return refuse(ErrorCode::AccessDenied, format!("Tool '{tool}' is not allowed for direct calls"));
    }
    Ok(())
  }
}

/// What `codecall:execute` runs: the script it was given, or a saved one (§11).
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteScript {
  Inline(String),
  Saved(ScriptRef),
}

/// `codecall:search`'s input, read (`{ query | queries, topK?, filter? }`).
struct SearchRequest {
  queries: Vec<String>,
  top_k: usize,
  /// Everything but `sources`, which needs the registry.
  search: SearchOptions,
  /// Sources the filter leaves out (`includeOpenApi` / `includeInline: false`).
  exclude: Vec<&'static str>,
}

impl SearchRequest {
  fn read(input: &Value, defaults: &EngineOptions) -> Result<Self, InvalidArgument> {
    let o = input_object(input, "input")?;
    let tool = defaults.names.name(Meta::Search);
    Meta::Search.check_keys(o, &tool)?;
    let mut queries: Vec<String> = Vec::new();
    match o.get("query") {
      None | Some(Value::Null) => {}
      Some(Value::String(q)) => queries.push(q.clone()),
      Some(_) => return Err("input.query must be a string".into()),
    }
    match o.get("queries") {
      None | Some(Value::Null) => {}
      Some(Value::Array(items)) => {
        for (i, q) in items.iter().enumerate() {
          match q {
            Value::String(q) => queries.push(q.clone()),
            _ => return Err(format!("input.queries[{i}] must be a string").into()),
          }
        }
      }
      Some(_) => return Err("input.queries must be an array of strings".into()),
    }
    if queries.is_empty() {
      return Err("input.query must be a string (or input.queries an array of strings)".into());
    }
    if queries.len() > MAX_QUERIES {
      return Err(format!("input.queries may hold at most {MAX_QUERIES} queries").into());
    }
    let top_k = match o.get("topK") {
      None | Some(Value::Null) => defaults.top_k,
      Some(v) => positive_int(v).ok_or("input.topK must be a positive integer")?,
    };
    let mut search = SearchOptions { top_k, min_score: defaults.min_score, ..SearchOptions::default() };
    let mut exclude: Vec<&'static str> = Vec::new();
    match o.get("filter") {
      None | Some(Value::Null) => {}
      Some(Value::Object(f)) => {
        meta::check_filter_keys(f, &tool)?;
        search.app_ids = string_list(f.get("appIds"), "input.filter.appIds")?;
        search.tags = string_list(f.get("tags"), "input.filter.tags")?;
        for (key, source) in [("includeOpenApi", "openapi"), ("includeInline", "inline")] {
          match f.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => exclude.push(source),
            Some(_) => return Err(format!("input.filter.{key} must be a boolean").into()),
          }
        }
      }
      Some(_) => return Err("input.filter must be an object".into()),
    }
    Ok(Self { queries, top_k, search, exclude })
  }
}

/// The listed and indexed tools with their definitions: what `onToolsChanged` watches.
fn fingerprint(tools: &[ToolDef], mode: Mode) -> Vec<(&str, bool, bool, &ToolDef)> {
  let mut v: Vec<_> = tools
    .iter()
    .filter(|t| t.listed() || t.indexed(mode))
    .map(|t| (t.name.as_str(), t.listed(), t.indexed(mode), t))
    .collect();
  v.sort_by(|a, b| a.0.cmp(b.0));
  v
}

/// One `describe` entry.
pub fn describe_tool(tool: &ToolDef) -> Value {
  let examples = usage_examples(
    &tool.name,
    tool.description.as_deref(),
    tool.input_schema.as_ref(),
    &tool.examples,
    MAX_USAGE_EXAMPLES,
  );
  let mut o = Map::new();
  o.insert("name".into(), Value::String(tool.name.clone()));
  if let Some(a) = &tool.app_id {
    o.insert("appId".into(), Value::String(a.clone()));
  }
  o.insert("description".into(), Value::String(tool.description.clone().unwrap_or_default()));
  o.insert("inputSchema".into(), tool.input_schema.clone().unwrap_or_else(empty_object_schema));
  o.insert("outputSchema".into(), tool.output_schema.clone().unwrap_or(Value::Null));
  o.insert("annotations".into(), tool.annotations.clone().unwrap_or_else(|| Value::Object(Map::new())));
  o.insert(
    "usageExamples".into(),
    Value::Array(examples.into_iter().map(|e| json!({ "description": e.description, "code": e.code })).collect()),
  );
  o.insert(
    "typescript".into(),
    Value::String(declaration(
      &tool.name,
      tool.description.as_deref(),
      tool.input_schema.as_ref(),
      tool.output_schema.as_ref(),
    )),
  );
  Value::Object(o)
}

/// The index's view of a tool.
fn search_tool(tool: &ToolDef) -> Tool {
  Tool {
    name: tool.name.clone(),
    title: tool
      .title
      .clone()
      .or_else(|| tool.annotations.as_ref().and_then(|a| a.get("title")).and_then(Value::as_str).map(str::to_string)),
    app_id: tool.app_id.clone(),
    description: tool.description.clone(),
    source: Some(tool.source.clone()),
    tags: tool.tags.clone(),
    properties: tool.input_schema.as_ref().map(property_names).unwrap_or_default(),
    examples: tool
      .examples
      .iter()
      .filter_map(|e| match e {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("description").and_then(Value::as_str).map(str::to_string),
        _ => None,
      })
      .collect(),
    server: tool.server.clone(),
  }
}

fn input_object<'a>(input: &'a Value, name: &str) -> Result<&'a Map<String, Value>, InvalidArgument> {
  input.as_object().ok_or_else(|| format!("{name} must be an object").into())
}

fn positive_int(v: &Value) -> Option<usize> {
  let n = v.as_f64()?;
  // `as` saturates: huge counts become usize::MAX.
  (n.is_finite() && n >= 1.0 && n.fract() == 0.0).then_some(n as usize)
}

fn string_list(v: Option<&Value>, name: &str) -> Result<Vec<String>, InvalidArgument> {
  match v {
    None | Some(Value::Null) => Ok(Vec::new()),
    Some(Value::Array(items)) => items
      .iter()
      .enumerate()
      .map(|(i, s)| s.as_str().map(str::to_string).ok_or_else(|| format!("{name}[{i}] must be a string").into()))
      .collect(),
    Some(_) => Err(format!("{name} must be an array of strings").into()),
  }
}
