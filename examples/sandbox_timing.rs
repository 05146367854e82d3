//! Times the sandbox core without napi: `cargo run --release --example sandbox_timing`.
//! Sequential `return 1 + 1` executions through the pool, with a host that answers at once.
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codecall_native::common::Preset;
use codecall_native::sandbox::Completed;
use codecall_native::sandbox::Pool;
use codecall_native::sandbox::Shared;
use codecall_native::sandbox::{CallResult, Event, Host, HostCall, Reply};
use codecall_native::sandbox::{ExecuteConfig, SandboxConfig};

struct Echo(Mutex<Sender<Completed>>);

impl Host for Echo {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    reply.send(CallResult::Ok(Some(call.args_json)));
  }
  fn event(&self, _: Event) {}
  fn get_tool(&self, _: &str, _: Duration) -> Option<String> {
    None
  }
  fn complete(&self, c: Completed) {
    if let Ok(tx) = self.0.lock() {
      let _ = tx.send(c);
    }
  }
}

fn main() {
  let mut config = SandboxConfig::from_preset(Preset::Experimental);
  config.max_iterations = Some(u64::MAX);
  config.max_tool_calls = u64::MAX;
  let config = Arc::new(config);
  let pool = Pool::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
  let (tx, rx) = channel();
  let host = Arc::new(Echo(Mutex::new(tx)));
  for (label, script, n) in [
    ("trivial", "return 1 + 1", 2000),
    (
      "1000 calls",
      "let s = 0; for (let i = 0; i < 1000; i++) { const r = await callTool('add', { i }); s += r.i } return s",
      20,
    ),
  ] {
    let mut samples = Vec::new();
    for _ in 0..n {
      let exec = ExecuteConfig::new(&config);
      let shared = Arc::new(Shared::new("e".into(), host.clone(), exec.timeout));
      let t = Instant::now();
      pool.submit(script.into(), exec, shared);
      let _ = rx.recv();
      samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    println!("{label}: median {:.1} µs", samples[samples.len() / 2]);
  }
}
