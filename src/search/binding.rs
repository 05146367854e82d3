//! `class ToolIndex` for JavaScript. Thin: argument checks and conversions; the index is plain Rust.

use std::sync::atomic::{AtomicBool, Ordering};

use napi::{
  bindgen_prelude::{Either, FnArgs, Function, JsObjectValue, Null, Object},
  Env, Error, JsValue, Status, Unknown, ValueType,
};
use napi_derive::napi;
use serde_json::{Map, Value};

use super::{index::ToolIndex as Core, model, tool, IndexError, IndexOptions, SearchOptions, ServerText, Tool};
use crate::common::args::{self, array_arg, object_arg, present};
use crate::common::InvalidArgument;

impl args::KnownKeys for ToolIndexOptions {
  const KEYS: &'static [&'static str] = &["synonyms", "fuzzy", "semantic", "model", "cacheDir"];
}

impl args::KnownKeys for ToolSearchOptions {
  const KEYS: &'static [&'static str] = &["topK", "appIds", "tags", "sources", "minScore"];
}

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
  /// Fuse in a sentence model's similarity of query and tool (all-MiniLM-L6-v2, int8, run by the
  /// addon on the CPU; no network, GPU or Python), so a paraphrase that shares no word with a tool
  /// still finds it. Embedded per tool: its server (`appId`), name words, `title` (or
  /// `annotations.title`), description and input property names. Tools are embedded on background
  /// threads: until every tool has its vector (`ready()`), search is lexical. A query unrelated to
  /// every tool still returns `[]`. `null` means the default.
  /// @default true
  pub semantic: Option<Either<bool, Null>>,
  /// Which sentence model: `'default'` (all-MiniLM-L6-v2, in every install) or `'large'`
  /// (all-mpnet-base-v2, int8: better rankings for a 111 MB file instead of 23 MB and about 7 times
  /// the work per embedded text; its file is in the optional package `@codecall/native-data-large`, or named
  /// by `CODECALL_EMBEDDINGS_LARGE_PATH`). Without that file, `'large'` uses the default model and
  /// says so once (a Node warning, code `CODECALL_NO_LARGE_MODEL`). `null` means the default.
  /// @default 'default'
  #[napi(ts_type = "'default' | 'large' | null")]
  pub model: Option<Either<String, Null>>,
  /// A directory where tool vectors are kept too (made if missing, mode 0700), so the next process
  /// with the same tools embeds nothing: `ready()` resolves at once. Default: none (nothing is
  /// written). An unusable directory only means vectors are computed again.
  pub cache_dir: Option<Either<String, Null>>,
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
/// and examples, with stemming, synonyms and typo tolerance (`api.md` §4), fused with a sentence
/// model's similarity.
#[napi]
pub struct ToolIndex {
  core: Core,
  /// Whether tools' titles are read (the semantic signal embeds them).
  semantic: bool,
}

#[napi]
impl ToolIndex {
  /// Throws `TypeError` (`ERR_INVALID_ARG`) for invalid options.
  #[napi(constructor, ts_args_type = "options?: ToolIndexOptions")]
  pub fn new(env: Env, options: Option<Unknown>) -> napi::Result<Self> {
    let options: ToolIndexOptions = args::checked_options(&env, options.as_ref(), "options")?.unwrap_or_default();
    let defaults = IndexOptions::default();
    let semantic = match options.semantic {
      Some(Either::A(on)) => on,
      Some(Either::B(Null)) | None => defaults.semantic,
    };
    let cache_dir = match options.cache_dir {
      Some(Either::A(dir)) => Some(checked_cache_dir(dir).map_err(|m| args::invalid_arg(&env, m))?),
      Some(Either::B(Null)) | None => None,
    };
    let model = match options.model {
      Some(Either::A(name)) => model_kind(&env, &name, "options.model")?,
      Some(Either::B(Null)) | None => defaults.model,
    };
    let model = if semantic { available_model(&env, model) } else { model };
    let core = Core::new(IndexOptions {
      synonyms: options.synonyms.unwrap_or(defaults.synonyms),
      fuzzy: options.fuzzy.unwrap_or(defaults.fuzzy),
      semantic,
      model,
      cache_dir,
    })
    .map_err(engine_error)?;
    if semantic {
      warn_without_model(&env, model);
    }
    Ok(Self { core, semantic })
  }

