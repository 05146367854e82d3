//! Cutting text to a byte budget without splitting a character: messages that quote a script's
//! or a host's text (a tool name, an error message) show a readable prefix and say how long it was.

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

#[cfg(test)]
mod tests {
  use super::char_prefix;

  #[test]
  fn prefixes_end_on_character_boundaries() {
    assert_eq!(char_prefix("abc", 5), "abc");
    assert_eq!(char_prefix("abc", 2), "ab");
    assert_eq!(char_prefix("aé", 2), "a"); // é is two bytes
    assert_eq!(char_prefix("é", 0), "");
  }
}
