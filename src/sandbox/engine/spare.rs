//! A prepared context: a fresh runtime and context with the policy-wide part of the prelude
//! already run, waiting for an execution. A worker makes its next one while it is idle, so an
//! execution does not pay for context creation on its own clock. A spare is never reused: each
//! serves exactly one execution, and nothing in it has run user code before.

use std::cell::RefCell;
use std::rc::Rc;

use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Runtime};

use super::compile;
use super::memory::{Budget, LimitedAllocator};
use crate::sandbox::config::SandboxConfig;
use crate::sandbox::error::StartError;

/// The intrinsics scripts get: everything but `Eval`, so no string can become code.
pub(crate) type ScriptIntrinsics = (
  intrinsic::Date,
  intrinsic::RegExpCompiler,
  intrinsic::RegExp,
  intrinsic::Json,
  intrinsic::Proxy,
  intrinsic::MapSet,
  intrinsic::TypedArrays,
  intrinsic::Promise,
  intrinsic::WeakRef,
);

/// Where a prepared context's native functions find the state of the execution it serves; empty
/// until that execution starts.
pub(crate) type Slot<S> = Rc<RefCell<Option<Rc<RefCell<S>>>>>;

/// Builds the native primitives the prelude stands on, reaching their execution through the slot.
pub(crate) type Natives<S> = for<'js> fn(&Ctx<'js>, &Slot<S>) -> rquickjs::Result<Object<'js>>;

pub struct Spare<S> {
  // Field order is drop order: JS handles, then the context, then the runtime.
  pub(crate) configure: Option<Persistent<Function<'static>>>,
  pub(crate) is_tool_error: Option<Persistent<Function<'static>>>,
  pub(crate) slot: Slot<S>,
  pub(crate) context: Context,
  pub(crate) runtime: Runtime,
  pub(crate) budget: Rc<Budget>,
}

impl<S> Drop for Spare<S> {
  fn drop(&mut self) {
    self.configure = None;
    self.is_tool_error = None;
    self.slot.borrow_mut().take();
  }
}

impl<S> Spare<S> {
  pub fn new(prelude: &[u8], sandbox: &SandboxConfig, natives: Natives<S>) -> Result<Self, StartError> {
    let memory_limit = usize::try_from(sandbox.memory_limit_bytes).unwrap_or(usize::MAX);
    let budget = Budget::new(memory_limit);
    let runtime = Runtime::new_with_alloc(LimitedAllocator::new(budget.clone()))
      .map_err(|e| StartError::QuickJs { what: "Could not create a QuickJS runtime", detail: e.to_string() })?;
    runtime.set_max_stack_size(usize::try_from(sandbox.max_stack_bytes).unwrap_or(usize::MAX));
    let context = Context::custom::<ScriptIntrinsics>(&runtime)
      .map_err(|e| StartError::QuickJs { what: "Could not create a QuickJS context", detail: e.to_string() })?;
    let slot: Slot<S> = Rc::new(RefCell::new(None));
    let exports =
      context.with(|ctx| -> rquickjs::Result<(Persistent<Function<'static>>, Persistent<Function<'static>>)> {
        let native = natives(&ctx, &slot)?;
        #[cfg(feature = "test-hooks")]
        crate::sandbox::process::install_test_hooks(&ctx)?;
        let policy = Object::new(ctx.clone())?;
        policy.set("allowConsole", sandbox.policy.allow_console)?;
        let removed = sandbox.policy.disabled_globals.clone();
        policy.set("removeGlobalThis", removed.iter().any(|g| g == "globalThis"))?;
        policy.set("disabledGlobals", removed)?;
        let install: Function = compile::run(&ctx, prelude)?.get()?;
        let exports: Object = install.call((native, policy))?;
        let configure: Function = exports.get("configure")?;
        let is_tool_error: Function = exports.get("isToolError")?;
        Ok((Persistent::save(&ctx, configure), Persistent::save(&ctx, is_tool_error)))
      });
    let (configure, is_tool_error) = match exports {
      Ok(pair) => pair,
      Err(e) => {
        let detail = context.with(|ctx| {
          let thrown = ctx.catch();
          thrown.as_object().and_then(|o| o.get::<_, String>("message").ok()).unwrap_or_else(|| e.to_string())
        });
        return Err(StartError::Prelude(format!("The sandbox prelude failed: {detail}")));
      }
    };
    Ok(Self { configure: Some(configure), is_tool_error: Some(is_tool_error), slot, context, runtime, budget })
  }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
  use super::Spare;
  use crate::sandbox::config::SandboxConfig;
  use crate::sandbox::engine::execution::native_primitives;
  use crate::sandbox::engine::Engine;

  /// What one parked execution costs (issue 16's E) is mostly its prepared context: a QuickJS
  /// runtime with the script intrinsics and the prelude run. This pins that cost, so a change
  /// that makes every execution heavier shows here (the number is in BENCHMARKS.md).
  #[test]
  fn a_prepared_context_stays_small() {
    let engine = Engine::new().expect("engine");
    let config = SandboxConfig::default();
    let spare = Spare::new(&engine.prelude, &config, native_primitives).expect("spare");
    let heap = spare.budget.used();
    let usage = spare.runtime.memory_usage();
    eprintln!(
      "prepared context: {heap} B of heap in {} allocations; atoms {} ({} B), objects {} ({} B), shapes {} ({} B), \
       properties {} B, functions {} ({} B bytecode)",
      usage.malloc_count,
      usage.atom_count,
      usage.atom_size,
      usage.obj_count,
      usage.obj_size,
      usage.shape_count,
      usage.shape_size,
      usage.prop_size,
      usage.js_func_count,
      usage.js_func_code_size,
    );
    assert!(heap > 16 << 10, "the budget counts the context's heap ({heap} B)");
    assert!(heap < 256 << 10, "a prepared context grew to {heap} B");
  }
}
