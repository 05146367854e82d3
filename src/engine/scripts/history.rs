//! Each session's last executions (§11 "Execution History"), so that a model can save "the plan
//! that just ran" by its `executionId`. A session is the host's `sessionId` (the MCP session in the
//! gateway and the adapters); without one, the `CodeCall` itself. Bounded three ways: `historySize`
//! executions a session, [`MAX_SESSIONS`] sessions, [`MAX_BYTES`] of code in all — past a bound the
//! least recently used session goes first.

use std::collections::{HashMap, VecDeque};

use super::MAX_SESSIONS;
use crate::validator::Language;

/// Code kept for all sessions together.
pub const MAX_BYTES: usize = 64 << 20;

/// One execution as it was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
  pub execution_id: String,
  pub script: String,
  pub language: Language,
}

#[derive(Default)]
struct Session {
  last_used: u64,
  runs: VecDeque<Ran>,
}

pub struct History {
  size: usize,
  sessions: HashMap<String, Session>,
  clock: u64,
  bytes: usize,
}

impl History {
  pub fn new(size: usize) -> Self {
    Self { size, sessions: HashMap::new(), clock: 0, bytes: 0 }
  }

  /// Remembers an execution of `session` (the oldest of its runs past `historySize` is forgotten).
  pub fn record(&mut self, session: &str, ran: Ran) {
    if self.size == 0 {
      return;
    }
    self.clock += 1;
    let clock = self.clock;
    self.bytes += ran.script.len();
    let s = self.sessions.entry(session.to_string()).or_default();
    s.last_used = clock;
    s.runs.push_back(ran);
    let mut freed = 0;
    while s.runs.len() > self.size {
      freed += s.runs.pop_front().map_or(0, |r| r.script.len());
    }
    self.bytes -= freed;
    while self.sessions.len() > MAX_SESSIONS || (self.bytes > MAX_BYTES && self.sessions.len() > 1) {
      let Some(oldest) = self.sessions.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| k.clone()) else { break };
      if oldest == session && self.sessions.len() == 1 {
        break;
      }
      if let Some(gone) = self.sessions.remove(&oldest) {
        self.bytes -= gone.runs.iter().map(|r| r.script.len()).sum::<usize>();
      }
    }
  }

  /// One of `session`'s remembered executions.
  pub fn find(&mut self, session: &str, execution_id: &str) -> Option<Ran> {
    self.clock += 1;
    let s = self.sessions.get_mut(session)?;
    s.last_used = self.clock;
    s.runs.iter().rev().find(|r| r.execution_id == execution_id).cloned()
  }
}
