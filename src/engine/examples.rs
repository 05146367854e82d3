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

use super::typescript::{is_identifier, quote, resolve_ref};

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
/// Keys AgentScript's locked-down presets reject in object literals.
const FORBIDDEN_KEYS: &[&str] = &[
  "constructor",
  "__proto__",
  "prototype",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
];

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

// ---------------------------------------------------------------------------------------------
// Intent, nouns and descriptions
// ---------------------------------------------------------------------------------------------

/// What a tool does, as far as its name (or description) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Intent {
  Create,
  List,
  Get,
  Update,
  Delete,
  Search,
  Generic,
}

const VERBS: &[(Intent, &[&str])] = &[
  (Intent::Search, &["search", "find", "query", "lookup", "grep", "filter"]),
  (Intent::List, &["list", "ls", "enumerate", "browse"]),
  (Intent::Get, &["get", "read", "fetch", "show", "view", "describe", "retrieve", "load", "download", "inspect"]),
  (Intent::Create, &["create", "add", "new", "insert", "make", "register", "compose"]),
  (Intent::Update, &["update", "edit", "modify", "set", "patch", "change", "rename", "replace", "upsert"]),
  (Intent::Delete, &["delete", "remove", "rm", "del", "destroy", "erase", "purge", "drop", "unlink", "trash"]),
];

/// Words that are neither verb nor noun in a tool name.
const FILLER: &[&str] = &[
  "or", "and", "a", "an", "the", "by", "for", "of", "to", "in", "on", "with", "from", "all", "my", "many", "one", "api",
];

impl Intent {
  fn of_word(word: &str) -> Option<Intent> {
    VERBS.iter().find(|(_, verbs)| verbs.contains(&word)).map(|(intent, _)| *intent)
  }

  /// The intent of an inflected verb from prose: "lists", "searches", "created", "retrieving".
  fn of_prose_word(word: &str) -> Option<Intent> {
    VERBS.iter().find(|(_, verbs)| verbs.iter().any(|v| inflects(word, v))).map(|(intent, _)| *intent)
  }

  /// The variable the example's result goes into.
  fn variable(self) -> &'static str {
    match self {
      Intent::Create => "created",
      Intent::List => "page",
      Intent::Get => "item",
      Intent::Update => "updated",
      Intent::Delete | Intent::Generic => "result",
      Intent::Search => "results",
    }
  }
}

fn inflects(word: &str, verb: &str) -> bool {
  if word == verb {
    return true;
  }
  let Some(rest) = word.strip_prefix(verb) else {
    if let Some(stem) = verb.strip_suffix('e') {
      return word.strip_prefix(stem).is_some_and(|r| r == "ing" || r == "ed");
    }
    if let Some(stem) = verb.strip_suffix('y') {
      return word.strip_prefix(stem).is_some_and(|r| r == "ies" || r == "ied");
    }
    return false;
  };
  matches!(rest, "s" | "es" | "d" | "ed" | "ing")
}

/// Detects the intent: the first verb in the name's last `:` segment, else in the whole name, else
/// among the first words of the description. "get all …" / "get … list" read as list.
fn detect_intent(name: &str, description: Option<&str>) -> Intent {
  let last = name.rsplit(':').next().unwrap_or(name);
  for words in [split_words(last), split_words(name)] {
    for (i, word) in words.iter().enumerate() {
      if let Some(intent) = Intent::of_word(word) {
        return refine(intent, &words[i + 1..]);
      }
    }
  }
  let prose: Vec<String> = description
    .unwrap_or("")
    .split_whitespace()
    .take(8)
    .map(|w| w.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase())
    .collect();
  for (i, word) in prose.iter().enumerate() {
    if let Some(intent) = Intent::of_prose_word(word) {
      return refine(intent, &prose[i + 1..]);
    }
  }
  Intent::Generic
}

fn refine(intent: Intent, after: &[String]) -> Intent {
  if intent == Intent::Get && after.iter().take(3).any(|w| w == "all" || w == "list") {
    Intent::List
  } else {
    intent
  }
}

/// Lowercase words of an identifier: split on anything not alphanumeric and on camelCase humps
/// (`getHTTPServer` → `get`, `http`, `server`).
fn split_words(s: &str) -> Vec<String> {
  let chars: Vec<char> = s.chars().take(512).collect();
  let mut words = Vec::new();
  let mut current = String::new();
  for (i, &c) in chars.iter().enumerate() {
    if !c.is_alphanumeric() {
      if !current.is_empty() {
        words.push(std::mem::take(&mut current));
      }
      continue;
    }
    let prev = if i > 0 { chars.get(i - 1).copied() } else { None };
    let next = chars.get(i + 1).copied();
    let boundary = c.is_uppercase()
      && prev.is_some_and(|p| {
        p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
      });
    if boundary && !current.is_empty() {
      words.push(std::mem::take(&mut current));
    }
    current.extend(c.to_lowercase());
  }
  if !current.is_empty() {
    words.push(current);
  }
  words.truncate(64);
  words
}

/// What the examples say about a tool: its intent and the noun it acts on.
struct ToolInfo {
  intent: Intent,
  /// Up to three noun words ("pull", "request"), the last one as the name says it.
  noun: Vec<String>,
  /// What a generic example is called: the description's first sentence when it is short, else
  /// the name's last segment in words (without a leading app name).
  title: String,
}

impl ToolInfo {
  fn new(name: &str, description: Option<&str>) -> Self {
    let intent = detect_intent(name, description);
    let segments: Vec<&str> = name.split(':').collect();
    let last = segments.last().copied().unwrap_or(name);
    let short = split_words(last);
    let is_noun =
      |w: &String| Intent::of_word(w).is_none() && !FILLER.contains(&w.as_str()) && w.chars().any(char::is_alphabetic);
    let verb_at = short.iter().position(|w| Intent::of_word(w).is_some());
    let mut noun: Vec<String> = match verb_at {
      Some(at) => short[at + 1..].iter().filter(|w| is_noun(w)).cloned().collect(),
      None => short.iter().filter(|w| is_noun(w)).cloned().collect(),
    };
    if noun.is_empty() {
      if let Some(at) = verb_at {
        noun = short[..at].iter().filter(|w| is_noun(w)).cloned().collect();
      }
    }
    if noun.is_empty() && segments.len() > 1 {
      noun = segments[..segments.len() - 1].iter().flat_map(|s| split_words(s)).filter(|w| is_noun(w)).collect();
    }
    let skip = noun.len().saturating_sub(3);
    let noun = noun.into_iter().skip(skip).map(|w| w.chars().take(32).collect()).collect();
    let app: Vec<String> = segments[..segments.len() - 1].iter().flat_map(|s| split_words(s)).collect();
    let lead = short.iter().take_while(|w| app.contains(w)).count();
    let words = if lead < short.len() { &short[lead..] } else { &short[..] };
    let named = words.iter().take(8).map(String::as_str).collect::<Vec<_>>().join(" ");
    let title = match description.and_then(first_sentence) {
      Some(sentence) => sentence,
      None => {
        let mut chars = named.chars();
        match chars.next() {
          Some(first) => first.to_uppercase().chain(chars).collect(),
          None => "Call the tool".to_string(),
        }
      }
    };
    ToolInfo { intent, noun, title }
  }

  fn phrase(&self, last: impl Fn(&str) -> String, fallback: &str) -> String {
    match self.noun.split_last() {
      None => fallback.to_string(),
      Some((tail, head)) => {
        let mut words: Vec<String> = head.to_vec();
        words.push(last(tail));
        words.join(" ")
      }
    }
  }

  fn singular(&self) -> String {
    self.phrase(singular, "item")
  }

  fn plural(&self) -> String {
    self.phrase(|w| plural(&singular(w)), "items")
  }

  /// A search word taken from the tool name.
  fn query_word(&self) -> String {
    self.noun.last().map(|w| singular(w)).unwrap_or_else(|| "example".to_string())
  }

  /// The description of a generated example with this input.
  fn describe(&self, input: &Value) -> String {
    let keys: Vec<&str> = input.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    let one = with_article(&self.singular());
    match self.intent {
      Intent::Create => format!("Create {one}"),
      Intent::List => format!("List {}", self.plural()),
      Intent::Get => match keys.iter().find(|k| self.names_noun(k)).and_then(|k| clean_text(k, 40)) {
        Some(key) => format!("Get one {} by {key}", self.singular()),
        None => format!("Get {one}"),
      },
      Intent::Update => format!("Update {one}"),
      Intent::Delete => format!("Delete {one}"),
      Intent::Search if keys.iter().any(|k| is_query_key(k)) => format!("Search {} by text", self.plural()),
      Intent::Search => format!("Search {}", self.plural()),
      Intent::Generic => self.title.clone(),
    }
  }

  /// An id key for this noun: `id`, or `userId` / `user_id` for a user.
  fn names_noun(&self, key: &str) -> bool {
    if !is_id_key(key) {
      return false;
    }
    let stem: Vec<String> = split_words(key).into_iter().filter(|w| w != "id" && w != "uuid").collect();
    stem.is_empty() || self.noun.last().is_some_and(|n| stem.last().is_some_and(|s| singular(s) == singular(n)))
  }
}

/// The first sentence of a description, without its final period, when it is short (at most 80
/// characters) and there is one.
fn first_sentence(description: &str) -> Option<String> {
  let text = description.trim_start();
  let end = [". ", ".\n", "\n", "。"].iter().filter_map(|stop| text.find(stop)).min().unwrap_or(text.len());
  let sentence = text[..end].trim_end().trim_end_matches('.');
  if sentence.chars().count() > 80 {
    return None;
  }
  clean_text(sentence, 80)
}

fn singular(word: &str) -> String {
  let keep = |suffix: &str| word.len() > suffix.len() + 1;
  if let Some(stem) = word.strip_suffix("ies").filter(|_| keep("ies")) {
    format!("{stem}y")
  } else if ["sses", "ches", "shes", "xes", "zes"].iter().any(|s| word.ends_with(s) && keep(s)) {
    word[..word.len() - 2].to_string()
  } else if word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) && keep("s") {
    word[..word.len() - 1].to_string()
  } else {
    word.to_string()
  }
}

fn plural(word: &str) -> String {
  let consonant_y =
    word.len() > 1 && word.ends_with('y') && !word[..word.len() - 1].ends_with(|c: char| "aeiou".contains(c));
  if consonant_y {
    format!("{}ies", &word[..word.len() - 1])
  } else if ["s", "x", "z", "ch", "sh"].iter().any(|s| word.ends_with(s)) {
    format!("{word}es")
  } else {
    format!("{word}s")
  }
}

fn with_article(phrase: &str) -> String {
  let vowel = phrase.chars().next().is_some_and(|c| "aeioAEIO".contains(c));
  format!("{} {phrase}", if vowel { "an" } else { "a" })
}

/// Free text on one line: control characters and runs of whitespace become one space, cut to
/// `max` characters (with `…`). `None` when nothing is left.
fn clean_text(text: &str, max: usize) -> Option<String> {
  let mut out = String::new();
  let mut count = 0;
  for word in text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
    if count > 0 {
      out.push(' ');
      count += 1;
    }
    for c in word.chars() {
      if count >= max {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('…');
        return Some(out);
      }
      out.push(c);
      count += 1;
    }
  }
  (!out.is_empty()).then_some(out)
}

// ---------------------------------------------------------------------------------------------
// Property names
// ---------------------------------------------------------------------------------------------

/// A property name lowercased, letters and digits only.
fn norm_key(key: &str) -> String {
  key.chars().filter(|c| c.is_alphanumeric()).take(64).flat_map(char::to_lowercase).collect()
}

fn is_limit_key(key: &str) -> bool {
  let n = norm_key(key);
  const LIMITS: &[&str] = &[
    "limit",
    "perpage",
    "pagesize",
    "maxresults",
    "maxitems",
    "count",
    "top",
    "topk",
    "first",
    "size",
    "max",
    "num",
    "numresults",
    "resultsperpage",
    "pagelimit",
    "take",
    "rows",
    "maxcount",
  ];
  LIMITS.contains(&n.as_str()) || (n.ends_with("limit") && n.len() < 16)
}

fn is_page_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "page" | "pagenumber" | "pageno" | "pagenum")
}

fn is_offset_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "offset" | "skip" | "start" | "startindex")
}

fn is_query_key(key: &str) -> bool {
  matches!(
    norm_key(key).as_str(),
    "query"
      | "q"
      | "search"
      | "searchterm"
      | "searchquery"
      | "searchtext"
      | "querytext"
      | "term"
      | "keyword"
      | "keywords"
  )
}

fn is_id_key(key: &str) -> bool {
  let n = norm_key(key);
  n == "id"
    || n.ends_with("uuid")
    || key.ends_with("Id")
    || key.ends_with("ID")
    || key.ends_with("_id")
    || key.ends_with("-id")
    || key.ends_with(" id")
}

fn is_name_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "name" | "title" | "subject" | "summary" | "displayname")
}

/// A top-level input property, as the example builder sees it.
struct TopProp<'a> {
  key: &'a str,
  required: bool,
  /// A plain value (string, number, boolean, enum): preferred by the "with options" example.
  scalar: bool,
  /// Deprecated, read-only, or a key AgentScript may reject: never added as an option.
  skip: bool,
}

