//! Telemetry runs of meta-tool calls (§10), when `@opentelemetry/api` is there: begun, answered
//! with counts, failed with the error's code. Only ids, counts and codes reach it.

use napi::bindgen_prelude::{FnArgs, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, Status, ValueType};

use super::inner::Inner;
use crate::common::args;
use crate::engine::telemetry;

impl Inner {
  /// The telemetry object, when `@opentelemetry/api` is there.
  pub(super) fn otel<'env>(&self, env: &'env Env) -> Option<Object<'env>> {
    if !self.otel {
      return None;
    }
    self.refs.get(env).ok()?.get::<Object>("otel").ok().flatten()
  }

  /// A telemetry run for one meta-tool call, or `None` (no API, or nothing records).
  pub(super) fn begin<'env>(&self, env: &'env Env, kind: &str) -> Option<Unknown<'env>> {
    let otel = self.otel(env)?;
    let isolation = (kind == "execute").then_some(self.isolation);
    telemetry::run_of(telemetry::call(env, &otel, "begin", FnArgs::from((kind, isolation))))
  }

  /// search / describe: the run ends with the answer's counts, or failed.
  pub(super) fn answered<'env>(
    &self,
    env: &'env Env,
    run: Option<Unknown<'env>>,
    r: napi::Result<Unknown<'env>>,
    input: Unknown<'env>,
  ) -> napi::Result<Unknown<'env>> {
    let Some(run) = run else { return r };
    match r {
      Ok(out) => {
        let requested = requested_names(env, &input);
        if let Some(otel) = self.otel(env) {
          telemetry::call(env, &otel, "answered", FnArgs::from((run, out, requested)));
        }
        Ok(out)
      }
      Err(e) => Err(self.failed(env, Some(run), e)),
    }
  }

  /// Ends `run` as failed with the error's code (`ERR_INVALID_ARG` for a bad argument), and gives
  /// back the error with its exception still pending.
  pub(super) fn failed(&self, env: &Env, run: Option<Unknown>, e: napi::Error) -> napi::Error {
    let Some(run) = run else { return e };
    if e.status != Status::PendingException {
      if let Some(otel) = self.otel(env) {
        telemetry::call(env, &otel, "failed", FnArgs::from((run, "INTERNAL_ERROR")));
      }
      return e;
    }
    // Nothing else can be called while the exception is pending: take it, record, throw it again.
    let Some(thrown) = args::take_exception(env) else { return e };
    let code: Option<String> = match thrown.get_type() {
      Ok(ValueType::Object) => match Object::from_raw(env.raw(), thrown.raw()).get::<Unknown>("code") {
        Ok(Some(c)) if matches!(c.get_type(), Ok(ValueType::String)) => {
          // SAFETY: `c` is a live string handle of this scope.
          unsafe { <String as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), c.raw()) }.ok()
        }
        Ok(_) => None,
        Err(_) => {
          // A throwing `code` getter: not this call's error to report.
          args::take_exception(env);
          None
        }
      },
      _ => None,
    };
    if let Some(otel) = self.otel(env) {
      telemetry::call(env, &otel, "failed", FnArgs::from((run, code.unwrap_or_else(|| "_OTHER".into()))));
    }
    // SAFETY: rethrows the same live exception value, in the same scope, with none pending.
    unsafe { napi::sys::napi_throw(env.raw(), thrown.raw()) };
    e
  }
}

/// describe: how many names were asked for (a count, never the names).
fn requested_names(env: &Env, input: &Unknown) -> Option<f64> {
  if input.get_type().ok()? != ValueType::Object {
    return None;
  }
  let o = Object::from_raw(env.raw(), input.raw());
  for key in ["toolNames", "tools"] {
    if let Ok(Some(v)) = o.get::<Unknown>(key) {
      if v.is_array().unwrap_or(false) {
        return Object::from_raw(env.raw(), v.raw()).get_array_length().ok().map(f64::from);
      }
    }
  }
  None
}
