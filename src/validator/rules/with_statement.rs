//! `with` statements: they make every name in their body resolve through an arbitrary object,
//! which defeats the identifier rules.

use oxc_ast::ast::WithStatement as WithNode;
use oxc_ast_visit::Visit;

use super::{First, Rule, Violation, KIND_WITH};

#[derive(Default)]
pub struct WithStatement {
  first: First,
}

impl<'a> Rule<'a> for WithStatement {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

impl<'a> Visit<'a> for WithStatement {
  fn visit_with_statement(&mut self, it: &WithNode<'a>) {
    self.first.report(Violation::validation(KIND_WITH, "'with' statements are not allowed in AgentScript".into(), it.span));
  }
}
