//! The nesting pre-check: refuses scripts nested deeper than `maxNestingDepth` before they reach
//! the parser.
//!
//! oxc's parser and every AST visitor are recursive, so nesting is what a hostile script would use
//! to exhaust the stack. This scan is linear and allocation-light: it skips strings, comments,
//! regular expressions and template text, and counts as one level each `(`, `[`, `{`, template
//! substitution `${`, and arrow function with an expression body (`a => a => a` nests with no
//! brackets at all).
//!
//! It is a policy check, not the only guard: a scanner cannot decide every `/` the way the parser
//! does, so the parser still runs with a stack sized for the whole input (see `stack.rs`).

/// Where the pre-check stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
  /// Byte offset of the token that went one level past the limit.
  pub offset: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FrameKind {
  Root,
  Paren { condition: bool },
  Bracket,
  Brace,
  TemplateSubstitution,
}

struct Frame {
  kind: FrameKind,
  /// Expression-bodied arrows opened at this level and not yet ended by `,` `;` or the frame's close.
  arrows: u32,
}

/// After this token, does a `/` start a regular expression (rather than divide)?
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
  RegexAllowed,
  Division,
}

/// After these keywords a `/` starts a regular expression.
fn regex_after(word: &[u8]) -> bool {
  matches!(
    word,
    b"return"
      | b"typeof"
      | b"instanceof"
      | b"in"
      | b"of"
      | b"new"
      | b"delete"
      | b"void"
      | b"throw"
      | b"case"
      | b"do"
      | b"else"
      | b"yield"
      | b"await"
  )
}

/// Keywords that cannot continue an arrow's expression body: seeing one ends every open arrow.
fn ends_arrows(word: &[u8]) -> bool {
  matches!(
    word,
    b"const"
      | b"let"
      | b"var"
      | b"return"
      | b"if"
      | b"for"
      | b"while"
      | b"do"
      | b"throw"
      | b"try"
      | b"switch"
      | b"break"
      | b"continue"
  )
}

fn is_ident_byte(b: u8) -> bool {
  b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'\\' || b >= 0x80
}

/// Returns the deepest nesting seen, or where it first exceeded `max_depth`.
pub fn check(source: &str, max_depth: u32) -> Result<u32, TooDeep> {
  Scanner {
    src: source.as_bytes(),
    pos: 0,
    frames: vec![Frame { kind: FrameKind::Root, arrows: 0 }],
    arrows: 0,
    max_depth,
    deepest: 0,
  }
  .run()
}

struct Scanner<'s> {
  src: &'s [u8],
  pos: usize,
  frames: Vec<Frame>,
  /// Sum of `arrows` over all frames.
  arrows: u32,
  max_depth: u32,
  deepest: u32,
}

