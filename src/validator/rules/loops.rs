//! `LoopNotAllowed`: every loop statement when the policy has `allowLoops: false`, wherever it
//! hides (arrow bodies, labels, `for await`). Linear plans are the point of `secure`: array methods
//! (`map`, `filter`, `reduce`) do the same work with the iteration visible to the reviewer.

use oxc_ast::ast::{DoWhileStatement, ForInStatement, ForOfStatement, ForStatement, WhileStatement};
use oxc_ast_visit::Visit;
use oxc_span::Span;

use super::{First, Rule, Violation, KIND_LOOP};

#[derive(Default)]
pub struct Loops {
  first: First,
}

impl Loops {
  fn report(&mut self, what: &str, span: Span) {
    self.first.report(Violation::validation(
      KIND_LOOP,
      format!("Loops are not allowed by this policy ({what}); use array methods such as map, filter and reduce, or a preset with allowLoops"),
      span,
    ));
  }
}

impl<'a> Rule<'a> for Loops {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

// A loop's own span starts before anything inside it, so the walk can stop at the first loop.
impl<'a> Visit<'a> for Loops {
  fn visit_for_statement(&mut self, it: &ForStatement<'a>) {
    self.report("for", it.span);
  }
  fn visit_for_in_statement(&mut self, it: &ForInStatement<'a>) {
    self.report("for...in", it.span);
  }
  fn visit_for_of_statement(&mut self, it: &ForOfStatement<'a>) {
    self.report(if it.r#await { "for await...of" } else { "for...of" }, it.span);
  }
  fn visit_while_statement(&mut self, it: &WhileStatement<'a>) {
    self.report("while", it.span);
  }
  fn visit_do_while_statement(&mut self, it: &DoWhileStatement<'a>) {
    self.report("do...while", it.span);
  }
}
