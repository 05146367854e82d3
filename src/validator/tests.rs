//! The validator's contract, from Rust: rules, bypass attempts, what stays allowed, TypeScript,
//! source preparation and hostile inputs.

use super::*;
use crate::common::Preset;

fn policy(preset: Preset) -> Policy {
  Policy::from_preset(preset)
}

fn secure() -> Policy {
  policy(Preset::Secure)
}

fn kind_of(script: &str, policy: &Policy) -> Option<&'static str> {
  match validate(script, policy) {
    Ok(_) => None,
    Err(Rejection::IllegalAccess { kind, .. }) => Some(kind),
    Err(Rejection::Syntax { message, .. }) => panic!("unexpected syntax error for {script:?}: {message}"),
  }
}

#[track_caller]
fn rejected(script: &str, kind: &str) {
  assert_eq!(kind_of(script, &secure()), Some(kind), "{script}");
}

#[track_caller]
fn allowed(script: &str) {
  if let Err(e) = validate(script, &secure()) {
    panic!("{script:?} was refused: {e:?}");
  }
}

#[test]
fn disallowed_identifiers_in_every_position() {
  rejected("eval('1')", "IllegalBuiltinAccess");
  rejected("\\u0065val('1')", "IllegalBuiltinAccess");
  rejected("const o = { eval }", "IllegalBuiltinAccess");
  rejected("const { a = eval } = {}", "IllegalBuiltinAccess");
  rejected("const o = { [Function]: 1 }", "IllegalBuiltinAccess");
  rejected("new Function('return 1')", "IllegalBuiltinAccess");
  rejected("process.exit(1)", "DisallowedGlobal");
  rejected("globalThis?.process", "DisallowedGlobal");
  rejected("globalThis['process']", "DisallowedGlobal");
  rejected("(globalThis).fetch('x')", "DisallowedGlobal");
  rejected("const { fetch: f } = globalThis", "DisallowedGlobal");
  rejected("let f; ({ fetch: f } = globalThis)", "DisallowedGlobal");
  rejected("self.setTimeout", "DisallowedGlobal");
  rejected("const x = require('fs')", "DisallowedGlobal");
  rejected("setInterval(() => 1, 1)", "DisallowedGlobal");
}

#[test]
fn messages_name_the_identifier() {
  let err = validate("eval('1')", &secure()).err();
  assert_eq!(err.as_ref().map(Rejection::message), Some("Identifier 'eval' is not allowed in AgentScript"));
  assert_eq!(err.as_ref().and_then(Rejection::location), Some(Location { line: 1, column: 1 }));
  assert_eq!(err.map(|e| e.code()), Some(ErrorCode::ValidationError));
}

#[test]
fn property_names_and_strings_stay_allowed() {
  allowed("const obj = { process: 1, eval: 2 }; return obj.process + obj.eval");
  allowed("const s = 'eval and process and fetch'; return s");
  allowed("const r = await callTool('x:y', { require: true }); return r.fetch");
  allowed("return `Function ${1}`");
}

#[test]
fn loops_are_refused_wherever_they_hide() {
  rejected("for (let i = 0; i < 3; i++) {}", "LoopNotAllowed");
  rejected("for (const k in {}) {}", "LoopNotAllowed");
  rejected("for (const x of []) {}", "LoopNotAllowed");
  rejected("while (true) {}", "LoopNotAllowed");
  rejected("do {} while (false)", "LoopNotAllowed");
  rejected("const f = () => { while (true) {} }", "LoopNotAllowed");
  rejected("outer: for (;;) { break outer }", "LoopNotAllowed");
  rejected("for await (const x of []) {}", "LoopNotAllowed");
  rejected("const f = async () => { for await (const x of []) {} }", "LoopNotAllowed");
  assert_eq!(kind_of("for (const x of []) {}", &policy(Preset::Balanced)), None);
}

#[test]
fn module_syntax_with_and_meta_are_refused() {
  rejected("const m = await import('fs')", "DynamicImport");
  rejected("return import.meta.url", "ImportMeta");
  rejected("import fs from 'fs'", "ModuleSyntax");
  rejected("export const a = 1", "ModuleSyntax");
  rejected("with (Math) { max(1, 2) }", "WithStatement");
}

