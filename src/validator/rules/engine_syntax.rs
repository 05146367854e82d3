//! Syntax that parses as JavaScript but that the sandbox's engine (QuickJS) cannot run:
//! decorators, `accessor` fields, a `#!` line. `validate()` must refuse what `execute()` would
//! fail on (spec §2.6), and with the same status: these are syntax errors, not rule violations, so
//! they are kept apart from the rules' findings and win over them whatever their position.

use oxc_span::Span;

pub const DECORATOR: &str = "Decorators are not supported: the sandbox's engine (QuickJS) cannot run them";
pub const ACCESSOR: &str =
  "'accessor' fields are not supported by the sandbox's engine (QuickJS); use a getter and a setter";
pub const HASHBANG: &str = "A '#!' line cannot be used: a script runs as the body of a function";

/// The earliest unsupported construct seen so far.
#[derive(Default)]
pub struct EngineSyntax(pub Option<(Span, &'static str)>);

impl EngineSyntax {
  pub fn report(&mut self, span: Span, message: &'static str) {
    if self.0.is_none_or(|(existing, _)| span.start < existing.start) {
      self.0 = Some((span, message));
    }
  }
}
