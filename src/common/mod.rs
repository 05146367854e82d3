//! What every layer shares: the presets of `api.md` §2.1, the stable error codes of §7, and the
//! one way a caller's bad argument becomes a `TypeError` with code `ERR_INVALID_ARG`.
//!
//! Nothing here runs a script or parses one.

pub mod args;
pub mod codes;
mod error;
pub mod preset;

pub use codes::ErrorCode;
pub use error::InvalidArgument;
pub use preset::{Preset, PresetDefaults};
