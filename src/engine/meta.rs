//! The meta-tools: their names (`metaToolPrefix` + `metaToolSeparator` + verb) and the MCP tool
//! definitions the model reads — short, exact, one example each (seed 001). All four together stay
//! under 6 KB of JSON (a test holds them to it).

use crate::common::{char_prefix, InvalidArgument};
use serde_json::{json, Map, Value};

use crate::validator::{SelfReference, META_TOOL_VERBS};

/// The meta-tools (`invoke` only with direct calls, `save` only with saved scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta {
  Search = 0,
  Describe = 1,
  Execute = 2,
  Invoke = 3,
  Save = 4,
}

impl Meta {
  pub const ALL: [Meta; 5] = [Meta::Search, Meta::Describe, Meta::Execute, Meta::Invoke, Meta::Save];

  /// `search`, `describe`, `execute`, `invoke`: from the validator's list, which refuses them.
  pub fn verb(self) -> &'static str {
    META_TOOL_VERBS[self as usize]
  }

  /// The keys of this meta-tool's input, in the order models see them: the one list of its
  /// shape. The definition's `inputSchema` is built from it; the reader (`codecall.rs`,
  /// `invoke.rs`) and the `CodeCall<Verb>Input` interface of `src/types.d.ts` are held to it by
  /// tests.
  pub fn input_keys(self) -> &'static [InputKey] {
    const fn key(name: &'static str, required: bool, shown: bool) -> InputKey {
      InputKey { name, required, shown }
    }
    // `query` or `queries`: neither alone is required.
    const SEARCH: &[InputKey] =
      &[key("query", false, true), key("queries", false, true), key("topK", false, true), key("filter", false, true)];
    // Seed 000's `tools` / `max` are read but not advertised.
    const DESCRIBE: &[InputKey] =
      &[key("toolNames", false, true), key("tools", false, false), key("max", false, false)];
    // `script` or `scriptName` (a saved script, §11): neither alone is required.
    const EXECUTE: &[InputKey] = &[
      key("script", false, true),
      key("scriptName", false, true),
      key("context", false, true),
      key("allowedTools", false, true),
      key("language", false, true),
      key("input", false, true),
    ];
    const INVOKE: &[InputKey] = &[key("tool", true, true), key("input", false, true)];
    const SAVE: &[InputKey] = &[
      key("name", true, true),
      key("description", true, true),
      key("script", false, true),
      key("executionId", false, true),
      key("language", false, true),
      key("inputSchema", false, true),
      key("tags", false, true),
    ];
    match self {
      Meta::Search => SEARCH,
      Meta::Describe => DESCRIBE,
      Meta::Execute => EXECUTE,
      Meta::Invoke => INVOKE,
      Meta::Save => SAVE,
    }
  }

  /// Refuses a key this meta-tool's input does not have: its definition says
  /// `additionalProperties: false`, and a key a model invented (`timeoutMs`) or misspelt must not
  /// be dropped without a word. `tool` is the name the client called it by; the allowed keys are
  /// the ones the definition shows (the unadvertised spellings are read, not offered).
  pub fn check_keys(self, input: &Map<String, Value>, tool: &str) -> Result<(), InvalidArgument> {
    self.check_keys_without(input, tool, &[])
  }

  /// [`Meta::check_keys`] with `off` not keys of this configuration (execute's `scriptName`
  /// without saved scripts): refused, and not offered.
  pub fn check_keys_without(self, input: &Map<String, Value>, tool: &str, off: &[&str]) -> Result<(), InvalidArgument> {
    let keys: Vec<&InputKey> = self.input_keys().iter().filter(|k| !off.contains(&k.name)).collect();
    let allowed: Vec<&str> = keys.iter().filter(|k| k.shown).map(|k| k.name).collect();
    match input.keys().find(|k| !keys.iter().any(|known| known.name == k.as_str())) {
      Some(key) => Err(unknown_key(tool, "", key, "allowed", &allowed)),
      None => Ok(()),
    }
  }
}