/// The optional properties the intent example passes besides the required ones.
fn relevant_keys(intent: Intent, props: &[TopProp<'_>]) -> Vec<String> {
  let optional = |pred: fn(&str) -> bool| props.iter().find(|p| !p.required && !p.skip && pred(p.key));
  let has_required = |pred: fn(&str) -> bool| props.iter().any(|p| p.required && pred(p.key));
  let mut keys: Vec<&str> = Vec::new();
  match intent {
    Intent::List => keys.extend(optional(is_limit_key).map(|p| p.key)),
    Intent::Search => {
      keys.extend(optional(is_query_key).map(|p| p.key));
      keys.extend(optional(is_limit_key).map(|p| p.key));
    }
    Intent::Get | Intent::Delete if !has_required(is_id_key) => keys.extend(optional(is_id_key).map(|p| p.key)),
    Intent::Update => {
      if !has_required(is_id_key) {
        keys.extend(optional(is_id_key).map(|p| p.key));
      }
      keys.extend(optional(is_name_key).map(|p| p.key));
    }
    Intent::Create if !props.iter().any(|p| p.required) => keys.extend(optional(is_name_key).map(|p| p.key)),
    _ => {}
  }
  keys.into_iter().map(str::to_string).collect()
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

/// `const <var> = await callTool('<name>', <input>);` [result comment] `return <var>;`, or `None`
/// when the input cannot be printed or the code would be longer than [`MAX_CODE_BYTES`].
fn render_code(name: &str, var: &str, input: &Value, output: Option<&Value>) -> Option<String> {
  let head = format!("const {var} = await callTool({}, ", quote(name));
  if head.len() > MAX_CODE_BYTES {
    return None;
  }
  let args = literal(input, 0, head.len())?;
  let mut code = format!("{head}{args});\n");
  if let Some(output) = output {
    let mut json = String::new();
    let complete = compact_json(output, 0, &mut json, MAX_RESULT_CHARS);
    if !complete {
      json.push('…');
    }
    code.push_str("// Example result: ");
    code.push_str(&json);
    code.push('\n');
  }
  code.push_str("return ");
  code.push_str(var);
  code.push(';');
  (code.len() <= MAX_CODE_BYTES).then_some(code)
}

/// A JavaScript literal for `value`, on one line when it fits in [`INLINE_WIDTH`] columns from
/// `column`, otherwise one member per line, indented by two spaces per `level`.
fn literal(value: &Value, level: usize, column: usize) -> Option<String> {
  let mut inline = String::new();
  if !inline_literal(value, 0, &mut inline) {
    return None;
  }
  let nested = match value {
    Value::Object(o) => !o.is_empty(),
    Value::Array(a) => !a.is_empty(),
    _ => false,
  };
  if !nested || column + inline.chars().count() <= INLINE_WIDTH {
    return Some(inline);
  }
  let pad = "  ".repeat(level + 1);
  let mut lines: Vec<String> = Vec::new();
  match value {
    Value::Object(o) => {
      for (k, v) in o {
        let key = object_key(k);
        let member = literal(v, level + 1, pad.len() + key.len() + 2)?;
        lines.push(format!("{pad}{key}: {member}"));
      }
    }
    Value::Array(items) => {
      for v in items {
        lines.push(format!("{pad}{}", literal(v, level + 1, pad.len())?));
      }
    }
    _ => {}
  }
  let (open, close) = if value.is_object() { ('{', '}') } else { ('[', ']') };
  Some(format!("{open}\n{}\n{}{close}", lines.join(",\n"), "  ".repeat(level)))
}

/// Writes the one-line literal; false when it is too large, too deep or has a forbidden key.
fn inline_literal(value: &Value, depth: usize, out: &mut String) -> bool {
  if depth > MAX_PRINT_DEPTH || out.len() > MAX_CODE_BYTES {
    return false;
  }
  match value {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => out.push_str(&n.to_string()),
    Value::String(s) => {
      if s.len() > MAX_CODE_BYTES {
        return false;
      }
      out.push_str(&quote(s));
    }
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push_str(", ");
        }
        if !inline_literal(item, depth + 1, out) {
          return false;
        }
      }
      out.push(']');
    }
    Value::Object(o) if o.is_empty() => out.push_str("{}"),
    Value::Object(o) => {
      out.push_str("{ ");
      for (i, (k, v)) in o.iter().enumerate() {
        if FORBIDDEN_KEYS.contains(&k.as_str()) || k.len() > MAX_CODE_BYTES {
          return false;
        }
        if i > 0 {
          out.push_str(", ");
        }
        out.push_str(&object_key(k));
        out.push_str(": ");
        if !inline_literal(v, depth + 1, out) {
          return false;
        }
      }
      out.push_str(" }");
    }
  }
  true
}

/// A key in an object literal: bare when it is a plain identifier, quoted otherwise (and always
/// when it starts with `__`, a prefix the sandbox reserves for identifiers).
fn object_key(key: &str) -> String {
  if is_identifier(key) && !key.starts_with("__") {
    key.to_string()
  } else {
    quote(key)
  }
}

/// Compact JSON of `value` into `out`, stopping after about `max` characters (false then). Line
/// terminators are escaped, so the text is safe in a `//` comment.
fn compact_json(value: &Value, depth: usize, out: &mut String, max: usize) -> bool {
  if out.len() > max {
    return false;
  }
  if depth > MAX_PRINT_DEPTH {
    out.push('…');
    return false;
  }
  match value {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => out.push_str(&n.to_string()),
    Value::String(s) => json_string(s, out, max),
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        if !compact_json(item, depth + 1, out, max) {
          return false;
        }
      }
      out.push(']');
    }
    Value::Object(o) => {
      out.push('{');
      for (i, (k, v)) in o.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        json_string(k, out, max);
        out.push(':');
        if !compact_json(v, depth + 1, out, max) {
          return false;
        }
      }
      out.push('}');
    }
  }
  if out.len() > max {
    let mut cut = max;
    while !out.is_char_boundary(cut) {
      cut -= 1;
    }
    out.truncate(cut);
    return false;
  }
  true
}

fn json_string(s: &str, out: &mut String, max: usize) {
  out.push('"');
  for c in s.chars() {
    if out.len() > max {
      break;
    }
    match c {
      '"' => out.push_str("\\\""),
      '\\' => out.push_str("\\\\"),
      '\n' => out.push_str("\\n"),
      '\r' => out.push_str("\\r"),
      '\t' => out.push_str("\\t"),
      c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
      c => out.push(c),
    }
  }
  out.push('"');
}

// ---------------------------------------------------------------------------------------------
// Values: generation and validation
// ---------------------------------------------------------------------------------------------

/// What the validator can say about a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
  Valid,
  /// Nothing seen is wrong, but something could not be checked (a pattern the regular-expression
  /// engine does not read, a remote `$ref`, the step budget).
  Uncertain,
  Invalid,
}

impl Verdict {
  fn and(self, other: Verdict) -> Verdict {
    match (self, other) {
      (Verdict::Invalid, _) | (_, Verdict::Invalid) => Verdict::Invalid,
      (Verdict::Uncertain, _) | (_, Verdict::Uncertain) => Verdict::Uncertain,
      _ => Verdict::Valid,
    }
  }

  fn rank(self) -> u8 {
    match self {
      Verdict::Valid => 0,
      Verdict::Uncertain => 1,
      Verdict::Invalid => 2,
    }
  }
}

type Schema = Map<String, Value>;

/// The value generator and validator for one input schema.
struct Engine<'a> {
  root: &'a Value,
  gen_left: usize,
  check_left: usize,
  /// A budget ran out during the current attempt: its result is not trusted.
  exhausted: bool,
  regexes: HashMap<String, Option<Rc<Re>>>,
  /// A word from the tool name, for `query`-like properties.
  query_word: String,
  /// The tool's noun as an identifier part, for `id`.
  id_stem: String,
}

impl<'a> Engine<'a> {
  fn new(root: &'a Value, info: &ToolInfo) -> Self {
    let id_stem: String = info.query_word().chars().filter(|c| c.is_ascii_alphanumeric()).take(24).collect();
    Engine {
      root,
      gen_left: GEN_BUDGET,
      check_left: CHECK_BUDGET,
      exhausted: false,
      regexes: HashMap::new(),
      query_word: info.query_word(),
      id_stem: if id_stem.is_empty() || id_stem == "example" { "id".to_string() } else { id_stem.to_lowercase() },
    }
  }

  fn reset(&mut self) {
    self.gen_left = GEN_BUDGET;
    self.check_left = CHECK_BUDGET;
    self.exhausted = false;
  }

  fn charge(&mut self, steps: usize) {
    self.check_left = self.check_left.saturating_sub(steps);
  }

