//! The sentence model, run by the addon: all-MiniLM-L6-v2 (`embeddings/README.md`), a 6-layer BERT
//! encoder with int8 weights, evaluated here in plain Rust (no runtime, download, GPU or Python) —
//! or, opted into (`Kind::Large`), all-mpnet-base-v2: 12 MPNet layers, the same pass plus MPNet's
//! relative attention bias. A text's vector is the mean of the last layer's token states,
//! L2-normalised, as sentence-transformers computes it.
//!
//! The model file ("CCBERT01", format at the top of `scripts/embeddings/quantize_model.py`) is read
//! once per process from the package `@codecall/native-data`, found from the `.node`'s own place
//! (or `CODECALL_EMBEDDINGS_PATH`; `model_places`), and parsed on first use. A missing or damaged
//! file turns the semantic signal off; nothing in it can panic the reader: every length is checked
//! before it is used.
//!
//! | file           | owns                                                                |
//! |----------------|---------------------------------------------------------------------|
//! | `tokenizer.rs` | BERT's basic tokenizer and WordPiece, `[CLS] … [SEP]` with a cap    |
//! | `kernel.rs`    | the int8 linear layer (AVX2 + FMA at run time, portable otherwise)   |
//! | `pool.rs`      | embedding tools on background threads, the vector caches, `ready`   |
//! | `disk.rs`      | the vector cache of a cache directory (`cacheDir`)                  |
//! | this file      | the file, its parser, and the forward pass                          |

mod disk;
mod kernel;
pub mod pool;
mod tokenizer;
mod unicode;

use std::{path::PathBuf, sync::OnceLock};

use kernel::Linear;
pub use tokenizer::Vocab;

use super::score::{Fusion, MINILM, MPNET};

/// A text's unit vector (shared between the caches and the indexes).
pub type Vector = std::sync::Arc<[f32]>;

/// The model file's name, in the package `@codecall/native-data`.
pub const MODEL_FILE: &str = "all-minilm-l6-v2.i8.bin";
/// Names the model file to read instead of looking next to the addon.
pub const ENV_MODEL_PATH: &str = "CODECALL_EMBEDDINGS_PATH";
/// The opt-in large model's file, in the package `@codecall/native-data-large`.
pub const LARGE_MODEL_FILE: &str = "all-mpnet-base-v2.i8.bin";
/// Names the large model's file to read instead of looking for its package.
pub const ENV_LARGE_MODEL_PATH: &str = "CODECALL_EMBEDDINGS_LARGE_PATH";
const MAGIC: &[u8; 8] = b"CCBERT01";

/// Which sentence model an index uses: the default one (all-MiniLM-L6-v2, in every install) or the
/// opt-in large one (all-mpnet-base-v2, in its own optional package: about 5 times the file and
/// 7 times the work per text, for better rankings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kind {
  #[default]
  Default,
  Large,
}

impl Kind {
  /// Its file's name.
  pub fn file(self) -> &'static str {
    match self {
      Kind::Default => MODEL_FILE,
      Kind::Large => LARGE_MODEL_FILE,
    }
  }

  /// The variable that names its file.
  pub fn env(self) -> &'static str {
    match self {
      Kind::Default => ENV_MODEL_PATH,
      Kind::Large => ENV_LARGE_MODEL_PATH,
    }
  }

  /// The npm package that holds its file (scope, name).
  fn package(self) -> [&'static str; 2] {
    match self {
      Kind::Default => DATA_PACKAGE,
      Kind::Large => ["@codecall", "native-data-large"],
    }
  }

  /// Larger files are not read (ours are about 23 MB and 110 MB).
  fn max_bytes(self) -> u64 {
    match self {
      Kind::Default => 64 << 20,
      Kind::Large => 192 << 20,
    }
  }
}
/// A text is cut to this many tokens, `[CLS]` and `[SEP]` included: a tool's most telling words
/// come first (`semantic::tool_text`), and the cost grows with every token.
pub const TOKEN_CAP: usize = 128;

