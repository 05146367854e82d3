//! What every layer shares: the presets of `api.md` §2.1, the stable error codes of §7, and the
//! one way a caller's bad argument becomes a `TypeError` with code `ERR_INVALID_ARG`.
//!
//! Nothing here runs a script or parses one.

mod addon;
/// The napi edge's argument readers; only the layers' `binding.rs` files use them.
pub(crate) mod args;
mod codes;
mod error;
mod glob;
mod ids;
mod json;
mod jsref;
mod preset;
mod text;

pub use addon::addon_path;
#[cfg(test)]
pub(crate) use codes::typescript_union;
pub use codes::ErrorCode;
pub use error::InvalidArgument;
pub use glob::Glob;
pub use ids::{execution_id, random_id};
pub use json::well_formed_escapes;
pub(crate) use jsref::JsRef;
pub use preset::{Preset, PresetDefaults, ALWAYS_DISABLED_BUILTINS, FALLBACK_MAX_ITERATIONS, RESERVED_PREFIX};
pub use text::{char_prefix, near_miss};
