//! The curated synonym table: the verbs and nouns that tool names and agents' requests use for the
//! same thing. A query word is expanded to the other words of every group it belongs to; matches
//! through a synonym count less than the word itself (`score::SYNONYM`).
//!
//! Groups are written as plain words and compared by stem, so `tickets`, `ticketing` and `ticket`
//! all expand alike. A word may sit in several groups (`open` creates a ticket or opens a page).
//! An entry of several words is a phrase: the group's single words expand to every word of it
//! (`pr` → `pull`, `request`), so an abbreviation covers the whole name it stands for; a phrase
//! itself expands nothing (its words are matched as they are).

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
  &["pr", "pull request", "merge request", "mr"],
  &["k8s", "kubernetes", "kubectl", "cluster"],
  &["dm", "direct message"],
  &["gh", "github"],
  &["mongo", "mongodb"],
  &["sprint", "cycle", "iteration", "milestone"],
  &["flag", "toggle", "feature flag", "switch"],
  &["flowchart", "flow diagram", "diagram", "process"],
  &["vault", "password", "credential", "secret", "login", "item"],
  &["own", "ownership", "assign", "claim", "take"],
  &["link", "associate", "association", "connect", "relate"],
  &["row", "record", "entry", "item", "page"],
  &["shell", "exec", "terminal", "command", "console"],
  &["offboard", "remove member", "revoke", "deactivate", "suspend"],
  &["onboard", "invite", "add member"],
  &["priority", "urgent", "urgency", "bump", "escalate", "severity"],
  &["allowed", "permitted", "permission", "access"],
  &["size", "big", "modified", "info", "stat", "metadata"],
  &["sum", "add", "total", "calculate", "compute"],
  &["poi", "place", "landmark", "venue"],
  &["ago", "relative", "since"],
  &["headless", "browser", "navigate", "page"],
  &["status", "state", "health", "progress"],
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
      let entries: Vec<Vec<String>> = group.iter().map(|e| e.split(' ').map(stem).collect()).collect();
      for (i, key) in entries.iter().enumerate() {
        let [key] = key.as_slice() else { continue }; // phrases expand nothing
        let expansion = table.entry(key.clone()).or_default();
        for (j, other) in entries.iter().enumerate() {
          for word in other {
            if i != j && word != key && !expansion.contains(word) {
              expansion.push(word.clone());
            }
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
    let pr = of("pr");
    assert!(pr.contains(&stem("pull")) && pr.contains(&stem("request")) && pr.contains(&stem("merge")));
    assert!(of("pull").is_empty(), "phrases expand nothing");
  }
}
