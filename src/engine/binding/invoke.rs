//! `codecall:invoke` (§5) on Node's thread: the engine's checks and the approval policy, then the
//! host's `callTool` called directly by engine.js (`invoke`), the result and end event made by
//! the engine's `Invocation`. `saved:` tools run as plans.

use std::cell::Cell;

use napi::bindgen_prelude::{FnArgs, Function, FunctionCallContext, Object, ToNapiValue, Unknown};
use napi::{Env, JsValue, ValueType};
use serde_json::Value;

use super::edge::{busy, Fn1, DISPOSED};
use super::inner::Inner;
use super::plan::{launch_plan, Plan};
use crate::common::args;
use crate::common::ErrorCode;
use crate::engine::approval::Decision;
use crate::engine::invoke::{Finished, InvokeInput};
use crate::engine::meta::Meta;
use crate::engine::scripts;
use crate::engine::telemetry;
use crate::sandbox::{event_json, host_answer, read_denied_tools, signal_arg};

/// `invoke(host, name, inputJson, meta, startJson, finish, askJson, run, signal)` of engine.js.
type InvokeFn<'env> = Function<
  'env,
  FnArgs<(
    Object<'env>,
    String,
    String,
    Object<'env>,
    String,
    Unknown<'env>,
    Option<String>,
    Unknown<'env>,
    Option<Object<'env>>,
  )>,
  Unknown<'env>,
>;

