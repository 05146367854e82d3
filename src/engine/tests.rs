//! The engine core without napi: modes × metadata, includeTools, direct calls, meta-tools, search,
//! describe and `CallToolResult` unwrapping.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::type_complexity, clippy::useless_vec)]

use serde_json::{json, Value};

use super::codecall::{Engine, EngineOptions};
use super::meta::{Meta, MetaNames};
use super::registry::{Mode, ToolDef};
use super::unwrap::{unwrap_json, unwrap_value, Unwrapped};
use crate::common::ErrorCode;
use crate::validator::SelfReference;

fn tool(v: Value) -> ToolDef {
  ToolDef::from_json(v, "tools[0]", &SelfReference::default()).expect("valid tool")
}

fn engine(mode: Mode, tools: Vec<Value>) -> Engine {
  let mut e = Engine::new(EngineOptions { mode, ..EngineOptions::default() }).expect("engine");
  e.set_tools(tools.into_iter().map(tool).collect()).expect("set");
  e
}

/// A JSON object from literal entries (the engine's test modules share it).
pub(crate) fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
  Value::Object(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// serde_json drops nested values recursively; take deep test values apart with a heap stack.
pub(crate) fn drop_iteratively(value: Value) {
  let mut stack = vec![value];
  while let Some(mut v) = stack.pop() {
    match &mut v {
      Value::Array(items) => stack.extend(std::mem::take(items)),
      Value::Object(map) => {
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
          if let Some(child) = map.remove(&k) {
            stack.push(child);
          }
        }
      }
      _ => {}
    }
  }
}

fn names(v: &[Value]) -> Vec<String> {
  v.iter().map(|t| t["name"].as_str().unwrap_or_default().to_string()).collect()
}

/// Every mode × every metadata combination: (listed, indexed), per seed 000 "Modes".
#[test]
fn modes_by_metadata_table() {
  use Mode::*;
  let n = None;
  let (t, f) = (Some(true), Some(false));
  // (visibleInListTools, enabledInCodeCall) → [codecall_only, codecall_opt_in, metadata_driven] as (listed, indexed)
  #[rustfmt::skip]
  let table: [((Option<bool>, Option<bool>), [(bool, bool); 3]); 9] = [
    ((n, n), [(false, true),  (false, false), (false, false)]),
    ((n, t), [(false, true),  (false, true),  (false, true)]),
    ((n, f), [(false, false), (false, false), (false, false)]),
    ((t, n), [(true, true),   (true, false),  (true, false)]),
    ((t, t), [(true, true),   (true, true),   (true, true)]),
    ((t, f), [(true, false),  (true, false),  (true, false)]),
    ((f, n), [(false, true),  (false, false), (false, false)]),
    ((f, t), [(false, true),  (false, true),  (false, true)]),
    ((f, f), [(false, false), (false, false), (false, false)]),
  ];
  for ((visible, enabled), expected) in table {
    let mut codecall = serde_json::Map::new();
    if let Some(v) = visible {
      codecall.insert("visibleInListTools".into(), json!(v));
    }
    if let Some(e) = enabled {
      codecall.insert("enabledInCodeCall".into(), json!(e));
    }
    let def = json!({ "name": "a:tool", "description": "a tool", "codecall": codecall });
    for (mode, (listed, indexed)) in [CodecallOnly, CodecallOptIn, MetadataDriven].into_iter().zip(expected) {
      let e = engine(mode, vec![def.clone()]);
      let listed_now = names(&e.list_tools()).contains(&"a:tool".to_string());
      let indexed_now = e.indexed("a:tool").is_some();
      assert_eq!((listed_now, indexed_now), (listed, indexed), "{mode:?} visible={visible:?} enabled={enabled:?}");
      assert_eq!(e.total_indexed(), usize::from(indexed));
      // internal overrides everything
      let mut internal = def.clone();
      internal["internal"] = json!(true);
      let e = engine(mode, vec![internal]);
      assert!(!names(&e.list_tools()).contains(&"a:tool".to_string()));
      assert!(e.indexed("a:tool").is_none());
    }
  }
}

#[test]
fn include_tools_applies_before_the_mode() {
  let mut def = tool(json!({ "name": "a:x", "codecall": { "enabledInCodeCall": true, "visibleInListTools": true } }));
  def.included = false;
  for mode in [Mode::CodecallOnly, Mode::CodecallOptIn, Mode::MetadataDriven] {
    let mut e = Engine::new(EngineOptions { mode, ..EngineOptions::default() }).expect("engine");
    e.set_tools(vec![def.clone()]).expect("set");
    assert!(e.indexed("a:x").is_none(), "{mode:?}: dropped before the mode's rules");
    assert!(!names(&e.list_tools()).contains(&"a:x".to_string()));
  }
}

#[test]
fn list_tools_is_meta_tools_then_visible_tools_in_host_order() {
  let e = engine(
    Mode::CodecallOnly,
    vec![
      json!({ "name": "b:visible", "codecall": { "visibleInListTools": true }, "appId": "b", "tags": ["x"] }),
      json!({ "name": "a:hidden" }),
      json!({ "name": "a:visible", "codecall": { "visibleInListTools": true }, "annotations": { "readOnlyHint": true } }),
    ],
  );
  let list = e.list_tools();
  assert_eq!(
    names(&list),
    ["codecall:search", "codecall:describe", "codecall:execute", "b:visible", "a:visible"].map(String::from)
  );
  // MCP shape: CodeCall's own fields are not shown; inputSchema always present.
  assert_eq!(list[3], json!({ "name": "b:visible", "inputSchema": { "type": "object" } }));
  assert_eq!(list[4]["annotations"], json!({ "readOnlyHint": true }));
}