/// The keys of `codecall:search`'s `filter`, whose schema is closed too.
pub const SEARCH_FILTER_KEYS: [&str; 4] = ["appIds", "tags", "includeOpenApi", "includeInline"];

/// Refuses a key of search's `filter` outside [`SEARCH_FILTER_KEYS`].
pub fn check_filter_keys(filter: &Map<String, Value>, tool: &str) -> Result<(), InvalidArgument> {
  match filter.keys().find(|k| !SEARCH_FILTER_KEYS.contains(&k.as_str())) {
    Some(key) => Err(unknown_key(tool, "filter.", key, "allowed in filter", &SEARCH_FILTER_KEYS)),
    None => Ok(()),
  }
}

/// `codecall_execute: unknown key 'timeoutMs' (allowed: script, context, …)`. The key is the
/// caller's text: a long one is cut.
fn unknown_key(tool: &str, at: &str, key: &str, label: &str, allowed: &[&str]) -> InvalidArgument {
  let shown = char_prefix(key, 64);
  let cut = if shown.len() < key.len() { "…" } else { "" };
  format!("{tool}: unknown key '{at}{shown}{cut}' ({label}: {})", allowed.join(", ")).into()
}

/// One key of a meta-tool's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputKey {
  pub name: &'static str,
  /// The input is refused without it.
  pub required: bool,
  /// In the definition's `inputSchema` (a few accepted forms are not advertised to models).
  pub shown: bool,
}

/// Separators a meta-tool name may use: `:` (seed 001) and the characters MCP clients that accept
/// only `[a-zA-Z0-9_-]` (or also `.`) allow.
pub const SEPARATORS: [&str; 4] = [":", "_", "-", "."];

/// The meta-tools' names under one prefix and separator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaNames {
  pub prefix: String,
  pub separator: String,
}

impl Default for MetaNames {
  fn default() -> Self {
    Self { prefix: "codecall".into(), separator: ":".into() }
  }
}

impl MetaNames {
  /// Checks `metaToolPrefix` / `metaToolSeparator`.
  pub fn new(prefix: Option<String>, separator: Option<String>) -> Result<Self, InvalidArgument> {
    let d = Self::default();
    let prefix = prefix.unwrap_or(d.prefix);
    let separator = separator.unwrap_or(d.separator);
    let valid_prefix = !prefix.is_empty()
      && prefix.len() <= 64
      && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_prefix {
      return Err(
        format!(
          "options.metaToolPrefix must be 1-64 characters of [A-Za-z0-9_-] (got '{}')",
          prefix.chars().take(80).collect::<String>()
        )
        .into(),
      );
    }
    if !SEPARATORS.contains(&separator.as_str()) {
      return Err(
        format!(
          "options.metaToolSeparator must be one of {} (got '{}')",
          SEPARATORS.map(|s| format!("'{s}'")).join(", "),
          separator.chars().take(80).collect::<String>()
        )
        .into(),
      );
    }
    Ok(Self { prefix, separator })
  }

  pub fn name(&self, meta: Meta) -> String {
    format!("{}{}{}", self.prefix, self.separator, meta.verb())
  }

  /// Which meta-tool a name is, if any (`invoke` only when direct calls are enabled, `save` only
  /// with saved scripts).
  pub fn parse(&self, name: &str, invoke_enabled: bool, save_enabled: bool) -> Option<Meta> {
    let verb = name.strip_prefix(self.prefix.as_str())?.strip_prefix(self.separator.as_str())?;
    Meta::ALL
      .into_iter()
      .find(|m| m.verb() == verb && (*m != Meta::Invoke || invoke_enabled) && (*m != Meta::Save || save_enabled))
  }

  /// Names a script may never call (these, any separator, and the `codecall:` namespace).
  pub fn self_reference(&self) -> SelfReference {
    SelfReference::for_meta_tools(&self.prefix, &self.separator)
  }
}

