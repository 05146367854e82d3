//! Property names: which ones mean a limit, a page, a query, an id, a name; the ones worth showing.

use super::*;

/// A property name lowercased, letters and digits only.
pub(super) fn norm_key(key: &str) -> String {
  key.chars().filter(|c| c.is_alphanumeric()).take(64).flat_map(char::to_lowercase).collect()
}

pub(super) fn is_limit_key(key: &str) -> bool {
  let n = norm_key(key);
  pub(super) const LIMITS: &[&str] = &[
    "limit",
    "perpage",
    "pagesize",
    "maxresults",
    "maxitems",
    "count",
    "top",
    "topk",
    "first",
    "size",
    "max",
    "num",
    "numresults",
    "resultsperpage",
    "pagelimit",
    "take",
    "rows",
    "maxcount",
  ];
  LIMITS.contains(&n.as_str()) || (n.ends_with("limit") && n.len() < 16)
}

pub(super) fn is_page_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "page" | "pagenumber" | "pageno" | "pagenum")
}

pub(super) fn is_offset_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "offset" | "skip" | "start" | "startindex")
}

pub(super) fn is_query_key(key: &str) -> bool {
  matches!(
    norm_key(key).as_str(),
    "query"
      | "q"
      | "search"
      | "searchterm"
      | "searchquery"
      | "searchtext"
      | "querytext"
      | "term"
      | "keyword"
      | "keywords"
  )
}

pub(super) fn is_id_key(key: &str) -> bool {
  let n = norm_key(key);
  n == "id"
    || n.ends_with("uuid")
    || key.ends_with("Id")
    || key.ends_with("ID")
    || key.ends_with("_id")
    || key.ends_with("-id")
    || key.ends_with(" id")
}

pub(super) fn is_name_key(key: &str) -> bool {
  matches!(norm_key(key).as_str(), "name" | "title" | "subject" | "summary" | "displayname")
}

/// A top-level input property, as the example builder sees it.
pub(super) struct TopProp<'a> {
  pub(super) key: &'a str,
  pub(super) required: bool,
  /// A plain value (string, number, boolean, enum): preferred by the "with options" example.
  pub(super) scalar: bool,
  /// Deprecated, read-only, or a key AgentScript may reject: never added as an option.
  pub(super) skip: bool,
}

/// The optional properties the intent example passes besides the required ones.
pub(super) fn relevant_keys(intent: Intent, props: &[TopProp<'_>]) -> Vec<String> {
  let optional = |pred: fn(&str) -> bool| props.iter().find(|p| !p.required && !p.skip && pred(p.key));
  let has_required = |pred: fn(&str) -> bool| props.iter().any(|p| p.required && pred(p.key));
  let mut keys: Vec<&str> = Vec::new();
  match intent {
    Intent::List => keys.extend(optional(is_limit_key).map(|p| p.key)),
    Intent::Search => {
      keys.extend(optional(is_query_key).map(|p| p.key));
      keys.extend(optional(is_limit_key).map(|p| p.key));
    }
    Intent::Get | Intent::Delete if !has_required(is_id_key) => keys.extend(optional(is_id_key).map(|p| p.key)),
    Intent::Update => {
      if !has_required(is_id_key) {
        keys.extend(optional(is_id_key).map(|p| p.key));
      }
      keys.extend(optional(is_name_key).map(|p| p.key));
    }
    Intent::Create if !props.iter().any(|p| p.required) => keys.extend(optional(is_name_key).map(|p| p.key)),
    _ => {}
  }
  keys.into_iter().map(str::to_string).collect()
}
