//! Typo tolerance: the indexed words one edit away (Damerau–Levenshtein distance 1: a letter
//! dropped, added, changed, or two neighbours swapped) from a query word the index does not know.
//!
//! Candidates are generated from the query word and looked up in the vocabulary, which costs a few
//! hundred hash lookups per unknown word and nothing for known ones.

use std::collections::HashMap;

/// Query words shorter than this are never corrected: one edit turns most short words into other
/// real words (`cart` → `card`, `part`, `chart`).
pub const MIN_CHARS: usize = 5;

/// At most this many corrections per word, the most frequent first.
pub const MAX_CORRECTIONS: usize = 3;

/// The vocabulary words (with their document counts) one edit away from `word`, best first:
/// higher count, then alphabetical.
pub fn corrections<'v>(word: &str, vocabulary: &'v HashMap<String, u32>) -> Vec<(&'v str, u32)> {
  let chars: Vec<char> = word.chars().collect();
  if chars.len() < MIN_CHARS {
    return Vec::new();
  }
  let mut alphabet: Vec<char> = ('a'..='z').chain('0'..='9').collect();
  for &c in &chars {
    if !alphabet.contains(&c) {
      alphabet.push(c);
    }
  }
  let mut found: Vec<(&'v str, u32)> = Vec::new();
  let mut candidate = String::with_capacity(word.len() + 4);
  let mut check = |candidate: &str| {
    if let Some((k, &n)) = vocabulary.get_key_value(candidate) {
      if k != word && !found.iter().any(|(f, _)| *f == k.as_str()) {
        found.push((k.as_str(), n));
      }
    }
  };
  let build = |out: &mut String, parts: &[&[char]]| {
    out.clear();
    for part in parts {
      out.extend(part.iter());
    }
  };
  for i in 0..chars.len() {
    // deletion
    build(&mut candidate, &[&chars[..i], &chars[i + 1..]]);
    check(&candidate);
    // transposition
    if i + 1 < chars.len() {
      build(&mut candidate, &[&chars[..i], &[chars[i + 1], chars[i]], &chars[i + 2..]]);
      check(&candidate);
    }
    // substitution
    for &c in &alphabet {
      if c != chars[i] {
        build(&mut candidate, &[&chars[..i], &[c], &chars[i + 1..]]);
        check(&candidate);
      }
    }
  }
  // insertion
  for i in 0..=chars.len() {
    for &c in &alphabet {
      build(&mut candidate, &[&chars[..i], &[c], &chars[i..]]);
      check(&candidate);
    }
  }
  found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
  found.truncate(MAX_CORRECTIONS);
  found
}

#[cfg(test)]
mod tests {
  use super::*;

  fn vocab(words: &[(&str, u32)]) -> HashMap<String, u32> {
    words.iter().map(|(w, n)| (w.to_string(), *n)).collect()
  }

  #[test]
  fn finds_every_kind_of_single_edit() {
    let v = vocab(&[("repository", 3), ("delete", 5), ("issue", 9), ("branch", 2)]);
    assert_eq!(corrections("repostory", &v), [("repository", 3)]); // dropped letter
    assert_eq!(corrections("deelete", &v), [("delete", 5)]); // added letter
    assert_eq!(corrections("isdue", &v), [("issue", 9)]); // changed letter
    assert_eq!(corrections("brnach", &v), [("branch", 2)]); // swapped letters
    assert!(corrections("branches", &v).is_empty()); // two edits
    assert!(corrections("isue", &v).is_empty()); // too short to correct
  }

  #[test]
  fn orders_by_frequency_then_name_and_caps() {
    let v = vocab(&[("pages", 1), ("paper", 4), ("pager", 4), ("paged", 2), ("paves", 9)]);
    assert_eq!(corrections("pagex", &v), [("pager", 4), ("paged", 2), ("pages", 1)]);
  }
}
