//! `@codecall/native`: code mode for MCP servers.
//!
//! The crate is laid out by the layers of the contract (`api.md` §0). Each layer is a folder whose
//! `mod.rs` reads as its table of contents; each layer uses only the layers above it:
//!
//! | folder       | JS export   | owns                                                            |
//! |--------------|-------------|-----------------------------------------------------------------|
//! | `common`     | —           | presets, error codes and argument checks shared by every layer  |
//! | `validator`  | `validate`  | oxc parse, AgentScript rules, TypeScript stripping, rewriting   |
//! | `sandbox`    | `Sandbox`   | QuickJS runtimes, limits, the thread pool, the host-call bridge |
//! | `search`     | `ToolIndex` | tool search: analysis, synonyms, typos, BM25 on tantivy, score  |
//! | `engine`     | `CodeCall`  | tool registry, modes, meta-tools, MCP result unwrapping         |
//!
//! The core of every layer is plain Rust (tested with `cargo test`); the napi surface lives in each
//! layer's `binding.rs` and is kept thin.
//!
//! Every file inside a layer is a private module: a layer's surface is the `pub use` list in its
//! `mod.rs`, so a layer that reaches past another's surface does not compile. What the worker
//! executable, the example programs and the fuzz targets use is on those lists too.
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod common;
pub mod engine;
pub mod sandbox;
pub mod search;
pub mod validator;
