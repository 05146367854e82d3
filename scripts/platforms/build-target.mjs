// `npm run build:target -- <triple>...` (or `--all`): the release build of the addon and its
// worker for any of the seven targets, on this Linux x86_64 machine, into
// artifacts/bindings-<triple>/ — the layout `scripts/assemble.mjs` packs. The release workflow runs
// this same script for every target, so what is checked here is what ships.
//
// One road for every target: zig as C compiler and linker, through cargo-zigbuild (the addon with
// `cargo-zigbuild rustc --crate-type cdylib`, the worker with `cargo zigbuild --bin`), named as
// napi names platform binaries (`codecall.<platform>.node`).
// - Linux gnu: the target pinned to glibc 2.17 (`<triple>.2.17`, as `napi build -x` spells it): zig
//   links against 2.17's symbol versions, so the result loads on RHEL 7, Amazon Linux 2 and Lambda.
// - Linux musl: the addon links musl's libc.so dynamically (`-crt-static` off: Alpine's Node owns the
//   process's one libc); nothing from glibc.
// - macOS: `MACOSX_DEPLOYMENT_TARGET` as in the spec's table; `build.rs` gives the addon an
//   `@rpath/` install name; the release profile strips it.
// - Windows: the gnu ABI (Microsoft's CRT and SDK, which an msvc build needs, are
//   not served by any registry this machine reaches). napi resolves Node's API at load time
//   (`dyn-symbols`), so the DLL imports nothing from node.exe; napi-build's gnu path still insists
//   on linking a `libnode`, so it gets an empty stub. The DLL ships as the win32-x64-msvc package:
//   Node loads addons through N-API's C ABI, whatever compiled them (README "Platforms").
//
// Cargo's output for these builds goes to target/cross/, apart from `npm run build`'s.
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { PLATFORMS, WORKER, workerFile } from '../assemble.mjs'
import { CROSS, log, root, rustTarget, sh, zig } from './tools.mjs'

export const TARGET_DIR = join(root, 'target', 'cross')
export const ARTIFACTS = join(root, 'artifacts')

/** Minimum macOS per target (spec §1). */
export const MACOS_MIN = { 'x86_64-apple-darwin': '10.13', 'aarch64-apple-darwin': '11.0' }
export const GLIBC_MIN = '2.17'

const envKey = (triple) => triple.toUpperCase().replace(/-/g, '_')

export function buildTarget(target) {
  const platform = PLATFORMS[target]
  if (!platform) throw new Error(`unknown target ${target}; one of: ${Object.keys(PLATFORMS).join(', ')}`)
  const windows = target.includes('windows')
  const cargoTriple = windows ? 'x86_64-pc-windows-gnu' : target
  rustTarget(cargoTriple)
  const env = { ...process.env, ...zig() }
  const out = join(ARTIFACTS, `bindings-${target}`)
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  const addon = join(out, `codecall.${platform}.node`)
  const started = Date.now()

  if (windows) {
    const stub = join(CROSS, 'libnode-stub')
    mkdirSync(stub, { recursive: true })
    writeFileSync(join(stub, 'libnode.dll'), '') // napi-build checks that this name exists
    writeFileSync(join(stub, 'libnode.a'), '!<arch>\n') // an empty archive: `-lnode` links nothing
    env.LIBNODE_PATH = stub
  }
  if (target.endsWith('-linux-musl')) env[`CARGO_TARGET_${envKey(target)}_RUSTFLAGS`] = '-C target-feature=-crt-static'
  // QuickJS's C API (JS_*, ~300 functions) would otherwise be exported too: only ELF links apply an
  // export list, so the C code itself keeps its symbols inside the addon.
  env[`CFLAGS_${cargoTriple.replace(/-/g, '_')}`] = '-fvisibility=hidden'
  if (MACOS_MIN[target]) env.MACOSX_DEPLOYMENT_TARGET = MACOS_MIN[target]
  // cargo-zigbuild reads a glibc version off the triple and hands zig `<triple>.2.17`.
  const zigTarget = target.endsWith('-linux-gnu') ? `${target}.${GLIBC_MIN}` : cargoTriple
  const cargo = (args) => sh('cargo-zigbuild', args, { cwd: root, env })
  // The addon: the library as a cdylib alone. Cargo.toml also makes it an rlib (the worker links
  // it), and with an rlib in the build every Rust symbol stays exported through LTO: on Linux the
  // linker's version script hides them again, but zig's Mach-O linker ignores export lists, so a
  // macOS addon would export ~10 000 symbols and keep the code behind them.
  cargo(['rustc', '--release', '--locked', '--lib', '--crate-type', 'cdylib', '--target', zigTarget, '--target-dir', TARGET_DIR])
  const release = join(TARGET_DIR, cargoTriple, 'release')
  const library = windows ? 'codecall_native.dll' : MACOS_MIN[target] ? 'libcodecall_native.dylib' : 'libcodecall_native.so'
  copyFileSync(join(release, library), addon)
  // The worker (process isolation): a launcher that maps the `.node` beside it (issue 35;
  // Windows: `codecall-worker.exe`, issue 43); on musl, whose executables are static and cannot map
  // a library, the whole worker with the library linked in as an rlib (`fat-worker`).
  const fat = target.endsWith('-linux-musl') ? ['--features', 'fat-worker'] : []
  cargo(['zigbuild', '--release', '--locked', '--bin', WORKER, ...fat, '--target', zigTarget, '--target-dir', TARGET_DIR])
  copyFileSync(join(release, workerFile(target)), join(out, workerFile(target)))
  chmodSync(join(out, workerFile(target)), 0o755)
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  const sizes = readdirSync(out).map((f) => `${f} ${(statSync(join(out, f)).size / 1e6).toFixed(2)} MB`)
  log(`${target}: ${sizes.join(', ')} in ${seconds} s -> ${out}`)
  return out
}

function main(argv) {
  const targets = argv.includes('--all') ? Object.keys(PLATFORMS) : argv.filter((a) => !a.startsWith('-'))
  const unknown = argv.filter((a) => a.startsWith('-') && a !== '--all')
  if (unknown.length || !targets.length) {
    console.error(`usage: npm run build:target -- <triple>... | --all\n  triples: ${Object.keys(PLATFORMS).join(', ')}`)
    return 2
  }
  for (const target of targets) {
    if (!PLATFORMS[target]) {
      console.error(`unknown target ${target}; one of: ${Object.keys(PLATFORMS).join(', ')}`)
      return 2
    }
  }
  for (const target of targets) {
    try {
      buildTarget(target)
    } catch (e) {
      // No half-built folder left for assemble or the checks to mistake for a build.
      rmSync(join(ARTIFACTS, `bindings-${target}`), { recursive: true, force: true })
      console.error(`build of ${target} failed: ${e.message}`)
      return 1
    }
  }
  return 0
}

// Only when run as a script: test-platforms.mjs imports this module for its paths.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2))
}
