//! Static sentence embeddings: a token-vector table distilled from all-MiniLM-L6-v2
//! (`embeddings/README.md`), the model's own BERT tokenizer, and mean pooling. No model runs: a
//! text's vector is the mean of its tokens' table rows, L2-normalised (microseconds).
//!
//! The table (format "CCEMBED1", spec at the top of `scripts/embeddings/distill.py`) is read (on
//! Unix, from next to the `.node`; elsewhere compiled in) and parsed on first use. A missing table,
//! or one that fails validation, turns the semantic signal off; it never panics.
//!
//! Tokenizer (the port of `basic_tokenize` and `WordPiece` in `scripts/embeddings/evaluate.py`,
//! which matches the model's `tokenizer.json`): NUL, U+FFFD and control/format/unassigned
//! characters are removed; white space becomes a space; CJK ideographs become words of their own;
//! canonical decomposition, non-spacing marks removed (accents), then lowercase; split at white
//! space, and every punctuation character is a word of its own. Each word is then split into
//! vocabulary pieces by greedy longest match from the left (continuations looked up as `##piece`);
//! a word over 100 characters, or with a part no piece matches, is dropped. camelCase is not split
//! here: callers split identifiers first.

mod unicode;

use std::{
  collections::HashMap,
  hash::{BuildHasherDefault, Hasher},
  path::PathBuf,
  sync::OnceLock,
};

use unicode::{Class, CLASSES, DECOMPOSED};

/// The table's file name. On Unix the table is read at run time from next to the `.node` (the
/// platform package ships it there), so the worker executable — which links this crate but never
/// searches — does not carry its 4 MB too; on other systems (Windows: no worker) it is compiled in.
pub const TABLE_FILE: &str = "minilm-l6-v2.q8.bin";
/// Names the table file to read instead of looking next to the addon.
pub const ENV_TABLE_PATH: &str = "CODECALL_EMBEDDINGS_PATH";
/// Larger files are not read (ours is 4 MB).
#[cfg(unix)]
const MAX_TABLE_BYTES: u64 = 32 << 20;

const MAGIC: &[u8; 8] = b"CCEMBED1";
/// Longer words are unknown (BERT's `max_input_chars_per_word`).
const MAX_WORD_CHARS: usize = 100;
/// Tables with more dimensions than this are refused (ours has 128).
const MAX_DIMS: usize = 4096;

/// Why there is no table: the semantic signal is then off (the bindings say so once, as a Node
/// warning).
#[derive(Debug)]
// Without Unix the table is compiled in: only `Invalid` can happen.
#[cfg_attr(not(unix), allow(dead_code))]
pub enum TableError {
  /// No file in any of these places.
  NotFound(Vec<PathBuf>),
  Read(PathBuf, std::io::Error),
  TooLarge(PathBuf, u64),
  /// Not a "CCEMBED1" table, or a damaged one.
  Invalid(PathBuf),
}

impl std::fmt::Display for TableError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::NotFound(places) if places.is_empty() => {
        write!(f, "no {TABLE_FILE} found (the addon could not find its own file; set {ENV_TABLE_PATH})")
      }
      Self::NotFound(places) => {
        let places: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
        write!(f, "no {TABLE_FILE} found (looked in {}; or set {ENV_TABLE_PATH})", places.join(", "))
      }
      Self::Read(path, error) => write!(f, "{} could not be read: {error}", path.display()),
      Self::TooLarge(path, len) => write!(f, "{} is {len} bytes, too large for an embedding table", path.display()),
      Self::Invalid(path) => write!(f, "{} is not a valid embedding table", path.display()),
    }
  }
}

impl std::error::Error for TableError {}

/// The table, read and parsed on first use; `None` if there is none (the signal is then off).
pub fn table() -> Option<&'static Table> {
  table_status().ok()
}

/// The table, or why there is none.
pub fn table_status() -> Result<&'static Table, &'static TableError> {
  static TABLE: OnceLock<Result<Table, TableError>> = OnceLock::new();
  TABLE.get_or_init(load).as_ref()
}

#[cfg(not(unix))]
fn load() -> Result<Table, TableError> {
  static BYTES: &[u8] = include_bytes!("embeddings/minilm-l6-v2.q8.bin");
  Table::parse(BYTES).ok_or_else(|| TableError::Invalid(PathBuf::from(TABLE_FILE)))
}

#[cfg(unix)]
fn load() -> Result<Table, TableError> {
  read_table(table_places())
}

