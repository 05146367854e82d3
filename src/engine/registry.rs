//! The tool registry: every tool the host gave, with its CodeCall metadata, and the rules that
//! decide what `list_tools` shows and what the CodeCall index holds (seed 000, "Modes").
//!
//! | mode              | listed in `list_tools`              | in the CodeCall index                       |
//! |-------------------|-------------------------------------|---------------------------------------------|
//! | `codecall_only`   | only `visibleInListTools === true`  | all, except `enabledInCodeCall === false`   |
//! | `codecall_opt_in` | only `visibleInListTools === true`  | only `enabledInCodeCall === true`           |
//! | `metadata_driven` | only `visibleInListTools === true`  | only `enabledInCodeCall === true`           |
//!
//! Before any mode rule, `includeTools(tool) === false` drops a tool from CodeCall entirely (neither
//! listed nor indexed), and `internal: true` tools (seed 002) are never listed, indexed, described
//! or callable.

use super::approval::ToolApproval;
use crate::common::InvalidArgument;
use crate::search::ServerText;
use serde_json::{Map, Value};

use crate::validator::SelfReference;

/// `CodeCallOptions.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
  #[default]
  CodecallOnly,
  CodecallOptIn,
  MetadataDriven,
}

impl Mode {
  pub fn parse(s: &str) -> Option<Self> {
    match s {
      "codecall_only" => Some(Self::CodecallOnly),
      "codecall_opt_in" => Some(Self::CodecallOptIn),
      "metadata_driven" => Some(Self::MetadataDriven),
      _ => None,
    }
  }
}

/// The longest tool name accepted (MCP names are at most 128 characters; some servers exceed it).
pub const MAX_NAME_CHARS: usize = 256;

/// One tool as the host defined it (`api.md` §5 `ToolDefinition`), checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
  pub name: String,
  pub title: Option<String>,
  pub description: Option<String>,
  pub input_schema: Option<Value>,
  pub output_schema: Option<Value>,
  pub annotations: Option<Value>,
  pub app_id: Option<String>,
  /// `'inline'` when the host gave none.
  pub source: String,
  pub tags: Vec<String>,
  /// `{ description, input, output? }` objects, as given.
  pub examples: Vec<Value>,
  pub visible_in_list_tools: Option<bool>,
  pub enabled_in_codecall: Option<bool>,
  pub internal: bool,
  /// `approval` (or `codecall.approval`, `_meta.codecall.approval`): §9's per-tool setting.
  pub approval: Option<ToolApproval>,
  /// `server`: how the tool's MCP server describes itself; searched, never listed or described.
  pub server: Option<ServerText>,
  /// MCP fields passed through to `list_tools` unchanged (`_meta`, `icons`).
  pub passthrough: Map<String, Value>,
  /// The result of `includeTools(tool)` (true without an `includeTools`).
  pub included: bool,
}

