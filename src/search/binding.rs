//! `class ToolIndex` for JavaScript. Thin: argument checks and conversions; the index is plain Rust.

use napi::{bindgen_prelude::FromNapiValue, Env, Error, JsValue, Status, Unknown};
use napi_derive::napi;

use super::{index::ToolIndex as Core, tool, IndexError, IndexOptions, SearchOptions, Tool};
use crate::common::args;

/// Options of `new ToolIndex()`.
#[napi(object)]
#[derive(Default)]
pub struct ToolIndexOptions {
  /// Expand query words with the built-in synonym table ("ticket" finds `create_issue`), weighted
  /// below the words themselves.
  /// @default true
  pub synonyms: Option<bool>,
  /// Correct query words no tool contains to indexed words one edit away ("repostory"), weighted
  /// below exact words. Words shorter than 5 characters are not corrected.
  /// @default true
  pub fuzzy: Option<bool>,
}

/// A tool to index. `name` is its identity: upserting the same name replaces the entry.
#[napi(object)]
pub struct IndexedTool {
  pub name: String,
  pub app_id: Option<String>,
  pub description: Option<String>,
  /// Where the tool comes from (`'inline'`, `'openapi'`, ...), for the `sources` filter.
  pub source: Option<String>,
  pub tags: Option<Vec<String>>,
  /// A JSON Schema; its property names (nested ones too) are searchable.
  #[napi(ts_type = "Record<string, unknown>")]
  pub input_schema: Option<serde_json::Value>,
  /// Examples: strings, or `{ description, input, output? }` objects whose `description` is searchable.
  #[napi(ts_type = "Array<string | { description: string; input?: unknown; output?: unknown }>")]
  pub examples: Option<serde_json::Value>,
}

/// Options of `ToolIndex.search()`. An empty filter list does not filter.
#[napi(object)]
#[derive(Default)]
pub struct ToolSearchOptions {
  /// The most hits returned.
  /// @default 8
  pub top_k: Option<f64>,
  /// Only tools with one of these `appId`s.
  pub app_ids: Option<Vec<String>>,
  /// Only tools with at least one of these tags.
  pub tags: Option<Vec<String>>,
  /// Only tools with one of these sources.
  pub sources: Option<Vec<String>>,
  /// Only hits scoring at least this (0..1; see the score's definition in the README).
  /// @default 0
  pub min_score: Option<f64>,
}

/// One search result.
#[napi(object)]
pub struct SearchHit {
  pub name: String,
  pub app_id: Option<String>,
  /// The tool's description (`''` when it has none).
  pub description: String,
  pub source: Option<String>,
  /// In [0, 1]: 1 only for an exact name; the same threshold means the same for every query.
  pub score: f64,
}

/// A searchable set of tools: BM25 on tantivy over names, descriptions, tags, input property names
/// and examples, with stemming, synonyms and typo tolerance (`api.md` §4).
#[napi]
pub struct ToolIndex {
  core: Core,
}

#[napi]
impl ToolIndex {
  /// Throws `TypeError` (`ERR_INVALID_ARG`) for invalid options.
  #[napi(constructor, ts_args_type = "options?: ToolIndexOptions")]
  pub fn new(env: Env, options: Option<Unknown>) -> napi::Result<Self> {
    let options: ToolIndexOptions = args::options_arg(&env, options.as_ref(), "options")?.unwrap_or_default();
    let defaults = IndexOptions::default();
    let core = Core::new(IndexOptions {
      synonyms: options.synonyms.unwrap_or(defaults.synonyms),
      fuzzy: options.fuzzy.unwrap_or(defaults.fuzzy),
    })
    .map_err(engine_error)?;
    Ok(Self { core })
  }

