//! The search layer (`api.md` §4): `ToolIndex`, BM25 tool search on tantivy in RAM, blended with
//! static sentence embeddings (no model at run time).
//!
//! | file          | owns                                                                    |
//! |---------------|-------------------------------------------------------------------------|
//! | `analysis.rs` | words from names (`: _ - .`, camelCase) and prose; stop words; stemming  |
//! | `synonyms.rs` | the curated synonym table                                                |
//! | `typo.rs`     | corrections one edit away, for words the index does not know             |
//! | `embed.rs`    | the static embedding table (distilled MiniLM), BERT tokenizer, pooling   |
//! | `semantic.rs` | a tool's embedded text; the tool vectors                                 |
//! | `tool.rs`     | a tool's searchable parts; property names from JSON Schema; example text |
//! | `score.rs`    | the one score formula, in [0, 1], and its fusion with the embedding      |
//! | `index.rs`    | the tantivy index, incremental updates, retrieval and ranking            |
//! | `binding.rs`  | `class ToolIndex` for JavaScript                                         |
//!
//! Uses `common` only (argument errors); knows nothing of the validator or the sandbox.

pub mod analysis;
pub mod binding;
pub mod embed;
pub mod index;
pub mod score;
pub mod semantic;
pub mod synonyms;
pub mod tool;
pub mod typo;

pub use index::{Hit, IndexError, IndexOptions, SearchOptions, ToolIndex, DEFAULT_TOP_K};
pub use tool::Tool;

#[cfg(test)]
mod tests;
