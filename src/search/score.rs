//! The one score formula (`api.md` §4): a number in [0, 1] that means the same for every query,
//! so one `minScore` works everywhere.
//!
//! For a query with terms `t` (stop words dropped, stemmed) and a tool `d`:
//!
//! - `idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))`, BM25's inverse document frequency over
//!   the `N` indexed tools (a term no tool contains gets the largest weight).
//! - `match(t, d)` is the best, over the term's forms and the tool's fields, of
//!   `FIELD_WEIGHT[field] × length_norm(field) × FORM_WEIGHT[form]`: the word itself (or its stem)
//!   1, a synonym [`SYNONYM`], a typo correction [`TYPO`]; fields: name 1, description and tags
//!   0.7, input property names, app id and examples 0.5; prose fields longer than the average
//!   count less ([`length_norm`]), so a 5 000-character description that mentions everything
//!   does not outrank a tool that is about the query.
//! - `coverage = Σ idf(t)·match(t, d) / Σ idf(t)`: how much of the query the tool answers.
//! - `precision` = the share of the tool's name words that the query names (by the same form
//!   weights): `create issue` covers all of `create_issue` but half of `create_issue_comment`.
//! - `bm25 = bm25(d) / (bm25(d) + Σ idf(t))`: tantivy's BM25 over the weighted fields, saturated;
//!   it separates tools whose coverage and precision tie (term frequency, field length).
//!
//! `score = coverage × (0.80 + 0.15·precision + 0.05·bm25)`, rounded to 4 decimals, and exactly 1
//! when the query is the tool's name (ignoring case and `_ - . /`, with or without the app prefix
//! before `:`). Only an exact name reaches 1; anything else is at most 0.9999. Equal scores are ordered by name.
//!
//! With the semantic signal on (the default), that lexical score `lex` is fused with the cosine
//! `cos` of the query's and the tool's sentence-model vectors (`model/`):
//! `fused = (1 − w)·lex + w·clamp((cos − τ)/(κ − τ), 0, 1)` with `w` = [`DENSE_WEIGHT`], `τ` =
//! [`DENSE_FLOOR`], `κ` = [`DENSE_FULL`], rounded to 4 decimals, at most 0.9999 (an exact name stays
//! 1). The constants are fixed, so a score means the same for every query. Every lexical hit is
//! scored so; a tool the lexical side did not find comes in only if `cos ≥ τ` and the query's best
//! cosine over the tools (through the filters) reaches the gate `γ` = [`DENSE_GATE`]: below it the
//! query is unrelated to them all and the model brings in nothing, so such a query finds no more
//! than the words find (`[]` when they find nothing). The constants were measured on the
//! benchmark (`scripts/embeddings/FUSION.md`, "What the addon uses"). Each model has its own
//! ([`Fusion`]: [`MINILM`] for the default model, [`MPNET`] for the opt-in large one, whose cosines
//! run higher), fixed per model, so within one index a score still means the same for every query.

/// The searchable fields, in the order of the per-field arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
  Name = 0,
  App = 1,
  Tags = 2,
  Properties = 3,
  Description = 4,
  Examples = 5,
}

pub const FIELDS: [Field; 6] =
  [Field::Name, Field::App, Field::Tags, Field::Properties, Field::Description, Field::Examples];

/// How much a match in each field counts, by [`Field`] order.
pub const FIELD_WEIGHT: [f32; 6] = [1.0, 0.5, 0.7, 0.5, 0.7, 0.5];

/// A match through a synonym counts this much of a match of the word itself.
pub const SYNONYM: f32 = 0.8;
/// A match through a typo correction counts this much.
pub const TYPO: f32 = 0.6;

/// A stem as a number (the index interns every stem it holds).
pub type StemId = u32;

/// One form of a query term: a stem the index holds, and its form weight (1, [`SYNONYM`], [`TYPO`]).
#[derive(Clone, Debug)]
pub struct Form {
  pub id: StemId,
  pub text: String,
  pub weight: f32,
}

/// One query term and the forms it matches.
#[derive(Clone, Debug)]
pub struct QueryTerm {
  pub idf: f64,
  pub forms: Vec<Form>,
}

/// The stems of one tool, per field, each list sorted and without repeats.
pub type FieldTerms = [Vec<StemId>; 6];

/// How strongly a long prose field's matches are discounted (BM25's `b`).
pub const LENGTH_NORM: f32 = 0.5;

/// The length factor of a prose field (input property names, description, examples) with `len`
/// words where tools average `avg`: `1 / (1 - b + b·len/avg)`, at most 1 (short fields are not
/// promoted; long ones count less).
pub fn length_norm(len: u32, avg: f32) -> f32 {
  let avg = avg.max(1.0);
  (1.0 / (1.0 - LENGTH_NORM + LENGTH_NORM * len as f32 / avg)).min(1.0)
}