/// What the definitions say about the configuration they run under.
#[derive(Debug, Clone)]
pub struct Describing {
  pub top_k: usize,
  pub max_definitions: usize,
  pub allow_loops: bool,
  pub allow_console: bool,
  pub timeout_ms: u64,
  pub direct_calls: bool,
  /// Saved scripts are on (§11): `save` is listed, execute takes `scriptName`.
  pub scripts: bool,
}

/// The MCP tool definitions of the meta-tools, in the order search, describe, execute, invoke.
pub fn definitions(names: &MetaNames, d: &Describing) -> Vec<Value> {
  let search = names.name(Meta::Search);
  let describe = names.name(Meta::Describe);
  let execute = names.name(Meta::Execute);
  let invoke = names.name(Meta::Invoke);
  let mut out = vec![
    json!({
      "name": search,
      "description": format!(
        "Find tools for a task, in plain words. Returns the best matches, best first: \
         {{ tools: [{{ name, appId, description, source, score (0-1) }}], totalIndexed }}. \
         Then call {describe} on the names you need.\n\
         Example: {{\"query\": \"refund a customer's last order\", \"topK\": 5}}"
      ),
      "inputSchema": {
        "type": "object",
        "properties": properties(Meta::Search, names, d),
        "required": ["query"],
        "additionalProperties": false
      },
      "annotations": { "readOnlyHint": true }
    }),
    json!({
      "name": describe,
      "description": format!(
        "Get what you need to call tools: input/output JSON Schemas, a TypeScript signature and \
         runnable usage examples. At most {} tools per call; unknown names come back in notFound.\n\
         Example: {{\"toolNames\": [\"users:list\", \"orders:get\"]}}",
        d.max_definitions
      ),
      "inputSchema": {
        "type": "object",
        "properties": properties(Meta::Describe, names, d),
        "required": ["toolNames"],
        "additionalProperties": false
      },
      "annotations": { "readOnlyHint": true }
    }),
    json!({
      "name": execute,
      "description": format!(
        "Run a JavaScript plan that calls tools and returns one JSON result. The script is an async \
         function body: use `await callTool(name, input)`, `return` the answer. {loops}\
         `await __safe_parallel([() => callTool(a, x), () => callTool(b, y)])` runs calls in parallel. \
         `codecallContext` holds `context`{console}. Time limit {timeout} ms; no network, files, timers, eval.\n\
         Returns {{ status: 'ok', result }} or {{ status: 'syntax_error' | 'illegal_access' | \
         'runtime_error' | 'tool_error' | 'timeout', error: {{ code, message }} }}.\n\
         Example: {{\"script\": \"const u = await callTool('users:list', {{ limit: 5 }});\\nreturn u.items.map(x => x.id);\"}}",
        loops = if d.allow_loops { "" } else { "Loops are not allowed: use map/filter/reduce. " },
        console = if d.allow_console { "; console.log goes to `logs`" } else { "" },
        timeout = d.timeout_ms,
      ),
      "inputSchema": execute_schema(names, d)
    }),
  ];
  if d.direct_calls {
    out.push(json!({
      "name": invoke,
      "description": format!(
        "Call one tool directly, without a script (same checks and pipeline as {execute}). \
         Returns {{ status: 'ok', result }} or {{ status: 'error', error: {{ code, message }} }}.\n\
         Example: {{\"tool\": \"users:get\", \"input\": {{ \"id\": \"usr_001\" }}}}"
      ),
      "inputSchema": {
        "type": "object",
        "properties": properties(Meta::Invoke, names, d),
        "required": ["tool"],
        "additionalProperties": false
      }
    }));
  }
  if d.scripts {
    let save = names.name(Meta::Save);
    out.push(json!({
      "name": save,
      "description": format!(
        "Save a plan that worked and will be needed again as the tool saved:<name> (each save of a \
         name is its next version). Give the script, or the executionId of a run of this session. \
         {search} finds saved tools; run one with {execute} {{\"scriptName\": name, \"input\": ...}} or \
         callTool('saved:<name>', input) from a plan (the script reads `input`).\n\
         Example: {{\"name\": \"weekly-report\", \"description\": \"Sales per region for a week\", \"executionId\": \"exec-9b2f4c1e7d3a40f6a8c5e2b1d0f7a6c3\"}}"
      ),
      "inputSchema": {
        "type": "object",
        "properties": properties(Meta::Save, names, d),
        "required": ["name", "description"],
        "additionalProperties": false
      }
    }));
  }
  out
}

