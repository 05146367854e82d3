//! `codecall_runs (id, journal, expires_at)` in an SQLite file — the saved scripts' file may be
//! the same one (its own table; neither touches the other's). WAL, and the busy retries of
//! `scripts::sqlite`, so several processes share it. Expired rows are never answered, and are
//! deleted when the store opens and on every put.
//!
//! Claiming: two instances handed the same `requestState` at once both `get` the journal, then
//! both `delete` it; `DELETE` is one statement, so exactly one of them removes the row and is
//! answered `true` — that one resumes the run.

use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::engine::scripts::sqlite::{busy_message, check_file_path, retry_busy, BUSY_WAIT};

const CREATE: &str = "
  CREATE TABLE IF NOT EXISTS codecall_runs (
    id TEXT PRIMARY KEY,
    journal TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );";

/// Epoch milliseconds now.
pub fn now_ms() -> i64 {
  SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

pub struct SqliteRuns {
  /// `None` once closed.
  conn: Mutex<Option<Connection>>,
  path: String,
}

impl SqliteRuns {
  /// Opens (creating if missing) the run store at `path`, or an in-memory one for `':memory:'`.
  /// The error names the path (a missing folder: folders are not created).
  pub fn open(path: &str, what: &str) -> Result<Self, String> {
    let fail = |why: String| format!("{what}: cannot open the run store '{path}': {why}");
    let conn = if path == ":memory:" {
      let conn = Connection::open_in_memory().map_err(|e| fail(e.to_string()))?;
      conn.execute_batch(CREATE).map_err(|e| fail(e.to_string()))?;
      conn
    } else {
      let p = Path::new(path);
      check_file_path(path).map_err(fail)?;
      let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
      let conn = retry_busy(|left| {
        let conn = Connection::open_with_flags(p, flags)?;
        conn.busy_timeout(left)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch(&format!("PRAGMA synchronous = NORMAL; {CREATE}"))?;
        Ok((conn, mode))
      })
      .map_err(|e| fail(busy_message(e)))?;
      let (conn, mode) = conn;
      if !mode.eq_ignore_ascii_case("wal") {
        return Err(fail(format!("cannot use write-ahead logging (journal_mode is {mode})")));
      }
      conn.busy_timeout(BUSY_WAIT).map_err(|e| fail(e.to_string()))?;
      conn
    };
    let store = Self { conn: Mutex::new(Some(conn)), path: path.to_string() };
    store.with(|c| c.execute("DELETE FROM codecall_runs WHERE expires_at <= ?1", [now_ms()])).map_err(fail)?;
    Ok(store)
  }

  /// Runs one statement; tried again while SQLite answers busy at once.
  fn with<T>(&self, mut f: impl FnMut(&Connection) -> rusqlite::Result<T>) -> Result<T, String> {
    let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
    let Some(conn) = conn.as_ref() else {
      return Err(format!("run store '{}': closed", self.path));
    };
    retry_busy(|_| f(conn)).map_err(|e| format!("run store '{}': {}", self.path, busy_message(e)))
  }

  /// Stores (or replaces) a run's journal until `expires_at` (epoch ms).
  pub fn put(&self, id: &str, journal: &str, expires_at: i64) -> Result<(), String> {
    let now = now_ms();
    self.with(|c| {
      c.execute("DELETE FROM codecall_runs WHERE expires_at <= ?1", [now])?;
      c.execute(
        "INSERT INTO codecall_runs (id, journal, expires_at) VALUES (?1, ?2, ?3)
           ON CONFLICT(id) DO UPDATE SET journal = excluded.journal, expires_at = excluded.expires_at",
        params![id, journal, expires_at],
      )
    })?;
    Ok(())
  }

  /// A run's journal, unless there is none or it expired.
  pub fn get(&self, id: &str) -> Result<Option<String>, String> {
    let now = now_ms();
    self.with(|c| {
      c.query_row("SELECT journal FROM codecall_runs WHERE id = ?1 AND expires_at > ?2", params![id, now], |r| r.get(0))
        .optional()
    })
  }

  /// Removes a run's journal: `true` when this call removed it (the claim), `false` when it was
  /// not there (another instance claimed it, it ended, or it expired).
  pub fn delete(&self, id: &str) -> Result<bool, String> {
    let now = now_ms();
    // An expired row is removed too, but it was not a run anyone could still resume: not a claim.
    let removed = self.with(|c| {
      let live = c.execute("DELETE FROM codecall_runs WHERE id = ?1 AND expires_at > ?2", params![id, now])?;
      c.execute("DELETE FROM codecall_runs WHERE id = ?1", [id])?;
      Ok(live)
    })?;
    Ok(removed == 1)
  }

  /// Where it is (as given: a path or `':memory:'`).
  pub fn path(&self) -> &str {
    &self.path
  }

  /// Closes the file (an open file cannot be removed on Windows). Later calls fail.
  pub fn close(&self) {
    let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
    conn.take();
  }
}
