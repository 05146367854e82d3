//! A prepared context: a fresh runtime and context with the policy-wide part of the prelude
//! already run, waiting for an execution. A worker makes its next one while it is idle, so an
//! execution does not pay for context creation on its own clock. A spare is never reused: each
//! serves exactly one execution, and nothing in it has run user code before.

use std::cell::RefCell;
use std::rc::Rc;

use rquickjs::{Context, Function, Object, Persistent, Runtime};

use super::compile;
use super::execution::{native_primitives, ScriptIntrinsics, StateSlot};
use super::memory::{Budget, LimitedAllocator};
use crate::sandbox::config::SandboxConfig;

pub struct Spare {
  // Field order is drop order: JS handles, then the context, then the runtime.
  pub(crate) configure: Option<Persistent<Function<'static>>>,
  pub(crate) is_tool_error: Option<Persistent<Function<'static>>>,
  pub(crate) slot: StateSlot,
  pub(crate) context: Context,
  pub(crate) runtime: Runtime,
  pub(crate) budget: Rc<Budget>,
}

impl Drop for Spare {
  fn drop(&mut self) {
    self.configure = None;
    self.is_tool_error = None;
    self.slot.borrow_mut().take();
  }
}

impl Spare {
  pub fn new(prelude: &[u8], sandbox: &SandboxConfig) -> Result<Self, String> {
    let memory_limit = usize::try_from(sandbox.memory_limit_bytes).unwrap_or(usize::MAX);
    let budget = Budget::new(memory_limit);
    let runtime = Runtime::new_with_alloc(LimitedAllocator::new(budget.clone()))
      .map_err(|e| format!("Could not create a QuickJS runtime: {e}"))?;
    runtime.set_max_stack_size(usize::try_from(sandbox.max_stack_bytes).unwrap_or(usize::MAX));
    let context =
      Context::custom::<ScriptIntrinsics>(&runtime).map_err(|e| format!("Could not create a QuickJS context: {e}"))?;
    let slot: StateSlot = Rc::new(RefCell::new(None));
    let exports =
      context.with(|ctx| -> rquickjs::Result<(Persistent<Function<'static>>, Persistent<Function<'static>>)> {
        let native = native_primitives(&ctx, &slot)?;
        #[cfg(feature = "test-hooks")]
        crate::sandbox::process::hooks::install(&ctx)?;
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
        return Err(format!("The sandbox prelude failed: {detail}"));
      }
    };
    Ok(Self { configure: Some(configure), is_tool_error: Some(is_tool_error), slot, context, runtime, budget })
  }
}
