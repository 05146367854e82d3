//! Execution ids (`stats.executionId`, events, `codecall:save { executionId }`): handles a client
//! holds across requests (spec §12), so nobody else may guess one. 128 bits from the OS's random
//! source, as 32 lowercase hex digits after a prefix: `exec-3f9c…`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// `<prefix>-` and 32 lowercase hex digits (128 random bits).
pub fn random_id(prefix: &str) -> String {
  let bytes = random_bytes();
  let mut id = String::with_capacity(prefix.len() + 33);
  id.push_str(prefix);
  id.push('-');
  for b in bytes {
    id.push(char::from(HEX[usize::from(b >> 4)]));
    id.push(char::from(HEX[usize::from(b & 15)]));
  }
  id
}

/// An execution's id: `exec-` and 32 hex digits.
pub fn execution_id() -> String {
  random_id("exec")
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn random_bytes() -> [u8; 16] {
  let mut bytes = [0u8; 16];
  // The OS's source (getrandom(2), getentropy, ProcessPrng) fails only where none exists at all;
  // it is asked twice before the fallback.
  if getrandom::fill(&mut bytes).is_ok() || getrandom::fill(&mut bytes).is_ok() {
    return bytes;
  }
  fallback()
}

/// No OS randomness (never seen on a supported platform): a hash of what varies per call and per
/// process. Unique, but not a secret; the best left when the OS has nothing to give.
fn fallback() -> [u8; 16] {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let mut h = Sha256::new();
  h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
  h.update(std::process::id().to_le_bytes());
  let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
  h.update(now.to_le_bytes());
  let here = 0u8;
  h.update((std::ptr::addr_of!(here) as usize).to_le_bytes());
  h.update(format!("{:?}", std::thread::current().id()).as_bytes());
  let digest = h.finalize();
  let mut out = [0u8; 16];
  out.copy_from_slice(&digest[..16]);
  out
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn ids_are_prefixed_hex_and_distinct() {
    let a = execution_id();
    let b = execution_id();
    assert_ne!(a, b);
    for id in [&a, &b] {
      let hex = id.strip_prefix("exec-").unwrap_or_default();
      assert_eq!(hex.len(), 32, "{id}");
      assert!(hex.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)), "{id}");
    }
    let f = fallback();
    assert_ne!(f, fallback());
    assert!(random_id("invoke").starts_with("invoke-"));
  }
}
