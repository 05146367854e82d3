//! Ranking on small fixed sets, updates, filters and hostile queries, on the plain-Rust core.
#![allow(clippy::expect_used)] // tests: a failed setup should fail loudly

use super::*;

fn tool(name: &str, app: &str, description: &str) -> Tool {
  Tool { name: name.into(), app_id: Some(app.into()), description: Some(description.into()), ..Tool::default() }
}

/// An index with the sentence model, every vector computed.
fn index(tools: Vec<Tool>) -> ToolIndex {
  let mut index = ToolIndex::new(IndexOptions::default()).expect("index");
  index.upsert(tools).expect("upsert");
  index.wait_ready();
  index
}

fn lexical(tools: Vec<Tool>) -> ToolIndex {
  let mut index = ToolIndex::new(IndexOptions { semantic: false, ..IndexOptions::default() }).expect("index");
  index.upsert(tools).expect("upsert");
  index
}

fn names(index: &mut ToolIndex, query: &str) -> Vec<String> {
  index.search(query, &SearchOptions::default()).expect("search").into_iter().map(|h| h.name).collect()
}

fn score_of(index: &mut ToolIndex, query: &str, name: &str) -> Option<f64> {
  let options = SearchOptions { top_k: 100, ..SearchOptions::default() };
  index.search(query, &options).expect("search").into_iter().find(|h| h.name == name).map(|h| h.score)
}

fn tracker() -> Vec<Tool> {
  vec![
    tool("create_issue", "github", "Create a new issue in a GitHub repository"),
    tool("list_issues", "github", "List issues in a GitHub repository with filters"),
    tool("add_comment", "github", "Add a comment to an issue or pull request"),
    tool("delete_file", "github", "Delete a file from a repository"),
    tool("send_message", "slack", "Post a message to a Slack channel"),
    tool("list_channels", "slack", "List public channels in the workspace"),
    tool("get_user", "slack", "Get a Slack user's avatar and profile by id"),
    tool("search_docs", "notion", "Full-text search over pages and databases; can also create issue templates"),
  ]
}

#[test]
fn exact_name_scores_one_and_beats_description_matches() {
  let mut index = index(tracker());
  let hits = index.search("create_issue", &SearchOptions::default()).expect("search");
  assert_eq!(hits[0].name, "create_issue");
  assert_eq!(hits[0].score, 1.0);
  assert!(hits[1..].iter().all(|h| h.score < 1.0));
  // Words of the name beat the same words found only in a description.
  let names = names(&mut index, "create issue");
  let notion = names.iter().position(|n| n == "search_docs");
  assert_eq!(names[0], "create_issue");
  assert!(notion.is_none_or(|p| p > 0));
  // Case, separators and the app prefix do not matter for an exact name.
  let mut prefixed = self::index(vec![tool("github:createIssue", "github", "Open an issue")]);
  assert_eq!(score_of(&mut prefixed, "create-issue", "github:createIssue"), Some(1.0));
  assert_eq!(score_of(&mut prefixed, "GitHub:Create_Issue", "github:createIssue"), Some(1.0));
}

#[test]
fn synonyms_are_found_but_rank_below_the_words_themselves() {
  let mut index = index(vec![
    tool("create_issue", "github", "Create an issue"),
    tool("create_ticket", "zendesk", "Create a support ticket"),
  ]);
  assert_eq!(names(&mut index, "open a ticket")[0], "create_ticket");
  let exact = score_of(&mut index, "create ticket", "create_ticket").expect("exact hit");
  let synonym = score_of(&mut index, "create ticket", "create_issue").expect("synonym hit");
  assert!(exact > synonym, "{exact} vs {synonym}");
  // Only through a synonym: "remove" finds delete_file.
  let mut index = self::index(tracker());
  assert_eq!(names(&mut index, "remove a file")[0], "delete_file");
  let mut plain = ToolIndex::new(IndexOptions { synonyms: false, ..IndexOptions::default() }).expect("index");
  plain.upsert(tracker()).expect("upsert");
  assert!(!names(&mut plain, "erase").contains(&"delete_file".to_string()));
}

