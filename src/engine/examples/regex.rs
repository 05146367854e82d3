//! A small regular-expression engine (ECMAScript syntax, `u` flag, no backreferences or
//! lookbehind): parse, match under a step budget, and sample a matching string.

use super::*;
// ---------------------------------------------------------------------------------------------
// A small regular-expression engine (ECMAScript syntax, `u` flag, no backreferences/lookbehind)
// ---------------------------------------------------------------------------------------------

/// Patterns longer than this many characters are not read.
pub(super) const RE_MAX_LEN: usize = 1000;
/// Groups nest at most this deep.
pub(super) const RE_MAX_NEST: usize = 16;
/// Counted repetitions above this are read as unbounded (matched text is shorter anyway).
pub(super) const RE_MAX_COUNT: u32 = 256;
/// Texts longer than this many characters are not matched.
pub(super) const RE_MAX_TEXT: usize = 200;
/// Matching steps, and nested matcher frames, per search.
pub(super) const RE_MAX_STEPS: usize = 50_000;
pub(super) const RE_MAX_FRAMES: usize = 800;

#[derive(Debug)]
pub(super) enum Re {
  Empty,
  Char(char),
  /// Inclusive code point ranges; `true` when negated.
  Set(Vec<(u32, u32)>, bool),
  Start,
  End,
  /// `\b` (true) or `\B`.
  Boundary(bool),
  /// Lookahead; `true` when negative.
  Look(Box<Re>, bool),
  Cat(Vec<Re>),
  Alt(Vec<Re>),
  /// `(node, min, max, greedy)`
  Rep(Box<Re>, u32, Option<u32>, bool),
}

pub(super) enum Escape {
  Char(char),
  Set(Vec<(u32, u32)>, bool),
  Boundary(bool),
}

pub(super) const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
pub(super) const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)];
pub(super) const SPACE: &[(u32, u32)] = &[
  (0x09, 0x0d),
  (0x20, 0x20),
  (0xa0, 0xa0),
  (0x1680, 0x1680),
  (0x2000, 0x200a),
  (0x2028, 0x2029),
  (0x202f, 0x202f),
  (0x205f, 0x205f),
  (0x3000, 0x3000),
  (0xfeff, 0xfeff),
];
pub(super) const LINE_TERMINATORS: &[(u32, u32)] = &[(0x0a, 0x0a), (0x0d, 0x0d), (0x2028, 0x2029)];

pub(super) fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
  let mut sorted = ranges.to_vec();
  sorted.sort_unstable();
  let mut out = Vec::new();
  let mut next = 0u32;
  for (lo, hi) in sorted {
    if lo > next {
      out.push((next, lo - 1));
    }
    next = next.max(hi.saturating_add(1));
  }
  if next <= 0x10ffff {
    out.push((next, 0x10ffff));
  }
  out
}

pub(super) fn parse_regex(src: &str) -> Option<Re> {
  let chars: Vec<char> = src.chars().take(RE_MAX_LEN + 1).collect();
  if chars.len() > RE_MAX_LEN {
    return None;
  }
  let mut parser = ReParser { s: chars, i: 0, depth: 0 };
  let re = parser.alternation()?;
  (parser.i == parser.s.len()).then_some(re)
}

pub(super) struct ReParser {
  pub(super) s: Vec<char>,
  pub(super) i: usize,
  pub(super) depth: usize,
}

impl ReParser {
  pub(super) fn peek(&self) -> Option<char> {
    self.s.get(self.i).copied()
  }

  pub(super) fn eat(&mut self, c: char) -> bool {
    if self.peek() == Some(c) {
      self.i += 1;
      true
    } else {
      false
    }
  }

  pub(super) fn next(&mut self) -> Option<char> {
    let c = self.peek()?;
    self.i += 1;
    Some(c)
  }

  pub(super) fn alternation(&mut self) -> Option<Re> {
    self.depth += 1;
    if self.depth > RE_MAX_NEST {
      return None;
    }
    let mut alts = vec![self.sequence()?];
    while self.eat('|') {
      alts.push(self.sequence()?);
    }
    self.depth -= 1;
    Some(if alts.len() == 1 { alts.pop()? } else { Re::Alt(alts) })
  }

