//! The QuickJS side of the sandbox (rquickjs). Owns everything that touches a JS value.
//!
//! - `compile`: source → bytecode in a context that can compile; scripts run in contexts that
//!   cannot (no eval intrinsic).
//! - `execution`: one execution's runtime, globals, limits and run loop.
//! - `prelude.js`: the AgentScript globals and the hardening, run before any user code.
//! - `serialize`: the result, to JSON, under the result-size limit.
//! - `errors`, `strings`: exceptions and strings out of QuickJS, in the user's terms.
//!
//! An `Engine` lives on one worker thread (QuickJS runtimes are not `Send`) and holds what every
//! execution on that thread shares: a compiler context and the prelude's bytecode.

mod compile;
mod errors;
mod execution;
mod memory;
mod serialize;
mod spare;
mod strings;

use rquickjs::{Context, Runtime};

use execution::{native_primitives, State};
pub use execution::{Execution, Job, ReplySink, Step};
use spare::Spare;

use crate::sandbox::config::SandboxConfig;
use crate::sandbox::error::StartError;

const PRELUDE: &str = include_str!("prelude.js");

/// The globals the prelude installs (`install('…')`); host functions may not take their names. A
/// test holds this list and `prelude.js` to each other.
pub const GLOBALS: &[&str] =
  &["callTool", "getTool", "codecallContext", "input", "console", "mcpLog", "mcpNotify", "__safe_parallel"];

/// Compile anything new every this many scripts, then collect the compiler's garbage.
const GC_EVERY: u32 = 64;

pub struct Engine {
  // Drop order: the context before its runtime.
  compiler: Context,
  _compiler_runtime: Runtime,
  /// The prelude's bytecode, run first in every execution.
  pub prelude: Vec<u8>,
  compiled: u32,
  /// The next execution's context, prepared while the worker was idle.
  spare: Option<Spare<State>>,
}

impl Engine {
  pub fn new() -> Result<Self, StartError> {
    let runtime = Runtime::new().map_err(|e| StartError::QuickJs { what: "QuickJS runtime", detail: e.to_string() })?;
    let compiler =
      Context::full(&runtime).map_err(|e| StartError::QuickJs { what: "QuickJS context", detail: e.to_string() })?;
    let prelude =
      compiler.with(|ctx| compile::compile(&ctx, PRELUDE, "<codecall>", compile::Keep::CodeOnly)).map_err(|e| {
        StartError::Prelude(format!("prelude does not compile: {} ({:?}:{:?})", e.message, e.line, e.column))
      })?;
    Ok(Self { compiler, _compiler_runtime: runtime, prelude, compiled: 0, spare: None })
  }

  /// Prepares the next execution's context now, if none is waiting.
  pub fn prepare_spare(&mut self, sandbox: &SandboxConfig) {
    if self.spare.is_none() {
      self.spare = Spare::new(&self.prelude, sandbox, native_primitives).ok();
    }
  }

  pub fn has_spare(&self) -> bool {
    self.spare.is_some()
  }

  /// The prepared context, or a new one.
  pub(crate) fn take_spare(&mut self, sandbox: &SandboxConfig) -> Result<Spare<State>, StartError> {
    match self.spare.take() {
      Some(spare) => Ok(spare),
      None => Spare::new(&self.prelude, sandbox, native_primitives),
    }
  }

  /// Compiles a prepared script under the name stacks will show.
  pub fn compile_script(&mut self, code: &str) -> Result<Vec<u8>, compile::CompileError> {
    self.compiled += 1;
    if self.compiled.is_multiple_of(GC_EVERY) {
      self._compiler_runtime.run_gc();
    }
    self.compiler.with(|ctx| compile::compile(&ctx, code, errors::SCRIPT_FILE, compile::Keep::Positions))
  }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
  /// Every global `prelude.js` installs by name is in `GLOBALS`, and nothing else is.
  #[test]
  fn globals_are_the_ones_the_prelude_installs() {
    let mut installed: Vec<&str> =
      super::PRELUDE.split("install('").skip(1).filter_map(|rest| rest.split('\'').next()).collect();
    installed.sort_unstable();
    installed.dedup();
    let mut listed = super::GLOBALS.to_vec();
    listed.sort_unstable();
    assert_eq!(installed, listed);
  }

  /// The README's **Globals** list (the `new Sandbox` section) names every global, and no other
  /// word of it in backticks is a global the prelude does not install.
  #[test]
  fn the_readme_lists_the_globals() {
    let readme = include_str!("../../../README.md");
    let start = readme.find("- **Globals**:").expect("a Globals list in the README");
    let paragraph = &readme[start..];
    let paragraph = &paragraph[..paragraph[2..].find("\n- ").map_or(paragraph.len(), |end| end + 2)];
    let named: Vec<&str> = paragraph
      .split('`')
      .skip(1)
      .step_by(2)
      .map(|code| code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or_default())
      .collect();
    for global in super::GLOBALS {
      assert!(named.contains(global), "the README's Globals list does not name `{global}`");
    }
  }
}