/// The first of `places` that exists, read and parsed.
#[cfg(unix)]
fn read_table(places: Vec<PathBuf>) -> Result<Table, TableError> {
  use std::io::Read;
  for path in &places {
    let file = match std::fs::File::open(path) {
      Ok(file) => file,
      Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
      Err(e) => return Err(TableError::Read(path.clone(), e)),
    };
    let metadata = file.metadata().map_err(|e| TableError::Read(path.clone(), e))?;
    if !metadata.is_file() {
      return Err(TableError::Invalid(path.clone()));
    }
    let len = metadata.len();
    if len > MAX_TABLE_BYTES {
      return Err(TableError::TooLarge(path.clone(), len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_TABLE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| TableError::Read(path.clone(), e))?;
    // Read once per process and kept for its life: the parsed table borrows its strings from it.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    return Table::parse(bytes).ok_or_else(|| TableError::Invalid(path.clone()));
  }
  Err(TableError::NotFound(places))
}

/// Where the table may be, in order: `CODECALL_EMBEDDINGS_PATH` (alone, if set); next to the
/// `.node` (a platform package); under `src/search/embeddings/` beside it (a source checkout after
/// `npm run build`); in a debug or test build, also this crate's source tree (`cargo test`, whose
/// executable is no `.node`). A release build names no path of the machine that built it.
#[cfg(unix)]
fn table_places() -> Vec<PathBuf> {
  if let Some(path) = std::env::var_os(ENV_TABLE_PATH).filter(|p| !p.is_empty()) {
    return vec![PathBuf::from(path)];
  }
  let in_tree = std::path::Path::new("src").join("search").join("embeddings").join(TABLE_FILE);
  let mut places = Vec::new();
  if let Some(dir) = crate::common::addon_path().as_deref().and_then(std::path::Path::parent) {
    places.push(dir.join(TABLE_FILE));
    places.push(dir.join(&in_tree));
  }
  #[cfg(any(debug_assertions, test))]
  places.push(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(in_tree));
  places
}

/// The unit vector of `text` by the table; `None` when the table is unusable or the
/// text has no known token. (The index holds the table itself; this is the tests' door.)
#[cfg(test)]
pub fn embed(text: &str) -> Option<Vec<f32>> {
  table()?.embed(text)
}

/// The dot product of two vectors of the same length (the cosine of two unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
  let mut acc = [0f32; 8];
  let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
  let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
  // Eight independent sums over fixed-size chunks, so the compiler can keep them in SIMD registers.
  for (x, y) in a8.zip(b8) {
    let (Ok(x), Ok(y)) = (<&[f32; 8]>::try_from(x), <&[f32; 8]>::try_from(y)) else { continue };
    for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
      *s += x * y;
    }
  }
  acc.iter().sum::<f32>() + tail
}

/// A parsed "CCEMBED1" table: per-row scales, int8 rows, and the vocabulary.
pub struct Table {
  dims: usize,
  scales: Vec<f32>,
  rows: &'static [u8],
  /// Pieces that start a word, by text.
  words: HashMap<&'static str, u32, Fx>,
  /// Continuation pieces (`##x`), by the text after `##`.
  continuations: HashMap<&'static str, u32, Fx>,
  /// The longest key of `words` and of `continuations`, in characters: longer candidates cannot
  /// match, so they are not looked up (the same pieces as Python's single bound, fewer lookups).
  max_word_chars: usize,
  max_continuation_chars: usize,
}

