//! `ToolIndex`'s core: an in-RAM tantivy index with one `IndexWriter` and one reader kept for the
//! index's life, plus the per-tool analyzed terms and the term statistics the score needs.
//!
//! Writes are buffered: `upsert`, `remove` and `clear` change the writer and the maps at once and
//! the next `search` commits them (one commit for a whole batch, however it arrived). Retrieval is
//! tantivy's BM25 over the weighted fields (`score::FIELD_WEIGHT`), with synonym and typo forms as
//! lower-boosted term clauses; the best candidates are then scored by `score::score`.
//!
//! With the semantic signal on, `upsert` queues each tool's text (`semantic::tool_text`) for the
//! sentence model's background threads (`model::pool`) and returns; a search picks up the vectors
//! done since. While any tool still waits for its vector, every tool ranks lexically (no mix of
//! fused and lexical scores); after that a search embeds the query once (a few milliseconds),
//! fuses each lexical candidate's score with its cosine and adds the tools the lexical side missed
//! whose cosine reaches the model's floor `τ` (`score::Fusion`) — unless the query's best cosine is
//! below its gate `γ` (unrelated to every tool: the model brings in nothing).

use std::collections::{HashMap, HashSet};

use tantivy::{
  collector::TopDocs,
  columnar::Column,
  indexer::IndexWriterOptions,
  query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery},
  schema::{Field as SchemaField, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STRING},
  tokenizer::{TextAnalyzer, WhitespaceTokenizer},
  Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, TantivyError, Term,
};

use super::{
  analysis::{self, name_key, stem, StemCache},
  model::{self, pool::Pending, Model},
  score::{self, Field, FieldTerms, Form, QueryTerm, StemId, FIELDS, FIELD_WEIGHT, SYNONYM, TYPO},
  semantic::{self, Vectors},
  synonyms, typo, Tool,
};

/// `search` returns this many hits unless `topK` says otherwise (as `CodeCall`'s `topK`).
pub const DEFAULT_TOP_K: usize = 8;
/// Only the first this many distinct query words are used.
pub const MAX_QUERY_WORDS: usize = 32;
/// Only the first this many characters of a query are read.
pub const MAX_QUERY_CHARS: usize = 4096;
/// At least this many BM25 candidates are scored, whatever `topK` is.
const MIN_CANDIDATES: usize = 32;
/// Words taken from one field of one tool (descriptions can be long; hostile ones can be huge).
const MAX_FIELD_WORDS: usize = 1024;
/// The exact-name clause outweighs every other clause, so an exact name is always a candidate.
const EXACT_NAME_BOOST: f32 = 8.0;
const TERMS_TOKENIZER: &str = "cc_terms";

/// `new ToolIndex(options)`.
#[derive(Clone, Debug)]
pub struct IndexOptions {
  /// Expand query words with the curated synonym table.
  pub synonyms: bool,
  /// Correct query words the index does not know to indexed words one edit away.
  pub fuzzy: bool,
  /// Fuse in the sentence model's similarity of query and tool (`score::Fusion`).
  pub semantic: bool,
  /// Which sentence model (`model::Kind`): the default one, or the opt-in large one.
  pub model: model::Kind,
  /// Keep tool vectors in this directory too (`model/disk.rs`), so another process embeds the same
  /// tools at no cost.
  pub cache_dir: Option<std::path::PathBuf>,
}

impl Default for IndexOptions {
  fn default() -> Self {
    Self { synonyms: true, fuzzy: true, semantic: true, model: model::Kind::Default, cache_dir: None }
  }
}

/// `search(query, options)`. Empty filter lists do not filter.
#[derive(Clone, Debug)]
pub struct SearchOptions {
  pub top_k: usize,
  pub app_ids: Vec<String>,
  pub tags: Vec<String>,
  pub sources: Vec<String>,
  pub min_score: f64,
}

impl Default for SearchOptions {
  fn default() -> Self {
    Self { top_k: DEFAULT_TOP_K, app_ids: Vec::new(), tags: Vec::new(), sources: Vec::new(), min_score: 0.0 }
  }
}

/// One search result (`api.md` §4 `SearchHit`).
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
  pub name: String,
  pub app_id: Option<String>,
  pub description: String,
  pub source: Option<String>,
  pub score: f64,
}