#[test]
fn typos_are_found_but_rank_below_exact_words() {
  let mut index = index(vec![
    tool("list_repositories", "github", "List repositories of a user"),
    tool("list_channels", "slack", "List channels"),
  ]);
  assert_eq!(names(&mut index, "list repostories")[0], "list_repositories");
  let typo = score_of(&mut index, "list repostories", "list_repositories").expect("typo hit");
  let exact = score_of(&mut index, "list repositories", "list_repositories").expect("exact hit");
  assert!(exact > typo, "{exact} vs {typo}");
  let mut strict = ToolIndex::new(IndexOptions { fuzzy: false, ..IndexOptions::default() }).expect("index");
  strict.upsert(vec![tool("list_repositories", "github", "List repositories")]).expect("upsert");
  assert!(names(&mut strict, "repostories").is_empty());
}

#[test]
fn filters_by_app_tag_and_source() {
  let mut tools = tracker();
  tools[0].tags = vec!["write".into()];
  tools[4].tags = vec!["write".into(), "chat".into()];
  tools[4].source = Some("openapi".into());
  let mut index = index(tools);
  let search = |index: &mut ToolIndex, o: SearchOptions| -> Vec<String> {
    index.search("list", &SearchOptions { top_k: 50, ..o }).expect("search").into_iter().map(|h| h.name).collect()
  };
  let slack = search(&mut index, SearchOptions { app_ids: vec!["slack".into()], ..Default::default() });
  assert_eq!(slack, ["list_channels"]);
  let mut both =
    search(&mut index, SearchOptions { app_ids: vec!["slack".into(), "github".into()], ..Default::default() });
  both.sort(); // (their order is the ranking's business, not the filter's)
  assert_eq!(both, ["list_channels", "list_issues"]);
  let hits = index
    .search("message issue", &SearchOptions { tags: vec!["write".into()], top_k: 50, ..Default::default() })
    .expect("search");
  let mut tagged: Vec<_> = hits.into_iter().map(|h| h.name).collect();
  tagged.sort();
  assert_eq!(tagged, ["create_issue", "send_message"]);
  let hits = index
    .search("message issue", &SearchOptions { sources: vec!["openapi".into()], ..Default::default() })
    .expect("search");
  assert_eq!(hits.len(), 1);
  assert_eq!(hits[0].source.as_deref(), Some("openapi"));
  assert!(search(&mut index, SearchOptions { app_ids: vec!["nope".into()], ..Default::default() }).is_empty());
}

#[test]
fn upsert_replaces_and_remove_removes() {
  let mut index = index(tracker());
  assert_eq!(index.len(), 8);
  index.upsert(vec![tool("get_user", "slack", "Fetch the weather forecast")]).expect("upsert");
  assert_eq!(index.len(), 8);
  assert_eq!(names(&mut index, "weather forecast"), ["get_user"]);
  assert!(names(&mut index, "avatar").is_empty(), "the old description is gone");
  index.remove(&["get_user", "never_indexed"]);
  assert_eq!(index.len(), 7);
  assert!(names(&mut index, "weather forecast").is_empty());
  assert!(!names(&mut index, "get_user").contains(&"get_user".to_string()));
  // Repeated names in one batch: the last wins.
  index.upsert(vec![tool("x_tool", "a", "alpha"), tool("x_tool", "a", "bravo")]).expect("upsert");
  assert_eq!(index.len(), 8);
  assert!(names(&mut index, "alpha").is_empty());
  assert_eq!(names(&mut index, "bravo"), ["x_tool"]);
  index.clear().expect("clear");
  assert_eq!(index.len(), 0);
  assert!(names(&mut index, "list").is_empty());
  index.upsert(vec![tool("list_things", "a", "List things")]).expect("upsert");
  assert_eq!(names(&mut index, "list"), ["list_things"]);
}

#[test]
fn empty_nonsense_unicode_and_long_queries() {
  let mut index = index(tracker());
  for q in ["", "   ", "the a of", "xyzzy plugh", "???", "\u{0}\u{FFFF}"] {
    assert!(names(&mut index, q).is_empty(), "{q:?}");
  }
  assert!(names(&mut index, "创建 issue 🐛").contains(&"create_issue".to_string()));
  let long = "list channels ".repeat(100_000);
  assert_eq!(names(&mut index, &long)[0], "list_channels");
  let many: String = (0..5000).map(|i| format!("w{i} ")).collect();
  assert!(names(&mut index, &many).is_empty());
  let options = SearchOptions { top_k: 0, ..SearchOptions::default() };
  assert!(index.search("list", &options).expect("search").is_empty());
  let mut empty = self::index(vec![]);
  assert!(names(&mut empty, "list").is_empty());
}