impl Table {
  /// Validates and parses a table; `None` for anything malformed.
  pub fn parse(bytes: &'static [u8]) -> Option<Table> {
    if bytes.len() < 24 || &bytes[..8] != MAGIC {
      return None;
    }
    let u32_at = |at: usize| -> Option<usize> {
      let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
      usize::try_from(u32::from_le_bytes(b)).ok()
    };
    let (rows_n, dims, meta_len, vocab_len) = (u32_at(8)?, u32_at(12)?, u32_at(16)?, u32_at(20)?);
    if rows_n == 0 || dims == 0 || dims > MAX_DIMS {
      return None;
    }
    let vocab_start = 24usize.checked_add(meta_len)?;
    let vocab_end = vocab_start.checked_add(vocab_len)?;
    let vocab = std::str::from_utf8(bytes.get(vocab_start..vocab_end)?).ok()?;
    let scales_start = vocab_end.checked_add((4 - vocab_end % 4) % 4)?;
    let rows_start = scales_start.checked_add(rows_n.checked_mul(4)?)?;
    let end = rows_start.checked_add(rows_n.checked_mul(dims)?)?;
    if end != bytes.len() {
      return None;
    }
    let scales: Vec<f32> =
      bytes[scales_start..rows_start].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if scales.iter().any(|s| !s.is_finite()) {
      return None;
    }
    let body = vocab.strip_suffix('\n')?;
    let mut words = HashMap::with_capacity_and_hasher(rows_n, Fx::default());
    let mut continuations = HashMap::with_capacity_and_hasher(rows_n / 4, Fx::default());
    let (mut max_word_chars, mut max_continuation_chars) = (0, 0);
    let mut count = 0usize;
    for (id, token) in body.split('\n').enumerate() {
      if token.is_empty() || token.chars().any(char::is_whitespace) {
        return None;
      }
      let id = u32::try_from(id).ok()?;
      // Repeated entries: the last wins (as a Python dict built in row order).
      words.insert(token, id);
      max_word_chars = max_word_chars.max(token.chars().count());
      if let Some(rest) = token.strip_prefix("##") {
        continuations.insert(rest, id);
        max_continuation_chars = max_continuation_chars.max(rest.chars().count());
      }
      count += 1;
    }
    if count != rows_n {
      return None;
    }
    Some(Table {
      dims,
      scales,
      rows: &bytes[rows_start..end],
      words,
      continuations,
      max_word_chars,
      max_continuation_chars,
    })
  }

  /// The token ids (row numbers) of `text`, in order (the tokenizer parity tests read them).
  #[cfg(test)]
  pub fn token_ids(&self, text: &str) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut bounds = Vec::new();
    for_each_word(text, |word| self.word_pieces(word, &mut bounds, &mut ids));
    ids
  }

  /// Whether `text` has a word the table knows whole (one vocabulary entry, not assembled from
  /// sub-word pieces) of at least two characters that is not `is_stop(word)`: a sign that it says
  /// something in words the model knows, rather than being fragments (`xyzzy`, `w123`), single
  /// letters or filler, whose pooled vectors are noise.
  pub fn has_content_word(&self, text: &str, is_stop: impl Fn(&str) -> bool) -> bool {
    let mut found = false;
    for_each_word(text, |word| {
      found = found || (word.chars().nth(1).is_some() && self.words.contains_key(word) && !is_stop(word));
    });
    found
  }

  /// The unit vector of `text`: the mean of its tokens' rows, L2-normalised; `None` without tokens.
  pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
    let mut sum = vec![0f32; self.dims];
    let mut any = false;
    let mut bounds = Vec::new();
    let mut ids = Vec::new();
    for_each_word(text, |word| {
      ids.clear();
      self.word_pieces(word, &mut bounds, &mut ids);
      for &id in &ids {
        self.add_row(id, &mut sum);
        any = true;
      }
    });
    if !any {
      return None;
    }
    let norm = dot(&sum, &sum).sqrt();
    if !norm.is_finite() || norm <= 0.0 {
      return None;
    }
    for x in &mut sum {
      *x /= norm;
    }
    Some(sum)
  }

  /// Adds the dequantised row `id` to `sum`.
  fn add_row(&self, id: u32, sum: &mut [f32]) {
    let id = id as usize;
    let (Some(&scale), Some(row)) = (self.scales.get(id), self.rows.get(id * self.dims..(id + 1) * self.dims)) else {
      return;
    };
    for (s, &q) in sum.iter_mut().zip(row) {
      *s += f32::from(q as i8) * scale;
    }
  }

  /// WordPiece: appends the pieces of one word, or nothing if some part of it matches no piece.
  fn word_pieces(&self, word: &str, bounds: &mut Vec<usize>, out: &mut Vec<u32>) {
    bounds.clear();
    bounds.extend(word.char_indices().map(|(i, _)| i));
    let n = bounds.len();
    if n == 0 || n > MAX_WORD_CHARS {
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
        return;
      };
      out.push(id);
      start = end;
    }
  }
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

/// The words of `text` as `for_each_word` gives them (the tokenizer parity tests read them).
#[cfg(test)]
pub fn basic_words(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  for_each_word(text, |w| out.push(w.to_string()));
  out
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
    let parts = if s % T_COUNT == 0 { &jamo[..2] } else { &jamo[..] };
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

#[cfg(test)]
mod tests;
