//! Which tools a script calls, as far as the source says: `callTool('a')` with a literal name is
//! known statically; any other use of `callTool` (a computed name, a spread, passing `callTool`
//! around) makes the set open-ended (`dynamicToolCalls: true`). Fed by the rules' single walk.

use oxc_ast::ast::{CallExpression, IdentifierReference};
use oxc_span::{GetSpan, Span};

use super::rules::self_reference::literal_tool_name;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolNames {
  /// Distinct literal names, in order of first appearance.
  pub names: Vec<String>,
  pub dynamic: bool,
  /// The `callTool` identifier of the call being walked: a direct callee, not a dynamic use.
  callee: Option<Span>,
}

impl ToolNames {
  /// Called at every call expression, before its callee and arguments are walked.
  pub fn call_expression(&mut self, call: &CallExpression<'_>) {
    match literal_tool_name(call) {
      Some(Some(name)) => {
        if !self.names.iter().any(|n| n == name) {
          self.names.push(name.to_string());
        }
        self.callee = Some(call.callee.get_inner_expression().span());
      }
      Some(None) => self.dynamic = true,
      None => {}
    }
  }

  /// Called at every identifier reference.
  pub fn identifier_reference(&mut self, it: &IdentifierReference<'_>) {
    if it.name == "callTool" && self.callee != Some(it.span) {
      self.dynamic = true;
    }
  }
}
