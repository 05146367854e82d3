// Puts each platform's build output into its npm/<platform>/ package, as the release publishes it.
// The build jobs upload `bindings-<target>/` holding `codecall.<platform>.node` and, except on
// Windows, the worker executable `codecall-worker` (process isolation), which the addon looks for
// next to its `.node`. The search's sentence model (`MODEL`, from the source tree, the same for
// every platform) goes once into npm/data/, the package `@codecall/native-data`, which the main
// package and every platform package depend on at the same version: installed once, found by the
// addon from its own `.node`'s place (`model_places` in src/search/model/mod.rs).
//
//   node scripts/assemble.mjs [artifacts dir] [--npm-dir <dir>] [--target <triple>]...
//       [--release-manifest <package.json>]
//
// --release-manifest rewrites that main package.json as `releaseManifest` says (the publish job,
// on its throw-away checkout: the repository's own manifest cannot name unpublished packages).
// Without --target, every target of package.json `napi.targets` must be there (the release);
// `npm run test:package` assembles this machine's target alone into a copy of npm/.
// Exit code 1, with one line per problem, when something is missing.
import { chmodSync, copyFileSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
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
/** The worker launcher's file name on a target (`.exe` on Windows). */
export const workerFile = (target) => (target.includes('windows') ? `${WORKER}.exe` : WORKER)
/** Whether a platform package's file is its worker launcher. */
export const isWorker = (file) => file === WORKER || file === `${WORKER}.exe`
/** The sentence model (`src/search/model/mod.rs` `MODEL_FILE`). */
export const MODEL = 'all-minilm-l6-v2.i8.bin'
/** Where the data files are in the source tree. */
const DATA_SOURCE = join(root, 'src', 'search', 'embeddings')
/** The package of the files that are the same on every platform, and its folder under npm/. */
export const DATA_PACKAGE = '@codecall/native-data'
export const DATA_DIR = 'data'
/** The files the data package ships besides package.json and README.md. */
export const DATA_FILES = [MODEL]

/** Every file named `name` under `dir`, symlinks not followed (the packaging checks count copies). */
export function filesNamed(dir, name, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) filesNamed(path, name, out)
    else if (entry.isFile() && entry.name === name) out.push(path)
  }
  return out
}

/** The files a target's platform package ships besides package.json and README.md. */
export function platformFiles(target) {
  const dir = PLATFORMS[target]
  if (!dir) throw new Error(`unknown target ${target}`)
  return [`codecall.${dir}.node`, workerFile(target)]
}

/**
 * The main package's manifest as a release publishes it: `napi prepublish` adds one optional
 * dependency per target, `<name>-<platform>` at the same version, so npm installs the one platform
 * package whose `os` / `cpu` / `libc` match the user's machine; and the data package is a plain
 * dependency at the same version. The repository's package.json leaves them out: they are not on
 * the registry until the release, and `npm ci` would refuse them.
 */
export function releaseManifest(pkg) {
  const optionalDependencies = { ...pkg.optionalDependencies }
  for (const target of pkg.napi.targets) optionalDependencies[`${pkg.name}-${PLATFORMS[target]}`] = pkg.version
  const dependencies = { ...pkg.dependencies, [DATA_PACKAGE]: pkg.version }
  return { ...pkg, dependencies, optionalDependencies }
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const writeJson = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)

/**
 * Copies the data files into `npmDir`/data and every target's files from `artifacts` into its
 * platform package; writes the version (`version`, the main package's) into the data package and
 * the exact dependency on it into each platform package, so that pnpm, which links a package's own
 * dependencies beside it, puts the data package where the walk from the `.node` looks. Returns the
 * problems found.
 */
export function assemble({ artifacts, npmDir, targets, version = readJson(join(root, 'package.json')).version }) {
  const problems = []
  const dataDir = join(npmDir, DATA_DIR)
  const dataManifest = join(dataDir, 'package.json')
  if (!existsSync(dataManifest)) problems.push(`missing ${dataManifest}`)
  else {
    const data = readJson(dataManifest)
    if (data.name !== DATA_PACKAGE) problems.push(`${dataManifest} is ${data.name}, not ${DATA_PACKAGE}`)
    for (const key of ['os', 'cpu', 'libc']) if (key in data) problems.push(`${dataManifest} has "${key}": the data package is for every platform`)
    for (const file of DATA_FILES) {
      const from = join(DATA_SOURCE, file)
      if (!existsSync(from)) problems.push(`missing ${from}`)
      else {
        copyFileSync(from, join(dataDir, file))
        console.log(`${from} -> ${join(dataDir, file)}`)
      }
      if (!(data.files ?? []).includes(file)) problems.push(`${dataManifest} does not list ${file} in "files"`)
    }
    writeJson(dataManifest, { ...data, version })
  }
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
    const platform = readJson(manifest)
    const declared = platform.files ?? []
    for (const file of DATA_FILES) if (declared.includes(file)) problems.push(`${manifest} lists ${file}, which ships in ${DATA_PACKAGE}`)
    writeJson(manifest, { ...platform, dependencies: { ...platform.dependencies, [DATA_PACKAGE]: version } })
    for (const file of platformFiles(target)) {
      const from = join(artifacts, `bindings-${target}`, file)
      if (!existsSync(from) || !statSync(from).isFile()) {
        problems.push(`missing ${from}`)
        continue
      }
      if (!declared.includes(file)) problems.push(`${manifest} does not list ${file} in "files"`)
      const to = join(pkgDir, file)
      copyFileSync(from, to)
      if (isWorker(file)) chmodSync(to, 0o755)
      console.log(`${from} -> ${to}`)
    }
  }
  return problems
}

function main(argv) {
  let artifacts = 'artifacts'
  let npmDir = join(root, 'npm')
  const targets = []
  let mainManifest = null
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--npm-dir') npmDir = resolve(argv[++i] ?? '')
    else if (arg === '--release-manifest') mainManifest = resolve(argv[++i] ?? '')
    else if (arg === '--target') targets.push(argv[++i] ?? '')
    else if (arg.startsWith('-')) {
      console.error(`unknown option ${arg}`)
      return 2
    } else artifacts = arg
  }
  const pkg = readJson(join(root, 'package.json'))
  const problems = assemble({ artifacts: resolve(artifacts), npmDir, targets: targets.length ? targets : pkg.napi.targets, version: pkg.version })
  if (mainManifest && !problems.length) writeJson(mainManifest, releaseManifest(readJson(mainManifest)))
  for (const p of problems) console.error(p)
  return problems.length ? 1 : 0
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2))
}
