//! placeholder until the generator lands
use serde_json::Value;
pub struct UsageExample {
  pub description: String,
  pub code: String,
}
pub fn usage_examples(_n: &str, _d: Option<&str>, _i: Option<&Value>, _u: &[Value], _max: usize) -> Vec<UsageExample> {
  Vec::new()
}
