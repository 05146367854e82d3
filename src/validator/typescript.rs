//! TypeScript → JavaScript with every position kept.
//!
//! Type-only syntax is blanked in place: each character of an annotation, `as T`, `x!`, `<T>`,
//! interface or `declare` becomes spaces (as many as its UTF-16 length), newlines stay. So every
//! line and column of the output is the user's own, and errors need no source map. This is the
//! approach of TypeScript's own "erasable syntax" mode and of Node's type stripping.
//!
//! TypeScript that has runtime semantics (`enum`, `namespace`, constructor parameter properties,
//! `import x = require()`, `export =`) cannot be blanked; such scripts go through oxc's
//! TypeScript transformer and code generator instead, which keeps their meaning but not their
//! column (and possibly line) numbers.

use std::path::Path;

use oxc_allocator::Allocator;
use oxc_ast::ast::{
  Class, ClassElement, FormalParameter, Function, FunctionType, MethodDefinitionType, Program, PropertyDefinitionType,
  Statement, TSAsExpression, TSNonNullExpression, TSSatisfiesExpression, TSTypeAnnotation, TSTypeAssertion,
  TSTypeParameterDeclaration, TSTypeParameterInstantiation, VariableDeclarator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_codegen::Codegen;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::{GetSpan, SourceType, Span};
use oxc_transformer::{TransformOptions, Transformer};

/// How the TypeScript was turned into JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stripping {
  /// Types blanked in place: positions are exact.
  Blanked,
  /// Runtime TypeScript went through oxc's transformer: positions are approximate.
  Transformed,
}

/// Turns a TypeScript program (already parsed without errors) into JavaScript.
pub fn strip(source: &str, program: &Program<'_>) -> (String, Stripping) {
  let mut blanker = Blanker { source, ranges: Vec::new(), runtime_syntax: false };
  blanker.visit_program(program);
  if blanker.runtime_syntax {
    if let Some(js) = transform(source) {
      return (js, Stripping::Transformed);
    }
  }
  (blank(source, blanker.ranges), Stripping::Blanked)
}

/// The transformer path, for TypeScript with runtime semantics.
fn transform(source: &str) -> Option<String> {
  let allocator = Allocator::default();
  let options = oxc_parser::ParseOptions { allow_return_outside_function: true, ..Default::default() };
  let parsed = Parser::new(&allocator, source, SourceType::ts().with_module(true)).with_options(options).parse();
  if parsed.panicked || !parsed.diagnostics.is_empty() {
    return None;
  }
  let mut program = parsed.program;
  let scoping = SemanticBuilder::new().with_enum_eval(true).build(&program).semantic.into_scoping();
  let options = TransformOptions::from_target("esnext").ok()?;
  let ret = Transformer::new(&allocator, Path::new("script.ts"), &options).build_with_scoping(scoping, &mut program);
  if !ret.diagnostics.is_empty() {
    return None;
  }
  Some(Codegen::new().build(&program).code)
}

fn blank(source: &str, mut ranges: Vec<(u32, u32)>) -> String {
  ranges.sort_unstable();
  let mut out = String::with_capacity(source.len());
  let mut pos = 0usize;
  for (start, end) in ranges {
    let (start, end) = (start as usize, (end as usize).min(source.len()));
    if end <= pos {
      continue;
    }
    let start = start.max(pos);
    out.push_str(&source[pos..start]);
    for c in source[start..end].chars() {
      match c {
        '\n' | '\r' | '\u{2028}' | '\u{2029}' => out.push(c),
        _ => (0..c.len_utf16()).for_each(|_| out.push(' ')),
      }
    }
    pos = end;
  }
  out.push_str(&source[pos..]);
  out
}

const TS_MODIFIERS: &[&str] = &["public", "private", "protected", "readonly", "override", "declare", "abstract"];

struct Blanker<'s> {
  source: &'s str,
  ranges: Vec<(u32, u32)>,
  runtime_syntax: bool,
}

impl Blanker<'_> {
  fn cut(&mut self, span: Span) {
    if span.start < span.end {
      self.ranges.push((span.start, span.end));
    }
  }

  fn text(&self, start: u32, end: u32) -> &str {
    self.source.get(start as usize..end as usize).unwrap_or("")
  }

  /// Blanks the first `mark` (`?` or `!`) in `[from, to)`, skipping only whitespace and `]`.
  fn cut_mark(&mut self, from: u32, to: u32, mark: char) {
    for (i, c) in self.text(from, to).char_indices() {
      if c == mark {
        let at = from + i as u32;
        self.cut(Span::new(at, at + 1));
        return;
      }
      if !(c.is_whitespace() || c == ']') {
        return;
      }
    }
  }

  /// Blanks TypeScript modifier keywords in `[from, to)`.
  fn cut_modifiers(&mut self, from: u32, to: u32) {
    let text = self.text(from, to);
    let mut word_start = None;
    let mut cuts = Vec::new();
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
      let ident = c.is_alphanumeric() || c == '_' || c == '$';
      match (word_start, ident) {
        (None, true) => word_start = Some(i),
        (Some(s), false) => {
          if TS_MODIFIERS.contains(&&text[s..i]) {
            cuts.push(Span::new(from + s as u32, from + i as u32));
          }
          word_start = None;
        }
        _ => {}
      }
    }
    cuts.into_iter().for_each(|s| self.cut(s));
  }

  /// Blanks a class's `implements A, B` clause and its `abstract` keyword.
  fn cut_class_extras(&mut self, class: &Class<'_>) {
    if let (Some(first), Some(last)) = (class.implements.first(), class.implements.last()) {
      let head = self.text(class.span.start, first.span.start);
      if let Some(at) = head.rfind("implements") {
        self.cut(Span::new(class.span.start + at as u32, last.span.end));
      }
    }
    if class.r#abstract {
      let head_end = class.id.as_ref().map_or(class.body.span.start, |id| id.span.start);
      let head = self.text(class.span.start, head_end);
      if let Some(at) = head.find("abstract") {
        let at = class.span.start + at as u32;
        self.cut(Span::new(at, at + "abstract".len() as u32));
      }
    }
  }
}

