//! The sandbox core from Rust: a pool, a fake host, and scripts. The JS-facing contract is tested
//! again through napi in `__test__/`.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::bridge::{CallResult, CallTarget, Event, HostCall, HostFailure, Reply};
use super::config::{ExecuteConfig, SandboxConfig};
use super::outcome::{Completed, Outcome};
use super::pool::Pool;
use super::shared::{Host, Shared};
use crate::common::{ErrorCode, Preset};

type Handler = dyn Fn(&HostCall) -> CallResult + Send + Sync;

struct TestHost {
  handler: Box<Handler>,
  events: Mutex<Vec<Event>>,
  done: Mutex<Sender<Completed>>,
  tools: Option<Vec<String>>,
}

impl Host for TestHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    let result = (self.handler)(&call);
    // Answer from another thread, as a real host does.
    std::thread::spawn(move || reply.send(result));
  }
  fn event(&self, event: Event) {
    if let Ok(mut events) = self.events.lock() {
      events.push(event);
    }
  }
  fn get_tool(&self, name: &str, _timeout: Duration) -> Option<String> {
    let tools = self.tools.as_ref()?;
    tools.iter().any(|t| t == name).then(|| format!(r#"{{"name":"{name}","description":"d","inputSchema":{{}}}}"#))
  }
  fn complete(&self, completed: Completed) {
    if let Ok(done) = self.done.lock() {
      let _ = done.send(completed);
    }
  }
}

fn echo() -> Box<Handler> {
  Box::new(|call: &HostCall| CallResult::Ok(Some(format!(r#"{{"tool":"{}","input":{}}}"#, call.name, call.args_json))))
}

struct Run {
  completed: Completed,
  events: Vec<Event>,
}

fn run_with(
  script: &str,
  sandbox: SandboxConfig,
  exec: impl FnOnce(&mut ExecuteConfig),
  handler: Box<Handler>,
  tools: Option<Vec<String>>,
) -> Run {
  let sandbox = Arc::new(sandbox);
  let pool = Pool::new(sandbox.clone()).unwrap_or_else(|e| panic!("{e}"));
  let (tx, rx): (Sender<Completed>, Receiver<Completed>) = channel();
  let host = Arc::new(TestHost { handler, events: Mutex::new(Vec::new()), done: Mutex::new(tx), tools });
  let mut config = ExecuteConfig::new(&sandbox);
  exec(&mut config);
  let shared = Arc::new(Shared::new("exec-1".into(), host.clone(), config.timeout));
  pool.submit(script.to_string(), config, shared);
  let completed = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no result for {script}"));
  let events = host.events.lock().map(|e| e.clone()).unwrap_or_default();
  Run { completed, events }
}

fn run(script: &str) -> Completed {
  run_with(script, SandboxConfig::default(), |_| {}, echo(), None).completed
}

fn ok_json(c: &Completed) -> String {
  match &c.outcome {
    Outcome::Ok { result_json } => result_json.clone().unwrap_or_else(|| "<undefined>".into()),
    other => panic!("expected ok, got {other:?} (logs {:?})", c.logs),
  }
}

fn code(c: &Completed) -> String {
  c.outcome.code().unwrap_or_else(|| format!("ok: {:?}", c.outcome))
}

#[test]
fn returns_values_as_json() {
  assert_eq!(ok_json(&run("return 1 + 1")), "2");
  assert_eq!(
    ok_json(&run("return { a: [1, 'x', null, true], b: { c: 1.5 } }")),
    r#"{"a":[1,"x",null,true],"b":{"c":1.5}}"#
  );
  assert_eq!(ok_json(&run("({ result: 2 * 21 })")), r#"{"result":42}"#);
  assert_eq!(ok_json(&run("const x = await Promise.resolve(5); return x")), "5");
  assert_eq!(ok_json(&run("return undefined")), "<undefined>");
  assert_eq!(ok_json(&run("return { u: undefined, d: new Date(0) }")), r#"{"d":"1970-01-01T00:00:00.000Z"}"#);
}

#[test]
fn calls_the_host_and_emits_events_in_order() {
  let r = run_with(
    "const a = await callTool('users:list', { limit: 2 }); return a",
    SandboxConfig::default(),
    |_| {},
    echo(),
    None,
  );
  assert_eq!(ok_json(&r.completed), r#"{"tool":"users:list","input":{"limit":2}}"#);
  assert_eq!(r.completed.stats.tool_calls, 1);
  assert!(matches!(&r.events[0], Event::ToolCallStart { tool_name, .. } if tool_name == "users:list"));
  assert!(matches!(&r.events[1], Event::ToolCallEnd { ok: true, .. }));
}

#[test]
fn host_failures_become_tool_errors() {
  let failing: Box<Handler> = Box::new(|_| {
    CallResult::Err(HostFailure {
      message: "Rate limit exceeded".into(),
      code: Some("RATE_LIMIT".into()),
      details_json: None,
    })
  });
  let r = run_with("await callTool('users:list', { a: 1 })", SandboxConfig::default(), |_| {}, failing, None);
  match &r.completed.outcome {
    Outcome::ToolError { code, tool_name, message, tool_input_json, .. } => {
      assert_eq!(
        (code.as_str(), tool_name.as_str(), message.as_str()),
        ("RATE_LIMIT", "users:list", "Rate limit exceeded")
      );
      assert_eq!(tool_input_json, r#"{"a":1}"#);
    }
    other => panic!("{other:?}"),
  }
  let failing: Box<Handler> =
    Box::new(|_| CallResult::Err(HostFailure { message: "boom".into(), ..Default::default() }));
  let r = run_with(
    "const r = await callTool('x', {}, { throwOnError: false }); return r",
    SandboxConfig::default(),
    |_| {},
    failing,
    None,
  );
  assert_eq!(ok_json(&r.completed), r#"{"success":false,"error":{"code":"TOOL_EXECUTION_ERROR","message":"boom"}}"#);
}

#[test]
fn call_checks_run_in_order() {
  let r = run_with(
    "const r = await callTool('codecall:execute', {}, { throwOnError: false }); return r.error.code",
    SandboxConfig::default(),
    |_| {},
    echo(),
    None,
  );
  // The validator refuses the literal first; a computed name reaches the runtime check.
  assert_eq!(code(&r.completed), "SELF_REFERENCE_BLOCKED");
  let dynamic = "const n = ['codecall', 'execute'].join(':'); const r = await callTool(n, {}, { throwOnError: false }); return r.error.code";
  assert_eq!(
    ok_json(&run_with(dynamic, SandboxConfig::default(), |_| {}, echo(), None).completed),
    r#""SELF_REFERENCE_BLOCKED""#
  );
  let denied = run_with(
    "const r = await callTool('b', {}, { throwOnError: false }); return r.error.code",
    SandboxConfig::default(),
    |e| e.allowed_tools = Some(vec!["a".into()]),
    echo(),
    None,
  );
  assert_eq!(ok_json(&denied.completed), r#""ACCESS_DENIED""#);
  let unknown = run_with(
    "const r = await callTool('nope', {}, { throwOnError: false }); return [r.error.code, getTool('known').name, getTool('nope')]",
    SandboxConfig::default(),
    |e| e.host_get_tool = true,
    echo(),
    Some(vec!["known".into()]),
  );
  assert_eq!(ok_json(&unknown.completed), r#"["TOOL_NOT_FOUND","known",null]"#);
  // The host's deniedTools name their policy where the registry would only say "not found", and
  // come after allowedTools; a denied tool is not described either.
  let policy = run_with(
    "const r = await callTool('other:x', {}, { throwOnError: false }); const a = await callTool('known', {}, { throwOnError: false }); return [r.error.code, r.error.message, getTool('other:known'), a.error.code]",
    SandboxConfig::default(),
    |e| {
      e.host_get_tool = true;
      e.allowed_tools = Some(vec!["other:x".into(), "other:known".into()]);
      e.denied_tools = vec![(crate::common::Glob::new("other:*"), "MCP server 'other' is not in allowedServers".into())];
    },
    echo(),
    Some(vec!["known".into(), "other:known".into()]),
  );
  assert_eq!(
    ok_json(&policy.completed),
    r#"["ACCESS_DENIED","Tool 'other:x' is not allowed: MCP server 'other' is not in allowedServers",null,"ACCESS_DENIED"]"#
  );
  let limited = SandboxConfig { max_tool_calls: 2, ..SandboxConfig::default() };
  let over = run_with(
    "await callTool('a'); await callTool('a'); const r = await callTool('a', {}, { throwOnError: false }); return r.error.code",
    limited,
    |e| e.max_tool_calls = 2,
    echo(),
    None,
  );
  assert_eq!(ok_json(&over.completed), r#""MAX_TOOL_CALLS_EXCEEDED""#);
}

#[test]
fn syntax_and_policy_refusals() {
  assert_eq!(code(&run("return (")), "SYNTAX_ERROR");
  assert_eq!(code(&run("eval('1')")), "VALIDATION_ERROR");
  assert_eq!(run("eval('1')").outcome.status(), "illegal_access");
}

#[test]
fn runtime_errors_have_user_positions() {
  let c = run("const a = 1;\nconst b = null;\nreturn b.x");
  match &c.outcome {
    Outcome::RuntimeError { code, name, location, stack, .. } => {
      assert_eq!(*code, ErrorCode::ExecutionError);
      assert_eq!(name.as_deref(), Some("TypeError"));
      assert_eq!(location.map(|l| l.line), Some(3));
      let stack = stack.clone().unwrap_or_default();
      assert!(stack.contains("script.js:3:"), "{stack}");
      assert!(!stack.contains("<codecall>"), "{stack}");
    }
    other => panic!("{other:?}"),
  }
}

#[test]
fn eval_and_function_constructors_are_gone() {
  let mut balanced = SandboxConfig::from_preset(Preset::Balanced);
  balanced.normalize();
  let script = "const results = [];
    for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
      try { f.constructor('return 1'); results.push('compiled') } catch (e) { results.push(e.message) }
    }
    results.push(typeof globalThis['ev' + 'al'], typeof globalThis['Func' + 'tion']);
    return results";
  let c = run_with(script, balanced, |_| {}, echo(), None).completed;
  let json = ok_json(&c);
  assert!(!json.contains("compiled"), "{json}");
  assert!(json.ends_with(r#""undefined","undefined"]"#), "{json}");
}

#[test]
fn timeouts_cover_cpu_and_host_waits() {
  let mut sandbox = SandboxConfig::from_preset(Preset::Balanced);
  sandbox.max_iterations = Some(u64::MAX);
  let c =
    run_with("while (true) {}", sandbox.clone(), |e| e.timeout = Duration::from_millis(200), echo(), None).completed;
  assert_eq!(code(&c), "TIMEOUT");
  let slow: Box<Handler> = Box::new(|_| {
    std::thread::sleep(Duration::from_millis(2000));
    CallResult::Ok(None)
  });
  let started = std::time::Instant::now();
  let c = run_with("await callTool('slow')", sandbox, |e| e.timeout = Duration::from_millis(200), slow, None).completed;
  assert_eq!(code(&c), "TIMEOUT");
  assert!(started.elapsed() < Duration::from_millis(1500));
}

#[test]
fn iteration_limit_holds_even_when_caught() {
  let mut sandbox = SandboxConfig::from_preset(Preset::Balanced);
  sandbox.max_iterations = Some(100);
  let c = run_with("try { for (;;) {} } catch (e) {} return 1", sandbox, |_| {}, echo(), None).completed;
  assert_eq!(code(&c), "ITERATION_LIMIT_EXCEEDED");
  assert_eq!(c.stats.iterations, Some(101));
}

#[test]
fn memory_and_stack_limits() {
  let mut sandbox = SandboxConfig::from_preset(Preset::Balanced);
  sandbox.max_iterations = Some(u64::MAX);
  let c =
    run_with("const a = []; while (true) a.push('x'.repeat(1000) + a.length)", sandbox.clone(), |_| {}, echo(), None)
      .completed;
  assert_eq!(code(&c), "MEMORY_LIMIT_EXCEEDED");
  let c = run_with("const f = (n) => f(n + 1) + 1; return f(0)", sandbox, |_| {}, echo(), None).completed;
  assert_eq!(code(&c), "STACK_OVERFLOW");
}

#[test]
fn results_are_checked_while_serialized() {
  assert_eq!(code(&run("return { a: { fn() {} } }")), "SERIALIZATION_ERROR");
  let c = run("const o = { items: [1, 2, 3, { fn: () => 1 }] }; return o");
  match &c.outcome {
    Outcome::RuntimeError { message, .. } => assert!(message.contains("$.items[3].fn"), "{message}"),
    other => panic!("{other:?}"),
  }
  assert_eq!(code(&run("const a = {}; a.self = a; return a")), "SERIALIZATION_ERROR");
  assert_eq!(code(&run("return 1n")), "SERIALIZATION_ERROR");
  assert_eq!(code(&run("return Symbol('x')")), "SERIALIZATION_ERROR");
  assert_eq!(code(&run("return 'x'.repeat(2 * 1024 * 1024)")), "RESULT_TOO_LARGE");
  assert_eq!(ok_json(&run("return '\\ud800' + 'a'")), "\"\u{FFFD}a\"");
  assert_eq!(
    ok_json(&run("return JSON.parse('{\"__proto__\": {\"polluted\": 1}}')")),
    r#"{"__proto__":{"polluted":1}}"#
  );
  assert_eq!(code(&run("return { get x() { return callTool('a') } }")), "SERIALIZATION_ERROR");
}

/// What one execution says is bounded in both isolations (spec §2.6): over `message_limit`, only
/// that execution ends, `RESULT_TOO_LARGE` naming what was too large, whatever the script catches.
#[test]
fn oversized_messages_end_only_their_execution() {
  // A small frame budget keeps the test light: 2 * (64 KiB + 16 KiB) + 16 MiB.
  let sandbox = || {
    let mut s = SandboxConfig::from_preset(Preset::Experimental);
    s.max_result_bytes = 64 << 10;
    s.max_console_bytes = 16 << 10;
    s
  };
  let limit = sandbox().message_limit();
  let big = limit + 1;
  for (script, names) in [
    (format!("mcpNotify('e', 'x'.repeat({big}))"), "mcpNotify('e', …): the event and its payload"),
    (format!("mcpLog('info', 'x'.repeat({big}), {{}})"), "mcpLog('info', …): the log message and metadata"),
    (format!("await callTool('x'.repeat({big}), {{}})"), "callTool('xxxx"),
    (format!("await callTool('t', {{ s: 'x'.repeat({big}) }})"), "callTool('t'): the tool name and input"),
    (format!("getTool('x'.repeat({big}))"), "getTool('xxxx"),
    (format!("try {{ mcpNotify('e', 'x'.repeat({big})) }} catch (e) {{}}\nreturn 1"), "mcpNotify"),
    (format!("throw new Error('\\x01'.repeat({}))", big / 5), "The error the script threw is"),
  ] {
    let run = run_with(&script, sandbox(), |e| e.events = true, echo(), None);
    match &run.completed.outcome {
      Outcome::RuntimeError { code: ErrorCode::ResultTooLarge, message, .. } => {
        assert!(message.contains(names), "{script}: {message}");
        assert!(message.len() < 400, "{message}");
      }
      other => panic!("{script}: {other:?}"),
    }
    assert!(run.completed.to_json().len() < limit, "{script}");
    assert!(run.events.iter().all(|e| format!("{e:?}").len() < limit), "{script}: an oversized event was sent");
  }
  // Just under the limit still goes through.
  let ok = run_with(
    &format!("mcpNotify('e', 'x'.repeat({}))\nreturn 1", limit - 100),
    sandbox(),
    |e| e.events = true,
    echo(),
    None,
  );
  assert_eq!(ok_json(&ok.completed), "1");
}

#[test]
fn console_is_captured_and_bounded() {
  let c = run("console.log('a', 1, { b: 2 }); console.warn('w'); console.error('e'); console.debug('d'); console.info('i'); return 1");
  assert_eq!(c.logs, vec!["a 1 {\"b\":2}", "[warn] w", "[error] e", "[debug] d", "i"]);
  let c = run("const s = 'x'.repeat(1000); [...Array(100).keys()].forEach(() => console.log(s)); return 1");
  assert_eq!(c.logs.len(), 66);
  assert!(c.logs.last().is_some_and(|l| l.starts_with("[truncated]")), "{:?}", c.logs.last());
}

#[test]
fn never_settling_promise_ends_at_once() {
  let started = std::time::Instant::now();
  let c = run("await new Promise(() => {})");
  assert_eq!(code(&c), "EXECUTION_ERROR");
  assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn safe_parallel_runs_in_order_and_reports_failures() {
  let c = run("return await __safe_parallel([1, 2, 3].map((i) => () => callTool('t', { i })), { maxConcurrency: 2 })");
  assert_eq!(
    ok_json(&c),
    r#"[{"tool":"t","input":{"i":1}},{"tool":"t","input":{"i":2}},{"tool":"t","input":{"i":3}}]"#
  );
  let c = run("try { await __safe_parallel([() => 1, () => { throw new Error('bad') }, () => Promise.reject(new Error('worse'))]) } catch (e) { return e.message }");
  assert_eq!(ok_json(&c), r#""2 of 3 parallel operations failed:\n  [1]: bad\n  [2]: worse""#);
}

#[test]
fn context_and_input_are_deep_frozen_copies() {
  let r = run_with(
    "'use strict'; try { codecallContext.user.id = 'x' } catch (e) { return [e.name, codecallContext.user.id, input.value * 2] }",
    SandboxConfig::default(),
    |e| {
      e.context_json = r#"{"user":{"id":"u1"}}"#.into();
      e.input_json = Some(r#"{"value":21}"#.into());
    },
    echo(),
    None,
  );
  assert_eq!(ok_json(&r.completed), r#"["TypeError","u1",42]"#);
}

#[test]
fn host_functions_become_namespaced_globals() {
  let r = run_with(
    "return [await mcp.callTool('srv', 'tool', { a: 1 }), await lookup(1, 2), Object.isFrozen(mcp)]",
    SandboxConfig::default(),
    |e| e.functions = vec!["mcp.callTool".into(), "lookup".into()],
    Box::new(|call: &HostCall| {
      assert_eq!(call.target, CallTarget::Function);
      CallResult::Ok(Some(format!(r#"{{"fn":"{}","args":{}}}"#, call.name, call.args_json)))
    }),
    None,
  );
  assert_eq!(
    ok_json(&r.completed),
    r#"[{"fn":"mcp.callTool","args":["srv","tool",{"a":1}]},{"fn":"lookup","args":[1,2]},true]"#
  );
}

#[test]
fn many_parked_executions_share_few_threads() {
  let sandbox = Arc::new(SandboxConfig { pool_size: 2, max_queue: 100_000, ..SandboxConfig::default() });
  let pool = Pool::new(sandbox.clone()).unwrap_or_else(|e| panic!("{e}"));
  let (tx, rx) = channel();
  // The host holds every reply until all executions are parked.
  let held: Arc<Mutex<Vec<Box<dyn Reply>>>> = Arc::new(Mutex::new(Vec::new()));
  struct Holding {
    held: Arc<Mutex<Vec<Box<dyn Reply>>>>,
    done: Mutex<Sender<Completed>>,
  }
  impl Host for Holding {
    fn call(&self, _call: HostCall, reply: Box<dyn Reply>) {
      if let Ok(mut h) = self.held.lock() {
        h.push(reply);
      }
    }
    fn event(&self, _: Event) {}
    fn get_tool(&self, _: &str, _: Duration) -> Option<String> {
      None
    }
    fn complete(&self, c: Completed) {
      if let Ok(d) = self.done.lock() {
        let _ = d.send(c);
      }
    }
  }
  let host = Arc::new(Holding { held: held.clone(), done: Mutex::new(tx) });
  let n = 2_000;
  for i in 0..n {
    let mut config = ExecuteConfig::new(&sandbox);
    config.timeout = Duration::from_secs(60);
    let shared = Arc::new(Shared::new(format!("e{i}"), host.clone(), config.timeout));
    pool.submit("const r = await callTool('wait'); return r.n + 1".into(), config, shared);
  }
  let deadline = std::time::Instant::now() + Duration::from_secs(60);
  while held.lock().map(|h| h.len()).unwrap_or(0) < n && std::time::Instant::now() < deadline {
    std::thread::sleep(Duration::from_millis(10));
  }
  let replies: Vec<Box<dyn Reply>> = held.lock().map(|mut h| h.drain(..).collect()).unwrap_or_default();
  assert_eq!(replies.len(), n);
  for reply in replies {
    reply.send(CallResult::Ok(Some(r#"{"n":1}"#.into())));
  }
  for _ in 0..n {
    let c = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("missing result"));
    assert_eq!(ok_json(&c), "2");
  }
}

#[test]
fn events_are_built_only_when_someone_listens() {
  let script = "mcpLog('info', 'x'); mcpNotify('n', { a: 1 }); await callTool('a', { i: 1 }); return 1";
  let heard = run_with(script, SandboxConfig::default(), |_| {}, echo(), None);
  assert_eq!(ok_json(&heard.completed), "1");
  let kinds: Vec<&str> = heard
    .events
    .iter()
    .map(|e| match e {
      Event::Log { .. } => "log",
      Event::Notify { .. } => "notify",
      Event::Approval { .. } => "approval",
      Event::Nested { .. } => "nested",
      Event::ToolCallStart { .. } => "start",
      Event::ToolCallEnd { .. } => "end",
    })
    .collect();
  assert_eq!(kinds, ["log", "notify", "start", "end"]);
  let unheard = run_with(script, SandboxConfig::default(), |e| e.events = false, echo(), None);
  assert_eq!(ok_json(&unheard.completed), "1");
  assert!(unheard.events.is_empty(), "{:?}", unheard.events);
}

/// The vendored QuickJS polls the interrupt inside builtins that loop long in C
/// (`vendor/rquickjs-sys/CODECALL-PATCHES.md`): each of these runs for tens of seconds to hours
/// without the polls, and stops within milliseconds of the deadline with them.
#[test]
fn long_builtins_poll_the_interrupt() {
  use rquickjs::{Context, Runtime};
  use std::time::Instant;
  let hex = |digits: u32| format!("BigInt('0x' + 'f'.repeat({digits}))");
  let cases = [
    "new Array(1e9).join('')".to_string(),
    "[].copyWithin.call({ length: 2 ** 53 - 1 }, 0, 1)".into(),
    "[].lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)".into(),
    "[].reverse.call({ length: 2 ** 53 - 1 })".into(),
    format!("const x = {}; for (;;) x.toString()", hex(150_000)),
    format!("const x = {}; for (;;) x * x", hex(75_000)),
    format!("const x = {}, y = {}; for (;;) x / y", hex(150_000), hex(37_500)),
    "const s = '9'.repeat(300000); for (;;) BigInt(s)".into(),
    "for (;;) 3n ** 600000n".into(),
    "'a'.repeat(1e6).indexOf('a'.repeat(5e5) + 'b')".into(),
    "'a'.repeat(1e6).lastIndexOf('a'.repeat(5e5) + 'b')".into(),
    "'a'.repeat(1e6).includes('a'.repeat(5e5) + 'b')".into(),
    "'a'.repeat(1e6).split('a'.repeat(5e5) + 'b')".into(),
    "'a'.repeat(1e6).replaceAll('a'.repeat(5e5) + 'b', '')".into(),
    // Long strings compared element by element in C: fast-array searches, sort, `===`, Set.
    "const p = '\\u0100'.repeat(1e6), x = (p + 'x').slice(0); Array(2e5).fill(x).indexOf((p + 'y').slice(0))".into(),
    "const p = '\\u0100'.repeat(1e6), x = (p + 'x').slice(0); Array(2e5).fill(x).includes((p + 'y').slice(0))".into(),
    "Array(2e5).fill('\\u0100'.repeat(4e6)).sort()".into(),
    "const p = '\\u0100'.repeat(4e6), x = p + 'x', y = p + 'y'; let c = 0; for (;;) c += x === y".into(),
    "const s = 'a'.repeat(4e6), m = new Set(); for (;;) m.has(s)".into(),
    // Quadratic Unicode normalization (insertion sort of combining marks).
    "('a' + '\\u0316\\u0301'.repeat(1.5e5)).normalize('NFD')".into(),
    "('a' + '\\u0301\\u0316'.repeat(1.5e5)).normalize('NFC')".into(),
    // A Proxy's ownKeys list checked for duplicates pairwise.
    "const k = Object.keys(Array(3e5).fill(0)); Reflect.ownKeys(new Proxy({}, { ownKeys: () => k }))".into(),
    // Regexp compilation: many alternatives, a long character class.
    "new RegExp('(?:' + 'ab|'.repeat(4e5) + 'c)')".into(),
    "new RegExp('[' + Array.from({ length: 1e5 }, (_, i) => String.fromCodePoint(0x10000 + 2 * i)).join('') + ']', 'u')".into(),
    // Loops whose every step is milliseconds of C (polled every 10 000 branches before).
    "const a = Array(1e3).fill('x'.repeat(1e4)); for (;;) a.join('')".into(),
    "const a = new Uint8Array(5e7), b = new Uint8Array(5e7).fill(1); for (;;) a.set(b)".into(),
    "const s = '\\u00e9'.repeat(1e7); for (;;) s.toUpperCase()".into(),
    "const o = JSON.stringify(Array(1e5).fill('x'.repeat(50))); for (;;) JSON.parse(o)".into(),
    "const s = '1'.repeat(4e6); for (;;) parseInt(s)".into(),
  ];
  for script in cases {
    let rt = Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let context = Context::full(&rt).unwrap_or_else(|e| panic!("context: {e}"));
    let mut deadline = None;
    // The deadline starts once the script's own setup (building the strings) is under way.
    rt.set_interrupt_handler(Some(Box::new(move || {
      Instant::now() >= *deadline.get_or_insert_with(|| Instant::now() + Duration::from_millis(300))
    })));
    let started = Instant::now();
    let failed = context.with(|ctx| ctx.eval::<(), _>(script.as_str()).is_err());
    let took = started.elapsed();
    assert!(failed, "{script}: not interrupted");
    // Generous (a loaded machine, an unoptimized build): without the polls these take from
    // 20 s to hours.
    assert!(took < Duration::from_secs(8), "{script}: stopped only after {took:?}");
  }
}

/// §9: a hold stops the deadline's clock; its release moves the deadline by the time held.
#[test]
fn holds_move_the_deadline_by_the_time_held() {
  let (tx, _rx) = channel();
  let host = Arc::new(TestHost { handler: echo(), events: Mutex::new(Vec::new()), done: Mutex::new(tx), tools: None });
  let shared = Shared::new("e".into(), host, Duration::from_millis(100));
  let base = shared.mark_started().unwrap_or_else(|| panic!("started once"));
  assert_eq!(shared.effective_deadline(), Some(base));
  shared.hold();
  shared.hold();
  assert_eq!(shared.effective_deadline(), None, "held");
  assert!(!shared.past_deadline(base, base + Duration::from_secs(60)), "no deadline passes while held");
  std::thread::sleep(Duration::from_millis(30));
  shared.release();
  assert_eq!(shared.effective_deadline(), None, "still one hold open");
  shared.release();
  shared.release(); // one too many: ignored
  let moved = shared.effective_deadline().unwrap_or_else(|| panic!("released"));
  assert!(moved >= base + Duration::from_millis(30), "moved by the time held");
  assert!(shared.past_deadline(base, moved));
  assert!(!shared.past_deadline(base, moved - Duration::from_millis(1)));
}

/// §9 in the thread pool (the same code a worker process runs): a host that holds the deadline
/// while it waits (a person deciding) does not time the script out; the deadline moves by the
/// time held and still fires after.
#[test]
fn a_held_deadline_waits_for_the_host_then_still_fires() {
  use std::sync::Weak;
  struct HoldingHost {
    shared: Mutex<Weak<Shared>>,
    done: Mutex<Sender<Completed>>,
  }
  impl Host for HoldingHost {
    fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
      let shared = self.shared.lock().ok().and_then(|s| s.upgrade());
      std::thread::spawn(move || {
        let hold = call.name == "held";
        if let (true, Some(s)) = (hold, &shared) {
          s.hold();
        }
        std::thread::sleep(Duration::from_millis(if hold { 600 } else { 2000 }));
        if let (true, Some(s)) = (hold, &shared) {
          s.release();
        }
        reply.send(CallResult::Ok(Some("1".into())));
      });
    }
    fn event(&self, _: Event) {}
    fn get_tool(&self, _: &str, _: Duration) -> Option<String> {
      None
    }
    fn attached(&self, shared: &Arc<Shared>) {
      if let Ok(mut s) = self.shared.lock() {
        *s = Arc::downgrade(shared);
      }
    }
    fn complete(&self, c: Completed) {
      if let Ok(d) = self.done.lock() {
        let _ = d.send(c);
      }
    }
  }
  let sandbox = Arc::new(SandboxConfig::default());
  let pool = Pool::new(sandbox.clone()).unwrap_or_else(|e| panic!("{e}"));
  let run = |script: &str| {
    let (tx, rx) = channel();
    let host = Arc::new(HoldingHost { shared: Mutex::new(Weak::new()), done: Mutex::new(tx) });
    let mut config = ExecuteConfig::new(&sandbox);
    config.timeout = Duration::from_millis(200);
    let shared = Arc::new(Shared::new("e".into(), host.clone(), config.timeout));
    shared.host.attached(&shared);
    let started = std::time::Instant::now();
    pool.submit(script.into(), config, shared);
    let c = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no result for {script}"));
    (c, started.elapsed())
  };
  // 600 ms held against a 200 ms timeout: finishes.
  let (ok, _) = run("await callTool('held'); return 2");
  assert_eq!(ok_json(&ok), "2");
  // Held 600 ms, then a 2 s call that is not held: times out — at 200 + 600 ms, not before.
  let (late, took) = run("await callTool('held'); await callTool('plain'); return 3");
  assert_eq!(code(&late), "TIMEOUT");
  assert!(took >= Duration::from_millis(780), "the deadline moved by the time held ({took:?})");
}

/// Telemetry's queue gauge: executions submitted and not yet started, then none once the pool is
/// disposed (the reader outlives nothing it reads).
#[test]
fn the_queue_probe_counts_waiting_executions_while_the_pool_lives() {
  let mut sandbox =
    SandboxConfig { pool_size: 1, timeout_ms: 400, queue_timeout_ms: 30_000, ..SandboxConfig::default() };
  sandbox.policy.allow_loops = true;
  sandbox.max_iterations = Some(1 << 50);
  let sandbox = Arc::new(sandbox);
  let mut pool = Pool::new(sandbox.clone()).unwrap_or_else(|e| panic!("{e}"));
  let probe = pool.queue_probe();
  assert_eq!(probe(), Some(0));
  let (tx, rx): (Sender<Completed>, Receiver<Completed>) = channel();
  let host = Arc::new(TestHost { handler: echo(), events: Mutex::new(Vec::new()), done: Mutex::new(tx), tools: None });
  for i in 0..3 {
    let config = ExecuteConfig::new(&sandbox);
    let shared = Arc::new(Shared::new(format!("exec-{i}"), host.clone(), config.timeout));
    pool.submit("while (true) {}".into(), config, shared);
  }
  // One spins on the only thread; the other two wait for it.
  let deadline = std::time::Instant::now() + Duration::from_secs(5);
  while probe() != Some(2) && std::time::Instant::now() < deadline {
    std::thread::sleep(Duration::from_millis(10));
  }
  assert_eq!(probe(), Some(2));
  for _ in 0..3 {
    rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no result"));
  }
  assert_eq!(probe(), Some(0));
  for handle in pool.dispose() {
    let _ = handle.join();
  }
  assert_eq!(probe(), None);
}