impl ToolDef {
  /// Reads a tool definition (already plain JSON). `at` names it in messages (`tools[3]`).
  pub fn from_json(value: Value, at: &str, reserved: &SelfReference) -> Result<Self, InvalidArgument> {
    let Value::Object(mut o) = value else {
      return Err(format!("{at} must be an object").into());
    };
    let name = match o.remove("name") {
      Some(Value::String(s)) if !s.trim().is_empty() => s,
      _ => return Err(format!("{at}.name must be a non-empty string").into()),
    };
    if name.chars().count() > MAX_NAME_CHARS {
      return Err(format!("{at}.name must be at most {MAX_NAME_CHARS} characters").into());
    }
    if reserved.matches(&name) {
      return Err(format!("{at}.name '{name}' is reserved for CodeCall's meta-tools").into());
    }
    let at = format!("{at} ('{name}')");
    let string = |o: &mut Map<String, Value>, key: &str| -> Result<Option<String>, InvalidArgument> {
      match o.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{at}.{key} must be a string").into()),
      }
    };
    let object = |o: &mut Map<String, Value>, key: &str| -> Result<Option<Value>, InvalidArgument> {
      match o.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(_) => Err(format!("{at}.{key} must be an object").into()),
      }
    };
    let flag = |o: &Map<String, Value>, key: &str, owner: &str| -> Result<Option<bool>, InvalidArgument> {
      match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{at}.{owner}{key} must be a boolean").into()),
      }
    };
    let title = string(&mut o, "title")?;
    let description = string(&mut o, "description")?;
    let app_id = string(&mut o, "appId")?;
    let source = string(&mut o, "source")?.unwrap_or_else(|| "inline".into());
    let input_schema = object(&mut o, "inputSchema")?;
    let output_schema = object(&mut o, "outputSchema")?;
    let annotations = object(&mut o, "annotations")?;
    let tags = match o.remove("tags") {
      None | Some(Value::Null) => Vec::new(),
      Some(Value::Array(items)) => items
        .into_iter()
        .enumerate()
        .map(|(i, t)| match t {
          Value::String(s) => Ok(s),
          _ => Err(format!("{at}.tags[{i}] must be a string")),
        })
        .collect::<Result<_, _>>()?,
      Some(_) => return Err(format!("{at}.tags must be an array of strings").into()),
    };
    let examples = match o.remove("examples") {
      None | Some(Value::Null) => Vec::new(),
      Some(Value::Array(items)) => items,
      Some(_) => return Err(format!("{at}.examples must be an array").into()),
    };
    let approval_of = |v: Option<&Value>, key: &str| -> Result<Option<ToolApproval>, InvalidArgument> {
      match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => ToolApproval::parse(s)
          .map(Some)
          .ok_or_else(|| format!("{at}.{key} must be 'ask', 'allow' or 'deny' (got '{s}')").into()),
        Some(_) => Err(format!("{at}.{key} must be 'ask', 'allow' or 'deny'").into()),
      }
    };
    let mut approval = approval_of(o.get("approval"), "approval")?;
    o.remove("approval");
    let (visible_in_list_tools, enabled_in_codecall) = match o.remove("codecall") {
      None | Some(Value::Null) => (None, None),
      Some(Value::Object(c)) => {
        approval = approval.or(approval_of(c.get("approval"), "codecall.approval")?);
        (flag(&c, "visibleInListTools", "codecall.")?, flag(&c, "enabledInCodeCall", "codecall.")?)
      }
      Some(_) => return Err(format!("{at}.codecall must be an object").into()),
    };
    if approval.is_none() {
      let meta = o.get("_meta").and_then(|m| m.get("codecall")).and_then(|c| c.get("approval"));
      approval = approval_of(meta, "_meta.codecall.approval")?;
    }
    let server = match o.remove("server") {
      None | Some(Value::Null) => None,
      Some(Value::Object(mut server)) => {
        let at = format!("{at}.server");
        let mut part = |key: &str| -> Result<Option<String>, InvalidArgument> {
          match server.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("{at}.{key} must be a string").into()),
          }
        };
        ServerText::new(part("title")?, part("description")?, part("instructions")?)
      }
      Some(_) => return Err(format!("{at}.server must be an object").into()),
    };
    let internal = flag(&o, "internal", "")?.unwrap_or(false);
    let mut passthrough = Map::new();
    for key in ["_meta", "icons"] {
      if let Some(v) = o.remove(key) {
        passthrough.insert(key.into(), v);
      }
    }
    Ok(Self {
      name,
      title,
      description,
      input_schema,
      output_schema,
      annotations,
      app_id,
      source,
      tags,
      examples,
      visible_in_list_tools,
      enabled_in_codecall,
      internal,
      approval,
      server,
      passthrough,
      included: true,
    })
  }

  /// Shown by `list_tools` (every mode shows exactly the tools that ask to be visible; the modes
  /// differ in what they index).
  pub fn listed(&self) -> bool {
    !self.internal && self.included && self.visible_in_list_tools == Some(true)
  }

  /// In the CodeCall index (searchable, describable, callable from scripts) under `mode`.
  pub fn indexed(&self, mode: Mode) -> bool {
    if self.internal || !self.included {
      return false;
    }
    match mode {
      Mode::CodecallOnly => self.enabled_in_codecall != Some(false),
      Mode::CodecallOptIn | Mode::MetadataDriven => self.enabled_in_codecall == Some(true),
    }
  }

  /// The tool as MCP `tools/list` shows it: CodeCall's own fields removed.
  pub fn mcp_tool(&self) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::String(self.name.clone()));
    if let Some(t) = &self.title {
      o.insert("title".into(), Value::String(t.clone()));
    }
    if let Some(d) = &self.description {
      o.insert("description".into(), Value::String(d.clone()));
    }
    o.insert("inputSchema".into(), self.input_schema.clone().unwrap_or_else(empty_object_schema));
    if let Some(s) = &self.output_schema {
      o.insert("outputSchema".into(), s.clone());
    }
    if let Some(a) = &self.annotations {
      o.insert("annotations".into(), a.clone());
    }
    for (k, v) in &self.passthrough {
      o.insert(k.clone(), v.clone());
    }
    Value::Object(o)
  }

  /// What `includeTools` and `directCalls.filter` are shown: `{ name, appId, source, description, tags }`.
  pub fn summary(&self) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::String(self.name.clone()));
    if let Some(a) = &self.app_id {
      o.insert("appId".into(), Value::String(a.clone()));
    }
    o.insert("source".into(), Value::String(self.source.clone()));
    if let Some(d) = &self.description {
      o.insert("description".into(), Value::String(d.clone()));
    }
    o.insert("tags".into(), Value::Array(self.tags.iter().cloned().map(Value::String).collect()));
    Value::Object(o)
  }

  /// The sandbox's `getTool(name)`: `{ name, appId, description, inputSchema, outputSchema }`.
  pub fn tool_info(&self) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::String(self.name.clone()));
    if let Some(a) = &self.app_id {
      o.insert("appId".into(), Value::String(a.clone()));
    }
    o.insert("description".into(), Value::String(self.description.clone().unwrap_or_default()));
    o.insert("inputSchema".into(), self.input_schema.clone().unwrap_or_else(empty_object_schema));
    o.insert("outputSchema".into(), self.output_schema.clone().unwrap_or(Value::Null));
    Value::Object(o)
  }
}

pub fn empty_object_schema() -> Value {
  let mut o = Map::new();
  o.insert("type".into(), Value::String("object".into()));
  Value::Object(o)
}
