//! Which tool calls need a person's yes (`api.md` §9): the policy of `CodeCallOptions.approval`
//! (or the gateway's `codecall.approval`), a tool's own `approval` metadata, and its MCP
//! annotations with MCP's own defaults — an unannotated tool may destroy.
//!
//! Plain Rust, no I/O: [`ApprovalPolicy::decide`] says, for one call, `Allow`, `Deny` or `Ask`
//! (with the reason the request carries); the asking itself is the host's (`approve`).

use std::time::Duration;

use serde_json::Value;

use crate::common::{Glob, InvalidArgument};

/// `approval.require`: which calls need a person when nothing more specific says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Require {
  None,
  Destructive,
  Writes,
  All,
}

/// A tool's own `approval` (`ToolDefinition.approval`, `_meta.codecall.approval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolApproval {
  Ask,
  Allow,
  Deny,
}

impl ToolApproval {
  pub fn parse(s: &str) -> Option<Self> {
    match s {
      "ask" => Some(Self::Ask),
      "allow" => Some(Self::Allow),
      "deny" => Some(Self::Deny),
      _ => None,
    }
  }
}

/// Why a call is put to a person (`ApprovalRequest.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
  Destructive,
  Writes,
  All,
  Ask,
}

impl Reason {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Destructive => "destructive",
      Self::Writes => "writes",
      Self::All => "all",
      Self::Ask => "ask",
    }
  }
}

/// What the policy says of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
  Allow,
  /// Refused without asking; the message says by what.
  Deny(String),
  Ask(Reason),
}

/// `approval` of the options, checked.
#[derive(Debug, Clone)]
pub struct ApprovalPolicy {
  pub require: Require,
  pub ask: Vec<Glob>,
  pub allow: Vec<Glob>,
  pub deny: Vec<Glob>,
  /// How long to wait for the person (`timeoutMs`, default 120 s).
  pub timeout: Duration,
  /// When the host or its client cannot ask: `true` allows, `false` (the default) denies.
  pub allow_when_unavailable: bool,
}

impl Default for ApprovalPolicy {
  fn default() -> Self {
    Self {
      require: Require::None,
      ask: Vec::new(),
      allow: Vec::new(),
      deny: Vec::new(),
      timeout: Duration::from_millis(120_000),
      allow_when_unavailable: false,
    }
  }
}

/// The keys `approval` may have.
pub const APPROVAL_KEYS: &[&str] = &["require", "ask", "allow", "deny", "timeoutMs", "whenUnavailable"];

impl ApprovalPolicy {
  /// Reads `approval` (`name` is where it was, for messages). Unknown keys were refused before.
  pub fn read(value: &Value, name: &str) -> Result<Self, InvalidArgument> {
    let Value::Object(o) = value else { return Err(format!("{name} must be an object").into()) };
    let mut policy = Self::default();
    let present = |key: &str| o.get(key).filter(|v| !v.is_null());
    if let Some(v) = present("require") {
      policy.require = match v.as_str() {
        Some("none") => Require::None,
        Some("destructive") => Require::Destructive,
        Some("writes") => Require::Writes,
        Some("all") => Require::All,
        _ => return Err(format!("{name}.require must be 'none', 'destructive', 'writes' or 'all' (got {v})").into()),
      };
    }
    for (key, slot) in [("ask", &mut policy.ask), ("allow", &mut policy.allow), ("deny", &mut policy.deny)] {
      if let Some(v) = present(key) {
        let Value::Array(items) = v else { return Err(format!("{name}.{key} must be an array of globs").into()) };
        for (i, item) in items.iter().enumerate() {
          let Value::String(glob) = item else { return Err(format!("{name}.{key}[{i}] must be a string").into()) };
          slot.push(Glob::new(glob));
        }
      }
    }
    if let Some(v) = present("timeoutMs") {
      match v.as_f64() {
        Some(ms) if ms.is_finite() && ms >= 1.0 && ms.fract() == 0.0 && ms <= 86_400_000.0 => {
          policy.timeout = Duration::from_millis(ms as u64)
        }
        _ => {
          return Err(
            format!("{name}.timeoutMs must be a whole number of milliseconds from 1 to 86400000 (got {v})").into(),
          )
        }
      }
    }
    if let Some(v) = present("whenUnavailable") {
      policy.allow_when_unavailable = match v.as_str() {
        Some("deny") => false,
        Some("allow") => true,
        _ => return Err(format!("{name}.whenUnavailable must be 'deny' or 'allow' (got {v})").into()),
      };
    }
    Ok(policy)
  }

  /// True when no call can ever need a person or be denied by this policy (the default): the
  /// engine then skips the whole step.
  pub fn is_off(&self) -> bool {
    self.require == Require::None && self.ask.is_empty() && self.deny.is_empty()
  }

