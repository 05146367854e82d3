//! From a QuickJS exception to what the caller sees: the error's name, message, and a stack whose
//! frames name only `script.js:<line>:<col>` in the user's own script (never the wrapper, the
//! prelude or a host path).

use crate::validator::{Location, SourceMapping};

/// The file name scripts are compiled under; the only one stacks may show.
pub const SCRIPT_FILE: &str = "script.js";

/// The first `script.js:L:C` position in a QuickJS stack, mapped to the user's script when a
/// mapping is given.
pub fn first_frame(stack: &str, mapping: Option<&SourceMapping>) -> Option<(u32, u32)> {
  stack.lines().find_map(parse_frame).map(|(line, column)| match mapping {
    Some(m) => {
      let l = m.to_user(line, column);
      (l.line, l.column)
    }
    None => (line, column),
  })
}

/// `    at name (script.js:3:5)` or `    at script.js:3:5` → (3, 5).
fn parse_frame(line: &str) -> Option<(u32, u32)> {
  let at = line.find(SCRIPT_FILE)?;
  let rest = &line[at + SCRIPT_FILE.len()..];
  let rest = rest.strip_prefix(':')?;
  let mut parts = rest.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty());
  let line_no = parts.next()?.parse().ok()?;
  let column = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
  Some((line_no, column))
}

/// Rewrites a QuickJS stack: keeps only the user's frames, with mapped positions.
pub fn user_stack(name: &str, message: &str, stack: &str, mapping: &SourceMapping) -> (String, Option<Location>) {
  let mut out = if message.is_empty() { name.to_string() } else { format!("{name}: {message}") };
  let mut first = None;
  for line in stack.lines() {
    let Some((l, c)) = parse_frame(line) else { continue };
    let location = mapping.to_user(l, c);
    first.get_or_insert(location);
    let function =
      line.trim_start().strip_prefix("at ").and_then(|f| f.split(" (").next()).filter(|f| !f.starts_with(SCRIPT_FILE));
    match function {
      Some(f) if !f.is_empty() && f != "<anonymous>" => {
        out.push_str(&format!("\n    at {f} ({SCRIPT_FILE}:{}:{})", location.line, location.column))
      }
      _ => out.push_str(&format!("\n    at {SCRIPT_FILE}:{}:{}", location.line, location.column)),
    }
  }
  (out, first)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn parses_frames() {
    assert_eq!(parse_frame("    at foo (script.js:3:5)"), Some((3, 5)));
    assert_eq!(parse_frame("    at script.js:12:1"), Some((12, 1)));
    assert_eq!(parse_frame("    at <codecall>:1:1"), None);
    assert_eq!(parse_frame("    at /home/user/app/script.json:3:5"), None);
  }
}
