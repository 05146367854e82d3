//! The tokenizer against the Python reference (`scripts/embeddings/evaluate.py`, which matches the
//! model's `tokenizer.json`), table validation, and what the vectors mean.
#![allow(clippy::expect_used, clippy::unwrap_used)] // tests: a failed setup should fail loudly

use std::time::Instant;

use super::*;

/// (text, basic words, token ids), generated with evaluate.py's `basic_tokenize` and `WordPiece`
/// on the shipped table (`/tmp/emb-venv/bin/python`; see `embeddings/README.md`).
#[rustfmt::skip]
const CASES: &[(&str, &[&str], &[u32])] = &[
  ("Create a new issue in a GitHub repository", &["create", "a", "new", "issue", "in", "a", "github", "repository"], &[2444, 38, 1048, 2278, 1000, 38, 20026, 1706, 11084, 21410]),
  ("Caf\u{e9} na\u{ef}ve r\u{e9}sum\u{e9} \u{2014} \u{6771}\u{4eac} \u{e9}migr\u{e9}\u{200b} tab\u{9}here", &["cafe", "naive", "resume", "\u{2014}", "\u{6771}", "\u{4eac}", "emigre", "tab", "here"], &[6669, 14744, 12747, 518, 880, 756, 11496, 16604, 20629, 1183]),
  ("don't stop_now:camelCase", &["don", "'", "t", "stop", "_", "now", ":", "camelcase"], &[1124, 6, 57, 1645, 36, 1086, 25, 18131, 17383]),
  ("\u{3a3}\u{38a}\u{3a3}\u{3a5}\u{3a6}\u{39f}\u{3a3} \u{130}stanbul \u{fb01}le \u{c5}", &["\u{3c3}\u{3b9}\u{3c3}\u{3c5}\u{3c6}\u{3bf}\u{3c2}", "istanbul", "\u{fb01}le", "a"], &[174, 17200, 28734, 28736, 28737, 14298, 8961, 985, 1572, 38]),
  ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ok", &["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "ok"], &[6930]),
  ("getUserProfile(id) \u{2192} {name}", &["getuserprofile", "(", "id", ")", "\u{2192}", "{", "name", "}"], &[1132, 19331, 20573, 7874, 1572, 7, 7910, 8, 586, 64, 1172, 66]),
  ("\u{c548}\u{b155}\u{d558}\u{c138}\u{c694} \u{c138}\u{acc4}", &["\u{110b}\u{1161}\u{11ab}\u{1102}\u{1167}\u{11bc}\u{1112}\u{1161}\u{1109}\u{1166}\u{110b}\u{116d}", "\u{1109}\u{1166}\u{1100}\u{1168}"], &[464, 29007, 29022, 28993, 29011, 29026, 29006, 29007, 28998, 29010, 29000, 29014]),
  ("weather forecast for tomorrow", &["weather", "forecast", "for", "tomorrow"], &[3634, 18940, 1006, 3827]),
  ("\u{0}\u{fffd}\u{ad} soft\u{ad}hyphen", &["softhyphen"], &[2731, 9537, 7459, 1369]),
  ("\u{bf}Qu\u{e9} tal? \u{ab}\u{c7}a va\u{bb} 50% off\u{2026} 3.14", &["\u{bf}", "que", "tal", "?", "\u{ab}", "ca", "va", "\u{bb}", "50", "%", "off", "\u{2026}", "3", ".", "14"], &[95, 9862, 20369, 30, 78, 5188, 11437, 91, 1754, 4, 1126, 530, 18, 13, 1404]),
];

fn shipped() -> &'static Table {
  table().expect("the compiled-in table parses")
}

#[test]
fn tokenizer_matches_python() {
  let t = shipped();
  for (text, words, ids) in CASES {
    assert_eq!(basic_words(text), *words, "{text:?}");
    assert_eq!(t.token_ids(text), *ids, "{text:?}");
  }
}

#[test]
fn camel_case_is_not_split_and_unknown_words_are_dropped() {
  assert_eq!(basic_words("getUserProfile"), ["getuserprofile"]);
  let t = shipped();
  // 101 characters: unknown, the whole word goes.
  assert!(t.token_ids(&"a".repeat(101)).is_empty());
  assert!(!t.token_ids(&"a".repeat(100)).is_empty());
  assert!(t.embed("").is_none() && t.embed(" \u{200b}\u{0} ").is_none());
  assert!(t.embed("\u{1F600}").is_none(), "no piece for an emoji: no vector");
}

