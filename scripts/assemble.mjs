// Puts each platform's build output into its npm/<platform>/ package, as the release publishes it.
// The build jobs upload `bindings-<target>/` holding `codecall.<platform>.node` and, except on
// Windows, the worker executable `codecall-worker` (process isolation), which the addon looks for
// next to its `.node`. The search's sentence model (`MODEL`, from the source tree, the same for
// every platform) goes next to the `.node` too, Windows included: the addon reads it at run time
// there rather than compiling it in, so the worker, which never searches, does not carry it.
//
//   node scripts/assemble.mjs [artifacts dir] [--npm-dir <dir>] [--target <triple>]...
//
// Without --target, every target of package.json `napi.targets` must be there (the release);
// `npm run test:package` assembles this machine's target alone into a copy of npm/.
// Exit code 1, with one line per problem, when something is missing.
import { chmodSync, copyFileSync, existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** napi-rs target triple → platform package directory (and `.node` suffix). */
export const PLATFORMS = {
  'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
  'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
  'x86_64-unknown-linux-musl': 'linux-x64-musl',
  'aarch64-unknown-linux-musl': 'linux-arm64-musl',
  'x86_64-apple-darwin': 'darwin-x64',
  'aarch64-apple-darwin': 'darwin-arm64',
  'x86_64-pc-windows-msvc': 'win32-x64-msvc',
}

export const WORKER = 'codecall-worker'
/** The sentence model (`src/search/model/mod.rs` `MODEL_FILE`). */
export const MODEL = 'all-minilm-l6-v2.i8.bin'
const MODEL_SOURCE = join(root, 'src', 'search', 'embeddings', MODEL)

/** The files a target's platform package ships besides package.json and README.md. */
export function platformFiles(target) {
  const dir = PLATFORMS[target]
  if (!dir) throw new Error(`unknown target ${target}`)
  return target.includes('windows') ? [`codecall.${dir}.node`, MODEL] : [`codecall.${dir}.node`, WORKER, MODEL]
}

/**
 * The main package's manifest as a release publishes it: `napi prepublish` adds one optional
 * dependency per target, `<name>-<platform>` at the same version, so npm installs the one platform
 * package whose `os` / `cpu` / `libc` match the user's machine. The repository's package.json
 * leaves them out: they are not on the registry until the release, and `npm ci` would refuse them.
 */
export function releaseManifest(pkg) {
  const optionalDependencies = { ...pkg.optionalDependencies }
  for (const target of pkg.napi.targets) optionalDependencies[`${pkg.name}-${PLATFORMS[target]}`] = pkg.version
  return { ...pkg, optionalDependencies }
}

/** Copies every target's files from `artifacts` into `npmDir`; returns the problems found. */
export function assemble({ artifacts, npmDir, targets }) {
  const problems = []
  for (const target of targets) {
    const dir = PLATFORMS[target]
    if (!dir) {
      problems.push(`unknown target ${target}`)
      continue
    }
    const pkgDir = join(npmDir, dir)
    const manifest = join(pkgDir, 'package.json')
    if (!existsSync(manifest)) {
      problems.push(`missing ${manifest}`)
      continue
    }
    const declared = JSON.parse(readFileSync(manifest, 'utf8')).files ?? []
    for (const file of platformFiles(target)) {
      const from = file === MODEL ? MODEL_SOURCE : join(artifacts, `bindings-${target}`, file)
      if (!existsSync(from) || !statSync(from).isFile()) {
        problems.push(`missing ${from}`)
        continue
      }
      if (!declared.includes(file)) problems.push(`${manifest} does not list ${file} in "files"`)
      const to = join(pkgDir, file)
      copyFileSync(from, to)
      if (file === WORKER) chmodSync(to, 0o755)
      console.log(`${from} -> ${to}`)
    }
  }
  return problems
}

function main(argv) {
  let artifacts = 'artifacts'
  let npmDir = join(root, 'npm')
  const targets = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--npm-dir') npmDir = resolve(argv[++i] ?? '')
    else if (arg === '--target') targets.push(argv[++i] ?? '')
    else if (arg.startsWith('-')) {
      console.error(`unknown option ${arg}`)
      return 2
    } else artifacts = arg
  }
  const all = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).napi.targets
  const problems = assemble({ artifacts: resolve(artifacts), npmDir, targets: targets.length ? targets : all })
  for (const p of problems) console.error(p)
  return problems.length ? 1 : 0
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2))
}