  /// Adds tools, replacing indexed tools of the same name. Searchable at the next `search`.
  /// Throws `TypeError` (`ERR_INVALID_ARG`) if any tool is malformed; then nothing is added.
  #[napi(ts_args_type = "tools: IndexedTool[]")]
  pub fn upsert(&mut self, env: Env, tools: Unknown) -> napi::Result<()> {
    let items: Vec<Unknown> = array_arg(&env, &tools, "tools")?;
    let mut batch = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
      batch.push(read_tool(&env, item, &format!("tools[{i}]"), self.semantic)?);
    }
    self.core.upsert(batch).map_err(engine_error)?;
    if self.semantic {
      warn_without_model(&env, self.core.model_kind());
    }
    Ok(())
  }

  /// Resolves once every tool upserted so far has its sentence-model vector (at once with
  /// `semantic: false`, without a model, or when they all have one). `search` never waits for it:
  /// until then it ranks lexically. Never rejects.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn ready<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
    ready_promise(env, |waiter| self.core.when_ready(waiter))
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
    let options: ToolSearchOptions = args::checked_options(&env, options.as_ref(), "options")?.unwrap_or_default();
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

fn search_options(o: ToolSearchOptions) -> Result<SearchOptions, InvalidArgument> {
  let defaults = SearchOptions::default();
  let top_k = match args::non_negative(o.top_k, "options.topK")? {
    None => defaults.top_k,
    Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
  };
  let min_score = match o.min_score {
    None => defaults.min_score,
    Some(s) if (0.0..=1.0).contains(&s) => s,
    Some(s) => return Err(format!("options.minScore must be a number from 0 to 1 (got {s})").into()),
  };
  Ok(SearchOptions {
    top_k,
    app_ids: o.app_ids.unwrap_or_default(),
    tags: o.tags.unwrap_or_default(),
    sources: o.sources.unwrap_or_default(),
    min_score,
  })
}

/// Reads one `IndexedTool` (see `types.d.ts`). Only the parts search uses are read: from the input
/// schema, its structure down to `tool::MAX_SCHEMA_DEPTH` (so any depth or size is accepted). With
/// `semantic`, also the `title` (else `annotations.title`): an optional extra, so a value that is
/// not a string is ignored rather than refused.
fn read_tool(env: &Env, value: &Unknown, at: &str, semantic: bool) -> napi::Result<Tool> {
  let object = object_arg(env, value, at)?;
  let name = optional_string(env, &object, "name", at)?
    .filter(|n| !n.trim().is_empty())
    .ok_or_else(|| args::invalid_arg(env, format!("{at}.name must be a non-empty string")))?;
  let mut tool = Tool {
    name,
    app_id: optional_string(env, &object, "appId", at)?,
    description: optional_string(env, &object, "description", at)?,
    source: optional_string(env, &object, "source", at)?,
    ..Tool::default()
  };
  if let Some(tags) = present(&object, "tags")? {
    for (i, tag) in array_arg(env, &tags, &format!("{at}.tags"))?.iter().enumerate() {
      tool.tags.push(args::string_arg(env, tag, &format!("{at}.tags[{i}]"))?);
    }
  }
  if semantic {
    tool.title = lenient_string(env, &object, "title")?;
    if tool.title.is_none() {
      if let Some(annotations) =
        present(&object, "annotations")?.filter(|a| a.get_type().ok() == Some(ValueType::Object))
      {
        tool.title = lenient_string(env, &Object::from_raw(env.raw(), annotations.raw()), "title")?;
      }
    }
  }
  if let Some(server) = present(&object, "server")? {
    let at = format!("{at}.server");
    let server = object_arg(env, &server, &at)?;
    tool.server = ServerText::new(
      optional_string(env, &server, "title", &at)?,
      optional_string(env, &server, "description", &at)?,
      optional_string(env, &server, "instructions", &at)?,
    );
  }
  if let Some(schema) = present(&object, "inputSchema")? {
    object_arg(env, &schema, &format!("{at}.inputSchema"))?;
    tool.properties = tool::property_names(&schema_outline(env, &schema, 0)?);
  }
  if let Some(examples) = present(&object, "examples")? {
    for (i, example) in array_arg(env, &examples, &format!("{at}.examples"))?.iter().enumerate() {
      // Strings and `{ description }` objects are read; anything else carries no text.
      let label = format!("{at}.examples[{i}]");
      let text = match example.get_type()? {
        ValueType::String => Some(args::string_arg(env, example, &label)?),
        ValueType::Object => optional_string(env, &object_arg(env, example, &label)?, "description", &label)?,
        _ => None,
      };
      tool.examples.extend(text);
    }
  }
  Ok(tool)
}