#[test]
fn meta_tools_are_compact_and_named_by_prefix_and_separator() {
  let mut o = EngineOptions { direct_calls: true, ..EngineOptions::default() };
  let e = Engine::new(o.clone()).expect("engine");
  let meta = e.meta_tools();
  assert_eq!(names(&meta), ["codecall:search", "codecall:describe", "codecall:execute", "codecall:invoke"]);
  let bytes = serde_json::to_string(&meta).expect("json").len();
  assert!(bytes < 6 * 1024, "all four meta-tools are {bytes} bytes");
  for m in &meta {
    let d = m["description"].as_str().expect("description");
    assert!(d.contains("Example: {"), "{d}");
    let example = d.split("Example: ").nth(1).expect("example");
    let parsed: Value = serde_json::from_str(example).expect("the example is JSON");
    for key in m["inputSchema"]["required"].as_array().expect("required") {
      assert!(parsed.get(key.as_str().expect("key")).is_some(), "example has {key}");
    }
  }
  o.names = MetaNames::new(Some("cc".into()), Some("_".into())).expect("names");
  let e = Engine::new(o).expect("engine");
  assert_eq!(names(&e.meta_tools()), ["cc_search", "cc_describe", "cc_execute", "cc_invoke"]);
  assert_eq!(e.meta("cc_execute"), Some(Meta::Execute));
  assert_eq!(e.meta("codecall:execute"), None);
  assert!(
    e.reserved().matches("cc_execute") && e.reserved().matches("cc:search") && e.reserved().matches("codecall:x")
  );
  assert!(MetaNames::new(Some("bad prefix".into()), None).is_err());
  assert!(MetaNames::new(None, Some("/".into())).is_err());
  // invoke is not a meta-tool unless direct calls are enabled
  let e = Engine::new(EngineOptions::default()).expect("engine");
  assert_eq!(e.meta("codecall:invoke"), None);
  assert_eq!(e.meta_tools().len(), 3);
}

#[test]
fn tool_definitions_are_checked() {
  let r = SelfReference::default();
  for (bad, needle) in [
    (json!({}), "name must be a non-empty string"),
    (json!({ "name": "  " }), "name must be a non-empty string"),
    (json!({ "name": "codecall:search" }), "reserved"),
    (json!({ "name": "x", "tags": "a" }), "tags must be an array"),
    (json!({ "name": "x", "tags": [1] }), "tags[0] must be a string"),
    (json!({ "name": "x", "inputSchema": "object" }), "inputSchema must be an object"),
    (
      json!({ "name": "x", "codecall": { "enabledInCodeCall": "yes" } }),
      "codecall.enabledInCodeCall must be a boolean",
    ),
    (json!({ "name": "x", "internal": 1 }), "internal must be a boolean"),
    (json!({ "name": "x".repeat(300) }), "at most"),
    (json!([]), "must be an object"),
  ] {
    let e = ToolDef::from_json(bad.clone(), "tools[0]", &r).expect_err("rejected");
    assert!(e.message().contains(needle), "{bad} → {e}");
  }
}

#[test]
fn search_filters_merges_queries_and_counts() {
  let mut e = engine(
    Mode::CodecallOnly,
    vec![
      json!({ "name": "users:list", "appId": "users", "description": "List users with pagination" }),
      json!({ "name": "users:get", "appId": "users", "description": "Get a user by id" }),
      json!({ "name": "billing:listInvoices", "appId": "billing", "description": "List invoices of a user", "source": "openapi", "tags": ["money"] }),
      json!({ "name": "hidden:list", "description": "List hidden things", "internal": true }),
    ],
  );
  let r = e.search(&json!({ "query": "list" })).expect("search");
  assert_eq!(r["totalIndexed"], 3);
  let found = names(r["tools"].as_array().expect("tools"));
  assert!(found.contains(&"users:list".to_string()) && !found.contains(&"hidden:list".to_string()));
  let hit = &r["tools"][0];
  for key in ["name", "appId", "description", "source", "score"] {
    assert!(hit.get(key).is_some(), "{key} in {hit}");
  }
  let r = e.search(&json!({ "query": "list", "filter": { "appIds": ["billing"] } })).expect("search");
  assert_eq!(names(r["tools"].as_array().expect("tools")), ["billing:listInvoices"]);
  let r = e.search(&json!({ "query": "list", "filter": { "includeOpenApi": false } })).expect("search");
  assert!(!names(r["tools"].as_array().expect("tools")).contains(&"billing:listInvoices".to_string()));
  let r = e.search(&json!({ "query": "list", "filter": { "includeInline": false } })).expect("search");
  assert_eq!(names(r["tools"].as_array().expect("tools")), ["billing:listInvoices"]);
  let r =
    e.search(&json!({ "query": "list", "filter": { "includeInline": false, "includeOpenApi": false } })).expect("s");
  assert_eq!(r["tools"], json!([]));
  let r = e.search(&json!({ "query": "list", "topK": 1 })).expect("search");
  assert_eq!(r["tools"].as_array().expect("tools").len(), 1);
  let r = e.search(&json!({ "queries": ["invoices", "get user by id"] })).expect("search");
  let found = names(r["tools"].as_array().expect("tools"));
  assert_eq!(&found[..1], ["billing:listInvoices"].map(String::from).as_slice().get(..1).expect("x"));
  assert!(found.contains(&"users:get".to_string()));
  for bad in [
    json!({}),
    json!({ "query": 1 }),
    json!({ "query": "x", "topK": 0 }),
    json!({ "query": "x", "topK": 1.5 }),
    json!({ "query": "x", "filter": { "appIds": "users" } }),
    json!({ "query": "x", "filter": [] }),
    json!("x"),
  ] {
    assert!(e.search(&bad).is_err(), "{bad}");
  }
}