/// Why there is no model: the semantic signal is then off (the bindings say so once, as a Node
/// warning).
#[derive(Debug)]
pub enum ModelError {
  /// No file of this model in any of these places.
  NotFound(Kind, Vec<PathBuf>),
  Read(PathBuf, std::io::Error),
  TooLarge(PathBuf, u64),
  /// Not a "CCBERT01" model, or a damaged one: what is wrong.
  Invalid(PathBuf, &'static str),
}

impl std::fmt::Display for ModelError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::NotFound(kind, places) if places.is_empty() => {
        let (file, env) = (kind.file(), kind.env());
        write!(f, "no {file} found (the addon could not find its own file; set {env})")
      }
      Self::NotFound(kind, places) => {
        let places: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
        let (file, env) = (kind.file(), kind.env());
        let [scope, name] = kind.package();
        let install = if *kind == Kind::Large { format!("install {scope}/{name}, ") } else { String::new() };
        write!(f, "no {file} found (looked in {}; {install}or set {env})", places.join(", "))
      }
      Self::Read(path, error) => write!(f, "{} could not be read: {error}", path.display()),
      Self::TooLarge(path, len) => write!(f, "{} is {len} bytes, too large for a model file", path.display()),
      Self::Invalid(path, why) => write!(f, "{} is not a valid model file: {why}", path.display()),
    }
  }
}

impl std::error::Error for ModelError {}

/// The model, read and parsed on first use; `None` if there is none (the signal is then off).
pub fn model(kind: Kind) -> Option<&'static Model> {
  model_status(kind).ok()
}

fn slot(kind: Kind) -> &'static OnceLock<Result<Model, ModelError>> {
  static DEFAULT: OnceLock<Result<Model, ModelError>> = OnceLock::new();
  static LARGE: OnceLock<Result<Model, ModelError>> = OnceLock::new();
  match kind {
    Kind::Default => &DEFAULT,
    Kind::Large => &LARGE,
  }
}

/// The model, or why there is none.
pub fn model_status(kind: Kind) -> Result<&'static Model, &'static ModelError> {
  slot(kind).get_or_init(|| read_model(kind, model_places(kind))).as_ref()
}

/// Why there is no model, as far as is known without reading the file: a file that was read and
/// refused, or no file in any place. `None` while it may still turn out fine.
pub fn known_problem(kind: Kind) -> Option<String> {
  match slot(kind).get() {
    Some(Err(e)) => Some(e.to_string()),
    Some(Ok(_)) => None,
    None => {
      let places = model_places(kind);
      if places.iter().any(|p| p.exists()) {
        None
      } else {
        Some(ModelError::NotFound(kind, places).to_string())
      }
    }
  }
}

/// Reads and parses the model on a background thread, so the first `upsert` does not wait for it.
pub fn warm(kind: Kind) {
  static STARTED: [std::sync::Once; 2] = [std::sync::Once::new(), std::sync::Once::new()];
  STARTED[kind as usize].call_once(|| {
    // A failed spawn only means the first use loads it.
    let _ = std::thread::Builder::new().name("codecall-model".into()).spawn(move || {
      let _ = model_status(kind);
    });
  });
}

