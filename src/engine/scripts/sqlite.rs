//! The default store: an SQLite file (SQLite itself compiled into the addon — nothing to install
//! or run), or `':memory:'`.
//!
//! Several processes may share one file: it runs in WAL mode (readers never wait for a writer), a
//! save is one `BEGIN IMMEDIATE` transaction that reads and bumps the name's counter and inserts
//! the row (so two processes never hand out one version, and a failed save stores nothing), and a
//! writer waits up to [`BUSY_WAIT`] for another's transaction. Versions never go back: `remove`
//! deletes a name's rows but keeps its counter, so `saved:x@3` never names two different scripts.
//!
//! SQLite's busy handler does not cover every lock: a connection that holds a read lock and wants
//! the write lock (switching a new file to WAL, which two processes opening it at once both do) is
//! answered `SQLITE_BUSY` at once, as it may be while another connection recovers the WAL. So
//! opening (the whole set-up: journal mode, schema, version check) and every operation are tried
//! again, from the start, while they fail with `SQLITE_BUSY` / `SQLITE_LOCKED` — after 1, 2, 4 …
//! [`MAX_PAUSE`] — until [`BUSY_WAIT`] has passed since the first try; only a file still locked
//! then is an error. Other errors are never retried.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use super::store::{Answer, Store};
use super::{language_name, now_iso8601, NewScript, SavedScript};
use crate::validator::Language;

/// How long opening the store, or one operation on it, waits for other connections to the same
/// file (their transactions, their set-up, a checkpoint) before it fails.
pub const BUSY_WAIT: Duration = Duration::from_secs(10);
/// The longest pause between two tries of a set-up or operation answered `SQLITE_BUSY` at once.
const MAX_PAUSE: Duration = Duration::from_millis(100);
/// The schema this code writes (`PRAGMA user_version`); a newer file is refused, not rewritten.
const SCHEMA: i64 = 1;

const CREATE: &str = "
  CREATE TABLE IF NOT EXISTS codecall_scripts (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    description TEXT NOT NULL,
    script TEXT NOT NULL,
    language TEXT NOT NULL,
    input_schema TEXT,
    tags TEXT NOT NULL,
    code_sha256 TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (name, version)
  );
  CREATE TABLE IF NOT EXISTS codecall_script_names (
    name TEXT PRIMARY KEY,
    last_version INTEGER NOT NULL
  );";

const COLUMNS: &str = "name, version, description, script, language, input_schema, tags, code_sha256, created_at";

pub struct SqliteStore {
  /// `None` once closed (the engine was disposed: on Windows an open file cannot be removed).
  conn: Mutex<Option<Connection>>,
  /// This connection's own commits (SQLite's `data_version` counts only the others').
  writes: AtomicU64,
  /// Where it is, for messages.
  path: String,
}

impl SqliteStore {
  /// Opens (creating if missing) the store at `path`, or an in-memory one for `':memory:'`. The
  /// error names the path: a missing folder (folders are not created), a file that is not a
  /// database, one written by a newer version of this package, one that other connections kept
  /// locked for [`BUSY_WAIT`].
  pub fn open(path: &str) -> Result<Self, String> {
    let fail = |why: String| format!("options.scripts.store: cannot open the saved-scripts store '{path}': {why}");
    let conn = if path == ":memory:" {
      let conn = Connection::open_in_memory().map_err(|e| fail(e.to_string()))?;
      set_up(&conn, false).map_err(|e| fail(e.to_string()))?.map_err(fail)?;
      conn
    } else {
      let p = Path::new(path);
      check_file_path(path).map_err(fail)?;
      // No URI names: the path is a file name, whatever it looks like.
      let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
      // Each try starts again with a new connection: a failed one may have been half set up.
      let conn = retry_busy(|left| {
        let conn = Connection::open_with_flags(p, flags)?;
        conn.busy_timeout(left)?;
        Ok(set_up(&conn, true)?.map(|()| conn))
      })
      .map_err(|e| fail(busy_message(e)))?
      .map_err(fail)?;
      conn.busy_timeout(BUSY_WAIT).map_err(|e| fail(e.to_string()))?;
      conn
    };
    Ok(Self { conn: Mutex::new(Some(conn)), writes: AtomicU64::new(0), path: path.to_string() })
  }