  pub(super) fn sequence(&mut self) -> Option<Re> {
    let mut items = Vec::new();
    while let Some(c) = self.peek() {
      if c == '|' || c == ')' {
        break;
      }
      let atom = self.atom()?;
      items.push(self.quantified(atom)?);
    }
    Some(match items.len() {
      0 => Re::Empty,
      1 => items.pop()?,
      _ => Re::Cat(items),
    })
  }

  pub(super) fn atom(&mut self) -> Option<Re> {
    Some(match self.next()? {
      '^' => Re::Start,
      '$' => Re::End,
      '.' => Re::Set(LINE_TERMINATORS.to_vec(), true),
      '(' => {
        let mut look = None;
        if self.eat('?') {
          if self.eat('=') {
            look = Some(false);
          } else if self.eat('!') {
            look = Some(true);
          } else if self.eat('<') {
            // A named group; lookbehinds are not read.
            loop {
              match self.next()? {
                '>' => break,
                c if c.is_alphanumeric() || c == '_' || c == '$' => {}
                _ => return None,
              }
            }
          } else if !self.eat(':') {
            return None;
          }
        }
        let inner = self.alternation()?;
        if !self.eat(')') {
          return None;
        }
        match look {
          Some(negative) => Re::Look(Box::new(inner), negative),
          None => inner,
        }
      }
      '[' => self.class()?,
      '\\' => match self.escape(false)? {
        Escape::Char(c) => Re::Char(c),
        Escape::Set(ranges, negated) => Re::Set(ranges, negated),
        Escape::Boundary(b) => Re::Boundary(b),
      },
      '*' | '+' | '?' | '{' | '}' | ']' | ')' => return None,
      c => Re::Char(c),
    })
  }

  pub(super) fn hex(&mut self, n: usize) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..n {
      v = v * 16 + self.next()?.to_digit(16)?;
    }
    Some(v)
  }

  pub(super) fn escape(&mut self, in_class: bool) -> Option<Escape> {
    let c = self.next()?;
    let ch = |c: char| Some(Escape::Char(c));
    match c {
      'd' => Some(Escape::Set(DIGIT.to_vec(), false)),
      'D' => Some(Escape::Set(DIGIT.to_vec(), true)),
      'w' => Some(Escape::Set(WORD.to_vec(), false)),
      'W' => Some(Escape::Set(WORD.to_vec(), true)),
      's' => Some(Escape::Set(SPACE.to_vec(), false)),
      'S' => Some(Escape::Set(SPACE.to_vec(), true)),
      'b' if in_class => ch('\u{8}'),
      'b' => Some(Escape::Boundary(true)),
      'B' if !in_class => Some(Escape::Boundary(false)),
      't' => ch('\t'),
      'n' => ch('\n'),
      'r' => ch('\r'),
      'f' => ch('\u{c}'),
      'v' => ch('\u{b}'),
      '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => ch('\0'),
      'x' => char::from_u32(self.hex(2)?).map(Escape::Char),
      'u' => {
        let code = if self.eat('{') {
          let mut v = 0u32;
          let mut n = 0;
          while !self.eat('}') {
            v = v.checked_mul(16)?.checked_add(self.next()?.to_digit(16)?)?;
            n += 1;
            if n > 6 {
              return None;
            }
          }
          v
        } else {
          self.hex(4)?
        };
        char::from_u32(code).map(Escape::Char)
      }
      'c' => {
        let letter = self.next().filter(char::is_ascii_alphabetic)?;
        char::from_u32(letter as u32 % 32).map(Escape::Char)
      }
      '-' if in_class => ch('-'),
      c if c.is_ascii_alphanumeric() => None,
      c if "^$\\.*+?()[]{}|/".contains(c) => ch(c),
      _ => None,
    }
  }

  pub(super) fn class(&mut self) -> Option<Re> {
    let negated = self.eat('^');
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    loop {
      let c = self.next()?;
      if c == ']' {
        break;
      }
      let first = if c == '\\' { self.escape(true)? } else { Escape::Char(c) };
      match first {
        Escape::Char(lo) => {
          if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|n| *n != ']') {
            self.i += 1;
            let c = self.next()?;
            let hi = if c == '\\' { self.escape(true)? } else { Escape::Char(c) };
            match hi {
              Escape::Char(hi) if hi >= lo => ranges.push((lo as u32, hi as u32)),
              _ => return None,
            }
          } else {
            ranges.push((lo as u32, lo as u32));
          }
        }
        Escape::Set(set, false) => ranges.extend(set),
        Escape::Set(set, true) => ranges.extend(complement(&set)),
        Escape::Boundary(_) => return None,
      }
    }
    Some(Re::Set(ranges, negated))
  }

  pub(super) fn quantified(&mut self, atom: Re) -> Option<Re> {
    let (min, max) = match self.peek() {
      Some('*') => (0, None),
      Some('+') => (1, None),
      Some('?') => (0, Some(1)),
      Some('{') => {
        let start = self.i;
        self.i += 1;
        let number = |p: &mut Self| -> Option<u32> {
          let mut v: Option<u32> = None;
          while let Some(d) = p.peek().and_then(|c| c.to_digit(10)) {
            p.i += 1;
            v = Some(v.unwrap_or(0).saturating_mul(10).saturating_add(d));
          }
          v
        };
        let min = number(self)?;
        let max = if self.eat(',') { number(self) } else { Some(min) };
        if !self.eat('}') || max.is_some_and(|m| m < min) {
          self.i = start;
          return None;
        }
        self.i -= 1;
        (min, max)
      }
      _ => return Some(atom),
    };
    self.i += 1;
    if matches!(atom, Re::Start | Re::End | Re::Boundary(_) | Re::Look(..)) || min > RE_MAX_COUNT {
      return None;
    }
    let max = max.filter(|m| *m <= RE_MAX_COUNT);
    let greedy = !self.eat('?');
    Some(Re::Rep(Box::new(atom), min, max, greedy))
  }
}