  /// Adds tools, replacing indexed tools of the same name. Searchable at the next `search`.
  /// Throws `TypeError` (`ERR_INVALID_ARG`) if any tool is malformed; then nothing is added.
  #[napi(ts_args_type = "tools: IndexedTool[]")]
  pub fn upsert(&mut self, env: Env, tools: Unknown) -> napi::Result<()> {
    let items: Vec<Unknown> = array_arg(&env, &tools, "tools")?;
    let mut batch = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
      // SAFETY: `item` is a live handle of this call's scope; `from_napi_value` only reads it.
      let t = unsafe { IndexedTool::from_napi_value(env.raw(), item.raw()) }
        .map_err(|e| args::invalid_arg(&env, format!("tools[{i}]: {}", e.reason)))?;
      if t.name.trim().is_empty() {
        return Err(args::invalid_arg(&env, format!("tools[{i}].name must be a non-empty string")));
      }
      batch.push(Tool {
        properties: t.input_schema.as_ref().map(tool::property_names).unwrap_or_default(),
        examples: t.examples.as_ref().map(tool::example_texts).unwrap_or_default(),
        name: t.name,
        app_id: t.app_id,
        description: t.description,
        source: t.source,
        tags: t.tags.unwrap_or_default(),
      });
    }
    self.core.upsert(batch).map_err(engine_error)
  }

  /// Removes tools by name; unknown names are ignored.
  #[napi(ts_args_type = "names: string[]")]
  pub fn remove(&mut self, env: Env, names: Unknown) -> napi::Result<()> {
    let items: Vec<Unknown> = array_arg(&env, &names, "names")?;
    let mut list = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
      list.push(args::string_arg(&env, item, &format!("names[{i}]"))?);
    }
    self.core.remove(&list);
    Ok(())
  }

  /// Removes every tool.
  #[napi]
  pub fn clear(&mut self) -> napi::Result<()> {
    self.core.clear().map_err(engine_error)
  }

  /// The best tools for a natural-language query, best first; `[]` when nothing matches.
  /// Equal scores are ordered by name. Throws `TypeError` (`ERR_INVALID_ARG`) for a non-string
  /// query or invalid options.
  #[napi(ts_args_type = "query: string, options?: ToolSearchOptions")]
  pub fn search(&mut self, env: Env, query: Unknown, options: Option<Unknown>) -> napi::Result<Vec<SearchHit>> {
    let query = args::string_arg(&env, &query, "query")?;
    let options: ToolSearchOptions = args::options_arg(&env, options.as_ref(), "options")?.unwrap_or_default();
    let options = search_options(options).map_err(|m| args::invalid_arg(&env, m))?;
    let hits = self.core.search(&query, &options).map_err(engine_error)?;
    Ok(
      hits
        .into_iter()
        .map(|h| SearchHit {
          name: h.name,
          app_id: h.app_id,
          description: h.description,
          source: h.source,
          score: h.score,
        })
        .collect(),
    )
  }

  /// How many tools are indexed (pending writes included).
  #[napi(getter)]
  pub fn size(&self) -> u32 {
    u32::try_from(self.core.len()).unwrap_or(u32::MAX)
  }
}

fn search_options(o: ToolSearchOptions) -> Result<SearchOptions, String> {
  let defaults = SearchOptions::default();
  let top_k = match args::non_negative(o.top_k, "options.topK")? {
    None => defaults.top_k,
    Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
  };
  let min_score = match o.min_score {
    None => defaults.min_score,
    Some(s) if (0.0..=1.0).contains(&s) => s,
    Some(s) => return Err(format!("options.minScore must be a number from 0 to 1 (got {s})")),
  };
  Ok(SearchOptions {
    top_k,
    app_ids: o.app_ids.unwrap_or_default(),
    tags: o.tags.unwrap_or_default(),
    sources: o.sources.unwrap_or_default(),
    min_score,
  })
}

fn array_arg<'a>(env: &Env, value: &Unknown<'a>, name: &str) -> napi::Result<Vec<Unknown<'a>>> {
  if !value.is_array().unwrap_or(false) {
    return Err(args::invalid_arg(env, format!("{name} must be an array")));
  }
  // SAFETY: `value` is a live handle of this call's scope and was just checked to be an array.
  unsafe { Vec::<Unknown>::from_napi_value(env.raw(), value.raw()) }
    .map_err(|e| args::invalid_arg(env, format!("{name}: {}", e.reason)))
}

fn engine_error(e: IndexError) -> Error {
  Error::new(Status::GenericFailure, e.to_string())
}