#[test]
fn forbidden_members_in_secure_only() {
  rejected("const f = (() => 1).constructor", "ForbiddenMember");
  rejected("const f = (() => 1)['constructor']", "ForbiddenMember");
  rejected("const f = (() => 1)[`constructor`]", "ForbiddenMember");
  rejected("const p = ({}).__proto__", "ForbiddenMember");
  rejected("const p = Object.prototype", "ForbiddenMember");
  rejected("const { constructor: C } = () => 1", "ForbiddenMember");
  rejected("let C; ({ constructor: C } = () => 1)", "ForbiddenMember");
  rejected("const o = { __proto__: null }", "ForbiddenMember");
  rejected("const f = (() => 1)?.constructor", "ForbiddenMember");
  assert_eq!(kind_of("const f = (() => 1).constructor", &policy(Preset::LockedDown)), Some("ForbiddenMember"));
  assert_eq!(kind_of("const f = (() => 1).constructor", &policy(Preset::Balanced)), None);
  allowed("class A { constructor() { this.a = 1 } }; return new A().a");
}

#[test]
fn reserved_prefix_is_refused() {
  rejected("__cc_tick = () => {}", "ReservedIdentifier");
  rejected("const __cc_x = 1", "ReservedIdentifier");
  rejected("const o = {}; o.__cc_tick()", "ReservedIdentifier");
  rejected("const o = {}; o['__cc_tick']", "ReservedIdentifier");
  let mut custom = secure();
  custom.set_reserved_prefixes(vec!["__host_".into()]);
  assert_eq!(kind_of("const __host_a = 1", &custom), Some("ReservedIdentifier"));
  assert_eq!(kind_of("const __cc_a = 1", &custom), Some("ReservedIdentifier"));
}

#[test]
fn self_reference_is_blocked() {
  for script in [
    "await callTool('codecall:execute', { script: 'return 1' })",
    "await callTool(`codecall:search`, {})",
    "await callTool('codecall_invoke', {})",
    "await callTool?.('codecall:describe', {})",
  ] {
    match validate(script, &secure()) {
      Err(Rejection::IllegalAccess { code, kind, .. }) => {
        assert_eq!(code, ErrorCode::SelfReferenceBlocked, "{script}");
        assert_eq!(kind, "SelfReference");
      }
      other => panic!("{script}: {other:?}"),
    }
  }
  allowed("await callTool('users:list', {})");
}

#[test]
fn tool_names_and_dynamic_calls() {
  let v = validate(
    "const a = await callTool('users:list', {}); const b = await callTool(\"billing:get\"); await callTool('users:list'); return [a, b]",
    &secure(),
  );
  assert_eq!(
    v.as_ref().map(|v| v.tool_names.clone()).ok(),
    Some(vec!["users:list".to_string(), "billing:get".to_string()])
  );
  assert_eq!(v.map(|v| v.dynamic_tool_calls).ok(), Some(false));

  let dynamic = |s: &str| validate(s, &secure()).map(|v| v.dynamic_tool_calls).ok();
  assert_eq!(dynamic("const n = 'a'; await callTool(n, {})"), Some(true));
  assert_eq!(dynamic("await callTool(`users:${1}`, {})"), Some(true));
  assert_eq!(dynamic("const f = callTool; await f('a')"), Some(true));
  assert_eq!(dynamic("await callTool(...['a'])"), Some(true));
  assert_eq!(dynamic("return 1"), Some(false));
}

#[test]
fn syntax_errors_have_user_positions() {
  match validate("const a = 1;\nconst b = ;", &secure()) {
    Err(Rejection::Syntax { location, .. }) => assert_eq!(location, Location { line: 2, column: 11 }),
    other => panic!("{other:?}"),
  }
  // Columns count UTF-16 units: the emoji is two.
  match validate("const s = '😀'; const = 1", &secure()) {
    Err(Rejection::Syntax { location, .. }) => assert_eq!(location.line, 1),
    other => panic!("{other:?}"),
  }
}

/// Syntax oxc parses but QuickJS cannot run is a syntax error from `validate()`, at its position,
/// never `ok` here and a syntax error from `execute()` later (spec §2.6).
#[track_caller]
fn engine_syntax_error(script: &str, policy: &Policy, at: (u32, u32), says: &str) {
  match validate(script, policy) {
    Err(Rejection::Syntax { message, location }) => {
      assert_eq!((location.line, location.column), at, "{script}");
      assert!(message.contains(says), "{script}: {message}");
    }
    other => panic!("{script}: {other:?}"),
  }
}

