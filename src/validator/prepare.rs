//! From a validated script to the code QuickJS runs (`api.md` §2.2):
//!
//! ```text
//! (function (__cc_tick) {"use strict"; return async function () {<user code, rewritten>
//! }; })
//! ```
//!
//! - The user's code is the body of an async function: top-level `await` and `return` work, and
//!   strict mode holds. The outer function takes the sandbox's internals as parameters, so they
//!   are reachable from no global and no property (`arguments` inside the script is the inner
//!   function's own, empty one).
//! - The wrapper's head shares line 1 with the user's first line and nothing adds a newline, so
//!   every line number QuickJS reports is the user's. Columns shift only where text is inserted;
//!   `SourceMapping` undoes that exactly.
//! - No top-level `return` and a final expression statement: that expression is the result
//!   (`return (` … `)` around it).
//! - `maxIterations`: `__cc_tick();` at the top of every loop body (braces added where the body is
//!   a single statement). The name has the reserved prefix, so user code cannot touch it.
//! - Positions: QuickJS records where code is only at identifiers, calls, operators and
//!   expression statements, so an error in `return null.boom` or `const b = (await x).y` would
//!   report the last position recorded before it — often the enclosing function's first line.
//!   Every other statement in a statement list gets a `0;` in front (an expression statement:
//!   it records its position and costs nothing), and the error lands on that statement.

use oxc_allocator::Vec as ArenaVec;
use oxc_ast::ast::{
  ArrowFunctionExpression, Class, DoWhileStatement, ForInStatement, ForOfStatement, ForStatement, Function, Program,
  ReturnStatement, Statement, WhileStatement,
};
use oxc_ast_visit::{walk, Visit};
use oxc_span::GetSpan;
use oxc_syntax::scope::ScopeFlags;

use super::position::{LineIndex, Location};

/// Opens the wrapper; `__cc_tick` is the loop counter the sandbox passes in.
const PREFIX: &str = "(function (__cc_tick) {\"use strict\"; return async function () {";
const SUFFIX: &str = "\n}; })";

/// What to rewrite.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrepareOptions {
  /// Insert the loop counter (when the policy has a `maxIterations`).
  pub count_iterations: bool,
}

/// The code to run, and how to map its positions back to the user's script.
#[derive(Debug, Clone)]
pub struct PreparedSource {
  /// An expression that evaluates to `function (__cc_tick) -> async function`.
  pub code: String,
  pub mapping: SourceMapping,
  /// The last expression statement was turned into the result.
  pub returns_last_expression: bool,
  /// Loops that received a counter.
  pub counted_loops: u32,
}

/// One piece of text added to the user's script.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Insertion {
  /// Where, in the user's script.
  at: Location,
  /// Its length in UTF-16 units (insertions are ASCII and never contain a newline).
  len: u32,
}

/// Maps positions in the generated code back to the user's script.
#[derive(Debug, Clone, Default)]
pub struct SourceMapping {
  insertions: Vec<Insertion>,
  prefix_len: u32,
  last_line: u32,
}

impl SourceMapping {
  /// The user's position for a 1-based generated line and column. Positions inside inserted text
  /// map to where it was inserted; lines past the user's code map to its last line.
  pub fn to_user(&self, line: u32, column: u32) -> Location {
    if line > self.last_line {
      return Location { line: self.last_line.max(1), column: 1 };
    }
    let mut column = column;
    if line == 1 {
      column = column.saturating_sub(self.prefix_len).max(1);
    }
    let mut shift = 0;
    for ins in self.insertions.iter().filter(|i| i.at.line == line) {
      let generated_start = ins.at.column + shift;
      if column >= generated_start + ins.len {
        shift += ins.len;
      } else if column >= generated_start {
        return ins.at;
      } else {
        break;
      }
    }
    Location { line, column: column.saturating_sub(shift).max(1) }
  }
}