  /// The top-level properties (through `$ref` and `allOf`), declared order.
  fn top_properties(&mut self) -> Vec<TopProp<'a>> {
    let Some(maps) = self.merge(&[self.root]) else { return Vec::new() };
    let required: HashSet<&str> = maps.iter().flat_map(|m| required_of(m)).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut props = Vec::new();
    for m in &maps {
      let Some(Value::Object(p)) = m.get("properties") else { continue };
      for (key, schema) in p {
        if !seen.insert(key.as_str()) {
          continue;
        }
        let target = match schema.get("$ref").and_then(Value::as_str) {
          Some(r) => resolve_ref(self.root, r).unwrap_or(schema),
          None => schema,
        };
        let scalar = target.get("enum").is_some()
          || target.get("const").is_some()
          || match target.get("type") {
            Some(Value::String(t)) => matches!(t.as_str(), "string" | "number" | "integer" | "boolean"),
            Some(Value::Array(ts)) => {
              ts.iter().filter_map(Value::as_str).find(|t| *t != "null").is_some_and(|t| t != "object" && t != "array")
            }
            _ => false,
          };
        let deprecated = |s: &Value| {
          s.get("deprecated") == Some(&Value::Bool(true))
            || s.get("readOnly") == Some(&Value::Bool(true))
            || s.get("description").and_then(Value::as_str).is_some_and(|d| d.to_lowercase().contains("deprecated"))
        };
        props.push(TopProp {
          key: key.as_str(),
          required: required.contains(key.as_str()),
          scalar,
          skip: deprecated(schema) || deprecated(target) || FORBIDDEN_KEYS.contains(&key.as_str()),
        });
      }
    }
    props
  }

  /// An input for the whole schema with the required properties and the `wanted` optional ones,
  /// or `None` when it would not be valid.
  fn top_input(&mut self, wanted: &[String]) -> Option<Value> {
    self.reset();
    let root = self.root;
    let input = self.gen(&[root], "", 0, Some(wanted), 0)?;
    let verdict = self.check(&input, root, 0);
    if self.exhausted || verdict == Verdict::Invalid {
      return None;
    }
    Some(input)
  }

  /// The schema objects that all apply to one value: `conj` with their `$ref` targets and `allOf`
  /// members, each once. `None` when one of them is `false`.
  fn merge(&self, conj: &[&'a Value]) -> Option<Vec<&'a Schema>> {
    let mut out: Vec<&'a Schema> = Vec::new();
    let mut stack: Vec<(&'a Value, usize)> = conj.iter().rev().map(|s| (*s, 0)).collect();
    while let Some((schema, hops)) = stack.pop() {
      match schema {
        Value::Bool(false) => return None,
        Value::Object(m) => {
          if out.iter().any(|o| std::ptr::eq(*o, m)) || out.len() >= MAX_MERGED {
            continue;
          }
          out.push(m);
          if hops >= MAX_HOPS {
            continue;
          }
          if let Some(Value::Array(all)) = m.get("allOf") {
            stack.extend(all.iter().take(MAX_BRANCHES).rev().map(|b| (b, hops + 1)));
          }
          if let Some(target) = m.get("$ref").and_then(Value::as_str).and_then(|r| resolve_ref(self.root, r)) {
            stack.push((target, hops + 1));
          }
        }
        _ => {}
      }
    }
    Some(out)
  }

  fn check_all(&mut self, value: &Value, conj: &[&'a Value]) -> Verdict {
    let mut verdict = Verdict::Valid;
    for schema in conj {
      verdict = verdict.and(self.check(value, schema, 0));
      if verdict == Verdict::Invalid {
        break;
      }
    }
    verdict
  }

  /// A value for all of `conj`, for a property called `key`. `top` is `Some(wanted optional keys)`
  /// for the input object itself; `variant` asks for a different value (for `uniqueItems`).
  fn gen(
    &mut self,
    conj: &[&'a Value],
    key: &str,
    depth: usize,
    top: Option<&[String]>,
    variant: usize,
  ) -> Option<Value> {
    self.gen_choosing(conj, &mut Vec::new(), key, depth, top, variant)
  }

  fn gen_choosing(
    &mut self,
    conj: &[&'a Value],
    chosen: &mut Vec<(usize, bool)>,
    key: &str,
    depth: usize,
    top: Option<&[String]>,
    variant: usize,
  ) -> Option<Value> {
    if self.gen_left == 0 {
      self.exhausted = true;
      return None;
    }
    self.gen_left -= 1;
    if depth > MAX_DEPTH || chosen.len() > MAX_CHOICES {
      return None;
    }
    let maps = self.merge(conj)?;

    // anyOf / oneOf: pick the first branch that yields a valid value (null-only branches last).
    let pending = maps.iter().find_map(|m| {
      [("anyOf", false), ("oneOf", true)].into_iter().find_map(|(k, one)| {
        let id = (*m as *const Schema as usize, one);
        match m.get(k) {
          Some(Value::Array(branches)) if !branches.is_empty() && !chosen.contains(&id) => Some((id, branches)),
          _ => None,
        }
      })
    });
    if let Some((id, branches)) = pending {
      let mut order: Vec<&'a Value> = branches.iter().take(MAX_BRANCHES).collect();
      order.sort_by_key(|b| only_null(b));
      chosen.push(id);
      let mut best: Option<(Value, Verdict)> = None;
      for branch in order {
        let mut with_branch = conj.to_vec();
        with_branch.push(branch);
        let Some(value) = self.gen_choosing(&with_branch, chosen, key, depth, top, variant) else { continue };
        let verdict = self.check_all(&value, conj);
        if verdict == Verdict::Valid {
          chosen.pop();
          return Some(value);
        }
        if best.as_ref().is_none_or(|(_, b)| verdict.rank() < b.rank()) {
          best = Some((value, verdict));
        }
      }
      chosen.pop();
      return best.map(|(v, _)| v);
    }

    let mut best: Option<(Value, Verdict)> = None;
    let mut consider = |engine: &mut Self, value: Value, trusted: bool| -> Option<Value> {
      let verdict = engine.check_all(&value, conj);
      if verdict == Verdict::Valid {
        return Some(value);
      }
      // A value the schema itself gives is the best guess where the validator cannot decide.
      let verdict = if verdict == Verdict::Uncertain && !trusted { Verdict::Invalid } else { verdict };
      if best.as_ref().is_none_or(|(_, b)| verdict.rank() < b.rank()) {
        best = Some((value, verdict));
      }
      None
    };

    // Literals the schema gives: const, enum, then (below the top) examples and default.
    let mut closed = false;
    for m in &maps {
      if let Some(c) = m.get("const") {
        closed = true;
        if let Some(v) = consider(self, c.clone(), true) {
          return Some(v);
        }
      }
      if let Some(Value::Array(values)) = m.get("enum") {
        closed = true;
        let n = values.len().min(MAX_MERGED);
        for i in 0..n {
          let value = &values[(i + variant) % n];
          if literal_size(value, 0) <= MAX_LITERAL_BYTES {
            if let Some(v) = consider(self, value.clone(), true) {
              return Some(v);
            }
          }
        }
      }
    }
    if closed {
      return best.map(|(v, _)| v);
    }
    if top.is_none() && variant == 0 {
      let mut literals: Vec<&'a Value> = Vec::new();
      for m in &maps {
        if let Some(Value::Array(examples)) = m.get("examples") {
          literals.extend(examples.iter().take(3));
        }
        literals.extend(m.get("example"));
        // An empty default (`''`, `[]`, `{}`) shows nothing: a generated value is more telling.
        let empty = |v: &&Value| match v {
          Value::String(s) => s.is_empty(),
          Value::Array(a) => a.is_empty(),
          Value::Object(o) => o.is_empty(),
          _ => false,
        };
        literals.extend(m.get("default").filter(|v| !empty(v)));
      }
      for value in literals {
        if literal_size(value, 0) <= MAX_LITERAL_BYTES {
          if let Some(v) = consider(self, value.clone(), true) {
            return Some(v);
          }
        }
      }
    }

    for ty in type_order(&maps, key, top.is_some()) {
      let candidates = match ty {
        "object" => self.gen_object(&maps, depth, top, variant).into_iter().collect(),
        "array" => self.gen_array(&maps, key, depth, variant).into_iter().collect(),
        "string" => self.gen_strings(&maps, key, variant),
        "integer" => number_candidates(&maps, key, true, variant),
        "number" => number_candidates(&maps, key, false, variant),
        "boolean" => {
          let odd = variant & 1 == 1;
          vec![Value::Bool(!odd), Value::Bool(odd)]
        }
        _ => vec![Value::Null],
      };
      for candidate in candidates {
        if let Some(v) = consider(self, candidate, false) {
          return Some(v);
        }
      }
    }
    best.map(|(v, _)| v)
  }

  fn gen_object(&mut self, maps: &[&'a Schema], depth: usize, top: Option<&[String]>, variant: usize) -> Option<Value> {
    let mut declared: Vec<&'a str> = Vec::new();
    let mut seen: HashSet<&'a str> = HashSet::new();
    for m in maps {
      if let Some(Value::Object(p)) = m.get("properties") {
        declared.extend(p.keys().map(String::as_str).filter(|k| seen.insert(*k)));
      }
    }
    // Required keys, then the wanted optional ones, then what dependentRequired and minProperties ask for.
    let mut needed: Vec<&'a str> = Vec::new();
    let mut needed_set: HashSet<&'a str> = HashSet::new();
    for m in maps {
      needed.extend(required_of(m).filter(|k| needed_set.insert(*k)));
    }
    let mut keys: Vec<(&'a str, bool)> = needed.iter().map(|k| (*k, true)).collect();
    for w in top.unwrap_or(&[]) {
      if let Some(k) = declared.iter().find(|d| **d == w.as_str()) {
        if !keys.iter().any(|(x, _)| x == k) {
          keys.push((*k, false));
        }
      }
    }
    for _ in 0..4 {
      let before = keys.len();
      for m in maps {
        for deps in ["dependentRequired", "dependencies"] {
          let Some(Value::Object(d)) = m.get(deps) else { continue };
          for (k, list) in d {
            let Value::Array(list) = list else { continue };
            if !keys.iter().any(|(x, _)| *x == k.as_str()) {
              continue;
            }
            for dep in list.iter().filter_map(Value::as_str).take(64) {
              if !keys.iter().any(|(x, _)| *x == dep) {
                keys.push((dep, true));
              }
            }
          }
        }
      }
      if keys.len() == before || keys.len() > 4096 {
        break;
      }
    }
    // Listing the keys is work too: large schemas spend the budget.
    self.charge(declared.len() + keys.len());
    if self.check_left == 0 {
      self.exhausted = true;
      return None;
    }
    let min_props = maps.iter().filter_map(|m| m.get("minProperties").and_then(Value::as_u64)).max().unwrap_or(0);
    let max_props = maps.iter().filter_map(|m| m.get("maxProperties").and_then(Value::as_u64)).min();
    if min_props > MAX_ITEMS {
      return None;
    }

    let mut obj = Map::new();
    let mut first = true;
    let mut add = |engine: &mut Self, obj: &mut Map<String, Value>, k: &str, must: bool| -> bool {
      let (schemas, forbidden) = engine.property_schemas(maps, k);
      if (forbidden || FORBIDDEN_KEYS.contains(&k)) && !must {
        return true;
      }
      let value = engine.gen(&schemas, k, depth + 1, None, if first { variant } else { 0 });
      match value {
        Some(v) => {
          if !must && engine.check_all(&v, &schemas) != Verdict::Valid {
            return true;
          }
          obj.insert(k.to_string(), v);
          first = false;
          true
        }
        None => !must,
      }
    };
    for (k, must) in &keys {
      if obj.contains_key(*k) {
        continue;
      }
      if !add(self, &mut obj, k, *must) || self.exhausted {
        return None;
      }
    }
    if (obj.len() as u64) < min_props {
      for k in &declared {
        if (obj.len() as u64) >= min_props {
          break;
        }
        if !obj.contains_key(*k) && !add(self, &mut obj, k, false) {
          return None;
        }
      }
      let open = !maps.iter().any(|m| m.get("additionalProperties") == Some(&Value::Bool(false)));
      let mut i = 1;
      while open && (obj.len() as u64) < min_props && i <= MAX_ITEMS {
        let name = format!("key{i}");
        i += 1;
        let name_ok = maps
          .iter()
          .filter_map(|m| m.get("propertyNames"))
          .all(|s| self.check(&Value::String(name.clone()), s, 0) == Verdict::Valid);
        if name_ok && !obj.contains_key(&name) && !add(self, &mut obj, &name, false) {
          return None;
        }
      }
    }
    if let Some(max) = max_props {
      let optional: Vec<String> = obj.keys().filter(|k| !needed_set.contains(k.as_str())).cloned().collect();
      for k in optional.iter().rev() {
        if (obj.len() as u64) <= max {
          break;
        }
        obj.remove(k);
      }
    }
    Some(Value::Object(obj))
  }

  /// The schemas a property's value must satisfy, and whether some `additionalProperties: false`
  /// (or `unevaluatedProperties: false` next to it) forbids the key.
  fn property_schemas(&mut self, maps: &[&'a Schema], key: &str) -> (Vec<&'a Value>, bool) {
    let mut out = Vec::new();
    let mut forbidden = false;
    for m in maps {
      let mut matched = false;
      if let Some(s) = m.get("properties").and_then(|p| p.get(key)) {
        out.push(s);
        matched = true;
      }
      if let Some(Value::Object(patterns)) = m.get("patternProperties") {
        for (pattern, s) in patterns.iter().take(64) {
          if self.matches(pattern, key) == Some(true) {
            out.push(s);
            matched = true;
          }
        }
      }
      if !matched {
        match m.get("additionalProperties") {
          Some(Value::Bool(false)) => forbidden = true,
          Some(s @ Value::Object(_)) => out.push(s),
          _ => {}
        }
        if m.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
          forbidden = true;
        }
      }
      if let Some(names) = m.get("propertyNames") {
        if self.check(&Value::String(key.to_string()), names, 0) != Verdict::Valid {
          forbidden = true;
        }
      }
    }
    (out, forbidden)
  }

  fn gen_array(&mut self, maps: &[&'a Schema], key: &str, depth: usize, variant: usize) -> Option<Value> {
    let mut min = 0u64;
    let mut max = u64::MAX;
    let mut unique = false;
    for m in maps {
      min = min.max(m.get("minItems").and_then(Value::as_u64).unwrap_or(0));
      max = max.min(m.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX));
      unique |= m.get("uniqueItems") == Some(&Value::Bool(true));
      if let (prefix, Some(Value::Bool(false))) = item_schemas(m) {
        max = max.min(prefix.map_or(0, |p| p.len() as u64));
      }
    }
    if min > MAX_ITEMS || min > max {
      return None;
    }
    let count = min.max(1).min(max);
    let contains: Vec<&'a Value> = maps.iter().filter_map(|m| m.get("contains")).collect();
    let item_key = singular(key);
    let mut items: Vec<Value> = Vec::new();
    let mut attempt = 0;
    while (items.len() as u64) < count && attempt < count as usize + 8 {
      let i = items.len();
      let mut conj: Vec<&'a Value> = Vec::new();
      for m in maps {
        match item_schemas(m) {
          (Some(prefix), rest) => conj.extend(prefix.get(i).or(rest)),
          (None, rest) => conj.extend(rest),
        }
      }
      if i == 0 {
        conj.extend(contains.iter().copied());
      }
      let var = if unique { variant + attempt } else { variant };
      attempt += 1;
      match self.gen(&conj, &item_key, depth + 1, None, var) {
        Some(v) => {
          if unique && items.iter().any(|x| json_eq(x, &v, 0)) {
            continue;
          }
          items.push(v);
        }
        None if (i as u64) < min || self.exhausted => return None,
        None => break,
      }
    }
    if (items.len() as u64) < min {
      return None;
    }
    Some(Value::Array(items))
  }

  fn gen_strings(&mut self, maps: &[&'a Schema], key: &str, variant: usize) -> Vec<Value> {
    let min = maps.iter().filter_map(|m| m.get("minLength").and_then(Value::as_u64)).max().unwrap_or(0);
    let max = maps.iter().filter_map(|m| m.get("maxLength").and_then(Value::as_u64)).min().unwrap_or(u64::MAX);
    if min > MAX_STRING {
      return Vec::new();
    }
    let mut raw: Vec<String> = Vec::new();
    if let Some(f) = maps.iter().find_map(|m| m.get("format").and_then(Value::as_str)) {
      raw.extend(format_value(f, variant));
    }
    raw.push(self.hint_string(key, variant));
    let patterns: Vec<&'a str> = maps.iter().filter_map(|m| m.get("pattern").and_then(Value::as_str)).collect();
    for pattern in patterns.iter().take(4) {
      let Some(re) = self.regex(pattern) else { continue };
      for (extra, alt) in [(0, 0), (1, 0), (0, 1), (4, 0), (1, 1), (0, 2), (min as usize, 0)] {
        let mut s = String::new();
        let budget = self.check_left.min(5_000);
        let mut steps = budget;
        sample(&re, extra + variant, alt, &mut s, &mut steps);
        self.charge(budget - steps + 1);
        raw.push(s);
      }
    }
    raw.push(if variant == 0 { "example".to_string() } else { format!("example-{}", variant + 1) });
    raw.push(if variant == 0 { "sample".to_string() } else { format!("sample-{}", variant + 1) });

    let mut out: Vec<Value> = Vec::new();
    for s in raw {
      let len = s.chars().count() as u64;
      let mut fitted = Vec::new();
      if len < min {
        for pad in ['x', '0'] {
          let mut t = s.clone();
          t.extend(std::iter::repeat_n(pad, (min - len) as usize));
          fitted.push(t);
        }
      } else if len > max {
        fitted.push(s.chars().take(max as usize).collect());
      } else {
        fitted.push(s);
      }
      for t in fitted {
        let v = Value::String(t);
        if !out.contains(&v) {
          out.push(v);
        }
      }
    }
    out
  }

  /// A friendly string for a property called `key`.
  fn hint_string(&self, key: &str, variant: usize) -> String {
    let n = norm_key(key);
    let bump = |s: &str| if variant == 0 { s.to_string() } else { format!("{s}-{}", variant + 1) };
    if n.contains("email") {
      return format_value("email", variant).unwrap_or_default();
    }
    if is_id_key(key) {
      let words = split_words(key);
      let stem: Vec<&str> = words.iter().map(String::as_str).filter(|w| *w != "id" && *w != "uuid").collect();
      let stem = if stem.is_empty() { self.id_stem.clone() } else { stem.join("_") };
      return format!("{}_{}", stem.chars().take(32).collect::<String>(), 123 + variant);
    }
    if is_query_key(key) {
      return bump(&self.query_word);
    }
    let is = |list: &[&str]| list.contains(&n.as_str());
    if n.ends_with("url") || n.ends_with("uri") || is(&["link", "href", "website", "homepage", "endpoint", "webhook"]) {
      return format_value("uri", variant).unwrap_or_default();
    }
    let text = if is(&["name", "displayname", "fullname"]) {
      "Example"
    } else if is(&["title", "subject", "summary", "headline"]) {
      "Example title"
    } else if is(&["username", "user", "owner", "login", "author", "assignee", "handle"]) {
      "example-user"
    } else if is(&["repo", "repository", "reponame"]) {
      "example-repo"
    } else if is(&["org", "organization", "organisation", "workspace", "team", "project"]) {
      return bump(&format!("example-{n}"));
    } else if is(&["branch", "ref", "base"]) {
      "main"
    } else if is(&["path", "filepath"]) {
      "docs/README.md"
    } else if is(&["file", "filename"]) {
      "README.md"
    } else if is(&["dir", "directory", "folder"]) {
      "docs"
    } else if is(&["message", "comment", "body", "content", "text", "description", "note", "notes", "prompt", "reason"])
    {
      "Example text"
    } else if n.contains("color") || n.contains("colour") {
      "#3366ff"
    } else if is(&["language", "lang"]) {
      "en"
    } else if n == "locale" {
      "en-US"
    } else if is(&["timezone", "tz"]) {
      "UTC"
    } else if n == "currency" {
      "USD"
    } else if is(&["country", "countrycode"]) {
      "US"
    } else if n.contains("phone") {
      "+15555550123"
    } else if n.contains("date") {
      return format_value("date", variant).unwrap_or_default();
    } else if n.contains("time") || key.ends_with("At") || key.ends_with("_at") {
      return format_value("date-time", variant).unwrap_or_default();
    } else {
      "example"
    };
    bump(text)
  }

  fn regex(&mut self, pattern: &str) -> Option<Rc<Re>> {
    if let Some(cached) = self.regexes.get(pattern) {
      return cached.clone();
    }
    let parsed = parse_regex(pattern).map(Rc::new);
    if self.regexes.len() < 256 {
      self.regexes.insert(pattern.to_string(), parsed.clone());
    }
    parsed
  }

  /// Whether `pattern` matches somewhere in `text`; `None` when that cannot be decided.
  fn matches(&mut self, pattern: &str, text: &str) -> Option<bool> {
    let re = self.regex(pattern)?;
    let (found, steps) = regex_search(&re, text, self.check_left);
    self.charge(steps);
    if self.check_left == 0 {
      self.exhausted = true;
    }
    found
  }

  // -------------------------------------------------------------------------------------------
  // Validation
  // -------------------------------------------------------------------------------------------

  /// How `value` fares against `schema` (JSON Schema draft 4 to 2020-12, as ajv reads it).
  fn check(&mut self, value: &Value, schema: &'a Value, depth: usize) -> Verdict {
    if self.check_left == 0 {
      self.exhausted = true;
      return Verdict::Uncertain;
    }
    self.check_left -= 1;
    if depth > CHECK_DEPTH {
      return Verdict::Uncertain;
    }
    let m = match schema {
      Value::Bool(false) => return Verdict::Invalid,
      Value::Object(m) => m,
      _ => return Verdict::Valid,
    };
    let mut verdict = Verdict::Valid;
    if let Some(Value::String(r)) = m.get("$ref") {
      verdict = match resolve_ref(self.root, r) {
        Some(target) => self.check(value, target, depth + 1),
        None => Verdict::Uncertain,
      };
      if verdict == Verdict::Invalid {
        return verdict;
      }
    }
    if let Some(t) = m.get("type") {
      if !type_matches(value, t, m.get("nullable") == Some(&Value::Bool(true))) {
        return Verdict::Invalid;
      }
    }
    if let Some(c) = m.get("const") {
      if !json_eq(value, c, 0) {
        return Verdict::Invalid;
      }
    }
    if let Some(Value::Array(values)) = m.get("enum") {
      self.charge(values.len() / 8);
      if !values.iter().any(|x| json_eq(value, x, 0)) {
        return Verdict::Invalid;
      }
    }
    let own = match value {
      Value::Number(n) => check_number(n, m),
      Value::String(s) => self.check_string(s, m),
      Value::Array(items) => self.check_array(items, m, depth),
      Value::Object(o) => self.check_object(value, o, m, depth),
      _ => Verdict::Valid,
    };
    verdict = verdict.and(own);
    if verdict == Verdict::Invalid {
      return verdict;
    }
    verdict.and(self.check_combinators(value, m, depth))
  }

  fn check_string(&mut self, s: &str, m: &'a Schema) -> Verdict {
    let len = s.chars().count() as u64;
    if m.get("minLength").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxLength").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    if let Some(Value::String(pattern)) = m.get("pattern") {
      match self.matches(pattern, s) {
        Some(true) => {}
        Some(false) => return Verdict::Invalid,
        None => verdict = Verdict::Uncertain,
      }
    }
    if let Some(Value::String(f)) = m.get("format") {
      verdict = verdict.and(format_verdict(f, s));
    }
    verdict
  }

  fn check_array(&mut self, items: &[Value], m: &'a Schema, depth: usize) -> Verdict {
    let len = items.len() as u64;
    if m.get("minItems").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxItems").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    let (prefix, rest) = item_schemas(m);
    for (i, item) in items.iter().enumerate() {
      if let Some(s) = prefix.and_then(|p| p.get(i)).or(rest) {
        verdict = verdict.and(self.check(item, s, depth + 1));
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
      if items.len() > 256 {
        verdict = verdict.and(Verdict::Uncertain);
      } else {
        self.charge(items.len() * items.len() / 16);
        for (i, a) in items.iter().enumerate() {
          if items[i + 1..].iter().any(|b| json_eq(a, b, 0)) {
            return Verdict::Invalid;
          }
        }
      }
    }
    if let Some(contains) = m.get("contains") {
      let (mut hits, mut unsure) = (0u64, 0u64);
      for item in items {
        match self.check(item, contains, depth + 1) {
          Verdict::Valid => hits += 1,
          Verdict::Uncertain => unsure += 1,
          Verdict::Invalid => {}
        }
      }
      let min = m.get("minContains").and_then(Value::as_u64).unwrap_or(1);
      let max = m.get("maxContains").and_then(Value::as_u64).unwrap_or(u64::MAX);
      if hits + unsure < min || hits > max {
        return Verdict::Invalid;
      }
      if hits < min || hits + unsure > max {
        verdict = verdict.and(Verdict::Uncertain);
      }
    }
    verdict
  }

  fn check_object(&mut self, whole: &Value, o: &Map<String, Value>, m: &'a Schema, depth: usize) -> Verdict {
    if let Some(Value::Array(required)) = m.get("required") {
      self.charge(required.len() / 8);
      if required.iter().filter_map(Value::as_str).any(|k| !o.contains_key(k)) {
        return Verdict::Invalid;
      }
    }
    let len = o.len() as u64;
    if m.get("minProperties").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxProperties").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    let props = m.get("properties").and_then(Value::as_object);
    let patterns = m.get("patternProperties").and_then(Value::as_object);
    let additional = m.get("additionalProperties");
    let names = m.get("propertyNames");
    for (k, v) in o {
      let mut matched = false;
      if let Some(s) = props.and_then(|p| p.get(k)) {
        matched = true;
        verdict = verdict.and(self.check(v, s, depth + 1));
      }
      if let Some(patterns) = patterns {
        for (pattern, s) in patterns.iter().take(64) {
          match self.matches(pattern, k) {
            Some(true) => {
              matched = true;
              verdict = verdict.and(self.check(v, s, depth + 1));
            }
            Some(false) => {}
            None => {
              matched = true;
              verdict = verdict.and(Verdict::Uncertain);
            }
          }
        }
        if patterns.len() > 64 {
          matched = true;
          verdict = verdict.and(Verdict::Uncertain);
        }
      }
      if !matched {
        if let Some(a) = additional {
          verdict = verdict.and(self.check(v, a, depth + 1));
        }
      }
      if let Some(names) = names {
        verdict = verdict.and(self.check(&Value::String(k.clone()), names, depth + 1));
      }
      if verdict == Verdict::Invalid {
        return verdict;
      }
    }
    for deps in ["dependentRequired", "dependencies", "dependentSchemas"] {
      let Some(Value::Object(d)) = m.get(deps) else { continue };
      for (k, dep) in d.iter().take(256) {
        if !o.contains_key(k) {
          continue;
        }
        match dep {
          Value::Array(list) => {
            if list.iter().filter_map(Value::as_str).any(|x| !o.contains_key(x)) {
              return Verdict::Invalid;
            }
          }
          schema => verdict = verdict.and(self.check(whole, schema, depth + 1)),
        }
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
    }
    verdict
  }

  fn check_combinators(&mut self, value: &Value, m: &'a Schema, depth: usize) -> Verdict {
    let mut verdict = Verdict::Valid;
    if let Some(Value::Array(all)) = m.get("allOf") {
      for s in all.iter().take(256) {
        verdict = verdict.and(self.check(value, s, depth + 1));
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
      if all.len() > 256 {
        verdict = verdict.and(Verdict::Uncertain);
      }
    }
    if let Some(Value::Array(any)) = m.get("anyOf").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())) {
      let mut best = Verdict::Invalid;
      for s in any.iter().take(256) {
        let v = self.check(value, s, depth + 1);
        if v.rank() < best.rank() {
          best = v;
        }
        if best == Verdict::Valid {
          break;
        }
      }
      if any.len() > 256 && best != Verdict::Valid {
        best = Verdict::Uncertain;
      }
      verdict = verdict.and(best);
    }
    if let Some(Value::Array(one)) = m.get("oneOf").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())) {
      let (mut valid, mut unsure) = (0, 0);
      for s in one.iter().take(256) {
        match self.check(value, s, depth + 1) {
          Verdict::Valid => valid += 1,
          Verdict::Uncertain => unsure += 1,
          Verdict::Invalid => {}
        }
        if valid > 1 {
          break;
        }
      }
      verdict = verdict.and(match (valid, unsure) {
        (v, _) if v > 1 => Verdict::Invalid,
        (0, 0) => Verdict::Invalid,
        (1, 0) if one.len() <= 256 => Verdict::Valid,
        _ => Verdict::Uncertain,
      });
    }
    if let Some(not) = m.get("not") {
      verdict = verdict.and(match self.check(value, not, depth + 1) {
        Verdict::Valid => Verdict::Invalid,
        Verdict::Invalid => Verdict::Valid,
        Verdict::Uncertain => Verdict::Uncertain,
      });
    }
    if let Some(cond) = m.get("if") {
      let branch = match self.check(value, cond, depth + 1) {
        Verdict::Valid => m.get("then"),
        Verdict::Invalid => m.get("else"),
        Verdict::Uncertain => return verdict.and(Verdict::Uncertain),
      };
      if let Some(branch) = branch {
        verdict = verdict.and(self.check(value, branch, depth + 1));
      }
    }
    verdict
  }
}

fn required_of(m: &Schema) -> impl Iterator<Item = &str> {
  m.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).take(4096)
}

/// `(tuple schemas, schema for the rest)` of an array schema, draft 2020-12 or earlier.
fn item_schemas(m: &Schema) -> (Option<&Vec<Value>>, Option<&Value>) {
  match (m.get("prefixItems"), m.get("items")) {
    (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
    (_, Some(Value::Array(prefix))) => (Some(prefix), m.get("additionalItems")),
    (_, items) => (None, items),
  }
}

fn only_null(schema: &Value) -> bool {
  match schema.get("type") {
    Some(Value::String(t)) => t == "null",
    Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "null"),
    _ => schema.get("const") == Some(&Value::Null),
  }
}

/// The types to try for a value, best first: non-null before null; when the schema does not say,
/// what its keywords imply (objects at the top), else a string (or a number for `limit`-like keys).
fn type_order(maps: &[&Schema], key: &str, top: bool) -> Vec<&'static str> {
  const ALL: [&str; 7] = ["object", "array", "string", "integer", "number", "boolean", "null"];
  let mut allowed: Option<Vec<&'static str>> = None;
  for m in maps {
    let names: Vec<&str> = match m.get("type") {
      Some(Value::String(t)) => vec![t.as_str()],
      Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
      _ => continue,
    };
    let mut here: Vec<&'static str> = ALL.iter().copied().filter(|t| names.contains(t)).collect();
    if names.contains(&"number") && !here.contains(&"integer") {
      here.push("integer");
    }
    if m.get("nullable") == Some(&Value::Bool(true)) {
      here.push("null");
    }
    allowed = Some(match allowed {
      None => here,
      Some(before) => before.into_iter().filter(|t| here.contains(t)).collect(),
    });
  }
  let has = |keys: &[&str]| maps.iter().any(|m| keys.iter().any(|k| m.contains_key(*k)));
  let mut implied: Vec<&'static str> = Vec::new();
  if top {
    implied.push("object");
  }
  if has(&["properties", "required", "additionalProperties", "patternProperties", "minProperties", "propertyNames"]) {
    implied.push("object");
  }
  if has(&["items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"]) {
    implied.push("array");
  }
  if has(&["minLength", "maxLength", "pattern", "format"]) {
    implied.push("string");
  }
  let numeric = is_limit_key(key) || is_page_key(key) || is_offset_key(key);
  if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) || numeric {
    implied.push(if numeric { "integer" } else { "number" });
  }
  implied.push("string");
  let mut order: Vec<&'static str> = Vec::new();
  match allowed {
    None => {
      for t in implied {
        if !order.contains(&t) {
          order.push(t);
        }
      }
    }
    Some(allowed) => {
      // Keyword hints first, then the schema's own order; number after integer; null last.
      for t in implied.iter().chain(allowed.iter()) {
        if allowed.contains(t) && !order.contains(t) && *t != "null" && *t != "number" {
          order.push(t);
        }
      }
      for t in ["number", "null"] {
        if allowed.contains(&t) {
          order.push(t);
        }
      }
    }
  }
  order
}

/// Numbers to try for a numeric value: a friendly one for the key, moved into the bounds and onto
/// `multipleOf`, then the bounds themselves.
fn number_candidates(maps: &[&Schema], key: &str, integer: bool, variant: usize) -> Vec<Value> {
  let (mut lo, mut lo_open, mut hi, mut hi_open) = (f64::NEG_INFINITY, false, f64::INFINITY, false);
  let mut step: Option<f64> = None;
  for m in maps {
    let draft4_min = m.get("exclusiveMinimum") == Some(&Value::Bool(true));
    let draft4_max = m.get("exclusiveMaximum") == Some(&Value::Bool(true));
    let mut lower = |x: f64, open: bool| {
      if x > lo || (x == lo && open) {
        lo = x;
        lo_open = open;
      }
    };
    if let Some(x) = m.get("minimum").and_then(Value::as_f64) {
      lower(x, draft4_min);
    }
    if let Some(x) = m.get("exclusiveMinimum").and_then(Value::as_f64) {
      lower(x, true);
    }
    let mut upper = |x: f64, open: bool| {
      if x < hi || (x == hi && open) {
        hi = x;
        hi_open = open;
      }
    };
    if let Some(x) = m.get("maximum").and_then(Value::as_f64) {
      upper(x, draft4_max);
    }
    if let Some(x) = m.get("exclusiveMaximum").and_then(Value::as_f64) {
      upper(x, true);
    }
    if let Some(x) = m.get("multipleOf").and_then(Value::as_f64).filter(|x| *x > 0.0 && x.is_finite()) {
      step.get_or_insert(x);
    }
  }
  if integer {
    lo = if lo_open { lo.floor() + 1.0 } else { lo.ceil() };
    hi = if hi_open { hi.ceil() - 1.0 } else { hi.floor() };
    lo_open = false;
    hi_open = false;
  }
  let n = norm_key(key);
  let preferred = if is_limit_key(key) {
    10.0
  } else if is_page_key(key) {
    1.0
  } else if is_offset_key(key) {
    0.0
  } else if n == "year" {
    2026.0
  } else if n == "port" {
    8080.0
  } else {
    1.0
  } + variant as f64;
  let inside = |x: f64| x.is_finite() && (x > lo || (!lo_open && x == lo)) && (x < hi || (!hi_open && x == hi));
  let mut xs: Vec<f64> = Vec::new();
  let mut x = preferred;
  if !inside(x) {
    if x < lo || (x == lo && lo_open) {
      x = if !lo_open && lo.is_finite() {
        lo
      } else if hi.is_finite() {
        lo + (hi - lo) / 2.0
      } else {
        lo + 1.0
      };
    } else {
      x = if !hi_open && hi.is_finite() {
        hi
      } else if lo.is_finite() {
        lo + (hi - lo) / 2.0
      } else {
        hi - 1.0
      };
    }
  }
  xs.push(x);
  if let Some(step) = step {
    let mut ks: Vec<f64> = Vec::new();
    for base in [x, preferred, lo, hi] {
      if base.is_finite() {
        let k = (base / step).round();
        ks.extend([k, k + 1.0, k - 1.0, (base / step).ceil(), (base / step).floor()]);
      }
    }
    if ks.is_empty() {
      ks.extend([1.0, 0.0, -1.0]);
    }
    let mut multiples: Vec<f64> = Vec::new();
    for k in ks {
      for scale in [1.0, 10.0, 100.0] {
        let v = k * scale * step;
        if inside(v) && !multiples.contains(&v) {
          multiples.push(v);
        }
      }
    }
    multiples.sort_by(|a, b| (a - preferred).abs().total_cmp(&(b - preferred).abs()));
    xs.splice(0..0, multiples);
  }
  xs.extend([lo, hi, 0.0, 1.0]);
  if !integer {
    // A number that is not an integer, for `oneOf: [{ type: integer }, { type: number }]`.
    xs.extend([x + 0.5, 1.5]);
  }
  let mut out: Vec<Value> = Vec::new();
  for x in xs {
    if !x.is_finite() || (integer && x.fract() != 0.0) {
      continue;
    }
    let v = if x.fract() == 0.0 && x.abs() < 9.0e15 {
      Value::Number(Number::from(x as i64))
    } else {
      match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None => continue,
      }
    };
    if !out.contains(&v) {
      out.push(v);
    }
  }
  out
}

fn check_number(n: &Number, m: &Schema) -> Verdict {
  let Some(x) = n.as_f64() else { return Verdict::Valid };
  let draft4_min = m.get("exclusiveMinimum") == Some(&Value::Bool(true));
  let draft4_max = m.get("exclusiveMaximum") == Some(&Value::Bool(true));
  let bad = m.get("minimum").and_then(Value::as_f64).is_some_and(|b| x < b || (draft4_min && x == b))
    || m.get("maximum").and_then(Value::as_f64).is_some_and(|b| x > b || (draft4_max && x == b))
    || m.get("exclusiveMinimum").and_then(Value::as_f64).is_some_and(|b| x <= b)
    || m.get("exclusiveMaximum").and_then(Value::as_f64).is_some_and(|b| x >= b)
    || m.get("multipleOf").and_then(Value::as_f64).filter(|d| *d > 0.0).is_some_and(|d| {
      // As ajv: `x / d` must be an integer.
      let q = x / d;
      !(q.is_finite() && q.fract() == 0.0 && q.abs() < 1e21)
    })
    || match m.get("format").and_then(Value::as_str) {
      Some("int32") => !(x.fract() == 0.0 && (-2_147_483_648.0..=2_147_483_647.0).contains(&x)),
      Some("int64") => x.fract() != 0.0,
      _ => false,
    };
  if bad {
    Verdict::Invalid
  } else {
    Verdict::Valid
  }
}

fn type_matches(value: &Value, t: &Value, nullable: bool) -> bool {
  if nullable && value.is_null() {
    return true;
  }
  match t {
    Value::String(name) => type_name_matches(value, name),
    Value::Array(names) => {
      names.is_empty() || names.iter().any(|n| n.as_str().is_none_or(|n| type_name_matches(value, n)))
    }
    _ => true,
  }
}

fn type_name_matches(value: &Value, name: &str) -> bool {
  match name {
    "null" => value.is_null(),
    "boolean" => value.is_boolean(),
    "object" => value.is_object(),
    "array" => value.is_array(),
    "string" => value.is_string(),
    "number" => value.is_number(),
    "integer" => value.as_f64().is_some_and(|x| x.is_finite() && x.fract() == 0.0),
    _ => true,
  }
}

/// JSON equality as JavaScript sees it (`1` equals `1.0`), for values at most 64 levels deep.
fn json_eq(a: &Value, b: &Value, depth: usize) -> bool {
  if depth > 64 {
    return false;
  }
  match (a, b) {
    (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().is_some_and(|x| Some(x) == y.as_f64()),
    (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y, depth + 1)),
    (Value::Object(x), Value::Object(y)) => {
      x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w, depth + 1)))
    }
    _ => a == b,
  }
}

