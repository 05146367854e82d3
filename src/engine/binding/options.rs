//! `CodeCallOptions` (§5, §9, §11, §12) read into the engine's options, the sandbox's and the
//! saved-scripts store's; callbacks and `stateKey` go into the CodeCall's `refs`.

use std::collections::HashSet;

use napi::bindgen_prelude::{Object, Unknown};
use napi::{Env, JsValue, ValueType};
use serde_json::Value;

use crate::common::args::{self, array_arg, object_arg, present};
use crate::engine::approval::{ApprovalPolicy, APPROVAL_KEYS};
use crate::engine::codecall::EngineOptions;
use crate::engine::meta::MetaNames;
use crate::engine::registry::Mode;
use crate::engine::scripts::binding::{read_options as read_scripts, StoreChoice};
use crate::sandbox::{json_of, SandboxOptions};
use crate::search::IndexOptions;

/// The keys of `CodeCallOptions` (§5, §9).
const CODECALL_OPTION_KEYS: &[&str] = &[
  "mode",
  "topK",
  "maxDefinitions",
  "includeTools",
  "onToolsChanged",
  "directCalls",
  "vm",
  "search",
  "metaToolPrefix",
  "metaToolSeparator",
  "approval",
  "scripts",
  "stateKey",
  "runs",
];

/// The fewest bytes of `options.stateKey` (§12).
const MIN_STATE_KEY_BYTES: usize = 16;

/// Reads `options` (absent or nullish: the defaults). The host's callbacks (`includeTools`,
/// `onToolsChanged`, `directCalls.filter`) and `stateKey` are set on `refs`. Throws `TypeError`
/// (`ERR_INVALID_ARG`) for invalid options.
pub(super) fn read<'env>(
  env: &Env,
  options: Option<Unknown<'env>>,
  refs: &mut Object,
) -> napi::Result<(EngineOptions, SandboxOptions, Option<StoreChoice<'env>>)> {
  let mut o = EngineOptions::default();
  let mut vm = SandboxOptions::default();
  let (mut prefix, mut separator) = (None, None);
  let mut scripts_choice = None;
  if let Some(options) = options.filter(|v| !args::is_nullish(v)) {
    let options = object_arg(env, &options, "options")?;
    args::check_keys(env, &options, "options", CODECALL_OPTION_KEYS)?;
    if let Some(v) = present(&options, "mode")? {
      let mode = args::string_arg(env, &v, "options.mode")?;
      o.mode = Mode::parse(&mode).ok_or_else(|| {
        args::invalid_arg(
          env,
          format!("options.mode must be 'codecall_only', 'codecall_opt_in' or 'metadata_driven' (got '{mode}')"),
        )
      })?;
    }
    if let Some(v) = present(&options, "topK")? {
      o.top_k = positive(env, &v, "options.topK")?;
    }
    if let Some(v) = present(&options, "maxDefinitions")? {
      o.max_definitions = positive(env, &v, "options.maxDefinitions")?;
    }
    for (key, slot) in [("includeTools", "includeTools"), ("onToolsChanged", "onToolsChanged")] {
      if let Some(v) = present(&options, key)? {
        refs.set(slot, function_arg(env, v, &format!("options.{key}"))?)?;
      }
    }
    if let Some(v) = present(&options, "directCalls")? {
      let d = object_arg(env, &v, "options.directCalls")?;
      args::check_keys(env, &d, "options.directCalls", &["enabled", "allowedTools", "filter"])?;
      if let Some(v) = present(&d, "enabled")? {
        o.direct_calls = bool_arg(env, &v, "options.directCalls.enabled")?;
      }
      if let Some(v) = present(&d, "allowedTools")? {
        let list: Vec<String> = string_list(env, &v, "options.directCalls.allowedTools")?;
        o.direct_allowed = Some(list.into_iter().collect::<HashSet<_>>());
      }
      if let Some(v) = present(&d, "filter")? {
        refs.set("filter", function_arg(env, v, "options.directCalls.filter")?)?;
      }
    }
    if let Some(v) = present(&options, "vm")? {
      vm = args::checked_options(env, Some(&v), "options.vm")?.unwrap_or_default();
    }
    if let Some(v) = present(&options, "search")? {
      let s = object_arg(env, &v, "options.search")?;
      args::check_keys(
        env,
        &s,
        "options.search",
        &["synonyms", "fuzzy", "semantic", "model", "similarityThreshold", "cacheDir"],
      )?;
      let defaults = IndexOptions::default();
      o.index = IndexOptions {
        synonyms: match present(&s, "synonyms")? {
          Some(v) => bool_arg(env, &v, "options.search.synonyms")?,
          None => defaults.synonyms,
        },
        fuzzy: match present(&s, "fuzzy")? {
          Some(v) => bool_arg(env, &v, "options.search.fuzzy")?,
          None => defaults.fuzzy,
        },
        semantic: match present(&s, "semantic")? {
          Some(v) => bool_arg(env, &v, "options.search.semantic")?,
          None => defaults.semantic,
        },
        model: match present(&s, "model")? {
          Some(v) => {
            let name = args::string_arg(env, &v, "options.search.model")?;
            crate::search::model_kind(env, &name, "options.search.model")?
          }
          None => defaults.model,
        },
        cache_dir: match present(&s, "cacheDir")? {
          Some(v) => Some(crate::search::cache_dir_arg(env, &v, "options.search.cacheDir")?),
          None => None,
        },
      };
      if let Some(v) = present(&s, "similarityThreshold")? {
        let t = number(env, &v, "options.search.similarityThreshold")?;
        if !(0.0..=1.0).contains(&t) {
          return Err(args::invalid_arg(
            env,
            format!("options.search.similarityThreshold must be a number from 0 to 1 (got {t})"),
          ));
        }
        o.min_score = t;
      }
    }
    if let Some(v) = present(&options, "approval")? {
      let a = object_arg(env, &v, "options.approval")?;
      args::check_keys(env, &a, "options.approval", APPROVAL_KEYS)?;
      let json = json_of(env, v, "options.approval")?.unwrap_or_default();
      let json: Value =
        serde_json::from_str(&json).map_err(|e| args::invalid_arg(env, format!("options.approval: {e}")))?;
      o.approval = ApprovalPolicy::read(&json, "options.approval").map_err(|m| args::invalid_arg(env, m))?;
    }
    if let Some(v) = present(&options, "scripts")? {
      let (settings, choice) = read_scripts(env, &v)?;
      o.scripts = Some(settings);
      scripts_choice = Some(choice);
    }
    if let Some(v) = present(&options, "stateKey")? {
      // §12: seals `requestState` for approvals across requests. The engine does not use it;
      // the JavaScript that does (adapters, `ApprovalRounds`) reads it off the CodeCall object.
      let key = args::string_arg(env, &v, "options.stateKey")?;
      if key.len() < MIN_STATE_KEY_BYTES {
        return Err(args::invalid_arg(
          env,
          format!("options.stateKey must be at least {MIN_STATE_KEY_BYTES} bytes (got {})", key.len()),
        ));
      }
      refs.set("stateKey", key)?;
    }
    if let Some(v) = present(&options, "runs")? {
      // §12: where executions waiting for a person are kept. The journaling and the replay are
      // the package's JavaScript, which reads the store off the CodeCall object.
      let (store, opened) = crate::engine::runs::binding::read_options(env, &v)?;
      refs.set("runs", store)?;
      // Opened here from a path: dispose() closes it (an application's own store is its own).
      refs.set("runsOpened", opened)?;
    }
    if let Some(v) = present(&options, "metaToolPrefix")? {
      prefix = Some(args::string_arg(env, &v, "options.metaToolPrefix")?);
    }
    if let Some(v) = present(&options, "metaToolSeparator")? {
      separator = Some(args::string_arg(env, &v, "options.metaToolSeparator")?);
    }
  }
  o.names = MetaNames::new(prefix, separator).map_err(|m| args::invalid_arg(env, m))?;
  Ok((o, vm, scripts_choice))
}