impl<'a> Visit<'a> for Blanker<'_> {
  fn visit_statement(&mut self, stmt: &Statement<'a>) {
    let erase = match stmt {
      Statement::TSTypeAliasDeclaration(_) | Statement::TSInterfaceDeclaration(_) => true,
      Statement::VariableDeclaration(d) => d.declare,
      Statement::FunctionDeclaration(f) => f.declare || f.r#type == FunctionType::TSDeclareFunction || f.body.is_none(),
      Statement::ClassDeclaration(c) => c.declare,
      Statement::TSEnumDeclaration(e) => {
        if !e.declare {
          self.runtime_syntax = true;
        }
        e.declare
      }
      Statement::TSNamespaceDeclaration(m) => {
        if !m.declare {
          self.runtime_syntax = true;
        }
        m.declare
      }
      Statement::TSGlobalDeclaration(_) => true,
      Statement::TSExternalModuleDeclaration(m) => m.declare || m.body.is_none(),
      Statement::TSImportEqualsDeclaration(_)
      | Statement::TSExportAssignment(_)
      | Statement::TSNamespaceExportDeclaration(_) => {
        self.runtime_syntax = true;
        false
      }
      // `import type` / `export type`: erasable, unlike value imports (which the rules refuse).
      Statement::ImportDeclaration(import) => import.import_kind.is_type(),
      _ => stmt.as_module_declaration().is_some_and(|m| m.is_typescript_syntax()),
    };
    if erase {
      self.cut(stmt.span());
    } else {
      walk::walk_statement(self, stmt);
    }
  }

  fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
    let mut start = it.span.start;
    if !self.text(start, it.span.end).starts_with(':') {
      // Include the `:` before the type when the span does not.
      let before = self.text(0, start);
      let trimmed = before.trim_end();
      if trimmed.ends_with(':') {
        start = (trimmed.len() - 1) as u32;
      }
    }
    self.cut(Span::new(start, it.span.end));
  }

  fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
    self.cut(it.span);
  }

  fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
    self.cut(it.span);
  }

  fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
    self.cut(Span::new(it.expression.span().end, it.span.end));
    self.visit_expression(&it.expression);
  }

  fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
    self.cut(Span::new(it.expression.span().end, it.span.end));
    self.visit_expression(&it.expression);
  }

  fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
    self.cut(Span::new(it.span.start, it.expression.span().start));
    self.visit_expression(&it.expression);
  }

  fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
    self.cut(Span::new(it.expression.span().end, it.span.end));
    self.visit_expression(&it.expression);
  }

  fn visit_function(&mut self, func: &Function<'a>, flags: oxc_syntax::scope::ScopeFlags) {
    if let Some(this_param) = &func.this_param {
      let mut end = this_param.span.end;
      let rest = self.text(end, func.params.span.end);
      if let Some(comma) = rest.find(',').filter(|&i| rest[..i].trim().is_empty()) {
        end += comma as u32 + 1;
      }
      self.cut(Span::new(this_param.span.start, end));
    }
    walk::walk_function(self, func, flags);
  }

  fn visit_formal_parameter(&mut self, param: &FormalParameter<'a>) {
    if param.accessibility.is_some() || param.readonly || param.r#override {
      self.runtime_syntax = true;
    }
    if param.optional {
      let to = param.type_annotation.as_ref().map_or(param.span.end, |t| t.span.end);
      self.cut_mark(param.pattern.span().end, to, '?');
    }
    walk::walk_formal_parameter(self, param);
  }

  fn visit_variable_declarator(&mut self, decl: &VariableDeclarator<'a>) {
    if decl.definite {
      self.cut_mark(decl.id.span().end, decl.span.end, '!');
    }
    walk::walk_variable_declarator(self, decl);
  }

  fn visit_class(&mut self, class: &Class<'a>) {
    self.cut_class_extras(class);
    walk::walk_class(self, class);
  }

  fn visit_class_element(&mut self, element: &ClassElement<'a>) {
    match element {
      ClassElement::TSIndexSignature(sig) => self.cut(sig.span),
      ClassElement::PropertyDefinition(p) => {
        if p.declare || p.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition {
          self.cut(p.span);
          return;
        }
        self.cut_modifiers(p.span.start, p.key.span().start);
        let after_key = p.key.span().end;
        let to = p
          .type_annotation
          .as_ref()
          .map(|t| t.span.start)
          .or(p.value.as_ref().map(|v| v.span().start))
          .unwrap_or(p.span.end);
        if p.optional {
          self.cut_mark(after_key, to, '?');
        }
        if p.definite {
          self.cut_mark(after_key, to, '!');
        }
        walk::walk_class_element(self, element);
      }
      ClassElement::MethodDefinition(m) => {
        if m.r#type == MethodDefinitionType::TSAbstractMethodDefinition || m.value.body.is_none() {
          self.cut(m.span);
          return;
        }
        self.cut_modifiers(m.span.start, m.key.span().start);
        if m.optional {
          self.cut_mark(m.key.span().end, m.value.params.span.start, '?');
        }
        walk::walk_class_element(self, element);
      }
      ClassElement::AccessorProperty(a) => {
        self.cut_modifiers(a.span.start, a.key.span().start);
        walk::walk_class_element(self, element);
      }
      ClassElement::StaticBlock(_) => walk::walk_class_element(self, element),
    }
  }
}
