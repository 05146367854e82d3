//! String `format`s: a value for each known one, and a check of each.

use super::*;

/// A value of a string `format` (`variant` > 0 gives different ones), `None` for unknown formats.
pub(super) fn format_value(format: &str, variant: usize) -> Option<String> {
  let n = variant;
  Some(match format {
    "email" | "idn-email" if n == 0 => "user@example.com".to_string(),
    "email" | "idn-email" => format!("user{}@example.com", n + 1),
    "date-time" | "iso-date-time" => format!("2026-01-{:02}T09:30:00Z", 15 + n % 10),
    "date" => format!("2026-01-{:02}", 15 + n % 10),
    "time" | "iso-time" => format!("09:{:02}:00Z", 30 + n % 30),
    "uri" | "url" | "iri" | "uri-reference" | "iri-reference" if n == 0 => "https://example.com".to_string(),
    "uri" | "url" | "iri" | "uri-reference" | "iri-reference" => format!("https://example.com/{}", n + 1),
    "uri-template" => "https://example.com/{id}".to_string(),
    "uuid" => format!("3f1c2a9e-8b4d-4c6a-9e2f-{:012x}", 0x1a2b_3c4d_5e6f_u64 + n as u64),
    "hostname" | "idn-hostname" if n == 0 => "example.com".to_string(),
    "hostname" | "idn-hostname" => format!("host{}.example.com", n + 1),
    "ipv4" => format!("192.0.2.{}", 1 + n % 250),
    "ipv6" => format!("2001:db8::{:x}", 1 + n % 0xfff0),
    "duration" => format!("P{}D", 1 + n),
    "regex" => "^[a-z]+$".to_string(),
    "json-pointer" => "/example".to_string(),
    "relative-json-pointer" => "0".to_string(),
    "byte" => "ZXhhbXBsZQ==".to_string(),
    _ => return None,
  })
}

/// Whether `s` is a valid `format` string, as ajv-formats' full mode sees it; formats not
/// checked here are accepted when they are what [`format_value`] writes, and otherwise uncertain.
pub(super) fn format_verdict(format: &str, s: &str) -> Verdict {
  let ok = match format {
    "email" | "idn-email" => email_ok(s),
    "hostname" | "idn-hostname" => hostname_ok(s),
    "date" => date_ok(s),
    "time" => time_ok(s, true),
    "iso-time" => time_ok(s, false),
    "date-time" | "iso-date-time" => {
      let mut parts = s.splitn(2, ['T', 't', ' ']);
      let (date, time) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
      date_ok(date) && time_ok(time, format == "date-time")
    }
    "uri" | "url" | "iri" => uri_ok(s),
    "uri-reference" | "iri-reference" => !s.chars().any(char::is_whitespace),
    "uuid" => uuid_ok(s),
    "ipv4" => ipv4_ok(s),
    "ipv6" => s.contains(':') && s.parse::<std::net::Ipv6Addr>().is_ok(),
    "duration" | "uri-template" | "regex" | "json-pointer" | "relative-json-pointer" | "byte" => {
      let known = (0..4).any(|n| format_value(format, n).as_deref() == Some(s));
      return if known { Verdict::Valid } else { Verdict::Uncertain };
    }
    _ => true,
  };
  if ok {
    Verdict::Valid
  } else {
    Verdict::Invalid
  }
}

pub(super) fn digits(s: &str, n: usize) -> Option<u32> {
  (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

pub(super) fn date_ok(s: &str) -> bool {
  let parts: Vec<&str> = s.split('-').collect();
  let [y, m, d] = parts.as_slice() else { return false };
  let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else { return false };
  let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
  let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  (1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize]
}

pub(super) fn time_ok(s: &str, zone_required: bool) -> bool {
  let lower = s.to_ascii_lowercase();
  let (clock, zone) = match lower.find(['z', '+', '-']) {
    Some(i) => (&lower[..i], Some(&lower[i..])),
    None => (lower.as_str(), None),
  };
  let zone_ok = match zone {
    None => !zone_required,
    Some("z") => true,
    Some(z) if !z.is_ascii() => false,
    Some(z) => {
      let z = &z[1..];
      let (h, m) = match z.len() {
        2 => (z, "00"),
        4 => (&z[..2], &z[2..]),
        5 if z.as_bytes()[2] == b':' => (&z[..2], &z[3..]),
        _ => return false,
      };
      matches!((digits(h, 2), digits(m, 2)), (Some(h), Some(m)) if h <= 23 && m <= 59)
    }
  };
  let (clock, fraction) = match clock.split_once('.') {
    Some((c, f)) => (c, Some(f)),
    None => (clock, None),
  };
  if fraction.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
    return false;
  }
  let parts: Vec<&str> = clock.split(':').collect();
  let [h, m, sec] = parts.as_slice() else { return false };
  match (digits(h, 2), digits(m, 2), digits(sec, 2)) {
    (Some(h), Some(m), Some(sec)) => zone_ok && h <= 23 && m <= 59 && (sec <= 59 || (sec == 60 && m == 59)),
    _ => false,
  }
}

pub(super) fn label_ok(label: &str) -> bool {
  let b = label.as_bytes();
  !b.is_empty()
    && b.len() <= 63
    && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    && b[0] != b'-'
    && b[b.len() - 1] != b'-'
}

pub(super) fn hostname_ok(s: &str) -> bool {
  let s = s.strip_suffix('.').unwrap_or(s);
  !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok)
}

pub(super) fn email_ok(s: &str) -> bool {
  let Some((local, domain)) = s.rsplit_once('@') else { return false };
  let atom =
    |a: &str| !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c));
  let labels: Vec<&str> = domain.split('.').collect();
  local.split('.').all(atom) && labels.len() >= 2 && labels.iter().all(|l| label_ok(l))
}

pub(super) fn uri_ok(s: &str) -> bool {
  let Some((scheme, rest)) = s.split_once(':') else { return false };
  let mut chars = scheme.chars();
  chars.next().is_some_and(|c| c.is_ascii_alphabetic())
    && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    && !rest.chars().any(|c| c.is_whitespace() || "<>\"{}|\\^`".contains(c))
}

pub(super) fn uuid_ok(s: &str) -> bool {
  let s = s.strip_prefix("urn:uuid:").unwrap_or(s);
  let groups: Vec<&str> = s.split('-').collect();
  groups.len() == 5
    && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub(super) fn ipv4_ok(s: &str) -> bool {
  let parts: Vec<&str> = s.split('.').collect();
  parts.len() == 4
    && parts.iter().all(|p| {
      !p.is_empty()
        && p.len() <= 3
        && p.bytes().all(|b| b.is_ascii_digit())
        && (p.len() == 1 || !p.starts_with('0'))
        && p.parse::<u32>().is_ok_and(|n| n <= 255)
    })
}