  /// The decision for a call of `tool`, given its own `approval` and its MCP `annotations`.
  /// Most restrictive first: deny (glob or tool) > ask (glob or tool) > allow (glob or tool) >
  /// `require` over the annotations.
  pub fn decide(&self, tool: &str, own: Option<ToolApproval>, annotations: Option<&Value>) -> Decision {
    let hit = |globs: &[Glob]| globs.iter().find(|g| g.matches(tool)).map(|g| g.as_str().to_string());
    if let Some(glob) = hit(&self.deny) {
      return Decision::Deny(format!("Tool '{tool}' is denied by the approval policy (deny: '{glob}')"));
    }
    if own == Some(ToolApproval::Deny) {
      return Decision::Deny(format!("Tool '{tool}' is denied by its own approval setting ('deny')"));
    }
    if hit(&self.ask).is_some() || own == Some(ToolApproval::Ask) {
      return Decision::Ask(Reason::Ask);
    }
    if hit(&self.allow).is_some() || own == Some(ToolApproval::Allow) {
      return Decision::Allow;
    }
    let hint = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_bool);
    let destructive_hint = hint("destructiveHint");
    // A tool that says it is both read-only and destructive counts as destructive.
    let read_only = hint("readOnlyHint") == Some(true) && destructive_hint != Some(true);
    // MCP's defaults: destructiveHint is true unless said otherwise; it means nothing for a
    // read-only tool.
    let destructive = !read_only && destructive_hint.unwrap_or(true);
    match self.require {
      Require::None => Decision::Allow,
      Require::All => Decision::Ask(Reason::All),
      Require::Destructive if destructive => Decision::Ask(Reason::Destructive),
      Require::Writes if !read_only => Decision::Ask(Reason::Writes),
      Require::Destructive | Require::Writes => Decision::Allow,
    }
  }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
  use serde_json::json;

  use super::*;

  fn policy(v: Value) -> ApprovalPolicy {
    ApprovalPolicy::read(&v, "approval").unwrap()
  }

  #[test]
  fn require_over_annotations_follows_mcp_defaults() {
    let ro = json!({ "readOnlyHint": true });
    let safe_write = json!({ "readOnlyHint": false, "destructiveHint": false });
    let destroys = json!({ "destructiveHint": true });
    let both = json!({ "readOnlyHint": true, "destructiveHint": true });
    let table: &[(&str, Option<&Value>, [&str; 4])] = &[
      // annotations        none     destructive    writes         all
      ("unannotated", None, ["allow", "destructive", "writes", "all"]),
      ("read-only", Some(&ro), ["allow", "allow", "allow", "all"]),
      ("non-destructive write", Some(&safe_write), ["allow", "allow", "writes", "all"]),
      ("destructive", Some(&destroys), ["allow", "destructive", "writes", "all"]),
      ("read-only and destructive", Some(&both), ["allow", "destructive", "writes", "all"]),
    ];
    for (what, annotations, expected) in table {
      for (require, want) in ["none", "destructive", "writes", "all"].iter().zip(expected) {
        let got = match policy(json!({ "require": require })).decide("t", None, *annotations) {
          Decision::Allow => "allow".to_string(),
          Decision::Ask(r) => r.as_str().to_string(),
          Decision::Deny(m) => m,
        };
        assert_eq!(&got, want, "{what}, require {require}");
      }
    }
  }

  #[test]
  fn deny_beats_ask_beats_allow_beats_require() {
    let p =
      policy(json!({ "require": "all", "deny": ["gh:delete_*"], "ask": ["gh:*"], "allow": ["gh:get_*", "fs:*"] }));
    assert!(matches!(p.decide("gh:delete_repo", None, None), Decision::Deny(m) if m.contains("deny: 'gh:delete_*'")));
    assert_eq!(p.decide("gh:get_repo", None, None), Decision::Ask(Reason::Ask));
    assert_eq!(p.decide("fs:read", None, None), Decision::Allow);
    assert_eq!(p.decide("fs:read", Some(ToolApproval::Ask), None), Decision::Ask(Reason::Ask));
    assert!(matches!(p.decide("fs:read", Some(ToolApproval::Deny), None), Decision::Deny(_)));
    assert_eq!(p.decide("x:y", Some(ToolApproval::Allow), None), Decision::Allow);
    assert_eq!(p.decide("x:y", None, None), Decision::Ask(Reason::All));
    assert!(ApprovalPolicy::default().is_off());
    assert!(!policy(json!({ "deny": ["a"] })).is_off());
  }

  #[test]
  fn bad_settings_name_the_key() {
    let err = |v: Value| ApprovalPolicy::read(&v, "options.approval").unwrap_err().to_string();
    assert!(err(json!({ "require": "some" })).contains("options.approval.require must be"));
    assert!(err(json!({ "ask": "x" })).contains("options.approval.ask must be an array"));
    assert!(err(json!({ "deny": [1] })).contains("options.approval.deny[0] must be a string"));
    assert!(err(json!({ "timeoutMs": 0 })).contains("options.approval.timeoutMs"));
    assert!(err(json!({ "whenUnavailable": "ask" })).contains("options.approval.whenUnavailable"));
    let p = policy(json!({ "require": null, "timeoutMs": 5000, "whenUnavailable": "allow" }));
    assert_eq!((p.require, p.timeout, p.allow_when_unavailable), (Require::None, Duration::from_secs(5), true));
  }
}
