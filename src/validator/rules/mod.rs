//! The AgentScript rules (seed 000, "Security pipeline"; `api.md` §3). One rule, one file; each is
//! an `oxc_ast_visit::Visit` that remembers the first place it objects to.
//!
//! | rule                 | kind(s)                                   | when                          |
//! |----------------------|-------------------------------------------|-------------------------------|
//! | `identifiers`        | `IllegalBuiltinAccess`, `DisallowedGlobal` | always                        |
//! | `loops`              | `LoopNotAllowed`                          | `!allowLoops`                 |
//! | `module_syntax`      | `DynamicImport`, `ImportMeta`, `ModuleSyntax` | always                    |
//! | `with_statement`     | `WithStatement`                           | always                        |
//! | `forbidden_members`  | `ForbiddenMember`                         | `locked_down`, `secure`       |
//! | `reserved_names`     | `ReservedIdentifier`                      | always (`__cc_` and more)     |
//! | `self_reference`     | `SelfReference` (`SELF_REFERENCE_BLOCKED`) | always                       |
//!
//! The rules read the AST only; they never rewrite it. When several rules object, the violation
//! that comes first in the source is reported, so the answer does not depend on rule order.

mod forbidden_members;
mod identifiers;
mod loops;
mod module_syntax;
mod reserved_names;
pub(crate) mod self_reference;
mod with_statement;

use oxc_ast::ast::{Expression, Program};
use oxc_ast_visit::Visit;
use oxc_span::Span;

use super::policy::Policy;
use crate::common::ErrorCode;

pub const KIND_ILLEGAL_BUILTIN: &str = "IllegalBuiltinAccess";
pub const KIND_DISALLOWED_GLOBAL: &str = "DisallowedGlobal";
pub const KIND_LOOP: &str = "LoopNotAllowed";
pub const KIND_FORBIDDEN_MEMBER: &str = "ForbiddenMember";
pub const KIND_DYNAMIC_IMPORT: &str = "DynamicImport";
pub const KIND_IMPORT_META: &str = "ImportMeta";
pub const KIND_MODULE_SYNTAX: &str = "ModuleSyntax";
pub const KIND_WITH: &str = "WithStatement";
pub const KIND_RESERVED: &str = "ReservedIdentifier";
pub const KIND_SELF_REFERENCE: &str = "SelfReference";
pub const KIND_SCRIPT_TOO_LARGE: &str = "ScriptTooLarge";
pub const KIND_NESTING_TOO_DEEP: &str = "NestingTooDeep";

/// One broken rule, at a place in the (type-stripped) script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
  pub code: ErrorCode,
  pub kind: &'static str,
  pub message: String,
  pub span: Span,
}

impl Violation {
  pub fn validation(kind: &'static str, message: String, span: Span) -> Self {
    Self { code: ErrorCode::ValidationError, kind, message, span }
  }
}

/// Keeps the earliest violation a rule finds.
#[derive(Default)]
pub(crate) struct First(Option<Violation>);

impl First {
  pub fn report(&mut self, violation: Violation) {
    match &self.0 {
      Some(existing) if existing.span.start <= violation.span.start => {}
      _ => self.0 = Some(violation),
    }
  }

  pub fn into_inner(self) -> Option<Violation> {
    self.0
  }
}

/// A rule: a visitor built from the policy that yields its first violation.
pub(crate) trait Rule<'a>: Visit<'a> + Sized {
  fn into_violation(self) -> Option<Violation>;

  fn run(mut self, program: &Program<'a>) -> Option<Violation> {
    self.visit_program(program);
    self.into_violation()
  }
}

/// Runs every rule the policy switches on; returns the violation that comes first in the source.
pub fn check<'a>(program: &Program<'a>, policy: &Policy) -> Option<Violation> {
  let found = [
    identifiers::Identifiers::new(policy).run(program),
    if policy.allow_loops { None } else { loops::Loops::default().run(program) },
    module_syntax::ModuleSyntax::default().run(program),
    with_statement::WithStatement::default().run(program),
    if policy.forbid_prototype_members { forbidden_members::ForbiddenMembers::default().run(program) } else { None },
    reserved_names::ReservedNames::new(policy).run(program),
    self_reference::SelfReferenceRule::new(policy).run(program),
  ];
  found.into_iter().flatten().min_by_key(|v| v.span.start)
}

/// Names that evaluate to the global object itself.
pub(crate) const GLOBAL_ALIASES: &[&str] = &["globalThis", "self", "window", "global"];

/// Strips parentheses, TypeScript wrappers and a wrapping optional chain.
pub(crate) fn unwrap_expression<'b, 'a>(expr: &'b Expression<'a>) -> &'b Expression<'a> {
  expr.get_inner_expression()
}

/// Is this expression the global object (`globalThis`, `(self)`, `globalThis.globalThis`, ...)?
pub(crate) fn is_global_object(expr: &Expression<'_>) -> bool {
  match unwrap_expression(expr) {
    Expression::Identifier(id) => GLOBAL_ALIASES.contains(&id.name.as_str()),
    Expression::StaticMemberExpression(member) => {
      GLOBAL_ALIASES.contains(&member.property.name.as_str()) && is_global_object(&member.object)
    }
    Expression::ComputedMemberExpression(member) => {
      member.static_property_name().is_some_and(|n| GLOBAL_ALIASES.contains(&n.as_str())) && is_global_object(&member.object)
    }
    Expression::ChainExpression(chain) => match chain.expression.member_expression() {
      Some(member) => {
        member.static_property_name().is_some_and(|n| GLOBAL_ALIASES.contains(&n)) && is_global_object(member.object())
      }
      None => false,
    },
    _ => false,
  }
}
