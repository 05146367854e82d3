//! Validating a value against a JSON Schema, the keywords ajv reads (draft 4 to 2020-12).

use super::*;
impl<'a> Engine<'a> {
  // -------------------------------------------------------------------------------------------
  // Validation
  // -------------------------------------------------------------------------------------------

  /// How `value` fares against `schema` (JSON Schema draft 4 to 2020-12, as ajv reads it).
  pub(super) fn check(&mut self, value: &Value, schema: &'a Value, depth: usize) -> Verdict {
    if self.check_left == 0 {
      self.exhausted = true;
      return Verdict::Uncertain;
    }
    self.check_left -= 1;
    if depth > CHECK_DEPTH {
      return Verdict::Uncertain;
    }
    let m = match schema {
      Value::Bool(false) => return Verdict::Invalid,
      Value::Object(m) => m,
      _ => return Verdict::Valid,
    };
    let mut verdict = Verdict::Valid;
    if let Some(Value::String(r)) = m.get("$ref") {
      verdict = match resolve_ref(self.root, r) {
        Some(target) => self.check(value, target, depth + 1),
        None => Verdict::Uncertain,
      };
      if verdict == Verdict::Invalid {
        return verdict;
      }
    }
    if let Some(t) = m.get("type") {
      if !type_matches(value, t, m.get("nullable") == Some(&Value::Bool(true))) {
        return Verdict::Invalid;
      }
    }
    if let Some(c) = m.get("const") {
      if !json_eq(value, c, 0) {
        return Verdict::Invalid;
      }
    }
    if let Some(Value::Array(values)) = m.get("enum") {
      self.charge(values.len() / 8);
      if !values.iter().any(|x| json_eq(value, x, 0)) {
        return Verdict::Invalid;
      }
    }
    let own = match value {
      Value::Number(n) => check_number(n, m),
      Value::String(s) => self.check_string(s, m),
      Value::Array(items) => self.check_array(items, m, depth),
      Value::Object(o) => self.check_object(value, o, m, depth),
      _ => Verdict::Valid,
    };
    verdict = verdict.and(own);
    if verdict == Verdict::Invalid {
      return verdict;
    }
    verdict.and(self.check_combinators(value, m, depth))
  }