pub(super) fn set_contains(ranges: &[(u32, u32)], negated: bool, c: char) -> bool {
  ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&(c as u32))) != negated
}

/// Whether `re` matches somewhere in `text` (as `RegExp.prototype.test`), in at most `budget`
/// steps (and [`RE_MAX_STEPS`]); `None` when the text is too long or the steps run out. Also
/// returns the steps taken.
pub(super) fn regex_search(re: &Re, text: &str, budget: usize) -> (Option<bool>, usize) {
  let chars: Vec<char> = text.chars().take(RE_MAX_TEXT + 1).collect();
  if chars.len() > RE_MAX_TEXT {
    return (None, 1);
  }
  let limit = budget.min(RE_MAX_STEPS);
  let matcher = Matcher { text: &chars, steps: Cell::new(0), limit, frames: Cell::new(0), blown: Cell::new(false) };
  let mut found = Some(false);
  for start in 0..=chars.len() {
    if matcher.run(re, start, &mut |_| true) {
      found = Some(true);
      break;
    }
    if matcher.blown.get() {
      break;
    }
  }
  let found = if matcher.blown.get() { None } else { found };
  (found, matcher.steps.get().max(1))
}

pub(super) struct Matcher<'t> {
  pub(super) text: &'t [char],
  pub(super) steps: Cell<usize>,
  pub(super) limit: usize,
  pub(super) frames: Cell<usize>,
  pub(super) blown: Cell<bool>,
}

