//! Times ToolIndex without napi: `cargo run --release --example search_timing [tools] [corpus.json]`.
//! Builds an index of `tools` tools (default 1 000) — synthetic ones, or copies of the benchmark
//! corpus' real tools when its path is given — and runs a few queries many times.
use std::time::Instant;

use codecall_native::search::{IndexOptions, SearchOptions, Tool, ToolIndex};

const VERBS: [&str; 10] = ["create", "list", "get", "update", "delete", "search", "send", "run", "close", "merge"];
const NOUNS: [&str; 12] =
  ["issue", "user", "message", "repo", "file", "channel", "invoice", "order", "project", "branch", "comment", "page"];

fn tools(n: usize) -> Vec<Tool> {
  (0..n)
    .map(|i| Tool {
      name: format!("app{}:{}_{}_{i}", i % 40, VERBS[i % 10], NOUNS[(i >> 3) % 12]),
      app_id: Some(format!("app{}", i % 40)),
      description: Some(format!(
        "{} a {} in the workspace, with filters and pagination for {}s",
        VERBS[(i * 7) % 10],
        NOUNS[i % 12],
        NOUNS[(i * 3) % 12]
      )),
      properties: vec!["id".into(), "limit".into(), format!("{}Id", NOUNS[i % 12])],
      ..Tool::default()
    })
    .collect()
}

/// `n` tools cycled from a corpus file (`bench/search/corpus.json`), renamed per copy.
fn corpus(path: &str, n: usize) -> Result<Vec<Tool>, Box<dyn std::error::Error>> {
  let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
  let real: Vec<&serde_json::Value> = json["tools"].as_array().ok_or("no tools")?.iter().collect();
  Ok(
    (0..n)
      .map(|i| {
        let t = real[i % real.len()];
        let app = format!("{}{}", t["appId"].as_str().unwrap_or(""), i / real.len());
        Tool {
          name: format!("{app}:{}", t["name"].as_str().unwrap_or("")),
          app_id: Some(app),
          description: t["description"].as_str().map(str::to_string),
          properties: codecall_native::search::property_names(&t["inputSchema"]),
          ..Tool::default()
        }
      })
      .collect(),
  )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
  // A release build looks for the model file next to the addon only; here there is none.
  if std::env::var_os("CODECALL_EMBEDDINGS_PATH").is_none() {
    std::env::set_var(
      "CODECALL_EMBEDDINGS_PATH",
      concat!(env!("CARGO_MANIFEST_DIR"), "/src/search/embeddings/all-minilm-l6-v2.i8.bin"),
    );
  }
  let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
  let list = match std::env::args().nth(2) {
    Some(path) => corpus(&path, n)?,
    None => tools(n),
  };
  let started = Instant::now();
  let mut index = ToolIndex::new(IndexOptions::default())?;
  index.upsert(list)?;
  index.search("x", &SearchOptions::default())?;
  println!("{n} tools indexed in {:?} (searchable lexically)", started.elapsed());
  index.wait_ready();
  println!("every tool embedded after {:?}", started.elapsed());
  if std::env::var_os("INDEX_ONLY").is_some() {
    return Ok(());
  }
  let mut queries: Vec<String> = [
    "create a new issue",
    "list all users in the project",
    "send a mesage to the channel",
    "delete branch",
    "find invoices for order",
    "get repository files",
  ]
  .map(String::from)
  .to_vec();
  // With the corpus, the benchmark's own queries (queries.json beside it).
  if let Some(path) = std::env::args().nth(2) {
    let file = std::path::Path::new(&path).with_file_name("queries.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file)?)?;
    queries = json["queries"]
      .as_array()
      .ok_or("no queries")?
      .iter()
      .filter_map(|q| q["query"].as_str().map(String::from))
      .collect();
  }
  let options = SearchOptions::default();
  let mut times = Vec::new();
  let rounds = 18_000 / queries.len();
  for round in 0..rounds {
    for q in &queries {
      let t = Instant::now();
      let hits = index.search(q, &options)?;
      if round > rounds / 10 {
        times.push(t.elapsed().as_secs_f64() * 1e6);
      }
      std::hint::black_box(hits);
    }
  }
  times.sort_by(f64::total_cmp);
  println!("query p50 {:.1} µs, p99 {:.1} µs", times[times.len() / 2], times[times.len() * 99 / 100]);
  Ok(())
}
