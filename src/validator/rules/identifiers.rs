//! Disallowed identifiers (`disabledBuiltins` → `IllegalBuiltinAccess`, `disabledGlobals` →
//! `DisallowedGlobal`) wherever they are referenced: calls, shorthand properties (`{ eval }`),
//! destructuring defaults, computed keys, and as properties of the global object
//! (`globalThis?.process`, `self['eval']`, `const { fetch } = globalThis`).
//!
//! Property names elsewhere (`obj.process`, `{ process: 1 }`) and strings stay allowed: they do not
//! name the global.

use oxc_ast::ast::{
  AssignmentExpression, AssignmentTarget, AssignmentTargetProperty, BindingPattern, ComputedMemberExpression,
  IdentifierReference, PropertyKey, StaticMemberExpression, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_span::Span;

use super::{is_global_object, First, Rule, Violation};
use crate::validator::policy::Policy;

pub struct Identifiers<'p> {
  policy: &'p Policy,
  first: First,
}

impl<'p> Identifiers<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    Self { policy, first: First::default() }
  }

  fn check_name(&mut self, name: &str, span: Span) {
    if let Some(kind) = self.policy.disallowed(name) {
      self.first.report(Violation::validation(kind, format!("Identifier '{name}' is not allowed in AgentScript"), span));
    }
  }

  fn check_key(&mut self, key: &PropertyKey<'_>) {
    if let Some(name) = key.static_name() {
      self.check_name(&name, oxc_span::GetSpan::span(key));
    }
  }
}

impl<'a> Rule<'a> for Identifiers<'_> {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

impl<'a> Visit<'a> for Identifiers<'_> {
  fn visit_identifier_reference(&mut self, ident: &IdentifierReference<'a>) {
    self.check_name(&ident.name, ident.span);
  }

  fn visit_static_member_expression(&mut self, member: &StaticMemberExpression<'a>) {
    if is_global_object(&member.object) {
      self.check_name(&member.property.name, member.property.span);
    }
    walk::walk_static_member_expression(self, member);
  }

  fn visit_computed_member_expression(&mut self, member: &ComputedMemberExpression<'a>) {
    if is_global_object(&member.object) {
      if let Some(name) = member.static_property_name() {
        self.check_name(&name, oxc_span::GetSpan::span(&member.expression));
      }
    }
    walk::walk_computed_member_expression(self, member);
  }

  // `const { fetch } = globalThis`
  fn visit_variable_declarator(&mut self, decl: &VariableDeclarator<'a>) {
    if let (BindingPattern::ObjectPattern(pattern), Some(init)) = (&decl.id, &decl.init) {
      if is_global_object(init) {
        for prop in &pattern.properties {
          self.check_key(&prop.key);
        }
      }
    }
    walk::walk_variable_declarator(self, decl);
  }

  // `({ fetch } = globalThis)`
  fn visit_assignment_expression(&mut self, assign: &AssignmentExpression<'a>) {
    if let AssignmentTarget::ObjectAssignmentTarget(target) = &assign.left {
      if is_global_object(&assign.right) {
        for prop in &target.properties {
          match prop {
            AssignmentTargetProperty::AssignmentTargetPropertyIdentifier(p) => self.check_name(&p.binding.name, p.span),
            AssignmentTargetProperty::AssignmentTargetPropertyProperty(p) => self.check_key(&p.name),
          }
        }
      }
    }
    walk::walk_assignment_expression(self, assign);
  }
}
