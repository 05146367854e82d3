//! `SELF_REFERENCE_BLOCKED`: `callTool('codecall:execute', ...)` and any other literal call of the
//! engine's own meta-tools. A script that runs scripts would escape every per-execution limit.
//! Computed names are caught at run time by the sandbox's own check.

use oxc_ast::ast::{Argument, CallExpression, Expression};
use oxc_span::GetSpan;

use super::{Findings, Rule, Violation, KIND_SELF_REFERENCE};
use crate::{common::ErrorCode, validator::policy::Policy};

pub struct SelfReferenceRule<'p> {
  policy: &'p Policy,
}

impl<'p> SelfReferenceRule<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    Self { policy }
  }
}

/// For a `callTool(...)` call: `Some(Some(name))` with a literal name, `Some(None)` with a computed
/// one. `None` for any other call.
pub(crate) fn literal_tool_name<'a>(call: &CallExpression<'a>) -> Option<Option<&'a str>> {
  if !call.callee.get_inner_expression().is_specific_id("callTool") {
    return None;
  }
  let name = match call.arguments.first() {
    Some(Argument::StringLiteral(s)) => Some(s.value.as_str()),
    Some(Argument::TemplateLiteral(t)) => t.single_quasi().map(|q| q.as_str()),
    Some(arg) => match arg.as_expression().map(Expression::get_inner_expression) {
      Some(Expression::StringLiteral(s)) => Some(s.value.as_str()),
      Some(Expression::TemplateLiteral(t)) => t.single_quasi().map(|q| q.as_str()),
      _ => None,
    },
    None => None,
  };
  Some(name)
}

impl Rule for SelfReferenceRule<'_> {
  fn call_expression(&mut self, call: &CallExpression<'_>, out: &mut Findings) {
    if let Some(Some(name)) = literal_tool_name(call) {
      if self.policy.self_reference.matches(name) {
        let span = call.arguments.first().map_or(call.span, |a| a.span());
        out.report(span, || Violation {
          code: ErrorCode::SelfReferenceBlocked,
          kind: KIND_SELF_REFERENCE,
          message: format!("callTool('{name}') is blocked: scripts cannot call CodeCall's own meta-tools"),
          span,
        });
      }
    }
  }
}
