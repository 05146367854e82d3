#![allow(clippy::expect_used, clippy::unwrap_used, clippy::type_complexity)]

use std::sync::Arc;

use serde_json::json;

use super::history::{History, Ran};
use super::save::{SaveInput, SaveRefusal, SaveSource};
use super::store::{answer_now, Answer, Store};
use super::*;
use crate::common::ErrorCode;
use crate::validator::{Language, Policy};

fn new_script(name: &str, script: &str) -> NewScript {
  NewScript {
    name: name.into(),
    description: format!("{name} does things"),
    script: script.into(),
    language: Language::JavaScript,
    input_schema: None,
    tags: vec!["t".into()],
    code_sha256: sha256_hex(script),
  }
}

/// Runs a store method whose answer arrives before it returns (SQLite).
fn now<T: Send + 'static>(f: impl FnOnce(Answer<T>)) -> Result<T, String> {
  answer_now(f).expect("the SQLite store answers before it returns")
}

#[test]
fn names_and_references() {
  for ok in ["a", "weekly-report", "x_1", "0abc", &"a".repeat(64)] {
    assert!(check_name(ok).is_ok(), "{ok}");
  }
  for bad in ["", "A", "-a", "_a", "a b", "a:b", "é", &"a".repeat(65), "a@1"] {
    assert!(check_name(bad).is_err(), "{bad}");
  }
  assert_eq!(ScriptRef::parse("report").unwrap(), ScriptRef { name: "report".into(), version: None });
  assert_eq!(ScriptRef::parse("report@12").unwrap().version, Some(12));
  for bad in ["report@", "report@0", "report@01", "report@-1", "report@1.5", "report@+2", "Report@1"] {
    assert!(ScriptRef::parse(bad).is_err(), "{bad}");
  }
  assert!(ScriptRef::of_tool("users:list").is_none());
  assert_eq!(ScriptRef::of_tool("saved:a@2").unwrap().unwrap().label(), "saved:a@2");
}

