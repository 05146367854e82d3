//! Usage examples for tools: short AgentScript snippets that call one tool, for `describe`.
//!
//! [`usage_examples`] returns up to `max` examples:
//!
//! 1. the tool's own `examples` first, in order. Each entry is an object `{ description, input,
//!    output? }`; a missing or non-string `description` becomes `"Example"`. An entry without
//!    `input` (or with `input: null`) calls the tool with `{}`, but only when it has a string
//!    `description` and `{}` satisfies the input schema; otherwise it is skipped, as are entries
//!    that are not objects. An `output` is shown as a one-line `// Example result:` comment. These
//!    inputs are copied as they are, not checked against the schema.
//! 2. then at most [`MAX_GENERATED`] generated examples, by the tool's *intent*, read from its name
//!    (split on `:`, `_`, `-`, `.`, spaces and camelCase) or else from the first words of its
//!    description: create, list, get, update, delete, search, or a generic call. The first passes
//!    the required arguments plus the optional ones that intent cares about (`limit` for list,
//!    `query` and `limit` for search, an id for get / update / delete, a name for update and for a
//!    create without required arguments); the second, when the tool has other optional properties,
//!    adds up to three of them (plain values first) and is described as "…, with options".
//!    Generated examples never repeat each other or a user example's input.
//!
//! Every `code` is the body of an async function, with no loops:
//!
//! ```js
//! const page = await callTool('users:list', { limit: 10 });
//! return page;
//! ```
//!
//! Generated arguments satisfy the input schema: they are built from it (`type` lists with non-null
//! types first, `enum`, `const`, `examples`, `default`, `format`, numeric bounds and `multipleOf`,
//! string lengths, `pattern`, array sizes and `uniqueItems`, `contains`, nested `required`, local
//! `$ref`s, `allOf`, `anyOf` / `oneOf`, `additionalProperties`, `patternProperties`,
//! `propertyNames`, `minProperties` / `maxProperties`, `dependentRequired` / `dependencies`) and then
//! checked against it by a small validator of the same keywords (`not` and `if` / `then` / `else`
//! too). Property names pick friendlier values (`email`, `*Id`, `query`, `url`, `name`, `limit`…)
//! when the schema allows them. Patterns are read by a small regular-expression engine (no
//! backreferences, lookbehinds or `\p{…}`): schema-given values are tried against them first, then a
//! string generated from the pattern itself. An optional property whose value cannot be shown to be
//! valid is left out; a generated example whose input is known to be invalid is dropped, so a tool
//! whose schema cannot be satisfied (or needs more than [`MAX_DEPTH`] levels of nesting) gets no
//! generated example. The only guesses kept are required values the validator cannot decide: a
//! string under a pattern the engine cannot read, a value behind a `$ref` to another document.
//!
//! Hostile schemas are safe: value nesting stops at [`MAX_DEPTH`], `$ref` cycles and `allOf` chains
//! are cut, validation follows at most 48 schema levels, and each attempt at an input (at most six
//! per tool) runs on fixed budgets of generation and validation steps that regular-expression
//! matching and pattern sampling draw on too, so time and stack are bounded; an attempt that runs
//! out gives no example. An example whose code would pass [`MAX_CODE_BYTES`] is dropped. Nothing
//! here panics.
//!
//! Argument values are printed as a JavaScript object literal (bare keys where possible). Inputs
//! with a key that AgentScript's locked-down presets reject in object literals (`constructor`,
//! `__proto__`, `prototype`, `__defineGetter__`…) are not shown.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Number, Value};

use super::schema::{is_identifier, quote, resolve_ref};
// Keys AgentScript's locked-down presets reject in object literals: the validator's own list.
use crate::validator::FORBIDDEN_MEMBERS as FORBIDDEN_KEYS;

mod check;
mod formats;
mod generate;
mod intent;
mod keys;
mod print;
mod regex;
#[cfg(test)]
mod tests;

use check::*;
use formats::*;
use generate::*;
use intent::*;
use keys::*;
use print::*;
use regex::*;

/// At most this many generated examples per tool (after the tool's own).
pub const MAX_GENERATED: usize = 2;
/// Generated values nest at most this many levels deep.
pub const MAX_DEPTH: usize = 8;
/// An example whose code is longer than this many bytes is not returned.
pub const MAX_CODE_BYTES: usize = 2048;