/// The engine failed (never expected of an in-RAM index; reported, not unwrapped).
#[derive(Debug, thiserror::Error)]
#[error("tool index: {0}")]
pub struct IndexError(#[from] TantivyError);

struct SchemaFields {
  id: SchemaField,
  key: SchemaField,
  app_id: SchemaField,
  tag: SchemaField,
  source: SchemaField,
  text: [SchemaField; 6],
}

/// One indexed tool: what a hit returns, and what scoring and the statistics need.
struct Entry {
  tool: Tool,
  keys: Vec<String>,
  /// Filled in by `upsert` from `stems`, once the stems have numbers.
  terms: FieldTerms,
  /// Every distinct stem of the tool, for document frequencies, with the fields it occurs in.
  stems: Vec<(String, [bool; 6])>,
  /// Every distinct surface word, for typo correction.
  words: Vec<String>,
  /// Words per field, repeats included.
  lengths: [u32; 6],
}

/// How many tools have a stem, in any field and per field; and the stem's number.
struct StemStats {
  id: StemId,
  docs: u32,
  fields: [u32; 6],
}

/// A searchable set of tools (`api.md` §4).
pub struct ToolIndex {
  options: IndexOptions,
  writer: IndexWriter<TantivyDocument>,
  reader: IndexReader,
  fields: SchemaFields,
  entries: HashMap<u64, Entry>,
  ids: HashMap<String, u64>,
  next_id: u64,
  /// Every stem some tool has: its number and how many tools have it.
  stems: HashMap<String, StemStats>,
  next_stem: StemId,
  /// Words per field over all tools, for average field lengths.
  total_lengths: [u64; 6],
  stem_cache: StemCache,
  /// Per surface word: how many tools have it.
  vocabulary: HashMap<String, u32>,
  /// The tools' sentence-model vectors (semantic signal on, and a usable model).
  vectors: Vectors,
  /// The tools whose vectors are being computed, and the vectors done but not yet in `vectors`.
  pending: Pending,
  /// Between `clear_for_refill` and `end_refill`: no `ready` waiter is answered.
  refilling: bool,
  uncommitted: bool,
}

impl ToolIndex {
  pub fn new(options: IndexOptions) -> Result<Self, IndexError> {
    let mut builder = Schema::builder();
    let terms = TextOptions::default().set_indexing_options(
      TextFieldIndexing::default().set_tokenizer(TERMS_TOKENIZER).set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = SchemaFields {
      id: builder.add_u64_field("id", INDEXED | FAST),
      key: builder.add_text_field("key", STRING),
      app_id: builder.add_text_field("app_id", STRING),
      tag: builder.add_text_field("tag", STRING),
      source: builder.add_text_field("source", STRING),
      text: FIELDS.map(|f| builder.add_text_field(field_name(f), terms.clone())),
    };
    let index = Index::create_in_ram(builder.build());
    index.tokenizers().register(TERMS_TOKENIZER, TextAnalyzer::from(WhitespaceTokenizer::default()));
    let writer =
      index.writer_with_options(IndexWriterOptions::builder().num_worker_threads(1).num_merge_threads(1).build())?;
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    if options.semantic {
      model::warm(options.model);
    }
    let pending = Pending::with_cache_dir(options.cache_dir.clone().filter(|_| options.semantic));
    Ok(Self {
      options,
      writer,
      reader,
      fields,
      entries: HashMap::new(),
      ids: HashMap::new(),
      next_id: 0,
      stems: HashMap::new(),
      next_stem: 0,
      total_lengths: [0; 6],
      stem_cache: StemCache::default(),
      vocabulary: HashMap::new(),
      vectors: Vectors::default(),
      pending,
      refilling: false,
      uncommitted: false,
    })
  }

  /// The sentence model it uses (when the semantic signal is on).
  pub fn model_kind(&self) -> model::Kind {
    self.options.model
  }

  /// How many tools are indexed.
  pub fn len(&self) -> usize {
    self.entries.len()
  }

  pub fn is_empty(&self) -> bool {
    self.entries.is_empty()
  }

  /// The sentence model when the semantic signal is on (read on first use; `None` if unusable).
  fn model(&self) -> Option<&'static Model> {
    if self.options.semantic {
      model::model(self.options.model)
    } else {
      None
    }
  }

  /// Whether every tool upserted so far has its vector (or never will: semantic signal off, no
  /// model). Until then, search is lexical.
  pub fn is_ready(&self) -> bool {
    self.pending.is_idle()
  }

  /// Calls `waiter` once every tool in the index has its vector — those upserted before this call
  /// and any upserted since (at once if they have; from a background thread otherwise).
  pub fn when_ready(&self, waiter: model::pool::Waiter) {
    self.pending.when_ready(waiter);
  }

  /// Blocks until every tool upserted so far has its vector.
  pub fn wait_ready(&self) {
    self.pending.wait_ready();
  }

  /// Adds tools, replacing any indexed tool of the same name (the last of repeated names wins).
  /// Their vectors are computed in the background (`ready`).
  pub fn upsert(&mut self, tools: Vec<Tool>) -> Result<(), IndexError> {
    let model = self.model();
    let mut jobs = Vec::new();
    for tool in tools {
      if let Some(old) = self.ids.remove(&tool.name) {
        self.forget(old);
      }
      let id = self.next_id;
      self.next_id += 1;
      if model.is_some() {
        jobs.push((id, semantic::tool_text(&tool)));
      }
      let (mut entry, texts) = analyze(tool, &mut self.stem_cache);
      self.writer.add_document(self.document(id, &entry, texts))?;
      for (stem, in_fields) in &entry.stems {
        let stats = match self.stems.get_mut(stem.as_str()) {
          Some(stats) => stats,
          None => {
            let id = self.next_stem;
            self.next_stem = id.wrapping_add(1);
            self.stems.entry(stem.clone()).or_insert(StemStats { id, docs: 0, fields: [0; 6] })
          }
        };
        stats.docs += 1;
        for ((count, present), terms) in stats.fields.iter_mut().zip(in_fields).zip(&mut entry.terms) {
          *count += u32::from(*present);
          if *present {
            terms.push(stats.id);
          }
        }
      }
      for terms in &mut entry.terms {
        terms.sort_unstable();
      }
      for (total, len) in self.total_lengths.iter_mut().zip(entry.lengths) {
        *total += u64::from(len);
      }
      for word in &entry.words {
        *self.vocabulary.entry(word.clone()).or_default() += 1;
      }
      self.ids.insert(entry.tool.name.clone(), id);
      self.entries.insert(id, entry);
      self.uncommitted = true;
    }
    if let Some(model) = model {
      // A repeated name: only the last one's job is still wanted.
      jobs.retain(|(id, _)| self.entries.contains_key(id));
      for (id, vector) in self.pending.submit(model, jobs) {
        self.vectors.insert(id, &vector);
      }
    }
    self.settle_unless_refilling();
    Ok(())
  }

  /// Removes tools by name; unknown names are ignored.
  pub fn remove<S: AsRef<str>>(&mut self, names: &[S]) {
    for name in names {
      if let Some(id) = self.ids.remove(name.as_ref()) {
        self.forget(id);
      }
    }
    self.settle_unless_refilling();
  }

  /// Removes every tool.
  pub fn clear(&mut self) -> Result<(), IndexError> {
    self.clear_for_refill()?;
    self.end_refill();
    Ok(())
  }

  /// Removes every tool, and answers no `ready` waiter until [`ToolIndex::end_refill`]: the caller
  /// fills the index again in between (`CodeCall.setTools`: a re-index must not look ready while it
  /// is half done, whatever upserts and removes it makes).
  pub fn clear_for_refill(&mut self) -> Result<(), IndexError> {
    self.writer.delete_all_documents()?;
    self.refilling = true;
    self.entries.clear();
    self.ids.clear();
    self.stems.clear();
    self.total_lengths = [0; 6];
    self.vocabulary.clear();
    self.vectors.clear();
    self.pending.cancel_all();
    self.uncommitted = true;
    Ok(())
  }

  /// Ends a refill ([`ToolIndex::clear_for_refill`]): answers `ready` waiters if every tool has
  /// its vector.
  pub fn end_refill(&mut self) {
    self.refilling = false;
    self.pending.settle();
  }

  /// Answers `ready` waiters if every tool has its vector, unless a refill is under way.
  fn settle_unless_refilling(&self) {
    if !self.refilling {
      self.pending.settle();
    }
  }

  /// The best tools for `query`, best first (see `score` for what the score means).
  pub fn search(&mut self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>, IndexError> {
    self.commit()?;
    if self.entries.is_empty() || options.top_k == 0 {
      return Ok(Vec::new());
    }
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    let whole = name_key(&query);
    let terms = self.query_terms(&query);
    let lexical = if terms.is_empty() { Vec::new() } else { self.lexical(&whole, &terms, options)? };
    for (id, vector) in self.pending.take_done() {
      if self.entries.contains_key(&id) {
        self.vectors.insert(id, &vector);
      }
    }
    // The dense part: once every tool has its vector, for a query with a content word the model
    // knows whole (fragments and filler pool to noise that can land near some tool: "xyzzy
    // plugh", "the of and").
    let model = self.model().filter(|m| {
      !self.vectors.is_empty() && self.pending.is_idle() && m.vocab.has_content_word(&query, analysis::is_stop_word)
    });
    let dense_query = model.map(|m| (m, self.dense_query(&query, m)));
    let vector = dense_query.as_ref().map(|(m, (q, _))| model::pool::query_vector(m, q));
    let fusion = model.map_or(score::MINILM, |m| m.fusion);
    // The model read a word the user did not type (a typo corrected to a tool's word): the words
    // count for more.
    let fusion = if dense_query.is_some_and(|(_, (_, corrected))| corrected) { fusion.for_typo() } else { fusion };
    // Every tool near the query that passes the filters, best first.
    let mut near: Vec<(u64, f32)> = Vec::new();
    if let Some(vector) = &vector {
      self.vectors.at_least(vector, fusion.floor, |id, cos| near.push((id, cos)));
      near.retain(|(id, _)| self.entries.get(id).is_some_and(|e| passes_filters(&e.tool, options)));
      near.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    // The gate: when no tool comes near the query, it is unrelated to them all, and the model
    // brings in no tool of its own (the lexical hits are still scored by the same formula).
    let open = near.first().is_some_and(|&(_, best)| best >= fusion.gate);

    let mut hits: Vec<(f64, &Entry)> = Vec::with_capacity(lexical.len());
    match vector {
      None => {
        for (id, lex) in lexical {
          if let Some(entry) = self.entries.get(&id) {
            hits.push((lex, entry));
          }
        }
      }
      Some(vector) => {
        let mut found: HashSet<u64> = HashSet::with_capacity(lexical.len());
        for (id, lex) in lexical {
          let Some(entry) = self.entries.get(&id) else { continue };
          found.insert(id);
          hits.push((fusion.fuse(lex, self.vectors.cosine(id, &vector)), entry));
        }
        // Tools the lexical side missed: the nearest ones. A dense-only score grows with the
        // cosine alone, so only the best `max(top_k, MIN_CANDIDATES)` (and any tied with the last)
        // can make the result.
        if !open {
          near.clear();
        }
        let want = options.top_k.max(MIN_CANDIDATES);
        let (mut taken, mut last) = (Vec::new(), f32::NAN);
        for (id, cos) in near {
          if taken.len() >= want && cos < last {
            break;
          }
          if !found.contains(&id) && self.entries.contains_key(&id) {
            taken.push((id, cos));
            last = cos;
          }
        }
        // Their lexical scores too (those the BM25 window left out may still match words).
        let ids: Vec<u64> = taken.iter().map(|&(id, _)| id).collect();
        let lex = self.lexical_of(&ids, &whole, &terms)?;
        for (id, cos) in taken {
          if let Some(entry) = self.entries.get(&id) {
            hits.push((fusion.fuse(lex.get(&id).copied().unwrap_or(0.0), Some(cos)), entry));
          }
        }
      }
    }
    hits.retain(|(score, _)| *score > 0.0 && *score >= options.min_score);
    let order =
      |(a, x): &(f64, &Entry), (b, y): &(f64, &Entry)| b.total_cmp(a).then_with(|| x.tool.name.cmp(&y.tool.name));
    // Semantic candidates can be many (every tool near the query): select the top k, sort only those.
    if hits.len() > options.top_k {
      hits.select_nth_unstable_by(options.top_k - 1, order);
      hits.truncate(options.top_k);
    }
    hits.sort_by(order);
    Ok(
      hits
        .into_iter()
        .map(|(score, e)| Hit {
          name: e.tool.name.clone(),
          app_id: e.tool.app_id.clone(),
          description: e.tool.description.clone().unwrap_or_default(),
          source: e.tool.source.clone(),
          score,
        })
        .collect(),
    )
  }

  /// The lexical candidates (BM25 retrieval, then `score::score`): tool ids with a score > 0.
  fn lexical(&self, whole: &str, terms: &[QueryTerm], options: &SearchOptions) -> Result<Vec<(u64, f64)>, IndexError> {
    let query = self.lexical_query(whole, terms, options);
    let limit = options.top_k.saturating_mul(4).max(MIN_CANDIDATES).min(self.entries.len());
    self.scored(&*query, limit, whole, terms)
  }

  /// The lexical scores of the tools `ids` (0 for one the query does not match): a tool the
  /// model brings in has the same score whatever window found it (`topK` changes no score).
  fn lexical_of(&self, ids: &[u64], whole: &str, terms: &[QueryTerm]) -> Result<HashMap<u64, f64>, IndexError> {
    if ids.is_empty() || terms.is_empty() {
      return Ok(HashMap::new());
    }
    let query = self.lexical_query(whole, terms, &SearchOptions::default());
    let only = TermSetQuery::new(ids.iter().map(|&id| Term::from_field_u64(self.fields.id, id)));
    let query =
      BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, Box::new(ConstScoreQuery::new(Box::new(only), 0.0)))]);
    Ok(self.scored(&query, ids.len(), whole, terms)?.into_iter().collect())
  }

  /// The BM25 query of the lexical side, with the filters.
  fn lexical_query(&self, whole: &str, terms: &[QueryTerm], options: &SearchOptions) -> Box<dyn Query> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    clauses.push((
      Occur::Should,
      boosted(
        TermQuery::new(Term::from_field_text(self.fields.key, whole), IndexRecordOption::Basic),
        EXACT_NAME_BOOST,
      ),
    ));
    for term in terms {
      for form in &term.forms {
        let Some(stats) = self.stems.get(&form.text) else { continue };
        for field in FIELDS {
          // Synonym and typo forms are looked up in the name and description only: the fields that
          // decide a tool's rank. (The score still credits them in every field; this keeps the
          // number of term clauses, which dominates query time, small.)
          let secondary = form.weight < 1.0 && !matches!(field, Field::Name | Field::Description);
          if stats.fields[field as usize] > 0 && !secondary {
            let t = Term::from_field_text(self.fields.text[field as usize], &form.text);
            clauses.push((
              Occur::Should,
              boosted(TermQuery::new(t, IndexRecordOption::WithFreqs), FIELD_WEIGHT[field as usize] * form.weight),
            ));
          }
        }
      }
    }
    let mut query: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
    let filters = [
      (self.fields.app_id, &options.app_ids),
      (self.fields.tag, &options.tags),
      (self.fields.source, &options.sources),
    ];
    if filters.iter().any(|(_, values)| !values.is_empty()) {
      let mut all = vec![(Occur::Must, query)];
      for (field, values) in filters {
        if !values.is_empty() {
          let set = TermSetQuery::new(values.iter().map(|v| Term::from_field_text(field, v)));
          all.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(set), 0.0))));
        }
      }
      query = Box::new(BooleanQuery::new(all));
    }
    query
  }

  /// The best `limit` tools of a lexical query, scored by `score::score` (ids with a score > 0).
  fn scored(
    &self,
    query: &dyn Query,
    limit: usize,
    whole: &str,
    terms: &[QueryTerm],
  ) -> Result<Vec<(u64, f64)>, IndexError> {
    let searcher = self.reader.searcher();
    let candidates = searcher.search(query, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
    let mut columns: HashMap<u32, Column<u64>> = HashMap::new();
    let mut hits = Vec::with_capacity(candidates.len());
    for (bm25, address) in candidates {
      let column = match columns.get(&address.segment_ord) {
        Some(c) => c,
        None => {
          let c = searcher.segment_reader(address.segment_ord).fast_fields().u64("id")?;
          columns.entry(address.segment_ord).or_insert(c)
        }
      };
      let Some((id, entry)) = column.first(address.doc_id).and_then(|id| Some((id, self.entries.get(&id)?))) else {
        continue;
      };
      let score = if entry.keys.iter().any(|k| k == whole) {
        1.0
      } else {
        score::score(terms, &entry.terms, &self.norms(entry), bm25)
      };
      if score > 0.0 {
        hits.push((id, score));
      }
    }
    Ok(hits)
  }

  /// How much a match in each field of this tool counts for its length: prose fields longer than
  /// average count less (BM25's `b`), never more than 1.
  fn norms(&self, entry: &Entry) -> [f32; 6] {
    let docs = self.entries.len().max(1) as f32;
    let mut norms = [1f32; 6];
    for field in [Field::Properties, Field::Description, Field::Examples] {
      let i = field as usize;
      norms[i] = score::length_norm(entry.lengths[i], self.total_lengths[i] as f32 / docs);
    }
    norms
  }

  /// Makes buffered writes searchable.
  fn commit(&mut self) -> Result<(), IndexError> {
    if self.uncommitted {
      self.writer.commit()?;
      self.reader.reload()?;
      self.uncommitted = false;
    }
    Ok(())
  }

  /// The analyzed query: one term per distinct stem, each with its forms that some tool has.
  fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
    let docs = self.entries.len() as u64;
    let df = |stem: &str| self.stems.get(stem).map_or(0, |s| u64::from(s.docs));
    let mut terms: Vec<QueryTerm> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for word in analysis::words(query, usize::MAX, &mut StemCache::default()) {
      if seen.len() >= MAX_QUERY_WORDS {
        break;
      }
      if seen.contains(&word.stem) {
        continue;
      }
      seen.push(word.stem.clone());
      let mut forms: Vec<Form> = Vec::new();
      let add = |forms: &mut Vec<Form>, form: &str, weight: f32| {
        if let Some(stats) = self.stems.get(form) {
          if !forms.iter().any(|f| f.id == stats.id) {
            forms.push(Form { id: stats.id, text: form.to_string(), weight });
          }
        }
      };
      add(&mut forms, &word.stem, 1.0);
      if self.options.synonyms {
        for s in synonyms::of(&word.stem) {
          add(&mut forms, s, SYNONYM);
        }
      }
      if self.options.fuzzy && df(&word.stem) == 0 && !self.vocabulary.contains_key(&word.surface) {
        for (correction, _) in typo::corrections(&word.surface, &self.vocabulary) {
          let corrected = stem(correction);
          add(&mut forms, &corrected, TYPO);
          if self.options.synonyms {
            for s in synonyms::of(&corrected) {
              add(&mut forms, s, TYPO * SYNONYM);
            }
          }
        }
      }
      terms.push(QueryTerm { idf: score::idf(docs, df(&word.stem)), forms });
    }
    if terms.iter().all(|t| t.forms.is_empty()) {
      return Vec::new();
    }
    terms
  }

  /// The query as the model reads it: with `fuzzy` on, a word that neither the tools nor the
  /// model know whole, and that is one edit away from a word of the tools, is read as that word
  /// (the lexical side's typo correction) — a misspelt word is noise to the model. Also whether a
  /// word was so corrected.
  pub(super) fn dense_query(&self, query: &str, model: &Model) -> (String, bool) {
    if !self.options.fuzzy {
      return (query.to_string(), false);
    }
    let mut corrected = false;
    let mut out = String::with_capacity(query.len());
    for (i, token) in query.split_whitespace().enumerate() {
      if i > 0 {
        out.push(' ');
      }
      let core = token.trim_matches(|c: char| !c.is_alphanumeric());
      let word = core.to_lowercase();
      let fixed = (!word.is_empty()
        && word.chars().all(char::is_alphabetic)
        && !self.vocabulary.contains_key(&word)
        && !model.vocab.knows(&word))
      .then(|| typo::corrections(&word, &self.vocabulary).into_iter().next())
      .flatten();
      match fixed {
        Some((correction, _)) => {
          corrected = true;
          out.push_str(&token.replacen(core, correction, 1));
        }
        None => out.push_str(token),
      }
    }
    (out, corrected)
  }

  /// Drops a tool from the writer, the maps and the statistics.
  fn forget(&mut self, id: u64) {
    self.writer.delete_term(Term::from_field_u64(self.fields.id, id));
    self.vectors.remove(id);
    self.pending.cancel(&[id]);
    if let Some(entry) = self.entries.remove(&id) {
      for (total, len) in self.total_lengths.iter_mut().zip(entry.lengths) {
        *total = total.saturating_sub(u64::from(len));
      }
      for (stem, in_fields) in &entry.stems {
        if let Some(stats) = self.stems.get_mut(stem) {
          stats.docs = stats.docs.saturating_sub(1);
          for (count, present) in stats.fields.iter_mut().zip(in_fields) {
            *count = count.saturating_sub(u32::from(*present));
          }
          if stats.docs == 0 {
            self.stems.remove(stem);
          }
        }
      }
      for word in &entry.words {
        if let Some(n) = self.vocabulary.get_mut(word) {
          *n = n.saturating_sub(1);
          if *n == 0 {
            self.vocabulary.remove(word);
          }
        }
      }
    }
    self.uncommitted = true;
  }

  fn document(&self, id: u64, entry: &Entry, texts: [String; 6]) -> TantivyDocument {
    let f = &self.fields;
    let mut doc = TantivyDocument::default();
    doc.add_u64(f.id, id);
    for key in &entry.keys {
      doc.add_text(f.key, key);
    }
    if let Some(app) = &entry.tool.app_id {
      doc.add_text(f.app_id, app);
    }
    for tag in &entry.tool.tags {
      doc.add_text(f.tag, tag);
    }
    if let Some(source) = &entry.tool.source {
      doc.add_text(f.source, source);
    }
    for (field, text) in FIELDS.iter().zip(texts) {
      if !text.is_empty() {
        doc.add_text(f.text[*field as usize], text);
      }
    }
    doc
  }
}