/// BM25's inverse document frequency.
pub fn idf(docs: u64, df: u64) -> f64 {
  let (n, df) = (docs as f64, df.min(docs) as f64);
  (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The score of a tool that is not an exact name match (see the module docs).
pub fn score(terms: &[QueryTerm], tool: &FieldTerms, norms: &[f32; 6], bm25: f32) -> f64 {
  let mut covered = 0.0;
  let mut total = 0.0;
  for term in terms {
    let mut best = 0f32;
    for form in &term.forms {
      for field in FIELDS {
        let w = FIELD_WEIGHT[field as usize] * norms[field as usize] * form.weight;
        if w > best && tool[field as usize].binary_search(&form.id).is_ok() {
          best = w;
        }
      }
    }
    covered += term.idf * f64::from(best);
    total += term.idf;
  }
  if total <= 0.0 || covered <= 0.0 {
    return 0.0;
  }
  let coverage = covered / total;
  let name = &tool[Field::Name as usize];
  let precision = if name.is_empty() {
    0.0
  } else {
    let named: f32 = name
      .iter()
      .map(|word| terms.iter().flat_map(|t| &t.forms).filter(|f| f.id == *word).map(|f| f.weight).fold(0.0, f32::max))
      .sum();
    f64::from(named) / name.len() as f64
  };
  let bm25 = f64::from(bm25.max(0.0));
  let bm25 = bm25 / (bm25 + total);
  round(coverage * (0.80 + 0.15 * precision + 0.05 * bm25)).min(BELOW_EXACT)
}

/// The weight `w` of the dense part in the fused score (the default model's).
pub const DENSE_WEIGHT: f64 = 0.5;
/// The cosine `τ` at which the dense part starts (and below which the model alone cannot bring in
/// a tool).
pub const DENSE_FLOOR: f32 = 0.20;
/// The cosine `κ` at which the dense part is full.
pub const DENSE_FULL: f32 = 0.50;
/// The gate `γ`: a query whose best cosine over the tools is below it is unrelated to all of them,
/// and is scored lexically alone.
pub const DENSE_GATE: f32 = 0.33;

/// The fusion constants of one sentence model (its cosines have their own scale): `w`, `τ`, `κ`, `γ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fusion {
  pub weight: f64,
  pub floor: f32,
  pub full: f32,
  pub gate: f32,
  /// The weight `w` instead, for a query the model reads with a typo corrected (`for_typo`).
  pub typo_weight: f64,
}

/// The default model's (all-MiniLM-L6-v2): `scripts/embeddings/FUSION.md`.
pub const MINILM: Fusion =
  Fusion { weight: DENSE_WEIGHT, floor: DENSE_FLOOR, full: DENSE_FULL, gate: DENSE_GATE, typo_weight: TYPO_WEIGHT };
/// The default model's weight for a query with a corrected typo: the model does not see through
/// typos, so the words, which matched the correction, count for more. Chosen on the first
/// corpus's tune half (0.1–0.4 in steps of 0.1, the best ±1-step neighbourhood; tune 0.798 →
/// 0.802, its typo queries 0.828 → 0.859) and kept because the held-out corpus gained too (0.673 →
/// 0.676, its typo queries 0.762 → 0.803; `BENCHMARKS.md`, "Typos").
pub const TYPO_WEIGHT: f64 = 0.2;
const _: () = assert!(TYPO_WEIGHT < DENSE_WEIGHT && MPNET.typo_weight <= MPNET.weight);
const _: () = assert!(MINILM.floor < MINILM.full);
/// The opt-in large model's (all-mpnet-base-v2): chosen on the first corpus's tune half like the
/// default model's (the best mean over each point's ±1-step grid neighbourhood, among the points
/// where no unrelated query gains a hit — which takes the gate to 0.40: its cosines run higher),
/// then read once on the held-out corpus (`BENCHMARKS.md`, "The large search model").
pub const MPNET: Fusion = Fusion { weight: 0.30, floor: 0.10, full: 0.60, gate: 0.40, typo_weight: 0.30 };
const _: () = assert!(MPNET.floor < MPNET.full);

impl Fusion {
  /// The constants for a query whose embedded form has a typo corrected.
  pub fn for_typo(self) -> Fusion {
    Fusion { weight: self.typo_weight, ..self }
  }

  /// The dense part of a tool's score: its cosine with the query, mapped to [0, 1] between
  /// `floor` and `full`.
  pub fn dense(&self, cos: f32) -> f64 {
    let (floor, full) = (f64::from(self.floor), f64::from(self.full));
    ((f64::from(cos) - floor) / (full - floor)).clamp(0.0, 1.0)
  }

  /// The fused score of a tool: `lex` its lexical score (0 if the lexical side did not find it; 1,
  /// an exact name, stays 1), `cos` its cosine with the query (`None`: no vector).
  pub fn fuse(&self, lex: f64, cos: Option<f32>) -> f64 {
    if lex >= 1.0 {
      // Only the tool's own name scores 1 lexically (`score` stays below it): it stays 1.
      return 1.0;
    }
    let dense = cos.map_or(0.0, |c| self.dense(c));
    round((1.0 - self.weight) * lex + self.weight * dense).min(BELOW_EXACT)
  }
}

/// The highest score of a tool that is not an exact name match.
pub const BELOW_EXACT: f64 = 0.9999;

/// Scores are reported and compared at 4 decimals, so ties a user can see are ordered by name.
pub fn round(score: f64) -> f64 {
  (score.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Test stems are numbered by their first letter.
  fn id(stem: &str) -> StemId {
    u32::from(stem.as_bytes()[0])
  }

  fn terms(words: &[&[(&str, f32)]]) -> Vec<QueryTerm> {
    words
      .iter()
      .map(|forms| QueryTerm {
        idf: 1.0,
        forms: forms.iter().map(|(f, w)| Form { id: id(f), text: f.to_string(), weight: *w }).collect(),
      })
      .collect()
  }

  fn tool(name: &[&str], description: &[&str]) -> FieldTerms {
    let mut t: FieldTerms = Default::default();
    t[0] = name.iter().map(|s| id(s)).collect();
    t[0].sort();
    t[4] = description.iter().map(|s| id(s)).collect();
    t[4].sort();
    t
  }

  #[test]
  fn name_beats_description_beats_synonym() {
    let q = terms(&[&[("creat", 1.0)], &[("issu", 1.0), ("ticket", SYNONYM)]]);
    let in_name = score(&q, &tool(&["creat", "issu"], &[]), &[1.0; 6], 3.0);
    let in_description = score(&q, &tool(&["new"], &["creat", "issu"]), &[1.0; 6], 3.0);
    let by_synonym = score(&q, &tool(&["creat", "ticket"], &[]), &[1.0; 6], 3.0);
    assert!(in_name > by_synonym && in_name > in_description, "{in_name} {by_synonym} {in_description}");
    assert!(in_name < 1.0, "only an exact name reaches 1");
  }

  #[test]
  fn precision_prefers_the_shorter_name() {
    let q = terms(&[&[("creat", 1.0)], &[("issu", 1.0)]]);
    assert!(
      score(&q, &tool(&["creat", "issu"], &[]), &[1.0; 6], 1.0)
        > score(&q, &tool(&["bug", "creat", "issu"], &[]), &[1.0; 6], 1.0)
    );
  }

  #[test]
  fn fusion_stays_in_bounds_and_is_monotone() {
    let fuse = |lex, cos| MINILM.fuse(lex, cos);
    assert_eq!(fuse(0.0, None), 0.0);
    assert_eq!(fuse(0.0, Some(DENSE_FLOOR)), 0.0);
    assert_eq!(fuse(0.0, Some(-0.5)), 0.0);
    assert_eq!(fuse(0.5, Some(-1.0)), round(0.5 * (1.0 - DENSE_WEIGHT)));
    assert_eq!(fuse(0.9999, Some(1.0)), BELOW_EXACT);
    assert_eq!(fuse(1.0, Some(-1.0)), 1.0);
    assert_eq!(fuse(0.0, Some(1.0)), round(DENSE_WEIGHT));
    assert_eq!(fuse(0.0, Some(DENSE_FULL)), fuse(0.0, Some(0.99)));
    assert!(fuse(0.4, Some(0.5)) > fuse(0.4, Some(0.3)) && fuse(0.4, Some(0.3)) > fuse(0.4, None));
    assert!(fuse(0.41, None) > fuse(0.4, None));
    // A corrected typo: the words weigh more, and the rest is the same.
    let typo = MINILM.for_typo();
    assert_eq!(typo.weight, TYPO_WEIGHT);
    assert_eq!(Fusion { weight: MINILM.weight, ..typo }, MINILM);
    assert!(typo.fuse(0.8, Some(0.2)) > MINILM.fuse(0.8, Some(0.2)));
    assert_eq!(typo.fuse(1.0, Some(-1.0)), 1.0);
  }

  #[test]
  fn bounds() {
    let q = terms(&[&[("x", 1.0)]]);
    assert_eq!(score(&q, &tool(&["y"], &[]), &[1.0; 6], 5.0), 0.0);
    assert_eq!(score(&[], &tool(&["y"], &[]), &[1.0; 6], 5.0), 0.0);
    let s = score(&q, &tool(&["x"], &["x"]), &[1.0; 6], f32::MAX);
    assert!(s > 0.0 && s <= 1.0);
    assert!(idf(10, 0) > idf(10, 5) && idf(10, 10) > 0.0 && idf(0, 0) > 0.0);
  }
}
