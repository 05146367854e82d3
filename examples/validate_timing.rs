//! Times the validator core without napi: `cargo run --release --example validate_timing -- FILE...`
use std::time::Instant;

use codecall_native::validator::{validate, Policy};

fn main() {
  let policy = Policy { max_script_bytes: u64::MAX, ..Policy::default() };
  for path in std::env::args().skip(1) {
    let script = std::fs::read_to_string(&path).unwrap_or_default();
    let iterations = (2_000_000 / script.len().max(1)).clamp(10, 20_000);
    for _ in 0..iterations / 10 {
      let _ = validate(&script, &policy);
    }
    let mut samples = Vec::new();
    for _ in 0..15 {
      let t = Instant::now();
      for _ in 0..iterations {
        let _ = validate(&script, &policy);
      }
      samples.push(t.elapsed().as_secs_f64() * 1e6 / iterations as f64);
    }
    samples.sort_by(f64::total_cmp);
    println!("{path}: {} bytes, median {:.1} µs", script.len(), samples[samples.len() / 2]);
  }
}
