#![allow(clippy::expect_used, clippy::unwrap_used)]

use super::sqlite::now_ms;
use super::SqliteRuns;

#[test]
fn a_journal_is_kept_until_it_expires_and_claimed_once() {
  let dir = std::env::temp_dir().join(format!("codecall-runs-{}", std::process::id()));
  std::fs::create_dir_all(&dir).expect("temp dir");
  let path = dir.join("runs.db");
  let _ = std::fs::remove_file(&path);
  let a = SqliteRuns::open(path.to_str().expect("utf-8"), "test").expect("opens");
  let b = SqliteRuns::open(path.to_str().expect("utf-8"), "test").expect("a second connection opens");
  let later = now_ms() + 60_000;
  a.put("run-1", "[1]", later).expect("put");
  assert_eq!(b.get("run-1").expect("get").as_deref(), Some("[1]"));
  a.put("run-1", "[1,2]", later).expect("replace");
  assert_eq!(b.get("run-1").expect("get").as_deref(), Some("[1,2]"));
  assert!(b.delete("run-1").expect("delete"), "the first delete claims it");
  assert!(!a.delete("run-1").expect("delete"), "the second finds it gone");
  assert_eq!(a.get("run-1").expect("get"), None);
  // Expired: never answered, never claimed.
  a.put("run-2", "[]", now_ms() - 1).expect("put");
  assert_eq!(b.get("run-2").expect("get"), None);
  assert!(!b.delete("run-2").expect("delete"));
  a.close();
  assert!(a.get("run-1").is_err(), "closed");
  drop(b);
  let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_folder_is_named() {
  let e = SqliteRuns::open("/no/such/folder/runs.db", "options.runs.store").err().expect("refused");
  assert!(e.contains("/no/such/folder") && e.contains("options.runs.store"), "{e}");
}
