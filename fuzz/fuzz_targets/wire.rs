//! The worker pipe protocol against a hostile peer: the host reading a worker's frames and a
//! worker reading the host's. Input is either a raw byte stream, or valid frames of every kind
//! (built from the input) corrupted, truncated and spliced by it. Reading and decoding must never
//! panic or allocate past the frame limit, and whatever decodes must re-encode to a frame that
//! decodes to the same bytes again (nothing is accepted that the other side would read
//! differently). A decoded `Complete` goes through the host's result check.
#![no_main]

use codecall_native::sandbox::{CallResult, CallTarget, Event, HostCall, HostFailure};
use codecall_native::sandbox::{ExecuteConfig, SandboxConfig};
use codecall_native::sandbox::{check_result, read_frame, FromWorker, ToWorker};
use libfuzzer_sys::fuzz_target;

/// The largest frame a peer may announce here (the host uses its own bound, at most `MAX_FRAME`).
const LIMIT: usize = 1 << 20;

fn frames(stream: &[u8]) -> Vec<(u8, Vec<u8>)> {
  let mut reader = stream;
  let mut out = Vec::new();
  let mut body = Vec::new();
  while out.len() < 256 {
    match read_frame(&mut reader, LIMIT, &mut body) {
      Ok(kind) => {
        assert!(body.len() < LIMIT);
        out.push((kind, body.clone()));
      }
      Err(_) => break,
    }
  }
  out
}

/// Whatever decodes re-encodes to a frame that decodes and encodes to the same bytes again.
fn stable<T: std::fmt::Debug, E>(
  kind: u8,
  body: &[u8],
  decode: fn(u8, &[u8]) -> Result<T, E>,
  encode: fn(&T) -> Vec<u8>,
) -> Option<T> {
  let msg = decode(kind, body).ok()?;
  let first = encode(&msg);
  let mut again = Vec::new();
  let k = read_frame(&mut &first[..], usize::MAX, &mut again).expect("an encoded frame reads back");
  let again = decode(k, &again).unwrap_or_else(|_| panic!("a re-encoded frame decodes: {msg:?}"));
  assert_eq!(encode(&again), first, "{msg:?}");
  Some(msg)
}

/// As the host reads a worker.
fn from_worker(kind: u8, body: &[u8]) {
  if let Some(FromWorker::Complete { json, .. }) = stable(kind, body, FromWorker::decode, FromWorker::encode) {
    let _ = check_result(&json, "fuzz");
  }
}

/// As a worker reads the host.
fn to_worker(kind: u8, body: &[u8]) {
  stable(kind, body, ToWorker::decode, ToWorker::encode);
}

/// One valid frame of every kind, its strings and numbers taken from `seed`.
fn valid(seed: &[u8]) -> Vec<Vec<u8>> {
  let text = String::from_utf8_lossy(seed).into_owned();
  let mut n = [0u8; 8];
  for (i, b) in seed.iter().take(8).enumerate() {
    n[i] = *b;
  }
  let n = u64::from_le_bytes(n);
  let sandbox = SandboxConfig::default();
  let exec = ExecuteConfig::new(&sandbox);
  let call = HostCall {
    execution_id: text.clone(),
    call_id: n.to_string(),
    target: if n % 2 == 0 { CallTarget::Tool } else { CallTarget::Function },
    name: text.clone(),
    args_json: text.clone(),
  };
  let failure = HostFailure { message: text.clone(), code: Some(text.clone()), details_json: None };
  vec![
    ToWorker::Hello { config: sandbox.clone() }.encode(),
    ToWorker::Start { key: n, id: text.clone(), script: text.clone(), exec }.encode(),
    ToWorker::Reply { token: n, result: CallResult::Ok(Some(text.clone())) }.encode(),
    ToWorker::Reply { token: n, result: CallResult::Err(failure) }.encode(),
    ToWorker::ToolInfo { token: n, json: (n % 3 == 0).then(|| text.clone()) }.encode(),
    ToWorker::Stop { key: n }.encode(),
    FromWorker::Ready { protocol: 1, version: text.clone(), seccomp: Err(text.clone()), warnings: vec![text.clone()] }
      .encode(),
    FromWorker::Started { key: n }.encode(),
    FromWorker::Call { key: n, token: n, call }.encode(),
    FromWorker::GetTool { key: n, token: n, name: text.clone() }.encode(),
    FromWorker::Event {
      key: n,
      event: Event::ToolCallEnd {
        execution_id: text.clone(),
        call_id: text.clone(),
        tool_name: text.clone(),
        input_json: text.clone(),
        ok: n % 2 == 0,
        duration_ms: f64::from_bits(n),
        error: Some((text.clone(), text.clone())),
      },
    }
    .encode(),
    FromWorker::Event {
      key: n,
      event: Event::Log { execution_id: text.clone(), level: text.clone(), message: text.clone(), metadata_json: None },
    }
    .encode(),
    FromWorker::Complete { key: n, json: text }.encode(),
  ]
}

fuzz_target!(|data: &[u8]| {
  let Some((&mode, rest)) = data.split_first() else { return };
  let stream = if mode & 1 == 0 {
    rest.to_vec()
  } else {
    // Valid frames, then corrupted: `rest` = seed length, seed, then (position, xor) pairs.
    let Some((&seed_len, rest)) = rest.split_first() else { return };
    let (seed, edits) = rest.split_at((seed_len as usize).min(rest.len()));
    let all = valid(seed);
    let mut stream: Vec<u8> = if mode & 2 == 0 { all.concat() } else { all[(mode as usize >> 2) % all.len()].clone() };
    for pair in edits.chunks(3) {
      if let [hi, lo, x] = *pair {
        if stream.is_empty() {
          break;
        }
        let at = (usize::from(hi) << 8 | usize::from(lo)) % stream.len();
        stream[at] ^= x;
      }
    }
    if mode & 0x80 != 0 {
      let cut = edits.len() % (stream.len() + 1);
      stream.truncate(cut);
    }
    stream
  };
  for (kind, body) in frames(&stream) {
    from_worker(kind, &body);
    to_worker(kind, &body);
  }
});