#[test]
fn vectors_are_unit_and_paraphrases_are_closer_than_unrelated_texts() {
  let v = |s: &str| embed(s).expect("vector");
  let a = v("send an email to a colleague");
  assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
  let paraphrase = dot(&a, &v("compose and deliver a mail message"));
  let unrelated = dot(&a, &v("bake a chocolate cake"));
  // Python (float64 on the same table): 0.5961 and 0.0266.
  assert!((paraphrase - 0.5961).abs() < 1e-3, "{paraphrase}");
  assert!((unrelated - 0.0266).abs() < 1e-3, "{unrelated}");
  assert!(dot(&v("delete a file"), &v("remove a document")) > dot(&v("delete a file"), &v("weather forecast")));
}

#[test]
fn content_words_are_whole_known_words_other_than_stop_words() {
  let t = shipped();
  let stop = |w: &str| ["the", "of", "and", "will", "it"].contains(&w);
  assert!(t.has_content_word("will it rain tomorrow", stop));
  assert!(t.has_content_word("Café", stop));
  for q in ["the of and", "xyzzy plugh", "w0 w1 w2", "w0 w", "x y", "!!! ???", "", "\u{1F600}"] {
    assert!(!t.has_content_word(q, stop), "{q:?}");
  }
}

/// The shipped table's bytes, compiled into the test binary.
static TABLE_BYTES: &[u8] = include_bytes!("../embeddings/minilm-l6-v2.q8.bin");

#[test]
fn the_table_is_found_in_the_source_tree() {
  // `cargo test` has no `.node`: the last place, this crate's source tree, holds the table.
  assert!(table_status().is_ok(), "{}", table_status().err().map(|e| e.to_string()).unwrap_or_default());
}

#[cfg(unix)]
#[test]
fn a_missing_unreadable_or_damaged_table_is_a_reason_not_a_crash() {
  let dir = std::env::temp_dir().join(format!("codecall-embed-test-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let (missing, damaged) = (dir.join("missing.bin"), dir.join("damaged.bin"));
  std::fs::write(&damaged, &TABLE_BYTES[..1000]).unwrap();
  let err = read_table(vec![missing.clone()]).err().expect("missing");
  assert!(matches!(&err, TableError::NotFound(p) if p == std::slice::from_ref(&missing)), "{err}");
  assert!(err.to_string().contains(ENV_TABLE_PATH), "{err}");
  let err = read_table(vec![missing.clone(), damaged.clone()]).err().expect("damaged");
  assert!(matches!(&err, TableError::Invalid(p) if p == &damaged), "{err}");
  // A directory opens but is no table.
  let err = read_table(vec![dir.clone()]).err().expect("directory");
  assert!(matches!(&err, TableError::Invalid(p) if p == &dir), "{err}");
  assert!(TableError::NotFound(Vec::new()).to_string().contains("could not find its own file"));
  let good = dir.join("good.bin");
  std::fs::write(&good, TABLE_BYTES).unwrap();
  assert!(read_table(vec![missing, good]).is_ok());
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_tables_are_refused() {
  let good: &'static [u8] = TABLE_BYTES;
  let leak = |b: Vec<u8>| -> &'static [u8] { Box::leak(b.into_boxed_slice()) };
  assert!(Table::parse(good).is_some());
  assert!(Table::parse(&good[..20]).is_none());
  assert!(Table::parse(&good[..good.len() - 1]).is_none());
  let mut bad_magic = good.to_vec();
  bad_magic[7] = b'2';
  assert!(Table::parse(leak(bad_magic)).is_none());
  for (at, value) in [(8, u32::MAX), (8, 0), (12, 0), (12, 100_000), (16, u32::MAX), (20, 7)] {
    let mut b = good.to_vec();
    b[at..at + 4].copy_from_slice(&value.to_le_bytes());
    assert!(Table::parse(leak(b)).is_none(), "field at {at} = {value}");
  }
  let mut longer = good.to_vec();
  longer.push(0);
  assert!(Table::parse(leak(longer)).is_none());
  assert!(Table::parse(&[]).is_none());
}

#[test]
fn parse_and_embed_are_cheap() {
  // Debug build: loose bounds (the release build is several times faster; see RESULTS.md).
  let t0 = Instant::now();
  let t = Table::parse(TABLE_BYTES).expect("table");
  let parse = t0.elapsed();
  let t0 = Instant::now();
  for _ in 0..100 {
    t.embed("create a new issue in a github repository").expect("vector");
  }
  let embed = t0.elapsed() / 100;
  eprintln!("parse {parse:?}, embed {embed:?}");
  assert!(parse.as_millis() < 500 && embed.as_micros() < 5_000, "parse {parse:?}, embed {embed:?}");
}

#[test]
fn unicode_tables_are_sorted() {
  assert!(CLASSES.windows(2).all(|w| w[0].1 < w[1].0) && CLASSES.iter().all(|r| r.0 <= r.1));
  assert!(DECOMPOSED.windows(2).all(|w| w[0].0 < w[1].0));
  assert_eq!(unicode::UNICODE_VERSION, "14.0.0");
}