/// Example descriptions are cut to this many characters.
const MAX_DESCRIPTION_CHARS: usize = 200;
/// The `// Example result:` comment shows at most this many characters of JSON.
const MAX_RESULT_CHARS: usize = 160;
/// Value-generation steps per attempt at one example input.
const GEN_BUDGET: usize = 4_000;
/// Validation steps per attempt at one example input.
const CHECK_BUDGET: usize = 200_000;
/// Schema levels one validation follows (`$ref`s and combinators included).
const CHECK_DEPTH: usize = 48;
/// `anyOf` / `oneOf` choices resolved for one value before giving up.
const MAX_CHOICES: usize = 8;
/// Branches of one `anyOf` / `oneOf` tried, `allOf` members merged, schemas merged for one value.
const MAX_BRANCHES: usize = 16;
const MAX_MERGED: usize = 64;
/// `$ref` / `allOf` hops followed while merging the schemas of one value.
const MAX_HOPS: usize = 8;
/// Generated arrays have at most this many items; generated strings at most this many characters.
const MAX_ITEMS: u64 = 32;
const MAX_STRING: u64 = 1024;
/// Schema literals (`enum` members, `default`, `examples`) larger than this are not used.
const MAX_LITERAL_BYTES: usize = 1024;
/// Optional properties added by the "with options" example.
const MAX_OPTIONS: usize = 3;
/// An object or array literal is printed on one line when it fits this width.
const INLINE_WIDTH: usize = 80;
/// Printed values nest at most this deep.
const MAX_PRINT_DEPTH: usize = 32;

/// One usage example: what it shows, the AgentScript that does it, and the input it passes.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageExample {
  pub description: String,
  pub code: String,
  /// The arguments `code` passes to `callTool` (as given, for the tool's own examples).
  pub input: Value,
}

/// Up to `max` usage examples for a tool: its own `user_examples` first, then at most
/// [`MAX_GENERATED`] generated from its name, description and `input_schema` (see the module docs).
pub fn usage_examples(
  name: &str,
  description: Option<&str>,
  input_schema: Option<&Value>,
  user_examples: &[Value],
  max: usize,
) -> Vec<UsageExample> {
  let mut out: Vec<UsageExample> = Vec::new();
  if max == 0 {
    return out;
  }
  let schema = input_schema.filter(|s| !s.is_null());
  let info = ToolInfo::new(name, description);
  let mut engine = schema.map(|s| Engine::new(s, &info));
  for entry in user_examples {
    if out.len() >= max {
      return out;
    }
    if let Some(example) = user_example(name, entry, engine.as_mut()) {
      out.push(example);
    }
  }
  let mut room = (max - out.len()).min(MAX_GENERATED);
  for example in generated(name, &info, engine.as_mut()) {
    if room == 0 {
      break;
    }
    if out.iter().any(|o| json_eq(&o.input, &example.input, 0)) {
      continue;
    }
    out.push(example);
    room -= 1;
  }
  out
}

fn user_example(name: &str, entry: &Value, engine: Option<&mut Engine<'_>>) -> Option<UsageExample> {
  let entry = entry.as_object()?;
  let given = entry.get("description").and_then(Value::as_str).and_then(|d| clean_text(d, MAX_DESCRIPTION_CHARS));
  let given_input = entry.get("input").filter(|i| !i.is_null());
  let input = match given_input {
    // Printed first: a value that cannot be printed (too deep, too large) is never cloned.
    Some(input) => {
      render_code(name, "result", input, None)?;
      input.clone()
    }
    None => {
      // No input: "call it without arguments", when the entry says what it does and that is allowed.
      given.as_ref()?;
      let empty = Value::Object(Map::new());
      if let Some(engine) = engine {
        engine.reset();
        let root = engine.root;
        if engine.check(&empty, root, 0) == Verdict::Invalid || engine.exhausted {
          return None;
        }
      }
      empty
    }
  };
  let output = entry.get("output").filter(|o| !o.is_null());
  let code = render_code(name, "result", &input, output)?;
  Some(UsageExample { description: given.unwrap_or_else(|| "Example".to_string()), code, input })
}