  /// Runs `f` on the connection; tried again (whole) while it is answered `SQLITE_BUSY` at once,
  /// so `f` must be one statement or one transaction, which a failure leaves undone.
  fn with<T>(&self, mut f: impl FnMut(&mut Connection) -> rusqlite::Result<T>) -> Result<T, String> {
    let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
    let Some(conn) = conn.as_mut() else {
      return Err(format!("saved-scripts store '{}': closed (the CodeCall was disposed)", self.path));
    };
    let mut tries = 0u32;
    let done = retry_busy(|left| {
      // A later try waits only for what is left of BUSY_WAIT: the whole operation is bounded.
      if tries > 0 {
        conn.busy_timeout(left)?;
      }
      tries += 1;
      f(conn)
    });
    if tries > 1 {
      let _ = conn.busy_timeout(BUSY_WAIT);
    }
    done.map_err(|e| format!("saved-scripts store '{}': {}", self.path, busy_message(e)))
  }

  fn one(&self, sql: &str, params: impl rusqlite::Params + Copy) -> Result<Option<SavedScript>, String> {
    self.with(|c| c.query_row(sql, params, row).optional())?.transpose()
  }

  fn put_now(&self, s: &NewScript) -> Result<SavedScript, String> {
    let saved = self.with(|c| {
      let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
      let last: Option<i64> = tx
        .query_row("SELECT last_version FROM codecall_script_names WHERE name = ?1", [&s.name], |r| r.get(0))
        .optional()?;
      let highest: Option<i64> =
        tx.query_row("SELECT MAX(version) FROM codecall_scripts WHERE name = ?1", [&s.name], |r| r.get(0))?;
      let version = last.unwrap_or(0).max(highest.unwrap_or(0)) + 1;
      let created_at = now_iso8601();
      let tags = Value::Array(s.tags.iter().cloned().map(Value::String).collect()).to_string();
      tx.execute(
        &format!("INSERT INTO codecall_scripts ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
        params![
          s.name,
          version,
          s.description,
          s.script,
          language_name(s.language),
          s.input_schema.as_ref().map(Value::to_string),
          tags,
          s.code_sha256,
          created_at,
        ],
      )?;
      tx.execute(
        "INSERT INTO codecall_script_names (name, last_version) VALUES (?1, ?2)
           ON CONFLICT(name) DO UPDATE SET last_version = excluded.last_version",
        params![s.name, version],
      )?;
      tx.commit()?;
      Ok(SavedScript {
        name: s.name.clone(),
        version: version as u64,
        description: s.description.clone(),
        script: s.script.clone(),
        language: s.language,
        input_schema: s.input_schema.clone(),
        tags: s.tags.clone(),
        code_sha256: s.code_sha256.clone(),
        created_at,
      })
    })?;
    self.writes.fetch_add(1, Ordering::AcqRel);
    Ok(saved)
  }
}

/// Why `path` cannot be an SQLite file to open or create here: not a path, a folder, or a file in
/// a folder that does not exist (folders are not created). Shared by the run store.
pub(crate) fn check_file_path(path: &str) -> Result<(), String> {
  if path.is_empty() || path.contains('\0') {
    return Err("not a file path".into());
  }
  let p = Path::new(path);
  if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
    return Err(format!("the folder '{}' does not exist", dir.display()));
  }
  if p.is_dir() {
    return Err("it is a folder".into());
  }
  Ok(())
}

/// Sets a new connection up: WAL (for a file; the first connection switches the file, later ones
/// find it so), the schema, the version check. `Err` is SQLite's error (perhaps "busy": try
/// again), `Ok(Err)` a refusal (a newer schema, no WAL), final.
fn set_up(conn: &Connection, file: bool) -> rusqlite::Result<Result<(), String>> {
  if file {
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
      return Ok(Err(format!("cannot use write-ahead logging (journal_mode is {mode})")));
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL")?;
  }
  let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
  if version > SCHEMA {
    return Ok(Err(format!("it was written by a newer version of @codecall/native (schema {version})")));
  }
  let created = conn.execute_batch(&format!("BEGIN IMMEDIATE; {CREATE} PRAGMA user_version = {SCHEMA}; COMMIT;"));
  if created.is_err() {
    let _ = conn.execute_batch("ROLLBACK");
  }
  created.map(Ok)
}

/// Whether another connection holds the file (`SQLITE_BUSY`, `SQLITE_LOCKED`, any extended code).
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
  matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// SQLite's message, saying how long it waited when the file stayed locked.
