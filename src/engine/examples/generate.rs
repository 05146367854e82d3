//! Generating a value that satisfies a JSON Schema (the `Engine` and its budgets).

use super::*;

/// What the validator can say about a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
  Valid,
  /// Nothing seen is wrong, but something could not be checked (a pattern the regular-expression
  /// engine does not read, a remote `$ref`, the step budget).
  Uncertain,
  Invalid,
}

impl Verdict {
  pub(super) fn and(self, other: Verdict) -> Verdict {
    match (self, other) {
      (Verdict::Invalid, _) | (_, Verdict::Invalid) => Verdict::Invalid,
      (Verdict::Uncertain, _) | (_, Verdict::Uncertain) => Verdict::Uncertain,
      _ => Verdict::Valid,
    }
  }

  pub(super) fn rank(self) -> u8 {
    match self {
      Verdict::Valid => 0,
      Verdict::Uncertain => 1,
      Verdict::Invalid => 2,
    }
  }
}

pub(super) type Schema = Map<String, Value>;

/// The value generator and validator for one input schema.
pub(super) struct Engine<'a> {
  pub(super) root: &'a Value,
  pub(super) gen_left: usize,
  pub(super) check_left: usize,
  /// A budget ran out during the current attempt: its result is not trusted.
  pub(super) exhausted: bool,
  pub(super) regexes: HashMap<String, Option<Rc<Re>>>,
  /// A word from the tool name, for `query`-like properties.
  pub(super) query_word: String,
  /// The tool's noun as an identifier part, for `id`.
  pub(super) id_stem: String,
}

impl<'a> Engine<'a> {
  pub(super) fn new(root: &'a Value, info: &ToolInfo) -> Self {
    let id_stem: String = info.query_word().chars().filter(|c| c.is_ascii_alphanumeric()).take(24).collect();
    Engine {
      root,
      gen_left: GEN_BUDGET,
      check_left: CHECK_BUDGET,
      exhausted: false,
      regexes: HashMap::new(),
      query_word: info.query_word(),
      id_stem: if id_stem.is_empty() || id_stem == "example" { "id".to_string() } else { id_stem.to_lowercase() },
    }
  }

  pub(super) fn reset(&mut self) {
    self.gen_left = GEN_BUDGET;
    self.check_left = CHECK_BUDGET;
    self.exhausted = false;
  }

  pub(super) fn charge(&mut self, steps: usize) {
    self.check_left = self.check_left.saturating_sub(steps);
  }