/// Whether a tool passes the `appIds`/`tags`/`sources` filters, as the lexical query applies them
/// (an empty list does not filter; tags: at least one in common).
fn passes_filters(tool: &Tool, options: &SearchOptions) -> bool {
  let one_of =
    |values: &[String], value: Option<&String>| values.is_empty() || value.is_some_and(|v| values.contains(v));
  one_of(&options.app_ids, tool.app_id.as_ref())
    && one_of(&options.sources, tool.source.as_ref())
    && (options.tags.is_empty() || tool.tags.iter().any(|t| options.tags.contains(t)))
}

fn boosted(query: impl Query, boost: f32) -> Box<dyn Query> {
  Box::new(BoostQuery::new(Box::new(query), boost))
}

fn field_name(field: Field) -> &'static str {
  match field {
    Field::Name => "name",
    Field::App => "app",
    Field::Tags => "tags",
    Field::Properties => "properties",
    Field::Description => "description",
    Field::Examples => "examples",
  }
}

/// The analyzed words of each field of a tool, in order, repeats kept (BM25 counts them).
fn field_words(tool: &Tool, stems: &mut StemCache) -> [Vec<analysis::Word>; 6] {
  let many = |texts: &[String], stems: &mut StemCache| {
    let mut out = Vec::new();
    for t in texts {
      if out.len() >= MAX_FIELD_WORDS {
        break;
      }
      out.extend(analysis::words(t, MAX_FIELD_WORDS - out.len(), stems));
    }
    out
  };
  let one = |text: Option<&String>, stems: &mut StemCache| {
    text.map_or_else(Vec::new, |t| analysis::words(t, MAX_FIELD_WORDS, stems))
  };
  [
    analysis::words(&tool.name, MAX_FIELD_WORDS, stems),
    one(tool.app_id.as_ref(), stems),
    many(&tool.tags, stems),
    many(&tool.properties, stems),
    one(tool.description.as_ref(), stems),
    many(&tool.examples, stems),
  ]
}

