//! The model against its Python reference (`scripts/embeddings/model_int8.py`, whose tokenizer
//! is the model's own `tokenizer.json`): token ids, vectors, the published vector of
//! sentence-transformers; the parser's refusals; batch invariance.
#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: a failed setup should fail loudly

use super::*;

/// (text, basic words), from `evaluate.py`'s `basic_tokenize` (`tokenizer_cases.py`).
#[rustfmt::skip]
const WORDS: &[(&str, &[&str])] = &[
  ("Create a new issue in a GitHub repository", &["create", "a", "new", "issue", "in", "a", "github", "repository"]),
  ("Caf\u{e9} na\u{ef}ve r\u{e9}sum\u{e9} \u{2014} \u{6771}\u{4eac} \u{e9}migr\u{e9}\u{200b} tab\u{9}here", &["cafe", "naive", "resume", "\u{2014}", "\u{6771}", "\u{4eac}", "emigre", "tab", "here"]),
  ("don't stop_now:camelCase", &["don", "'", "t", "stop", "_", "now", ":", "camelcase"]),
  ("\u{3a3}\u{38a}\u{3a3}\u{3a5}\u{3a6}\u{39f}\u{3a3} \u{130}stanbul \u{fb01}le \u{c5}", &["\u{3c3}\u{3b9}\u{3c3}\u{3c5}\u{3c6}\u{3bf}\u{3c2}", "istanbul", "\u{fb01}le", "a"]),
  ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ok", &["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "ok"]),
  ("getUserProfile(id) \u{2192} {name}", &["getuserprofile", "(", "id", ")", "\u{2192}", "{", "name", "}"]),
  ("\u{c548}\u{b155}\u{d558}\u{c138}\u{c694} \u{c138}\u{acc4}", &["\u{110b}\u{1161}\u{11ab}\u{1102}\u{1167}\u{11bc}\u{1112}\u{1161}\u{1109}\u{1166}\u{110b}\u{116d}", "\u{1109}\u{1166}\u{1100}\u{1168}"]),
  ("weather forecast for tomorrow", &["weather", "forecast", "for", "tomorrow"]),
  ("\u{0}\u{fffd}\u{ad} soft\u{ad}hyphen", &["softhyphen"]),
  ("\u{bf}Qu\u{e9} tal? \u{ab}\u{c7}a va\u{bb} 50% off\u{2026} 3.14", &["\u{bf}", "que", "tal", "?", "\u{ab}", "ca", "va", "\u{bb}", "50", "%", "off", "\u{2026}", "3", ".", "14"]),
];

/// The shipped model's bytes, compiled into the test binary.
static MODEL_BYTES: &[u8] = include_bytes!("../embeddings/all-minilm-l6-v2.i8.bin");

fn shipped() -> &'static Model {
  model_status(Kind::Default).map_err(|e| e.to_string()).expect("the model in the source tree parses")
}

fn words_of(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  tokenizer::for_each_word(text, |w| out.push(w.to_string()));
  out
}

#[test]
fn unicode_tables_are_sorted() {
  use super::unicode::{CLASSES, DECOMPOSED, UNICODE_VERSION};
  assert!(CLASSES.windows(2).all(|w| w[0].1 < w[1].0) && CLASSES.iter().all(|r| r.0 <= r.1));
  assert!(DECOMPOSED.windows(2).all(|w| w[0].0 < w[1].0));
  assert_eq!(UNICODE_VERSION, "14.0.0");
}

#[test]
fn basic_tokenizer_matches_python() {
  for (text, words) in WORDS {
    assert_eq!(words_of(text), *words, "{text:?}");
  }
}

struct Reference {
  text: String,
  ids: Vec<u32>,
  int8: Vec<f32>,
  f32_first8: Vec<f32>,
}

fn references() -> Vec<Reference> {
  let json: serde_json::Value =
    serde_json::from_str(include_str!("../../../scripts/embeddings/model_reference.json")).expect("json");
  let nums =
    |v: &serde_json::Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
  json
    .as_array()
    .unwrap()
    .iter()
    .map(|r| {
      assert_eq!(r["cap"].as_u64(), Some(TOKEN_CAP as u64));
      Reference {
        text: r["text"].as_str().unwrap().to_string(),
        ids: nums(&r["ids"]).into_iter().map(|x| x as u32).collect(),
        int8: nums(&r["int8"]).into_iter().map(|x| x as f32).collect(),
        f32_first8: nums(&r["f32_first8"]).into_iter().map(|x| x as f32).collect(),
      }
    })
    .collect()
}