  /// The top-level properties (through `$ref` and `allOf`), declared order.
  pub(super) fn top_properties(&mut self) -> Vec<TopProp<'a>> {
    let Some(maps) = self.merge(&[self.root]) else { return Vec::new() };
    let required: HashSet<&str> = maps.iter().flat_map(|m| required_of(m)).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut props = Vec::new();
    for m in &maps {
      let Some(Value::Object(p)) = m.get("properties") else { continue };
      for (key, schema) in p {
        if !seen.insert(key.as_str()) {
          continue;
        }
        let target = match schema.get("$ref").and_then(Value::as_str) {
          Some(r) => resolve_ref(self.root, r).unwrap_or(schema),
          None => schema,
        };
        let scalar = target.get("enum").is_some()
          || target.get("const").is_some()
          || match target.get("type") {
            Some(Value::String(t)) => matches!(t.as_str(), "string" | "number" | "integer" | "boolean"),
            Some(Value::Array(ts)) => {
              ts.iter().filter_map(Value::as_str).find(|t| *t != "null").is_some_and(|t| t != "object" && t != "array")
            }
            _ => false,
          };
        let deprecated = |s: &Value| {
          s.get("deprecated") == Some(&Value::Bool(true))
            || s.get("readOnly") == Some(&Value::Bool(true))
            || s.get("description").and_then(Value::as_str).is_some_and(|d| d.to_lowercase().contains("deprecated"))
        };
        props.push(TopProp {
          key: key.as_str(),
          required: required.contains(key.as_str()),
          scalar,
          skip: deprecated(schema) || deprecated(target) || FORBIDDEN_KEYS.contains(&key.as_str()),
        });
      }
    }
    props
  }

  /// An input for the whole schema with the required properties and the `wanted` optional ones,
  /// or `None` when it would not be valid.
  pub(super) fn top_input(&mut self, wanted: &[String]) -> Option<Value> {
    self.reset();
    let root = self.root;
    let input = self.gen(&[root], "", 0, Some(wanted), 0)?;
    let verdict = self.check(&input, root, 0);
    if self.exhausted || verdict == Verdict::Invalid {
      return None;
    }
    Some(input)
  }

  /// The schema objects that all apply to one value: `conj` with their `$ref` targets and `allOf`
  /// members, each once. `None` when one of them is `false`.
  pub(super) fn merge(&self, conj: &[&'a Value]) -> Option<Vec<&'a Schema>> {
    let mut out: Vec<&'a Schema> = Vec::new();
    let mut stack: Vec<(&'a Value, usize)> = conj.iter().rev().map(|s| (*s, 0)).collect();
    while let Some((schema, hops)) = stack.pop() {
      match schema {
        Value::Bool(false) => return None,
        Value::Object(m) => {
          if out.iter().any(|o| std::ptr::eq(*o, m)) || out.len() >= MAX_MERGED {
            continue;
          }
          out.push(m);
          if hops >= MAX_HOPS {
            continue;
          }
          if let Some(Value::Array(all)) = m.get("allOf") {
            stack.extend(all.iter().take(MAX_BRANCHES).rev().map(|b| (b, hops + 1)));
          }
          if let Some(target) = m.get("$ref").and_then(Value::as_str).and_then(|r| resolve_ref(self.root, r)) {
            stack.push((target, hops + 1));
          }
        }
        _ => {}
      }
    }
    Some(out)
  }

  pub(super) fn check_all(&mut self, value: &Value, conj: &[&'a Value]) -> Verdict {
    let mut verdict = Verdict::Valid;
    for schema in conj {
      verdict = verdict.and(self.check(value, schema, 0));
      if verdict == Verdict::Invalid {
        break;
      }
    }
    verdict
  }

  /// A value for all of `conj`, for a property called `key`. `top` is `Some(wanted optional keys)`
  /// for the input object itself; `variant` asks for a different value (for `uniqueItems`).
  pub(super) fn gen(
    &mut self,
    conj: &[&'a Value],
    key: &str,
    depth: usize,
    top: Option<&[String]>,
    variant: usize,
  ) -> Option<Value> {
    self.gen_choosing(conj, &mut Vec::new(), key, depth, top, variant)
  }

  pub(super) fn gen_choosing(
    &mut self,
    conj: &[&'a Value],
    chosen: &mut Vec<(usize, bool)>,
    key: &str,
    depth: usize,
    top: Option<&[String]>,
    variant: usize,
  ) -> Option<Value> {
    if self.gen_left == 0 {
      self.exhausted = true;
      return None;
    }
    self.gen_left -= 1;
    if depth > MAX_DEPTH || chosen.len() > MAX_CHOICES {
      return None;
    }
    let maps = self.merge(conj)?;

    // anyOf / oneOf: pick the first branch that yields a valid value (null-only branches last).
    let pending = maps.iter().find_map(|m| {
      [("anyOf", false), ("oneOf", true)].into_iter().find_map(|(k, one)| {
        let id = (*m as *const Schema as usize, one);
        match m.get(k) {
          Some(Value::Array(branches)) if !branches.is_empty() && !chosen.contains(&id) => Some((id, branches)),
          _ => None,
        }
      })
    });
    if let Some((id, branches)) = pending {
      let mut order: Vec<&'a Value> = branches.iter().take(MAX_BRANCHES).collect();
      order.sort_by_key(|b| only_null(b));
      chosen.push(id);
      let mut best: Option<(Value, Verdict)> = None;
      for branch in order {
        let mut with_branch = conj.to_vec();
        with_branch.push(branch);
        let Some(value) = self.gen_choosing(&with_branch, chosen, key, depth, top, variant) else { continue };
        let verdict = self.check_all(&value, conj);
        if verdict == Verdict::Valid {
          chosen.pop();
          return Some(value);
        }
        if best.as_ref().is_none_or(|(_, b)| verdict.rank() < b.rank()) {
          best = Some((value, verdict));
        }
      }
      chosen.pop();
      return best.map(|(v, _)| v);
    }

    let mut best: Option<(Value, Verdict)> = None;
    let mut consider = |engine: &mut Self, value: Value, trusted: bool| -> Option<Value> {
      let verdict = engine.check_all(&value, conj);
      if verdict == Verdict::Valid {
        return Some(value);
      }
      // A value the schema itself gives is the best guess where the validator cannot decide.
      let verdict = if verdict == Verdict::Uncertain && !trusted { Verdict::Invalid } else { verdict };
      if best.as_ref().is_none_or(|(_, b)| verdict.rank() < b.rank()) {
        best = Some((value, verdict));
      }
      None
    };

    // Literals the schema gives: const, enum, then (below the top) examples and default.
    let mut closed = false;
    for m in &maps {
      if let Some(c) = m.get("const") {
        closed = true;
        if let Some(v) = consider(self, c.clone(), true) {
          return Some(v);
        }
      }
      if let Some(Value::Array(values)) = m.get("enum") {
        closed = true;
        let n = values.len().min(MAX_MERGED);
        for i in 0..n {
          let value = &values[(i + variant) % n];
          if literal_size(value, 0) <= MAX_LITERAL_BYTES {
            if let Some(v) = consider(self, value.clone(), true) {
              return Some(v);
            }
          }
        }
      }
    }
    if closed {
      return best.map(|(v, _)| v);
    }
    if top.is_none() && variant == 0 {
      let mut literals: Vec<&'a Value> = Vec::new();
      for m in &maps {
        if let Some(Value::Array(examples)) = m.get("examples") {
          literals.extend(examples.iter().take(3));
        }
        literals.extend(m.get("example"));
        // An empty default (`''`, `[]`, `{}`) shows nothing: a generated value is more telling.
        let empty = |v: &&Value| match v {
          Value::String(s) => s.is_empty(),
          Value::Array(a) => a.is_empty(),
          Value::Object(o) => o.is_empty(),
          _ => false,
        };
        literals.extend(m.get("default").filter(|v| !empty(v)));
      }
      for value in literals {
        if literal_size(value, 0) <= MAX_LITERAL_BYTES {
          if let Some(v) = consider(self, value.clone(), true) {
            return Some(v);
          }
        }
      }
    }

    for ty in type_order(&maps, key, top.is_some()) {
      let candidates = match ty {
        "object" => self.gen_object(&maps, depth, top, variant).into_iter().collect(),
        "array" => self.gen_array(&maps, key, depth, variant).into_iter().collect(),
        "string" => self.gen_strings(&maps, key, variant),
        "integer" => number_candidates(&maps, key, true, variant),
        "number" => number_candidates(&maps, key, false, variant),
        "boolean" => {
          let odd = variant & 1 == 1;
          vec![Value::Bool(!odd), Value::Bool(odd)]
        }
        _ => vec![Value::Null],
      };
      for candidate in candidates {
        if let Some(v) = consider(self, candidate, false) {
          return Some(v);
        }
      }
    }
    best.map(|(v, _)| v)
  }

  pub(super) fn gen_object(
    &mut self,
    maps: &[&'a Schema],
    depth: usize,
    top: Option<&[String]>,
    variant: usize,
  ) -> Option<Value> {
    let mut declared: Vec<&'a str> = Vec::new();
    let mut seen: HashSet<&'a str> = HashSet::new();
    for m in maps {
      if let Some(Value::Object(p)) = m.get("properties") {
        declared.extend(p.keys().map(String::as_str).filter(|k| seen.insert(*k)));
      }
    }
    // Required keys, then the wanted optional ones, then what dependentRequired and minProperties ask for.
    let mut needed: Vec<&'a str> = Vec::new();
    let mut needed_set: HashSet<&'a str> = HashSet::new();
    for m in maps {
      needed.extend(required_of(m).filter(|k| needed_set.insert(*k)));
    }
    let mut keys: Vec<(&'a str, bool)> = needed.iter().map(|k| (*k, true)).collect();
    for w in top.unwrap_or(&[]) {
      if let Some(k) = declared.iter().find(|d| **d == w.as_str()) {
        if !keys.iter().any(|(x, _)| x == k) {
          keys.push((*k, false));
        }
      }
    }
    for _ in 0..4 {
      let before = keys.len();
      for m in maps {
        for deps in ["dependentRequired", "dependencies"] {
          let Some(Value::Object(d)) = m.get(deps) else { continue };
          for (k, list) in d {
            let Value::Array(list) = list else { continue };
            if !keys.iter().any(|(x, _)| *x == k.as_str()) {
              continue;
            }
            for dep in list.iter().filter_map(Value::as_str).take(64) {
              if !keys.iter().any(|(x, _)| *x == dep) {
                keys.push((dep, true));
              }
            }
          }
        }
      }
      if keys.len() == before || keys.len() > 4096 {
        break;
      }
    }
    // Listing the keys is work too: large schemas spend the budget.
    self.charge(declared.len() + keys.len());
    if self.check_left == 0 {
      self.exhausted = true;
      return None;
    }
    let min_props = maps.iter().filter_map(|m| m.get("minProperties").and_then(Value::as_u64)).max().unwrap_or(0);
    let max_props = maps.iter().filter_map(|m| m.get("maxProperties").and_then(Value::as_u64)).min();
    if min_props > MAX_ITEMS {
      return None;
    }

    let mut obj = Map::new();
    let mut first = true;
    let mut add = |engine: &mut Self, obj: &mut Map<String, Value>, k: &str, must: bool| -> bool {
      let (schemas, forbidden) = engine.property_schemas(maps, k);
      if (forbidden || FORBIDDEN_KEYS.contains(&k)) && !must {
        return true;
      }
      let value = engine.gen(&schemas, k, depth + 1, None, if first { variant } else { 0 });
      match value {
        Some(v) => {
          if !must && engine.check_all(&v, &schemas) != Verdict::Valid {
            return true;
          }
          obj.insert(k.to_string(), v);
          first = false;
          true
        }
        None => !must,
      }
    };
    for (k, must) in &keys {
      if obj.contains_key(*k) {
        continue;
      }
      if !add(self, &mut obj, k, *must) || self.exhausted {
        return None;
      }
    }
    if (obj.len() as u64) < min_props {
      for k in &declared {
        if (obj.len() as u64) >= min_props {
          break;
        }
        if !obj.contains_key(*k) && !add(self, &mut obj, k, false) {
          return None;
        }
      }
      let open = !maps.iter().any(|m| m.get("additionalProperties") == Some(&Value::Bool(false)));
      let mut i = 1;
      while open && (obj.len() as u64) < min_props && i <= MAX_ITEMS {
        let name = format!("key{i}");
        i += 1;
        let name_ok = maps
          .iter()
          .filter_map(|m| m.get("propertyNames"))
          .all(|s| self.check(&Value::String(name.clone()), s, 0) == Verdict::Valid);
        if name_ok && !obj.contains_key(&name) && !add(self, &mut obj, &name, false) {
          return None;
        }
      }
    }
    if let Some(max) = max_props {
      let optional: Vec<String> = obj.keys().filter(|k| !needed_set.contains(k.as_str())).cloned().collect();
      for k in optional.iter().rev() {
        if (obj.len() as u64) <= max {
          break;
        }
        obj.remove(k);
      }
    }
    Some(Value::Object(obj))
  }

  /// The schemas a property's value must satisfy, and whether some `additionalProperties: false`
  /// (or `unevaluatedProperties: false` next to it) forbids the key.
  pub(super) fn property_schemas(&mut self, maps: &[&'a Schema], key: &str) -> (Vec<&'a Value>, bool) {
    let mut out = Vec::new();
    let mut forbidden = false;
    for m in maps {
      let mut matched = false;
      if let Some(s) = m.get("properties").and_then(|p| p.get(key)) {
        out.push(s);
        matched = true;
      }
      if let Some(Value::Object(patterns)) = m.get("patternProperties") {
        for (pattern, s) in patterns.iter().take(64) {
          if self.matches(pattern, key) == Some(true) {
            out.push(s);
            matched = true;
          }
        }
      }
      if !matched {
        match m.get("additionalProperties") {
          Some(Value::Bool(false)) => forbidden = true,
          Some(s @ Value::Object(_)) => out.push(s),
          _ => {}
        }
        if m.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
          forbidden = true;
        }
      }
      if let Some(names) = m.get("propertyNames") {
        if self.check(&Value::String(key.to_string()), names, 0) != Verdict::Valid {
          forbidden = true;
        }
      }
    }
    (out, forbidden)
  }

  pub(super) fn gen_array(&mut self, maps: &[&'a Schema], key: &str, depth: usize, variant: usize) -> Option<Value> {
    let mut min = 0u64;
    let mut max = u64::MAX;
    let mut unique = false;
    for m in maps {
      min = min.max(m.get("minItems").and_then(Value::as_u64).unwrap_or(0));
      max = max.min(m.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX));
      unique |= m.get("uniqueItems") == Some(&Value::Bool(true));
      if let (prefix, Some(Value::Bool(false))) = item_schemas(m) {
        max = max.min(prefix.map_or(0, |p| p.len() as u64));
      }
    }
    if min > MAX_ITEMS || min > max {
      return None;
    }
    let count = min.max(1).min(max);
    let contains: Vec<&'a Value> = maps.iter().filter_map(|m| m.get("contains")).collect();
    let item_key = singular(key);
    let mut items: Vec<Value> = Vec::new();
    let mut attempt = 0;
    while (items.len() as u64) < count && attempt < count as usize + 8 {
      let i = items.len();
      let mut conj: Vec<&'a Value> = Vec::new();
      for m in maps {
        match item_schemas(m) {
          (Some(prefix), rest) => conj.extend(prefix.get(i).or(rest)),
          (None, rest) => conj.extend(rest),
        }
      }
      if i == 0 {
        conj.extend(contains.iter().copied());
      }
      let var = if unique { variant + attempt } else { variant };
      attempt += 1;
      match self.gen(&conj, &item_key, depth + 1, None, var) {
        Some(v) => {
          if unique && items.iter().any(|x| json_eq(x, &v, 0)) {
            continue;
          }
          items.push(v);
        }
        None if (i as u64) < min || self.exhausted => return None,
        None => break,
      }
    }
    if (items.len() as u64) < min {
      return None;
    }
    Some(Value::Array(items))
  }

  pub(super) fn gen_strings(&mut self, maps: &[&'a Schema], key: &str, variant: usize) -> Vec<Value> {
    let min = maps.iter().filter_map(|m| m.get("minLength").and_then(Value::as_u64)).max().unwrap_or(0);
    let max = maps.iter().filter_map(|m| m.get("maxLength").and_then(Value::as_u64)).min().unwrap_or(u64::MAX);
    if min > MAX_STRING {
      return Vec::new();
    }
    let mut raw: Vec<String> = Vec::new();
    if let Some(f) = maps.iter().find_map(|m| m.get("format").and_then(Value::as_str)) {
      raw.extend(format_value(f, variant));
    }
    raw.push(self.hint_string(key, variant));
    let patterns: Vec<&'a str> = maps.iter().filter_map(|m| m.get("pattern").and_then(Value::as_str)).collect();
    for pattern in patterns.iter().take(4) {
      let Some(re) = self.regex(pattern) else { continue };
      for (extra, alt) in [(0, 0), (1, 0), (0, 1), (4, 0), (1, 1), (0, 2), (min as usize, 0)] {
        let mut s = String::new();
        let budget = self.check_left.min(5_000);
        let mut steps = budget;
        sample(&re, extra + variant, alt, &mut s, &mut steps);
        self.charge(budget - steps + 1);
        raw.push(s);
      }
    }
    raw.push(if variant == 0 { "example".to_string() } else { format!("example-{}", variant + 1) });
    raw.push(if variant == 0 { "sample".to_string() } else { format!("sample-{}", variant + 1) });

    let mut out: Vec<Value> = Vec::new();
    for s in raw {
      let len = s.chars().count() as u64;
      let mut fitted = Vec::new();
      if len < min {
        for pad in ['x', '0'] {
          let mut t = s.clone();
          t.extend(std::iter::repeat_n(pad, (min - len) as usize));
          fitted.push(t);
        }
      } else if len > max {
        fitted.push(s.chars().take(max as usize).collect());
      } else {
        fitted.push(s);
      }
      for t in fitted {
        let v = Value::String(t);
        if !out.contains(&v) {
          out.push(v);
        }
      }
    }
    out
  }

  /// A friendly string for a property called `key`.
  pub(super) fn hint_string(&self, key: &str, variant: usize) -> String {
    let n = norm_key(key);
    let bump = |s: &str| if variant == 0 { s.to_string() } else { format!("{s}-{}", variant + 1) };
    if n.contains("email") {
      return format_value("email", variant).unwrap_or_default();
    }
    if is_id_key(key) {
      let words = split_words(key);
      let stem: Vec<&str> = words.iter().map(String::as_str).filter(|w| *w != "id" && *w != "uuid").collect();
      let stem = if stem.is_empty() { self.id_stem.clone() } else { stem.join("_") };
      return format!("{}_{}", stem.chars().take(32).collect::<String>(), 123 + variant);
    }
    if is_query_key(key) {
      return bump(&self.query_word);
    }
    let is = |list: &[&str]| list.contains(&n.as_str());
    if n.ends_with("url") || n.ends_with("uri") || is(&["link", "href", "website", "homepage", "endpoint", "webhook"]) {
      return format_value("uri", variant).unwrap_or_default();
    }
    let text = if is(&["name", "displayname", "fullname"]) {
      "Example"
    } else if is(&["title", "subject", "summary", "headline"]) {
      "Example title"
    } else if is(&["username", "user", "owner", "login", "author", "assignee", "handle"]) {
      "example-user"
    } else if is(&["repo", "repository", "reponame"]) {
      "example-repo"
    } else if is(&["org", "organization", "organisation", "workspace", "team", "project"]) {
      return bump(&format!("example-{n}"));
    } else if is(&["branch", "ref", "base"]) {
      "main"
    } else if is(&["path", "filepath"]) {
      "docs/README.md"
    } else if is(&["file", "filename"]) {
      "README.md"
    } else if is(&["dir", "directory", "folder"]) {
      "docs"
    } else if is(&["message", "comment", "body", "content", "text", "description", "note", "notes", "prompt", "reason"])
    {
      "Example text"
    } else if n.contains("color") || n.contains("colour") {
      "#3366ff"
    } else if is(&["language", "lang"]) {
      "en"
    } else if n == "locale" {
      "en-US"
    } else if is(&["timezone", "tz"]) {
      "UTC"
    } else if n == "currency" {
      "USD"
    } else if is(&["country", "countrycode"]) {
      "US"
    } else if n.contains("phone") {
      "+15555550123"
    } else if n.contains("date") {
      return format_value("date", variant).unwrap_or_default();
    } else if n.contains("time") || key.ends_with("At") || key.ends_with("_at") {
      return format_value("date-time", variant).unwrap_or_default();
    } else {
      "example"
    };
    bump(text)
  }

  pub(super) fn regex(&mut self, pattern: &str) -> Option<Rc<Re>> {
    if let Some(cached) = self.regexes.get(pattern) {
      return cached.clone();
    }
    let parsed = parse_regex(pattern).map(Rc::new);
    if self.regexes.len() < 256 {
      self.regexes.insert(pattern.to_string(), parsed.clone());
    }
    parsed
  }

  /// Whether `pattern` matches somewhere in `text`; `None` when that cannot be decided.
  pub(super) fn matches(&mut self, pattern: &str, text: &str) -> Option<bool> {
    let re = self.regex(pattern)?;
    let (found, steps) = regex_search(&re, text, self.check_left);
    self.charge(steps);
    if self.check_left == 0 {
      self.exhausted = true;
    }
    found
  }
}

pub(super) fn required_of(m: &Schema) -> impl Iterator<Item = &str> {
  m.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).take(4096)
}

/// `(tuple schemas, schema for the rest)` of an array schema, draft 2020-12 or earlier.
pub(super) fn item_schemas(m: &Schema) -> (Option<&Vec<Value>>, Option<&Value>) {
  match (m.get("prefixItems"), m.get("items")) {
    (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
    (_, Some(Value::Array(prefix))) => (Some(prefix), m.get("additionalItems")),
    (_, items) => (None, items),
  }
}

pub(super) fn only_null(schema: &Value) -> bool {
  match schema.get("type") {
    Some(Value::String(t)) => t == "null",
    Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "null"),
    _ => schema.get("const") == Some(&Value::Null),
  }
}

/// The types to try for a value, best first: non-null before null; when the schema does not say,
/// what its keywords imply (objects at the top), else a string (or a number for `limit`-like keys).
pub(super) fn type_order(maps: &[&Schema], key: &str, top: bool) -> Vec<&'static str> {
  pub(super) const ALL: [&str; 7] = ["object", "array", "string", "integer", "number", "boolean", "null"];
  let mut allowed: Option<Vec<&'static str>> = None;
  for m in maps {
    let names: Vec<&str> = match m.get("type") {
      Some(Value::String(t)) => vec![t.as_str()],
      Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
      _ => continue,
    };
    let mut here: Vec<&'static str> = ALL.iter().copied().filter(|t| names.contains(t)).collect();
    if names.contains(&"number") && !here.contains(&"integer") {
      here.push("integer");
    }
    if m.get("nullable") == Some(&Value::Bool(true)) {
      here.push("null");
    }
    allowed = Some(match allowed {
      None => here,
      Some(before) => before.into_iter().filter(|t| here.contains(t)).collect(),
    });
  }
  let has = |keys: &[&str]| maps.iter().any(|m| keys.iter().any(|k| m.contains_key(*k)));
  let mut implied: Vec<&'static str> = Vec::new();
  if top {
    implied.push("object");
  }
  if has(&["properties", "required", "additionalProperties", "patternProperties", "minProperties", "propertyNames"]) {
    implied.push("object");
  }
  if has(&["items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"]) {
    implied.push("array");
  }
  if has(&["minLength", "maxLength", "pattern", "format"]) {
    implied.push("string");
  }
  let numeric = is_limit_key(key) || is_page_key(key) || is_offset_key(key);
  if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) || numeric {
    implied.push(if numeric { "integer" } else { "number" });
  }
  implied.push("string");
  let mut order: Vec<&'static str> = Vec::new();
  match allowed {
    None => {
      for t in implied {
        if !order.contains(&t) {
          order.push(t);
        }
      }
    }
    Some(allowed) => {
      // Keyword hints first, then the schema's own order; number after integer; null last.
      for t in implied.iter().chain(allowed.iter()) {
        if allowed.contains(t) && !order.contains(t) && *t != "null" && *t != "number" {
          order.push(t);
        }
      }
      for t in ["number", "null"] {
        if allowed.contains(&t) {
          order.push(t);
        }
      }
    }
  }
  order
}

/// Numbers to try for a numeric value: a friendly one for the key, moved into the bounds and onto
/// `multipleOf`, then the bounds themselves.
pub(super) fn number_candidates(maps: &[&Schema], key: &str, integer: bool, variant: usize) -> Vec<Value> {
  let (mut lo, mut lo_open, mut hi, mut hi_open) = (f64::NEG_INFINITY, false, f64::INFINITY, false);
  let mut step: Option<f64> = None;
  for m in maps {
    let draft4_min = m.get("exclusiveMinimum") == Some(&Value::Bool(true));
    let draft4_max = m.get("exclusiveMaximum") == Some(&Value::Bool(true));
    let mut lower = |x: f64, open: bool| {
      if x > lo || (x == lo && open) {
        lo = x;
        lo_open = open;
      }
    };
    if let Some(x) = m.get("minimum").and_then(Value::as_f64) {
      lower(x, draft4_min);
    }
    if let Some(x) = m.get("exclusiveMinimum").and_then(Value::as_f64) {
      lower(x, true);
    }
    let mut upper = |x: f64, open: bool| {
      if x < hi || (x == hi && open) {
        hi = x;
        hi_open = open;
      }
    };
    if let Some(x) = m.get("maximum").and_then(Value::as_f64) {
      upper(x, draft4_max);
    }
    if let Some(x) = m.get("exclusiveMaximum").and_then(Value::as_f64) {
      upper(x, true);
    }
    if let Some(x) = m.get("multipleOf").and_then(Value::as_f64).filter(|x| *x > 0.0 && x.is_finite()) {
      step.get_or_insert(x);
    }
  }
  if integer {
    lo = if lo_open { lo.floor() + 1.0 } else { lo.ceil() };
    hi = if hi_open { hi.ceil() - 1.0 } else { hi.floor() };
    lo_open = false;
    hi_open = false;
  }
  let n = norm_key(key);
  let preferred = if is_limit_key(key) {
    10.0
  } else if is_page_key(key) {
    1.0
  } else if is_offset_key(key) {
    0.0
  } else if n == "year" {
    2026.0
  } else if n == "port" {
    8080.0
  } else {
    1.0
  } + variant as f64;
  let inside = |x: f64| x.is_finite() && (x > lo || (!lo_open && x == lo)) && (x < hi || (!hi_open && x == hi));
  let mut xs: Vec<f64> = Vec::new();
  let mut x = preferred;
  if !inside(x) {
    if x < lo || (x == lo && lo_open) {
      x = if !lo_open && lo.is_finite() {
        lo
      } else if hi.is_finite() {
        lo + (hi - lo) / 2.0
      } else {
        lo + 1.0
      };
    } else {
      x = if !hi_open && hi.is_finite() {
        hi
      } else if lo.is_finite() {
        lo + (hi - lo) / 2.0
      } else {
        hi - 1.0
      };
    }
  }
  xs.push(x);
  if let Some(step) = step {
    let mut ks: Vec<f64> = Vec::new();
    for base in [x, preferred, lo, hi] {
      if base.is_finite() {
        let k = (base / step).round();
        ks.extend([k, k + 1.0, k - 1.0, (base / step).ceil(), (base / step).floor()]);
      }
    }
    if ks.is_empty() {
      ks.extend([1.0, 0.0, -1.0]);
    }
    let mut multiples: Vec<f64> = Vec::new();
    for k in ks {
      for scale in [1.0, 10.0, 100.0] {
        let v = k * scale * step;
        if inside(v) && !multiples.contains(&v) {
          multiples.push(v);
        }
      }
    }
    multiples.sort_by(|a, b| (a - preferred).abs().total_cmp(&(b - preferred).abs()));
    xs.splice(0..0, multiples);
  }
  xs.extend([lo, hi, 0.0, 1.0]);
  if !integer {
    // A number that is not an integer, for `oneOf: [{ type: integer }, { type: number }]`.
    xs.extend([x + 0.5, 1.5]);
  }
  let mut out: Vec<Value> = Vec::new();
  for x in xs {
    if !x.is_finite() || (integer && x.fract() != 0.0) {
      continue;
    }
    let v = if x.fract() == 0.0 && x.abs() < 9.0e15 {
      Value::Number(Number::from(x as i64))
    } else {
      match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None => continue,
      }
    };
    if !out.contains(&v) {
      out.push(v);
    }
  }
  out
}