/// About how many bytes `value` takes as JSON (stops counting past the limit).
fn literal_size(value: &Value, depth: usize) -> usize {
  if depth > 16 {
    return usize::MAX / 2;
  }
  match value {
    Value::String(s) => s.len() + 2,
    Value::Array(items) => {
      let mut n = 2;
      for item in items {
        n += literal_size(item, depth + 1) + 1;
        if n > MAX_LITERAL_BYTES {
          break;
        }
      }
      n
    }
    Value::Object(o) => {
      let mut n = 2;
      for (k, v) in o {
        n += k.len() + 4 + literal_size(v, depth + 1);
        if n > MAX_LITERAL_BYTES {
          break;
        }
      }
      n
    }
    _ => 8,
  }
}

// ---------------------------------------------------------------------------------------------
// Formats
// ---------------------------------------------------------------------------------------------

/// A value of a string `format` (`variant` > 0 gives different ones), `None` for unknown formats.
fn format_value(format: &str, variant: usize) -> Option<String> {
  let n = variant;
  Some(match format {
    "email" | "idn-email" if n == 0 => "user@example.com".to_string(),
    "email" | "idn-email" => format!("user{}@example.com", n + 1),
    "date-time" | "iso-date-time" => format!("2026-01-{:02}T09:30:00Z", 15 + n % 10),
    "date" => format!("2026-01-{:02}", 15 + n % 10),
    "time" | "iso-time" => format!("09:{:02}:00Z", 30 + n % 30),
    "uri" | "url" | "iri" | "uri-reference" | "iri-reference" if n == 0 => "https://example.com".to_string(),
    "uri" | "url" | "iri" | "uri-reference" | "iri-reference" => format!("https://example.com/{}", n + 1),
    "uri-template" => "https://example.com/{id}".to_string(),
    "uuid" => format!("3f1c2a9e-8b4d-4c6a-9e2f-{:012x}", 0x1a2b_3c4d_5e6f_u64 + n as u64),
    "hostname" | "idn-hostname" if n == 0 => "example.com".to_string(),
    "hostname" | "idn-hostname" => format!("host{}.example.com", n + 1),
    "ipv4" => format!("192.0.2.{}", 1 + n % 250),
    "ipv6" => format!("2001:db8::{:x}", 1 + n % 0xfff0),
    "duration" => format!("P{}D", 1 + n),
    "regex" => "^[a-z]+$".to_string(),
    "json-pointer" => "/example".to_string(),
    "relative-json-pointer" => "0".to_string(),
    "byte" => "ZXhhbXBsZQ==".to_string(),
    _ => return None,
  })
}