  pub(super) fn check_string(&mut self, s: &str, m: &'a Schema) -> Verdict {
    let len = s.chars().count() as u64;
    if m.get("minLength").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxLength").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    if let Some(Value::String(pattern)) = m.get("pattern") {
      match self.matches(pattern, s) {
        Some(true) => {}
        Some(false) => return Verdict::Invalid,
        None => verdict = Verdict::Uncertain,
      }
    }
    if let Some(Value::String(f)) = m.get("format") {
      verdict = verdict.and(format_verdict(f, s));
    }
    verdict
  }

  pub(super) fn check_array(&mut self, items: &[Value], m: &'a Schema, depth: usize) -> Verdict {
    let len = items.len() as u64;
    if m.get("minItems").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxItems").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    let (prefix, rest) = item_schemas(m);
    for (i, item) in items.iter().enumerate() {
      if let Some(s) = prefix.and_then(|p| p.get(i)).or(rest) {
        verdict = verdict.and(self.check(item, s, depth + 1));
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
      if items.len() > 256 {
        verdict = verdict.and(Verdict::Uncertain);
      } else {
        self.charge(items.len() * items.len() / 16);
        for (i, a) in items.iter().enumerate() {
          if items[i + 1..].iter().any(|b| json_eq(a, b, 0)) {
            return Verdict::Invalid;
          }
        }
      }
    }
    if let Some(contains) = m.get("contains") {
      let (mut hits, mut unsure) = (0u64, 0u64);
      for item in items {
        match self.check(item, contains, depth + 1) {
          Verdict::Valid => hits += 1,
          Verdict::Uncertain => unsure += 1,
          Verdict::Invalid => {}
        }
      }
      let min = m.get("minContains").and_then(Value::as_u64).unwrap_or(1);
      let max = m.get("maxContains").and_then(Value::as_u64).unwrap_or(u64::MAX);
      if hits + unsure < min || hits > max {
        return Verdict::Invalid;
      }
      if hits < min || hits + unsure > max {
        verdict = verdict.and(Verdict::Uncertain);
      }
    }
    verdict
  }

  pub(super) fn check_object(&mut self, whole: &Value, o: &Map<String, Value>, m: &'a Schema, depth: usize) -> Verdict {
    if let Some(Value::Array(required)) = m.get("required") {
      self.charge(required.len() / 8);
      if required.iter().filter_map(Value::as_str).any(|k| !o.contains_key(k)) {
        return Verdict::Invalid;
      }
    }
    let len = o.len() as u64;
    if m.get("minProperties").and_then(Value::as_u64).is_some_and(|min| len < min)
      || m.get("maxProperties").and_then(Value::as_u64).is_some_and(|max| len > max)
    {
      return Verdict::Invalid;
    }
    let mut verdict = Verdict::Valid;
    let props = m.get("properties").and_then(Value::as_object);
    let patterns = m.get("patternProperties").and_then(Value::as_object);
    let additional = m.get("additionalProperties");
    let names = m.get("propertyNames");
    for (k, v) in o {
      let mut matched = false;
      if let Some(s) = props.and_then(|p| p.get(k)) {
        matched = true;
        verdict = verdict.and(self.check(v, s, depth + 1));
      }
      if let Some(patterns) = patterns {
        for (pattern, s) in patterns.iter().take(64) {
          match self.matches(pattern, k) {
            Some(true) => {
              matched = true;
              verdict = verdict.and(self.check(v, s, depth + 1));
            }
            Some(false) => {}
            None => {
              matched = true;
              verdict = verdict.and(Verdict::Uncertain);
            }
          }
        }
        if patterns.len() > 64 {
          matched = true;
          verdict = verdict.and(Verdict::Uncertain);
        }
      }
      if !matched {
        if let Some(a) = additional {
          verdict = verdict.and(self.check(v, a, depth + 1));
        }
      }
      if let Some(names) = names {
        verdict = verdict.and(self.check(&Value::String(k.clone()), names, depth + 1));
      }
      if verdict == Verdict::Invalid {
        return verdict;
      }
    }
    for deps in ["dependentRequired", "dependencies", "dependentSchemas"] {
      let Some(Value::Object(d)) = m.get(deps) else { continue };
      for (k, dep) in d.iter().take(256) {
        if !o.contains_key(k) {
          continue;
        }
        match dep {
          Value::Array(list) => {
            if list.iter().filter_map(Value::as_str).any(|x| !o.contains_key(x)) {
              return Verdict::Invalid;
            }
          }
          schema => verdict = verdict.and(self.check(whole, schema, depth + 1)),
        }
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
    }
    verdict
  }

  pub(super) fn check_combinators(&mut self, value: &Value, m: &'a Schema, depth: usize) -> Verdict {
    let mut verdict = Verdict::Valid;
    if let Some(Value::Array(all)) = m.get("allOf") {
      for s in all.iter().take(256) {
        verdict = verdict.and(self.check(value, s, depth + 1));
        if verdict == Verdict::Invalid {
          return verdict;
        }
      }
      if all.len() > 256 {
        verdict = verdict.and(Verdict::Uncertain);
      }
    }
    if let Some(Value::Array(any)) = m.get("anyOf").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())) {
      let mut best = Verdict::Invalid;
      for s in any.iter().take(256) {
        let v = self.check(value, s, depth + 1);
        if v.rank() < best.rank() {
          best = v;
        }
        if best == Verdict::Valid {
          break;
        }
      }
      if any.len() > 256 && best != Verdict::Valid {
        best = Verdict::Uncertain;
      }
      verdict = verdict.and(best);
    }
    if let Some(Value::Array(one)) = m.get("oneOf").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())) {
      let (mut valid, mut unsure) = (0, 0);
      for s in one.iter().take(256) {
        match self.check(value, s, depth + 1) {
          Verdict::Valid => valid += 1,
          Verdict::Uncertain => unsure += 1,
          Verdict::Invalid => {}
        }
        if valid > 1 {
          break;
        }
      }
      verdict = verdict.and(match (valid, unsure) {
        (v, _) if v > 1 => Verdict::Invalid,
        (0, 0) => Verdict::Invalid,
        (1, 0) if one.len() <= 256 => Verdict::Valid,
        _ => Verdict::Uncertain,
      });
    }
    if let Some(not) = m.get("not") {
      verdict = verdict.and(match self.check(value, not, depth + 1) {
        Verdict::Valid => Verdict::Invalid,
        Verdict::Invalid => Verdict::Valid,
        Verdict::Uncertain => Verdict::Uncertain,
      });
    }
    if let Some(cond) = m.get("if") {
      let branch = match self.check(value, cond, depth + 1) {
        Verdict::Valid => m.get("then"),
        Verdict::Invalid => m.get("else"),
        Verdict::Uncertain => return verdict.and(Verdict::Uncertain),
      };
      if let Some(branch) = branch {
        verdict = verdict.and(self.check(value, branch, depth + 1));
      }
    }
    verdict
  }
}

