//! The semantic signal's side of the index: which text of a tool is embedded, and the tool vectors
//! (one row per tool, contiguous, so a query is scored against all tools in one linear scan).
//!
//! The fusion with the lexical score is in `score.rs` ([`super::score::Fusion`]).

use std::collections::HashMap;

use super::{analysis, model::dot, Tool};

/// At most this many characters of a tool are embedded (the model reads about 128 tokens of them).
pub const MAX_TOOL_TEXT_CHARS: usize = 4 * 1024;

/// The text of a tool that is embedded, most telling part first (the model reads only the first
/// [`super::model::TOKEN_CAP`] tokens): `"<server>: <name words>. <title>. <description>"` — the
/// server is the tool's `appId` (else the prefix before `:` in its name), so "store in memory"
/// finds the memory server's tools; the name is split into words by the index's own splitting
/// (`createIssue` → `create issue`). The input properties' names follow. Empty parts are left out.
/// The format was chosen on the benchmark (`scripts/embeddings/FUSION.md`).
/// The server's own words (`Tool::server`) are not embedded: appended after the description (or
/// in the server's prefix) they moved the first corpus by less than 0.005 MRR@10 and lowered the
/// held-out one (0.673 → 0.660; `bench/search/README.md`).
pub fn tool_text(tool: &Tool) -> String {
  let split = |identifier: &str| {
    let mut words = String::new();
    analysis::for_each_word(identifier, usize::MAX, |w| {
      if !words.is_empty() {
        words.push(' ');
      }
      words.push_str(w);
    });
    words
  };
  let (prefix, local) = match tool.name.rsplit_once(':') {
    Some((prefix, local)) if !local.trim().is_empty() => (Some(prefix), local),
    _ => (None, tool.name.as_str()),
  };
  let server = tool.app_id.as_deref().or(prefix).map(str::trim).filter(|s| !s.is_empty());
  let mut text = String::new();
  if let Some(server) = server {
    text.push_str(server);
    text.push_str(": ");
  }
  text.push_str(&split(local));
  let mut parts: Vec<&str> = Vec::new();
  if let Some(title) = &tool.title {
    parts.push(title);
  }
  if let Some(description) = &tool.description {
    parts.push(description);
  }
  let properties: Vec<String> = tool.properties.iter().map(|p| split(p)).filter(|p| !p.is_empty()).collect();
  let properties = properties.join(", ");
  parts.push(&properties);
  for part in parts {
    let part = part.trim();
    if part.is_empty() {
      continue;
    }
    text.push_str(". ");
    text.push_str(part);
    if text.len() >= MAX_TOOL_TEXT_CHARS {
      break;
    }
  }
  let cut = text.char_indices().nth(MAX_TOOL_TEXT_CHARS).map_or(text.len(), |(i, _)| i);
  text.truncate(cut);
  text
}

/// The tool vectors, by tool id: rows of one matrix.
#[derive(Default)]
pub struct Vectors {
  dims: usize,
  data: Vec<f32>,
  ids: Vec<u64>,
  slots: HashMap<u64, usize>,
}

impl Vectors {
  /// Stores the vector of tool `id` (replacing its old one). Vectors of another length are ignored.
  pub fn insert(&mut self, id: u64, vector: &[f32]) {
    if self.ids.is_empty() {
      self.dims = vector.len();
    }
    if vector.len() != self.dims || vector.is_empty() {
      return;
    }
    self.remove(id);
    self.slots.insert(id, self.ids.len());
    self.ids.push(id);
    self.data.extend_from_slice(vector);
  }

  /// Drops the vector of tool `id`, if any (the last row moves into its place).
  pub fn remove(&mut self, id: u64) {
    let Some(slot) = self.slots.remove(&id) else { return };
    let last = self.ids.len() - 1;
    if slot != last {
      let moved = self.ids[last];
      self.ids[slot] = moved;
      self.data.copy_within(last * self.dims..(last + 1) * self.dims, slot * self.dims);
      self.slots.insert(moved, slot);
    }
    self.ids.truncate(last);
    self.data.truncate(last * self.dims);
  }

  pub fn clear(&mut self) {
    self.data.clear();
    self.ids.clear();
    self.slots.clear();
  }

  #[cfg(test)]
  pub fn len(&self) -> usize {
    self.ids.len()
  }

  pub fn is_empty(&self) -> bool {
    self.ids.is_empty()
  }

  /// The cosine of `query` (a unit vector) with tool `id`'s vector.
  pub fn cosine(&self, id: u64, query: &[f32]) -> Option<f32> {
    let slot = *self.slots.get(&id)?;
    self.data.get(slot * self.dims..(slot + 1) * self.dims).map(|row| dot(row, query))
  }

  /// Calls `each(id, cosine)` for every tool whose cosine with `query` is at least `threshold`.
  pub fn at_least(&self, query: &[f32], threshold: f32, mut each: impl FnMut(u64, f32)) {
    if query.len() != self.dims || self.dims == 0 {
      return;
    }
    for (row, &id) in self.data.chunks_exact(self.dims).zip(&self.ids) {
      let cos = dot(row, query);
      if cos >= threshold {
        each(id, cos);
      }
    }
  }
}

#[cfg(test)]
mod tests {
  #![allow(clippy::expect_used)]
  use super::*;

  #[test]
  fn tool_text_starts_with_the_server_and_the_name_words() {
    let tool = Tool {
      name: "github:createIssue".into(),
      title: Some("Create issue".into()),
      description: Some("Open a new issue".into()),
      properties: vec!["repoName".into(), "body".into()],
      ..Tool::default()
    };
    assert_eq!(tool_text(&tool), "github: create issue. Create issue. Open a new issue. repo name, body");
    let with_app = Tool { app_id: Some("gh".into()), ..tool };
    assert!(tool_text(&with_app).starts_with("gh: create issue. "));
    let bare = Tool { name: "search".into(), ..Tool::default() };
    assert_eq!(tool_text(&bare), "search");
    let huge = Tool { name: "x".into(), description: Some("word ".repeat(20_000)), ..Tool::default() };
    assert_eq!(tool_text(&huge).chars().count(), MAX_TOOL_TEXT_CHARS);
  }

  #[test]
  fn vectors_insert_replace_remove() {
    let mut v = Vectors::default();
    v.insert(1, &[1.0, 0.0]);
    v.insert(2, &[0.0, 1.0]);
    v.insert(3, &[0.6, 0.8]);
    v.insert(1, &[0.8, 0.6]);
    v.insert(4, &[1.0]); // wrong length: ignored
    assert_eq!(v.len(), 3);
    assert_eq!(v.cosine(1, &[1.0, 0.0]), Some(0.8));
    v.remove(2);
    v.remove(9);
    let mut seen = Vec::new();
    v.at_least(&[1.0, 0.0], 0.7, |id, c| seen.push((id, c)));
    seen.sort_by_key(|s| s.0);
    assert_eq!(seen, [(1, 0.8)]);
    assert_eq!(v.cosine(3, &[0.0, 1.0]), Some(0.8));
    assert_eq!(v.cosine(2, &[0.0, 1.0]), None);
    v.clear();
    assert!(v.is_empty() && v.cosine(1, &[1.0, 0.0]).is_none());
  }
}