pub(super) fn function_arg<'env>(env: &Env, v: Unknown<'env>, name: &str) -> napi::Result<Unknown<'env>> {
  if v.get_type()? != ValueType::Function {
    return Err(args::invalid_arg(env, format!("{name} must be a function")));
  }
  Ok(v)
}

pub(super) fn bool_arg(env: &Env, v: &Unknown, name: &str) -> napi::Result<bool> {
  if v.get_type()? != ValueType::Boolean {
    return Err(args::invalid_arg(env, format!("{name} must be a boolean")));
  }
  // SAFETY: `v` is a live boolean handle of this call's scope.
  unsafe { <bool as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }
}

pub(super) fn number(env: &Env, v: &Unknown, name: &str) -> napi::Result<f64> {
  if v.get_type()? != ValueType::Number {
    return Err(args::invalid_arg(env, format!("{name} must be a number")));
  }
  // SAFETY: `v` is a live number handle of this call's scope.
  unsafe { <f64 as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), v.raw()) }
}

pub(super) fn positive(env: &Env, v: &Unknown, name: &str) -> napi::Result<usize> {
  let n = number(env, v, name)?;
  if !(n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n <= 1_000_000.0) {
    return Err(args::invalid_arg(env, format!("{name} must be a positive integer (got {n})")));
  }
  Ok(n as usize)
}

pub(super) fn string_list(env: &Env, v: &Unknown, name: &str) -> napi::Result<Vec<String>> {
  let items = array_arg(env, v, name)?;
  items.iter().enumerate().map(|(i, item)| args::string_arg(env, item, &format!("{name}[{i}]"))).collect()
}
