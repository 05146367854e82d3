//! `import()`, `import.meta` and module declarations: a script is the body of a function with no
//! module loader behind it, so any of these is either an escape attempt or a plan that cannot run.

use oxc_ast::ast::{ImportExpression, ImportMeta, ModuleDeclaration};
use oxc_ast_visit::{walk, Visit};
use oxc_span::GetSpan;

use super::{First, Rule, Violation, KIND_DYNAMIC_IMPORT, KIND_IMPORT_META, KIND_MODULE_SYNTAX};

#[derive(Default)]
pub struct ModuleSyntax {
  first: First,
}

impl<'a> Rule<'a> for ModuleSyntax {
  fn into_violation(self) -> Option<Violation> {
    self.first.into_inner()
  }
}

impl<'a> Visit<'a> for ModuleSyntax {
  fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
    self.first.report(Violation::validation(KIND_DYNAMIC_IMPORT, "import() is not allowed in AgentScript".into(), it.span));
    walk::walk_import_expression(self, it);
  }

  fn visit_import_meta(&mut self, it: &ImportMeta) {
    self.first.report(Violation::validation(KIND_IMPORT_META, "import.meta is not allowed in AgentScript".into(), it.span));
  }

  fn visit_module_declaration(&mut self, it: &ModuleDeclaration<'a>) {
    self.first.report(Violation::validation(
      KIND_MODULE_SYNTAX,
      "import and export declarations are not allowed: a script runs as the body of a function; use callTool() to reach tools".into(),
      it.span(),
    ));
  }
}
