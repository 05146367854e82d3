//! What a tool does (its intent), its nouns and phrases, read from its name and description.

use super::*;

/// What a tool does, as far as its name (or description) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Intent {
  Create,
  List,
  Get,
  Update,
  Delete,
  Search,
  Generic,
}

pub(super) const VERBS: &[(Intent, &[&str])] = &[
  (Intent::Search, &["search", "find", "query", "lookup", "grep", "filter"]),
  (Intent::List, &["list", "ls", "enumerate", "browse"]),
  (Intent::Get, &["get", "read", "fetch", "show", "view", "describe", "retrieve", "load", "download", "inspect"]),
  (Intent::Create, &["create", "add", "new", "insert", "make", "register", "compose"]),
  (Intent::Update, &["update", "edit", "modify", "set", "patch", "change", "rename", "replace", "upsert"]),
  (Intent::Delete, &["delete", "remove", "rm", "del", "destroy", "erase", "purge", "drop", "unlink", "trash"]),
];

/// Words that are neither verb nor noun in a tool name.
pub(super) const FILLER: &[&str] = &[
  "or", "and", "a", "an", "the", "by", "for", "of", "to", "in", "on", "with", "from", "all", "my", "many", "one", "api",
];

impl Intent {
  pub(super) fn of_word(word: &str) -> Option<Intent> {
    VERBS.iter().find(|(_, verbs)| verbs.contains(&word)).map(|(intent, _)| *intent)
  }

  /// The intent of an inflected verb from prose: "lists", "searches", "created", "retrieving".
  pub(super) fn of_prose_word(word: &str) -> Option<Intent> {
    VERBS.iter().find(|(_, verbs)| verbs.iter().any(|v| inflects(word, v))).map(|(intent, _)| *intent)
  }

  /// The variable the example's result goes into.
  pub(super) fn variable(self) -> &'static str {
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

pub(super) fn inflects(word: &str, verb: &str) -> bool {
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
pub(super) fn detect_intent(name: &str, description: Option<&str>) -> Intent {
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

pub(super) fn refine(intent: Intent, after: &[String]) -> Intent {
  if intent == Intent::Get && after.iter().take(3).any(|w| w == "all" || w == "list") {
    Intent::List
  } else {
    intent
  }
}

/// Lowercase words of an identifier: split on anything not alphanumeric and on camelCase humps
/// (`getHTTPServer` → `get`, `http`, `server`).
pub(super) fn split_words(s: &str) -> Vec<String> {
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
pub(super) struct ToolInfo {
  pub(super) intent: Intent,
  /// Up to three noun words ("pull", "request"), the last one as the name says it.
  pub(super) noun: Vec<String>,
  /// What a generic example is called: the description's first sentence when it is short, else
  /// the name's last segment in words (without a leading app name).
  pub(super) title: String,
}

impl ToolInfo {
  pub(super) fn new(name: &str, description: Option<&str>) -> Self {
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

  pub(super) fn phrase(&self, last: impl Fn(&str) -> String, fallback: &str) -> String {
    match self.noun.split_last() {
      None => fallback.to_string(),
      Some((tail, head)) => {
        let mut words: Vec<String> = head.to_vec();
        words.push(last(tail));
        words.join(" ")
      }
    }
  }

  pub(super) fn singular(&self) -> String {
    self.phrase(singular, "item")
  }

  pub(super) fn plural(&self) -> String {
    self.phrase(|w| plural(&singular(w)), "items")
  }

  /// A search word taken from the tool name.
  pub(super) fn query_word(&self) -> String {
    self.noun.last().map(|w| singular(w)).unwrap_or_else(|| "example".to_string())
  }

  /// The description of a generated example with this input.
  pub(super) fn describe(&self, input: &Value) -> String {
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
  pub(super) fn names_noun(&self, key: &str) -> bool {
    if !is_id_key(key) {
      return false;
    }
    let stem: Vec<String> = split_words(key).into_iter().filter(|w| w != "id" && w != "uuid").collect();
    stem.is_empty() || self.noun.last().is_some_and(|n| stem.last().is_some_and(|s| singular(s) == singular(n)))
  }
}

/// The first sentence of a description, without its final period, when it is short (at most 80
/// characters) and there is one.
pub(super) fn first_sentence(description: &str) -> Option<String> {
  let text = description.trim_start();
  let end = [". ", ".\n", "\n", "。"].iter().filter_map(|stop| text.find(stop)).min().unwrap_or(text.len());
  let sentence = text[..end].trim_end().trim_end_matches('.');
  if sentence.chars().count() > 80 {
    return None;
  }
  clean_text(sentence, 80)
}

pub(super) fn singular(word: &str) -> String {
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

pub(super) fn plural(word: &str) -> String {
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

pub(super) fn with_article(phrase: &str) -> String {
  let vowel = phrase.chars().next().is_some_and(|c| "aeioAEIO".contains(c));
  format!("{} {phrase}", if vowel { "an" } else { "a" })
}

/// Free text on one line: control characters and runs of whitespace become one space, cut to
/// `max` characters (with `…`). `None` when nothing is left.
pub(super) fn clean_text(text: &str, max: usize) -> Option<String> {
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
