//! The model's tokenizer: BERT's uncased basic tokenizer and greedy WordPiece over the model
//! file's vocabulary — the same pieces as the model's own `tokenizer.json` (parity tests in
//! `tests.rs`, cases from `scripts/embeddings/tokenizer_cases.py`).
//!
//! Basic tokenizer: NUL, U+FFFD and control/format/unassigned characters are removed; white space
//! becomes a space; CJK ideographs become words of their own; canonical decomposition, non-spacing
//! marks removed (accents), then lowercase; split at white space, and every punctuation character
//! is a word of its own. WordPiece: each word is split into vocabulary pieces by greedy longest
//! match from the left (continuations looked up as `##piece`); a word over 100 characters, or with
//! a part no piece matches, is one `[UNK]`. A text becomes `[CLS] pieces… [SEP]`, cut to the cap.

use std::{
  collections::HashMap,
  hash::{BuildHasherDefault, Hasher},
};

use super::unicode::{Class, CLASSES, DECOMPOSED};

/// Longer words are unknown (BERT's `max_input_chars_per_word`).
const MAX_WORD_CHARS: usize = 100;

/// BERT's special tokens, by their text in the vocabulary (a model file may name others: MPNet's
/// `<s>` and `</s>`).
pub const UNK: &str = "[UNK]";
pub const CLS: &str = "[CLS]";
pub const SEP: &str = "[SEP]";

/// A WordPiece vocabulary (ids are the model's token ids: line numbers of the model file's
/// vocabulary block).
pub struct Vocab {
  /// Pieces that start a word, by text.
  words: HashMap<String, u32, Fx>,
  /// Continuation pieces (`##x`), by the text after `##`.
  continuations: HashMap<String, u32, Fx>,
  /// The longest key of `words` and of `continuations`, in characters: longer candidates cannot
  /// match, so they are not looked up (the same pieces as Python's single bound, fewer lookups).
  max_word_chars: usize,
  max_continuation_chars: usize,
  unk: u32,
  cls: u32,
  sep: u32,
}

impl Vocab {
  /// The vocabulary of `tokens` in id order, with its unknown, start and end tokens named
  /// (`[UNK]`, `[CLS]`, `[SEP]` for BERT); `None` if a token is empty, holds white space, or one of
  /// the three is missing.
  pub fn with_specials<'a>(tokens: impl IntoIterator<Item = &'a str>, specials: [&str; 3]) -> Option<Vocab> {
    let mut words = HashMap::with_hasher(Fx::default());
    let mut continuations = HashMap::with_hasher(Fx::default());
    let (mut max_word_chars, mut max_continuation_chars) = (0, 0);
    for (id, token) in tokens.into_iter().enumerate() {
      if token.is_empty() || token.chars().any(char::is_whitespace) {
        return None;
      }
      let id = u32::try_from(id).ok()?;
      // Repeated entries: the last wins (as a Python dict built in id order).
      words.insert(token.to_string(), id);
      max_word_chars = max_word_chars.max(token.chars().count());
      if let Some(rest) = token.strip_prefix("##") {
        continuations.insert(rest.to_string(), id);
        max_continuation_chars = max_continuation_chars.max(rest.chars().count());
      }
    }
    let [unk, cls, sep] = specials;
    let (unk, cls, sep) = (*words.get(unk)?, *words.get(cls)?, *words.get(sep)?);
    Some(Vocab { words, continuations, max_word_chars, max_continuation_chars, unk, cls, sep })
  }

  /// The ids of `text`: `[CLS]`, its pieces, `[SEP]`, at most `cap` in all (pieces past `cap − 2`
  /// are cut, as the model's tokenizer truncates). `cap` below 2 is taken as 2.
  pub fn encode(&self, text: &str, cap: usize) -> Vec<u32> {
    let cap = cap.max(2);
    let mut ids = vec![self.cls];
    let mut bounds = Vec::new();
    for_each_word_until(text, |word| {
      self.word_pieces(word, &mut bounds, &mut ids);
      ids.len() < cap - 1
    });
    ids.truncate(cap - 1);
    ids.push(self.sep);
    ids
  }

  /// Whether `word` (lowercase) is one entry of the vocabulary.
  pub fn knows(&self, word: &str) -> bool {
    self.words.contains_key(word)
  }

  /// Whether `text` has a word the vocabulary knows whole (one entry, not assembled from sub-word
  /// pieces) of at least two characters that is not `is_stop(word)`: a sign that it says something
  /// in words the model knows, rather than being fragments (`xyzzy`, `w123`), single letters or
  /// filler.
  pub fn has_content_word(&self, text: &str, is_stop: impl Fn(&str) -> bool) -> bool {
    let mut found = false;
    for_each_word(text, |word| {
      found = found || (word.chars().nth(1).is_some() && self.words.contains_key(word) && !is_stop(word));
    });
    found
  }

  /// WordPiece: appends the pieces of one word, or `[UNK]` if some part of it matches no piece.
  fn word_pieces(&self, word: &str, bounds: &mut Vec<usize>, out: &mut Vec<u32>) {
    bounds.clear();
    bounds.extend(word.char_indices().map(|(i, _)| i));
    let n = bounds.len();
    if n == 0 {
      return;
    }
    if n > MAX_WORD_CHARS {
      out.push(self.unk);
      return;
    }
    bounds.push(word.len());
    let first = out.len();
    let mut start = 0;
    while start < n {
      let (map, max) = if start == 0 {
        (&self.words, self.max_word_chars)
      } else {
        (&self.continuations, self.max_continuation_chars)
      };
      let mut end = n.min(start + max);
      let found = loop {
        if end <= start {
          break None;
        }
        if let Some(&id) = map.get(&word[bounds[start]..bounds[end]]) {
          break Some(id);
        }
        end -= 1;
      };
      let Some(id) = found else {
        out.truncate(first);
        out.push(self.unk);
        return;
      };
      out.push(id);
      start = end;
    }
  }
}