/// The keys of a JSON Schema that hold sub-schemas: maps of them, one, or lists of them.
const SCHEMA_MAPS: [&str; 3] = ["properties", "$defs", "definitions"];
const SCHEMA_LISTS: [&str; 4] = ["items", "anyOf", "oneOf", "allOf"];
/// Keys read from one schema map, elements from one list.
const SCHEMA_FANOUT: usize = 256;

/// The sub-schema structure of a JSON Schema, as JSON, down to `tool::MAX_SCHEMA_DEPTH`.
fn schema_outline(env: &Env, value: &Unknown, depth: usize) -> napi::Result<Value> {
  if depth > tool::MAX_SCHEMA_DEPTH || value.get_type()? != ValueType::Object {
    return Ok(Value::Null);
  }
  let object = Object::from_raw(env.raw(), value.raw());
  if value.is_array()? {
    let len = object.get_array_length()?.min(SCHEMA_FANOUT as u32);
    let mut list = Vec::with_capacity(len as usize);
    for i in 0..len {
      list.push(schema_outline(env, &object.get_element::<Unknown>(i)?, depth)?);
    }
    return Ok(Value::Array(list));
  }
  let mut out = Map::new();
  for key in SCHEMA_MAPS {
    if let Some(map) = present(&object, key)?.filter(|m| m.get_type().ok() == Some(ValueType::Object)) {
      let map = Object::from_raw(env.raw(), map.raw());
      let mut outline = Map::new();
      for name in Object::keys(&map)?.into_iter().take(SCHEMA_FANOUT) {
        let sub = map.get::<Unknown>(&name)?;
        let sub = match sub {
          Some(s) => schema_outline(env, &s, depth + 1)?,
          None => Value::Null,
        };
        outline.insert(name, sub);
      }
      out.insert(key.to_string(), Value::Object(outline));
    }
  }
  for key in SCHEMA_LISTS {
    if let Some(sub) = present(&object, key)? {
      out.insert(key.to_string(), schema_outline(env, &sub, depth + 1)?);
    }
  }
  Ok(Value::Object(out))
}

/// A property that is neither missing, `undefined` nor `null`.
fn optional_string(env: &Env, object: &Object, key: &str, at: &str) -> napi::Result<Option<String>> {
  present(object, key)?.map(|v| args::string_arg(env, &v, &format!("{at}.{key}"))).transpose()
}

/// A property that is a string, else `None` (whatever else it is).
fn lenient_string(env: &Env, object: &Object, key: &str) -> napi::Result<Option<String>> {
  match present(object, key)? {
    Some(v) if v.get_type()? == ValueType::String => args::string_arg(env, &v, key).map(Some),
    _ => Ok(None),
  }
}

/// A `cacheDir` option: a non-empty path without NUL.
fn checked_cache_dir(dir: String) -> Result<std::path::PathBuf, String> {
  if dir.trim().is_empty() || dir.contains('\0') {
    return Err("options.cacheDir must be a non-empty path".into());
  }
  Ok(std::path::PathBuf::from(dir))
}

