//! Runs that outlive a process (api.md §12): the store of journals of executions waiting for a
//! person. The journal itself — what a script saw, and its replay — is the package's JavaScript
//! (`lib/common/journal.mjs`); this room keeps it: an SQLite table, the default `RunStore`.
//!
//! | file      | owns                                                                      |
//! |-----------|---------------------------------------------------------------------------|
//! | `sqlite`  | `codecall_runs`: put (replace), get (unexpired), delete (the claim)        |
//! | `binding` | `class SqliteRunStore` for JavaScript; `options.runs` read                 |

pub(crate) mod binding;
mod sqlite;

pub use sqlite::SqliteRuns;

#[cfg(test)]
mod tests;