/// Whether `s` is a valid `format` string, as ajv-formats' full mode sees it; formats not
/// checked here are accepted when they are what [`format_value`] writes, and otherwise uncertain.
fn format_verdict(format: &str, s: &str) -> Verdict {
  let ok = match format {
    "email" | "idn-email" => email_ok(s),
    "hostname" | "idn-hostname" => hostname_ok(s),
    "date" => date_ok(s),
    "time" => time_ok(s, true),
    "iso-time" => time_ok(s, false),
    "date-time" | "iso-date-time" => {
      let mut parts = s.splitn(2, ['T', 't', ' ']);
      let (date, time) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
      date_ok(date) && time_ok(time, format == "date-time")
    }
    "uri" | "url" | "iri" => uri_ok(s),
    "uri-reference" | "iri-reference" => !s.chars().any(char::is_whitespace),
    "uuid" => uuid_ok(s),
    "ipv4" => ipv4_ok(s),
    "ipv6" => s.contains(':') && s.parse::<std::net::Ipv6Addr>().is_ok(),
    "duration" | "uri-template" | "regex" | "json-pointer" | "relative-json-pointer" | "byte" => {
      let known = (0..4).any(|n| format_value(format, n).as_deref() == Some(s));
      return if known { Verdict::Valid } else { Verdict::Uncertain };
    }
    _ => true,
  };
  if ok {
    Verdict::Valid
  } else {
    Verdict::Invalid
  }
}

fn digits(s: &str, n: usize) -> Option<u32> {
  (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn date_ok(s: &str) -> bool {
  let parts: Vec<&str> = s.split('-').collect();
  let [y, m, d] = parts.as_slice() else { return false };
  let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else { return false };
  let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
  let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  (1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize]
}

fn time_ok(s: &str, zone_required: bool) -> bool {
  let lower = s.to_ascii_lowercase();
  let (clock, zone) = match lower.find(['z', '+', '-']) {
    Some(i) => (&lower[..i], Some(&lower[i..])),
    None => (lower.as_str(), None),
  };
  let zone_ok = match zone {
    None => !zone_required,
    Some("z") => true,
    Some(z) if !z.is_ascii() => false,
    Some(z) => {
      let z = &z[1..];
      let (h, m) = match z.len() {
        2 => (z, "00"),
        4 => (&z[..2], &z[2..]),
        5 if z.as_bytes()[2] == b':' => (&z[..2], &z[3..]),
        _ => return false,
      };
      matches!((digits(h, 2), digits(m, 2)), (Some(h), Some(m)) if h <= 23 && m <= 59)
    }
  };
  let (clock, fraction) = match clock.split_once('.') {
    Some((c, f)) => (c, Some(f)),
    None => (clock, None),
  };
  if fraction.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
    return false;
  }
  let parts: Vec<&str> = clock.split(':').collect();
  let [h, m, sec] = parts.as_slice() else { return false };
  match (digits(h, 2), digits(m, 2), digits(sec, 2)) {
    (Some(h), Some(m), Some(sec)) => zone_ok && h <= 23 && m <= 59 && (sec <= 59 || (sec == 60 && m == 59)),
    _ => false,
  }
}

fn label_ok(label: &str) -> bool {
  let b = label.as_bytes();
  !b.is_empty()
    && b.len() <= 63
    && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    && b[0] != b'-'
    && b[b.len() - 1] != b'-'
}

fn hostname_ok(s: &str) -> bool {
  let s = s.strip_suffix('.').unwrap_or(s);
  !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok)
}

fn email_ok(s: &str) -> bool {
  let Some((local, domain)) = s.rsplit_once('@') else { return false };
  let atom =
    |a: &str| !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c));
  let labels: Vec<&str> = domain.split('.').collect();
  local.split('.').all(atom) && labels.len() >= 2 && labels.iter().all(|l| label_ok(l))
}

fn uri_ok(s: &str) -> bool {
  let Some((scheme, rest)) = s.split_once(':') else { return false };
  let mut chars = scheme.chars();
  chars.next().is_some_and(|c| c.is_ascii_alphabetic())
    && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    && !rest.chars().any(|c| c.is_whitespace() || "<>\"{}|\\^`".contains(c))
}

fn uuid_ok(s: &str) -> bool {
  let s = s.strip_prefix("urn:uuid:").unwrap_or(s);
  let groups: Vec<&str> = s.split('-').collect();
  groups.len() == 5
    && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn ipv4_ok(s: &str) -> bool {
  let parts: Vec<&str> = s.split('.').collect();
  parts.len() == 4
    && parts.iter().all(|p| {
      !p.is_empty()
        && p.len() <= 3
        && p.bytes().all(|b| b.is_ascii_digit())
        && (p.len() == 1 || !p.starts_with('0'))
        && p.parse::<u32>().is_ok_and(|n| n <= 255)
    })
}

// ---------------------------------------------------------------------------------------------
// A small regular-expression engine (ECMAScript syntax, `u` flag, no backreferences/lookbehind)
// ---------------------------------------------------------------------------------------------

/// Patterns longer than this many characters are not read.
const RE_MAX_LEN: usize = 1000;
/// Groups nest at most this deep.
const RE_MAX_NEST: usize = 16;
/// Counted repetitions above this are read as unbounded (matched text is shorter anyway).
const RE_MAX_COUNT: u32 = 256;
/// Texts longer than this many characters are not matched.
const RE_MAX_TEXT: usize = 200;
/// Matching steps, and nested matcher frames, per search.
const RE_MAX_STEPS: usize = 50_000;
const RE_MAX_FRAMES: usize = 800;

#[derive(Debug)]
enum Re {
  Empty,
  Char(char),
  /// Inclusive code point ranges; `true` when negated.
  Set(Vec<(u32, u32)>, bool),
  Start,
  End,
  /// `\b` (true) or `\B`.
  Boundary(bool),
  /// Lookahead; `true` when negative.
  Look(Box<Re>, bool),
  Cat(Vec<Re>),
  Alt(Vec<Re>),
  /// `(node, min, max, greedy)`
  Rep(Box<Re>, u32, Option<u32>, bool),
}

enum Escape {
  Char(char),
  Set(Vec<(u32, u32)>, bool),
  Boundary(bool),
}

const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)];
const SPACE: &[(u32, u32)] = &[
  (0x09, 0x0d),
  (0x20, 0x20),
  (0xa0, 0xa0),
  (0x1680, 0x1680),
  (0x2000, 0x200a),
  (0x2028, 0x2029),
  (0x202f, 0x202f),
  (0x205f, 0x205f),
  (0x3000, 0x3000),
  (0xfeff, 0xfeff),
];
const LINE_TERMINATORS: &[(u32, u32)] = &[(0x0a, 0x0a), (0x0d, 0x0d), (0x2028, 0x2029)];

fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
  let mut sorted = ranges.to_vec();
  sorted.sort_unstable();
  let mut out = Vec::new();
  let mut next = 0u32;
  for (lo, hi) in sorted {
    if lo > next {
      out.push((next, lo - 1));
    }
    next = next.max(hi.saturating_add(1));
  }
  if next <= 0x10ffff {
    out.push((next, 0x10ffff));
  }
  out
}

fn parse_regex(src: &str) -> Option<Re> {
  let chars: Vec<char> = src.chars().take(RE_MAX_LEN + 1).collect();
  if chars.len() > RE_MAX_LEN {
    return None;
  }
  let mut parser = ReParser { s: chars, i: 0, depth: 0 };
  let re = parser.alternation()?;
  (parser.i == parser.s.len()).then_some(re)
}

struct ReParser {
  s: Vec<char>,
  i: usize,
  depth: usize,
}

impl ReParser {
  fn peek(&self) -> Option<char> {
    self.s.get(self.i).copied()
  }

  fn eat(&mut self, c: char) -> bool {
    if self.peek() == Some(c) {
      self.i += 1;
      true
    } else {
      false
    }
  }

  fn next(&mut self) -> Option<char> {
    let c = self.peek()?;
    self.i += 1;
    Some(c)
  }

  fn alternation(&mut self) -> Option<Re> {
    self.depth += 1;
    if self.depth > RE_MAX_NEST {
      return None;
    }
    let mut alts = vec![self.sequence()?];
    while self.eat('|') {
      alts.push(self.sequence()?);
    }
    self.depth -= 1;
    Some(if alts.len() == 1 { alts.pop()? } else { Re::Alt(alts) })
  }

  fn sequence(&mut self) -> Option<Re> {
    let mut items = Vec::new();
    while let Some(c) = self.peek() {
      if c == '|' || c == ')' {
        break;
      }
      let atom = self.atom()?;
      items.push(self.quantified(atom)?);
    }
    Some(match items.len() {
      0 => Re::Empty,
      1 => items.pop()?,
      _ => Re::Cat(items),
    })
  }

  fn atom(&mut self) -> Option<Re> {
    Some(match self.next()? {
      '^' => Re::Start,
      '$' => Re::End,
      '.' => Re::Set(LINE_TERMINATORS.to_vec(), true),
      '(' => {
        let mut look = None;
        if self.eat('?') {
          if self.eat('=') {
            look = Some(false);
          } else if self.eat('!') {
            look = Some(true);
          } else if self.eat('<') {
            // A named group; lookbehinds are not read.
            loop {
              match self.next()? {
                '>' => break,
                c if c.is_alphanumeric() || c == '_' || c == '$' => {}
                _ => return None,
              }
            }
          } else if !self.eat(':') {
            return None;
          }
        }
        let inner = self.alternation()?;
        if !self.eat(')') {
          return None;
        }
        match look {
          Some(negative) => Re::Look(Box::new(inner), negative),
          None => inner,
        }
      }
      '[' => self.class()?,
      '\\' => match self.escape(false)? {
        Escape::Char(c) => Re::Char(c),
        Escape::Set(ranges, negated) => Re::Set(ranges, negated),
        Escape::Boundary(b) => Re::Boundary(b),
      },
      '*' | '+' | '?' | '{' | '}' | ']' | ')' => return None,
      c => Re::Char(c),
    })
  }