#[test]
fn syntax_the_engine_cannot_run_is_a_syntax_error() {
  let p = secure();
  engine_syntax_error("@d class A {}\nreturn 1", &p, (1, 1), "Decorators");
  engine_syntax_error("const A = class {\n  @log method() {}\n}", &p, (2, 3), "Decorators");
  engine_syntax_error("class A { accessor x = 1 }", &p, (1, 11), "'accessor'");
  engine_syntax_error("#!/usr/bin/env node\nreturn 1", &p, (1, 1), "'#!'");
  // Before a rule violation that comes first in the source: it is what execute() would hit.
  engine_syntax_error("const f = eval\n@d class A {}", &p, (2, 1), "Decorators");
  let mut ts = secure();
  ts.language = Language::TypeScript;
  engine_syntax_error("const n: number = 1\n@d class A { accessor x: number = n }", &ts, (2, 1), "Decorators");
  engine_syntax_error("class A { accessor x: number = 1 }", &ts, (1, 11), "'accessor'");
  // What QuickJS does run stays allowed.
  allowed(
    "class A { static { this.x = 1 } #y = 2; static has(o) { return #y in o } get z() { return 1 } }\nreturn A.x",
  );
  allowed("const accessor = 1; const o = { accessor: 2 }; return accessor + o.accessor");
}

#[test]
fn empty_and_trivial_scripts_are_valid() {
  assert_eq!(validate("", &secure()), Ok(Validated::default()));
  assert!(validate("   \n\n // only a comment", &secure()).is_ok());
  assert!(validate("return await Promise.resolve(1)", &secure()).is_ok());
}

#[test]
fn size_and_nesting_are_refused_before_parsing() {
  let mut small = secure();
  small.max_script_bytes = 10;
  assert_eq!(kind_of("return 1 + 2 + 3 + 4", &small), Some("ScriptTooLarge"));
  assert_eq!(kind_of(&format!("return {}1{}", "[".repeat(100), "]".repeat(100)), &secure()), Some("NestingTooDeep"));
  assert!(validate(&format!("return {}1{}", "[".repeat(60), "]".repeat(60)), &secure()).is_ok());
}

/// Inputs deeper than any precheck allows still cannot overflow the stack: the parser and the
/// rules run with a stack sized from the input. Runs on a small thread so the growth path is used.
#[test]
fn deep_inputs_never_overflow() {
  let n = 30_000;
  let inputs = [
    format!("{}1{}", "(".repeat(n), ")".repeat(n)),
    format!("{}1{}", "[".repeat(n), "]".repeat(n)),
    format!("{}1{}", "{a:".repeat(n), "}".repeat(n)),
    "a=>".repeat(n) + "a",
    format!("{}1{}", "`${".repeat(n), "}`".repeat(n)),
    "!".repeat(n) + "x",
    "-".repeat(n) + "x",
    "1+".repeat(n) + "1",
    "a?b:".repeat(n) + "c",
    "x=".repeat(n) + "1",
    "if(a)".repeat(n) + ";",
    "new ".repeat(n) + "X",
    "await ".repeat(n) + "x",
    format!("{}1", "typeof ".repeat(n)),
    format!("{}x{}", "f(".repeat(n), ")".repeat(n)),
    format!("x{}", ".a".repeat(n)),
    format!("x{}", "()".repeat(n)),
    format!("x{}", "[0]".repeat(n)),
    "{".repeat(n) + &"}".repeat(n),
    "l:".repeat(n) + "1",
    format!("if(a){{}}{}", "else if(a){}".repeat(n)),
    "function f(){".repeat(n) + &"}".repeat(n),
    "(a,".repeat(n) + "1" + &")".repeat(n),
    "[...".repeat(n) + "x" + &"]".repeat(n),
    "async()=>".repeat(n) + "1",
    // A regex that fools a scanner into skipping the brackets that follow it.
    format!("if (x) /'/; {}1{} // '", "(".repeat(n), ")".repeat(n)),
  ];
  let mut lenient = policy(Preset::Experimental);
  lenient.max_nesting_depth = u32::MAX;
  lenient.max_script_bytes = u64::MAX;
  lenient.forbid_prototype_members = true;
  let handle = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
    for input in &inputs {
      // Either outcome is fine; returning at all is the point.
      let _ = validate(input, &lenient);
      let _ = prepare(input, &lenient, PrepareOptions { count_iterations: true });
      let mut ts = lenient.clone();
      ts.language = Language::TypeScript;
      let _ = validate(input, &ts);
    }
  });
  assert!(handle.map(|h| h.join().is_ok()).unwrap_or(false));
}

