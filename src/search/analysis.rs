//! Text analysis shared by indexing and querying, so both sides agree on every term.
//!
//! A text becomes words (split at anything that is not a letter or digit, and inside identifiers
//! at camelCase boundaries: `getUserProfile`, `HTTPServer`), lowercased; English stop words are
//! dropped; each word is reduced to its Porter2 stem (`issues` → `issu`, `listing` → `list`).
//! Words longer than [`MAX_WORD_CHARS`] are ignored (no tool vocabulary is that long, and it keeps
//! a hostile input from making huge terms).

use std::{borrow::Cow, collections::HashMap, sync::OnceLock};

use rust_stemmers::{Algorithm, Stemmer};

/// Longer words are skipped.
pub const MAX_WORD_CHARS: usize = 40;

/// One analyzed word: its lowercase surface form and its stem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
  pub surface: String,
  pub stem: String,
}

fn stemmer() -> &'static Stemmer {
  static STEMMER: OnceLock<Stemmer> = OnceLock::new();
  STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The stem of a lowercase word.
pub fn stem(word: &str) -> String {
  match stemmer().stem(word) {
    Cow::Borrowed(s) => s.to_string(),
    Cow::Owned(s) => s,
  }
}

/// Calls `each` with every lowercase word of `text`, in order, at most `limit` times.
/// Identifiers are split at camelCase boundaries; digits stay attached to their word (`oauth2`).
pub fn for_each_word(text: &str, limit: usize, mut each: impl FnMut(&str)) {
  let mut word = String::new();
  let mut chars = 0usize;
  let mut count = 0usize;
  let mut prev: Option<char> = None;
  let mut iter = text.chars().peekable();
  let mut flush = |word: &mut String, chars: &mut usize, count: &mut usize| {
    if !word.is_empty() && *chars <= MAX_WORD_CHARS && *count < limit {
      each(word);
      *count += 1;
    }
    word.clear();
    *chars = 0;
  };
  while let Some(c) = iter.next() {
    if count >= limit {
      return;
    }
    if !c.is_alphanumeric() {
      flush(&mut word, &mut chars, &mut count);
      prev = None;
      continue;
    }
    if c.is_uppercase() {
      let boundary = match prev {
        Some(p) if p.is_lowercase() || p.is_numeric() => true,
        // The last capital of an acronym starts the next word: `HTTPServer` → `http`, `server`.
        Some(p) if p.is_uppercase() => iter.peek().is_some_and(|n| n.is_lowercase()),
        _ => false,
      };
      if boundary {
        flush(&mut word, &mut chars, &mut count);
      }
    }
    word.extend(c.to_lowercase());
    chars += 1;
    prev = Some(c);
  }
  flush(&mut word, &mut chars, &mut count);
}

/// The analyzed words of `text` without stop words, at most `limit` of them.
pub fn words(text: &str, limit: usize, stems: &mut StemCache) -> Vec<Word> {
  let mut out = Vec::new();
  for_each_word(text, usize::MAX, |w| {
    if out.len() < limit && !is_stop_word(w) {
      out.push(Word { surface: w.to_string(), stem: stems.stem(w) });
    }
  });
  out
}

/// Remembers the stems of words seen before: stemming is the costliest step of analysis, and tool
/// metadata repeats its vocabulary. Bounded: emptied when it reaches [`StemCache::CAPACITY`] words.
#[derive(Default)]
pub struct StemCache {
  stems: HashMap<String, String>,
}

impl StemCache {
  pub const CAPACITY: usize = 100_000;

  pub fn stem(&mut self, word: &str) -> String {
    if let Some(s) = self.stems.get(word) {
      return s.clone();
    }
    let s = stem(word);
    if self.stems.len() >= Self::CAPACITY {
      self.stems.clear();
    }
    self.stems.insert(word.to_string(), s.clone());
    s
  }
}

/// A tool name as one comparable key: lowercase, with `_`, `-`, `.` and `/` removed, so
/// `createIssue`, `create_issue` and `create-issue` are the same name (`create issue` is not).
pub fn name_key(name: &str) -> String {
  name.trim().chars().filter(|c| !matches!(c, '_' | '-' | '.' | '/')).flat_map(char::to_lowercase).collect()
}

/// English function words and the filler agents put in front of a request ("I want to", "please",
/// "a tool that"). They carry no meaning for choosing a tool.
pub fn is_stop_word(word: &str) -> bool {
  word.len() <= 6 && STOP.binary_search(&word).is_ok()
}

const STOP: &[&str] = &[
  "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but",
  "by", "can", "could", "did", "do", "does", "doing", "each", "etc", "for", "from", "had", "has", "have", "having",
  "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
  "let", "lets", "me", "might", "must", "my", "need", "needs", "of", "on", "or", "our", "ours", "please", "shall",
  "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these",
  "they", "this", "those", "to", "tool", "tools", "us", "via", "want", "was", "we", "were", "what", "when", "where",
  "which", "while", "who", "whom", "whose", "why", "will", "with", "would", "you", "your", "yours",
];

#[cfg(test)]
mod tests {
  use super::*;

  fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, usize::MAX, |w| out.push(w.to_string()));
    out
  }

  #[test]
  fn splits_identifiers_and_separators() {
    assert_eq!(split("github:create_issue"), ["github", "create", "issue"]);
    assert_eq!(split("users.getProfile"), ["users", "get", "profile"]);
    assert_eq!(split("HTTPServer-list"), ["http", "server", "list"]);
    assert_eq!(split("oauth2Token"), ["oauth2", "token"]);
    assert_eq!(split("  Ünïcode—wörds  "), ["ünïcode", "wörds"]);
  }

  #[test]
  fn stems_and_drops_stop_words() {
    let mut stems = StemCache::default();
    let w: Vec<_> = words("Please list all the open issues", 10, &mut stems).into_iter().map(|w| w.stem).collect();
    assert_eq!(stems.stem("issues"), "issu");
    assert_eq!(w, ["list", "open", "issu"]);
  }

  #[test]
  fn stop_words_are_sorted_and_short() {
    assert!(STOP.windows(2).all(|w| w[0] < w[1]));
    assert!(STOP.iter().all(|w| w.len() <= 6));
    assert!(is_stop_word("the") && is_stop_word("yours") && is_stop_word("a"));
    assert!(!is_stop_word("list"));
  }

  #[test]
  fn long_words_and_limits() {
    assert!(split(&"x".repeat(41)).is_empty());
    assert_eq!(words("one two three four", 2, &mut StemCache::default()).len(), 2);
  }

  #[test]
  fn name_keys_ignore_case_and_separators() {
    assert_eq!(name_key("createIssue"), name_key("create_issue"));
    assert_eq!(name_key("github:create-issue"), "github:createissue");
  }
}