/// Rewrites a validated JavaScript program (`source` is the text `program` was parsed from).
pub fn prepare(source: &str, program: &Program<'_>, options: PrepareOptions) -> PreparedSource {
  let mut edits: Vec<(u32, &'static str)> = Vec::new();

  let mut returns_last_expression = false;
  if !TopLevelReturn::find(program) {
    if let Some(Statement::ExpressionStatement(last)) = program.body.last() {
      let span = last.expression.span();
      // Now a return statement: it needs the position mark expression statements do without.
      edits.push((span.start, POSITION_MARK));
      edits.push((span.start, "return ("));
      edits.push((span.end, ")"));
      returns_last_expression = true;
    }
  }

  let mut counted_loops = 0;
  if options.count_iterations {
    let mut ticks = LoopTicks { edits: Vec::new(), loops: 0 };
    ticks.visit_program(program);
    counted_loops = ticks.loops;
    edits.extend(ticks.edits);
  }

  let mut marks = PositionMarks(Vec::new());
  marks.visit_program(program);
  edits.extend(marks.0);

  // Stable: two edits at one offset keep the order they were made in.
  edits.sort_by_key(|(at, _)| *at);

  let index = LineIndex::new(source);
  let mut code = String::with_capacity(PREFIX.len() + source.len() + SUFFIX.len() + edits.len() * 16);
  code.push_str(PREFIX);
  let mut insertions = Vec::with_capacity(edits.len());
  let mut pos = 0usize;
  for (at, text) in edits {
    let at = (at as usize).min(source.len());
    code.push_str(&source[pos..at]);
    code.push_str(text);
    insertions.push(Insertion { at: index.locate(at as u32), len: text.len() as u32 });
    pos = at;
  }
  code.push_str(&source[pos..]);
  code.push_str(SUFFIX);

  let last_line = index.locate(source.len() as u32).line;
  PreparedSource {
    code,
    mapping: SourceMapping { insertions, prefix_len: PREFIX.len() as u32, last_line },
    returns_last_expression,
    counted_loops,
  }
}

const TICK_CALL: &str = "__cc_tick();";
/// An expression statement in front of a statement that records no position of its own. It stays
/// valid after any statement that can precede it (a numeric literal never continues an
/// expression, so a line break before it ends the previous statement as the user's did).
const POSITION_MARK: &str = "0;";

/// Where a `POSITION_MARK` goes: before each statement of a statement list that does not record
/// its own position in QuickJS (expression statements and `throw` do; blocks are marked inside;
/// function declarations and empty statements run no code of their own).
struct PositionMarks(Vec<(u32, &'static str)>);

impl<'a> Visit<'a> for PositionMarks {
  fn visit_statements(&mut self, statements: &ArenaVec<'a, Statement<'a>>) {
    for statement in statements {
      let marked = !matches!(
        statement,
        Statement::ExpressionStatement(_)
          | Statement::ThrowStatement(_)
          | Statement::BlockStatement(_)
          | Statement::FunctionDeclaration(_)
          | Statement::EmptyStatement(_)
      );
      if marked {
        self.0.push((statement.span().start, POSITION_MARK));
      }
    }
    walk::walk_statements(self, statements);
  }
}

/// Is there a `return` that belongs to the script's own function (not a nested one)?
struct TopLevelReturn(bool);

impl TopLevelReturn {
  fn find(program: &Program<'_>) -> bool {
    let mut finder = Self(false);
    finder.visit_program(program);
    finder.0
  }
}

impl<'a> Visit<'a> for TopLevelReturn {
  fn visit_return_statement(&mut self, _: &ReturnStatement<'a>) {
    self.0 = true;
  }
  fn visit_function(&mut self, _: &Function<'a>, _: ScopeFlags) {}
  fn visit_arrow_function_expression(&mut self, _: &ArrowFunctionExpression<'a>) {}
  fn visit_class(&mut self, _: &Class<'a>) {}
}

struct LoopTicks {
  edits: Vec<(u32, &'static str)>,
  loops: u32,
}

impl LoopTicks {
  fn tick(&mut self, body: &Statement<'_>) {
    self.loops += 1;
    match body {
      Statement::BlockStatement(block) => self.edits.push((block.span.start + 1, TICK_CALL)),
      other => {
        let span = other.span();
        self.edits.push((span.start, "{__cc_tick();"));
        self.edits.push((span.end, "}"));
      }
    }
  }
}

impl<'a> Visit<'a> for LoopTicks {
  fn visit_for_statement(&mut self, it: &ForStatement<'a>) {
    self.tick(&it.body);
    walk::walk_for_statement(self, it);
  }
  fn visit_for_in_statement(&mut self, it: &ForInStatement<'a>) {
    self.tick(&it.body);
    walk::walk_for_in_statement(self, it);
  }
  fn visit_for_of_statement(&mut self, it: &ForOfStatement<'a>) {
    self.tick(&it.body);
    walk::walk_for_of_statement(self, it);
  }
  fn visit_while_statement(&mut self, it: &WhileStatement<'a>) {
    self.tick(&it.body);
    walk::walk_while_statement(self, it);
  }
  fn visit_do_while_statement(&mut self, it: &DoWhileStatement<'a>) {
    self.tick(&it.body);
    walk::walk_do_while_statement(self, it);
  }
}