#[test]
fn token_ids_and_vectors_match_the_python_reference() {
  let model = shipped();
  let refs = references();
  assert!(refs.len() >= 10);
  for r in &refs {
    assert_eq!(model.encode(&r.text, TOKEN_CAP), r.ids, "{:?}", r.text);
    let v = model.embed(&r.text);
    assert_eq!(v.len(), r.int8.len());
    let cos = dot(&v, &r.int8);
    assert!(cos > 0.99999, "{:?}: cos {cos} to the int8 reference", r.text);
    for (a, b) in v.iter().zip(&r.int8) {
      assert!((a - b).abs() < 2e-4, "{:?}: {a} vs {b}", r.text);
    }
    // And close to the f32 model (the quantisation's cost).
    for (a, b) in v.iter().zip(&r.f32_first8) {
      assert!((a - b).abs() < 0.02, "{:?}: {a} vs f32 {b}", r.text);
    }
  }
}

#[test]
fn the_published_vector_of_sentence_transformers() {
  // all-MiniLM-L6-v2's model card: "This is an example sentence" starts 0.0677, 0.0635, 0.0487, 0.0793.
  let v = shipped().embed("This is an example sentence");
  for (a, b) in v.iter().zip([0.067_656_9, 0.063_495_9, 0.048_713_1, 0.079_305_0]) {
    assert!((a - b).abs() < 5e-3, "{a} vs {b}");
  }
  assert!((dot(&v, &v) - 1.0).abs() < 1e-5);
}

#[test]
fn special_tokens_unknown_words_and_the_cap() {
  let m = shipped();
  assert_eq!(m.encode("", TOKEN_CAP), [101, 102]);
  // A word over 100 characters is one [UNK]; so is a word no piece matches.
  assert_eq!(m.encode(&"x".repeat(120), TOKEN_CAP), [101, 100, 102]);
  let long = "word ".repeat(1000);
  let ids = m.encode(&long, TOKEN_CAP);
  assert_eq!(ids.len(), TOKEN_CAP);
  assert_eq!((ids[0], ids[TOKEN_CAP - 1]), (101, 102));
  assert_eq!(m.encode(&long, 5).len(), 5);
  assert_eq!(m.encode(&long, 0), [101, 102]);
  // Far more text than the cap needs is not read whole (a 4 MB text costs no more than a page).
  let huge = "a".repeat(4 << 20);
  let t0 = std::time::Instant::now();
  assert_eq!(m.encode(&huge, TOKEN_CAP), [101, 100, 102]);
  assert!(t0.elapsed().as_secs() < 5);
}

#[test]
fn a_text_alone_or_packed_gives_the_same_bits() {
  let m = shipped();
  let texts =
    ["list open issues", "memory: create entities. Create multiple new entities", "", "x y z w v u t s r q p o"];
  let seqs: Vec<Vec<u32>> = texts.iter().map(|t| m.encode(t, TOKEN_CAP)).collect();
  let together = m.embed_batch(&seqs);
  for (seq, v) in seqs.iter().zip(&together) {
    assert_eq!(&m.embed_batch(std::slice::from_ref(seq))[0], v);
  }
}

/// The AVX-512 build of the forward pass gives the AVX2 build's bits (the linear kernels' own
/// agreement is `kernel::tests::every_simd_kernel_gives_the_same_bits`), for MiniLM and MPNet,
/// batched past the kernels' widening point and alone.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx512_forward_pass_gives_the_avx2_bits() {
  if kernel::kernel() != kernel::Kernel::Avx512 {
    eprintln!("no AVX-512 kernel on this CPU: nothing to compare");
    return;
  }
  let tiny = Model::parse(include_bytes!("fixtures/tiny-mpnet.bin")).expect("the fixture parses");
  let long = "search the issues of a repository by label, state, author and the words of their titles; ".repeat(4);
  let texts = ["list open issues", "memory: create entities. Create multiple new entities", "", long.as_str()];
  for m in [shipped(), &tiny] {
    let seqs: Vec<Vec<u32>> = texts.iter().map(|t| m.encode(t, TOKEN_CAP)).collect();
    assert!(seqs.iter().map(Vec::len).sum::<usize>() > 24, "the batch takes the widened path");
    // SAFETY: the CPU has AVX-512 F + DQ, AVX2 and FMA (the kernel says so).
    let (wide, narrow) = unsafe { (m.embed_batch_avx512(&seqs), m.embed_batch_avx2(&seqs)) };
    assert_eq!(wide, narrow);
    for (seq, v) in seqs.iter().zip(&wide) {
      // SAFETY: as above.
      assert_eq!(&unsafe { m.embed_batch_avx2(std::slice::from_ref(seq)) }[0], v);
    }
  }
}

