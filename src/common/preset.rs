//! The four policy presets of `api.md` §2.1 (seed 000, "VM presets"), as data.
//!
//! A preset only supplies defaults; explicit options override them field by field. Two things no
//! option can undo: `eval` and `Function` are disabled builtins in every preset, and identifiers
//! with the reserved `__cc_` prefix belong to the sandbox.

use super::InvalidArgument;
/// A named policy, from the strictest to the most permissive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preset {
  LockedDown,
  #[default]
  Secure,
  Balanced,
  Experimental,
}

/// Builtins no preset or option may re-enable.
pub const ALWAYS_DISABLED_BUILTINS: &[&str] = &["eval", "Function"];

/// The prefix of every name the sandbox reserves for itself (loop counter, wrapper parameters).
pub const RESERVED_PREFIX: &str = "__cc_";

const NODE_AND_NETWORK: &[&str] = &[
  "require",
  "process",
  "fetch",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
  "module",
  "exports",
  "__dirname",
  "__filename",
  "Buffer",
  "XMLHttpRequest",
  "WebSocket",
  "importScripts",
  "Worker",
  "Deno",
  "Bun",
];

const SECURE_GLOBALS: &[&str] = &[
  "require",
  "process",
  "fetch",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
  "module",
  "exports",
  "__dirname",
  "__filename",
  "Buffer",
  "XMLHttpRequest",
  "WebSocket",
  "importScripts",
  "Worker",
  "Deno",
  "Bun",
  "global",
  "WebAssembly",
  "SharedArrayBuffer",
  "Atomics",
];

const LOCKED_DOWN_GLOBALS: &[&str] = &[
  "require",
  "process",
  "fetch",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
  "queueMicrotask",
  "module",
  "exports",
  "__dirname",
  "__filename",
  "Buffer",
  "XMLHttpRequest",
  "WebSocket",
  "importScripts",
  "Worker",
  "Deno",
  "Bun",
  "global",
  "globalThis",
  "self",
  "window",
  "WebAssembly",
  "SharedArrayBuffer",
  "Atomics",
  "Proxy",
  "Reflect",
  "WeakRef",
  "FinalizationRegistry",
  "WeakMap",
  "WeakSet",
  "Symbol",
  "escape",
  "unescape",
];

/// Everything a preset decides. Byte sizes are bytes; times are milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetDefaults {
  pub timeout_ms: u32,
  pub allow_loops: bool,
  /// `None` where loops are not allowed at all.
  pub max_iterations: Option<u64>,
  pub allow_console: bool,
  pub max_tool_calls: u32,
  pub memory_limit_bytes: u64,
  pub max_stack_bytes: u64,
  pub max_script_bytes: u64,
  pub max_result_bytes: u64,
  pub max_console_bytes: u64,
  pub max_concurrent_calls: u32,
  pub disabled_builtins: &'static [&'static str],
  pub disabled_globals: &'static [&'static str],
  /// `constructor` / `__proto__` / `prototype` member access is refused (`ForbiddenMember`).
  pub forbid_prototype_members: bool,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// When loops are switched on in a preset that has no iteration budget of its own.
pub const FALLBACK_MAX_ITERATIONS: u64 = 10_000;

impl Preset {
  pub const ALL: [Preset; 4] = [Self::LockedDown, Self::Secure, Self::Balanced, Self::Experimental];

  /// Parses the JS name of a preset (`'locked_down'`, `'secure'`, `'balanced'`, `'experimental'`).
  pub fn parse(name: &str) -> Option<Self> {
    Self::ALL.into_iter().find(|p| p.as_str() == name)
  }

  /// Reads the `preset` option (`None` → `secure`), or says what is wrong with it.
  pub fn from_option(name: Option<&str>) -> Result<Self, InvalidArgument> {
    match name {
      None => Ok(Self::default()),
      Some(name) => Self::parse(name).ok_or_else(|| {
        format!("options.preset must be one of 'locked_down', 'secure', 'balanced', 'experimental' (got '{name}')")
          .into()
      }),
    }
  }