/// The first of `places` that exists, read and parsed.
fn read_model(kind: Kind, places: Vec<PathBuf>) -> Result<Model, ModelError> {
  use std::io::Read;
  for path in &places {
    let file = match std::fs::File::open(path) {
      Ok(file) => file,
      Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
      Err(e) => return Err(ModelError::Read(path.clone(), e)),
    };
    let metadata = file.metadata().map_err(|e| ModelError::Read(path.clone(), e))?;
    if !metadata.is_file() {
      return Err(ModelError::Invalid(path.clone(), "not a file"));
    }
    let len = metadata.len();
    if len > kind.max_bytes() {
      return Err(ModelError::TooLarge(path.clone(), len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(kind.max_bytes() + 1).read_to_end(&mut bytes).map_err(|e| ModelError::Read(path.clone(), e))?;
    return Model::parse(&bytes).map_err(|why| ModelError::Invalid(path.clone(), why));
  }
  Err(ModelError::NotFound(kind, places))
}

/// Where the model may be, in order: `CODECALL_EMBEDDINGS_PATH` (alone, if set); next to the
/// `.node`; under `src/search/embeddings/` beside it (a source checkout after `npm run build`); the
/// data package `@codecall/native-data` as Node would find it from the `.node`'s own directory
/// (`package_places`); in a debug or test build, also this crate's source tree (`cargo test`,
/// whose executable is no `.node`). A release build names no path of the machine that built it.
/// The large model's places are the same with its own file, variable and package.
fn model_places(kind: Kind) -> Vec<PathBuf> {
  places_for(kind, std::env::var_os(kind.env()), crate::common::addon_path().as_deref())
}

/// `model_places` for a given variable and `.node` path (the tests give both).
fn places_for(kind: Kind, env: Option<std::ffi::OsString>, addon: Option<&std::path::Path>) -> Vec<PathBuf> {
  if let Some(path) = env.filter(|p| !p.is_empty()) {
    return vec![PathBuf::from(path)];
  }
  let in_tree = std::path::Path::new("src").join("search").join("embeddings").join(kind.file());
  let mut places = Vec::new();
  if let Some(dir) = addon.and_then(std::path::Path::parent) {
    places.push(dir.join(kind.file()));
    places.push(dir.join(&in_tree));
    places.extend(package_places(kind, dir));
  }
  #[cfg(any(debug_assertions, test))]
  places.push(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(in_tree));
  places
}

/// The package holding the model, named by the platform packages' `dependencies`.
const DATA_PACKAGE: [&str; 2] = ["@codecall", "native-data"];

/// Where Node's `require` would find `@codecall/native-data` from the `.node`'s directory: from its
/// real directory D (symlinks resolved, so pnpm's `.pnpm/<pkg>@<v>/node_modules/` is the one
/// walked) up, `A/node_modules/@codecall/native-data/` for each ancestor A of D, D first, that is
/// not itself a `node_modules`. That covers npm's hoisted and nested layouts, pnpm's sibling link
/// and Yarn's node-modules linker. Only paths under the `.node`'s own ancestors: never the cwd or
/// `NODE_PATH`, where another project's file could stand in. Yarn PnP has no such directory (set
/// `CODECALL_EMBEDDINGS_PATH`).
fn package_places(kind: Kind, dir: &std::path::Path) -> Vec<PathBuf> {
  let [scope, name] = kind.package();
  let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
  if !real.is_absolute() {
    // A relative path would be read from the cwd.
    return Vec::new();
  }
  real
    .ancestors()
    .filter(|a| a.file_name().is_some_and(|name| name != "node_modules") || a.parent().is_none())
    .map(|a| a.join("node_modules").join(scope).join(name).join(kind.file()))
    .collect()
}

/// A LayerNorm's parameters.
struct Norm {
  gamma: Vec<f32>,
  beta: Vec<f32>,
}

/// One encoder layer.
struct Layer {
  /// Q, K and V in one matrix (Q's rows and bias already scaled by 1/√head_dim).
  qkv: Linear,
  out: Linear,
  ln1: Norm,
  ffn1: Linear,
  ffn2: Linear,
  ln2: Norm,
}

/// A parsed model.
pub struct Model {
  pub vocab: Vocab,
  hidden: usize,
  heads: usize,
  positions: usize,
  eps: f32,
  /// `vocab × hidden` int8 token embeddings and their row scales.
  words: Vec<i8>,
  word_scales: Vec<f32>,
  /// `positions × hidden`, token type 0 folded in.
  pos: Vec<f32>,
  emb_ln: Norm,
  /// MPNet's relative attention bias (`None` for BERT).
  relative: Option<Relative>,
  layers: Vec<Layer>,
  /// The fusion constants that fit this model's cosines.
  pub fusion: Fusion,
  /// FNV-1a of the whole file: vectors cached under another model are not this model's.
  pub fingerprint: u64,
}

/// MPNet's relative position bias: `table[bucket × heads + head]` is added to every layer's
/// attention score of query token i and key token j, at `bucket = bucket(j − i)`
/// ([`relative_bucket`]).
struct Relative {
  buckets: usize,
  max_distance: usize,
  table: Vec<f32>,
}

impl Relative {
  /// The bias of each head at each offset j − i of a `t`-token sequence: `[head × (2t − 1) + j − i +
  /// t − 1]`.
  fn by_offset(&self, t: usize, heads: usize) -> Vec<f32> {
    let width = (2 * t).saturating_sub(1);
    let mut bias = vec![0f32; heads * width];
    for offset in 0..width {
      let bucket = relative_bucket(offset as i64 - (t as i64 - 1), self.buckets, self.max_distance);
      for head in 0..heads {
        bias[head * width + offset] = self.table.get(bucket * heads + head).copied().unwrap_or(0.0);
      }
    }
    bias
  }
}

/// transformers' `MPNetEncoder.relative_position_bucket` of `rel = j − i`: half the buckets for
/// keys before the query, half after; in each, distances below a quarter of the buckets exactly,
/// longer ones logarithmically up to `max_distance`, beyond it the last bucket.
fn relative_bucket(rel: i64, buckets: usize, max_distance: usize) -> usize {
  let half = buckets / 2;
  let n = -rel;
  let mut bucket = if n < 0 { half } else { 0 };
  let n = n.unsigned_abs() as usize;
  let exact = half / 2;
  if n < exact {
    bucket += n;
  } else {
    // Computed in f32 as transformers does (`n.float() / max_exact`, then truncated toward zero).
    let scaled =
      ((n as f32 / exact as f32).ln() / (max_distance as f32 / exact as f32).ln() * (half - exact) as f32) as usize;
    bucket += (exact + scaled).min(half - 1);
  }
  bucket
}

/// Reads a model file's fields in order, checking every length.
struct Reader<'a> {
  bytes: &'a [u8],
  at: usize,
}

impl<'a> Reader<'a> {
  fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
    let end = self.at.checked_add(n).ok_or("a length overflows")?;
    let part = self.bytes.get(self.at..end).ok_or("the file is shorter than its header says")?;
    self.at = end;
    Ok(part)
  }

  fn u32(&mut self) -> Result<usize, &'static str> {
    let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| "a length field is cut")?;
    usize::try_from(u32::from_le_bytes(b)).map_err(|_| "a length does not fit")
  }

  fn i8s(&mut self, n: usize) -> Result<Vec<i8>, &'static str> {
    Ok(self.take(n)?.iter().map(|&b| b as i8).collect())
  }

  fn f32s(&mut self, n: usize) -> Result<Vec<f32>, &'static str> {
    let bytes = self.take(n.checked_mul(4).ok_or("a length overflows")?)?;
    let v: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if v.iter().any(|x| !x.is_finite()) {
      return Err("a parameter is not a finite number");
    }
    Ok(v)
  }

  fn linear(&mut self, rows: usize, cols: usize) -> Result<Linear, &'static str> {
    let weights = self.i8s(rows.checked_mul(cols).ok_or("a length overflows")?)?;
    Ok(Linear { rows, cols, weights, scales: self.f32s(rows)?, bias: self.f32s(rows)? })
  }

  fn norm(&mut self, n: usize) -> Result<Norm, &'static str> {
    Ok(Norm { gamma: self.f32s(n)?, beta: self.f32s(n)? })
  }
}