#[test]
fn describe_finds_only_indexed_tools_and_respects_max_definitions() {
  let mut o = EngineOptions { max_definitions: 2, ..EngineOptions::default() };
  o.mode = Mode::CodecallOnly;
  let mut e = Engine::new(o).expect("engine");
  e.set_tools(
    ["a:1", "a:2", "a:3"]
      .iter()
      .map(|n| tool(json!({ "name": n, "inputSchema": { "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] } })))
      .chain([tool(json!({ "name": "a:off", "codecall": { "enabledInCodeCall": false } })), tool(json!({ "name": "a:int", "internal": true }))])
      .collect(),
  )
  .expect("set");
  let r = e
    .describe(&json!({ "toolNames": ["a:1", "codecall:execute", "a:off", "a:int", "nope", "a:1", "a:2", "a:3"] }))
    .expect("d");
  assert_eq!(names(r["tools"].as_array().expect("tools")), ["a:1", "a:2"]);
  assert_eq!(r["notFound"], json!(["codecall:execute", "a:off", "a:int", "nope"]));
  assert_eq!(r["omitted"], json!(["a:3"]));
  let t = &r["tools"][0];
  assert_eq!(t["outputSchema"], Value::Null);
  assert_eq!(t["annotations"], json!({}));
  assert!(t["typescript"].as_str().expect("ts").contains("'a:1'"));
  // seed 000's form, with a per-call max
  let r = e.describe(&json!({ "tools": ["a:1", "a:2"], "max": 1 })).expect("d");
  assert_eq!(names(r["tools"].as_array().expect("tools")), ["a:1"]);
  assert!(r.get("notFound").is_none());
  assert!(e.describe(&json!({ "toolNames": "a:1" })).is_err());
  assert!(e.describe(&json!({})).is_err());
}

#[test]
fn direct_calls_allowlist_and_filter() {
  let tools = vec![
    json!({ "name": "a:one", "appId": "a" }),
    json!({ "name": "a:two", "appId": "a" }),
    json!({ "name": "a:off", "codecall": { "enabledInCodeCall": false } }),
  ];
  let build = |o: EngineOptions| {
    let mut e = Engine::new(o).expect("engine");
    e.set_tools(tools.iter().cloned().map(tool).collect()).expect("set");
    e
  };
  let code = |r: Result<(), super::codecall::Refusal>| r.err().map(|r| r.code);
  let e = build(EngineOptions::default());
  assert_eq!(code(e.check_invoke("a:one", |_| true)), Some(ErrorCode::AccessDenied), "disabled");
  let e = build(EngineOptions { direct_calls: true, ..EngineOptions::default() });
  assert_eq!(code(e.check_invoke("a:one", |_| true)), None);
  assert_eq!(code(e.check_invoke("a:off", |_| true)), Some(ErrorCode::ToolNotFound));
  assert_eq!(code(e.check_invoke("nope", |_| true)), Some(ErrorCode::ToolNotFound));
  assert_eq!(code(e.check_invoke("codecall:execute", |_| true)), Some(ErrorCode::SelfReferenceBlocked));
  assert_eq!(code(e.check_invoke("a:one", |t| t.name == "a:two")), Some(ErrorCode::AccessDenied), "filter");
  let e = build(EngineOptions {
    direct_calls: true,
    direct_allowed: Some(["a:two".to_string(), "a:off".to_string()].into_iter().collect()),
    ..EngineOptions::default()
  });
  assert_eq!(code(e.check_invoke("a:one", |_| true)), Some(ErrorCode::AccessDenied), "allowlist");
  assert_eq!(code(e.check_invoke("a:two", |_| true)), None);
  assert_eq!(
    code(e.check_invoke("a:off", |_| true)),
    Some(ErrorCode::ToolNotFound),
    "the allowlist does not bypass the index"
  );
}

#[test]
fn changes_are_reported_only_when_visible() {
  let mut e = engine(Mode::CodecallOptIn, vec![json!({ "name": "a:x" })]);
  // not listed, not indexed in opt-in: invisible changes
  assert!(!e.upsert_tools(vec![tool(json!({ "name": "a:x", "description": "changed" }))]).expect("u"));
  assert!(!e.upsert_tools(vec![tool(json!({ "name": "a:new" }))]).expect("u"));
  assert!(e.upsert_tools(vec![tool(json!({ "name": "a:x", "codecall": { "enabledInCodeCall": true } }))]).expect("u"));
  assert!(!e
    .upsert_tools(vec![tool(json!({ "name": "a:x", "codecall": { "enabledInCodeCall": true } }))])
    .expect("same"));
  assert!(e.indexed("a:x").is_some());
  assert!(!e.remove_tools(&["a:new".into(), "unknown".into()]));
  assert!(e.remove_tools(&["a:x".into()]));
  assert!(e.indexed("a:x").is_none() && e.total_indexed() == 0);
  assert!(e.callable().read().expect("lock").is_empty());
  // a batch naming a tool twice: the last wins
  assert!(e
    .upsert_tools(vec![
      tool(json!({ "name": "a:y", "codecall": { "enabledInCodeCall": true } })),
      tool(json!({ "name": "a:y" })),
    ])
    .expect("u")
    .eq(&false));
  assert!(e.indexed("a:y").is_none() && e.total_indexed() == 0);
  assert!(e.set_tools(vec![tool(json!({ "name": "a:z", "codecall": { "visibleInListTools": true } }))]).expect("s"));
  assert!(!e.set_tools(vec![tool(json!({ "name": "a:z", "codecall": { "visibleInListTools": true } }))]).expect("s"));
}

#[test]
fn call_tool_results_are_unwrapped() {
  let ok =
    |v: Value| unwrap_json(Some(v.to_string())).expect("ok").map(|s| serde_json::from_str::<Value>(&s).expect("json"));
  assert_eq!(ok(json!({ "content": [{ "type": "text", "text": "{\"a\":1}" }] })), Some(json!({ "a": 1 })));
  assert_eq!(ok(json!({ "content": [{ "type": "text", "text": "plain" }] })), Some(json!("plain")));
  assert_eq!(
    ok(json!({ "content": [{ "type": "text", "text": "x" }], "structuredContent": { "n": 2 } })),
    Some(json!({ "n": 2 }))
  );
  let two = json!([{ "type": "text", "text": "a" }, { "type": "image", "data": "AA==", "mimeType": "image/png" }]);
  assert_eq!(ok(json!({ "content": two.clone() })), Some(two));
  assert_eq!(ok(json!({ "content": [] })), Some(json!([])));
  // not envelopes: unchanged
  for v in [
    json!({ "content": "text" }),
    json!({ "content": [1] }),
    json!({ "content": [], "other": 1 }),
    json!([1]),
    json!("s"),
    json!(null),
  ] {
    assert_eq!(ok(v.clone()), Some(v));
  }
  assert_eq!(unwrap_json(None), Ok(None));
  let err = unwrap_json(Some(
    json!({ "isError": true, "content": [{ "type": "text", "text": "Rate limit" }], "structuredContent": { "retryIn": 5 } }).to_string(),
  ))
  .expect_err("error");
  assert_eq!(err.message, "Rate limit");
  assert_eq!(err.code, None, "becomes TOOL_EXECUTION_ERROR");
  assert_eq!(err.details_json.as_deref(), Some("{\"retryIn\":5}"));
  let Unwrapped::Error(e) = unwrap_value(json!({ "isError": true, "content": [] }).as_object().cloned().expect("o"))
  else {
    panic!("error expected");
  };
  assert!(!e.message.is_empty());
}

/// A script reads the callable set from another thread while the host replaces the tools: a tool
/// in both the old and the new list must never be missing in between (it once was: set_tools
/// cleared the set, then re-inserted tool by tool).
#[test]
fn set_tools_never_hides_a_kept_tool_from_a_running_script() {
  use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
  use std::sync::Arc;
  let tools =
    || (0..200).map(|i| tool(json!({ "name": format!("app:t{i}"), "description": "a tool" }))).collect::<Vec<_>>();
  let mut e = engine(Mode::CodecallOnly, vec![]);
  e.set_tools(tools()).expect("set");
  let callable = e.callable();
  let stop = Arc::new(AtomicBool::new(false));
  let missing = Arc::new(AtomicUsize::new(0));
  let reader = {
    let (stop, missing) = (stop.clone(), missing.clone());
    std::thread::spawn(move || {
      let mut reads = 0u64;
      while !stop.load(Ordering::Relaxed) || reads < 1000 {
        let c = callable.read().unwrap();
        if !c.contains_key("app:t0") || !c.contains_key("app:t199") {
          missing.fetch_add(1, Ordering::Relaxed);
        }
        drop(c);
        reads += 1;
      }
    })
  };
  for _ in 0..200 {
    e.set_tools(tools()).expect("set");
  }
  stop.store(true, Ordering::Relaxed);
  reader.join().unwrap();
  assert_eq!(missing.load(Ordering::Relaxed), 0);
}

// ---- execute, without napi ------------------------------------------------------------------

mod execute {
  use std::sync::mpsc::{channel, Sender};
  use std::sync::{Arc, Mutex};
  use std::time::Duration;

  use serde_json::{json, Value};

  use super::{engine, Mode};
  use crate::common::InvalidArgument;
  use crate::sandbox::Runner;
  use crate::sandbox::Warnings;
  use crate::sandbox::{CallResult, Event, Host, HostCall, Reply};
  use crate::sandbox::{Completed, Outcome};
  use crate::sandbox::{ExecuteConfig, Isolation, SandboxConfig};

  /// The host's own pipeline, faked: answers every tool call with an MCP `CallToolResult` whose
  /// structured content echoes the call, and records what it was asked.
  struct Pipeline {
    calls: Mutex<Vec<String>>,
    done: Mutex<Sender<Completed>>,
  }

  impl Host for Pipeline {
    fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
      self.calls.lock().unwrap().push(call.name.clone());
      let input: Value = serde_json::from_str(&call.args_json).unwrap();
      let result = json!({ "content": [{ "type": "text", "text": "ok" }], "structuredContent": { "tool": call.name, "input": input } });
      std::thread::spawn(move || reply.send(CallResult::Ok(Some(result.to_string()))));
    }
    fn event(&self, _: Event) {}
    fn get_tool(&self, _: &str, _: Duration) -> Option<String> {
      panic!("the engine answers getTool from its registry; the host's is never asked")
    }
    fn complete(&self, completed: Completed) {
      let _ = self.done.lock().unwrap().send(completed);
    }
  }

  fn run(input: Value) -> (Result<Completed, InvalidArgument>, Vec<String>) {
    let e = engine(
      Mode::CodecallOnly,
      vec![
        json!({ "name": "users:list", "inputSchema": { "type": "object" } }),
        json!({ "name": "users:hidden", "inputSchema": { "type": "object" }, "codecall": { "enabledInCodeCall": false } }),
      ],
    );
    let config = Arc::new(SandboxConfig { isolation: Isolation::Thread, ..SandboxConfig::default() });
    let runner = Runner::new(config.clone(), Arc::new(Mutex::new(Warnings::default()))).unwrap();
    let (tx, rx) = channel();
    let host = Arc::new(Pipeline { calls: Mutex::new(Vec::new()), done: Mutex::new(tx) });
    let started = e.execute(&runner, "exec-1".into(), input, ExecuteConfig::new(&config), host.clone());
    let result = started.map(|()| rx.recv_timeout(Duration::from_secs(30)).expect("a result"));
    let calls = host.calls.lock().unwrap().clone();
    (result, calls)
  }

  fn ok(c: &Completed) -> Value {
    match &c.outcome {
      Outcome::Ok { result_json } => serde_json::from_str(result_json.as_deref().unwrap_or("null")).unwrap(),
      other => panic!("expected ok, got {other:?}"),
    }
  }

  #[test]
  fn a_plan_calls_indexed_tools_through_the_host_and_sees_unwrapped_results() {
    let (done, calls) = run(json!({ "script": "const r = await callTool('users:list', { limit: 2 }); return r" }));
    assert_eq!(ok(&done.unwrap()), json!({ "tool": "users:list", "input": { "limit": 2 } }));
    assert_eq!(calls, vec!["users:list"]);
  }

  #[test]
  fn tools_outside_the_index_are_not_found_before_the_host_is_asked() {
    for name in ["users:hidden", "nobody:home"] {
      let (done, calls) = run(json!({ "script": format!("return await callTool('{name}', {{}})") }));
      assert_eq!(done.unwrap().outcome.code().as_deref(), Some("TOOL_NOT_FOUND"), "{name}");
      assert!(calls.is_empty(), "{name}: the host saw {calls:?}");
    }
  }

  #[test]
  fn input_settings_reach_the_execution() {
    let (done, calls) = run(json!({
      "script": "const x: number = input.n; return { x, who: codecallContext.who, r: await callTool('users:list', {}).catch((e) => e.code) }",
      "language": "typescript",
      "context": { "who": "ann" },
      "input": { "n": 7 },
      "allowedTools": ["users:other"],
    }));
    assert_eq!(ok(&done.unwrap()), json!({ "x": 7, "who": "ann", "r": "ACCESS_DENIED" }));
    assert!(calls.is_empty());
    // Optional settings: omitted or null mean the defaults.
    let (done, _) = run(json!({ "script": "return 1", "language": null, "context": null, "allowedTools": null }));
    assert_eq!(ok(&done.unwrap()), json!(1));
  }

  #[test]
  fn bad_input_is_an_argument_error_and_runs_nothing() {
    for (input, message) in [
      (json!("return 1"), "input must be an object"),
      (json!({}), "input.script must be a string"),
      (
        json!({ "script": "return 1", "language": "python" }),
        "input.language must be 'javascript' or 'typescript' (got 'python')",
      ),
      (json!({ "script": "return 1", "context": [1] }), "input.context must be an object"),
      (json!({ "script": "return 1", "allowedTools": [1] }), "input.allowedTools[0] must be a string"),
      (json!({ "script": "return 1", "allowedTools": "a" }), "input.allowedTools must be an array of strings"),
      (
        json!({ "script": "return 1", "timeoutMs": 5000 }),
        "codecall:execute: unknown key 'timeoutMs' (allowed: script, context, allowedTools, language, input)",
      ),
    ] {
      let (done, calls) = run(input);
      assert_eq!(done.unwrap_err().message(), message);
      assert!(calls.is_empty());
    }
  }
}

/// `codecall:invoke` through a fake host pipeline: the same steps the binding drives on Node.
mod invoke {
  use std::sync::mpsc::{channel, Receiver};
  use std::sync::{Arc, Mutex};
  use std::time::Duration;

  use serde_json::{json, Value};

  use super::{engine, EngineOptions, Mode};
  use crate::common::InvalidArgument;
  use crate::engine::codecall::Engine;
  use crate::sandbox::Completed;
  use crate::sandbox::{CallResult, CallTarget, Event, Host, HostCall, HostFailure, Reply};

  /// Answers each tool by name: `ok` with an MCP result echoing the input, `mcp_error` with an
  /// `isError` result, `throws` with a host failure carrying a code and details. Records calls
  /// and events in order.
  #[derive(Default)]
  struct Pipeline {
    log: Mutex<Vec<String>>,
    calls: Mutex<Vec<HostCall>>,
    events: Mutex<Vec<Event>>,
  }

  impl Host for Pipeline {
    fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
      self.log.lock().unwrap().push(format!("call {}", call.name));
      self.calls.lock().unwrap().push(call.clone());
      let answer = match call.name.as_str() {
        "t:ok" => CallResult::Ok(Some(
          json!({ "content": [{ "type": "text", "text": "x" }], "structuredContent": { "echo": serde_json::from_str::<Value>(&call.args_json).unwrap() } })
            .to_string(),
        )),
        "t:mcp_error" => {
          CallResult::Ok(Some(json!({ "isError": true, "content": [{ "type": "text", "text": "upstream broke" }] }).to_string()))
        }
        "t:undefined" => CallResult::Ok(None),
        _ => CallResult::Err(HostFailure {
          message: "denied by policy".into(),
          code: Some("ACCESS_DENIED".into()),
          details_json: Some(r#"{"rule":7}"#.into()),
        }),
      };
      // Answered from another thread, as a real pipeline would.
      std::thread::spawn(move || reply.send(answer));
    }
    fn event(&self, event: Event) {
      let kind = match &event {
        Event::ToolCallStart { .. } => "start",
        Event::ToolCallEnd { .. } => "end",
        _ => "other",
      };
      self.log.lock().unwrap().push(kind.into());
      self.events.lock().unwrap().push(event);
    }
    fn get_tool(&self, _: &str, _: Duration) -> Option<String> {
      None
    }
    fn complete(&self, _: Completed) {
      panic!("a direct call is not an execution")
    }
  }

  fn direct() -> Engine {
    let mut e = Engine::new(EngineOptions { direct_calls: true, ..EngineOptions::default() }).unwrap();
    let tools = ["t:ok", "t:mcp_error", "t:undefined", "t:throws"].iter().map(|n| super::tool(json!({ "name": n })));
    e.set_tools(tools.collect()).unwrap();
    e
  }

  fn invoke(e: &Engine, input: Value, filter: bool) -> (Result<Value, InvalidArgument>, Arc<Pipeline>) {
    let host = Arc::new(Pipeline::default());
    let (tx, rx) = channel();
    let started = e.invoke(input, "invoke-1", |_| filter, host.clone(), move |v| tx.send(v).unwrap());
    (started.map(|()| wait(&rx)), host)
  }

  fn wait(rx: &Receiver<Value>) -> Value {
    rx.recv_timeout(Duration::from_secs(10)).expect("a result")
  }

  #[test]
  fn the_hosts_denied_tools_name_their_policy() {
    use crate::common::Glob;
    use crate::engine::invoke::InvokeInput;
    let e = direct();
    let denied =
      [(Glob::new("x:*"), "MCP server 'x' is not in allowedServers".to_string()), (Glob::new("t:ok"), "no".into())];
    let code = |tool: &str| {
      let input = InvokeInput::read(json!({ "tool": tool, "input": {} }), "codecall:invoke").unwrap();
      match e.begin_invoke(input, "invoke-1", &denied, |_| true) {
        Ok(_) => ("ok".to_string(), String::new()),
        Err(v) => {
          (v["error"]["code"].as_str().unwrap().to_string(), v["error"]["message"].as_str().unwrap().to_string())
        }
      }
    };
    assert_eq!(
      code("x:gone"),
      ("ACCESS_DENIED".into(), "Tool 'x:gone' is not allowed: MCP server 'x' is not in allowedServers".into())
    );
    assert_eq!(code("t:ok"), ("ACCESS_DENIED".into(), "Tool 't:ok' is not allowed: no".into()));
    assert_eq!(code("t:throws").0, "ok");
    assert_eq!(code("y:gone").0, "TOOL_NOT_FOUND");
    assert_eq!(code("codecall:execute").0, "SELF_REFERENCE_BLOCKED");
  }

  #[test]
  fn one_call_through_the_host_with_events_around_it() {
    let (result, host) = invoke(&direct(), json!({ "tool": "t:ok", "input": { "n": 1 } }), true);
    assert_eq!(result.unwrap(), json!({ "status": "ok", "result": { "echo": { "n": 1 } } }));
    assert_eq!(*host.log.lock().unwrap(), ["start", "call t:ok", "end"]);
    let call = host.calls.lock().unwrap()[0].clone();
    assert_eq!((call.execution_id.as_str(), call.call_id.as_str()), ("invoke-1", "invoke-1"));
    assert_eq!((call.target, call.args_json.as_str()), (CallTarget::Tool, r#"{"n":1}"#));
    match &host.events.lock().unwrap()[1] {
      Event::ToolCallEnd { ok, error, input_json, tool_name, duration_ms, .. } => {
        assert!(*ok && error.is_none() && *duration_ms >= 0.0);
        assert_eq!((input_json.as_str(), tool_name.as_str()), (r#"{"n":1}"#, "t:ok"));
      }
      other => panic!("expected tool_call_end, got {other:?}"),
    };
  }

  #[test]
  fn host_failures_and_mcp_errors_are_error_results() {
    let (result, host) = invoke(&direct(), json!({ "tool": "t:throws", "input": { "a": [1] } }), true);
    assert_eq!(
      result.unwrap(),
      json!({ "status": "error", "error": { "code": "ACCESS_DENIED", "message": "denied by policy", "toolName": "t:throws", "toolInput": { "a": [1] }, "details": { "rule": 7 } } })
    );
    match &host.events.lock().unwrap()[1] {
      Event::ToolCallEnd { ok, error, .. } => {
        assert!(!*ok);
        assert_eq!(error.clone(), Some(("ACCESS_DENIED".to_string(), "denied by policy".to_string())));
      }
      other => panic!("expected tool_call_end, got {other:?}"),
    };
    let (result, _) = invoke(&direct(), json!({ "tool": "t:mcp_error" }), true);
    let result = result.unwrap();
    assert_eq!(result["error"]["code"], "TOOL_EXECUTION_ERROR");
    assert_eq!(result["error"]["message"], "upstream broke");
    assert_eq!(result["error"]["toolInput"], json!({}));
    // A tool that returns nothing: ok, no `result` key.
    let (result, _) = invoke(&direct(), json!({ "tool": "t:undefined", "input": null }), true);
    assert_eq!(result.unwrap(), json!({ "status": "ok" }));
  }

  #[test]
  fn refusals_answer_at_once_and_the_host_hears_nothing() {
    let disabled = engine(Mode::CodecallOnly, vec![json!({ "name": "t:ok" })]);
    for (e, tool, filter, code) in [
      (&disabled, "t:ok", true, "ACCESS_DENIED"),
      (&direct(), "t:ok", false, "ACCESS_DENIED"),
      (&direct(), "t:nope", true, "TOOL_NOT_FOUND"),
      (&direct(), "codecall:search", true, "SELF_REFERENCE_BLOCKED"),
    ] {
      let (result, host) = invoke(e, json!({ "tool": tool, "input": { "q": 1 } }), filter);
      let result = result.unwrap();
      assert_eq!(result["status"], "error", "{tool}");
      assert_eq!(result["error"]["code"], code, "{tool}");
      assert_eq!((&result["error"]["toolName"], &result["error"]["toolInput"]), (&json!(tool), &json!({ "q": 1 })));
      assert!(host.log.lock().unwrap().is_empty(), "{tool}: {:?}", host.log.lock().unwrap());
    }
  }

  #[test]
  fn bad_input_is_an_argument_error_and_calls_nothing() {
    for (input, message) in [
      (json!(null), "input must be an object"),
      (json!(["t:ok"]), "input must be an object"),
      (json!({}), "input.tool must be a string"),
      (json!({ "tool": 7 }), "input.tool must be a string"),
    ] {
      let (result, host) = invoke(&direct(), input, true);
      assert_eq!(result.unwrap_err().message(), message);
      assert!(host.log.lock().unwrap().is_empty());
    }
  }
}

/// Each meta-tool's input has one shape, `Meta::input_keys`: the definition for models shows its
/// shown keys, the reader reads every key and refuses any other (a wrong value is refused by the
/// key's name; a required key missing is refused), and `CodeCall<Verb>Input` in `src/types.d.ts` lists the same
/// keys, optional exactly when not required.
mod input_shapes {
  use std::sync::Arc;

  use serde_json::{json, Map, Value};

  use super::{tool, Engine, EngineOptions, Meta, MetaNames};
  use crate::common::InvalidArgument;
  use crate::engine::meta::{definitions, Describing, SEARCH_FILTER_KEYS};
  use crate::sandbox::{ExecuteConfig, SandboxConfig};

  /// Keys whose value may be anything (so no value is wrong).
  const ANY_VALUE: [(Meta, &str); 2] = [(Meta::Execute, "input"), (Meta::Invoke, "input")];
  /// Seed 000's spelling, read only when the other key is absent.
  const ALTERNATIVE: [(Meta, &str, &str); 1] = [(Meta::Describe, "tools", "toolNames")];

  fn engine() -> Engine {
    let mut e = Engine::new(EngineOptions { direct_calls: true, ..EngineOptions::default() }).unwrap();
    e.set_tools(vec![tool(json!({ "name": "a:one" }))]).unwrap();
    e
  }

  /// A minimal valid input of `meta`.
  fn valid(meta: Meta) -> Map<String, Value> {
    let v = match meta {
      Meta::Search => json!({ "query": "one" }),
      Meta::Describe => json!({ "toolNames": ["a:one"] }),
      Meta::Execute => json!({ "script": "return 1" }),
      Meta::Invoke => json!({ "tool": "a:one" }),
      Meta::Save => json!({ "name": "one", "description": "d", "script": "return 1" }),
    };
    v.as_object().cloned().unwrap()
  }

  /// Reads `input` as the meta-tool's reader does; only the verdict on the input matters.
  fn read(e: &mut Engine, meta: Meta, input: Value) -> Result<(), InvalidArgument> {
    match meta {
      Meta::Search => e.search(&input).map(drop).map_err(|err| match err {
        crate::engine::EngineError::InvalidArgument(a) => a,
        other => panic!("{other}"),
      }),
      Meta::Describe => e.describe(&input).map(drop),
      Meta::Execute => {
        let config = Arc::new(SandboxConfig::default());
        e.read_execute_input(input, &mut ExecuteConfig::new(&config)).map(drop)
      }
      Meta::Invoke => crate::engine::InvokeInput::read(input, "codecall:invoke").map(drop),
      Meta::Save => crate::engine::scripts::SaveInput::read(input, "codecall:save").map(drop),
    }
  }

  #[test]
  fn the_definitions_show_the_shown_keys_in_order() {
    let d = Describing {
      top_k: 8,
      max_definitions: 8,
      allow_loops: false,
      allow_console: true,
      timeout_ms: 3500,
      direct_calls: true,
      scripts: true,
    };
    let defs = definitions(&Default::default(), &d);
    for (meta, def) in Meta::ALL.into_iter().zip(&defs) {
      let schema = &def["inputSchema"];
      let shown: Vec<&str> = meta.input_keys().iter().filter(|k| k.shown).map(|k| k.name).collect();
      let listed: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
      assert_eq!(listed, shown, "{meta:?}");
      let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
      for key in meta.input_keys() {
        assert!(!key.required || required.contains(&key.name), "{meta:?}: {} is required but not marked so", key.name);
      }
      assert!(required.iter().all(|r| shown.contains(r)), "{meta:?}: {required:?}");
    }
  }

  #[test]
  fn the_readers_read_every_key_and_only_those() {
    // Saved scripts on: execute's `scriptName` is one of its keys then.
    let store = crate::engine::scripts::SqliteStore::open(":memory:").unwrap();
    let mut e = engine().with_store(Arc::new(store));
    for meta in Meta::ALL {
      read(&mut e, meta, Value::Object(valid(meta))).unwrap_or_else(|err| panic!("{meta:?}: {err}"));
      // A key the shape does not have is refused, whatever its value, with the allowed keys
      // (the shown ones) named; every key of the shape, `null`, is read as absent.
      let shown: Vec<&str> = meta.input_keys().iter().filter(|k| k.shown).map(|k| k.name).collect();
      for value in [json!({ "x": [1] }), Value::Null] {
        let mut extra = valid(meta);
        extra.insert("notAKey".into(), value);
        let err = read(&mut e, meta, Value::Object(extra)).expect_err("notAKey");
        let name = format!("codecall:{}", meta.verb());
        assert_eq!(err.message(), format!("{name}: unknown key 'notAKey' (allowed: {})", shown.join(", ")));
      }
      // (Not the keys the minimal input holds: search's query, describe's toolNames.)
      for key in meta.input_keys().iter().filter(|k| !k.required && !valid(meta).contains_key(k.name)) {
        let mut nulled = valid(meta);
        nulled.insert(key.name.into(), Value::Null);
        read(&mut e, meta, Value::Object(nulled)).unwrap_or_else(|err| panic!("{meta:?}.{} = null: {err}", key.name));
      }
      for key in meta.input_keys() {
        if key.required {
          let mut missing = valid(meta);
          missing.remove(key.name);
          let err = read(&mut e, meta, Value::Object(missing)).expect_err(key.name);
          assert!(err.message().contains(&format!("input.{}", key.name)), "{meta:?}: {err}");
        }
        if ANY_VALUE.contains(&(meta, key.name)) {
          continue;
        }
        // `true` is a wrong value for every key that is not a flag (no top-level key is).
        let mut wrong = valid(meta);
        for (_, _, instead) in ALTERNATIVE.iter().filter(|(m, k, _)| *m == meta && *k == key.name) {
          wrong.remove(*instead);
        }
        wrong.insert(key.name.into(), json!(true));
        let err = read(&mut e, meta, Value::Object(wrong)).expect_err(key.name);
        assert!(err.message().starts_with(&format!("input.{} ", key.name)), "{meta:?}.{}: {err}", key.name);
      }
    }
  }

  /// `export interface <name> { key?: … }` in `src/types.d.ts`: its top-level keys, with whether
  /// each is optional.
  fn typescript_interface(name: &str) -> Vec<(String, bool)> {
    let source = include_str!("../types.d.ts");
    let head = format!("export interface {name} {{");
    let Some(start) = source.find(&head) else { return Vec::new() };
    let mut keys = Vec::new();
    let mut depth = 1;
    for line in source[start + head.len()..].lines() {
      let trimmed = line.trim();
      if depth == 1 && !trimmed.starts_with("/**") && !trimmed.starts_with('*') {
        let ident: String = trimmed.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let rest = &trimmed[ident.len()..];
        if !ident.is_empty() && (rest.starts_with("?:") || rest.starts_with(':')) {
          keys.push((ident, rest.starts_with('?')));
        }
      }
      depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
      if depth <= 0 {
        break;
      }
    }
    keys
  }

  #[test]
  fn the_typescript_inputs_have_the_same_keys() {
    for meta in Meta::ALL {
      let verb = meta.verb();
      let name = format!("CodeCall{}{}Input", verb[..1].to_uppercase(), &verb[1..]);
      let rust: Vec<(String, bool)> = meta.input_keys().iter().map(|k| (k.name.to_string(), !k.required)).collect();
      assert_eq!(typescript_interface(&name), rust, "{name}");
    }
  }

  #[test]
  fn unknown_keys_are_named_as_the_client_called_the_tool() {
    let names = MetaNames::new(None, Some("_".into())).unwrap();
    let mut e = Engine::new(EngineOptions { direct_calls: true, names, ..EngineOptions::default() }).unwrap();
    e.set_tools(vec![tool(json!({ "name": "a:one" }))]).unwrap();
    let config = Arc::new(SandboxConfig::default());
    let err = e
      .read_execute_input(json!({ "script": "return 1", "timeoutMs": 5000 }), &mut ExecuteConfig::new(&config))
      .unwrap_err();
    assert_eq!(
      err.message(),
      "codecall_execute: unknown key 'timeoutMs' (allowed: script, context, allowedTools, language, input)"
    );
    // Seed 000's describe keys stay accepted, though only toolNames is offered.
    assert!(e.describe(&json!({ "tools": ["a:one"], "max": 1 })).is_ok());
    let err = e.describe(&json!({ "toolNames": ["a:one"], "names": [] })).unwrap_err();
    assert_eq!(err.message(), "codecall_describe: unknown key 'names' (allowed: toolNames)");
    // The first unknown key as sent; a long one is cut.
    let long = "k".repeat(100);
    let mut input = Map::new();
    input.insert("query".into(), json!("one"));
    input.insert(long.clone(), json!(1));
    input.insert("limit".into(), json!(1));
    let err = read(&mut e, Meta::Search, Value::Object(input)).unwrap_err();
    assert_eq!(
      err.message(),
      format!("codecall_search: unknown key '{}…' (allowed: query, queries, topK, filter)", &long[..64])
    );
  }

  #[test]
  fn search_filter_keys_are_closed_too() {
    let mut e = engine();
    for filter in [json!({}), json!({ "appIds": null, "tags": null, "includeOpenApi": null, "includeInline": null })] {
      read(&mut e, Meta::Search, json!({ "query": "one", "filter": filter })).unwrap();
    }
    let err = read(&mut e, Meta::Search, json!({ "query": "one", "filter": { "appId": ["a"] } })).unwrap_err();
    assert_eq!(
      err.message(),
      "codecall:search: unknown key 'filter.appId' (allowed in filter: appIds, tags, includeOpenApi, includeInline)"
    );
    // The definition's filter schema has the same keys.
    let d = Describing {
      top_k: 8,
      max_definitions: 8,
      allow_loops: false,
      allow_console: true,
      timeout_ms: 1,
      direct_calls: false,
      scripts: false,
    };
    let defs = definitions(&Default::default(), &d);
    let keys: Vec<&str> = defs[0]["inputSchema"]["properties"]["filter"]["properties"]
      .as_object()
      .unwrap()
      .keys()
      .map(String::as_str)
      .collect();
    assert_eq!(keys, SEARCH_FILTER_KEYS);
  }
}
