//! Globs on tool names, as the gateway's `include`/`exclude` read them (`lib/gateway/config.mjs`
//! `globToRegExp`): `*` any run of characters (none too), `?` exactly one, everything else literal,
//! anchored at both ends. Matching is iterative with one backtrack point, so a hostile pattern such
//! as `*a*a*a*b` costs O(pattern × name), never exponential time.

/// One glob, kept as characters so that `?` is one character, not one byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
  pattern: Vec<char>,
  source: String,
}

impl Glob {
  pub fn new(pattern: &str) -> Self {
    Self { pattern: pattern.chars().collect(), source: pattern.to_string() }
  }

  /// The pattern as written.
  pub fn as_str(&self) -> &str {
    &self.source
  }

  pub fn matches(&self, name: &str) -> bool {
    let p = &self.pattern;
    let s: Vec<char> = name.chars().collect();
    let (mut pi, mut si) = (0, 0);
    // The last `*` seen and the name position it is currently stretched to.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
      match p.get(pi) {
        Some('*') => {
          star = Some((pi, si));
          pi += 1;
        }
        Some(&c) if c == '?' || c == s[si] => {
          pi += 1;
          si += 1;
        }
        _ => match star {
          Some((sp, ss)) => {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
          }
          None => return false,
        },
      }
    }
    p[pi..].iter().all(|&c| c == '*')
  }
}

#[cfg(test)]
mod tests {
  use super::Glob;

  #[test]
  fn globs_match_like_the_gateway_filters() {
    let cases: &[(&str, &str, bool)] = &[
      ("github:*", "github:delete_repo", true),
      ("github:*", "github:", true),
      ("github:*", "gitlab:x", false),
      ("*_admin", "users_admin", true),
      ("*_admin", "users_admin2", false),
      ("get-?", "get-a", true),
      ("get-?", "get-ab", false),
      ("get-?", "get-é", true),
      ("a.b", "axb", false),
      ("*", "", true),
      ("", "", true),
      ("", "a", false),
      ("a*b*c", "aXbYc", true),
      ("a*b*c", "aXbY", false),
      ("**x", "x", true),
    ];
    for (pattern, name, expected) in cases {
      assert_eq!(Glob::new(pattern).matches(name), *expected, "{pattern} ~ {name}");
    }
  }

  #[test]
  fn a_hostile_glob_stays_linear() {
    let pattern = "*a".repeat(200) + "b";
    let name = "a".repeat(20_000);
    assert!(!Glob::new(&pattern).matches(&name));
  }
}