#[test]
fn ties_are_ordered_by_name_and_scores_are_bounded() {
  // Lexically tied; the semantic signal would tell the names apart, so it is off here (below: ties
  // with it on).
  let mut index = lexical(vec![
    tool("beta", "a", "archive the record"),
    tool("alpha", "a", "archive the record"),
    tool("gamma", "a", "archive the record"),
  ]);
  let hits = index.search("archive", &SearchOptions::default()).expect("search");
  assert_eq!(hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["alpha", "beta", "gamma"]);
  assert!(hits.iter().all(|h| h.score == hits[0].score && h.score > 0.0 && h.score < 1.0));
  let min = SearchOptions { min_score: 0.99, ..SearchOptions::default() };
  assert!(index.search("archive", &min).expect("search").is_empty());
}

#[test]
fn ten_thousand_upserts_then_search() {
  let mut index = lexical(vec![]);
  for i in 0..10_000 {
    index
      .upsert(vec![tool(&format!("svc{i}:get_item_{i}"), &format!("app{}", i % 20), "Get one item by id")])
      .expect("upsert");
  }
  index.upsert(vec![tool("billing:refund_payment", "billing", "Refund a card payment")]).expect("upsert");
  assert_eq!(index.len(), 10_001);
  assert_eq!(names(&mut index, "refund a payment")[0], "billing:refund_payment");
  assert_eq!(names(&mut index, "get_item_9999")[0], "svc9999:get_item_9999");
}

fn weather() -> Vec<Tool> {
  let mut tools = tracker();
  tools.push(tool("get_forecast", "weather", "Get the weather forecast for a city"));
  tools
}

#[test]
fn semantic_finds_a_paraphrase_that_shares_no_word() {
  // "will it rain tomorrow" shares no word (nor synonym) with get_forecast.
  let mut index = index(weather());
  let hits = index.search("will it rain tomorrow", &SearchOptions::default()).expect("search");
  assert_eq!(hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["get_forecast"]);
  // Only the dense term: at most w = DENSE_WEIGHT.
  assert!(hits[0].score > 0.0 && hits[0].score <= score::DENSE_WEIGHT, "{}", hits[0].score);
  assert!(names(&mut lexical(weather()), "will it rain tomorrow").is_empty());
  // Filters apply to such hits exactly as to lexical ones.
  let mut only = |o: SearchOptions| index.search("will it rain tomorrow", &o).expect("search").len();
  assert_eq!(only(SearchOptions { app_ids: vec!["github".into()], ..Default::default() }), 0);
  assert_eq!(only(SearchOptions { app_ids: vec!["weather".into()], ..Default::default() }), 1);
  assert_eq!(only(SearchOptions { tags: vec!["x".into()], ..Default::default() }), 0);
  assert_eq!(only(SearchOptions { sources: vec!["x".into()], ..Default::default() }), 0);
  // minScore is applied to the fused score.
  assert_eq!(only(SearchOptions { min_score: hits[0].score + 1e-4, ..Default::default() }), 0);
  // Removing or clearing drops the vector.
  index.remove(&["get_forecast"]);
  assert!(names(&mut index, "will it rain tomorrow").is_empty());
  index.upsert(weather()).expect("upsert");
  index.wait_ready();
  assert_eq!(names(&mut index, "will it rain tomorrow"), ["get_forecast"]);
  index.clear().expect("clear");
  index.upsert(tracker()).expect("upsert");
  index.wait_ready();
  assert!(names(&mut index, "will it rain tomorrow").is_empty());
}

#[test]
fn unrelated_queries_still_find_nothing() {
  let mut index = index(weather());
  for q in ["bake a chocolate cake", "what is the capital of France", "tips for growing tomatoes on a balcony"] {
    assert!(names(&mut index, q).is_empty(), "{q}");
  }
}

#[test]
fn semantic_off_is_the_lexical_ranking_and_on_keeps_exact_names_and_bounds() {
  let queries = ["create issue", "message issue", "list", "remove a file", "get slack user", "archive"];
  let options = SearchOptions { top_k: 50, ..SearchOptions::default() };
  let mut off = lexical(tracker());
  let mut on = index(tracker());
  let mut differs = false;
  for q in queries {
    let a = off.search(q, &options).expect("search");
    let b = on.search(q, &options).expect("search");
    for h in &b {
      assert!(h.score > 0.0 && h.score <= 1.0);
      if let Some(l) = a.iter().find(|l| l.name == h.name) {
        // fused = (1 - w)·lex + w·d, d in [0, 1]; or lex alone (the gate)
        let w = score::DENSE_WEIGHT;
        assert!(h.score >= l.score * (1.0 - w) - 1e-4 && h.score <= l.score.max(l.score * (1.0 - w) + w) + 1e-4);
      }
    }
    differs |= a != b;
  }
  assert!(differs, "the dense term changes some scores");
  assert_eq!(score_of(&mut on, "create_issue", "create_issue"), Some(1.0));
  assert!(on.search("create issue", &options).expect("search").iter().all(|h| h.score < 1.0));
}

