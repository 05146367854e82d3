//! `ForbiddenMember` (presets `locked_down` and `secure`): reaching `constructor`, `__proto__` or
//! `prototype` by name — `x.constructor`, `x['constructor']`, `` x[`__proto__`] ``, and the same
//! names in destructuring (`const { constructor: C } = f`) and `__proto__` in object literals.
//! These are how scripts climb from any value to `Function`; the sandbox also neuters those
//! constructors, this rule keeps the attempt from running at all.

use oxc_ast::ast::{
  AssignmentTargetPropertyIdentifier, AssignmentTargetPropertyProperty, BindingProperty, ComputedMemberExpression,
  ObjectProperty, PropertyKey, StaticMemberExpression,
};
use oxc_ast_visit::{walk, Visit};
use oxc_span::{GetSpan, Span};

use super::{First, Rule, Violation, KIND_FORBIDDEN_MEMBER};

const FORBIDDEN: &[&str] = &[
  "constructor",
  "__proto__",
  "prototype",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
];

#[derive(Default)]
pub struct ForbiddenMembers {
  first: First,
}

impl ForbiddenMembers {
  fn check(&mut self, name: &str, span: Span) {
    if FORBIDDEN.contains(&name) {
      self.first.report(Violation::validation(
        KIND_FORBIDDEN_MEMBER,
        format!("Access to '{name}' is not allowed in AgentScript"),
        span,
      ));
    }
  }

  fn check_key(&mut self, key: &PropertyKey<'_>) {
    if let Some(name) = key.static_name() {
      self.check(&name, key.span());
    }
  }
}

impl<'a> Rule<'a> for ForbiddenMembers {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

impl<'a> Visit<'a> for ForbiddenMembers {
  fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
    self.check(&it.property.name, it.property.span);
    walk::walk_static_member_expression(self, it);
  }

  fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
    if let Some(name) = it.static_property_name() {
      self.check(&name, it.expression.span());
    }
    walk::walk_computed_member_expression(self, it);
  }

  fn visit_binding_property(&mut self, it: &BindingProperty<'a>) {
    self.check_key(&it.key);
    walk::walk_binding_property(self, it);
  }

  fn visit_assignment_target_property_identifier(&mut self, it: &AssignmentTargetPropertyIdentifier<'a>) {
    self.check(&it.binding.name, it.binding.span);
    walk::walk_assignment_target_property_identifier(self, it);
  }

  fn visit_assignment_target_property_property(&mut self, it: &AssignmentTargetPropertyProperty<'a>) {
    self.check_key(&it.name);
    walk::walk_assignment_target_property_property(self, it);
  }

  // `{ __proto__: evil }` sets the new object's prototype.
  fn visit_object_property(&mut self, it: &ObjectProperty<'a>) {
    if !it.computed && !it.shorthand && it.key.static_name().as_deref() == Some("__proto__") {
      self.check("__proto__", it.key.span());
    }
    walk::walk_object_property(self, it);
  }
}
