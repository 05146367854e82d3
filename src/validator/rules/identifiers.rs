//! Disallowed identifiers (`disabledBuiltins` → `IllegalBuiltinAccess`, `disabledGlobals` →
//! `DisallowedGlobal`) wherever they are referenced: calls, shorthand properties (`{ eval }`),
//! destructuring defaults, computed keys, and as properties of the global object
//! (`globalThis?.process`, `self['eval']`, `const { fetch } = globalThis`). `\u0065val` is `eval`:
//! oxc decodes escapes in identifiers.
//!
//! Property names elsewhere (`obj.process`, `{ process: 1 }`) and strings stay allowed: they do not
//! name the global.

use std::collections::HashMap;

use oxc_ast::ast::{
  AssignmentExpression, AssignmentTarget, AssignmentTargetProperty, BindingPattern, ComputedMemberExpression,
  IdentifierReference, PropertyKey, StaticMemberExpression, VariableDeclarator,
};
use oxc_span::{GetSpan, Span};

use super::{is_global_object, Findings, Rule, Violation};
use crate::validator::policy::Policy;

pub struct Identifiers<'p> {
  /// Name → kind, built once per validation from the policy's lists.
  disallowed: HashMap<&'p str, &'static str>,
}

impl<'p> Identifiers<'p> {
  pub fn new(policy: &'p Policy) -> Self {
    let mut disallowed = HashMap::new();
    for name in &policy.disabled_globals {
      disallowed.insert(name.as_str(), super::KIND_DISALLOWED_GLOBAL);
    }
    if !policy.allow_console {
      disallowed.insert("console", super::KIND_DISALLOWED_GLOBAL);
    }
    // Builtins last: a name in both lists is reported as a builtin.
    for name in &policy.disabled_builtins {
      disallowed.insert(name.as_str(), super::KIND_ILLEGAL_BUILTIN);
    }
    Self { disallowed }
  }

  fn check(&self, name: &str, span: Span, out: &mut Findings) {
    if let Some(&kind) = self.disallowed.get(name) {
      out.report(span, || {
        Violation::validation(kind, format!("Identifier '{name}' is not allowed in AgentScript"), span)
      });
    }
  }

  fn check_key(&self, key: &PropertyKey<'_>, out: &mut Findings) {
    if let Some(name) = key.static_name() {
      self.check(&name, key.span(), out);
    }
  }
}

impl Rule for Identifiers<'_> {
  fn identifier_reference(&mut self, it: &IdentifierReference<'_>, out: &mut Findings) {
    self.check(&it.name, it.span, out);
  }

  fn static_member(&mut self, it: &StaticMemberExpression<'_>, out: &mut Findings) {
    if is_global_object(&it.object) {
      self.check(&it.property.name, it.property.span, out);
    }
  }

  fn computed_member(&mut self, it: &ComputedMemberExpression<'_>, out: &mut Findings) {
    if is_global_object(&it.object) {
      if let Some(name) = it.static_property_name() {
        self.check(&name, it.expression.span(), out);
      }
    }
  }

  // `const { fetch } = globalThis`
  fn variable_declarator(&mut self, it: &VariableDeclarator<'_>, out: &mut Findings) {
    if let (BindingPattern::ObjectPattern(pattern), Some(init)) = (&it.id, &it.init) {
      if is_global_object(init) {
        for prop in &pattern.properties {
          self.check_key(&prop.key, out);
        }
      }
    }
  }

  // `({ fetch } = globalThis)`
  fn assignment_expression(&mut self, it: &AssignmentExpression<'_>, out: &mut Findings) {
    if let AssignmentTarget::ObjectAssignmentTarget(target) = &it.left {
      if is_global_object(&it.right) {
        for prop in &target.properties {
          match prop {
            AssignmentTargetProperty::AssignmentTargetPropertyIdentifier(p) => self.check(&p.binding.name, p.span, out),
            AssignmentTargetProperty::AssignmentTargetPropertyProperty(p) => self.check_key(&p.name, out),
          }
        }
      }
    }
  }
}
