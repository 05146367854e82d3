//! `ReservedIdentifier`: names with a reserved prefix (always `__cc_`, plus `reservedPrefixes`)
//! belong to the sandbox's own machinery (the loop counter, the wrapper's parameters). User code
//! may not declare, reference or access them as properties.

use oxc_ast::ast::{BindingIdentifier, ComputedMemberExpression, IdentifierName, IdentifierReference, LabelIdentifier};
use oxc_span::{GetSpan, Span};

use super::{Findings, Rule, Violation, KIND_RESERVED};
use crate::validator::policy::Policy;

pub struct ReservedNames<'p> {
  policy: &'p Policy,
}

impl<'p> ReservedNames<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    Self { policy }
  }

  fn check(&self, name: &str, span: Span, out: &mut Findings) {
    if self.policy.reserved(name) {
      out.report(span, || {
        Violation::validation(
          KIND_RESERVED,
          format!("Identifier '{name}' uses a prefix reserved for the sandbox"),
          span,
        )
      });
    }
  }
}

impl Rule for ReservedNames<'_> {
  fn identifier_reference(&mut self, it: &IdentifierReference<'_>, out: &mut Findings) {
    self.check(&it.name, it.span, out);
  }
  fn binding_identifier(&mut self, it: &BindingIdentifier<'_>, out: &mut Findings) {
    self.check(&it.name, it.span, out);
  }
  fn label_identifier(&mut self, it: &LabelIdentifier<'_>, out: &mut Findings) {
    self.check(&it.name, it.span, out);
  }
  fn identifier_name(&mut self, it: &IdentifierName<'_>, out: &mut Findings) {
    self.check(&it.name, it.span, out);
  }
  fn computed_member(&mut self, it: &ComputedMemberExpression<'_>, out: &mut Findings) {
    if let Some(name) = it.static_property_name() {
      self.check(&name, it.expression.span(), out);
    }
  }
}
