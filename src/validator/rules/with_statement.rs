//! `with` statements: they make every name in their body resolve through an arbitrary object,
//! which defeats the identifier rules. (Strict mode forbids them too; this rule says why.)

use oxc_ast::ast::WithStatement;

use super::{Findings, Rule, Violation, KIND_WITH};

pub struct WithStatementRule;

impl Rule for WithStatementRule {
  fn with_statement(&mut self, it: &WithStatement<'_>, out: &mut Findings) {
    out.report(it.span, || {
      Violation::validation(KIND_WITH, "'with' statements are not allowed in AgentScript".into(), it.span)
    });
  }
}
