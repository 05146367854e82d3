//! `ForbiddenMember` (presets `locked_down` and `secure`): reaching `constructor`, `__proto__` or
//! `prototype` by name — `x.constructor`, `x['constructor']`, `` x[`__proto__`] ``, the same names
//! in destructuring (`const { constructor: C } = f`), and `__proto__` in object literals. These
//! are how scripts climb from any value to `Function`; the sandbox also neuters those
//! constructors, this rule keeps the attempt from running at all.

use oxc_ast::ast::{
  AssignmentTargetPropertyIdentifier, AssignmentTargetPropertyProperty, BindingProperty, ComputedMemberExpression,
  ObjectProperty, PropertyKey, StaticMemberExpression,
};
use oxc_span::{GetSpan, Span};

use super::{Findings, Rule, Violation, KIND_FORBIDDEN_MEMBER};

/// Member names the `secure` and `locked_down` presets refuse (`ForbiddenMember`); the usage
/// examples never print them as object keys either.
pub const FORBIDDEN: &[&str] = &[
  "constructor",
  "__proto__",
  "prototype",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
];

pub struct ForbiddenMembers;

fn check(name: &str, span: Span, out: &mut Findings) {
  if FORBIDDEN.contains(&name) {
    out.report(span, || {
      Violation::validation(KIND_FORBIDDEN_MEMBER, format!("Access to '{name}' is not allowed in AgentScript"), span)
    });
  }
}

fn check_key(key: &PropertyKey<'_>, out: &mut Findings) {
  if let Some(name) = key.static_name() {
    check(&name, key.span(), out);
  }
}

impl Rule for ForbiddenMembers {
  fn static_member(&mut self, it: &StaticMemberExpression<'_>, out: &mut Findings) {
    check(&it.property.name, it.property.span, out);
  }

  fn computed_member(&mut self, it: &ComputedMemberExpression<'_>, out: &mut Findings) {
    if let Some(name) = it.static_property_name() {
      check(&name, it.expression.span(), out);
    }
  }

  fn binding_property(&mut self, it: &BindingProperty<'_>, out: &mut Findings) {
    check_key(&it.key, out);
  }

  fn assignment_target_property_identifier(&mut self, it: &AssignmentTargetPropertyIdentifier<'_>, out: &mut Findings) {
    check(&it.binding.name, it.binding.span, out);
  }

  fn assignment_target_property_property(&mut self, it: &AssignmentTargetPropertyProperty<'_>, out: &mut Findings) {
    check_key(&it.name, out);
  }

  // `{ __proto__: evil }` sets the new object's prototype.
  fn object_property(&mut self, it: &ObjectProperty<'_>, out: &mut Findings) {
    if !it.computed && !it.shorthand && it.key.static_name().as_deref() == Some("__proto__") {
      check("__proto__", it.key.span(), out);
    }
  }
}
