//! `codecall:save`: its input read, the script found (given, or one of this session's last
//! executions) and validated with the engine's own policy, all before the store hears of it — a
//! refused save stores nothing.

use serde_json::{Map, Value};

use super::history::History;
use super::{check_name, sha256_hex, NewScript, MAX_DESCRIPTION, MAX_TAGS};
use crate::common::{ErrorCode, InvalidArgument};
use crate::engine::meta::Meta;
use crate::validator::{validate, Language, Location, Policy};

/// Where the saved code comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveSource {
  Script(String),
  /// One of this session's last executions: the code it ran is saved.
  Execution(String),
}

/// `codecall:save`'s input, read.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveInput {
  pub name: String,
  pub description: String,
  pub source: SaveSource,
  pub language: Option<Language>,
  pub input_schema: Option<Value>,
  pub tags: Vec<String>,
}

/// Why a save was refused: the caller's mistake (`ERR_INVALID_ARG`), or the validator's verdict on
/// the script (its own code and location).
#[derive(Debug, Clone, PartialEq)]
pub enum SaveRefusal {
  Invalid(InvalidArgument),
  Rejected { code: ErrorCode, message: String, location: Option<Location> },
}

impl From<InvalidArgument> for SaveRefusal {
  fn from(e: InvalidArgument) -> Self {
    Self::Invalid(e)
  }
}

impl SaveInput {
  /// Reads `{ name, description, script? | executionId?, language?, inputSchema?, tags? }`;
  /// `called` is the name the client called the meta-tool by (unknown keys name it).
  pub fn read(input: Value, called: &str) -> Result<Self, InvalidArgument> {
    let Value::Object(mut o) = input else { return Err("input must be an object".into()) };
    Meta::Save.check_keys(&o, called)?;
    let name = match o.remove("name") {
      Some(Value::String(n)) => n,
      _ => return Err("input.name must be a string".into()),
    };
    check_name(&name).map_err(|m| InvalidArgument::new(format!("input.{m}")))?;
    let description = match o.remove("description") {
      Some(Value::String(d)) if !d.trim().is_empty() => d,
      Some(Value::String(_)) | None | Some(Value::Null) => {
        return Err("input.description is required: say what the script does (search reads it)".into())
      }
      Some(_) => return Err("input.description must be a string".into()),
    };
    if description.len() > MAX_DESCRIPTION {
      return Err(format!("input.description may be at most {MAX_DESCRIPTION} bytes").into());
    }
    let script = match o.remove("script") {
      None | Some(Value::Null) => None,
      Some(Value::String(s)) => Some(s),
      Some(_) => return Err("input.script must be a string".into()),
    };
    let execution = match o.remove("executionId") {
      None | Some(Value::Null) => None,
      Some(Value::String(s)) => Some(s),
      Some(_) => return Err("input.executionId must be a string".into()),
    };
    let source = match (script, execution) {
      (Some(s), None) => SaveSource::Script(s),
      (None, Some(e)) => SaveSource::Execution(e),
      (Some(_), Some(_)) => return Err("give exactly one of input.script and input.executionId, not both".into()),
      (None, None) => return Err("input.script or input.executionId is required (exactly one)".into()),
    };
    let language = match o.remove("language") {
      None | Some(Value::Null) => None,
      Some(Value::String(l)) => Some(Language::parse(&l).ok_or_else(|| {
        format!("input.language must be 'javascript' or 'typescript' (got '{}')", crate::common::char_prefix(&l, 40))
      })?),
      Some(_) => return Err("input.language must be a string".into()),
    };
    let input_schema = match o.remove("inputSchema") {
      None | Some(Value::Null) => None,
      Some(s @ Value::Object(_)) => Some(s),
      Some(_) => return Err("input.inputSchema must be a JSON Schema object".into()),
    };
    let tags = match o.remove("tags") {
      None | Some(Value::Null) => Vec::new(),
      Some(Value::Array(items)) => {
        if items.len() > MAX_TAGS {
          return Err(format!("input.tags may hold at most {MAX_TAGS} tags").into());
        }
        items
          .into_iter()
          .enumerate()
          .map(|(i, t)| match t {
            Value::String(s) if s.len() <= 64 => Ok(s),
            _ => Err(InvalidArgument::new(format!("input.tags[{i}] must be a string of at most 64 bytes"))),
          })
          .collect::<Result<_, _>>()?
      }
      Some(_) => return Err("input.tags must be an array of strings".into()),
    };
    Ok(Self { name, description, source, language, input_schema, tags })
  }

  /// The script to store, checked: the code (found in `history` under `session` for an
  /// `executionId`), within `maxScriptBytes`, accepted by the validator under `policy`.
  pub fn prepare(self, history: &mut History, session: &str, policy: &Policy) -> Result<NewScript, SaveRefusal> {
    let (script, ran_language) = match self.source {
      SaveSource::Script(s) => (s, None),
      SaveSource::Execution(id) => {
        let ran = history.find(session, &id).ok_or_else(|| {
          InvalidArgument::new(format!(
            "input.executionId '{}' is not one of this session's last executions",
            crate::common::char_prefix(&id, 80)
          ))
        })?;
        (ran.script, Some(ran.language))
      }
    };
    let language = self.language.or(ran_language).unwrap_or(Language::JavaScript);
    if script.len() as u64 > policy.max_script_bytes {
      return Err(
        InvalidArgument::new(format!(
          "input.script is {} bytes; the limit is {} bytes (maxScriptBytes)",
          script.len(),
          policy.max_script_bytes
        ))
        .into(),
      );
    }
    let mut policy = policy.clone();
    policy.language = language;
    if let Err(rejection) = validate(&script, &policy) {
      return Err(SaveRefusal::Rejected {
        code: rejection.code(),
        message: format!("The script was not saved: {}", rejection.message()),
        location: rejection.location(),
      });
    }
    Ok(NewScript {
      name: self.name,
      description: self.description,
      code_sha256: sha256_hex(&script),
      script,
      language,
      input_schema: self.input_schema,
      tags: self.tags,
    })
  }
}

/// What a save answers: `{ name: 'saved:<name>', version }`.
pub fn save_result(name: &str, version: u64) -> Value {
  let mut o = Map::new();
  o.insert("name".into(), Value::String(format!("{}{name}", super::PREFIX)));
  o.insert("version".into(), Value::from(version));
  Value::Object(o)
}