/// execute's `inputSchema`: `script` is required unless saved scripts are on (then `scriptName`
/// may stand in for it, and is shown).
fn execute_schema(names: &MetaNames, d: &Describing) -> Value {
  let mut props = properties(Meta::Execute, names, d);
  if !d.scripts {
    if let Some(p) = props.as_object_mut() {
      p.remove("scriptName");
    }
    return json!({ "type": "object", "properties": props, "required": ["script"], "additionalProperties": false });
  }
  json!({ "type": "object", "properties": props, "additionalProperties": false })
}

/// One input key's JSON Schema for models (`None`: not a key of that meta-tool).
fn property(meta: Meta, key: &str, names: &MetaNames, d: &Describing) -> Option<Value> {
  let strings = || json!({ "type": "array", "items": { "type": "string" } });
  Some(match (meta, key) {
    (Meta::Search, "query") => json!({ "type": "string", "description": "What you want to do" }),
    (Meta::Search, "queries") => {
      json!({ "type": "array", "items": { "type": "string" }, "description": "Several queries; results merged" })
    }
    (Meta::Search, "topK") => {
      json!({ "type": "integer", "minimum": 1, "description": format!("Most results (default {})", d.top_k) })
    }
    (Meta::Search, "filter") => json!({
      "type": "object",
      "properties": {
        "appIds": strings(),
        "tags": strings(),
        "includeOpenApi": { "type": "boolean" },
        "includeInline": { "type": "boolean" }
      },
      "additionalProperties": false
    }),
    (Meta::Describe, "toolNames") => json!({
      "type": "array", "items": { "type": "string" }, "description": format!("Names from {}", names.name(Meta::Search))
    }),
    (Meta::Execute, "script") => json!({ "type": "string", "description": "JavaScript (or TypeScript with language)" }),
    (Meta::Execute, "context") => json!({ "type": "object", "description": "Read-only data for the script" }),
    (Meta::Execute, "allowedTools") => {
      json!({ "type": "array", "items": { "type": "string" }, "description": "Only these tools" })
    }
    (Meta::Execute, "language") => json!({ "type": "string", "enum": ["javascript", "typescript"] }),
    (Meta::Execute, "input") => json!({ "description": "Read-only value as the global `input`" }),
    (Meta::Execute, "scriptName") => {
      json!({ "type": "string", "description": "Run a saved script instead: 'name' or 'name@version'" })
    }
    (Meta::Save, "name") => json!({ "type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$" }),
    (Meta::Save, "description") => json!({ "type": "string", "description": "What it does (search reads it)" }),
    (Meta::Save, "script") => json!({ "type": "string" }),
    (Meta::Save, "executionId") => json!({ "type": "string", "description": "Save the code of that run" }),
    (Meta::Save, "language") => json!({ "type": "string", "enum": ["javascript", "typescript"] }),
    (Meta::Save, "inputSchema") => json!({ "type": "object", "description": "JSON Schema of `input`" }),
    (Meta::Save, "tags") => json!({ "type": "array", "items": { "type": "string" } }),
    (Meta::Invoke, "tool") => json!({ "type": "string", "description": "Tool name" }),
    (Meta::Invoke, "input") => json!({ "type": "object", "description": "The tool's input" }),
    _ => return None,
  })
}

/// A definition's `inputSchema.properties`: the shown keys of `Meta::input_keys`, in its order.
fn properties(meta: Meta, names: &MetaNames, d: &Describing) -> Value {
  let mut out = serde_json::Map::new();
  for key in meta.input_keys().iter().filter(|k| k.shown) {
    if let Some(schema) = property(meta, key.name, names, d) {
      out.insert(key.name.to_string(), schema);
    }
  }
  Value::Object(out)
}