/// The generated examples, best first: the intent example, then the one with options.
fn generated(name: &str, info: &ToolInfo, engine: Option<&mut Engine<'_>>) -> Vec<UsageExample> {
  let var = info.intent.variable();
  let Some(engine) = engine else {
    let input = Value::Object(Map::new());
    return render_code(name, var, &input, None)
      .map(|code| UsageExample { description: info.describe(&input), code, input })
      .into_iter()
      .collect();
  };
  let props = engine.top_properties();
  let relevant = relevant_keys(info.intent, &props);
  let mut out = Vec::new();
  let first = engine.top_input(&relevant).or_else(|| if relevant.is_empty() { None } else { engine.top_input(&[]) });
  if let Some(input) = &first {
    if let Some(code) = render_code(name, var, input, None) {
      out.push(UsageExample { description: info.describe(input), code, input: input.clone() });
    }
  }
  let mut extras: Vec<&TopProp<'_>> =
    props.iter().filter(|p| !p.required && !p.skip && !relevant.iter().any(|r| r == p.key)).collect();
  extras.sort_by_key(|p| !p.scalar);
  if extras.is_empty() {
    return out;
  }
  let mut wanted = relevant.clone();
  wanted.extend(extras.iter().take(MAX_OPTIONS).map(|p| p.key.to_string()));
  let second = engine.top_input(&wanted).or_else(|| {
    // One of the extras spoiled the whole input: try them one at a time.
    extras.iter().take(MAX_OPTIONS).find_map(|p| {
      let mut one = relevant.clone();
      one.push(p.key.to_string());
      engine.top_input(&one)
    })
  });
  if let Some(input) = second {
    let same = first.as_ref().is_some_and(|f| json_eq(f, &input, 0));
    if !same {
      if let Some(code) = render_code(name, var, &input, None) {
        let description = format!("{}, with options", info.describe(&input));
        out.push(UsageExample { description, code, input });
      }
    }
  }
  out
}

/// Where `value` first fails `schema` (the keywords of the examples' validator), as a path from
/// `at` (`input.items[2].id`) and why; `None` when it is valid or the validator cannot decide.
/// Saved scripts check their callers' input with it (spec §11).
pub fn first_mismatch(value: &Value, schema: &Value, at: &str) -> Option<String> {
  let info = ToolInfo::new("input", None);
  let mut engine = Engine::new(schema, &info);
  engine.reset();
  if engine.check(value, schema, 0) != Verdict::Invalid || engine.exhausted {
    return None;
  }
  Some(deepest(&mut engine, value, schema, at.to_string(), 0))
}

/// The deepest part of an invalid `value` that is invalid by itself.
fn deepest<'a>(engine: &mut Engine<'a>, value: &Value, schema: &'a Value, at: String, depth: usize) -> String {
  let Value::Object(m) = schema else { return format!("{at} does not match the input schema") };
  if depth < MAX_DEPTH {
    if let Some(t) = m.get("type") {
      if !type_matches(value, t, m.get("nullable") == Some(&Value::Bool(true))) {
        return format!("{at} must be of type {}", short_json(t));
      }
    }
    match value {
      Value::Object(o) => {
        if let Some(Value::Array(required)) = m.get("required") {
          if let Some(missing) = required.iter().filter_map(Value::as_str).find(|k| !o.contains_key(*k)) {
            return format!("{at}.{missing} is required");
          }
        }
        let properties = m.get("properties").and_then(Value::as_object);
        for (key, v) in o {
          match properties.and_then(|p| p.get(key)) {
            Some(sub) => {
              engine.reset();
              if engine.check(v, sub, 0) == Verdict::Invalid && !engine.exhausted {
                return deepest(engine, v, sub, format!("{at}.{}", crate::common::char_prefix(key, 64)), depth + 1);
              }
            }
            None if m.get("additionalProperties") == Some(&Value::Bool(false)) => {
              return format!(
                "{at}.{} is not allowed (additionalProperties: false)",
                crate::common::char_prefix(key, 64)
              );
            }
            None => {}
          }
        }
      }
      Value::Array(items) => {
        if let Some(sub @ Value::Object(_)) = m.get("items") {
          for (i, v) in items.iter().enumerate() {
            engine.reset();
            if engine.check(v, sub, 0) == Verdict::Invalid && !engine.exhausted {
              return deepest(engine, v, sub, format!("{at}[{i}]"), depth + 1);
            }
          }
        }
      }
      _ => {}
    }
  }
  format!("{at} does not match the input schema")
}

fn short_json(v: &Value) -> String {
  let s = v.to_string();
  if s.len() > 80 {
    format!("{}…", crate::common::char_prefix(&s, 80))
  } else {
    s
  }
}
