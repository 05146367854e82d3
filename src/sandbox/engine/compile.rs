//! Compiling JavaScript to QuickJS bytecode in a context that *can* compile, so that the contexts
//! scripts run in never need to: they are created without the eval intrinsic, which makes `eval`,
//! `Function(...)` and their async/generator siblings unable to turn strings into code at all.
//!
//! Bytecode is written and read with QuickJS's own object serializer; it is independent of the
//! runtime that produced it.

use std::ffi::CString;

use rquickjs::{qjs, Ctx, Value};

/// A compile error, with the 1-based position QuickJS reported (in the compiled source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
  pub message: String,
  pub line: Option<u32>,
  pub column: Option<u32>,
}

/// What compiled bytecode keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
  /// Line and column tables (user scripts: errors point into them).
  Positions,
  /// Nothing but the code (the prelude: smaller, faster to load).
  CodeOnly,
}

/// Compiles `source` as a global script named `filename` into bytecode. Function source text is
/// never kept: `fn.toString()` cannot echo the script back.
pub fn compile(ctx: &Ctx<'_>, source: &str, filename: &str, keep: Keep) -> Result<Vec<u8>, CompileError> {
  let source = CString::new(source).map_err(|_| CompileError {
    message: "Script contains a NUL character".into(),
    line: None,
    column: None,
  })?;
  let filename = CString::new(filename).unwrap_or_default();
  let raw = ctx.as_raw().as_ptr();
  // SAFETY: `raw` is the live context behind `ctx`; `source` is NUL-terminated and its length
  // excludes the terminator as JS_Eval requires; the returned value is owned and freed below
  // (via `Value::from_raw`, which takes ownership).
  let function = unsafe {
    qjs::JS_Eval(
      raw,
      source.as_ptr(),
      source.as_bytes().len() as _,
      filename.as_ptr(),
      (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32,
    )
  };
  // SAFETY: JS_Eval returned an owned value (possibly the exception marker) of this context.
  let function = unsafe { Value::from_raw(ctx.clone(), function) };
  if function.is_exception() {
    let error = ctx.catch();
    return Err(describe_compile_error(&error));
  }
  let mut size: qjs::size_t = 0;
  // SAFETY: `function` is a live compiled function of this context; JS_WriteObject returns a
  // buffer owned by the context's allocator (or null), freed with js_free below.
  let mut flags = qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE;
  if keep == Keep::CodeOnly {
    flags |= qjs::JS_WRITE_OBJ_STRIP_DEBUG;
  }
  let buffer = unsafe { qjs::JS_WriteObject(raw, &mut size, function.as_raw(), flags as i32) };
  if buffer.is_null() {
    let _ = ctx.catch();
    return Err(CompileError { message: "Could not serialize the compiled script".into(), line: None, column: None });
  }
  // SAFETY: `buffer` points to `size` initialized bytes written by JS_WriteObject.
  let bytes = unsafe { std::slice::from_raw_parts(buffer, size as usize) }.to_vec();
  // SAFETY: `buffer` came from this context's allocator and is freed exactly once.
  unsafe { qjs::js_free(raw, buffer.cast()) };
  Ok(bytes)
}

/// Runs bytecode produced by `compile` in `ctx` and returns the script's completion value.
pub fn run<'js>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<Value<'js>> {
  let raw = ctx.as_raw().as_ptr();
  // SAFETY: `bytecode` is a complete buffer from JS_WriteObject; JS_ReadObject validates it and
  // returns an owned value (or the exception marker).
  let object =
    unsafe { qjs::JS_ReadObject(raw, bytecode.as_ptr(), bytecode.len() as _, qjs::JS_READ_OBJ_BYTECODE as i32) };
  // SAFETY: an owned value of this context, possibly the exception marker.
  let object = unsafe { Value::from_raw(ctx.clone(), object) };
  if object.is_exception() {
    return Err(rquickjs::Error::Exception);
  }
  // SAFETY: JS_EvalFunction consumes its argument, so it receives its own reference (the dup);
  // the result is an owned value of this context.
  let result = unsafe { qjs::JS_EvalFunction(raw, qjs::JS_DupValue(raw, object.as_raw())) };
  // SAFETY: as above.
  let result = unsafe { Value::from_raw(ctx.clone(), result) };
  if result.is_exception() {
    return Err(rquickjs::Error::Exception);
  }
  Ok(result)
}

fn describe_compile_error(error: &Value<'_>) -> CompileError {
  let mut out = CompileError { message: "Syntax error".into(), line: None, column: None };
  if let Some(object) = error.as_object() {
    if let Ok(message) = object.get::<_, String>("message") {
      out.message = message;
    }
    if let Ok(stack) = object.get::<_, String>("stack") {
      if let Some((line, column)) = super::errors::first_frame(&stack, None) {
        out.line = Some(line);
        out.column = Some(column);
      }
    }
    if out.line.is_none() {
      out.line = object.get::<_, u32>("lineNumber").ok();
      out.column = object.get::<_, u32>("columnNumber").ok();
    }
  }
  out
}
