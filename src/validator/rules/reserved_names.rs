//! `ReservedIdentifier`: names with a reserved prefix (always `__cc_`, plus `reservedPrefixes`)
//! belong to the sandbox's own machinery (the loop counter, the wrapper's parameters). User code
//! may not declare, reference or access them as properties.

use oxc_ast::ast::{BindingIdentifier, ComputedMemberExpression, IdentifierName, IdentifierReference, LabelIdentifier};
use oxc_ast_visit::{walk, Visit};
use oxc_span::{GetSpan, Span};

use super::{First, Rule, Violation, KIND_RESERVED};
use crate::validator::policy::Policy;

pub struct ReservedNames<'p> {
  policy: &'p Policy,
  first: First,
}

impl<'p> ReservedNames<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    Self { policy, first: First::default() }
  }

  fn check(&mut self, name: &str, span: Span) {
    if self.policy.reserved(name) {
      self.first.report(Violation::validation(
        KIND_RESERVED,
        format!("Identifier '{name}' uses a prefix reserved for the sandbox"),
        span,
      ));
    }
  }
}

impl<'a> Rule<'a> for ReservedNames<'_> {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

impl<'a> Visit<'a> for ReservedNames<'_> {
  fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
    self.check(&it.name, it.span);
  }
  fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
    self.check(&it.name, it.span);
  }
  fn visit_label_identifier(&mut self, it: &LabelIdentifier<'a>) {
    self.check(&it.name, it.span);
  }
  fn visit_identifier_name(&mut self, it: &IdentifierName<'a>) {
    self.check(&it.name, it.span);
  }
  fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
    if let Some(name) = it.static_property_name() {
      self.check(&name, it.expression.span());
    }
    walk::walk_computed_member_expression(self, it);
  }
}
