//! The one error of argument checks in plain Rust: a caller's (or a model's) bad argument, with a
//! message that names it. At the napi edge it becomes a `TypeError` whose `code` is
//! `ERR_INVALID_ARG` (`args::invalid_arg`, `api.md` §1); inside a meta-tool it is the same.

use std::fmt;

/// A bad argument; the message names the argument (`"options.topK must be …"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgument(String);

impl InvalidArgument {
  pub fn new(message: impl Into<String>) -> Self {
    Self(message.into())
  }

  pub fn message(&self) -> &str {
    &self.0
  }
}

impl fmt::Display for InvalidArgument {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&self.0)
  }
}

impl std::error::Error for InvalidArgument {}

impl AsRef<str> for InvalidArgument {
  fn as_ref(&self) -> &str {
    &self.0
  }
}

impl From<String> for InvalidArgument {
  fn from(message: String) -> Self {
    Self(message)
  }
}

impl From<&str> for InvalidArgument {
  fn from(message: &str) -> Self {
    Self(message.to_string())
  }
}
