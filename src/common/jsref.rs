//! References from Rust to JavaScript objects that end with their owner.
//!
//! napi-rs's `ObjectRef` never deletes its reference when dropped: whatever it holds stays a GC
//! root for the life of the Node environment. A `Sandbox` or `CodeCall` holding its helpers that
//! way kept them — and every callback they reach, the engine itself through an `onToolsChanged`
//! that names it — forever (issue 41). A [`JsRef`] deletes its reference when dropped, and a weak
//! one does not root its object at all.

use std::marker::PhantomData;
use std::ptr;

use napi::bindgen_prelude::Object;
use napi::{sys, Env, JsValue, Status};

/// A reference to a JavaScript object, deleted on drop. Not `Send`: created, read and dropped on
/// the thread of its Node environment only.
pub(crate) struct JsRef {
  env: sys::napi_env,
  raw: sys::napi_ref,
  _not_send: PhantomData<*const ()>,
}

impl JsRef {
  /// Keeps `value` alive until dropped.
  pub fn strong(env: &Env, value: &Object) -> napi::Result<Self> {
    Self::new(env, value, 1)
  }

  /// Does not keep `value` alive: something else must (e.g. the JavaScript object that owns the
  /// Rust side). [`JsRef::get`] fails once it was collected.
  pub fn weak(env: &Env, value: &Object) -> napi::Result<Self> {
    Self::new(env, value, 0)
  }

  fn new(env: &Env, value: &Object, count: u32) -> napi::Result<Self> {
    let mut raw = ptr::null_mut();
    // SAFETY: `env` and `value` are live handles of the current call on the environment's thread.
    let status = unsafe { sys::napi_create_reference(env.raw(), value.raw(), count, &mut raw) };
    if status != sys::Status::napi_ok {
      return Err(napi::Error::new(Status::from(status), "napi_create_reference failed"));
    }
    Ok(Self { env: env.raw(), raw, _not_send: PhantomData })
  }

  /// The object, if it is still alive.
  pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    let mut value = ptr::null_mut();
    // SAFETY: `raw` is a reference of this environment that only `Drop` deletes.
    let status = unsafe { sys::napi_get_reference_value(env.raw(), self.raw, &mut value) };
    if status != sys::Status::napi_ok {
      return Err(napi::Error::new(Status::from(status), "napi_get_reference_value failed"));
    }
    if value.is_null() {
      return Err(napi::Error::from_reason("the object was collected"));
    }
    Ok(Object::from_raw(env.raw(), value))
  }
}

impl Drop for JsRef {
  fn drop(&mut self) {
    // SAFETY: `JsRef` is not `Send`, so this runs on the environment's thread: from a call into
    // the addon, or from a finalizer (a collected owner; also at the environment's teardown, which
    // runs finalizers while the environment is still valid). The reference was created by `new`
    // and is deleted only here.
    unsafe { sys::napi_delete_reference(self.env, self.raw) };
  }
}
