//! Cutting text to a byte budget without splitting a character: messages that quote a script's
//! or a host's text (a tool name, an error message) show a readable prefix and say how long it was.
//! And the near miss of a mistyped name, for errors that name what was meant.

/// The longest prefix of `text` that is at most `max` bytes and ends on a character boundary.
pub fn char_prefix(text: &str, max: usize) -> &str {
  if text.len() <= max {
    return text;
  }
  let mut end = max;
  while !text.is_char_boundary(end) {
    end -= 1;
  }
  &text[..end]
}

/// The name in `known` that `name` most likely meant: the same but for case, or the nearest within
/// a few edits (2, or 3 for names of 10 characters or more). `None` when nothing is that close.
pub fn near_miss<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
  let lower = name.to_lowercase();
  if let Some(k) = known.iter().find(|k| k.to_lowercase() == lower) {
    return Some(k);
  }
  let budget = if name.chars().count() >= 10 { 3 } else { 2 };
  known
    .iter()
    .map(|k| (edit_distance(&lower, &k.to_lowercase()), *k))
    .filter(|(d, _)| *d <= budget)
    .min_by_key(|(d, _)| *d)
    .map(|(_, k)| k)
}

/// Levenshtein distance over characters (names are short: O(a·b) is fine).
fn edit_distance(a: &str, b: &str) -> usize {
  let b: Vec<char> = b.chars().collect();
  let mut row: Vec<usize> = (0..=b.len()).collect();
  for (i, ca) in a.chars().enumerate() {
    let mut diagonal = row[0];
    row[0] = i + 1;
    for j in 0..b.len() {
      let above = row[j + 1];
      row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != b[j]));
      diagonal = above;
    }
  }
  row[b.len()]
}

#[cfg(test)]
mod tests {
  use super::{char_prefix, near_miss};

  #[test]
  fn near_misses_are_close_names_only() {
    let known = ["timeoutMs", "memoryLimitBytes", "poolSize", "preset"];
    assert_eq!(near_miss("timeout", &known), Some("timeoutMs"));
    assert_eq!(near_miss("TimeoutMS", &known), Some("timeoutMs"));
    assert_eq!(near_miss("memoryLimitByte", &known), Some("memoryLimitBytes"));
    assert_eq!(near_miss("presets", &known), Some("preset"));
    assert_eq!(near_miss("bogusOption", &known), None);
    assert_eq!(near_miss("x", &known), None);
  }

  #[test]
  fn prefixes_end_on_character_boundaries() {
    assert_eq!(char_prefix("abc", 5), "abc");
    assert_eq!(char_prefix("abc", 2), "ab");
    assert_eq!(char_prefix("aé", 2), "a"); // é is two bytes
    assert_eq!(char_prefix("é", 0), "");
  }
}
