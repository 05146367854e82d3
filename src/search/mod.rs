//! The search layer (`api.md` §4): `ToolIndex`, BM25 tool search on tantivy in RAM, fused with a
//! sentence model (all-MiniLM-L6-v2, int8) that the addon runs itself.
//!
//! | file          | owns                                                                    |
//! |---------------|-------------------------------------------------------------------------|
//! | `analysis.rs` | words from names (`: _ - .`, camelCase) and prose; stop words; stemming  |
//! | `synonyms.rs` | the curated synonym table                                                |
//! | `typo.rs`     | corrections one edit away, for words the index does not know             |
//! | `model/`      | the sentence model: its file, tokenizer, forward pass, background pool   |
//! | `semantic.rs` | a tool's embedded text; the tool vectors                                 |
//! | `tool.rs`     | a tool's searchable parts; property names from JSON Schema; example text |
//! | `score.rs`    | the one score formula, in [0, 1], and its fusion with the embedding      |
//! | `index.rs`    | the tantivy index, incremental updates, retrieval and ranking            |
//! | `binding.rs`  | `class ToolIndex` for JavaScript                                         |
//!
//! Uses `common` only (argument errors); knows nothing of the validator or the sandbox.

mod analysis;
// The napi surface: napi registers its class (a test build does not, hence the allow).
#[cfg_attr(test, allow(dead_code))]
mod binding;
mod index;
mod model;
mod score;
mod semantic;
mod synonyms;
mod tool;
mod typo;

// The layer's surface: everything another layer (or an example program) may name.
pub use index::{Hit, IndexError, IndexOptions, SearchOptions, ToolIndex, DEFAULT_TOP_K};
pub use tool::{property_names, ServerText, Tool};
// For the engine layer's binding, which makes an index of its own.
pub(crate) use binding::{available_model, cache_dir_arg, model_kind, ready_promise, warn_without_model};
pub use model::pool::Waiter;

#[cfg(test)]
mod tests;
