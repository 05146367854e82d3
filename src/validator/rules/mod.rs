//! The AgentScript rules (seed 000, "Security pipeline"; `api.md` §3). One rule, one file.
//!
//! | rule                 | kind(s)                                        | when                     |
//! |----------------------|------------------------------------------------|--------------------------|
//! | `identifiers`        | `IllegalBuiltinAccess`, `DisallowedGlobal`      | always                   |
//! | `loops`              | `LoopNotAllowed`                               | `!allowLoops`            |
//! | `module_syntax`      | `DynamicImport`, `ImportMeta`, `ModuleSyntax`  | always                   |
//! | `with_statement`     | `WithStatement`                                | always                   |
//! | `forbidden_members`  | `ForbiddenMember`                              | `locked_down`, `secure`  |
//! | `reserved_names`     | `ReservedIdentifier`                           | always (`__cc_` and more) |
//! | `self_reference`     | `SelfReference` (`SELF_REFERENCE_BLOCKED`)     | always                   |
//!
//! Beside the rules, `engine_syntax` finds syntax oxc parses but QuickJS cannot run (decorators,
//! `accessor` fields, `#!`); the same walk reports it, as a syntax error rather than a violation.
//!
//! Each rule implements `Rule`: hooks for the AST nodes it cares about. `RuleWalker` is the one
//! `oxc_ast_visit::Visit` that walks the program once and calls every enabled rule's hook at each
//! node, so adding a rule costs a hook call, not another traversal of the tree.
//!
//! The rules read the AST only. When several object, the violation that comes first in the source
//! is reported, so the answer does not depend on rule order.

mod engine_syntax;
mod forbidden_members;
pub use forbidden_members::FORBIDDEN as FORBIDDEN_MEMBERS;
mod identifiers;
mod loops;
mod module_syntax;
mod reserved_names;
pub(crate) mod self_reference;
mod with_statement;

use oxc_ast::ast::{
  AccessorProperty, AssignmentExpression, AssignmentTargetPropertyIdentifier, AssignmentTargetPropertyProperty,
  BindingIdentifier, BindingProperty, CallExpression, ComputedMemberExpression, Decorator, DoWhileStatement,
  Expression, ForInStatement, ForOfStatement, ForStatement, Hashbang, IdentifierName, IdentifierReference,
  ImportExpression, ImportMeta, LabelIdentifier, ModuleDeclaration, ObjectProperty, Program, StaticMemberExpression,
  VariableDeclarator, WhileStatement, WithStatement,
};
use oxc_ast_visit::{walk, Visit};
use oxc_span::Span;

use super::policy::Policy;
use super::tool_names::ToolNames;
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

/// Every violation kind, in the order of the `ViolationKind` union in `src/types.d.ts` (a test
/// holds the two to each other).
#[cfg(test)]
pub const ALL_KINDS: [&str; 12] = [
  KIND_ILLEGAL_BUILTIN,
  KIND_DISALLOWED_GLOBAL,
  KIND_LOOP,
  KIND_FORBIDDEN_MEMBER,
  KIND_DYNAMIC_IMPORT,
  KIND_IMPORT_META,
  KIND_MODULE_SYNTAX,
  KIND_WITH,
  KIND_RESERVED,
  KIND_SELF_REFERENCE,
  KIND_SCRIPT_TOO_LARGE,
  KIND_NESTING_TOO_DEEP,
];

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

/// The earliest violation found so far, across all rules.
#[derive(Default)]
pub(crate) struct Findings(Option<Violation>);

impl Findings {
  /// Records a violation unless an earlier one is already known. Messages are built lazily:
  /// only a violation that is kept pays for its `format!`.
  pub fn report(&mut self, span: Span, make: impl FnOnce() -> Violation) {
    if self.0.as_ref().is_none_or(|existing| span.start < existing.span.start) {
      self.0 = Some(Violation { span, ..make() });
    }
  }
}

