//! The validator layer: decides which scripts may run at all, and prepares those that may.
//!
//! Pipeline, in order (each step can refuse; nothing after a refusal runs):
//! 1. size: over `maxScriptBytes` is refused before anything reads the script;
//! 2. `nesting`: over `maxNestingDepth` is refused before parsing;
//! 3. `typescript`: with `language: 'typescript'`, types are stripped, positions kept;
//! 4. oxc parses the JavaScript (module goal, `return` allowed at the top) → `syntax_error`;
//! 5. `rules`: the AgentScript rules → `illegal_access`;
//! 6. `tool_names`: which tools the script names;
//! 7. `prepare` (for the sandbox only): the code QuickJS runs.
//!
//! Steps 3–7 run with a stack sized for the input (`stack`), so no input can overflow it.
//! This layer never runs a script and knows nothing of napi; `binding.rs` is its JS surface.

// The napi surface: napi registers its functions (a test build does not, hence the allow).
#[cfg_attr(test, allow(dead_code))]
mod binding;
mod error;
mod nesting;
mod policy;
mod position;
mod prepare;
mod rules;
mod stack;
mod tool_names;
mod typescript;

use oxc_allocator::Allocator;
use oxc_ast::ast::Program;
use oxc_parser::{ParseOptions, Parser};
use oxc_span::SourceType;

// The layer's surface: everything another layer (or the worker, or a fuzz target) may name.
pub use error::Rejection;
pub use policy::{Language, Policy, PolicyOverrides, SelfReference, META_TOOL_VERBS};
pub use position::Location;
pub use prepare::{PrepareOptions, PreparedSource, SourceMapping};
pub use rules::FORBIDDEN_MEMBERS;
pub use stack::STACK_PER_SOURCE_BYTE;
pub use typescript::Stripping;

use crate::common::ErrorCode;
use position::LineIndex;

/// What a valid script tells about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validated {
  /// Tools called with a literal name, in order of first appearance.
  pub tool_names: Vec<String>,
  /// `callTool` is also used in a way whose tool name is only known at run time.
  pub dynamic_tool_calls: bool,
  /// How TypeScript was turned into JavaScript (`None` for JavaScript).
  pub stripping: Option<Stripping>,
}

/// A valid script, ready for QuickJS.
#[derive(Debug, Clone)]
pub struct Prepared {
  pub validated: Validated,
  pub source: PreparedSource,
}

/// Checks `script` against `policy`.
pub fn validate(script: &str, policy: &Policy) -> Result<Validated, Rejection> {
  analyze(script, policy, |_, _| ()).map(|(validated, ())| validated)
}

/// Checks `script` against `policy` and produces the code the sandbox runs.
pub fn prepare(script: &str, policy: &Policy, options: PrepareOptions) -> Result<Prepared, Rejection> {
  analyze(script, policy, |js, program| prepare::prepare(js, program, options))
    .map(|(validated, source)| Prepared { validated, source })
}

fn analyze<R>(
  script: &str,
  policy: &Policy,
  then: impl FnOnce(&str, &Program<'_>) -> R,
) -> Result<(Validated, R), Rejection> {
  if script.len() as u64 > policy.max_script_bytes {
    return Err(Rejection::IllegalAccess {
      code: ErrorCode::ValidationError,
      kind: rules::KIND_SCRIPT_TOO_LARGE,
      message: format!(
        "Script is {} bytes; the limit is {} bytes (maxScriptBytes)",
        script.len(),
        policy.max_script_bytes
      ),
      location: None,
    });
  }
  if let Err(too_deep) = nesting::check(script, policy.max_nesting_depth) {
    return Err(Rejection::IllegalAccess {
      code: ErrorCode::ValidationError,
      kind: rules::KIND_NESTING_TOO_DEEP,
      message: format!("Script nests deeper than {} levels (maxNestingDepth)", policy.max_nesting_depth),
      location: Some(LineIndex::new(script).locate(too_deep.offset)),
    });
  }
  // A panic inside oxc on some input must not cross into the host: it becomes a refusal.
  let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    stack::with_stack_for(script.len(), || {
      let allocator = Allocator::default();
      let (js, stripping) = match policy.language {
        Language::JavaScript => (std::borrow::Cow::Borrowed(script), None),
        Language::TypeScript => {
          let program = parse(&allocator, script, SourceType::ts().with_module(true))?;
          let (js, how) = typescript::strip(script, &program);
          (std::borrow::Cow::Owned(js), Some(how))
        }
      };
      let program = parse(&allocator, &js, SourceType::mjs())?;
      let outcome = rules::check(&program, policy);
      if let Some((span, message)) = outcome.unsupported_syntax {
        return Err(Rejection::Syntax { message: message.into(), location: LineIndex::new(&js).locate(span.start) });
      }
      if let Some(violation) = outcome.violation {
        return Err(Rejection::IllegalAccess {
          code: violation.code,
          kind: violation.kind,
          message: violation.message,
          location: Some(LineIndex::new(&js).locate(violation.span.start)),
        });
      }
      let names = outcome.tool_names;
      let out = then(&js, &program);
      Ok((Validated { tool_names: names.names, dynamic_tool_calls: names.dynamic, stripping }, out))
    })
  }));
  outcome.unwrap_or_else(|_| {
    Err(Rejection::Syntax {
      message: "The script could not be analysed (internal parser error); simplify it".into(),
      location: Location { line: 1, column: 1 },
    })
  })
}

fn parse<'a>(allocator: &'a Allocator, source: &'a str, source_type: SourceType) -> Result<Program<'a>, Rejection> {
  // No semantic analysis runs on this AST, so identifier hashes would be wasted work.
  let options =
    ParseOptions { allow_return_outside_function: true, enable_ident_hashes: false, ..ParseOptions::default() };
  let ret = Parser::new(allocator, source, source_type).with_options(options).parse();
  if let Some(diagnostic) = ret.diagnostics.errors().next() {
    let offset = diagnostic.labels.first().map_or(0, |l| l.offset());
    return Err(Rejection::Syntax {
      message: diagnostic.message.to_string(),
      location: LineIndex::new(source).locate(offset),
    });
  }
  if ret.panicked {
    return Err(Rejection::Syntax { message: "Unexpected syntax".into(), location: Location { line: 1, column: 1 } });
  }
  Ok(ret.program)
}

#[cfg(test)]
mod tests;
