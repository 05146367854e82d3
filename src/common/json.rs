//! JSON text from JavaScript may hold lone UTF-16 surrogates as escapes (`"\ud800"`): V8's and
//! QuickJS's `JSON.stringify` write them so. serde_json refuses such text outright, which would turn
//! a host's error message, or a tool result with one stray surrogate in scraped text, into "could
//! not be read". Lone surrogates are data (spec §2.6): before serde reads JSON from JavaScript, each
//! lone surrogate escape becomes `\ufffd`, as the engine does for raw strings.

use std::borrow::Cow;

/// `json` with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd`; a valid pair
/// (high escape directly followed by low escape) and everything else is left as it is.
pub fn well_formed_escapes(json: &str) -> Cow<'_, str> {
  let bytes = json.as_bytes();
  if !json.contains("\\u") {
    return Cow::Borrowed(json);
  }
  let unit = |at: usize| -> Option<u16> {
    let hex = bytes.get(at + 2..at + 6)?;
    if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
      return None;
    }
    u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
  };
  let mut out: Option<String> = None;
  let mut copied = 0;
  let mut i = 0;
  while i < bytes.len() {
    if bytes[i] != b'\\' {
      i += 1;
      continue;
    }
    // An escaped backslash is two bytes of text, never the start of a \u escape.
    let Some(u) = unit(i) else {
      i += 2;
      continue;
    };
    let lone = match u {
      0xD800..=0xDBFF => !matches!(unit(i + 6), Some(0xDC00..=0xDFFF)),
      0xDC00..=0xDFFF => true,
      _ => false,
    };
    if lone {
      let o = out.get_or_insert_with(|| String::with_capacity(json.len()));
      o.push_str(&json[copied..i]);
      o.push_str("\\ufffd");
      copied = i + 6;
    }
    // A valid pair: skip both escapes.
    i += if (0xD800..=0xDBFF).contains(&u) && !lone { 12 } else { 6 };
  }
  match out {
    None => Cow::Borrowed(json),
    Some(mut o) => {
      o.push_str(&json[copied..]);
      Cow::Owned(o)
    }
  }
}

#[cfg(test)]
mod tests {
  use super::well_formed_escapes;

  #[test]
  fn lone_surrogate_escapes_become_replacement_characters() {
    assert_eq!(well_formed_escapes(r#"{"m":"a\ud800b"}"#), r#"{"m":"a\ufffdb"}"#);
    assert_eq!(well_formed_escapes(r#""\udc00\ud800""#), r#""\ufffd\ufffd""#);
    assert_eq!(well_formed_escapes(r#""x\uD83D""#), r#""x\ufffd""#);
    // Valid pairs, escaped backslashes and other escapes stay.
    assert_eq!(well_formed_escapes(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
    assert_eq!(well_formed_escapes(r#""\\ud800""#), r#""\\ud800""#);
    assert_eq!(well_formed_escapes(r#""\u0041\n""#), r#""\u0041\n""#);
    assert!(matches!(well_formed_escapes(r#"{"plain":1}"#), std::borrow::Cow::Borrowed(_)));
    // serde reads every output.
    for json in [r#"{"m":"a\ud800b"}"#, r#""\udc00\ud800x\ud83d\ude00""#, r#""\ud800\\""#] {
      let fixed = well_formed_escapes(json);
      assert!(serde_json::from_str::<serde_json::Value>(&fixed).is_ok(), "{fixed}");
    }
    // A truncated escape at the end is left for serde to refuse.
    assert_eq!(well_formed_escapes(r#""\ud8"#), r#""\ud8"#);
  }
}
