//! The stable error codes of `api.md` §7. They cross to JavaScript as these exact strings and are
//! never renamed: hosts and models branch on them.

/// Every error code the package reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
  // Script and policy.
  SyntaxError,
  ValidationError,
  SelfReferenceBlocked,
  ExecutionError,
  SerializationError,
  ResultTooLarge,
  MemoryLimitExceeded,
  StackOverflow,
  IterationLimitExceeded,
  Timeout,
  // Tools.
  ToolNotFound,
  AccessDenied,
  ToolExecutionError,
  MaxToolCallsExceeded,
  TooManyPendingCalls,
  // Sandbox.
  WorkerCrashed,
  WorkerStartupFailed,
  QueueFull,
  QueueTimeout,
  PoolDisposed,
  ExecutionAborted,
  // Caller.
  ErrInvalidArg,
}

impl ErrorCode {
  /// Every code, in the order of `api.md` §7.
  pub const ALL: [ErrorCode; 22] = [
    Self::SyntaxError,
    Self::ValidationError,
    Self::SelfReferenceBlocked,
    Self::ExecutionError,
    Self::SerializationError,
    Self::ResultTooLarge,
    Self::MemoryLimitExceeded,
    Self::StackOverflow,
    Self::IterationLimitExceeded,
    Self::Timeout,
    Self::ToolNotFound,
    Self::AccessDenied,
    Self::ToolExecutionError,
    Self::MaxToolCallsExceeded,
    Self::TooManyPendingCalls,
    Self::WorkerCrashed,
    Self::WorkerStartupFailed,
    Self::QueueFull,
    Self::QueueTimeout,
    Self::PoolDisposed,
    Self::ExecutionAborted,
    Self::ErrInvalidArg,
  ];

  /// The code as JavaScript sees it.
  pub const fn as_str(self) -> &'static str {
    match self {
      Self::SyntaxError => "SYNTAX_ERROR",
      Self::ValidationError => "VALIDATION_ERROR",
      Self::SelfReferenceBlocked => "SELF_REFERENCE_BLOCKED",
      Self::ExecutionError => "EXECUTION_ERROR",
      Self::SerializationError => "SERIALIZATION_ERROR",
      Self::ResultTooLarge => "RESULT_TOO_LARGE",
      Self::MemoryLimitExceeded => "MEMORY_LIMIT_EXCEEDED",
      Self::StackOverflow => "STACK_OVERFLOW",
      Self::IterationLimitExceeded => "ITERATION_LIMIT_EXCEEDED",
      Self::Timeout => "TIMEOUT",
      Self::ToolNotFound => "TOOL_NOT_FOUND",
      Self::AccessDenied => "ACCESS_DENIED",
      Self::ToolExecutionError => "TOOL_EXECUTION_ERROR",
      Self::MaxToolCallsExceeded => "MAX_TOOL_CALLS_EXCEEDED",
      Self::TooManyPendingCalls => "TOO_MANY_PENDING_CALLS",
      Self::WorkerCrashed => "WORKER_CRASHED",
      Self::WorkerStartupFailed => "WORKER_STARTUP_FAILED",
      Self::QueueFull => "QUEUE_FULL",
      Self::QueueTimeout => "QUEUE_TIMEOUT",
      Self::PoolDisposed => "POOL_DISPOSED",
      Self::ExecutionAborted => "EXECUTION_ABORTED",
      Self::ErrInvalidArg => "ERR_INVALID_ARG",
    }
  }
}

impl std::fmt::Display for ErrorCode {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(self.as_str())
  }
}

/// The members of `export type <name> = | 'A' | 'B' …` in `src/types.d.ts`, the hand-written head
/// of `index.d.ts`: for tests that hold a Rust list and its TypeScript union to each other.
#[cfg(test)]
pub(crate) fn typescript_union(name: &str) -> Vec<String> {
  let source = include_str!("../types.d.ts");
  let head = format!("export type {name} =");
  let Some(start) = source.find(&head) else { return Vec::new() };
  let mut members = Vec::new();
  for line in source[start + head.len()..].lines() {
    let line = line.trim();
    if line.is_empty() {
      if members.is_empty() {
        continue;
      }
      break;
    }
    match line.strip_prefix("| '").and_then(|rest| rest.strip_suffix('\'')) {
      Some(member) => members.push(member.to_string()),
      None => break,
    }
  }
  members
}

#[cfg(test)]
mod tests {
  use super::*;

  /// One list, two languages: the TypeScript `ErrorCode` union is exactly `ErrorCode::ALL`, in order.
  #[test]
  fn the_typescript_union_lists_every_code() {
    let rust: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(typescript_union("ErrorCode"), rust);
  }

  #[test]
  fn codes_are_unique_and_screaming_snake_case() {
    let mut seen = std::collections::HashSet::new();
    for code in ErrorCode::ALL {
      let s = code.as_str();
      assert!(seen.insert(s), "duplicate code {s}");
      assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
    }
  }
}
