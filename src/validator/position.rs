//! Byte offsets (what oxc spans hold) to the positions users see: 1-based lines, and 1-based
//! columns counted in UTF-16 code units, as JavaScript engines and editors count them.

/// A line/column pair, both 1-based; `column` is in UTF-16 code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
  pub line: u32,
  pub column: u32,
}

/// Line starts of one source text, for repeated look-ups.
///
/// Line terminators are those of ECMAScript: `\n`, `\r\n`, a lone `\r`, U+2028 and U+2029.
pub struct LineIndex<'s> {
  source: &'s str,
  starts: Vec<u32>,
}

impl<'s> LineIndex<'s> {
  pub fn new(source: &'s str) -> Self {
    let bytes = source.as_bytes();
    let mut starts = vec![0u32];
    let mut i = 0;
    while i < bytes.len() {
      match bytes[i] {
        b'\n' => starts.push((i + 1) as u32),
        b'\r' => {
          if bytes.get(i + 1) == Some(&b'\n') {
            i += 1;
          }
          starts.push((i + 1) as u32);
        }
        // U+2028 / U+2029 are E2 80 A8 / E2 80 A9.
        0xE2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) => {
          i += 2;
          starts.push((i + 1) as u32);
        }
        _ => {}
      }
      i += 1;
    }
    Self { source, starts }
  }

  /// The location of a byte offset. Offsets past the end, or inside a UTF-8 sequence, are clamped
  /// to the nearest character boundary before them.
  pub fn locate(&self, offset: u32) -> Location {
    let mut offset = (offset as usize).min(self.source.len());
    while !self.source.is_char_boundary(offset) {
      offset -= 1;
    }
    let line_idx = self.starts.partition_point(|&s| s as usize <= offset).saturating_sub(1);
    let line_start = self.starts.get(line_idx).copied().unwrap_or(0) as usize;
    let column: usize = self.source[line_start..offset].chars().map(char::len_utf16).sum();
    Location { line: line_idx as u32 + 1, column: column as u32 + 1 }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn counts_lines_and_utf16_columns() {
    let src = "a\nb😀c\r\nd\re\u{2028}f";
    let idx = LineIndex::new(src);
    assert_eq!(idx.locate(0), Location { line: 1, column: 1 });
    assert_eq!(idx.locate(2), Location { line: 2, column: 1 });
    // 'c' comes after an astral char: two UTF-16 units.
    let c = src.find('c').unwrap_or_default() as u32;
    assert_eq!(idx.locate(c), Location { line: 2, column: 4 });
    let d = src.find('d').unwrap_or_default() as u32;
    assert_eq!(idx.locate(d), Location { line: 3, column: 1 });
    let e = src.find('e').unwrap_or_default() as u32;
    assert_eq!(idx.locate(e), Location { line: 4, column: 1 });
    let f = src.find('f').unwrap_or_default() as u32;
    assert_eq!(idx.locate(f), Location { line: 5, column: 1 });
    assert_eq!(idx.locate(10_000), Location { line: 5, column: 2 });
  }
}