impl Scanner<'_> {
  fn depth(&self) -> u32 {
    (self.frames.len() as u32 - 1) + self.arrows
  }

  fn note_depth(&mut self, at: usize) -> Result<(), TooDeep> {
    let depth = self.depth();
    self.deepest = self.deepest.max(depth);
    if depth > self.max_depth {
      return Err(TooDeep { offset: at as u32 });
    }
    Ok(())
  }

  fn end_arrows(&mut self) {
    if let Some(top) = self.frames.last_mut() {
      self.arrows -= top.arrows;
      top.arrows = 0;
    }
  }

  fn push(&mut self, kind: FrameKind, at: usize) -> Result<(), TooDeep> {
    self.frames.push(Frame { kind, arrows: 0 });
    self.note_depth(at)
  }

  /// Pops the innermost frame (never the root) and returns its kind.
  fn pop(&mut self) -> Option<FrameKind> {
    if self.frames.len() <= 1 {
      return None;
    }
    let frame = self.frames.pop()?;
    self.arrows -= frame.arrows;
    Some(frame.kind)
  }

  fn run(mut self) -> Result<u32, TooDeep> {
    let mut prev = Prev::RegexAllowed;
    // The keyword just before a `(`, to know whether its `)` ends an `if (...)`-style condition.
    let mut last_word_is_condition_keyword = false;
    while self.pos < self.src.len() {
      let start = self.pos;
      let b = self.src[start];
      let word_before = last_word_is_condition_keyword;
      last_word_is_condition_keyword = false;
      match b {
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
          self.pos += 1;
          while self.pos < self.src.len() && matches!(self.src[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
          }
          last_word_is_condition_keyword = word_before;
        }
        b'/' if self.src.get(start + 1) == Some(&b'/') => {
          self.skip_line_comment();
          last_word_is_condition_keyword = word_before;
        }
        b'/' if self.src.get(start + 1) == Some(&b'*') => {
          self.skip_block_comment();
          last_word_is_condition_keyword = word_before;
        }
        b'/' => {
          if prev == Prev::RegexAllowed {
            self.skip_regex();
            prev = Prev::Division;
          } else {
            self.pos += 1;
            prev = Prev::RegexAllowed;
          }
        }
        b'\'' | b'"' => {
          self.skip_string(b);
          prev = Prev::Division;
        }
        b'`' => {
          self.pos += 1;
          if self.scan_template_text() {
            self.push(FrameKind::TemplateSubstitution, start)?;
            prev = Prev::RegexAllowed;
          } else {
            prev = Prev::Division;
          }
        }
        b'(' => {
          self.pos += 1;
          self.push(FrameKind::Paren { condition: word_before }, start)?;
          prev = Prev::RegexAllowed;
        }
        b'[' => {
          self.pos += 1;
          self.push(FrameKind::Bracket, start)?;
          prev = Prev::RegexAllowed;
        }
        b'{' => {
          self.pos += 1;
          self.push(FrameKind::Brace, start)?;
          prev = Prev::RegexAllowed;
        }
        b')' | b']' | b'}' => {
          self.pos += 1;
          match self.pop() {
            Some(FrameKind::TemplateSubstitution) if b == b'}' => {
              if self.scan_template_text() {
                self.push(FrameKind::TemplateSubstitution, start)?;
                prev = Prev::RegexAllowed;
              } else {
                prev = Prev::Division;
              }
            }
            Some(FrameKind::Paren { condition: true }) => prev = Prev::RegexAllowed,
            _ => prev = if b == b'}' { Prev::RegexAllowed } else { Prev::Division },
          }
        }
        b'=' if self.src.get(start + 1) == Some(&b'>') => {
          self.pos += 2;
          let mut next = self.pos;
          while next < self.src.len() && matches!(self.src[next], b' ' | b'\t' | b'\n' | b'\r') {
            next += 1;
          }
          // A block body is counted by its own brace.
          if self.src.get(next) != Some(&b'{') {
            if let Some(top) = self.frames.last_mut() {
              top.arrows += 1;
            }
            self.arrows += 1;
            self.note_depth(start)?;
          }
          prev = Prev::RegexAllowed;
        }
        b',' | b';' => {
          self.pos += 1;
          self.end_arrows();
          prev = Prev::RegexAllowed;
        }
        b'0'..=b'9' => {
          self.skip_number();
          prev = Prev::Division;
        }
        b'.' if self.src.get(start + 1).is_some_and(u8::is_ascii_digit) => {
          self.skip_number();
          prev = Prev::Division;
        }
        _ if is_ident_byte(b) => {
          while self.pos < self.src.len() && is_ident_byte(self.src[self.pos]) {
            self.pos += 1;
          }
          let word = &self.src[start..self.pos];
          if ends_arrows(word) {
            self.end_arrows();
          }
          last_word_is_condition_keyword = matches!(word, b"if" | b"while" | b"for" | b"with");
          prev = if regex_after(word) { Prev::RegexAllowed } else { Prev::Division };
        }
        _ => {
          // Any other punctuator.
          self.pos += 1;
          prev = Prev::RegexAllowed;
        }
      }
    }
    Ok(self.deepest)
  }

  fn skip_line_comment(&mut self) {
    while self.pos < self.src.len() && !matches!(self.src[self.pos], b'\n' | b'\r') {
      self.pos += 1;
    }
  }

  fn skip_block_comment(&mut self) {
    self.pos += 2;
    while self.pos < self.src.len() {
      if self.src[self.pos] == b'*' && self.src.get(self.pos + 1) == Some(&b'/') {
        self.pos += 2;
        return;
      }
      self.pos += 1;
    }
  }

  fn skip_string(&mut self, quote: u8) {
    self.pos += 1;
    while self.pos < self.src.len() {
      match self.src[self.pos] {
        b'\\' => self.pos += 2,
        b'\n' | b'\r' => return,
        c => {
          self.pos += 1;
          if c == quote {
            return;
          }
        }
      }
    }
  }

  fn skip_regex(&mut self) {
    self.pos += 1;
    let mut in_class = false;
    while self.pos < self.src.len() {
      match self.src[self.pos] {
        b'\\' => self.pos += 2,
        b'\n' | b'\r' => return,
        b'[' => {
          in_class = true;
          self.pos += 1;
        }
        b']' => {
          in_class = false;
          self.pos += 1;
        }
        b'/' if !in_class => {
          self.pos += 1;
          while self.pos < self.src.len() && is_ident_byte(self.src[self.pos]) {
            self.pos += 1;
          }
          return;
        }
        _ => self.pos += 1,
      }
    }
  }

  fn skip_number(&mut self) {
    while self.pos < self.src.len()
      && (self.src[self.pos].is_ascii_alphanumeric() || matches!(self.src[self.pos], b'.' | b'_'))
    {
      self.pos += 1;
    }
  }

  /// Scans template text after a backtick or a substitution's `}`. Returns `true` when it stopped
  /// at `${` (consumed), `false` at the closing backtick or the end of input.
  fn scan_template_text(&mut self) -> bool {
    while self.pos < self.src.len() {
      match self.src[self.pos] {
        b'\\' => self.pos += 2,
        b'`' => {
          self.pos += 1;
          return false;
        }
        b'$' if self.src.get(self.pos + 1) == Some(&b'{') => {
          self.pos += 2;
          return true;
        }
        _ => self.pos += 1,
      }
    }
    false
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn depth(src: &str) -> u32 {
    match check(src, u32::MAX) {
      Ok(d) => d,
      Err(e) => panic!("unexpected refusal at {}", e.offset),
    }
  }

  #[test]
  fn counts_brackets_templates_and_arrows() {
    assert_eq!(depth("a + b"), 0);
    assert_eq!(depth("f(a[0], {b: 1})"), 2);
    assert_eq!(depth("`${`${x}`}`"), 2);
    assert_eq!(depth("const f = a => b => c => a + b + c;"), 3);
    assert_eq!(depth("items.map(x => { return x; })"), 2);
    assert_eq!(depth("const f = x => x\nconst g = y => y\nconst h = z => z"), 1);
  }

  #[test]
  fn skips_strings_comments_and_regexes() {
    assert_eq!(depth("'((((' + \"[[[[\" // ((((\n/* {{{{ */ x"), 0);
    assert_eq!(depth("const r = /[(]{2}\\)/g.test(s)"), 1);
    assert_eq!(depth("if (x) /((/.test(y)"), 1);
    assert_eq!(depth("a / (b) / c"), 1);
  }

  #[test]
  fn refuses_past_the_limit_with_an_offset() {
    let src = "[".repeat(30_000);
    assert_eq!(check(&src, 64), Err(TooDeep { offset: 64 }));
    let arrows = "a=>".repeat(30_000) + "a";
    assert!(check(&arrows, 64).is_err());
    let templates = "`${".repeat(30_000);
    assert!(check(&templates, 64).is_err());
    assert!(check(&"(".repeat(64), 64).is_ok());
  }
}