pub(crate) fn busy_message(e: rusqlite::Error) -> String {
  if is_busy(&e) {
    format!("{e} (other connections kept it locked for {} s)", BUSY_WAIT.as_secs())
  } else {
    e.to_string()
  }
}

/// Runs `attempt` (given the time left of [`BUSY_WAIT`]) until it succeeds, fails otherwise than
/// busy, or [`BUSY_WAIT`] has passed since the first try; pauses 1, 2, 4 … [`MAX_PAUSE`] ms
/// between tries.
pub(crate) fn retry_busy<T>(mut attempt: impl FnMut(Duration) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
  let start = Instant::now();
  let mut pause = Duration::from_millis(1);
  loop {
    match attempt(BUSY_WAIT.saturating_sub(start.elapsed())) {
      Err(e) if is_busy(&e) && start.elapsed() + pause < BUSY_WAIT => {
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_PAUSE);
      }
      done => return done,
    }
  }
}

/// One row as a script; a row this code cannot read is an error, not a panic.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<SavedScript, String>> {
  let version: i64 = r.get(1)?;
  let language: String = r.get(4)?;
  let schema: Option<String> = r.get(5)?;
  let tags: String = r.get(6)?;
  let name: String = r.get(0)?;
  let parsed = (|| {
    let input_schema = match schema {
      Some(s) => Some(serde_json::from_str::<Value>(&s).map_err(|e| format!("inputSchema of '{name}': {e}"))?),
      None => None,
    };
    let tags = match serde_json::from_str::<Value>(&tags) {
      Ok(Value::Array(t)) => t.iter().filter_map(Value::as_str).map(str::to_string).collect(),
      _ => Vec::new(),
    };
    Ok(SavedScript {
      name: name.clone(),
      version: u64::try_from(version).map_err(|_| format!("version of '{name}' is negative"))?,
      description: r.get(2).map_err(|e| e.to_string())?,
      script: r.get(3).map_err(|e| e.to_string())?,
      language: Language::parse(&language).unwrap_or(Language::JavaScript),
      input_schema,
      tags,
      code_sha256: r.get(7).map_err(|e| e.to_string())?,
      created_at: r.get(8).map_err(|e| e.to_string())?,
    })
  })();
  Ok(parsed)
}

impl Store for SqliteStore {
  fn latest(&self, name: &str, done: Answer<Option<SavedScript>>) {
    done(
      self
        .one(&format!("SELECT {COLUMNS} FROM codecall_scripts WHERE name = ?1 ORDER BY version DESC LIMIT 1"), [name]),
    )
  }

  fn get(&self, name: &str, version: u64, done: Answer<Option<SavedScript>>) {
    let Ok(version) = i64::try_from(version) else { return done(Ok(None)) };
    done(
      self.one(
        &format!("SELECT {COLUMNS} FROM codecall_scripts WHERE name = ?1 AND version = ?2"),
        params![name, version],
      ),
    )
  }

  fn put(&self, script: NewScript, done: Answer<SavedScript>) {
    done(self.put_now(&script))
  }

  fn list(&self, done: Answer<Vec<SavedScript>>) {
    let rows = self.with(|c| {
      let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM codecall_scripts s
           WHERE version = (SELECT MAX(version) FROM codecall_scripts t WHERE t.name = s.name)
           ORDER BY name"
      ))?;
      let rows = stmt.query_map([], row)?.collect::<rusqlite::Result<Vec<_>>>();
      rows
    });
    done(rows.and_then(|rows| rows.into_iter().collect()))
  }

  fn remove(&self, name: &str, done: Answer<bool>) {
    let removed = self.with(|c| c.execute("DELETE FROM codecall_scripts WHERE name = ?1", [name]));
    if matches!(removed, Ok(n) if n > 0) {
      self.writes.fetch_add(1, Ordering::AcqRel);
    }
    done(removed.map(|n| n > 0))
  }

  fn synchronous(&self) -> bool {
    true
  }

  fn close(&self) {
    let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(conn) = conn {
      // A failed close (a statement still open) still lets go of the handle when dropped.
      drop(conn.close());
    }
  }

  fn stamp(&self) -> Option<u64> {
    let theirs: i64 = self.with(|c| c.query_row("PRAGMA data_version", [], |r| r.get(0))).ok()?;
    Some((theirs as u64).wrapping_shl(32) ^ self.writes.load(Ordering::Acquire))
  }
}
