//! What the validator enforces, resolved from a preset and explicit overrides.
//!
//! `validate()` and the sandbox build the same `Policy` from the same options, so a script that
//! validates on its own validates identically inside `execute()`.

use crate::common::{Preset, ALWAYS_DISABLED_BUILTINS, RESERVED_PREFIX};

/// The language a script is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
  #[default]
  JavaScript,
  /// Types are stripped before the rules run; line and column numbers are kept.
  TypeScript,
}

impl Language {
  pub fn parse(name: &str) -> Option<Self> {
    match name {
      "javascript" => Some(Self::JavaScript),
      "typescript" => Some(Self::TypeScript),
      _ => None,
    }
  }
}

/// Default for `maxNestingDepth`.
pub const DEFAULT_MAX_NESTING_DEPTH: u32 = 64;

/// The validator's whole configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
  pub preset: Preset,
  pub language: Language,
  pub allow_loops: bool,
  /// Without console, `console` is a disallowed global.
  pub allow_console: bool,
  /// Kind `IllegalBuiltinAccess`. Always contains `eval` and `Function`.
  pub disabled_builtins: Vec<String>,
  /// Kind `DisallowedGlobal`.
  pub disabled_globals: Vec<String>,
  /// `constructor` / `__proto__` / `prototype` member access (kind `ForbiddenMember`).
  pub forbid_prototype_members: bool,
  pub max_script_bytes: u64,
  pub max_nesting_depth: u32,
  /// Identifier prefixes user code may not use. Always contains `__cc_`.
  pub reserved_prefixes: Vec<String>,
  /// Tool names that refer to the engine itself: `callTool` with one of these is
  /// `SELF_REFERENCE_BLOCKED`.
  pub self_reference: SelfReference,
}

/// How the engine's own meta-tools are named, so scripts cannot call them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfReference {
  /// Any tool name starting with one of these (`codecall:`).
  pub prefixes: Vec<String>,
  /// Exact names (the meta-tools under another separator, e.g. `codecall_execute`).
  pub names: Vec<String>,
}

impl Default for SelfReference {
  fn default() -> Self {
    Self::for_meta_tools("codecall", ":")
  }
}

/// The verbs of the meta-tools, in order: the one list (`engine::meta::Meta` names come from it).
/// `save` exists only with saved scripts (§11), but no script may call it either way.
pub const META_TOOL_VERBS: [&str; 5] = ["search", "describe", "execute", "invoke", "save"];

impl SelfReference {
  /// The names of the four meta-tools for a prefix and separator, and the `codecall:` namespace.
  pub fn for_meta_tools(prefix: &str, separator: &str) -> Self {
    let mut prefixes = vec!["codecall:".to_string()];
    let own = format!("{prefix}{separator}");
    if !prefixes.contains(&own) && separator == ":" {
      prefixes.push(own.clone());
    }
    let mut names: Vec<String> = Vec::new();
    for sep in [":", "_", separator] {
      for tool in META_TOOL_VERBS {
        let name = format!("{prefix}{sep}{tool}");
        if !names.contains(&name) {
          names.push(name);
        }
      }
    }
    Self { prefixes, names }
  }

  pub fn matches(&self, tool_name: &str) -> bool {
    self.prefixes.iter().any(|p| tool_name.starts_with(p.as_str())) || self.names.iter().any(|n| n == tool_name)
  }
}

/// Option values that adjust a preset's policy (shared by `validate()` and `Sandbox`); `None`
/// keeps the preset's value.
#[derive(Debug, Default, Clone, Copy)]
pub struct PolicyOverrides<'a> {
  pub allow_loops: Option<bool>,
  pub allow_console: Option<bool>,
  pub disabled_builtins: Option<&'a [String]>,
  pub disabled_globals: Option<&'a [String]>,
  pub max_script_bytes: Option<u64>,
}

impl Policy {
  /// Applies explicit options on top of the preset.
  pub fn apply(&mut self, overrides: PolicyOverrides<'_>) {
    if let Some(v) = overrides.allow_loops {
      self.allow_loops = v;
    }
    if let Some(v) = overrides.allow_console {
      self.allow_console = v;
    }
    if let Some(v) = overrides.disabled_builtins {
      self.set_disabled_builtins(v.to_vec());
    }
    if let Some(v) = overrides.disabled_globals {
      self.disabled_globals = v.to_vec();
    }
    if let Some(v) = overrides.max_script_bytes {
      self.max_script_bytes = v;
    }
  }

  pub fn from_preset(preset: Preset) -> Self {
    let d = preset.defaults();
    Self {
      preset,
      language: Language::JavaScript,
      allow_loops: d.allow_loops,
      allow_console: d.allow_console,
      disabled_builtins: d.disabled_builtins.iter().map(|s| s.to_string()).collect(),
      disabled_globals: d.disabled_globals.iter().map(|s| s.to_string()).collect(),
      forbid_prototype_members: d.forbid_prototype_members,
      max_script_bytes: d.max_script_bytes,
      max_nesting_depth: DEFAULT_MAX_NESTING_DEPTH,
      reserved_prefixes: vec![RESERVED_PREFIX.to_string()],
      self_reference: SelfReference::default(),
    }
  }

  /// Replaces the disabled builtins; `eval` and `Function` stay disabled whatever is passed.
  pub fn set_disabled_builtins(&mut self, names: Vec<String>) {
    self.disabled_builtins = names;
    for always in ALWAYS_DISABLED_BUILTINS {
      if !self.disabled_builtins.iter().any(|n| n == always) {
        self.disabled_builtins.push((*always).to_string());
      }
    }
  }

  /// Replaces the reserved prefixes; `__cc_` stays reserved whatever is passed.
  pub fn set_reserved_prefixes(&mut self, prefixes: Vec<String>) {
    self.reserved_prefixes = prefixes.into_iter().filter(|p| !p.is_empty()).collect();
    if !self.reserved_prefixes.iter().any(|p| p == RESERVED_PREFIX) {
      self.reserved_prefixes.push(RESERVED_PREFIX.to_string());
    }
  }

  pub fn reserved(&self, name: &str) -> bool {
    self.reserved_prefixes.iter().any(|p| name.starts_with(p.as_str()))
  }
}

impl Default for Policy {
  fn default() -> Self {
    Self::from_preset(Preset::Secure)
  }
}