#[test]
fn paraphrases_are_closer_than_unrelated_texts() {
  let m = shipped();
  let a = m.embed("store a fact about a person");
  let b = m.embed("memory: create entities. Create multiple new entities in the knowledge graph");
  let c = m.embed("weather forecast for tomorrow in Paris");
  assert!(dot(&a, &b) > dot(&a, &c) + 0.1, "{} vs {}", dot(&a, &b), dot(&a, &c));
}

#[test]
fn a_missing_unreadable_or_damaged_file_is_a_reason_not_a_crash() {
  let dir = std::env::temp_dir().join(format!("codecall-model-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let missing = dir.join("missing.bin");
  let damaged = dir.join("damaged.bin");
  std::fs::write(&damaged, &MODEL_BYTES[..1000]).unwrap();
  let err = read_model(Kind::Default, vec![missing.clone()]).err().expect("missing");
  assert!(matches!(&err, ModelError::NotFound(_, p) if p == std::slice::from_ref(&missing)), "{err}");
  let err = read_model(Kind::Default, vec![missing.clone(), damaged.clone()]).err().expect("damaged");
  assert!(matches!(&err, ModelError::Invalid(p, _) if p == &damaged), "{err}");
  assert!(err.to_string().contains("shorter than its header says"), "{err}");
  let err = read_model(Kind::Default, vec![dir.clone()]).err().expect("directory");
  assert!(matches!(&err, ModelError::Invalid(p, _) if p == &dir), "{err}");
  assert!(ModelError::NotFound(Kind::Default, Vec::new()).to_string().contains("could not find its own file"));
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_files_are_refused() {
  assert!(Model::parse(MODEL_BYTES).is_ok());
  assert!(Model::parse(&[]).is_err());
  assert!(Model::parse(&MODEL_BYTES[..20]).is_err());
  assert!(Model::parse(&MODEL_BYTES[..MODEL_BYTES.len() - 1]).is_err());
  let mut longer = MODEL_BYTES.to_vec();
  longer.push(0);
  assert_eq!(Model::parse(&longer).err(), Some("bytes follow the last layer"));
  let mut bad = MODEL_BYTES.to_vec();
  bad[0] = b'X';
  assert!(Model::parse(&bad).is_err());
  // A NaN in the last LayerNorm's beta.
  let mut nan = MODEL_BYTES.to_vec();
  let n = nan.len();
  nan[n - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
  assert_eq!(Model::parse(&nan).err(), Some("a parameter is not a finite number"));
  // A header that claims huge shapes fails on length, without allocating them.
  let meta_len = u32::from_le_bytes(MODEL_BYTES[8..12].try_into().unwrap()) as usize;
  let meta = std::str::from_utf8(&MODEL_BYTES[12..12 + meta_len]).unwrap();
  for (from, to) in
    [("\"layers\":6", "\"layers\":48"), ("\"hidden\":384", "\"hidden\":380"), ("\"heads\":12", "\"heads\":0")]
  {
    let changed = meta.replace(from, to);
    assert_ne!(changed, meta, "{from}");
    let mut bytes = MODEL_BYTES[..8].to_vec();
    bytes.extend((changed.len() as u32).to_le_bytes());
    bytes.extend(changed.as_bytes());
    bytes.extend(&MODEL_BYTES[12 + meta_len..]);
    assert!(Model::parse(&bytes).is_err(), "{to}");
  }
}

#[test]
fn the_pool_embeds_in_the_background_and_ready_waits_for_it() {
  use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
  };
  let m = shipped();
  let mut pending = pool::Pending::default();
  let texts: Vec<(u64, String)> =
    (0..12).map(|i| (i, format!("pool test tool number {i} does thing {}", i * 7))).collect();
  let hits = pending.submit(m, texts.clone());
  assert!(hits.is_empty());
  let called = Arc::new(AtomicUsize::new(0));
  let c = called.clone();
  pending.when_ready(Box::new(move || {
    c.fetch_add(1, Ordering::SeqCst);
  }));
  pending.wait_ready();
  assert!(pending.is_idle());
  let done = pending.take_done();
  assert_eq!(done.len(), 12);
  for (id, v) in &done {
    assert_eq!(&v[..], &m.embed(&texts[*id as usize].1)[..], "tool {id}");
  }
  // The waiter ran once, on a pool thread, before or as `wait_ready` returned.
  for _ in 0..100 {
    if called.load(Ordering::SeqCst) == 1 {
      break;
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
  }
  assert_eq!(called.load(Ordering::SeqCst), 1);
  // The same texts again: cached, returned at once, nothing pending.
  let mut again = pool::Pending::default();
  assert_eq!(again.submit(m, texts).len(), 12);
  assert!(again.is_idle());
  // Already ready: the waiter runs at once.
  let c = called.clone();
  again.when_ready(Box::new(move || {
    c.fetch_add(1, Ordering::SeqCst);
  }));
  assert_eq!(called.load(Ordering::SeqCst), 2);
}

#[test]
fn cancelled_and_orphaned_jobs_end_their_waiters() {
  use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
  };
  let m = shipped();
  let called = Arc::new(AtomicUsize::new(0));
  let mut pending = pool::Pending::default();
  pending.submit(m, (0..30).map(|i| (i, format!("cancelled text {i} unique {}", i * 13))).collect());
  let c = called.clone();
  pending.when_ready(Box::new(move || {
    c.fetch_add(1, Ordering::SeqCst);
  }));
  pending.cancel_all();
  assert!(pending.is_idle());
  // Answered when the operation settles, not while it may still add tools.
  assert_eq!(called.load(Ordering::SeqCst), 0);
  pending.settle();
  assert_eq!(called.load(Ordering::SeqCst), 1);
  // An index dropped with jobs queued: its waiter is answered, its jobs skipped.
  let mut orphan = pool::Pending::default();
  orphan.submit(m, (0..30).map(|i| (i, format!("orphaned text {i} unique {}", i * 17))).collect());
  let c = called.clone();
  orphan.when_ready(Box::new(move || {
    c.fetch_add(1, Ordering::SeqCst);
  }));
  drop(orphan);
  for _ in 0..500 {
    if called.load(Ordering::SeqCst) == 2 {
      break;
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
  }
  assert_eq!(called.load(Ordering::SeqCst), 2);
}

/// The attention's scores, eight keys side by side, are `dot`'s bits for every length and head
/// width the models use (and zeros of both signs, which a sum must not turn around).
#[test]
fn transposed_scores_are_dot_bit_for_bit() {
  let mut state = 12_345u32;
  let mut next = || {
    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    match state >> 28 {
      0 => -0.0,
      1 => 0.0,
      _ => ((state >> 8) % 20_000) as f32 / 7_000.0 - 1.4,
    }
  };
  for d in [8, 16, 32, 64] {
    for t in [1, 2, 7, 8, 9, 16, 17, 40, 128] {
      let q: Vec<f32> = (0..d).map(|_| next()).collect();
      let k: Vec<Vec<f32>> = (0..t).map(|_| (0..d).map(|_| next()).collect()).collect();
      let mut keys = Vec::new();
      transpose_keys(&mut keys, t, d, |j| k[j].as_slice());
      let mut scores = vec![0f32; t];
      dots_transposed(&q, &keys, &mut scores);
      for (j, key) in k.iter().enumerate() {
        assert_eq!(scores[j].to_bits(), dot(&q, key).to_bits(), "d {d}, t {t}, key {j}");
      }
    }
  }
}

#[test]
fn exp_erf_and_gelu_match_libm() {
  let mut worst = 0f32;
  for i in -8000..=8000 {
    let x = i as f32 / 100.0;
    let (a, b) = (exp(x), x.exp());
    if b > 1e-30 && b.is_finite() {
      worst = worst.max(((a - b) / b).abs());
    }
  }
  assert!(worst < 1e-6, "exp: worst relative error {worst}");
  assert_eq!(exp(-1000.0), exp(-87.0));
  assert!(exp(-87.0) > 0.0 && exp(88.0).is_finite());
  let _ = exp(f32::NAN); // no panic
  for i in -600..=600 {
    let x = i as f64 / 100.0;
    // erf by its series/continued value from f64 libm is not in std: compare GELU to the tanh form.
    let g = f64::from(gelu(x as f32));
    let tanh_form = 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh());
    assert!((g - tanh_form).abs() < 2e-3, "gelu({x}) = {g} vs {tanh_form}");
  }
  assert!((erf(0.5) - 0.520_499_9).abs() < 2e-6 && (erf(-2.0) + 0.995_322_3).abs() < 2e-6 && erf(0.0).abs() < 1e-6);
}

/// A fresh directory for one test's tree (removed by the test).
fn tree(name: &str) -> PathBuf {
  let dir = std::env::temp_dir().join(format!("codecall-places-{name}-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&dir);
  std::fs::create_dir_all(&dir).unwrap();
  std::fs::canonicalize(dir).unwrap()
}

/// Writes a file with its parent directories; returns its path.
fn put(path: PathBuf, bytes: &[u8]) -> PathBuf {
  std::fs::create_dir_all(path.parent().unwrap()).unwrap();
  std::fs::write(&path, bytes).unwrap();
  path
}

/// `<dir>/node_modules/@codecall/native-data/<MODEL_FILE>`.
fn data_in(dir: &std::path::Path) -> PathBuf {
  dir.join("node_modules").join("@codecall").join("native-data").join(MODEL_FILE)
}

/// The first of the places that exists, as `read_model` takes it.
fn found(places: &[PathBuf]) -> Option<PathBuf> {
  places.iter().find(|p| p.is_file()).cloned()
}

#[test]
fn the_variable_alone_when_set() {
  let places = places_for(Kind::Default, Some("/x/model.bin".into()), Some(std::path::Path::new("/p/a.node")));
  assert_eq!(places, vec![PathBuf::from("/x/model.bin")]);
  let places = places_for(Kind::Default, Some("".into()), Some(std::path::Path::new("/p/a.node")));
  assert_eq!(places[0], PathBuf::from("/p").join(MODEL_FILE), "an empty variable is not set");
}

#[test]
fn npm_hoisted_and_nested_layouts_find_the_data_package() {
  let root = tree("npm");
  // Hoisted: the data package beside the platform package, under the project's node_modules.
  let platform = root.join("hoisted/node_modules/@codecall/native-linux-x64-gnu");
  let addon = put(platform.join("codecall.linux-x64-gnu.node"), b"");
  let model = put(data_in(&root.join("hoisted")), b"model");
  assert_eq!(found(&places_for(Kind::Default, None, Some(&addon))), Some(model));
  // Nested (`--install-strategy=nested`): in the platform package's own node_modules, which wins
  // over a copy further up.
  let platform = root.join("nested/node_modules/@codecall/native/node_modules/@codecall/native-linux-x64-gnu");
  let addon = put(platform.join("codecall.linux-x64-gnu.node"), b"");
  put(data_in(&root.join("nested")), b"further up");
  let model = put(data_in(&platform), b"model");
  let places = places_for(Kind::Default, None, Some(&addon));
  assert_eq!(found(&places), Some(model));
  // Next to the `.node` (an older platform package, or a copy by hand) comes first.
  let beside = put(platform.join(MODEL_FILE), b"beside");
  assert_eq!(found(&places_for(Kind::Default, None, Some(&addon))), Some(beside));
  // No place is inside a node_modules/node_modules, and every one is absolute.
  assert!(places.iter().all(|p| p.is_absolute()), "{places:?}");
  assert!(!places.iter().any(|p| p.to_string_lossy().contains("node_modules/node_modules")), "{places:?}");
  std::fs::remove_dir_all(root).unwrap();
}

#[cfg(unix)]
#[test]
fn a_pnpm_layout_is_walked_from_the_real_directory() {
  use std::os::unix::fs::symlink;
  let root = tree("pnpm");
  let store = root.join("node_modules/.pnpm");
  // The real platform package, and its dependency linked beside it (`hoist=false`: nothing in the
  // project's own node_modules but the links to its direct dependencies).
  let real = store.join("@codecall+native-linux-x64-gnu@0.1.0/node_modules/@codecall/native-linux-x64-gnu");
  put(real.join("codecall.linux-x64-gnu.node"), b"");
  let data = store.join("@codecall+native-data@0.1.0/node_modules/@codecall/native-data");
  let model = put(data.join(MODEL_FILE), b"model");
  symlink(&data, store.join("@codecall+native-linux-x64-gnu@0.1.0/node_modules/@codecall/native-data")).unwrap();
  std::fs::create_dir_all(root.join("node_modules/@codecall")).unwrap();
  let link = root.join("node_modules/@codecall/native-linux-x64-gnu");
  symlink(&real, &link).unwrap();
  // The `.node` as a symlinked path: the walk starts from where it really is.
  let places = places_for(Kind::Default, None, Some(&link.join("codecall.linux-x64-gnu.node")));
  let hit = found(&places).expect("found through the sibling link");
  assert_eq!(std::fs::canonicalize(hit).unwrap(), model);
  std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn without_a_data_package_only_the_source_tree_is_left() {
  let root = tree("none");
  let addon = put(root.join("app/node_modules/@codecall/native-linux-x64-gnu/codecall.linux-x64-gnu.node"), b"");
  let places = places_for(Kind::Default, None, Some(&addon));
  // This crate's tree (a test build): the only place that exists.
  let in_tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/search/embeddings").join(MODEL_FILE);
  assert_eq!(found(&places), Some(in_tree.clone()));
  assert_eq!(places.last(), Some(&in_tree));
  // A relative `.node` path names nothing to walk (it would be read from the cwd).
  assert!(package_places(Kind::Default, std::path::Path::new("relative/dir")).is_empty());
  std::fs::remove_dir_all(root).unwrap();
}

/// Run by `a_data_package_in_the_cwd_is_never_used`, in a child process whose cwd holds a decoy.
#[test]
#[ignore = "run by a_data_package_in_the_cwd_is_never_used in a child process"]
fn decoy_child() {
  let Some(addon) = std::env::var_os("CODECALL_TEST_DECOY_ADDON") else { return };
  let cwd = std::env::current_dir().unwrap();
  assert!(data_in(&cwd).is_file(), "the decoy is in the cwd");
  let places = places_for(Kind::Default, None, Some(std::path::Path::new(&addon)));
  assert!(places.iter().all(|p| !p.starts_with(&cwd)), "{places:?}");
  assert!(!model_places(Kind::Default).iter().any(|p| p.starts_with(&cwd)), "{:?}", model_places(Kind::Default));
  // The decoy is no model: were it read, the error would name it.
  let in_tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/search/embeddings").join(MODEL_FILE);
  let without_tree: Vec<PathBuf> = places.into_iter().filter(|p| p != &in_tree).collect();
  assert!(matches!(read_model(Kind::Default, without_tree), Err(ModelError::NotFound(..))));
}

#[test]
fn a_data_package_in_the_cwd_is_never_used() {
  let root = tree("decoy");
  let app = root.join("app");
  put(data_in(&app), b"DECOY, not a model");
  let addon = put(root.join("lib/node_modules/@codecall/native-linux-x64-gnu/codecall.linux-x64-gnu.node"), b"");
  let name = module_path!().split_once("::").map_or("", |(_, rest)| rest);
  let out = std::process::Command::new(std::env::current_exe().unwrap())
    .args(["--exact", &format!("{name}::decoy_child"), "--ignored", "--test-threads=1"])
    .env("CODECALL_TEST_DECOY_ADDON", &addon)
    .env_remove(ENV_MODEL_PATH)
    .current_dir(&app)
    .output()
    .unwrap();
  let text = String::from_utf8_lossy(&out.stdout);
  assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
  std::fs::remove_dir_all(root).unwrap();
}

/// The tiny random MPNet of `fixtures/` (written by `quantize_model.py --tiny-mpnet`) against the
/// f32 vectors of the transformers-faithful numpy pass (`distill.encode`): the MPNet parts of the
/// file and the forward pass — `<s>`/`</s>`, positions from MPNet's first, the relative attention
/// bias in exact and logarithmic buckets — for sequences of 2 to all 40 positions.
#[test]
fn a_tiny_mpnet_matches_its_f32_reference() {
  let model = Model::parse(include_bytes!("fixtures/tiny-mpnet.bin")).expect("the fixture parses");
  assert!(model.relative.is_some() && model.fusion == MPNET);
  assert_eq!(model.vocab.encode("w5 w6", 8), [0, 10, 11, 2], "<s> … </s>");
  let json: serde_json::Value = serde_json::from_str(include_str!("fixtures/tiny-mpnet.json")).expect("json");
  let rows = json.as_array().expect("rows");
  let seqs: Vec<Vec<u32>> =
    rows.iter().map(|r| r["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect()).collect();
  let batch = model.embed_batch(&seqs);
  for ((row, seq), got) in rows.iter().zip(&seqs).zip(&batch) {
    let want: Vec<f32> = row["f32"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
    let cos = dot(got, &want);
    // int8 weights against f32 ones: close, not equal.
    assert!(cos > 0.995, "{} tokens: cosine {cos}", seq.len());
    assert_eq!(&model.embed_batch(std::slice::from_ref(seq))[0], got, "batch invariant");
  }
  // Without the bias the vectors move away: the test sees it.
  let mut plain = Model::parse(include_bytes!("fixtures/tiny-mpnet.bin")).unwrap();
  plain.relative = None;
  let long = seqs.last().unwrap();
  let want: Vec<f32> =
    rows.last().unwrap()["f32"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
  assert!(dot(&plain.embed_batch(std::slice::from_ref(long))[0], &want) < 0.99);
}

#[test]
fn relative_buckets_match_transformers() {
  // transformers' MPNetEncoder.relative_position_bucket(rel, 32, 128), for rel = j − i.
  let want = [
    (0, 0),
    (1, 17),
    (-1, 1),
    (7, 23),
    (-7, 7),
    (8, 24),
    (-8, 8),
    (12, 25),
    (-20, 10),
    (127, 31),
    (-127, 15),
    (500, 31),
    (-500, 15),
  ];
  for (rel, bucket) in want {
    assert_eq!(relative_bucket(rel, 32, 128), bucket, "rel {rel}");
  }
}

#[test]
fn mpnet_files_are_checked_like_bert_ones() {
  let bytes = include_bytes!("fixtures/tiny-mpnet.bin");
  // Cut in the bias table, or anywhere else: refused, never a panic.
  for cut in [100, bytes.len() / 2, bytes.len() - 1] {
    assert!(Model::parse(&bytes[..cut]).is_err(), "cut at {cut}");
  }
  let text = String::from_utf8_lossy(bytes).to_string();
  assert!(text.contains(r#""arch":"mpnet""#));
  let swap = |from: &str, to: &str| {
    let mut b = bytes.to_vec();
    let at = text.find(from).unwrap();
    b[at..at + from.len()].copy_from_slice(to.as_bytes());
    Model::parse(&b).err()
  };
  assert_eq!(swap(r#""arch":"mpnet""#, r#""arch":"xpnet""#), Some("its architecture is neither bert nor mpnet"));
  assert_eq!(
    swap(r#""cls":"<s>""#, r#""cls":"<q>""#),
    Some("its vocabulary is malformed or lacks its unknown, start or end token")
  );
}

#[test]
fn the_large_model_has_its_own_places() {
  let places = places_for(Kind::Large, None, Some(std::path::Path::new("/p/x/a.node")));
  assert_eq!(places[0], PathBuf::from("/p/x").join(LARGE_MODEL_FILE));
  assert!(
    places.iter().any(|p| p.ends_with("node_modules/@codecall/native-data-large/all-mpnet-base-v2.i8.bin")),
    "{places:?}"
  );
  assert!(!places.iter().any(|p| p.ends_with(MODEL_FILE)), "{places:?}");
  let message = ModelError::NotFound(Kind::Large, places).to_string();
  assert!(
    message.contains("install @codecall/native-data-large") && message.contains(ENV_LARGE_MODEL_PATH),
    "{message}"
  );
}
