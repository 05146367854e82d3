//! A small regular-expression engine (ECMAScript syntax, `u` flag, no backreferences or
//! lookbehind): parse, match under a step budget, and sample a matching string.

use oxc_allocator::Allocator;
use oxc_regular_expression::{ast, LiteralParser, Options};

use super::*;

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

/// Reads a JSON Schema `pattern` (ECMAScript syntax with the `u` flag) with oxc's parser, and keeps
/// what the matcher below runs: `None` for backreferences, lookbehinds, `\p{…}`, modifiers, groups
/// nested deeper than [`RE_MAX_NEST`], and counts above [`RE_MAX_COUNT`] (as a minimum).
pub(super) fn parse_regex(src: &str) -> Option<Re> {
  if src.chars().nth(RE_MAX_LEN).is_some() {
    return None;
  }
  if group_depth(src) > RE_MAX_NEST {
    // oxc's parser recurses once per group: refuse deep nesting before it can use the stack.
    return None;
  }
  let allocator = Allocator::default();
  let pattern = LiteralParser::new(&allocator, src, Some("u"), Options::default()).parse().ok()?;
  disjunction(&pattern.body, 0)
}

/// How deep groups nest in `src` (escapes and character classes skipped).
fn group_depth(src: &str) -> usize {
  let (mut depth, mut deepest, mut in_class) = (0usize, 0usize, false);
  let mut chars = src.chars();
  while let Some(c) = chars.next() {
    match c {
      '\\' => {
        chars.next();
      }
      '[' if !in_class => in_class = true,
      ']' if in_class => in_class = false,
      '(' if !in_class => {
        depth += 1;
        deepest = deepest.max(depth);
      }
      ')' if !in_class => depth = depth.saturating_sub(1),
      _ => {}
    }
  }
  deepest
}

fn disjunction(d: &ast::Disjunction, depth: usize) -> Option<Re> {
  if depth >= RE_MAX_NEST {
    return None;
  }
  let mut alts = d.body.iter().map(|a| alternative(a, depth)).collect::<Option<Vec<_>>>()?;
  Some(if alts.len() == 1 { alts.pop()? } else { Re::Alt(alts) })
}

fn alternative(a: &ast::Alternative, depth: usize) -> Option<Re> {
  let mut items = a.body.iter().map(|t| term(t, depth)).collect::<Option<Vec<_>>>()?;
  Some(match items.len() {
    0 => Re::Empty,
    1 => items.pop()?,
    _ => Re::Cat(items),
  })
}

fn term(t: &ast::Term, depth: usize) -> Option<Re> {
  use ast::Term as T;
  Some(match t {
    T::BoundaryAssertion(b) => match b.kind {
      ast::BoundaryAssertionKind::Start => Re::Start,
      ast::BoundaryAssertionKind::End => Re::End,
      ast::BoundaryAssertionKind::Boundary => Re::Boundary(true),
      ast::BoundaryAssertionKind::NegativeBoundary => Re::Boundary(false),
    },
    T::LookAroundAssertion(l) => match l.kind {
      ast::LookAroundAssertionKind::Lookahead => Re::Look(Box::new(disjunction(&l.body, depth + 1)?), false),
      ast::LookAroundAssertionKind::NegativeLookahead => Re::Look(Box::new(disjunction(&l.body, depth + 1)?), true),
      ast::LookAroundAssertionKind::Lookbehind | ast::LookAroundAssertionKind::NegativeLookbehind => return None,
    },
    T::Quantifier(q) => {
      let atom = term(&q.body, depth)?;
      let min = u32::try_from(q.min).ok().filter(|m| *m <= RE_MAX_COUNT)?;
      if matches!(atom, Re::Start | Re::End | Re::Boundary(_) | Re::Look(..)) {
        return None;
      }
      let max = q.max.and_then(|m| u32::try_from(m).ok()).filter(|m| *m <= RE_MAX_COUNT);
      Re::Rep(Box::new(atom), min, max, q.greedy)
    }
    T::Character(c) => Re::Char(char::from_u32(c.value)?),
    T::Dot(_) => Re::Set(LINE_TERMINATORS.to_vec(), true),
    T::CharacterClassEscape(e) => {
      let (ranges, negated) = class_escape(e.kind);
      Re::Set(ranges.to_vec(), negated)
    }
    T::CharacterClass(c) => class(c)?,
    T::CapturingGroup(g) => disjunction(&g.body, depth + 1)?,
    T::IgnoreGroup(g) if g.modifiers.is_none() => disjunction(&g.body, depth + 1)?,
    T::IgnoreGroup(_) | T::UnicodePropertyEscape(_) | T::IndexedReference(_) | T::NamedReference(_) => return None,
  })
}

fn class_escape(kind: ast::CharacterClassEscapeKind) -> (&'static [(u32, u32)], bool) {
  use ast::CharacterClassEscapeKind as K;
  match kind {
    K::D => (DIGIT, false),
    K::NegativeD => (DIGIT, true),
    K::S => (SPACE, false),
    K::NegativeS => (SPACE, true),
    K::W => (WORD, false),
    K::NegativeW => (WORD, true),
  }
}

fn class(c: &ast::CharacterClass) -> Option<Re> {
  use ast::CharacterClassContents as C;
  if c.kind != ast::CharacterClassContentsKind::Union {
    return None;
  }
  let mut ranges: Vec<(u32, u32)> = Vec::new();
  for item in &c.body {
    match item {
      C::Character(ch) => {
        char::from_u32(ch.value)?;
        ranges.push((ch.value, ch.value));
      }
      C::CharacterClassRange(r) => {
        char::from_u32(r.min.value)?;
        char::from_u32(r.max.value)?;
        ranges.push((r.min.value, r.max.value));
      }
      C::CharacterClassEscape(e) => match class_escape(e.kind) {
        (set, false) => ranges.extend_from_slice(set),
        (set, true) => ranges.extend(complement(set)),
      },
      C::UnicodePropertyEscape(_) | C::NestedCharacterClass(_) | C::ClassStringDisjunction(_) => return None,
    }
  }
  Some(Re::Set(ranges, c.negative))
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