impl Model {
  /// Validates and parses a model file.
  pub fn parse(bytes: &[u8]) -> Result<Model, &'static str> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(8).ok() != Some(&MAGIC[..]) {
      return Err("it does not start with CCBERT01");
    }
    let meta_len = r.u32()?;
    let meta: serde_json::Value = serde_json::from_slice(r.take(meta_len)?).map_err(|_| "its header is not JSON")?;
    let field = |name: &str, max: u64| -> Result<usize, &'static str> {
      let v = meta.get(name).and_then(serde_json::Value::as_u64).ok_or("a header field is missing")?;
      if v == 0 || v > max {
        return Err("a header field is out of range");
      }
      usize::try_from(v).map_err(|_| "a header field is out of range")
    };
    let (layers, hidden, heads) = (field("layers", 48)?, field("hidden", 4096)?, field("heads", 64)?);
    let text = |name: &str, default: &'static str| -> Result<String, &'static str> {
      match meta.get(name) {
        None => Ok(default.to_string()),
        Some(v) => v.as_str().map(str::to_string).ok_or("a header field is not text"),
      }
    };
    let mpnet = match text("arch", "bert")?.as_str() {
      "bert" => false,
      "mpnet" => true,
      _ => return Err("its architecture is neither bert nor mpnet"),
    };
    let specials = [text("unk", tokenizer::UNK)?, text("cls", tokenizer::CLS)?, text("sep", tokenizer::SEP)?];
    let (ffn, positions, vocab_size) = (field("ffn", 16384)?, field("positions", 4096)?, field("vocab_size", 1 << 20)?);
    let eps = meta.get("ln_eps").and_then(serde_json::Value::as_f64).ok_or("a header field is missing")? as f32;
    if hidden % heads != 0 || hidden % 8 != 0 || ffn % 8 != 0 || !(eps > 0.0 && eps < 1.0) {
      return Err("the header's shapes do not fit together");
    }
    let vocab_len = r.u32()?;
    let vocab = std::str::from_utf8(r.take(vocab_len)?).map_err(|_| "its vocabulary is not UTF-8")?;
    let tokens: Vec<&str> = vocab.strip_suffix('\n').ok_or("its vocabulary is cut")?.split('\n').collect();
    if tokens.len() != vocab_size {
      return Err("its vocabulary has another size than the header says");
    }
    let vocab = Vocab::with_specials(tokens, [&specials[0], &specials[1], &specials[2]])
      .ok_or("its vocabulary is malformed or lacks its unknown, start or end token")?;
    r.take((64 - r.at % 64) % 64)?;
    let words = r.i8s(vocab_size.checked_mul(hidden).ok_or("a length overflows")?)?;
    let word_scales = r.f32s(vocab_size)?;
    let pos = r.f32s(positions.checked_mul(hidden).ok_or("a length overflows")?)?;
    let emb_ln = r.norm(hidden)?;
    let relative = if mpnet {
      let (buckets, max_distance) = (field("rel_buckets", 1024)?, field("rel_max_distance", 1 << 16)?);
      if buckets < 4 || buckets % 4 != 0 {
        return Err("its relative position buckets are not a multiple of 4");
      }
      Some(Relative { buckets, max_distance, table: r.f32s(buckets.checked_mul(heads).ok_or("a length overflows")?)? })
    } else {
      None
    };
    let mut stack = Vec::with_capacity(layers);
    for _ in 0..layers {
      stack.push(Layer {
        qkv: r.linear(3 * hidden, hidden)?,
        out: r.linear(hidden, hidden)?,
        ln1: r.norm(hidden)?,
        ffn1: r.linear(ffn, hidden)?,
        ffn2: r.linear(hidden, ffn)?,
        ln2: r.norm(hidden)?,
      });
    }
    if r.at != bytes.len() {
      return Err("bytes follow the last layer");
    }
    Ok(Model {
      vocab,
      hidden,
      heads,
      positions,
      eps,
      words,
      word_scales,
      pos,
      emb_ln,
      relative,
      layers: stack,
      fusion: if mpnet { MPNET } else { MINILM },
      fingerprint: fnv1a64(0xcbf2_9ce4_8422_2325, bytes),
    })
  }

  /// The length of its vectors.
  pub fn dims(&self) -> usize {
    self.hidden
  }

  /// The token ids of `text`, cut to `cap` (and to the model's positions).
  pub fn encode(&self, text: &str, cap: usize) -> Vec<u32> {
    let cap = cap.min(self.positions);
    // About four characters per token: reading far past the cap only costs time.
    let cut = text.char_indices().nth(cap.saturating_mul(32)).map_or(text.len(), |(i, _)| i);
    self.vocab.encode(&text[..cut], cap)
  }

  /// The unit vector of `text` (cut to [`TOKEN_CAP`] tokens).
  pub fn embed(&self, text: &str) -> Vec<f32> {
    let ids = self.encode(text, TOKEN_CAP);
    self.embed_batch(&[ids]).pop().unwrap_or_default()
  }

  /// The unit vectors of the token sequences `seqs` (from [`Model::encode`]), computed together:
  /// one pass of every linear layer over all their tokens. Each vector is bit-identical to the
  /// sequence's alone.
  pub fn embed_batch(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
    #[cfg(target_arch = "x86_64")]
    match kernel::kernel() {
      // SAFETY: the CPU has AVX-512 F + DQ, AVX2 and FMA (`kernel()` checked them).
      kernel::Kernel::Avx512 => return unsafe { self.embed_batch_avx512(seqs) },
      // SAFETY: the CPU has AVX2 and FMA (`kernel()` checked them).
      kernel::Kernel::Avx2 => return unsafe { self.embed_batch_avx2(seqs) },
      kernel::Kernel::Portable => {}
    }
    self.forward(seqs)
  }

  /// [`Model::forward`] compiled for AVX-512. The same bits as the AVX2 build: the loops keep
  /// their order of additions (Rust never reorders float sums or fuses a multiply-add it was not
  /// asked to), only more of each elementwise loop runs per instruction.
  ///
  /// # Safety
  /// The CPU has AVX-512 F + DQ, AVX2 and FMA.
  #[cfg(target_arch = "x86_64")]
  #[target_feature(enable = "avx2,fma,avx512f,avx512dq")]
  unsafe fn embed_batch_avx512(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
    self.forward(seqs)
  }

  /// [`Model::forward`] compiled for AVX2: the attention, LayerNorm and GELU loops (a third of the
  /// time outside the linear layers) vectorise eight wide.
  ///
  /// # Safety
  /// The CPU has AVX2 and FMA.
  #[cfg(target_arch = "x86_64")]
  #[target_feature(enable = "avx2,fma")]
  unsafe fn embed_batch_avx2(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
    self.forward(seqs)
  }

  #[inline(always)]
  fn forward(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
    let h = self.hidden;
    let n: usize = seqs.iter().map(Vec::len).sum();
    let mut x = vec![0f32; n * h];
    let mut row = 0;
    for seq in seqs {
      for (p, &id) in seq.iter().enumerate().take(self.positions) {
        let id = id as usize;
        let (Some(word), Some(&scale), Some(pos)) =
          (self.words.get(id * h..(id + 1) * h), self.word_scales.get(id), self.pos.get(p * h..(p + 1) * h))
        else {
          continue;
        };
        for ((out, &q), &pv) in x[(row + p) * h..(row + p + 1) * h].iter_mut().zip(word).zip(pos) {
          *out = f32::from(q) * scale + pv;
        }
      }
      row += seq.len();
    }
    layer_norm(&mut x, h, &self.emb_ln, self.eps);
    // MPNet: each sequence's bias, the same in every layer.
    let bias: Vec<Vec<f32>> = self
      .relative
      .as_ref()
      .map_or_else(Vec::new, |rel| seqs.iter().map(|s| rel.by_offset(s.len(), self.heads)).collect());
    let (mut qkv, mut ctx, mut tmp, mut ffn) = (Vec::new(), vec![0f32; n * h], Vec::new(), Vec::new());
    for layer in &self.layers {
      layer.qkv.apply(&x, &mut qkv);
      self.attention(seqs, &bias, &qkv, &mut ctx);
      layer.out.apply(&ctx, &mut tmp);
      add_into(&mut tmp, &x);
      layer_norm(&mut tmp, h, &layer.ln1, self.eps);
      std::mem::swap(&mut x, &mut tmp);
      layer.ffn1.apply(&x, &mut ffn);
      ffn.iter_mut().for_each(|v| *v = gelu(*v));
      layer.ffn2.apply(&ffn, &mut tmp);
      add_into(&mut tmp, &x);
      layer_norm(&mut tmp, h, &layer.ln2, self.eps);
      std::mem::swap(&mut x, &mut tmp);
    }
    let mut out = Vec::with_capacity(seqs.len());
    let mut row = 0;
    for seq in seqs {
      let mut v = vec![0f32; h];
      for r in row..row + seq.len() {
        for (s, &xv) in v.iter_mut().zip(&x[r * h..(r + 1) * h]) {
          *s += xv;
        }
      }
      row += seq.len();
      let norm = dot(&v, &v).sqrt();
      if norm.is_finite() && norm > 0.0 {
        v.iter_mut().for_each(|a| *a /= norm);
      }
      out.push(v);
    }
    out
  }

  /// Self-attention of each sequence over its own tokens, head by head: `ctx = softmax(q·kᵀ)·v`
  /// (q is already scaled).
  #[inline(always)]
  fn attention(&self, seqs: &[Vec<u32>], biases: &[Vec<f32>], qkv: &[f32], ctx: &mut [f32]) {
    let h = self.hidden;
    let d = h / self.heads;
    let mut scores = Vec::new();
    // Heads of a width in eights (every model's) score eight keys side by side.
    let transposed = d.is_multiple_of(8);
    let mut keys = Vec::new();
    let mut start = 0;
    for (k, seq) in seqs.iter().enumerate() {
      let t = seq.len();
      let bias = biases.get(k).map_or(&[][..], Vec::as_slice);
      for head in 0..self.heads {
        let key = |j: usize| &qkv[(start + j) * 3 * h + h + head * d..][..d];
        if transposed {
          transpose_keys(&mut keys, t, d, key);
        }
        for i in 0..t {
          let q = &qkv[(start + i) * 3 * h + head * d..][..d];
          // Plain loops, not `extend`: `Vec::extend` is not inlined, so its closure would run
          // compiled for the baseline CPU (SSE2) instead of this pass's AVX2 / AVX-512 build.
          scores.clear();
          scores.resize(t, 0.0);
          if transposed {
            dots_transposed(q, &keys, &mut scores);
          } else {
            for (j, s) in scores.iter_mut().enumerate() {
              *s = dot(q, key(j));
            }
          }
          if !bias.is_empty() {
            // Offsets j − i for j = 0..t start at t − 1 − i.
            let row = &bias[head * (2 * t - 1) + (t - 1 - i)..][..t];
            scores.iter_mut().zip(row).for_each(|(s, b)| *s += b);
          }
          let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
          scores.iter_mut().for_each(|s| *s = exp(*s - max));
          let total: f32 = scores.iter().sum();
          let out = &mut ctx[(start + i) * h + head * d..][..d];
          let value = |j: usize| &qkv[(start + j) * 3 * h + 2 * h + head * d..][..d];
          if d == HEAD {
            // MiniLM's heads: the sum stays in registers.
            let mut acc = [0f32; HEAD];
            for (j, &p) in scores.iter().enumerate() {
              for (o, &vv) in acc.iter_mut().zip(value(j)) {
                *o += p * vv;
              }
            }
            for (o, a) in out.iter_mut().zip(acc) {
              *o = a / total;
            }
          } else {
            out.fill(0.0);
            for (j, &p) in scores.iter().enumerate() {
              for (o, &vv) in out.iter_mut().zip(value(j)) {
                *o += p * vv;
              }
            }
            out.iter_mut().for_each(|o| *o /= total);
          }
        }
      }
      start += t;
    }
  }
}