impl Inner {
  pub(super) fn invoke_inner<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let run = self.begin(env, "invoke");
    self.invoke_run(env, input, host, run).map_err(|e| self.failed(env, run, e))
  }

  /// An invoke the engine refused before the host: the run ends with the refusal.
  fn refused<'env>(&self, env: &'env Env, run: Option<Unknown<'env>>, out: &Value) -> napi::Result<Unknown<'env>> {
    let out = self.to_js(env, out)?;
    if let (Some(run), Some(otel)) = (run, self.otel(env)) {
      telemetry::call(env, &otel, "invoked", FnArgs::from((run, out)));
    }
    self.resolved(env, out)
  }

  fn invoke_run<'env>(
    &self,
    env: &'env Env,
    input: Unknown<'env>,
    host: Option<Unknown<'env>>,
    run: Option<Unknown<'env>>,
  ) -> napi::Result<Unknown<'env>> {
    let host = match host.filter(|h| !args::is_nullish(h)) {
      Some(h) if h.get_type()? == ValueType::Object => Object::from_raw(env.raw(), h.raw()),
      _ => return Err(args::invalid_arg(env, "host must be an object with a callTool function")),
    };
    if !matches!(host.get::<Unknown>("callTool")?.map(|f| f.get_type()), Some(Ok(ValueType::Function))) {
      return Err(args::invalid_arg(env, "host.callTool must be a function"));
    }
    let signal = signal_arg(env, &host, "host")?;
    let input = self.json_value(env, input, "input")?;
    if self.engine.try_borrow().map_err(|_| busy())?.is_none() {
      let refused = serde_json::json!({ "status": "error", "error": { "code": ErrorCode::PoolDisposed.as_str(),
        "message": DISPOSED, "toolName": input.get("tool").cloned().unwrap_or(Value::Null),
        "toolInput": input.get("input").cloned().unwrap_or(Value::Null) } });
      return self.refused(env, run, &refused);
    }
    let called = self.engine(env)?.meta_name(Meta::Invoke);
    let input = InvokeInput::read(input, &called).map_err(|e| args::invalid_arg(env, e))?;
    // §11: invoke of `saved:<name>` runs the saved script (no VM-less shortcut for a plan).
    let saved_on = self.engine(env)?.saved().is_some();
    if saved_on && input.tool.starts_with(scripts::PREFIX) {
      let direct = self.engine(env)?.options().direct_calls;
      let allowed = self.engine(env)?.options().direct_allowed.as_ref().is_none_or(|a| a.contains(&input.tool));
      if !direct || !allowed {
        let message = if direct {
          format!("Tool '{}' is not allowed for direct calls", input.tool)
        } else {
          "Direct calls are not enabled (directCalls.enabled)".to_string()
        };
        let refused = serde_json::json!({ "status": "error", "error": { "code": "ACCESS_DENIED", "message": message,
          "toolName": input.tool, "toolInput": input.input } });
        return self.refused(env, run, &refused);
      }
      let name = input.tool[scripts::PREFIX.len()..].to_string();
      let plan_input = serde_json::json!({ "scriptName": name, "input": input.input });
      let kit = self.helper(env)?;
      let store = self.callback(env, "store")?.map(|s| Object::from_raw(env.raw(), s.raw()));
      let after = self.callback(env, "after")?;
      let promise = launch_plan(
        env,
        &kit,
        &self.engine,
        &self.sandbox,
        Plan { input: plan_input, host: Some(host.to_unknown()), run: None, saved: None, store, after },
      )?;
      let shape: Fn1<FnArgs<(Unknown, String, String)>, Unknown> =
        kit.get("invokeResult")?.ok_or_else(|| napi::Error::from_reason("invokeResult"))?;
      return shape.apply(kit, FnArgs::from((promise, input.tool.clone(), input.input.to_string())));
    }
    let denied = read_denied_tools(env, &host)?;
    let filter = self.callback(env, "filter")?;
    let allow_fn: Option<Fn1<FnArgs<(Unknown, String)>, bool>> = self.helper(env)?.get("allow")?;
    let mut filter_error = None;
    // Its executionId and callId: unguessable, as every execution's (§12).
    let id = crate::common::random_id("invoke");
    // A shared borrow: the filter may read this CodeCall (listTools, describe), not change it.
    let begun = self.engine(env)?.begin_invoke(input, &id, &denied, |def| match (filter, &allow_fn) {
      (Some(filter), Some(allow)) => match allow.call(FnArgs::from((filter, def.summary().to_string()))) {
        Ok(allowed) => allowed,
        Err(e) => {
          filter_error = Some(e);
          false
        }
      },
      _ => true,
    });
    if let Some(e) = filter_error {
      return Err(e);
    }
    let invocation = match begun {
      Ok(invocation) => invocation,
      Err(refused) => return self.refused(env, run, &refused),
    };
    let call = invocation.call().clone();
    // §9: the approval policy, after every other check.
    let ask = {
      let engine = self.engine(env)?;
      let def = engine.tool(&call.name);
      match engine.options().approval.decide(
        &call.name,
        def.and_then(|d| d.approval),
        def.and_then(|d| d.annotations.as_ref()),
      ) {
        Decision::Allow => None,
        Decision::Deny(message) => {
          let refused = serde_json::json!({ "status": "error", "error": {
            "code": "ACCESS_DENIED", "message": message, "toolName": call.name,
            "toolInput": serde_json::from_str::<Value>(&call.args_json).unwrap_or(Value::Null) } });
          drop(engine);
          return self.refused(env, run, &refused);
        }
        Decision::Ask(reason) => {
          let policy = &engine.options().approval;
          let mut request = serde_json::Map::new();
          request.insert("executionId".into(), Value::String(call.execution_id.clone()));
          request.insert("callId".into(), Value::String(call.call_id.clone()));
          request.insert("toolName".into(), Value::String(call.name.clone()));
          request.insert("input".into(), serde_json::from_str(&call.args_json).unwrap_or(Value::Null));
          if let Some(a) = def.and_then(|d| d.annotations.clone()) {
            request.insert("annotations".into(), a);
          }
          request.insert("reason".into(), Value::String(reason.as_str().into()));
          Some(
            serde_json::json!({
              "request": request,
              "timeoutMs": policy.timeout.as_millis() as u64,
              "allowWhenUnavailable": policy.allow_when_unavailable,
            })
            .to_string(),
          )
        }
      }
    };
    let mut meta = Object::new(env)?;
    meta.set("callId", call.call_id.as_str())?;
    meta.set("executionId", call.execution_id.as_str())?;
    let start = event_json(&invocation.start_event());
    let finish = {
      let pending = Cell::new(Some(invocation));
      let limit = self.sandbox()?.answer_limit();
      env.create_function_from_closure::<Unknown, String, _>(
        "finish",
        move |ctx: FunctionCallContext| -> napi::Result<String> {
          let invocation = pending.take().ok_or_else(|| napi::Error::from_reason("invoke finished twice"))?;
          // engine.js passes settle's count of an answer refused unserialized (host.js).
          let counted: Option<f64> = if ctx.length() > 2 { ctx.get(2)? } else { None };
          let Finished { result, end } = invocation.finish(host_answer(ctx.get(0)?, ctx.get(1)?, counted, limit));
          Ok(format!(r#"{{"result":{result},"end":{}}}"#, event_json(&end)))
        },
      )?
    };
    let invoke: InvokeFn = self.helper(env)?.get("invoke")?.ok_or_else(|| napi::Error::from_reason("invoke"))?;
    let run_value: Unknown = match run {
      Some(r) => r,
      None => ().into_unknown(env)?,
    };
    invoke.call(FnArgs::from((
      host,
      call.name,
      call.args_json,
      meta,
      start,
      finish.to_unknown(),
      ask,
      run_value,
      signal,
    )))
  }
}