  fn hex(&mut self, n: usize) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..n {
      v = v * 16 + self.next()?.to_digit(16)?;
    }
    Some(v)
  }

  fn escape(&mut self, in_class: bool) -> Option<Escape> {
    let c = self.next()?;
    let ch = |c: char| Some(Escape::Char(c));
    match c {
      'd' => Some(Escape::Set(DIGIT.to_vec(), false)),
      'D' => Some(Escape::Set(DIGIT.to_vec(), true)),
      'w' => Some(Escape::Set(WORD.to_vec(), false)),
      'W' => Some(Escape::Set(WORD.to_vec(), true)),
      's' => Some(Escape::Set(SPACE.to_vec(), false)),
      'S' => Some(Escape::Set(SPACE.to_vec(), true)),
      'b' if in_class => ch('\u{8}'),
      'b' => Some(Escape::Boundary(true)),
      'B' if !in_class => Some(Escape::Boundary(false)),
      't' => ch('\t'),
      'n' => ch('\n'),
      'r' => ch('\r'),
      'f' => ch('\u{c}'),
      'v' => ch('\u{b}'),
      '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => ch('\0'),
      'x' => char::from_u32(self.hex(2)?).map(Escape::Char),
      'u' => {
        let code = if self.eat('{') {
          let mut v = 0u32;
          let mut n = 0;
          while !self.eat('}') {
            v = v.checked_mul(16)?.checked_add(self.next()?.to_digit(16)?)?;
            n += 1;
            if n > 6 {
              return None;
            }
          }
          v
        } else {
          self.hex(4)?
        };
        char::from_u32(code).map(Escape::Char)
      }
      'c' => {
        let letter = self.next().filter(char::is_ascii_alphabetic)?;
        char::from_u32(letter as u32 % 32).map(Escape::Char)
      }
      '-' if in_class => ch('-'),
      c if c.is_ascii_alphanumeric() => None,
      c if "^$\\.*+?()[]{}|/".contains(c) => ch(c),
      _ => None,
    }
  }

  fn class(&mut self) -> Option<Re> {
    let negated = self.eat('^');
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    loop {
      let c = self.next()?;
      if c == ']' {
        break;
      }
      let first = if c == '\\' { self.escape(true)? } else { Escape::Char(c) };
      match first {
        Escape::Char(lo) => {
          if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|n| *n != ']') {
            self.i += 1;
            let c = self.next()?;
            let hi = if c == '\\' { self.escape(true)? } else { Escape::Char(c) };
            match hi {
              Escape::Char(hi) if hi >= lo => ranges.push((lo as u32, hi as u32)),
              _ => return None,
            }
          } else {
            ranges.push((lo as u32, lo as u32));
          }
        }
        Escape::Set(set, false) => ranges.extend(set),
        Escape::Set(set, true) => ranges.extend(complement(&set)),
        Escape::Boundary(_) => return None,
      }
    }
    Some(Re::Set(ranges, negated))
  }

  fn quantified(&mut self, atom: Re) -> Option<Re> {
    let (min, max) = match self.peek() {
      Some('*') => (0, None),
      Some('+') => (1, None),
      Some('?') => (0, Some(1)),
      Some('{') => {
        let start = self.i;
        self.i += 1;
        let number = |p: &mut Self| -> Option<u32> {
          let mut v: Option<u32> = None;
          while let Some(d) = p.peek().and_then(|c| c.to_digit(10)) {
            p.i += 1;
            v = Some(v.unwrap_or(0).saturating_mul(10).saturating_add(d));
          }
          v
        };
        let min = number(self)?;
        let max = if self.eat(',') { number(self) } else { Some(min) };
        if !self.eat('}') || max.is_some_and(|m| m < min) {
          self.i = start;
          return None;
        }
        self.i -= 1;
        (min, max)
      }
      _ => return Some(atom),
    };
    self.i += 1;
    if matches!(atom, Re::Start | Re::End | Re::Boundary(_) | Re::Look(..)) || min > RE_MAX_COUNT {
      return None;
    }
    let max = max.filter(|m| *m <= RE_MAX_COUNT);
    let greedy = !self.eat('?');
    Some(Re::Rep(Box::new(atom), min, max, greedy))
  }
}

fn set_contains(ranges: &[(u32, u32)], negated: bool, c: char) -> bool {
  ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&(c as u32))) != negated
}

/// Whether `re` matches somewhere in `text` (as `RegExp.prototype.test`), in at most `budget`
/// steps (and [`RE_MAX_STEPS`]); `None` when the text is too long or the steps run out. Also
/// returns the steps taken.
fn regex_search(re: &Re, text: &str, budget: usize) -> (Option<bool>, usize) {
  let chars: Vec<char> = text.chars().take(RE_MAX_TEXT + 1).collect();
  if chars.len() > RE_MAX_TEXT {
    return (None, 1);
  }
  let limit = budget.min(RE_MAX_STEPS);
  let matcher = Matcher { text: &chars, steps: Cell::new(0), limit, frames: Cell::new(0), blown: Cell::new(false) };
  let mut found = Some(false);
  for start in 0..=chars.len() {
    if matcher.run(re, start, &mut |_| true) {
      found = Some(true);
      break;
    }
    if matcher.blown.get() {
      break;
    }
  }
  let found = if matcher.blown.get() { None } else { found };
  (found, matcher.steps.get().max(1))
}

struct Matcher<'t> {
  text: &'t [char],
  steps: Cell<usize>,
  limit: usize,
  frames: Cell<usize>,
  blown: Cell<bool>,
}

impl Matcher<'_> {
  /// Backtracking match of `re` at `pos`, then the continuation `k` with the end position.
  fn run(&self, re: &Re, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    if self.blown.get() {
      return false;
    }
    let steps = self.steps.get() + 1;
    let frames = self.frames.get() + 1;
    if steps > self.limit || frames > RE_MAX_FRAMES {
      self.blown.set(true);
      return false;
    }
    self.steps.set(steps);
    self.frames.set(frames);
    let matched = self.step(re, pos, k);
    self.frames.set(frames - 1);
    matched
  }

  fn step(&self, re: &Re, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let text = self.text;
    match re {
      Re::Empty => k(pos),
      Re::Char(c) => text.get(pos) == Some(c) && k(pos + 1),
      Re::Set(ranges, negated) => text.get(pos).is_some_and(|c| set_contains(ranges, *negated, *c)) && k(pos + 1),
      Re::Start => pos == 0 && k(pos),
      Re::End => pos == text.len() && k(pos),
      Re::Boundary(want) => {
        let word =
          |i: Option<usize>| i.and_then(|i| text.get(i)).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_');
        let at = word(pos.checked_sub(1)) != word(Some(pos));
        at == *want && k(pos)
      }
      Re::Look(inner, negative) => {
        let found = self.run(inner, pos, &mut |_| true);
        found != *negative && k(pos)
      }
      Re::Cat(items) => self.sequence(items, pos, k),
      Re::Alt(alts) => alts.iter().any(|alt| self.run(alt, pos, &mut *k)),
      Re::Rep(inner, min, max, greedy) => self.repeat(inner, *min, *max, *greedy, 0, pos, k),
    }
  }

  fn sequence(&self, items: &[Re], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match items.split_first() {
      None => k(pos),
      Some((first, rest)) => self.run(first, pos, &mut |p| self.sequence(rest, p, &mut *k)),
    }
  }

  #[allow(clippy::too_many_arguments)]
  fn repeat(
    &self,
    inner: &Re,
    min: u32,
    max: Option<u32>,
    greedy: bool,
    count: u32,
    pos: usize,
    k: &mut dyn FnMut(usize) -> bool,
  ) -> bool {
    if self.blown.get() {
      return false;
    }
    let can_stop = count >= min;
    let can_go = max.is_none_or(|m| count < m);
    let more = |k: &mut dyn FnMut(usize) -> bool| {
      can_go
        && self.run(inner, pos, &mut |p| {
          // An empty iteration past the minimum ends the loop (as in ECMAScript).
          (p != pos || count < min) && self.repeat(inner, min, max, greedy, count + 1, p, &mut *k)
        })
    };
    // Greedy: one more iteration first, then stop; lazy: the other way round.
    let first_more = greedy;
    if first_more && more(&mut *k) {
      return true;
    }
    if can_stop && k(pos) {
      return true;
    }
    !first_more && more(&mut *k)
  }
}

/// Appends a string matching `re` (lookarounds aside): the fewest repetitions plus `extra`, the
/// `alt`-th alternative (modulo), friendly characters from classes. `steps` bounds the work.
fn sample(re: &Re, extra: usize, alt: usize, out: &mut String, steps: &mut usize) {
  if *steps == 0 || out.len() > 600 {
    return;
  }
  *steps -= 1;
  match re {
    Re::Char(c) => out.push(*c),
    Re::Set(ranges, negated) => out.extend(pick_char(ranges, *negated)),
    Re::Cat(items) => {
      for item in items {
        sample(item, extra, alt, out, steps);
      }
    }
    Re::Alt(alts) => {
      if let Some(a) = alts.get(alt % alts.len().max(1)) {
        sample(a, extra, alt, out, steps);
      }
    }
    Re::Rep(inner, min, max, _) => {
      let want = (*min as usize).saturating_add(extra);
      let count = max.map_or(want, |m| want.min(m as usize)).max(*min as usize);
      for _ in 0..count {
        if *steps == 0 || out.len() > 600 {
          break;
        }
        sample(inner, extra, alt, out, steps);
      }
    }
    Re::Empty | Re::Start | Re::End | Re::Boundary(_) | Re::Look(..) => {}
  }
}

fn pick_char(ranges: &[(u32, u32)], negated: bool) -> Option<char> {
  const FRIENDLY: &str = "a1Ax0_-. ";
  if let Some(c) = FRIENDLY.chars().find(|c| set_contains(ranges, negated, *c)) {
    return Some(c);
  }
  if negated {
    (0x21..0x7f).filter_map(char::from_u32).find(|c| set_contains(ranges, true, *c))
  } else {
    ranges.iter().find_map(|(lo, hi)| (*lo..=*hi).take(64).find_map(char::from_u32))
  }
}

#[cfg(test)]
mod tests {
  #![allow(clippy::unwrap_used, clippy::expect_used)]
  use super::*;
  use serde_json::json;

  fn examples(name: &str, description: Option<&str>, schema: Value) -> Vec<UsageExample> {
    usage_examples(name, description, Some(&schema), &[], 5)
  }

  /// The input of the first generated example for a one-property schema `{ x: <prop> }`, required.
  fn value_for(prop: Value) -> Value {
    let schema = json!({ "type": "object", "properties": { "x": prop }, "required": ["x"] });
    let ex = examples("t:run", None, schema.clone());
    assert!(!ex.is_empty(), "no example for {schema}");
    let input = ex[0].input.clone();
    assert_valid(&schema, &input);
    input["x"].clone()
  }

  fn assert_valid(schema: &Value, input: &Value) {
    let info = ToolInfo::new("t:run", None);
    let mut engine = Engine::new(schema, &info);
    assert_eq!(engine.check(input, schema, 0), Verdict::Valid, "{input} against {schema}");
  }

  fn verdict(schema: &Value, value: &Value) -> Verdict {
    let info = ToolInfo::new("t:run", None);
    let mut engine = Engine::new(schema, &info);
    engine.check(value, schema, 0)
  }

  fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
  }

  /// serde_json drops nested values recursively; take deep test values apart with a heap stack.
  fn drop_iteratively(value: Value) {
    let mut stack = vec![value];
    while let Some(mut v) = stack.pop() {
      match &mut v {
        Value::Array(items) => stack.extend(std::mem::take(items)),
        Value::Object(map) => {
          let keys: Vec<String> = map.keys().cloned().collect();
          for k in keys {
            if let Some(child) = map.remove(&k) {
              stack.push(child);
            }
          }
        }
        _ => {}
      }
    }
  }

  fn has_loop(code: &str) -> bool {
    split_words(code).iter().any(|w| w == "for" || w == "while" || w == "do")
  }

  #[test]
  fn spec_example() {
    let schema = json!({ "type": "object", "properties": { "limit": { "type": "integer" } } });
    let ex = examples("users:list", Some("List users with pagination."), schema);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0].description, "List users");
    assert_eq!(ex[0].code, "const page = await callTool('users:list', { limit: 10 });\nreturn page;");
    assert_eq!(ex[0].input, json!({ "limit": 10 }));
  }

  #[test]
  fn intent_detection() {
    let cases = [
      ("users:list", Intent::List),
      ("github:list_issues", Intent::List),
      ("getAllUsers", Intent::List),
      ("users:get", Intent::Get),
      ("jira.getIssue", Intent::Get),
      ("fetch-page", Intent::Get),
      ("tickets:search", Intent::Search),
      ("findRepositories", Intent::Search),
      ("create_or_update_file", Intent::Create),
      ("addComment", Intent::Create),
      ("users:update", Intent::Update),
      ("setStatus", Intent::Update),
      ("users:delete", Intent::Delete),
      ("removeLabel", Intent::Delete),
      ("search:run", Intent::Search),
      ("send_message", Intent::Generic),
    ];
    for (name, intent) in cases {
      assert_eq!(detect_intent(name, None), intent, "{name}");
    }
    assert_eq!(detect_intent("tickets:run", Some("Searches tickets by text")), Intent::Search);
    assert_eq!(detect_intent("x:go", Some("Use this to list all the projects")), Intent::List);
    assert_eq!(detect_intent("x:go", Some("Retrieves one project")), Intent::Get);
    assert_eq!(detect_intent("x:go", Some("Creates a project")), Intent::Create);
    assert_eq!(detect_intent("x:go", Some("Modifies a project")), Intent::Update);
    assert_eq!(detect_intent("x:go", Some("Removing stuff")), Intent::Delete);
    assert_eq!(detect_intent("x:go", Some("Does a thing")), Intent::Generic);
    assert_eq!(split_words("getHTTPServer_v2.list-all:Items"), ["get", "http", "server", "v2", "list", "all", "items"]);
  }

  #[test]
  fn descriptions_by_intent() {
    let obj = |props: Value, req: Value| json!({ "type": "object", "properties": props, "required": req });
    let ex = examples(
      "users:list",
      None,
      obj(json!({ "limit": { "type": "integer" }, "role": { "type": "string" } }), json!([])),
    );
    assert_eq!(
      ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(),
      ["List users", "List users, with options"]
    );
    assert_eq!(ex[1].input, json!({ "limit": 10, "role": "example" }));
    let ex = examples("users:get", None, obj(json!({ "id": { "type": "string" } }), json!(["id"])));
    assert_eq!(ex[0].description, "Get one user by id");
    assert_eq!(ex[0].input, json!({ "id": "user_123" }));
    assert_eq!(ex[0].code, "const item = await callTool('users:get', { id: 'user_123' });\nreturn item;");
    let ex = examples(
      "tickets:search",
      None,
      obj(json!({ "query": { "type": "string" }, "limit": { "type": "integer" } }), json!([])),
    );
    assert_eq!(ex[0].description, "Search tickets by text");
    assert_eq!(ex[0].input, json!({ "query": "ticket", "limit": 10 }));
    assert_eq!(ex.len(), 1, "no other optional properties: no options example");
    let ex = examples(
      "users:create",
      None,
      obj(json!({ "email": { "type": "string", "format": "email" } }), json!(["email"])),
    );
    assert_eq!(ex[0].description, "Create a user");
    assert_eq!(ex[0].input, json!({ "email": "user@example.com" }));
    let ex = examples("github:create_or_update_file", None, obj(json!({}), json!([])));
    assert_eq!(ex[0].description, "Create a file");
    let ex = examples(
      "issues:update",
      None,
      obj(json!({ "issueId": { "type": "string" }, "title": { "type": "string" } }), json!([])),
    );
    assert_eq!(ex[0].description, "Update an issue");
    assert_eq!(ex[0].input, json!({ "issueId": "issue_123", "title": "Example title" }));
    let ex = examples("x:delete_label", None, obj(json!({ "label_id": { "type": "integer" } }), json!(["label_id"])));
    assert_eq!(ex[0].description, "Delete a label");
    let ex = examples("slack:send_message", None, obj(json!({ "channel": { "type": "string" } }), json!(["channel"])));
    assert_eq!(ex[0].description, "Send message");
    assert_eq!(
      ex[0].code,
      "const result = await callTool('slack:send_message', { channel: 'example' });\nreturn result;"
    );
    let ex = examples(
      "slack:slack_send_message",
      Some("Posts a message to a channel.\nMore text."),
      obj(json!({}), json!([])),
    );
    assert_eq!(ex[0].description, "Posts a message to a channel");
    let ex = examples("linear:linear_archiveTeam", Some(&"x".repeat(90)), obj(json!({}), json!([])));
    assert_eq!(ex[0].description, "Archive team");
    let ex = examples(
      "gitlab:get_file_blame",
      None,
      obj(json!({ "project_id": { "type": "string" } }), json!(["project_id"])),
    );
    assert_eq!(ex[0].description, "Get a file blame");
    let ex = examples("x:get_user", None, obj(json!({ "user_id": { "type": "string" } }), json!(["user_id"])));
    assert_eq!(ex[0].description, "Get one user by user_id");
  }

  #[test]
  fn no_schema_and_junk_names() {
    let ex = usage_examples("a'b\\c\n", None, None, &[], 5);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0].code, "const result = await callTool('a\\'b\\\\c\\n', {});\nreturn result;");
    assert_eq!(ex[0].description, "A b c");
    assert!(usage_examples("x", None, None, &[], 0).is_empty());
    let long = "n".repeat(5000);
    assert!(usage_examples(&long, None, None, &[], 5).is_empty(), "code would pass MAX_CODE_BYTES");
  }

  #[test]
  fn user_examples_first_and_max() {
    let schema =
      json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "q": { "type": "string" } } });
    let users = vec![
      json!({ "description": "First page", "input": { "limit": 5 }, "output": { "items": [], "note": "a\u{2028}b\nc" } }),
      json!({ "input": { "q": "x" } }),
      json!({ "description": 42, "input": { "limit": 1 } }),
      json!("not an object"),
      json!({ "description": "No input" }),
      json!({ "nothing": true }),
    ];
    let ex = usage_examples("users:list", None, Some(&schema), &users, 5);
    let descriptions: Vec<&str> = ex.iter().map(|e| e.description.as_str()).collect();
    assert_eq!(descriptions, ["First page", "Example", "Example", "No input", "List users"]);
    assert_eq!(
      ex[0].code,
      "const result = await callTool('users:list', { limit: 5 });\n// Example result: {\"items\":[],\"note\":\"a\\u2028b\\nc\"}\nreturn result;"
    );
    assert_eq!(ex[3].input, json!({}));
    for max in 0..7 {
      assert!(usage_examples("users:list", None, Some(&schema), &users, max).len() <= max);
    }
    assert_eq!(usage_examples("users:list", None, Some(&schema), &users, 2).len(), 2);
    // Required input: an entry without one is skipped.
    let strict = json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] });
    let ex = usage_examples("users:get", None, Some(&strict), &[json!({ "description": "No input" })], 5);
    assert_eq!(ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(), ["Get one user by id"]);
  }

  #[test]
  fn generated_never_duplicates() {
    let schema = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "role": { "enum": ["admin", "member"] } } });
    let users = vec![json!({ "description": "Mine", "input": { "limit": 10 } })];
    let ex = usage_examples("users:list", None, Some(&schema), &users, 5);
    assert_eq!(ex.iter().map(|e| e.description.as_str()).collect::<Vec<_>>(), ["Mine", "List users, with options"]);
    assert_eq!(ex[1].input, json!({ "limit": 10, "role": "admin" }));
    for e in &ex {
      assert!(!has_loop(&e.code));
    }
  }

  #[test]
  fn types_enum_const_default_examples() {
    assert_eq!(value_for(json!({ "type": ["null", "string"] })), json!("example"));
    assert_eq!(value_for(json!({ "type": ["null", "integer"] })), json!(1));
    assert_eq!(value_for(json!({ "type": "null" })), json!(null));
    assert_eq!(value_for(json!({ "type": "boolean" })), json!(true));
    assert_eq!(value_for(json!({ "type": "string", "nullable": true })), json!("example"));
    assert_eq!(value_for(json!({ "enum": ["b", "a"] })), json!("b"));
    assert_eq!(value_for(json!({ "type": "string", "enum": [1, "z"] })), json!("z"));
    assert_eq!(value_for(json!({ "const": { "k": [1] } })), json!({ "k": [1] }));
    assert_eq!(value_for(json!({ "type": "integer", "default": 7 })), json!(7));
    assert_eq!(value_for(json!({ "type": "string", "examples": ["ex"], "default": "d" })), json!("ex"));
    assert_eq!(value_for(json!({ "type": "string", "default": 5 })), json!("example"));
    assert_eq!(value_for(json!({ "type": "string", "default": "" })), json!("example"));
    assert_eq!(value_for(json!({ "type": "string", "maxLength": 0, "default": "" })), json!(""));
    assert_eq!(value_for(json!({})), json!("example"));
    assert_eq!(value_for(json!(true)), json!("example"));
  }

  #[test]
  fn formats() {
    let cases = [
      ("email", "user@example.com"),
      ("date-time", "2026-01-15T09:30:00Z"),
      ("date", "2026-01-15"),
      ("time", "09:30:00Z"),
      ("uri", "https://example.com"),
      ("url", "https://example.com"),
      ("uuid", "3f1c2a9e-8b4d-4c6a-9e2f-1a2b3c4d5e6f"),
      ("hostname", "example.com"),
      ("ipv4", "192.0.2.1"),
      ("ipv6", "2001:db8::1"),
    ];
    for (format, expected) in cases {
      assert_eq!(value_for(json!({ "type": "string", "format": format })), json!(expected), "{format}");
      assert_eq!(format_verdict(format, expected), Verdict::Valid);
    }
    assert_eq!(format_verdict("email", "nope"), Verdict::Invalid);
    assert_eq!(format_verdict("date", "2026-02-30"), Verdict::Invalid);
    assert_eq!(format_verdict("date-time", "2026-01-15T09:30:00"), Verdict::Invalid);
    assert_eq!(format_verdict("uuid", "3f1c2a9e-8b4d-4c6a-9e2f"), Verdict::Invalid);
    assert_eq!(format_verdict("ipv4", "192.168.01.1"), Verdict::Invalid);
    assert_eq!(format_verdict("hostname", "-bad.com"), Verdict::Invalid);
    assert_eq!(format_verdict("frobnicate", "anything"), Verdict::Valid);
    // A v4 uuid.
    let uuid = format_value("uuid", 0).unwrap();
    assert_eq!(&uuid[14..15], "4");
    assert!("89ab".contains(&uuid[19..20]));
    // Name-aware strings.
    let by_key = |key: &str| {
      let schema = json!({ "type": "object", "properties": { key: { "type": "string" } }, "required": [key] });
      examples("docs:search_pages", None, schema)[0].input[key].clone()
    };
    assert_eq!(by_key("email"), json!("user@example.com"));
    assert_eq!(by_key("userId"), json!("user_123"));
    assert_eq!(by_key("id"), json!("page_123"));
    assert_eq!(by_key("query"), json!("page"));
    assert_eq!(by_key("q"), json!("page"));
    assert_eq!(by_key("name"), json!("Example"));
    assert_eq!(by_key("homepageUrl"), json!("https://example.com"));
    assert_eq!(by_key("createdAt"), json!("2026-01-15T09:30:00Z"));
  }

  #[test]
  fn numbers() {
    assert_eq!(value_for(json!({ "type": "integer", "minimum": 5 })), json!(5));
    assert_eq!(value_for(json!({ "type": "integer", "maximum": -3 })), json!(-3));
    assert_eq!(value_for(json!({ "type": "integer", "exclusiveMinimum": 1 })), json!(2));
    assert_eq!(value_for(json!({ "type": "integer", "exclusiveMaximum": 1 })), json!(0));
    assert_eq!(value_for(json!({ "type": "number", "exclusiveMinimum": 1 })), json!(2));
    assert_eq!(value_for(json!({ "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 })), json!(0.5));
    assert_eq!(value_for(json!({ "type": "number", "minimum": 0.25, "maximum": 0.75 })), json!(0.75));
    assert_eq!(value_for(json!({ "type": "integer", "multipleOf": 7 })), json!(0));
    assert_eq!(value_for(json!({ "type": "integer", "multipleOf": 7, "minimum": 1 })), json!(7));
    assert_eq!(value_for(json!({ "type": "integer", "minimum": 1, "exclusiveMinimum": true })), json!(2));
    let x = value_for(json!({ "type": "number", "multipleOf": 0.01, "minimum": 0.5, "maximum": 0.6 }));
    assert!(x.as_f64().unwrap() >= 0.5 && x.as_f64().unwrap() <= 0.6);
    let limit =
      json!({ "type": "object", "properties": { "limit": { "type": "integer", "minimum": 1, "maximum": 5 } } });
    assert_eq!(examples("x:list", None, limit)[0].input, json!({ "limit": 5 }));
    let limit = json!({ "type": "object", "properties": { "per_page": { "type": "number", "maximum": 100 } } });
    assert_eq!(examples("x:list", None, limit)[0].input, json!({ "per_page": 10 }));
    // Unsatisfiable bounds: no generated example.
    let bad = json!({ "type": "object", "properties": { "n": { "type": "integer", "minimum": 3, "maximum": 2 } }, "required": ["n"] });
    assert!(examples("x:run", None, bad).is_empty());
  }

  #[test]
  fn strings_lengths_and_patterns() {
    assert_eq!(value_for(json!({ "type": "string", "minLength": 10 })), json!("examplexxx"));
    assert_eq!(value_for(json!({ "type": "string", "maxLength": 3 })), json!("exa"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^\\d+px$" })), json!("1px"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^[A-Z]{3}-\\d{2}$" })), json!("AAA-11"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^(today|tomorrow|\\d{4})$" })), json!("today"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^[a-z]+$", "examples": ["hello"] })), json!("hello"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^[a-z]+$", "default": "NOPE" })), json!("example"));
    assert_eq!(
      value_for(json!({ "type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://" })),
      json!("https://example.com")
    );
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^#[0-9A-Fa-f]{6}$" })), json!("#aaaaaa"));
    assert_eq!(value_for(json!({ "type": "string", "pattern": "^(?!.*bad).*$" })), json!("example"));
    // A pattern the engine cannot read: omitted when optional, best effort when required.
    let schema = json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "(x)\\1" }, "b": { "type": "string" } }, "required": ["b"] });
    let ex = examples("x:run", None, schema);
    assert!(ex.iter().all(|e| e.input.get("a").is_none()));
    let schema = json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "(x)\\1", "examples": ["xx"] } }, "required": ["a"] });
    assert_eq!(examples("x:run", None, schema)[0].input, json!({ "a": "xx" }));
  }

  #[test]
  fn arrays() {
    assert_eq!(value_for(json!({ "type": "array", "items": { "type": "string" } })), json!(["example"]));
    assert_eq!(value_for(json!({ "type": "array", "maxItems": 0 })), json!([]));
    assert_eq!(
      value_for(json!({ "type": "array", "items": { "type": "integer" }, "minItems": 3, "uniqueItems": true })),
      json!([1, 2, 3])
    );
    assert_eq!(
      value_for(json!({ "type": "array", "items": { "enum": ["a", "b"] }, "minItems": 2, "uniqueItems": true })),
      json!(["a", "b"])
    );
    assert_eq!(
      value_for(
        json!({ "type": "array", "items": { "type": "string", "format": "email" }, "minItems": 2, "uniqueItems": true })
      ),
      json!(["user@example.com", "user2@example.com"])
    );
    assert_eq!(
      value_for(
        json!({ "type": "array", "prefixItems": [{ "type": "integer" }, { "type": "boolean" }], "minItems": 2 })
      ),
      json!([1, true])
    );
    assert_eq!(
      value_for(json!({ "type": "array", "items": [{ "const": "a" }], "additionalItems": false, "minItems": 1 })),
      json!(["a"])
    );
    assert_eq!(
      value_for(json!({ "type": "array", "items": { "type": "integer" }, "contains": { "minimum": 5 } })),
      json!([5])
    );
    let ids = json!({ "type": "object", "properties": { "userIds": { "type": "array", "items": { "type": "string" } } }, "required": ["userIds"] });
    assert_eq!(examples("x:run", None, ids)[0].input, json!({ "userIds": ["user_123"] }));
    // Impossible: three distinct booleans.
    let bad = json!({ "type": "object", "properties": { "a": { "type": "array", "items": { "type": "boolean" }, "minItems": 3, "uniqueItems": true } }, "required": ["a"] });
    assert!(examples("x:run", None, bad).is_empty());
  }

  #[test]
  fn objects_refs_and_combinators() {
    let nested = json!({
      "type": "object", "required": ["user"],
      "properties": { "user": { "type": "object", "required": ["name", "address"], "additionalProperties": false,
        "properties": { "name": { "type": "string" }, "nick": { "type": "string" },
          "address": { "$ref": "#/$defs/address" } } } },
      "$defs": { "address": { "type": "object", "required": ["city"], "properties": { "city": { "type": "string" } } } }
    });
    assert_eq!(
      examples("x:run", None, nested)[0].input,
      json!({ "user": { "name": "Example", "address": { "city": "example" } } })
    );
    let defs = json!({ "type": "object", "properties": { "x": { "$ref": "#/definitions/n" } }, "required": ["x"], "definitions": { "n": { "type": "integer", "minimum": 4 } } });
    assert_eq!(examples("x:run", None, defs)[0].input, json!({ "x": 4 }));
    assert_eq!(value_for(json!({ "anyOf": [{ "type": "null" }, { "type": "integer", "minimum": 3 }] })), json!(3));
    // oneOf: the first branch's value would match both branches, so the second is used.
    let one = json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] });
    assert_eq!(value_for(one), json!(1.5));
    let one = json!({ "oneOf": [{ "type": "string", "maxLength": 3 }, { "type": "string", "minLength": 5 }] });
    assert_eq!(value_for(one), json!("exa"));
    let all = json!({ "allOf": [{ "type": "string" }, { "minLength": 9 }, { "maxLength": 9 }] });
    assert_eq!(value_for(all), json!("examplexx"));
    let all = json!({ "allOf": [{ "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] },
      { "properties": { "b": { "type": "integer" } }, "required": ["b"] }] });
    assert_eq!(value_for(all), json!({ "a": "example", "b": 1 }));
    // additionalProperties: false never gets extra keys; minProperties; dependentRequired.
    let closed = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": false, "minProperties": 1 });
    assert_eq!(value_for(closed), json!({ "a": "example" }));
    let open = json!({ "type": "object", "minProperties": 2, "additionalProperties": { "type": "integer" } });
    assert_eq!(value_for(open), json!({ "key1": 1, "key2": 1 }));
    let deps = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "cursor": { "type": "string" } },
      "dependentRequired": { "limit": ["cursor"] } });
    assert_eq!(examples("x:list", None, deps)[0].input, json!({ "limit": 10, "cursor": "example" }));
    let deps = json!({ "type": "object", "properties": { "limit": { "type": "integer" }, "cursor": { "type": "string" } },
      "dependencies": { "limit": ["cursor"] } });
    assert_eq!(examples("x:list", None, deps)[0].input, json!({ "limit": 10, "cursor": "example" }));
    let pattern_props = json!({ "type": "object", "required": ["x-a"], "patternProperties": { "^x-": { "type": "integer" } }, "additionalProperties": false });
    assert_eq!(
      examples("x:run", None, pattern_props)[0].code,
      "const result = await callTool('x:run', { 'x-a': 1 });\nreturn result;"
    );
    // A required key that additionalProperties: false forbids: unsatisfiable.
    let bad = json!({ "type": "object", "required": ["z"], "properties": { "a": {} }, "additionalProperties": false });
    assert!(examples("x:run", None, bad).is_empty());
    let not = json!({ "type": "string", "not": { "const": "example" } });
    assert_ne!(value_for(not), json!("example"));
  }

  #[test]
  fn if_then_else_and_forbidden_keys() {
    let schema = json!({ "type": "object", "properties": { "__proto__": { "type": "string" }, "constructor": { "type": "string" }, "a": { "type": "string" } } });
    let ex = examples("x:run", None, schema);
    assert!(ex.iter().all(|e| !e.code.contains("proto") && !e.code.contains("constructor")));
    let schema =
      json!({ "type": "object", "properties": { "constructor": { "type": "string" } }, "required": ["constructor"] });
    assert!(examples("x:run", None, schema).is_empty());
    let ite = json!({ "type": "object", "if": { "required": ["a"] }, "then": { "required": ["b"] } });
    assert_eq!(verdict(&ite, &json!({ "a": 1 })), Verdict::Invalid);
    assert_eq!(verdict(&ite, &json!({ "a": 1, "b": 2 })), Verdict::Valid);
  }

  #[test]
  fn with_options_prefers_plain_values() {
    let schema = json!({
      "type": "object",
      "required": ["owner", "repo"],
      "properties": {
        "owner": { "type": "string" }, "repo": { "type": "string" },
        "filter": { "type": "object", "properties": { "x": { "type": "string" } } },
        "state": { "type": "string", "enum": ["open", "closed"] },
        "old": { "type": "string", "deprecated": true },
        "sort": { "type": "string" }, "direction": { "type": "string" }, "labels": { "type": "array", "items": { "type": "string" } }
      }
    });
    let ex = examples("github:list_issues", None, schema);
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0].description, "List issues");
    assert_eq!(ex[0].input, json!({ "owner": "example-user", "repo": "example-repo" }));
    assert_eq!(ex[1].description, "List issues, with options");
    let keys: Vec<&str> = ex[1].input.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 5);
    assert!(!keys.contains(&"old") && !keys.contains(&"filter") && !keys.contains(&"labels"));
    assert!(ex[1].code.starts_with("const page = await callTool('github:list_issues', {\n  "));
    assert!(ex[1].code.ends_with("\n});\nreturn page;"));
  }

  #[test]
  fn printing() {
    let v = json!({ "a-b": "it's", "ok": [1, 2.5, null, true], "__x": {}, "n": { "deep": [] } });
    let code = render_code("t", "r", &v, None).unwrap();
    assert!(code.contains("'a-b': 'it\\'s'"));
    assert!(code.contains("'__x': {}"));
    assert!(code.contains("ok: [1, 2.5, null, true]"));
    let big: Map<String, Value> = (0..12).map(|i| (format!("property_{i}"), json!(format!("value {i}")))).collect();
    let code = render_code("t", "r", &Value::Object(big), None).unwrap();
    assert_eq!(code.lines().count(), 15);
    assert!(code.lines().nth(1).unwrap().starts_with("  property_"));
    let huge = json!({ "a": "x".repeat(3000) });
    assert!(render_code("t", "r", &huge, None).is_none());
    assert_eq!(clean_text("  a\n\tb  ", 10).unwrap(), "a b");
    assert_eq!(clean_text("abcdef", 3).unwrap(), "abc…");
    assert_eq!(clean_text(" \n", 3), None);
  }

  #[test]
  fn regex_engine() {
    let m = |p: &str, t: &str| regex_search(&parse_regex(p).unwrap(), t, usize::MAX).0;
    assert_eq!(m("^\\d+px$", "12px"), Some(true));
    assert_eq!(m("^\\d+px$", "12p"), Some(false));
    assert_eq!(m("b", "abc"), Some(true));
    assert_eq!(m("^[^@\\s]+@[^@\\s]+$", "a@b"), Some(true));
    assert_eq!(m("^(?:a|bc)*$", "abca"), Some(true));
    assert_eq!(m("^(?:a|bc)*$", "abcb"), Some(false));
    assert_eq!(m("^a{2,3}$", "aaaa"), Some(false));
    assert_eq!(m("^a{2,}?$", "aaaa"), Some(true));
    assert_eq!(m("^(?!.*x).*$", "abc"), Some(true));
    assert_eq!(m("^(?!.*x).*$", "axc"), Some(false));
    assert_eq!(m("^(?=.*\\d)\\w+$", "ab1"), Some(true));
    assert_eq!(m("\\bcat\\b", "a cat!"), Some(true));
    assert_eq!(m("^[\\w.-]+$", "a.b-c_d"), Some(true));
    assert_eq!(m("^[^]$", "\n"), Some(true));
    assert_eq!(m("^.$", "\n"), Some(false));
    assert_eq!(m("^\\u0041\\x42\\u{43}$", "ABC"), Some(true));
    assert_eq!(m("^(?<year>\\d{4})$", "2026"), Some(true));
    assert_eq!(m("^[\\D]$", "a"), Some(true));
    // Catastrophic backtracking hits the budget, not the stack.
    let evil = parse_regex("^(a+)+$").unwrap();
    let (r, steps) = regex_search(&evil, &format!("{}b", "a".repeat(60)), usize::MAX);
    assert!(r.is_none() && steps <= RE_MAX_STEPS + 1);
    assert_eq!(regex_search(&evil, &format!("{}b", "a".repeat(60)), 100), (None, 100));
    assert!(regex_search(&evil, &"a".repeat(1000), usize::MAX).0.is_none());
    for bad in ["(x)\\1", "(?<=a)b", "\\p{L}", "a**", "[b-a]", "(", ")", "a{2,1}", "\\k<n>", "x{99999}"] {
      assert!(parse_regex(bad).is_none(), "{bad}");
    }
    assert!(parse_regex(&"(".repeat(100)).is_none());
    let mut s = String::new();
    let mut steps = 100;
    sample(&parse_regex("((((a{0,256}){0,256}){0,256}){0,256})").unwrap(), 256, 0, &mut s, &mut steps);
    assert!(s.len() <= 700);
  }

  #[test]
  fn validator_keywords() {
    let s = json!({ "type": "object", "properties": { "a": { "type": "integer" } }, "additionalProperties": false });
    assert_eq!(verdict(&s, &json!({ "a": 1 })), Verdict::Valid);
    assert_eq!(verdict(&s, &json!({ "a": 1.5 })), Verdict::Invalid);
    assert_eq!(verdict(&s, &json!({ "b": 1 })), Verdict::Invalid);
    assert_eq!(
      verdict(&json!({ "multipleOf": 0.1 }), &json!(0.3)),
      Verdict::Invalid,
      "as ajv: 0.3 / 0.1 is not an integer"
    );
    assert_eq!(verdict(&json!({ "enum": [1] }), &json!(1.0)), Verdict::Valid);
    assert_eq!(verdict(&json!({ "$ref": "https://example.com/s.json" }), &json!(1)), Verdict::Uncertain);
    assert_eq!(verdict(&json!({ "type": "string", "pattern": "(a)\\1" }), &json!("aa")), Verdict::Uncertain);
    assert_eq!(verdict(&json!({ "propertyNames": { "maxLength": 2 } }), &json!({ "abc": 1 })), Verdict::Invalid);
    assert_eq!(
      verdict(&json!({ "type": "array", "uniqueItems": true }), &json!([{ "a": 1 }, { "a": 1 }])),
      Verdict::Invalid
    );
    assert_eq!(
      verdict(&json!({ "dependentSchemas": { "a": { "required": ["b"] } } }), &json!({ "a": 1 })),
      Verdict::Invalid
    );
    assert_eq!(verdict(&json!({ "not": {} }), &json!(1)), Verdict::Invalid);
    assert_eq!(verdict(&json!(false), &json!(1)), Verdict::Invalid);
  }

  #[test]
  fn hostile_depth_does_not_overflow() {
    let mut schema = json!({ "type": "string" });
    for _ in 0..10_000 {
      schema = object([("type", json!("object")), ("properties", object([("a", schema)])), ("required", json!(["a"]))]);
    }
    let ex = usage_examples("deep:get", None, Some(&schema), &[], 5);
    assert!(ex.is_empty(), "needs more than MAX_DEPTH levels");
    drop_iteratively(schema);

    // Optional nesting: an example without it.
    let mut schema = json!({ "type": "string" });
    for _ in 0..10_000 {
      schema = object([("type", json!("object")), ("properties", object([("a", schema)]))]);
    }
    let ex = usage_examples("deep:list", None, Some(&schema), &[], 5);
    assert!(!ex.is_empty());
    assert!(ex.iter().all(|e| e.code.len() <= MAX_CODE_BYTES));
    drop_iteratively(schema);

    let mut arrays = json!({ "type": "string" });
    for _ in 0..10_000 {
      let array = object([("type", json!("array")), ("items", arrays), ("minItems", json!(1))]);
      arrays = object([("anyOf", Value::Array(vec![array, json!({ "$ref": "#" })]))]);
    }
    let schema =
      object([("type", json!("object")), ("properties", object([("x", arrays)])), ("required", json!(["x"]))]);
    let _ = usage_examples("deep:run", None, Some(&schema), &[], 5);
    drop_iteratively(schema);

    let mut user = json!(1);
    for _ in 0..10_000 {
      user = object([("a", user)]);
    }
    let mut output = json!(1);
    for _ in 0..10_000 {
      output = Value::Array(vec![output]);
    }
    let entry = object([("description", json!("deep")), ("input", user), ("output", output)]);
    let ex = usage_examples("deep:run", None, None, std::slice::from_ref(&entry), 5);
    assert_eq!(ex.len(), 1, "the too-deep user example is dropped, the generated one stays");
    drop_iteratively(entry);
  }

  #[test]
  fn hostile_refs_and_sizes() {
    let schemas = [
      json!({ "$ref": "#" }),
      json!({ "type": "object", "properties": { "self": { "$ref": "#" } }, "required": ["self"] }),
      json!({ "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } }, "$ref": "#/$defs/a" }),
      json!({ "allOf": [{ "$ref": "#" }, { "$ref": "#" }] }),
      json!({ "anyOf": [{ "$ref": "#" }, { "$ref": "#" }], "oneOf": [{ "$ref": "#" }] }),
      json!({ "type": "object", "properties": 5, "required": "a", "minProperties": "x" }),
      json!({ "type": 7, "enum": 3, "items": 5, "anyOf": {}, "allOf": [] }),
      json!([1, 2]),
      json!("schema"),
      json!(false),
      json!({ "type": "object", "properties": { "a": { "type": "array", "minItems": 1_000_000_000u64 } }, "required": ["a"] }),
      json!({ "type": "object", "properties": { "a": { "type": "string", "minLength": 1_000_000_000u64 } }, "required": ["a"] }),
      json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "^(a+)+$", "minLength": 100 } }, "required": ["a"] }),
    ];
    for schema in &schemas {
      for e in usage_examples("x:run", None, Some(schema), &[], 5) {
        assert!(e.code.len() <= MAX_CODE_BYTES);
      }
    }
    let mut defs = Map::new();
    for i in 0..40 {
      defs.insert(
        format!("d{i}"),
        json!({ "type": "object", "required": ["l", "r"], "properties": { "l": { "$ref": format!("#/$defs/d{}", i + 1) }, "r": { "$ref": format!("#/$defs/d{}", i + 1) } } }),
      );
    }
    let fan = json!({ "$ref": "#/$defs/d0", "$defs": defs });
    assert!(usage_examples("x:run", None, Some(&fan), &[], 5).is_empty());
    let mut props = Map::new();
    for i in 0..20_000 {
      props.insert(format!("property_{i}"), json!({ "type": "string" }));
    }
    let required: Vec<String> = (0..20_000).map(|i| format!("property_{i}")).collect();
    let big = json!({ "type": "object", "properties": props, "required": required });
    assert!(usage_examples("x:run", None, Some(&big), &[], 5).is_empty());
    let mut props = Map::new();
    for i in 0..5_000 {
      props.insert(format!("p{i}"), json!({ "type": "string", "pattern": "^(a+)+$" }));
    }
    let required: Vec<String> = (0..5_000).map(|i| format!("p{i}")).collect();
    let evil = json!({ "type": "object", "properties": props, "required": required });
    assert!(usage_examples("x:run", None, Some(&evil), &[], 5).is_empty());
    let patterns: Map<String, Value> = (0..64).map(|i| (format!("^(a+)+{i}$"), json!({ "type": "string" }))).collect();
    let keys: Vec<String> = (0..64).map(|i| format!("{}b", "a".repeat(40 + i))).collect();
    let evil =
      json!({ "type": "object", "patternProperties": patterns, "required": keys, "additionalProperties": false });
    assert!(usage_examples("x:run", None, Some(&evil), &[], 5).is_empty());
    let huge_enum: Vec<Value> = (0..100_000).map(|i| json!(format!("value-{i}"))).collect();
    let schema = json!({ "type": "object", "properties": { "e": { "enum": huge_enum } }, "required": ["e"] });
    assert_eq!(usage_examples("x:run", None, Some(&schema), &[], 5)[0].input, json!({ "e": "value-0" }));
  }

  #[test]
  fn no_loops_and_parseable_shape() {
    let schema = json!({ "type": "object", "properties": { "for": { "type": "string" }, "while": { "type": "integer" } }, "required": ["for"] });
    for e in examples("x:list_for_while", None, schema) {
      // Keys named like loops are data, not statements.
      assert!(e.code.starts_with("const page = await callTool("));
      assert!(e.code.ends_with("return page;"));
    }
  }
}