#[test]
fn large_script_validates() {
  let line = "const v = await callTool('users:list', { limit: 10, filter: { active: true } });\n";
  let script = line.repeat(1_000_000 / line.len());
  let mut big = secure();
  big.max_script_bytes = 2_000_000;
  assert!(validate(&script, &big).is_ok());
}

mod typescript {
  use super::*;

  fn ts(script: &str) -> Result<Validated, Rejection> {
    let mut p = secure();
    p.language = Language::TypeScript;
    validate(script, &p)
  }

  fn stripped(script: &str) -> String {
    let mut p = secure();
    p.language = Language::TypeScript;
    match prepare(script, &p, PrepareOptions::default()) {
      Ok(prepared) => prepared.source.code,
      Err(e) => panic!("{script}: {e:?}"),
    }
  }

  #[test]
  fn types_are_stripped_keeping_positions() {
    let script = "interface User { id: string }\ntype Id = string;\nconst users: User[] = await callTool<User[]>('users:list', {} as any);\nconst first = users[0]!;\nfunction pick<T>(x: T, y?: number): T { return x }\nreturn pick(first.id satisfies Id)";
    assert!(ts(script).is_ok(), "{:?}", ts(script));
    let code = stripped(script);
    assert_eq!(code.lines().count(), script.lines().count() + 1);
    for (generated, original) in code.lines().skip(1).zip(script.lines().skip(1)) {
      // Statements other than expressions carry a position mark (`0;`); nothing else is added.
      let generated = generated.replace("0;", "");
      assert_eq!(generated.chars().count(), original.chars().count(), "{generated:?} vs {original:?}");
    }
    assert!(!code.contains("interface") && !code.contains("satisfies") && !code.contains(": User"), "{code}");
  }

  #[test]
  fn classes_lose_their_type_only_parts() {
    let script = "abstract class Base<T> implements Foo, Bar { private readonly x: number = 1; declare y: string; abstract z(): void; public get v(): number { return this.x } m?(): void {} }\nclass C extends Base<string> { z() {} }\nreturn new C().v";
    let code = stripped(script);
    for word in ["abstract", "implements", "private", "readonly", "declare", "public", ": number"] {
      assert!(!code.contains(word), "{word} left in {code}");
    }
    let mut p = policy(Preset::Balanced);
    p.language = Language::TypeScript;
    assert!(validate(script, &p).is_ok());
  }

  #[test]
  fn errors_point_at_the_typescript_line() {
    let script = "const a: number = 1;\nconst b: string = 'x';\neval(b);";
    match ts(script) {
      Err(Rejection::IllegalAccess { location, .. }) => assert_eq!(location, Some(Location { line: 3, column: 1 })),
      other => panic!("{other:?}"),
    }
  }

  #[test]
  fn type_positions_do_not_trip_identifier_rules() {
    assert!(ts("const f: Function | undefined = undefined; return f").is_ok());
  }

  #[test]
  fn enums_go_through_the_transformer() {
    let v = ts("enum Color { Red, Green }\nreturn Color.Green");
    assert_eq!(v.map(|v| v.stripping), Ok(Some(Stripping::Transformed)));
  }

  #[test]
  fn type_only_imports_are_erased_and_value_imports_refused() {
    assert!(ts("import type { User } from './types';\nconst u: User | null = null;\nreturn u").is_ok());
    assert!(matches!(
      ts("import { x } from './x';\nreturn x"),
      Err(Rejection::IllegalAccess { kind: "ModuleSyntax", .. })
    ));
  }

  #[test]
  fn typescript_syntax_errors_are_reported() {
    assert!(matches!(ts("const a: = 1"), Err(Rejection::Syntax { .. })));
  }
}

mod preparation {
  use super::*;

  fn prep(script: &str, count: bool) -> PreparedSource {
    let mut p = policy(Preset::Balanced);
    p.allow_loops = true;
    match prepare(script, &p, PrepareOptions { count_iterations: count }) {
      Ok(prepared) => prepared.source,
      Err(e) => panic!("{script}: {e:?}"),
    }
  }