impl Matcher<'_> {
  /// Backtracking match of `re` at `pos`, then the continuation `k` with the end position.
  pub(super) fn run(&self, re: &Re, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    if self.blown.get() {
      return false;
    }
    let steps = self.steps.get() + 1;
    let frames = self.frames.get() + 1;
    if steps > self.limit || frames > RE_MAX_FRAMES {
      self.blown.set(true);
      return false;
    }
    self.steps.set(steps);
    self.frames.set(frames);
    let matched = self.step(re, pos, k);
    self.frames.set(frames - 1);
    matched
  }

  pub(super) fn step(&self, re: &Re, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let text = self.text;
    match re {
      Re::Empty => k(pos),
      Re::Char(c) => text.get(pos) == Some(c) && k(pos + 1),
      Re::Set(ranges, negated) => text.get(pos).is_some_and(|c| set_contains(ranges, *negated, *c)) && k(pos + 1),
      Re::Start => pos == 0 && k(pos),
      Re::End => pos == text.len() && k(pos),
      Re::Boundary(want) => {
        let word =
          |i: Option<usize>| i.and_then(|i| text.get(i)).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_');
        let at = word(pos.checked_sub(1)) != word(Some(pos));
        at == *want && k(pos)
      }
      Re::Look(inner, negative) => {
        let found = self.run(inner, pos, &mut |_| true);
        found != *negative && k(pos)
      }
      Re::Cat(items) => self.sequence(items, pos, k),
      Re::Alt(alts) => alts.iter().any(|alt| self.run(alt, pos, &mut *k)),
      Re::Rep(inner, min, max, greedy) => self.repeat(inner, *min, *max, *greedy, 0, pos, k),
    }
  }

  pub(super) fn sequence(&self, items: &[Re], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match items.split_first() {
      None => k(pos),
      Some((first, rest)) => self.run(first, pos, &mut |p| self.sequence(rest, p, &mut *k)),
    }
  }

  #[allow(clippy::too_many_arguments)]
  pub(super) fn repeat(
    &self,
    inner: &Re,
    min: u32,
    max: Option<u32>,
    greedy: bool,
    count: u32,
    pos: usize,
    k: &mut dyn FnMut(usize) -> bool,
  ) -> bool {
    if self.blown.get() {
      return false;
    }
    let can_stop = count >= min;
    let can_go = max.is_none_or(|m| count < m);
    let more = |k: &mut dyn FnMut(usize) -> bool| {
      can_go
        && self.run(inner, pos, &mut |p| {
          // An empty iteration past the minimum ends the loop (as in ECMAScript).
          (p != pos || count < min) && self.repeat(inner, min, max, greedy, count + 1, p, &mut *k)
        })
    };
    // Greedy: one more iteration first, then stop; lazy: the other way round.
    let first_more = greedy;
    if first_more && more(&mut *k) {
      return true;
    }
    if can_stop && k(pos) {
      return true;
    }
    !first_more && more(&mut *k)
  }
}

/// Appends a string matching `re` (lookarounds aside): the fewest repetitions plus `extra`, the
/// `alt`-th alternative (modulo), friendly characters from classes. `steps` bounds the work.
pub(super) fn sample(re: &Re, extra: usize, alt: usize, out: &mut String, steps: &mut usize) {
  if *steps == 0 || out.len() > 600 {
    return;
  }
  *steps -= 1;
  match re {
    Re::Char(c) => out.push(*c),
    Re::Set(ranges, negated) => out.extend(pick_char(ranges, *negated)),
    Re::Cat(items) => {
      for item in items {
        sample(item, extra, alt, out, steps);
      }
    }
    Re::Alt(alts) => {
      if let Some(a) = alts.get(alt % alts.len().max(1)) {
        sample(a, extra, alt, out, steps);
      }
    }
    Re::Rep(inner, min, max, _) => {
      let want = (*min as usize).saturating_add(extra);
      let count = max.map_or(want, |m| want.min(m as usize)).max(*min as usize);
      for _ in 0..count {
        if *steps == 0 || out.len() > 600 {
          break;
        }
        sample(inner, extra, alt, out, steps);
      }
    }
    Re::Empty | Re::Start | Re::End | Re::Boundary(_) | Re::Look(..) => {}
  }
}

pub(super) fn pick_char(ranges: &[(u32, u32)], negated: bool) -> Option<char> {
  pub(super) const FRIENDLY: &str = "a1Ax0_-. ";
  if let Some(c) = FRIENDLY.chars().find(|c| set_contains(ranges, negated, *c)) {
    return Some(c);
  }
  if negated {
    (0x21..0x7f).filter_map(char::from_u32).find(|c| set_contains(ranges, true, *c))
  } else {
    ranges.iter().find_map(|(lo, hi)| (*lo..=*hi).take(64).find_map(char::from_u32))
  }
}
