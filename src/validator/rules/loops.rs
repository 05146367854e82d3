//! `LoopNotAllowed`: every loop statement when the policy has `allowLoops: false`, wherever it
//! hides (arrow bodies, labels, `for await`, class methods). Linear plans are the point of
//! `secure`: array methods (`map`, `filter`, `reduce`) do the same work with the iteration visible.

use oxc_span::Span;

use super::{Findings, Rule, Violation, KIND_LOOP};

pub struct Loops;

impl Rule for Loops {
  fn loop_statement(&mut self, what: &'static str, span: Span, out: &mut Findings) {
    out.report(span, || {
      Violation::validation(
        KIND_LOOP,
        format!("Loops are not allowed by this policy ({what}); use array methods such as map, filter and reduce, or a preset with allowLoops"),
        span,
      )
    });
  }
}