/// The head width the attention loop is specialised for (MiniLM's: 384 / 12).
const HEAD: usize = 32;

#[inline(always)]
fn add_into(y: &mut [f32], x: &[f32]) {
  for (a, &b) in y.iter_mut().zip(x) {
    *a += b;
  }
}

/// LayerNorm of each `h`-wide row of `x`, in place.
#[inline(always)]
fn layer_norm(x: &mut [f32], h: usize, norm: &Norm, eps: f32) {
  for row in x.chunks_exact_mut(h) {
    let mean = sum(row) / h as f32;
    row.iter_mut().for_each(|v| *v -= mean);
    let inv = 1.0 / (dot(row, row) / h as f32 + eps).sqrt();
    for ((v, &g), &b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
      *v = *v * inv * g + b;
    }
  }
}

/// BERT's exact GELU, `x·Φ(x)`, with the Abramowitz–Stegun 7.1.26 erf (|error| < 1.5e-7; vectors
/// indistinguishable from the exact erf's).
#[inline(always)]
fn gelu(x: f32) -> f32 {
  0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
fn erf(x: f32) -> f32 {
  let (a1, a2, a3, a4, a5, p) = (0.254_829_6, -0.284_496_74, 1.421_413_7, -1.453_152_1, 1.061_405_4, 0.327_591_1);
  let ax = x.abs();
  let t = 1.0 / (1.0 + p * ax);
  let y = 1.0 - ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
  y.copysign(x)
}

/// `e^x` in plain arithmetic (no libm call), so loops over it vectorise: `2^n · p(r)` with
/// `x = n·ln 2 + r`, |r| ≤ ln2/2, and a degree-6 polynomial (relative error < 2e-7). Below −87 it
/// is 0; above 88 it saturates (softmax and GELU never go there).
#[inline(always)]
fn exp(x: f32) -> f32 {
  let x = x.clamp(-87.0, 88.0);
  // Round to nearest by the 1.5·2²³ trick (`round()` is a libm call on baseline x86-64).
  const MAGIC: f32 = 12_582_912.0;
  let n = (x * std::f32::consts::LOG2_E + MAGIC) - MAGIC;
  // ln 2 in two parts, so `r` keeps its precision.
  let r = (x - n * 0.693_145_75) - n * 1.428_606_8e-6;
  let p =
    1.0 + r * (1.0 + r * (0.5 + r * (0.166_666_67 + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
  p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// FNV-1a, 64 bits, continuing from `hash` (stable across Rust versions and machines, unlike
/// `DefaultHasher`): cache keys.
pub fn fnv1a64(mut hash: u64, bytes: &[u8]) -> u64 {
  for &b in bytes {
    hash ^= u64::from(b);
    hash = hash.wrapping_mul(0x0100_0000_01b3);
  }
  hash
}

/// The sum of `a`, in eight lanes (so it vectorises, like [`dot`]).
#[inline(always)]
fn sum(a: &[f32]) -> f32 {
  let mut acc = [0f32; 8];
  let chunks = a.chunks_exact(8);
  let tail: f32 = chunks.remainder().iter().sum();
  for c in chunks {
    for (s, x) in acc.iter_mut().zip(c) {
      *s += x;
    }
  }
  acc.iter().sum::<f32>() + tail
}

/// The keys of one head in blocks of eight, each block component by component
/// (`keys[(b·d + c)·8 + x]` = component `c` of key `8b + x`; a last block's missing keys are 0),
/// for [`dots_transposed`].
#[inline(always)]
fn transpose_keys<'a>(keys: &mut Vec<f32>, t: usize, d: usize, key: impl Fn(usize) -> &'a [f32]) {
  keys.clear();
  keys.resize(t.div_ceil(8) * d * 8, 0.0);
  for (b, block) in keys.chunks_exact_mut(d * 8).enumerate() {
    for x in 0..8.min(t - 8 * b) {
      for (c, &v) in key(8 * b + x).iter().enumerate() {
        block[c * 8 + x] = v;
      }
    }
  }
}

/// `scores[j] = dot(q, key j)` for every key, bit for bit as [`dot`] sums it (lane `l` adds the
/// products of components `l, l + 8, …` in turn, then the lanes are added in order), eight keys
/// side by side: `keys` from [`transpose_keys`], `q.len()` a multiple of 8.
#[inline(always)]
fn dots_transposed(q: &[f32], keys: &[f32], scores: &mut [f32]) {
  let d = q.len();
  for (out, block) in scores.chunks_mut(8).zip(keys.chunks_exact(d * 8)) {
    let mut lanes = [[0f32; 8]; 8];
    for (qs, group) in q.chunks_exact(8).zip(block.chunks_exact(64)) {
      for ((acc, &qc), row) in lanes.iter_mut().zip(qs).zip(group.chunks_exact(8)) {
        for (a, &kv) in acc.iter_mut().zip(row) {
          *a += qc * kv;
        }
      }
    }
    let mut total = lanes[0];
    for acc in &lanes[1..] {
      for (s, a) in total.iter_mut().zip(acc) {
        *s += a;
      }
    }
    out.copy_from_slice(&total[..out.len()]);
  }
}

/// The dot product of two vectors of the same length (the cosine of two unit vectors).
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
  let mut acc = [0f32; 8];
  let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
  let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
  // Eight independent sums over fixed-size chunks, so the compiler can keep them in SIMD registers.
  for (x, y) in a8.zip(b8) {
    for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
      *s += x * y;
    }
  }
  acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests;
