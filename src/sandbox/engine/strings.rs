//! QuickJS strings to Rust strings. JavaScript strings are UTF-16 and may hold lone surrogates,
//! which QuickJS hands out encoded as WTF-8; each becomes one U+FFFD here.

use rquickjs::{qjs, String as JsString};

/// The string's text, with every lone surrogate replaced by U+FFFD.
pub fn js_string_lossy(s: &JsString<'_>) -> String {
  let ctx = s.ctx().as_raw().as_ptr();
  let mut len: qjs::size_t = 0;
  // SAFETY: `s` is a live string of `ctx`; JS_ToCStringLen2 returns a buffer of `len` bytes owned
  // by the context (or null on allocation failure), released with JS_FreeCString below.
  let ptr = unsafe { qjs::JS_ToCStringLen2(ctx, &mut len, s.as_raw(), false) };
  if ptr.is_null() {
    return String::new();
  }
  // SAFETY: `ptr` points to `len` initialized bytes.
  let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize) };
  let text = decode_wtf8(bytes);
  // SAFETY: `ptr` was returned by JS_ToCStringLen2 for this context and is freed once.
  unsafe { qjs::JS_FreeCString(ctx, ptr) };
  text
}

/// A string argument of a native primitive, read with `js_string_lossy`: a lone surrogate in a
/// tool name, a log line or an event name is data (U+FFFD), not a conversion error that ends the
/// script (spec §2.6). rquickjs's own `String` conversion refuses such strings.
pub struct Lossy(pub String);

impl<'js> rquickjs::FromJs<'js> for Lossy {
  fn from_js(_: &rquickjs::Ctx<'js>, value: rquickjs::Value<'js>) -> rquickjs::Result<Self> {
    match value.as_string() {
      Some(s) => Ok(Lossy(js_string_lossy(s))),
      None => Err(rquickjs::Error::new_from_js(value.type_name(), "string")),
    }
  }
}

/// UTF-8 with surrogates encoded as 3-byte sequences (ED A0..BF xx) → String with U+FFFD for each.
pub fn decode_wtf8(bytes: &[u8]) -> String {
  match std::str::from_utf8(bytes) {
    Ok(s) => s.to_string(),
    Err(_) => {
      let mut out = String::with_capacity(bytes.len());
      let mut i = 0;
      while i < bytes.len() {
        match std::str::from_utf8(&bytes[i..]) {
          Ok(rest) => {
            out.push_str(rest);
            break;
          }
          Err(e) => {
            let valid = e.valid_up_to();
            // SAFETY-free: `valid` bytes were just checked to be UTF-8.
            out.push_str(std::str::from_utf8(&bytes[i..i + valid]).unwrap_or_default());
            i += valid;
            out.push('\u{FFFD}');
            // A surrogate is one 3-byte unit; anything else invalid skips what the decoder rejected.
            let skip = if bytes[i] == 0xED && bytes.get(i + 1).is_some_and(|b| (0xA0..=0xBF).contains(b)) {
              3
            } else {
              e.error_len().unwrap_or(bytes.len() - i)
            };
            i += skip.max(1);
          }
        }
      }
      out
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn lone_surrogates_become_one_replacement_character() {
    assert_eq!(decode_wtf8(b"a\xED\xA0\x80b"), "a\u{FFFD}b");
    assert_eq!(decode_wtf8(b"\xED\xBF\xBF"), "\u{FFFD}");
    assert_eq!(decode_wtf8("plain ✓".as_bytes()), "plain ✓");
  }
}
