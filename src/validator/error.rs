//! Why a script was refused. These are results, not failures of the validator: they cross to
//! JavaScript as `{ ok: false, status, error }` and, in `execute()`, as the same statuses.

use super::position::Location;
use crate::common::ErrorCode;

/// A refused script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
  /// The script does not parse. `location` is where the parser stopped, in the user's script.
  #[error("{message}")]
  Syntax { message: String, location: Location },
  /// The script parses but breaks a rule of the policy. `code` is `VALIDATION_ERROR` or
  /// `SELF_REFERENCE_BLOCKED`; `kind` names the rule (`LoopNotAllowed`, `DisallowedGlobal`, ...).
  #[error("{message}")]
  IllegalAccess { code: ErrorCode, kind: &'static str, message: String, location: Option<Location> },
}

impl Rejection {
  /// `'syntax_error'` or `'illegal_access'`, the status of `api.md` §2.4.
  pub fn status(&self) -> &'static str {
    match self {
      Self::Syntax { .. } => "syntax_error",
      Self::IllegalAccess { .. } => "illegal_access",
    }
  }

  pub fn code(&self) -> ErrorCode {
    match self {
      Self::Syntax { .. } => ErrorCode::SyntaxError,
      Self::IllegalAccess { code, .. } => *code,
    }
  }

  pub fn message(&self) -> &str {
    match self {
      Self::Syntax { message, .. } | Self::IllegalAccess { message, .. } => message,
    }
  }

  pub fn location(&self) -> Option<Location> {
    match self {
      Self::Syntax { location, .. } => Some(*location),
      Self::IllegalAccess { location, .. } => *location,
    }
  }

  pub fn kind(&self) -> Option<&'static str> {
    match self {
      Self::Syntax { .. } => None,
      Self::IllegalAccess { kind, .. } => Some(kind),
    }
  }
}