/// A rule: hooks called by `RuleWalker` at the nodes the rule cares about, before the node's
/// children are walked. Every hook defaults to doing nothing.
#[allow(unused_variables)]
pub(crate) trait Rule {
  fn identifier_reference(&mut self, it: &IdentifierReference<'_>, out: &mut Findings) {}
  fn binding_identifier(&mut self, it: &BindingIdentifier<'_>, out: &mut Findings) {}
  fn label_identifier(&mut self, it: &LabelIdentifier<'_>, out: &mut Findings) {}
  fn identifier_name(&mut self, it: &IdentifierName<'_>, out: &mut Findings) {}
  fn static_member(&mut self, it: &StaticMemberExpression<'_>, out: &mut Findings) {}
  fn computed_member(&mut self, it: &ComputedMemberExpression<'_>, out: &mut Findings) {}
  fn variable_declarator(&mut self, it: &VariableDeclarator<'_>, out: &mut Findings) {}
  fn assignment_expression(&mut self, it: &AssignmentExpression<'_>, out: &mut Findings) {}
  fn binding_property(&mut self, it: &BindingProperty<'_>, out: &mut Findings) {}
  fn assignment_target_property_identifier(&mut self, it: &AssignmentTargetPropertyIdentifier<'_>, out: &mut Findings) {
  }
  fn assignment_target_property_property(&mut self, it: &AssignmentTargetPropertyProperty<'_>, out: &mut Findings) {}
  fn object_property(&mut self, it: &ObjectProperty<'_>, out: &mut Findings) {}
  fn call_expression(&mut self, it: &CallExpression<'_>, out: &mut Findings) {}
  /// Any loop statement; `what` names it (`for`, `for...of`, `while`, ...).
  fn loop_statement(&mut self, what: &'static str, span: Span, out: &mut Findings) {}
  fn import_expression(&mut self, it: &ImportExpression<'_>, out: &mut Findings) {}
  fn import_meta(&mut self, it: &ImportMeta, out: &mut Findings) {}
  fn module_declaration(&mut self, it: &ModuleDeclaration<'_>, out: &mut Findings) {}
  fn with_statement(&mut self, it: &WithStatement<'_>, out: &mut Findings) {}
}

/// What one walk of the program found.
pub struct Outcome {
  /// Syntax the engine cannot run (the earliest): a syntax error, before any violation.
  pub unsupported_syntax: Option<(Span, &'static str)>,
  pub violation: Option<Violation>,
  pub tool_names: ToolNames,
}

/// Runs every rule the policy switches on, and collects the tool names, in one walk.
pub fn check(program: &Program<'_>, policy: &Policy) -> Outcome {
  let mut walker = RuleWalker {
    identifiers: identifiers::Identifiers::new(policy),
    loops: (!policy.allow_loops).then_some(loops::Loops),
    module_syntax: module_syntax::ModuleSyntax,
    with_statement: with_statement::WithStatementRule,
    forbidden_members: policy.forbid_prototype_members.then_some(forbidden_members::ForbiddenMembers),
    reserved_names: reserved_names::ReservedNames::new(policy),
    self_reference: self_reference::SelfReferenceRule::new(policy),
    tool_names: ToolNames::default(),
    findings: Findings::default(),
    engine_syntax: engine_syntax::EngineSyntax::default(),
  };
  walker.visit_program(program);
  Outcome { unsupported_syntax: walker.engine_syntax.0, violation: walker.findings.0, tool_names: walker.tool_names }
}

struct RuleWalker<'p> {
  identifiers: identifiers::Identifiers<'p>,
  loops: Option<loops::Loops>,
  module_syntax: module_syntax::ModuleSyntax,
  with_statement: with_statement::WithStatementRule,
  forbidden_members: Option<forbidden_members::ForbiddenMembers>,
  reserved_names: reserved_names::ReservedNames<'p>,
  self_reference: self_reference::SelfReferenceRule<'p>,
  tool_names: ToolNames,
  findings: Findings,
  engine_syntax: engine_syntax::EngineSyntax,
}

/// Calls `$hook` on every enabled rule.
macro_rules! each_rule {
  ($self:ident, $hook:ident ( $($arg:expr),* )) => {{
    let out = &mut $self.findings;
    $self.identifiers.$hook($($arg,)* out);
    if let Some(rule) = &mut $self.loops { rule.$hook($($arg,)* out); }
    $self.module_syntax.$hook($($arg,)* out);
    $self.with_statement.$hook($($arg,)* out);
    if let Some(rule) = &mut $self.forbidden_members { rule.$hook($($arg,)* out); }
    $self.reserved_names.$hook($($arg,)* out);
    $self.self_reference.$hook($($arg,)* out);
  }};
}

impl<'a> Visit<'a> for RuleWalker<'_> {
  fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
    each_rule!(self, identifier_reference(it));
    self.tool_names.identifier_reference(it);
  }
  fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
    each_rule!(self, binding_identifier(it));
  }
  fn visit_label_identifier(&mut self, it: &LabelIdentifier<'a>) {
    each_rule!(self, label_identifier(it));
  }
  fn visit_identifier_name(&mut self, it: &IdentifierName<'a>) {
    each_rule!(self, identifier_name(it));
  }
  fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
    each_rule!(self, static_member(it));
    walk::walk_static_member_expression(self, it);
  }
  fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
    each_rule!(self, computed_member(it));
    walk::walk_computed_member_expression(self, it);
  }
  fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
    each_rule!(self, variable_declarator(it));
    walk::walk_variable_declarator(self, it);
  }
  fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
    each_rule!(self, assignment_expression(it));
    walk::walk_assignment_expression(self, it);
  }
  fn visit_binding_property(&mut self, it: &BindingProperty<'a>) {
    each_rule!(self, binding_property(it));
    walk::walk_binding_property(self, it);
  }
  fn visit_assignment_target_property_identifier(&mut self, it: &AssignmentTargetPropertyIdentifier<'a>) {
    each_rule!(self, assignment_target_property_identifier(it));
    walk::walk_assignment_target_property_identifier(self, it);
  }
  fn visit_assignment_target_property_property(&mut self, it: &AssignmentTargetPropertyProperty<'a>) {
    each_rule!(self, assignment_target_property_property(it));
    walk::walk_assignment_target_property_property(self, it);
  }
  fn visit_object_property(&mut self, it: &ObjectProperty<'a>) {
    each_rule!(self, object_property(it));
    walk::walk_object_property(self, it);
  }
  fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
    each_rule!(self, call_expression(it));
    self.tool_names.call_expression(it);
    walk::walk_call_expression(self, it);
  }
  fn visit_for_statement(&mut self, it: &ForStatement<'a>) {
    each_rule!(self, loop_statement("for", it.span));
    walk::walk_for_statement(self, it);
  }
  fn visit_for_in_statement(&mut self, it: &ForInStatement<'a>) {
    each_rule!(self, loop_statement("for...in", it.span));
    walk::walk_for_in_statement(self, it);
  }
  fn visit_for_of_statement(&mut self, it: &ForOfStatement<'a>) {
    each_rule!(self, loop_statement(if it.r#await { "for await...of" } else { "for...of" }, it.span));
    walk::walk_for_of_statement(self, it);
  }
  fn visit_while_statement(&mut self, it: &WhileStatement<'a>) {
    each_rule!(self, loop_statement("while", it.span));
    walk::walk_while_statement(self, it);
  }
  fn visit_do_while_statement(&mut self, it: &DoWhileStatement<'a>) {
    each_rule!(self, loop_statement("do...while", it.span));
    walk::walk_do_while_statement(self, it);
  }
  fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
    each_rule!(self, import_expression(it));
    walk::walk_import_expression(self, it);
  }
  fn visit_import_meta(&mut self, it: &ImportMeta) {
    each_rule!(self, import_meta(it));
  }
  fn visit_module_declaration(&mut self, it: &ModuleDeclaration<'a>) {
    each_rule!(self, module_declaration(it));
    walk::walk_module_declaration(self, it);
  }
  fn visit_with_statement(&mut self, it: &WithStatement<'a>) {
    each_rule!(self, with_statement(it));
    walk::walk_with_statement(self, it);
  }
  fn visit_hashbang(&mut self, it: &Hashbang<'a>) {
    self.engine_syntax.report(it.span, engine_syntax::HASHBANG);
  }
  fn visit_decorator(&mut self, it: &Decorator<'a>) {
    self.engine_syntax.report(it.span, engine_syntax::DECORATOR);
    walk::walk_decorator(self, it);
  }
  fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
    self.engine_syntax.report(it.span, engine_syntax::ACCESSOR);
    walk::walk_accessor_property(self, it);
  }
}

/// Names that evaluate to the global object itself.
pub(crate) const GLOBAL_ALIASES: &[&str] = &["globalThis", "self", "window", "global"];

/// Is this expression the global object (`globalThis`, `(self)`, `globalThis.globalThis`, ...)?
pub(crate) fn is_global_object(expr: &Expression<'_>) -> bool {
  match expr.get_inner_expression() {
    Expression::Identifier(id) => GLOBAL_ALIASES.contains(&id.name.as_str()),
    Expression::StaticMemberExpression(member) => {
      GLOBAL_ALIASES.contains(&member.property.name.as_str()) && is_global_object(&member.object)
    }
    Expression::ComputedMemberExpression(member) => {
      member.static_property_name().is_some_and(|n| GLOBAL_ALIASES.contains(&n.as_str()))
        && is_global_object(&member.object)
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

#[cfg(test)]
mod kind_tests {
  /// One list, two languages: the TypeScript `ViolationKind` union is exactly `ALL_KINDS`.
  #[test]
  fn the_typescript_union_lists_every_kind() {
    assert_eq!(crate::common::typescript_union("ViolationKind"), super::ALL_KINDS.to_vec());
  }
}