/// Analyzes a tool: its entry, and per field the stems to index (space-separated, repeats kept).
fn analyze(tool: Tool, stems_seen: &mut StemCache) -> (Entry, [String; 6]) {
  let fields = field_words(&tool, stems_seen);
  let lengths = fields.each_ref().map(|f| u32::try_from(f.len()).unwrap_or(u32::MAX));
  let mut texts: [String; 6] = Default::default();
  let mut stems: HashMap<String, [bool; 6]> = HashMap::new();
  let mut words: HashSet<String> = HashSet::new();
  for (i, field) in fields.into_iter().enumerate() {
    for word in field {
      if !texts[i].is_empty() {
        texts[i].push(' ');
      }
      texts[i].push_str(&word.stem);
      stems.entry(word.stem).or_default()[i] = true;
      words.insert(word.surface);
    }
  }
  let mut keys = vec![name_key(&tool.name)];
  if let Some((_, local)) = tool.name.rsplit_once(':') {
    let local = name_key(local);
    if !local.is_empty() && !keys.contains(&local) {
      keys.push(local);
    }
  }
  let entry = Entry {
    tool,
    keys,
    terms: Default::default(),
    stems: stems.into_iter().collect(),
    words: words.into_iter().collect(),
    lengths,
  };
  (entry, texts)
}