/// Reads a `cacheDir` option of another API (`CodeCall`'s `search.cacheDir`).
pub(crate) fn cache_dir_arg(env: &Env, value: &Unknown, name: &str) -> napi::Result<std::path::PathBuf> {
  let dir = args::string_arg(env, value, name)?;
  checked_cache_dir(dir).map_err(|m| args::invalid_arg(env, m.replace("options.cacheDir", name)))
}

/// A promise that `when_ready` resolves (on a background thread, or at once).
pub(crate) fn ready_promise<'env>(
  env: &'env Env,
  when_ready: impl FnOnce(crate::search::Waiter),
) -> napi::Result<Object<'env>> {
  let (deferred, promise) = env.create_deferred::<(), fn(Env) -> napi::Result<()>>()?;
  when_ready(Box::new(move || deferred.resolve(|_| Ok(()))));
  Ok(promise)
}

/// The code of the warning below.
const NO_MODEL_WARNING: &str = "CODECALL_NO_EMBEDDINGS";
/// The code of the warning that `model: 'large'` has no file and the default model is used.
const NO_LARGE_MODEL_WARNING: &str = "CODECALL_NO_LARGE_MODEL";

/// The model named by the option at `at` (`'default'` or `'large'`); `ERR_INVALID_ARG` otherwise.
pub(crate) fn model_kind(env: &Env, name: &str, at: &str) -> napi::Result<model::Kind> {
  match name {
    "default" => Ok(model::Kind::Default),
    "large" => Ok(model::Kind::Large),
    other => {
      let shown: String = other.chars().take(40).collect();
      Err(args::invalid_arg(env, format!("{at} must be 'default' or 'large' (got '{shown}')")))
    }
  }
}

/// The model an index asked for `kind` uses: the large one only when its file is there; else the
/// default one, said once per process (a Node warning, code `CODECALL_NO_LARGE_MODEL`, naming
/// where it looked). Decided when the index is made, so its vectors all come from one model.
pub(crate) fn available_model(env: &Env, kind: model::Kind) -> model::Kind {
  if kind == model::Kind::Default {
    return kind;
  }
  let Some(why) = model::known_problem(kind) else { return kind };
  static WARNED: AtomicBool = AtomicBool::new(false);
  if !WARNED.swap(true, Ordering::Relaxed) {
    emit_warning(
      env,
      format!("@codecall/native: the large search model is not available, the default one is used: {why}"),
      NO_LARGE_MODEL_WARNING,
    );
  }
  model::Kind::Default
}

/// Says once per process, as a Node warning (`process.emitWarning`, code
/// `CODECALL_NO_EMBEDDINGS`), that the semantic signal is off because there is no usable model
/// file; search still works, lexically. Called where an index with the signal on is made (a
/// missing file is known at once) and after `upsert` (a damaged file is known once it was read).
pub(crate) fn warn_without_model(env: &Env, kind: model::Kind) {
  static WARNED: AtomicBool = AtomicBool::new(false);
  if WARNED.load(Ordering::Relaxed) {
    return;
  }
  let Some(why) = model::known_problem(kind) else { return };
  if WARNED.swap(true, Ordering::Relaxed) {
    return;
  }
  emit_warning(env, format!("@codecall/native: semantic search is off: {why}"), NO_MODEL_WARNING);
}

/// `process.emitWarning(message, 'Warning', code)`.
fn emit_warning(env: &Env, message: String, code: &str) {
  let emit = || -> napi::Result<()> {
    let process: Object = env.get_global()?.get_named_property("process")?;
    let emit_warning: Function<FnArgs<(String, &str, &str)>, Unknown> = process.get_named_property("emitWarning")?;
    emit_warning.apply(process, FnArgs::from((message, "Warning", code)))?;
    Ok(())
  };
  // A warning that cannot be emitted (no `process`) is not worth failing the constructor over.
  let _ = emit();
}

fn engine_error(e: IndexError) -> Error {
  Error::new(Status::GenericFailure, e.to_string())
}
