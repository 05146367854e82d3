//! Which tools a script calls, as far as the source says: `callTool('a')` with a literal name is
//! known statically; any other use of `callTool` (a computed name, a spread, passing `callTool`
//! around) makes the set open-ended (`dynamicToolCalls: true`).

use oxc_ast::ast::{CallExpression, IdentifierReference, Program};
use oxc_ast_visit::{walk, Visit};

use super::rules::self_reference::literal_tool_name;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolNames {
  /// Distinct literal names, in order of first appearance.
  pub names: Vec<String>,
  pub dynamic: bool,
}

impl ToolNames {
  pub fn collect(program: &Program<'_>) -> Self {
    let mut collector = Self::default();
    collector.visit_program(program);
    collector
  }
}

impl<'a> Visit<'a> for ToolNames {
  fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
    match literal_tool_name(call) {
      Some(Some(name)) => {
        if !self.names.iter().any(|n| n == name) {
          self.names.push(name.to_string());
        }
        // The callee is `callTool` itself: visit only the arguments.
        self.visit_arguments(&call.arguments);
      }
      Some(None) => {
        self.dynamic = true;
        self.visit_arguments(&call.arguments);
      }
      None => walk::walk_call_expression(self, call),
    }
  }

  fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
    if it.name == "callTool" {
      self.dynamic = true;
    }
  }
}
