//! Saved scripts (`api.md` §11): a plan that worked becomes the tool `saved:<name>`, versioned, in a
//! store the engine does not own. The one room of the feature:
//!
//! | file        | owns                                                                          |
//! |-------------|-------------------------------------------------------------------------------|
//! | `mod`       | [`SavedScript`], names (`saved:<name>[@<version>]`), a saved script as a tool  |
//! | `store`     | the [`Store`] trait: answers through callbacks (a host's store may be async)   |
//! | `sqlite`    | the default store: SQLite compiled into the addon, WAL, one transaction a save |
//! | `save`      | `codecall:save`'s input, checked with the engine's policy before it is stored  |
//! | `history`   | each session's last executions, for saves by `executionId`                    |
//! | `nested`    | a saved script run by a plan: depth, cycles, the caller's budget and time      |
//! | `binding`   | `options.scripts`, `CodeCall.scripts`, and a JavaScript `ScriptStore`         |
//!
//! The store is the truth: the engine keeps only the index's copy of each name's latest version,
//! refreshed before a search, so another host's save is found on the next search. Running a saved
//! script always reads it from the store.

#[cfg_attr(test, allow(dead_code))]
pub(super) mod binding;
mod history;
mod nested;
mod save;
pub(crate) mod sqlite;
mod store;

use serde_json::{json, Map, Value};

pub use history::{History, Ran};
pub use nested::{Lineage, SavedCtx, SavedRun};
pub use save::{save_result, SaveInput, SaveRefusal};
pub use sqlite::SqliteStore;
pub use store::{answer_now, Store, StoreOp};

use crate::validator::Language;

/// The appId, `source` and tool-name prefix of saved scripts.
pub const APP_ID: &str = "saved";
pub const PREFIX: &str = "saved:";
/// `historySize` and `maxDepth` defaults.
pub const DEFAULT_HISTORY: usize = 20;
pub const DEFAULT_MAX_DEPTH: usize = 4;
/// Most sessions whose history is kept (the least recently used one is forgotten past it).
pub const MAX_SESSIONS: usize = 1024;
/// Longest description and most tags a save keeps.
pub const MAX_DESCRIPTION: usize = 4096;
pub const MAX_TAGS: usize = 32;

/// One stored version of a saved script (`SavedScript` of §11).
#[derive(Debug, Clone, PartialEq)]
pub struct SavedScript {
  pub name: String,
  pub version: u64,
  pub description: String,
  pub script: String,
  pub language: Language,
  pub input_schema: Option<Value>,
  pub tags: Vec<String>,
  pub code_sha256: String,
  pub created_at: String,
}

/// What a save hands the store: a [`SavedScript`] without its version and time.
#[derive(Debug, Clone, PartialEq)]
pub struct NewScript {
  pub name: String,
  pub description: String,
  pub script: String,
  pub language: Language,
  pub input_schema: Option<Value>,
  pub tags: Vec<String>,
  pub code_sha256: String,
}

impl SavedScript {
  /// `saved:<name>`.
  pub fn tool_name(&self) -> String {
    format!("{PREFIX}{}", self.name)
  }

  /// `saved:<name>@<version>`: what audit lines and error chains name.
  pub fn label(&self) -> String {
    format!("{PREFIX}{}@{}", self.name, self.version)
  }

  pub fn to_json(&self) -> Value {
    let mut o = script_fields(
      &self.name,
      &self.description,
      &self.script,
      self.language,
      self.input_schema.as_ref(),
      &self.tags,
      &self.code_sha256,
    );
    o.insert("version".into(), json!(self.version));
    o.insert("createdAt".into(), Value::String(self.created_at.clone()));
    Value::Object(o)
  }

  /// A script as a host's store answered it (JSON). Anything else than §11's shape is an error
  /// naming the field: the store is the host's code, not the model's, but it is not trusted to be
  /// right either.
  pub fn from_json(value: &Value) -> Result<Self, String> {
    let o = value.as_object().ok_or("a saved script must be an object")?;
    let string = |key: &str| -> Result<String, String> {
      o.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("saved script: {key} must be a string"))
    };
    let name = string("name")?;
    check_name(&name).map_err(|m| format!("saved script: {m}"))?;
    let version = o
      .get("version")
      .and_then(Value::as_f64)
      .filter(|v| v.is_finite() && *v >= 1.0 && v.fract() == 0.0 && *v <= 9.0e15)
      .ok_or("saved script: version must be a positive integer")? as u64;
    let script = string("script")?;
    let language = match o.get("language") {
      None | Some(Value::Null) => Language::JavaScript,
      Some(Value::String(l)) => {
        Language::parse(l).ok_or("saved script: language must be 'javascript' or 'typescript'")?
      }
      Some(_) => return Err("saved script: language must be a string".into()),
    };
    let input_schema = match o.get("inputSchema") {
      None | Some(Value::Null) => None,
      Some(s @ Value::Object(_)) => Some(s.clone()),
      Some(_) => return Err("saved script: inputSchema must be an object".into()),
    };
    let tags = match o.get("tags") {
      None | Some(Value::Null) => Vec::new(),
      Some(Value::Array(t)) => t.iter().filter_map(Value::as_str).map(str::to_string).collect(),
      Some(_) => return Err("saved script: tags must be an array of strings".into()),
    };
    let code_sha256 = match o.get("codeSha256").and_then(Value::as_str) {
      Some(s) => s.to_string(),
      None => sha256_hex(&script),
    };
    Ok(Self {
      name,
      version,
      description: o.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
      script,
      language,
      input_schema,
      tags,
      code_sha256,
      created_at: o.get("createdAt").and_then(Value::as_str).unwrap_or_default().to_string(),
    })
  }

  /// The saved script as a tool definition: what the registry indexes and `describe` starts from.
  /// Never listed in `tools/list` (it is found through search, like every indexed tool).
  pub fn tool_json(&self) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::String(self.tool_name()));
    o.insert("description".into(), Value::String(self.description.clone()));
    if let Some(s) = &self.input_schema {
      o.insert("inputSchema".into(), s.clone());
    }
    o.insert("appId".into(), Value::String(APP_ID.into()));
    o.insert("source".into(), Value::String(APP_ID.into()));
    o.insert("tags".into(), Value::Array(self.tags.iter().cloned().map(Value::String).collect()));
    o.insert("codecall".into(), json!({ "visibleInListTools": false, "enabledInCodeCall": true }));
    Value::Object(o)
  }
}

