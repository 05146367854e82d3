//! Any bytes, as a script, under every preset and both languages, through validation and source
//! preparation: the validator must return (a result or a refusal), never crash, hang or overflow.
#![no_main]

use codecall_native::common::Preset;
use codecall_native::validator::{prepare, validate, Language, Policy, PrepareOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
  let Some((&selector, rest)) = data.split_first() else { return };
  let script = String::from_utf8_lossy(rest);
  let mut policy = Policy::from_preset(Preset::ALL[(selector & 3) as usize]);
  if selector & 4 != 0 {
    policy.language = Language::TypeScript;
  }
  if selector & 8 != 0 {
    // Let deep inputs through to the parser: the stack sizing must hold on its own.
    policy.max_nesting_depth = u32::MAX;
  }
  let _ = validate(&script, &policy);
  if let Ok(prepared) = prepare(&script, &policy, PrepareOptions { count_iterations: selector & 16 != 0 }) {
    // Every position of the prepared code maps back into the script.
    let lines = prepared.source.code.lines().count() as u32;
    let location = prepared.source.mapping.to_user(lines.max(1), 1);
    assert!(location.line >= 1 && location.column >= 1);
  }
});
