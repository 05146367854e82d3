//! Any bytes, as a script, run in the sandbox engine with a host that answers every call: the
//! engine must always come back with a result — no panic, no crash, no hang past the deadline.
#![no_main]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codecall_native::common::Preset;
use codecall_native::sandbox::{CallResult, Event, Host, HostCall, HostFailure, Reply};
use codecall_native::sandbox::{ExecuteConfig, SandboxConfig};
use codecall_native::sandbox::{Engine, Execution, Job, ReplySink, Step};
use codecall_native::sandbox::Completed;
use codecall_native::sandbox::Shared;
use libfuzzer_sys::fuzz_target;

struct NullHost;

/// Answers alternate between data, `undefined` and failures.
fn answer(n: usize) -> CallResult {
  match n % 3 {
    0 => CallResult::Ok(Some("{\"ok\":true,\"items\":[1,2,3]}".into())),
    1 => CallResult::Ok(None),
    _ => CallResult::Err(HostFailure { message: "no".into(), code: Some("E".into()), details_json: Some("[1]".into()) }),
  }
}

impl Host for NullHost {
  fn call(&self, call: HostCall, reply: Box<dyn Reply>) {
    reply.send(answer(call.name.len() + call.args_json.len()));
  }
  fn event(&self, _: Event) {}
  fn get_tool(&self, name: &str, _: Duration) -> Option<String> {
    (name.len() % 2 == 0).then(|| format!("{{\"name\":{name:?}}}"))
  }
  fn complete(&self, _: Completed) {}
}

/// Collects answers; the loop below feeds them back.
#[derive(Clone, Default)]
struct Inbox(Arc<Mutex<Vec<(u64, CallResult)>>>);

impl ReplySink for Inbox {
  fn reply(&self, call_id: u64, result: CallResult) {
    if let Ok(mut v) = self.0.lock() {
      v.push((call_id, result));
    }
  }
}

thread_local! {
  static ENGINE: std::cell::RefCell<Option<Engine>> = const { std::cell::RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
  let Some((&selector, rest)) = data.split_first() else { return };
  let script = String::from_utf8_lossy(rest).into_owned();
  let mut sandbox = SandboxConfig::from_preset(Preset::ALL[(selector & 3) as usize]);
  sandbox.policy.max_nesting_depth = 64;
  sandbox.memory_limit_bytes = 8 << 20;
  sandbox.normalize();
  let sandbox = Arc::new(sandbox);
  let mut exec = ExecuteConfig::new(&sandbox);
  exec.timeout = Duration::from_millis(100);
  exec.host_get_tool = selector & 4 != 0;
  exec.functions = vec!["mcp.callTool".into(), "lookup".into()];
  exec.input_json = Some("{\"value\":21}".into());
  let shared = Arc::new(Shared::new("fuzz".into(), Arc::new(NullHost), exec.timeout));
  let inbox = Inbox::default();
  ENGINE.with(|cell| {
    let mut slot = cell.borrow_mut();
    if slot.is_none() {
      *slot = Engine::new().ok();
    }
    let Some(engine) = slot.as_mut() else { return };
    // The deadline every clock of the execution reads, as the pool's worker gets it.
    let Some(deadline) = shared.mark_started() else { return };
    let job = Job { script, sandbox: sandbox.clone(), exec: Arc::new(exec), shared };
    let Ok((mut execution, mut step)) = Execution::start(engine, job, deadline, inbox.clone()) else { return };
    let mut rounds = 0u64;
    while matches!(step, Step::Parked) && rounds < 10_000 {
      rounds += 1;
      let pending: Vec<(u64, CallResult)> = inbox.0.lock().map(|mut v| v.drain(..).collect()).unwrap_or_default();
      if pending.is_empty() {
        // Nothing will answer: stop it as a timeout would.
        let _ = execution.stopped();
        break;
      }
      for (call_id, result) in pending {
        step = execution.resume(call_id, result);
        if !matches!(step, Step::Parked) {
          break;
        }
      }
    }
    drop(execution);
  });
});
