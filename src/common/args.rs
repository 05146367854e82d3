//! Caller mistakes at the napi edge: a wrong argument throws a `TypeError` whose `code` is
//! `ERR_INVALID_ARG` and whose message names the argument (`api.md` §1). Everything else a
//! caller or script does comes back as a result, never as a throw.

use napi::{
  bindgen_prelude::{FromNapiValue, Object},
  Env, Error, JsValue, Status, Unknown, ValueType,
};

use super::{ErrorCode, InvalidArgument};

/// Throws the `TypeError` and returns the error napi-rs needs to see the pending exception.
pub fn invalid_arg(env: &Env, message: impl AsRef<str>) -> Error {
  // If throwing itself fails the environment is going away; the returned error still fails the call.
  let _ = env.throw_type_error(message.as_ref(), Some(ErrorCode::ErrInvalidArg.as_str()));
  Error::new(Status::PendingException, message.as_ref().to_string())
}

/// Takes the exception a failed call left pending (none is pending afterwards), so the caller can
/// call into JavaScript again — and reject or throw it again itself. `None` if there was none.
pub fn take_exception(env: &Env) -> Option<Unknown<'_>> {
  let mut exception = std::ptr::null_mut();
  // SAFETY: `env` is this call's live environment on Node's thread; the out-pointer is a local.
  let status = unsafe { napi::sys::napi_get_and_clear_last_exception(env.raw(), &mut exception) };
  if status != napi::sys::Status::napi_ok || exception.is_null() {
    return None;
  }
  // SAFETY: `exception` was just handed out by napi for this scope and is a live value.
  Some(unsafe { Unknown::from_raw_unchecked(env.raw(), exception) })
}

/// Is this value `undefined` or `null`?
pub fn is_nullish(value: &Unknown<'_>) -> bool {
  matches!(value.get_type(), Ok(ValueType::Undefined | ValueType::Null))
}

/// Reads a required string argument.
pub fn string_arg(env: &Env, value: &Unknown<'_>, name: &str) -> napi::Result<String> {
  if value.get_type().ok() != Some(ValueType::String) {
    return Err(invalid_arg(env, format!("{name} must be a string")));
  }
  // SAFETY: `value` is a live handle of this call's scope and was just checked to be a string.
  unsafe { String::from_napi_value(env.raw(), value.raw()) }
    .map_err(|e| invalid_arg(env, format!("{name}: {}", e.reason)))
}

/// An options object of the public API, with every key it knows (as JavaScript spells it): a key
/// it does not know is an error, not a setting silently dropped (`api.md` §1).
pub trait KnownKeys {
  const KEYS: &'static [&'static str];
}

/// `ERR_INVALID_ARG` for the first key of `object` that is not in `known`, naming it and the key
/// it most likely meant (else the known keys).
pub fn check_keys(env: &Env, object: &Object<'_>, name: &str, known: &[&str]) -> napi::Result<()> {
  for key in Object::keys(object)? {
    if known.contains(&key.as_str()) {
      continue;
    }
    let hint = match crate::common::near_miss(&key, known) {
      Some(k) => format!(" (did you mean '{k}'?)"),
      None => format!(" (known: {})", known.join(", ")),
    };
    return Err(invalid_arg(env, format!("{name}: unknown option '{key}'{hint}")));
  }
  Ok(())
}

/// [`options_arg`] for an options object whose keys are checked against `T::KEYS` first.
pub fn checked_options<T: FromNapiValue + KnownKeys>(
  env: &Env,
  value: Option<&Unknown<'_>>,
  name: &str,
) -> napi::Result<Option<T>> {
  if let Some(v) = value.filter(|v| !is_nullish(v)) {
    if v.get_type()? == ValueType::Object && !v.is_array()? {
      check_keys(env, &Object::from_raw(env.raw(), v.raw()), name, T::KEYS)?;
    }
  }
  options_arg(env, value, name)
}

/// Reads an optional options object into `T` (`undefined`/`null` → `None`).
pub fn options_arg<T: FromNapiValue>(env: &Env, value: Option<&Unknown<'_>>, name: &str) -> napi::Result<Option<T>> {
  let Some(value) = value.filter(|v| !is_nullish(v)) else {
    return Ok(None);
  };
  if value.get_type().ok() != Some(ValueType::Object) {
    return Err(invalid_arg(env, format!("{name} must be an object")));
  }
  // SAFETY: `value` is a live object handle of this call's scope; `from_napi_value` only reads it.
  unsafe { T::from_napi_value(env.raw(), value.raw()) }
    .map(Some)
    .map_err(|e| invalid_arg(env, format!("{name}: {}", e.reason)))
}

/// Checks an optional count or size: a finite, non-negative integer that fits `u64`.
pub fn non_negative(value: Option<f64>, name: &str) -> Result<Option<u64>, InvalidArgument> {
  match value {
    None => Ok(None),
    Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 => Ok(Some(v as u64)),
    Some(v) => Err(format!("{name} must be a non-negative integer (got {v})").into()),
  }
}

/// A property of an options object, `None` when absent, `undefined` or `null`.
pub fn present<'a>(object: &Object<'a>, key: &str) -> napi::Result<Option<Unknown<'a>>> {
  Ok(object.get::<Unknown>(key)?.filter(|v| !is_nullish(v)))
}

/// Reads a plain object argument (not an array).
pub fn object_arg<'a>(env: &Env, value: &Unknown<'a>, name: &str) -> napi::Result<Object<'a>> {
  if value.get_type()? != ValueType::Object || value.is_array()? {
    return Err(invalid_arg(env, format!("{name} must be an object")));
  }
  Ok(Object::from_raw(env.raw(), value.raw()))
}

/// Reads an array argument's elements.
pub fn array_arg<'a>(env: &Env, value: &Unknown<'a>, name: &str) -> napi::Result<Vec<Unknown<'a>>> {
  if !value.is_array().unwrap_or(false) {
    return Err(invalid_arg(env, format!("{name} must be an array")));
  }
  // SAFETY: `value` is a live handle of this call's scope and was just checked to be an array.
  unsafe { Vec::<Unknown>::from_napi_value(env.raw(), value.raw()) }
    .map_err(|e| invalid_arg(env, format!("{name}: {}", e.reason)))
}
