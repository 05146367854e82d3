//! Measures how much stack validation uses per byte of pathological input, to check the bound in
//! `validator/stack.rs` (`STACK_PER_SOURCE_BYTE`). Run: `cargo run --release --example stack_usage`.
//!
//! Each input runs on a fresh thread whose stack starts out as untouched zero pages; afterwards the
//! lowest non-zero byte tells how deep the stack went.
use codecall_native::common::Preset;
use codecall_native::validator::{prepare, validate, Language, Policy, PrepareOptions};

const STACK: usize = 1 << 30;

fn used_stack(script: String, language: Language) -> usize {
  std::thread::Builder::new()
    .stack_size(STACK)
    .spawn(move || {
      let marker = 0u8;
      let top = &marker as *const u8 as usize;
      let remaining = stacker::remaining_stack().unwrap_or(0);
      let bottom = top - remaining;
      let mut policy = Policy::from_preset(Preset::Secure);
      policy.max_nesting_depth = u32::MAX;
      policy.max_script_bytes = u64::MAX;
      policy.language = language;
      // Bypass the growth path: this thread already has far more than the bound asks for.
      let _ = std::hint::black_box(validate(&script, &policy));
      let _ = std::hint::black_box(prepare(&script, &policy, PrepareOptions { count_iterations: true }));
      // SAFETY: [bottom, top) is this thread's own mapped stack (stacker read its limits); it is
      // only read, below the current frame.
      let mut p = bottom + 4096;
      while p < top && unsafe { std::ptr::read_volatile(p as *const u8) } == 0 {
        p += 1;
      }
      top - p
    })
    .ok()
    .and_then(|h| h.join().ok())
    .unwrap_or(0)
}

fn main() {
  let n = 20_000;
  let inputs: Vec<(&str, String)> = vec![
    ("parens", format!("{}1{}", "(".repeat(n), ")".repeat(n))),
    ("arrays", format!("{}1{}", "[".repeat(n), "]".repeat(n))),
    ("objects", format!("{}1{}", "{a:".repeat(n), "}".repeat(n))),
    ("arrows", "a=>".repeat(n) + "a"),
    ("templates", format!("{}1{}", "`${".repeat(n), "}`".repeat(n))),
    ("unary", "!".repeat(n) + "x"),
    ("binary", "1+".repeat(n) + "1"),
    ("conditional", "a?b:".repeat(n) + "c"),
    ("assignment", "x=".repeat(n) + "1"),
    ("if", "if(a)".repeat(n) + ";"),
    ("else-if", format!("if(a){{}}{}", "else if(a){}".repeat(n))),
    ("new", "new ".repeat(n) + "X"),
    ("await", "await ".repeat(n) + "x"),
    ("calls", format!("{}x{}", "f(".repeat(n), ")".repeat(n))),
    ("blocks", "{".repeat(n) + &"}".repeat(n)),
    ("labels", "l:".repeat(n) + "1"),
    ("functions", "function f(){".repeat(n) + &"}".repeat(n)),
    ("spread", "[...".repeat(n) + "x" + &"]".repeat(n)),
    ("async arrows", "async()=>".repeat(n) + "1"),
    ("member", format!("x{}", ".a".repeat(n))),
    ("ts generics", format!("let x: {}1{}", "A<".repeat(n), ">".repeat(n))),
    ("ts unions", format!("let x: {}", "(A|".repeat(n) + "B" + &")".repeat(n))),
  ];
  let mut worst = 0.0f64;
  for (name, script) in inputs {
    for language in [Language::JavaScript, Language::TypeScript] {
      let used = used_stack(script.clone(), language);
      let per_byte = used as f64 / script.len() as f64;
      worst = worst.max(per_byte);
      println!(
        "{name:>14} {language:?}: {used:>10} bytes of stack for {:>7} bytes of source = {per_byte:7.1} B/byte",
        script.len()
      );
    }
  }
  println!("worst: {worst:.1} B/byte (bound: {} B/byte)", codecall_native::validator::STACK_PER_SOURCE_BYTE);
}