pub(super) fn check_number(n: &Number, m: &Schema) -> Verdict {
  let Some(x) = n.as_f64() else { return Verdict::Valid };
  let draft4_min = m.get("exclusiveMinimum") == Some(&Value::Bool(true));
  let draft4_max = m.get("exclusiveMaximum") == Some(&Value::Bool(true));
  let bad = m.get("minimum").and_then(Value::as_f64).is_some_and(|b| x < b || (draft4_min && x == b))
    || m.get("maximum").and_then(Value::as_f64).is_some_and(|b| x > b || (draft4_max && x == b))
    || m.get("exclusiveMinimum").and_then(Value::as_f64).is_some_and(|b| x <= b)
    || m.get("exclusiveMaximum").and_then(Value::as_f64).is_some_and(|b| x >= b)
    || m.get("multipleOf").and_then(Value::as_f64).filter(|d| *d > 0.0).is_some_and(|d| {
      // As ajv: `x / d` must be an integer.
      let q = x / d;
      !(q.is_finite() && q.fract() == 0.0 && q.abs() < 1e21)
    })
    || match m.get("format").and_then(Value::as_str) {
      Some("int32") => !(x.fract() == 0.0 && (-2_147_483_648.0..=2_147_483_647.0).contains(&x)),
      Some("int64") => x.fract() != 0.0,
      _ => false,
    };
  if bad {
    Verdict::Invalid
  } else {
    Verdict::Valid
  }
}

pub(super) fn type_matches(value: &Value, t: &Value, nullable: bool) -> bool {
  if nullable && value.is_null() {
    return true;
  }
  match t {
    Value::String(name) => type_name_matches(value, name),
    Value::Array(names) => {
      names.is_empty() || names.iter().any(|n| n.as_str().is_none_or(|n| type_name_matches(value, n)))
    }
    _ => true,
  }
}

pub(super) fn type_name_matches(value: &Value, name: &str) -> bool {
  match name {
    "null" => value.is_null(),
    "boolean" => value.is_boolean(),
    "object" => value.is_object(),
    "array" => value.is_array(),
    "string" => value.is_string(),
    "number" => value.is_number(),
    "integer" => value.as_f64().is_some_and(|x| x.is_finite() && x.fract() == 0.0),
    _ => true,
  }
}

/// JSON equality as JavaScript sees it (`1` equals `1.0`), for values at most 64 levels deep.
pub(super) fn json_eq(a: &Value, b: &Value, depth: usize) -> bool {
  if depth > 64 {
    return false;
  }
  match (a, b) {
    (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().is_some_and(|x| Some(x) == y.as_f64()),
    (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y, depth + 1)),
    (Value::Object(x), Value::Object(y)) => {
      x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w, depth + 1)))
    }
    _ => a == b,
  }
}

/// About how many bytes `value` takes as JSON (stops counting past the limit).
pub(super) fn literal_size(value: &Value, depth: usize) -> usize {
  if depth > 16 {
    return usize::MAX / 2;
  }
  match value {
    Value::String(s) => s.len() + 2,
    Value::Array(items) => {
      let mut n = 2;
      for item in items {
        n += literal_size(item, depth + 1) + 1;
        if n > MAX_LITERAL_BYTES {
          break;
        }
      }
      n
    }
    Value::Object(o) => {
      let mut n = 2;
      for (k, v) in o {
        n += k.len() + 4 + literal_size(v, depth + 1);
        if n > MAX_LITERAL_BYTES {
          break;
        }
      }
      n
    }
    _ => 8,
  }
}
