//! The curated synonym table: the verbs and nouns that tool names and agents' requests use for the
//! same thing. A query word is expanded to the other words of every group it belongs to; matches
//! through a synonym count less than the word itself (`score::SYNONYM`).
//!
//! Groups are written as plain words and compared by stem, so `tickets`, `ticketing` and `ticket`
//! all expand alike. A word may sit in several groups (`open` creates a ticket or opens a page).

use std::{collections::HashMap, sync::OnceLock};

use super::analysis::stem;

const GROUPS: &[&[&str]] = &[
  // verbs
  &["create", "add", "new", "open", "make", "insert", "register", "generate", "file", "submit"],
  &["delete", "remove", "destroy", "erase", "drop", "purge", "discard", "trash", "unlink"],
  &["list", "enumerate", "show", "browse", "all", "index"],
  &["get", "fetch", "read", "retrieve", "obtain", "view", "show", "lookup", "load", "inspect", "details"],
  &["search", "find", "query", "lookup", "seek", "locate", "discover", "filter"],
  &["update", "edit", "modify", "change", "patch", "set", "alter", "rename", "amend"],
  &["send", "post", "publish", "notify", "deliver", "dispatch", "message"],
  &["run", "execute", "exec", "invoke", "launch", "start", "trigger", "call"],
  &["stop", "halt", "cancel", "kill", "terminate", "abort", "end"],
  &["close", "resolve", "complete", "finish", "done"],
  &["upload", "attach", "import", "put"],
  &["download", "export", "save"],
  &["deploy", "release", "ship", "rollout"],
  &["navigate", "visit", "goto", "go", "open", "browse"],
  &["click", "press", "tap"],
  &["type", "fill", "enter", "input"],
  &["screenshot", "capture", "snapshot"],
  &["summarize", "summary", "overview", "digest"],
  &["count", "total", "number", "stats", "statistics", "metrics", "analytics"],
  &["describe", "explain", "info", "information", "details", "metadata"],
  &["assign", "assignee", "owner", "delegate"],
  &["star", "favorite", "bookmark"],
  &["merge", "combine", "integrate"],
  &["copy", "duplicate", "clone", "fork"],
  &["move", "relocate", "transfer", "rename"],
  &["write", "save", "store", "persist", "record"],
  &["think", "reason", "plan", "reflect"],
  &["check", "verify", "validate", "test"],
  &["watch", "monitor", "track", "observe", "subscribe"],
  &["schedule", "book", "plan"],
  // nouns
  &["issue", "ticket", "bug", "defect", "incident"],
  &["task", "todo", "ticket", "item", "card"],
  &["user", "account", "member", "person", "people", "profile", "customer"],
  &["message", "chat", "post", "dm", "conversation"],
  &["repo", "repository", "project", "codebase"],
  &["file", "document", "doc", "attachment"],
  &["folder", "directory", "dir", "path"],
  &["comment", "reply", "note", "remark"],
  &["pr", "pull", "merge"],
  &["page", "website", "site", "url", "link", "web", "webpage"],
  &["image", "picture", "photo", "screenshot", "img"],
  &["email", "mail", "inbox"],
  &["channel", "room", "conversation", "thread"],
  &["team", "group", "organization", "org", "workspace"],
  &["payment", "charge", "transaction", "pay"],
  &["invoice", "bill", "billing", "receipt"],
  &["subscription", "plan", "membership"],
  &["calendar", "event", "meeting", "appointment"],
  &["location", "place", "address", "geocode", "coordinates", "map"],
  &["direction", "route", "navigation"],
  &["database", "db", "sql", "table"],
  &["container", "docker"],
  &["log", "logs", "history", "audit"],
  &["error", "exception", "failure", "crash", "issue"],
  &["alert", "alarm", "notification", "warning"],
  &["key", "secret", "credential", "token", "password", "apikey"],
  &["permission", "role", "access", "privilege", "grant"],
  &["tag", "label", "topic", "category"],
  &["entity", "node", "object"],
  &["relation", "relationship", "edge", "link", "connection"],
  &["chart", "graph", "plot", "diagram", "visualize", "visualization"],
  &["job", "build", "pipeline", "workflow", "run"],
  &["commit", "revision", "changeset"],
  &["weather", "forecast"],
  &["price", "cost", "pricing", "fee"],
  &["product", "item", "sku"],
  &["order", "purchase"],
  &["time", "date", "clock", "timezone"],
  &["text", "content", "body"],
  &["video", "clip", "movie"],
];

/// The synonyms of a stem (never the stem itself), in table order without repeats.
pub fn of(stemmed: &str) -> &'static [String] {
  static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
  let table = TABLE.get_or_init(|| {
    let mut table: HashMap<String, Vec<String>> = HashMap::new();
    for group in GROUPS {
      let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
      for s in &stems {
        let entry = table.entry(s.clone()).or_default();
        for other in &stems {
          if other != s && !entry.contains(other) {
            entry.push(other.clone());
          }
        }
      }
    }
    table
  });
  table.get(stemmed).map(Vec::as_slice).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn expands_by_stem_both_ways() {
    assert!(of(&stem("tickets")).contains(&stem("issue")));
    assert!(of(&stem("issue")).contains(&stem("ticket")));
    assert!(of(&stem("remove")).contains(&stem("delete")));
    assert!(!of(&stem("delete")).contains(&stem("delete")));
    assert!(of("zzzz").is_empty());
  }
}