  pub const fn as_str(self) -> &'static str {
    match self {
      Self::LockedDown => "locked_down",
      Self::Secure => "secure",
      Self::Balanced => "balanced",
      Self::Experimental => "experimental",
    }
  }

  pub fn defaults(self) -> PresetDefaults {
    let common = PresetDefaults {
      timeout_ms: 3_500,
      allow_loops: false,
      max_iterations: None,
      allow_console: true,
      max_tool_calls: 100,
      memory_limit_bytes: 32 * MIB,
      max_stack_bytes: 512 * KIB,
      max_script_bytes: 100 * KIB,
      max_result_bytes: MIB,
      max_console_bytes: 64 * KIB,
      max_concurrent_calls: 20,
      disabled_builtins: ALWAYS_DISABLED_BUILTINS,
      disabled_globals: SECURE_GLOBALS,
      forbid_prototype_members: true,
    };
    match self {
      Self::LockedDown => PresetDefaults {
        timeout_ms: 2_000,
        allow_console: false,
        max_tool_calls: 50,
        memory_limit_bytes: 16 * MIB,
        max_stack_bytes: 256 * KIB,
        disabled_globals: LOCKED_DOWN_GLOBALS,
        ..common
      },
      Self::Secure => common,
      Self::Balanced => PresetDefaults {
        timeout_ms: 5_000,
        allow_loops: true,
        max_iterations: Some(10_000),
        max_tool_calls: 500,
        memory_limit_bytes: 64 * MIB,
        disabled_globals: NODE_AND_NETWORK,
        forbid_prototype_members: false,
        ..common
      },
      Self::Experimental => PresetDefaults {
        timeout_ms: 30_000,
        allow_loops: true,
        max_iterations: Some(1_000_000),
        max_tool_calls: 5_000,
        memory_limit_bytes: 128 * MIB,
        max_stack_bytes: MIB,
        disabled_globals: &["require", "process"],
        forbid_prototype_members: false,
        ..common
      },
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// preset, timeoutMs, allowLoops, maxIterations, allowConsole, maxToolCalls, memory, stack
  type Row = (Preset, u32, bool, Option<u64>, bool, u32, u64, u64);

  #[test]
  fn table_matches_the_contract() {
    let rows: [Row; 4] = [
      (Preset::LockedDown, 2000, false, None, false, 50, 16 * MIB, 256 * KIB),
      (Preset::Secure, 3500, false, None, true, 100, 32 * MIB, 512 * KIB),
      (Preset::Balanced, 5000, true, Some(10_000), true, 500, 64 * MIB, 512 * KIB),
      (Preset::Experimental, 30_000, true, Some(1_000_000), true, 5000, 128 * MIB, MIB),
    ];
    for (preset, timeout, loops, iterations, console, calls, memory, stack) in rows {
      let d = preset.defaults();
      assert_eq!(
        (d.timeout_ms, d.allow_loops, d.max_iterations, d.allow_console, d.max_tool_calls),
        (timeout, loops, iterations, console, calls),
        "{preset:?}"
      );
      assert_eq!((d.memory_limit_bytes, d.max_stack_bytes), (memory, stack), "{preset:?}");
      assert_eq!(d.max_script_bytes, 100 * KIB);
      assert_eq!(d.max_result_bytes, MIB);
      assert_eq!(d.max_console_bytes, 64 * KIB);
      assert_eq!(d.max_concurrent_calls, 20);
      for builtin in ALWAYS_DISABLED_BUILTINS {
        assert!(d.disabled_builtins.contains(builtin));
      }
    }
  }

  #[test]
  fn secure_and_stricter_block_node_network_and_timers() {
    for preset in [Preset::LockedDown, Preset::Secure] {
      for name in ["require", "process", "fetch", "setTimeout", "setInterval"] {
        assert!(preset.defaults().disabled_globals.contains(&name), "{preset:?} {name}");
      }
    }
    let locked = Preset::LockedDown.defaults();
    for name in [
      "Proxy",
      "Reflect",
      "WebAssembly",
      "globalThis",
      "SharedArrayBuffer",
      "Atomics",
      "WeakRef",
      "FinalizationRegistry",
    ] {
      assert!(locked.disabled_globals.contains(&name), "{name}");
    }
  }

  #[test]
  fn names_round_trip() {
    for p in Preset::ALL {
      assert_eq!(Preset::parse(p.as_str()), Some(p));
    }
    assert_eq!(Preset::parse("SECURE"), None);
  }
}