/// [`for_each_word`] whose `each` stops being called once it returned false (the words are still
/// split: callers cut long texts first, as `Model::encode` does).
fn for_each_word_until(text: &str, mut each: impl FnMut(&str) -> bool) {
  let mut going = true;
  for_each_word(text, |word| {
    if going {
      going = each(word);
    }
  });
}

/// The BERT basic tokenizer (uncased): calls `each` with every word of `text`, in order.
pub fn for_each_word(text: &str, mut each: impl FnMut(&str)) {
  // Clean, space out CJK ideographs, decompose and strip accents.
  let mut clean = String::with_capacity(text.len() + 8);
  for c in text.chars() {
    if c.is_ascii() {
      match class(c) {
        Some(Class::Drop) => {}
        Some(Class::Space) => clean.push(' '),
        _ => clean.push(c),
      }
      continue;
    }
    match class(c) {
      Some(Class::Drop | Class::Mark) => continue,
      Some(Class::Space) => {
        clean.push(' ');
        continue;
      }
      _ => {}
    }
    let cjk = is_cjk(c);
    if cjk {
      clean.push(' ');
    }
    decompose(c, &mut clean);
    if cjk {
      clean.push(' ');
    }
  }
  let lower = clean.to_lowercase();
  // Split at spaces; punctuation characters are words of their own.
  let mut start = None;
  for (i, c) in lower.char_indices() {
    let cls = class(c);
    if cls == Some(Class::Space) || cls == Some(Class::Punct) {
      if let Some(s) = start.take() {
        each(&lower[s..i]);
      }
      if cls == Some(Class::Punct) {
        each(&lower[i..i + c.len_utf8()]);
      }
    } else if start.is_none() {
      start = Some(i);
    }
  }
  if let Some(s) = start {
    each(&lower[s..]);
  }
}

/// The tokenizer's class of a character; `None` for an ordinary one.
fn class(c: char) -> Option<Class> {
  let o = u32::from(c);
  if c.is_ascii() {
    return match o {
      0x09 | 0x0A | 0x0D | 0x20 => Some(Class::Space),
      0x00..=0x1F | 0x7F => Some(Class::Drop),
      33..=47 | 58..=64 | 91..=96 | 123..=126 => Some(Class::Punct),
      _ => None,
    };
  }
  let i = CLASSES.partition_point(|&(_, end, _)| end < o);
  CLASSES.get(i).filter(|&&(start, _, _)| start <= o).map(|&(_, _, cls)| cls)
}

/// Pushes the canonical decomposition of `c` without non-spacing marks.
fn decompose(c: char, out: &mut String) {
  const S_BASE: u32 = 0xAC00;
  const L_BASE: u32 = 0x1100;
  const V_BASE: u32 = 0x1161;
  const T_BASE: u32 = 0x11A7;
  const T_COUNT: u32 = 28;
  const N_COUNT: u32 = 21 * T_COUNT;
  let o = u32::from(c);
  if (S_BASE..S_BASE + 11172).contains(&o) {
    let s = o - S_BASE;
    let jamo = [L_BASE + s / N_COUNT, V_BASE + (s % N_COUNT) / T_COUNT, T_BASE + s % T_COUNT];
    let parts = if s.is_multiple_of(T_COUNT) { &jamo[..2] } else { &jamo[..] };
    out.extend(parts.iter().filter_map(|&j| char::from_u32(j)));
    return;
  }
  match DECOMPOSED.binary_search_by_key(&o, |&(k, _)| k) {
    Ok(i) => out.push_str(DECOMPOSED[i].1),
    Err(_) => out.push(c),
  }
}

/// The CJK ideograph blocks BERT puts spaces around.
fn is_cjk(c: char) -> bool {
  matches!(
    u32::from(c),
    0x4E00..=0x9FFF
      | 0x3400..=0x4DBF
      | 0x20000..=0x2A6DF
      | 0x2A700..=0x2B73F
      | 0x2B740..=0x2B81F
      | 0x2B820..=0x2CEAF
      | 0xF900..=0xFAFF
      | 0x2F800..=0x2FA1F
  )
}

/// FxHash (rustc's): token lookups are on short strings, where SipHash's cost dominates.
type Fx = BuildHasherDefault<FxHasher>;

#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
  fn write(&mut self, bytes: &[u8]) {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
      let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
      self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
      self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
  }

  fn write_u8(&mut self, b: u8) {
    self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
  }

  fn finish(&self) -> u64 {
    self.0
  }
}
