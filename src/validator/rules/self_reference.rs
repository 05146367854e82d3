//! `SELF_REFERENCE_BLOCKED`: `callTool('codecall:execute', ...)` and any other literal call of the
//! engine's own meta-tools. A script that runs scripts would escape every per-execution limit.
//! Computed names are caught at run time by the sandbox's own check.

use oxc_ast::ast::{Argument, CallExpression, Expression};
use oxc_ast_visit::{walk, Visit};
use oxc_span::GetSpan;

use super::{unwrap_expression, First, Rule, Violation, KIND_SELF_REFERENCE};
use crate::{common::ErrorCode, validator::policy::Policy};

pub struct SelfReferenceRule<'p> {
  policy: &'p Policy,
  first: First,
}

impl<'p> SelfReferenceRule<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    Self { policy, first: First::default() }
  }
}

impl<'a> Rule<'a> for SelfReferenceRule<'_> {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

/// The literal tool name of a `callTool(...)` call, if the call is one and the name is static.
pub(crate) fn literal_tool_name<'a>(call: &CallExpression<'a>) -> Option<Option<&'a str>> {
  if !unwrap_expression(&call.callee).is_specific_id("callTool") {
    return None;
  }
  let name = match call.arguments.first() {
    Some(Argument::StringLiteral(s)) => Some(s.value.as_str()),
    Some(Argument::TemplateLiteral(t)) => t.single_quasi().map(|q| q.as_str()),
    Some(arg) => match arg.as_expression().map(unwrap_expression) {
      Some(Expression::StringLiteral(s)) => Some(s.value.as_str()),
      Some(Expression::TemplateLiteral(t)) => t.single_quasi().map(|q| q.as_str()),
      _ => None,
    },
    None => None,
  };
  Some(name)
}

impl<'a> Visit<'a> for SelfReferenceRule<'_> {
  fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
    if let Some(Some(name)) = literal_tool_name(call) {
      if self.policy.self_reference.matches(name) {
        self.first.report(Violation {
          code: ErrorCode::SelfReferenceBlocked,
          kind: KIND_SELF_REFERENCE,
          message: format!("callTool('{name}') is blocked: scripts cannot call CodeCall's own meta-tools"),
          span: call.arguments.first().map_or(call.span, |a| a.span()),
        });
      }
    }
    walk::walk_call_expression(self, call);
  }
}