impl NewScript {
  pub fn to_json(&self) -> Value {
    Value::Object(script_fields(
      &self.name,
      &self.description,
      &self.script,
      self.language,
      self.input_schema.as_ref(),
      &self.tags,
      &self.code_sha256,
    ))
  }
}

/// The fields a saved script and a save share, as §11's JSON.
fn script_fields(
  name: &str,
  description: &str,
  script: &str,
  language: Language,
  input_schema: Option<&Value>,
  tags: &[String],
  code_sha256: &str,
) -> Map<String, Value> {
  let mut o = Map::new();
  o.insert("name".into(), Value::String(name.into()));
  o.insert("description".into(), Value::String(description.into()));
  o.insert("script".into(), Value::String(script.into()));
  o.insert("language".into(), Value::String(language_name(language).into()));
  if let Some(s) = input_schema {
    o.insert("inputSchema".into(), s.clone());
  }
  o.insert("tags".into(), Value::Array(tags.iter().cloned().map(Value::String).collect()));
  o.insert("codeSha256".into(), Value::String(code_sha256.into()));
  o
}

pub fn language_name(l: Language) -> &'static str {
  match l {
    Language::JavaScript => "javascript",
    Language::TypeScript => "typescript",
  }
}

/// `name` matches `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn check_name(name: &str) -> Result<(), String> {
  let b = name.as_bytes();
  let ok = !b.is_empty()
    && b.len() <= 64
    && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
    && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-');
  if ok {
    Ok(())
  } else {
    Err(format!("name must match ^[a-z0-9][a-z0-9_-]{{0,63}}$ (got '{}')", crate::common::char_prefix(name, 80)))
  }
}

/// A reference to a saved script: `<name>` (the latest version) or `<name>@<version>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptRef {
  pub name: String,
  pub version: Option<u64>,
}

impl ScriptRef {
  /// Reads `name` or `name@3`; `Err` says what is wrong.
  pub fn parse(s: &str) -> Result<Self, String> {
    let (name, version) = match s.split_once('@') {
      Some((n, v)) => {
        let digits = !v.is_empty() && v.len() <= 15 && v.bytes().all(|c| c.is_ascii_digit()) && !v.starts_with('0');
        let version = digits
          .then(|| v.parse::<u64>().ok())
          .flatten()
          .ok_or_else(|| format!("'{}' is not a version (a positive integer)", crate::common::char_prefix(v, 40)))?;
        (n, Some(version))
      }
      None => (s, None),
    };
    check_name(name)?;
    Ok(Self { name: name.to_string(), version })
  }

  /// Reads a tool name `saved:<name>[@<version>]`; `None` when it is not in the `saved:` namespace.
  pub fn of_tool(tool: &str) -> Option<Result<Self, String>> {
    tool.strip_prefix(PREFIX).map(Self::parse)
  }

  pub fn label(&self) -> String {
    match self.version {
      Some(v) => format!("{PREFIX}{}@{v}", self.name),
      None => format!("{PREFIX}{}", self.name),
    }
  }
}

/// SHA-256 of `text` (UTF-8), lowercase hex: a saved script's `codeSha256`.
pub fn sha256_hex(text: &str) -> String {
  use sha2::{Digest, Sha256};
  let digest = Sha256::digest(text.as_bytes());
  let mut out = String::with_capacity(64);
  for b in digest {
    out.push_str(&format!("{b:02x}"));
  }
  out
}

/// Now as ISO 8601 UTC with milliseconds (`2026-11-27T17:20:17.123Z`), without a date crate.
pub fn now_iso8601() -> String {
  let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
  let secs = now.as_secs();
  let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
  // Howard Hinnant's days-to-civil.
  let z = days + 719_468;
  let era = z.div_euclid(146_097);
  let doe = z - era * 146_097;
  let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
  let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  let mp = (5 * doy + 2) / 153;
  let day = doy - (153 * mp + 2) / 5 + 1;
  let month = if mp < 10 { mp + 3 } else { mp - 9 };
  let year = yoe + era * 400 + i64::from(month <= 2);
  format!(
    "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
    rem / 3600,
    rem % 3600 / 60,
    rem % 60,
    now.subsec_millis()
  )
}

/// The settings of `options.scripts`, less the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptsSettings {
  pub history_size: usize,
  pub max_depth: usize,
}

impl Default for ScriptsSettings {
  fn default() -> Self {
    Self { history_size: DEFAULT_HISTORY, max_depth: DEFAULT_MAX_DEPTH }
  }
}

#[cfg(test)]
mod tests;
