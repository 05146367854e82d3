//! The engine layer's errors. A meta-tool input or option the caller got wrong is
//! `InvalidArgument` (a `TypeError` with code `ERR_INVALID_ARG` at the napi edge); a failure of the
//! search index is the engine's own and never the caller's (a plain `Error`).

use crate::common::InvalidArgument;
use crate::search::IndexError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
  #[error("{0}")]
  InvalidArgument(#[from] InvalidArgument),
  #[error(transparent)]
  Index(#[from] IndexError),
}
