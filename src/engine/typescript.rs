//! placeholder until the generator lands
use serde_json::Value;
pub fn declaration(name: &str, _d: Option<&str>, _i: Option<&Value>, _o: Option<&Value>) -> String {
  format!("declare function callTool(name: '{name}', input: unknown): Promise<unknown>;")
}