#[test]
fn semantic_ties_are_ordered_by_name() {
  // Names that embed alike (case) and texts alike: equal fused scores, ordered by name.
  let mut index = index(vec![tool("Archive", "a", "archive the record"), tool("archive", "a", "archive the record")]);
  let hits = index.search("archive the record", &SearchOptions::default()).expect("search");
  assert_eq!(hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["Archive", "archive"]);
  assert_eq!(hits[0].score, hits[1].score);
}

#[test]
fn titles_are_embedded() {
  let plain = tool("fc", "w", "");
  let with_text = Tool { title: Some("Weather forecast for a city".into()), ..plain.clone() };
  let mut bare = index(vec![plain]);
  let mut rich = index(vec![with_text]);
  assert!(names(&mut bare, "will it rain tomorrow").is_empty());
  assert_eq!(names(&mut rich, "will it rain tomorrow"), ["fc"]);
}

#[test]
fn the_model_reads_a_misspelt_word_as_the_tools_word() {
  let model = model::model(model::Kind::Default).expect("the model in the source tree");
  let index = index(vec![
    tool("datadog:list_incidents", "datadog", "List incidents, filtered by state"),
    tool("docker:compose_up", "docker", "Start the services of a compose file"),
  ]);
  assert_eq!(
    index.dense_query("any open incidnets in datadog?", model),
    ("any open incidents in datadog?".into(), true)
  );
  // Words the model knows are left alone, even one edit from a tool's word; so is punctuation.
  assert_eq!(
    index.dense_query("start (composer) the services!", model),
    ("start (composer) the services!".into(), false)
  );
  assert_eq!(index.dense_query("", model), (String::new(), false));
  // Spacing is normalised, which is no correction (the typo weight is not used for it).
  assert_eq!(index.dense_query("  start  the services ", model), ("start the services".into(), false));
  let mut plain = ToolIndex::new(IndexOptions { fuzzy: false, ..IndexOptions::default() }).expect("index");
  plain.upsert(vec![tool("datadog:list_incidents", "datadog", "List incidents")]).expect("upsert");
  assert_eq!(plain.dense_query("open incidnets", model), ("open incidnets".into(), false));
}

#[test]
fn ready_waits_for_tools_replaced_or_re_added_while_it_waits() {
  // A gateway re-indexes on list_changed (`CodeCall.setTools`): clear, then the same tools again
  // (here with texts not embedded yet). Whoever awaits ready() wants the index as searches will
  // see it, not the moment it was empty.
  let unique = |tag: &str| -> Vec<Tool> {
    (0..6)
      .map(|i| tool(&format!("app:tool_{i}"), "app", &format!("{tag} does thing number {i} for the reader")))
      .collect()
  };
  let mut index = ToolIndex::new(IndexOptions::default()).expect("index");
  index.upsert(unique("first pass")).expect("upsert");
  let (tx, rx) = std::sync::mpsc::channel();
  index.when_ready(Box::new(move || {
    let _ = tx.send(());
  }));
  index.clear_for_refill().expect("clear");
  // What `CodeCall.setTools` does in between: removes (here of nothing), then upserts.
  index.remove::<&str>(&[]);
  index.upsert(unique("second pass, reworded")).expect("upsert");
  index.end_refill();
  rx.recv_timeout(std::time::Duration::from_secs(300)).expect("ready");
  assert!(index.is_ready(), "ready() resolved while the re-added tools were still pending");
  // A plain clear() with nothing added after it answers at once.
  index.upsert(unique("third pass, reworded again")).expect("upsert");
  let (tx, rx) = std::sync::mpsc::channel();
  index.when_ready(Box::new(move || {
    let _ = tx.send(());
  }));
  index.clear().expect("clear");
  rx.recv_timeout(std::time::Duration::from_secs(5)).expect("ready after clear");
}
