//! `import()`, `import.meta` and module declarations: a script is the body of a function with no
//! module loader behind it, so any of these is either an escape attempt or a plan that cannot run.

use oxc_ast::ast::{ImportExpression, ImportMeta, ModuleDeclaration};
use oxc_span::GetSpan;

use super::{Findings, Rule, Violation, KIND_DYNAMIC_IMPORT, KIND_IMPORT_META, KIND_MODULE_SYNTAX};

pub struct ModuleSyntax;

impl Rule for ModuleSyntax {
  fn import_expression(&mut self, it: &ImportExpression<'_>, out: &mut Findings) {
    out.report(it.span, || {
      Violation::validation(KIND_DYNAMIC_IMPORT, "import() is not allowed in AgentScript".into(), it.span)
    });
  }

  fn import_meta(&mut self, it: &ImportMeta, out: &mut Findings) {
    out.report(it.span, || {
      Violation::validation(KIND_IMPORT_META, "import.meta is not allowed in AgentScript".into(), it.span)
    });
  }

  fn module_declaration(&mut self, it: &ModuleDeclaration<'_>, out: &mut Findings) {
    let span = it.span();
    out.report(span, || {
      Violation::validation(
        KIND_MODULE_SYNTAX,
        "import and export declarations are not allowed: a script runs as the body of a function; use callTool() to reach tools".into(),
        span,
      )
    });
  }
}
