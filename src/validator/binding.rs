//! The validator's JavaScript surface: `validate(script, options?)` and the conversion of its
//! options and results. Thin on purpose: all decisions are made by the plain-Rust core.

use crate::common::InvalidArgument;
use napi::{bindgen_prelude::Object, Env, Unknown};
use napi_derive::napi;

use super::{
  policy::{Language, PolicyOverrides},
  Policy, Rejection, Validated,
};
use crate::common::{args, Preset};

impl args::KnownKeys for ValidateOptions {
  const KEYS: &'static [&'static str] = &[
    "preset",
    "allowLoops",
    "allowConsole",
    "disabledBuiltins",
    "disabledGlobals",
    "language",
    "maxScriptBytes",
    "maxNestingDepth",
    "reservedPrefixes",
  ];
}

/// Options of `validate()`. Every field defaults to the preset's value.
#[napi(object)]
#[derive(Default)]
pub struct ValidateOptions {
  /// The policy the other options start from.
  /// @default 'secure'
  #[napi(ts_type = "Preset")]
  pub preset: Option<String>,
  /// Allow `for`, `for...in`, `for...of`, `while` and `do...while`.
  /// @default false in 'locked_down' and 'secure', true in 'balanced' and 'experimental'
  pub allow_loops: Option<bool>,
  /// Allow `console`; without it, `console` is a disallowed global.
  /// @default false in 'locked_down', true otherwise
  pub allow_console: Option<bool>,
  /// Identifiers refused with kind `IllegalBuiltinAccess`. Replaces the preset's list;
  /// `eval` and `Function` stay refused whatever is passed.
  /// @default ['eval', 'Function']
  pub disabled_builtins: Option<Vec<String>>,
  /// Identifiers refused with kind `DisallowedGlobal`. Replaces the preset's list.
  /// @default the preset's (`require`, `process`, `fetch`, timers, ... in 'secure')
  pub disabled_globals: Option<Vec<String>>,
  /// The script's language; TypeScript has its types stripped, keeping line numbers.
  /// @default 'javascript'
  #[napi(ts_type = "'javascript' | 'typescript'")]
  pub language: Option<String>,
  /// Larger scripts are refused before parsing.
  /// @default 102400 (100 KiB)
  pub max_script_bytes: Option<f64>,
  /// Deeper nesting of brackets, template substitutions and arrow functions is refused before parsing.
  /// @default 64
  pub max_nesting_depth: Option<f64>,
  /// Identifier prefixes scripts may not use (kind `ReservedIdentifier`); `__cc_` is always reserved.
  /// @default ['__cc_']
  pub reserved_prefixes: Option<Vec<String>>,
}

impl ValidateOptions {
  /// Resolves the options into a policy, or says which option is wrong.
  pub fn to_policy(&self) -> Result<Policy, InvalidArgument> {
    let preset = Preset::from_option(self.preset.as_deref())?;
    let mut policy = Policy::from_preset(preset);
    if let Some(language) = &self.language {
      policy.language = Language::parse(language)
        .ok_or_else(|| format!("options.language must be 'javascript' or 'typescript' (got '{language}')"))?;
    }
    policy.apply(PolicyOverrides {
      allow_loops: self.allow_loops,
      allow_console: self.allow_console,
      disabled_builtins: self.disabled_builtins.as_deref(),
      disabled_globals: self.disabled_globals.as_deref(),
      max_script_bytes: args::non_negative(self.max_script_bytes, "options.maxScriptBytes")?,
    });
    if let Some(v) = args::non_negative(self.max_nesting_depth, "options.maxNestingDepth")? {
      policy.max_nesting_depth = u32::try_from(v).map_err(|_| "options.maxNestingDepth is too large".to_string())?;
    }
    if let Some(v) = &self.reserved_prefixes {
      policy.set_reserved_prefixes(v.clone());
    }
    Ok(policy)
  }
}

/// Checks an AgentScript plan against a policy without running it.
///
/// Returns `{ ok: true, toolNames, dynamicToolCalls }` or `{ ok: false, status, error }`; a script
/// never makes it throw. Throws `TypeError` (`code: 'ERR_INVALID_ARG'`) for a non-string script or
/// invalid options.
#[napi(ts_args_type = "script: string, options?: ValidateOptions", ts_return_type = "ValidateResult")]
pub fn validate<'env>(
  env: &'env Env,
  script: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> napi::Result<Object<'env>> {
  let script = args::string_arg(env, &script, "script")?;
  let options: ValidateOptions = args::checked_options(env, options.as_ref(), "options")?.unwrap_or_default();
  let policy = options.to_policy().map_err(|message| args::invalid_arg(env, message))?;
  match super::validate(&script, &policy) {
    Ok(validated) => validated_to_js(env, &validated),
    Err(rejection) => {
      let mut out = Object::new(env)?;
      out.set("ok", false)?;
      out.set("status", rejection.status())?;
      out.set("error", rejection_to_js(env, &rejection)?)?;
      Ok(out)
    }
  }
}

fn validated_to_js<'env>(env: &'env Env, validated: &Validated) -> napi::Result<Object<'env>> {
  let mut out = Object::new(env)?;
  out.set("ok", true)?;
  out.set("toolNames", validated.tool_names.clone())?;
  out.set("dynamicToolCalls", validated.dynamic_tool_calls)?;
  Ok(out)
}

/// The `error` object of a `syntax_error` / `illegal_access` result (`api.md` §2.4).
pub fn rejection_to_js<'env>(env: &'env Env, rejection: &Rejection) -> napi::Result<Object<'env>> {
  let mut error = Object::new(env)?;
  error.set("code", rejection.code().as_str())?;
  if let Some(kind) = rejection.kind() {
    error.set("kind", kind)?;
  }
  error.set("message", rejection.message())?;
  if let Some(location) = rejection.location() {
    let mut loc = Object::new(env)?;
    loc.set("line", location.line)?;
    loc.set("column", location.column)?;
    error.set("location", loc)?;
  }
  Ok(error)
}