#[test]
fn sha256_and_time() {
  assert_eq!(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_eq!(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  let t = now_iso8601();
  assert_eq!(t.len(), 24, "{t}");
  assert!(t.starts_with("20") && t.ends_with('Z') && &t[10..11] == "T", "{t}");
}

#[test]
fn sqlite_versions_go_up_and_never_back() {
  let store = SqliteStore::open(":memory:").unwrap();
  let a1 = now(|d| store.put(new_script("a", "return 1"), d)).unwrap();
  let a2 = now(|d| store.put(new_script("a", "return 2"), d)).unwrap();
  let b1 = now(|d| store.put(new_script("b", "return 3"), d)).unwrap();
  assert_eq!((a1.version, a2.version, b1.version), (1, 2, 1));
  assert_eq!(now(|d| store.latest("a", d)).unwrap().unwrap().script, "return 2");
  assert_eq!(now(|d| store.get("a", 1, d)).unwrap().unwrap(), a1);
  assert_eq!(now(|d| store.get("a", 9, d)).unwrap(), None);
  let list = now(|d| store.list(d)).unwrap();
  assert_eq!(list.iter().map(|s| (s.name.as_str(), s.version)).collect::<Vec<_>>(), [("a", 2), ("b", 1)]);
  assert!(now(|d| store.remove("a", d)).unwrap());
  assert!(!now(|d| store.remove("a", d)).unwrap());
  assert_eq!(now(|d| store.latest("a", d)).unwrap(), None);
  // A removed name's numbers are not handed out again: `saved:a@1` never names two scripts.
  assert_eq!(now(|d| store.put(new_script("a", "return 4"), d)).unwrap().version, 3);
  store.close();
  let closed = now(|d| store.list(d)).unwrap_err();
  assert!(closed.contains("closed"), "{closed}");
  store.close();
}

#[test]
fn sqlite_file_two_connections_share_versions_and_see_each_other() {
  let dir = std::env::temp_dir().join(format!("codecall-scripts-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let path = dir.join("s.db");
  let _ = std::fs::remove_file(&path);
  let path = path.to_str().unwrap().to_string();
  let stores: Vec<Arc<SqliteStore>> = (0..2).map(|_| Arc::new(SqliteStore::open(&path).unwrap())).collect();
  let before = stores[0].stamp();
  let threads: Vec<_> = stores
    .iter()
    .cloned()
    .map(|store| {
      std::thread::spawn(move || {
        (0..20)
          .map(|i| now(|d| store.put(new_script("shared", &format!("return {i}")), d)).unwrap().version)
          .collect::<Vec<_>>()
      })
    })
    .collect();
  let mut versions: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
  versions.sort_unstable();
  assert_eq!(versions, (1..=40).collect::<Vec<_>>());
  assert_ne!(stores[0].stamp(), before, "the other connection's saves change the stamp");
  assert_eq!(now(|d| stores[1].latest("shared", d)).unwrap().unwrap().version, 40);
  let _ = std::fs::remove_dir_all(&dir);
}

/// A new file for one test, in its own folder.
fn fresh_db(name: &str) -> (std::path::PathBuf, String) {
  let dir = std::env::temp_dir().join(format!("codecall-scripts-{name}-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&dir);
  std::fs::create_dir_all(&dir).unwrap();
  let path = dir.join("s.db").to_str().unwrap().to_string();
  (dir, path)
}

#[test]
fn sqlite_open_waits_for_a_lock_the_busy_handler_does_not_cover() {
  // A file still in rollback mode with a writer's RESERVED lock: switching it to WAL takes a read
  // lock, then wants the write lock, and SQLite answers that at once with SQLITE_BUSY (a reader
  // waiting for a writer could deadlock), without the busy handler. Opening must wait for it.
  let (dir, path) = fresh_db("reserved");
  let writer = rusqlite::Connection::open(&path).unwrap();
  writer.execute_batch("CREATE TABLE other (x); BEGIN IMMEDIATE; INSERT INTO other VALUES (1);").unwrap();
  let (locked, is_locked) = std::sync::mpsc::channel();
  let holder = std::thread::spawn(move || {
    locked.send(()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    writer.execute_batch("COMMIT").unwrap();
  });
  is_locked.recv().unwrap();
  let store = SqliteStore::open(&path).unwrap();
  holder.join().unwrap();
  assert_eq!(now(|d| store.put(new_script("a", "return 1"), d)).unwrap().version, 1);
  store.close();
  let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_many_connections_open_one_new_file_at_the_same_instant() {
  const THREADS: usize = 6;
  for round in 0..15 {
    let (dir, path) = fresh_db(&format!("race{round}"));
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
      .map(|i| {
        let (path, barrier) = (path.clone(), barrier.clone());
        std::thread::spawn(move || {
          barrier.wait();
          let store = SqliteStore::open(&path).unwrap_or_else(|e| panic!("round {round}: {e}"));
          let saved = now(|d| store.put(new_script("race", &format!("return {i}")), d));
          store.close();
          saved.unwrap_or_else(|e| panic!("round {round}: {e}")).version
        })
      })
      .collect();
    let mut versions: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    versions.sort_unstable();
    assert_eq!(versions, (1..=THREADS as u64).collect::<Vec<_>>(), "round {round}");
    let _ = std::fs::remove_dir_all(&dir);
  }
}

#[test]
fn sqlite_refuses_what_it_cannot_open_naming_the_path() {
  let missing = std::env::temp_dir().join("codecall-no-such-folder-xyz").join("s.db");
  let e = SqliteStore::open(missing.to_str().unwrap()).err().unwrap();
  assert!(e.contains("codecall-no-such-folder-xyz") && e.contains("does not exist"), "{e}");
  let not_db = std::env::temp_dir().join(format!("codecall-not-a-db-{}", std::process::id()));
  std::fs::write(&not_db, b"this is not an SQLite database, just text that is long enough to have a header").unwrap();
  let started = std::time::Instant::now();
  let e = SqliteStore::open(not_db.to_str().unwrap()).err().unwrap();
  assert!(e.contains(not_db.to_str().unwrap()), "{e}");
  // Only "busy" is tried again: a file that is not a database is refused at once.
  assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
  let _ = std::fs::remove_file(&not_db);
  let e = SqliteStore::open(std::env::temp_dir().to_str().unwrap()).err().unwrap();
  assert!(e.contains("folder"), "{e}");
}

#[test]
fn history_is_bounded_per_session() {
  let mut h = History::new(2);
  for i in 0..3 {
    h.record("s", Ran { execution_id: format!("e{i}"), script: format!("return {i}"), language: Language::JavaScript });
  }
  assert!(h.find("s", "e0").is_none(), "past historySize");
  assert_eq!(h.find("s", "e2").unwrap().script, "return 2");
  assert!(h.find("other", "e2").is_none(), "another session's run");
  let mut off = History::new(0);
  off.record("s", Ran { execution_id: "e".into(), script: "x".into(), language: Language::JavaScript });
  assert!(off.find("s", "e").is_none());
  let mut many = History::new(1);
  for i in 0..(MAX_SESSIONS + 5) {
    many.record(&format!("s{i}"), Ran { execution_id: "e".into(), script: "x".into(), language: Language::JavaScript });
  }
  assert!(many.find("s0", "e").is_none(), "the least recently used session went first");
  assert!(many.find(&format!("s{}", MAX_SESSIONS + 4), "e").is_some());
}

fn read(v: serde_json::Value) -> Result<SaveInput, String> {
  SaveInput::read(v, "codecall:save").map_err(|e| e.message().to_string())
}

#[test]
fn save_input_caller_mistakes() {
  let ok = read(json!({ "name": "a", "description": "d", "script": "return 1" })).unwrap();
  assert_eq!(ok.source, SaveSource::Script("return 1".into()));
  let cases = [
    (json!({ "name": "A", "description": "d", "script": "x" }), "name must match"),
    (json!({ "name": "a", "script": "x" }), "description is required"),
    (json!({ "name": "a", "description": "  ", "script": "x" }), "description is required"),
    (json!({ "name": "a", "description": "d" }), "exactly one"),
    (json!({ "name": "a", "description": "d", "script": "x", "executionId": "e" }), "not both"),
    (json!({ "name": "a", "description": "d", "script": "x", "scriptt": 1 }), "unknown key 'scriptt'"),
    (json!({ "name": "a", "description": "d", "script": "x", "language": "python" }), "language"),
    (json!({ "name": "a", "description": "d", "script": "x", "inputSchema": [] }), "inputSchema"),
    (json!({ "name": "a", "description": "d", "script": "x", "tags": [1] }), "tags[0]"),
    (json!([]), "must be an object"),
  ];
  for (input, expected) in cases {
    let e = read(input.clone()).err().unwrap_or_else(|| panic!("{input} was accepted"));
    assert!(e.contains(expected), "{input}: {e}");
  }
  // Optional keys may be null.
  let nulls = json!({ "name": "a", "description": "d", "script": "x", "executionId": null, "language": null,
    "inputSchema": null, "tags": null });
  assert!(read(nulls).is_ok());
}

#[test]
fn save_prepare_checks_history_size_and_validator() {
  let policy = Policy::default();
  let mut h = History::new(4);
  h.record(
    "s",
    Ran {
      execution_id: "exec-1-1".into(),
      script: "const x: number = 1; return x".into(),
      language: Language::TypeScript,
    },
  );
  let by_id = read(json!({ "name": "a", "description": "d", "executionId": "exec-1-1" })).unwrap();
  let saved = by_id.prepare(&mut h, "s", &policy).unwrap();
  assert_eq!(saved.language, Language::TypeScript);
  assert_eq!(saved.code_sha256, sha256_hex("const x: number = 1; return x"));
  let other_session = read(json!({ "name": "a", "description": "d", "executionId": "exec-1-1" })).unwrap();
  assert!(matches!(other_session.prepare(&mut h, "t", &policy), Err(SaveRefusal::Invalid(_))));
  let syntax = read(json!({ "name": "a", "description": "d", "script": "return (" })).unwrap();
  match syntax.prepare(&mut h, "s", &policy) {
    Err(SaveRefusal::Rejected { code, location, .. }) => {
      assert_eq!(code, ErrorCode::SyntaxError);
      assert!(location.is_some());
    }
    other => panic!("{other:?}"),
  }
  let refused = read(json!({ "name": "a", "description": "d", "script": "return eval('1')" })).unwrap();
  assert!(matches!(
    refused.prepare(&mut h, "s", &policy),
    Err(SaveRefusal::Rejected { code: ErrorCode::ValidationError, .. })
  ));
  let mut small = policy.clone();
  small.max_script_bytes = 8;
  let big = read(json!({ "name": "a", "description": "d", "script": "return 123456789" })).unwrap();
  assert!(matches!(big.prepare(&mut h, "s", &small), Err(SaveRefusal::Invalid(_))));
}

#[test]
fn saved_script_json_round_trip_and_bad_store_answers() {
  let store = SqliteStore::open(":memory:").unwrap();
  let s = now(|d| store.put(new_script("a", "return 1"), d)).unwrap();
  assert_eq!(SavedScript::from_json(&s.to_json()).unwrap(), s);
  for bad in [
    json!(1),
    json!({ "name": "A", "version": 1, "script": "x" }),
    json!({ "name": "a", "version": 0, "script": "x" }),
    json!({ "name": "a", "version": 1 }),
  ] {
    assert!(SavedScript::from_json(&bad).is_err(), "{bad}");
  }
}

#[test]
fn input_mismatch_names_the_path() {
  use crate::engine::examples::first_mismatch;
  let schema = json!({ "type": "object", "required": ["a"], "properties": {
    "a": { "type": "number" }, "items": { "type": "array", "items": { "type": "object", "properties": { "id": { "type": "string" } } } } },
    "additionalProperties": false });
  assert_eq!(first_mismatch(&json!({ "a": 1 }), &schema, "input"), None);
  assert_eq!(first_mismatch(&json!({}), &schema, "input").unwrap(), "input.a is required");
  assert!(first_mismatch(&json!({ "a": "x" }), &schema, "input").unwrap().starts_with("input.a must be of type"));
  assert!(first_mismatch(&json!({ "a": 1, "items": [{ "id": "x" }, { "id": 2 }] }), &schema, "input")
    .unwrap()
    .starts_with("input.items[1].id"));
  assert!(first_mismatch(&json!({ "a": 1, "zz": 1 }), &schema, "input").unwrap().contains("input.zz is not allowed"));
  assert!(first_mismatch(&json!(null), &schema, "input").unwrap().starts_with("input must be of type"));
}