  #[test]
  fn wraps_in_an_async_function_on_the_first_line() {
    let out = prep("return 1", false);
    assert!(
      out.code.starts_with("(function (__cc_tick) {\"use strict\"; return async function () {0;return 1"),
      "{}",
      out.code
    );
    assert!(out.code.ends_with("\n}; })"));
    assert!(!out.returns_last_expression);
  }

  #[test]
  fn last_expression_becomes_the_result() {
    let out = prep("const input = { value: 2 };\n({ result: input.value * 2 })", false);
    assert!(out.code.contains("\n0;return (({ result: input.value * 2 }))"), "{}", out.code);
    assert!(out.returns_last_expression);
    // Not when the script returns somewhere at its top level, even inside a block.
    let out = prep("if (x) { return 1 }\nx + 1", false);
    assert!(!out.returns_last_expression);
    // A return inside a nested function does not count.
    let out = prep("const f = () => { return 1 };\nf()", false);
    assert!(out.returns_last_expression);
  }

  #[test]
  fn statements_without_a_position_of_their_own_are_marked() {
    let out = prep(
      "const a = 1\nfunction f() {\n  'use strict'\n  return null.x\n}\nif (a) return f()\nswitch (a) { case 1: let y = 2 }\nf()",
      false,
    );
    // Declarations, returns, ifs and switch cases get a mark; expression statements, function
    // declarations and directives do not; a single-statement body is never touched.
    assert!(out.code.contains("{0;const a = 1\n"), "{}", out.code);
    assert!(out.code.contains("\nfunction f() {\n  'use strict'\n  0;return null.x\n}"), "{}", out.code);
    assert!(out.code.contains("\n0;if (a) return f()\n"), "{}", out.code);
    assert!(out.code.contains("\n0;switch (a) { case 1: 0;let y = 2 }\n"), "{}", out.code);
    // A mark's own position is the statement it marks.
    let line4 = out.code.lines().nth(3).unwrap_or_default();
    let column = line4.find("0;").map_or(0, |c| c as u32 + 1);
    assert_eq!(out.mapping.to_user(4, column), Location { line: 4, column: 3 });
    assert_eq!(out.mapping.to_user(4, column + 2), Location { line: 4, column: 3 });
  }

  #[test]
  fn every_loop_body_ticks() {
    let out =
      prep("for (;;) { a() }\nwhile (x) b();\ndo c(); while (y)\nfor (const k in o) for (const v of k) d()", true);
    assert_eq!(out.counted_loops, 5);
    assert!(out.code.contains("for (;;) {__cc_tick(); a() }"), "{}", out.code);
    assert!(out.code.contains("while (x) {__cc_tick();b();}"), "{}", out.code);
    assert!(out.code.contains("do {__cc_tick();c();} while (y)"), "{}", out.code);
    assert!(out.code.contains("for (const k in o) {__cc_tick();for (const v of k) {__cc_tick();d()}}"), "{}", out.code);
    assert_eq!(out.code.lines().count(), 5);
  }

  #[test]
  fn mapping_undoes_the_rewrite() {
    let script = "const a = 1;\nwhile (a) { boom() }";
    let out = prep(script, true);
    let line2 = out.code.lines().nth(1).unwrap_or_default();
    let boom = line2.find("boom").unwrap_or_default() as u32 + 1;
    assert_eq!(out.mapping.to_user(2, boom), Location { line: 2, column: 13 });
    let first = out.code.lines().next().unwrap_or_default();
    let a = first.find("a = 1").unwrap_or_default() as u32 + 1;
    assert_eq!(out.mapping.to_user(1, a), Location { line: 1, column: 7 });
    // Inside the inserted tick: the loop body's start.
    let tick = line2.find("__cc_tick").unwrap_or_default() as u32 + 1;
    assert_eq!(out.mapping.to_user(2, tick), Location { line: 2, column: 12 });
    // The wrapper's closing line maps to the script's last line.
    assert_eq!(out.mapping.to_user(3, 1).line, 2);
  }

  #[test]
  fn prepared_code_parses() {
    for script in ["return 1", "1 + 1", "for (;;) x; while (1) ;", "// comment at end", "x // trailing comment"] {
      let out = prep(script, true);
      let allocator = Allocator::default();
      let ret = Parser::new(&allocator, &out.code, SourceType::script()).parse();
      assert!(ret.diagnostics.is_empty(), "{script}: {:?} in {}", ret.diagnostics.into_vec(), out.code);
    }
  }
}
