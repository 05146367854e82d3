// `npm run test:platforms`: every target built under artifacts/ (`npm run build:target`) checked
// the way its users' machines will take it.
//
// 1. Loader checks (`binaries.mjs`) of each `.node` and worker: format and architecture; Linux gnu
//    needs at most GLIBC_2.17 and only glibc's own libraries; musl needs nothing from glibc; macOS:
//    minimum OS as in the spec, only system dylibs, signed on arm64, an `@rpath/` install name;
//    Windows: a PE32+ DLL importing only Windows' own DLLs. Nothing that Node does not provide
//    (`napi_*`) is left undefined.
// 2. Packages: each platform package and the data package assembled (`scripts/assemble.mjs`) and
//    packed, the main package packed with the dependencies a release adds (`releaseManifest`). What
//    each holds (no platform package a data file; the data package exactly its files), and sizes
//    against their budgets (`BUDGET`, installed bytes: a package or a launcher worker past its
//    budget is a FAIL naming its files), recorded in .platforms-test/sizes.json. For each of the
//    seven platforms, `npm install` of the main tarball (npm told that platform with
//    --os/--cpu/--libc, the tarballs standing in for the registry through `overrides`) must install
//    exactly the main, the data and that platform's package, one copy of the model, and the
//    model must be where the addon looks for it from the installed `.node` (`dataPlaces`, a copy
//    of `model_places`' walk in src/search/model/mod.rs) — for macOS and musl too, which do not
//    run here.
// 3. What runs here runs, from those installs, with smoke.cjs: linux-arm64-gnu under qemu-user with
//    Node for arm64 from npm; win32-x64 under Wine with Node for Windows from npm; linux-x64-gnu with
//    this machine's Node. macOS and musl cannot run here; their loader checks are what is checked.
//
//   npm run test:platforms [-- --require <triple,...>] [--all] [--no-run] [--no-wine]
//
// --require: fail unless these targets are built (CI: both Linux gnu). --all: all seven.
// Exit 1 if any check fails.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'

import { DATA_DIR, DATA_FILES, DATA_PACKAGE, MODEL, PLATFORMS, WORKER, assemble, filesNamed, isWorker, platformFiles, releaseManifest } from '../assemble.mjs'
import { checkBinary } from './binaries.mjs'
import { ARTIFACTS, TARGET_DIR } from './build-target.mjs'

const HOOKS_TARGET_DIR = `${TARGET_DIR}-hooks`
import { log, nodeArm64, nodeWin, qemuArm64, root, sh, wine, zig } from './tools.mjs'

const argv = process.argv.slice(2)
const flag = (name) => argv.includes(name)
const option = (name) => {
  const i = argv.indexOf(name)
  return i >= 0 ? (argv[i + 1] ?? '') : null
}
const ALL = Object.keys(PLATFORMS)
const required = flag('--all') ? ALL : (option('--require')?.split(',').filter(Boolean) ?? [])
for (const t of required) {
  if (!PLATFORMS[t]) {
    console.error(`unknown target ${t}; one of: ${ALL.join(', ')}`)
    process.exit(2)
  }
}
const stage = join(root, '.platforms-test')

let failures = 0
function record(ok, what, detail = '') {
  if (!ok) failures++
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? ` — ${String(detail).split('\n').join('\n     ')}` : ''}`)
}
function check(what, fn) {
  try {
    record(true, what, fn())
  } catch (e) {
    record(false, what, e?.stack ?? e)
  }
}

// ---- 1. loader checks ----------------------------------------------------------------------------

const built = ALL.filter((t) => existsSync(join(ARTIFACTS, `bindings-${t}`, platformFiles(t)[0])))
for (const t of ALL.filter((t) => !built.includes(t))) {
  record(!required.includes(t), `${t}: not built`, `npm run build:target -- ${t}`)
}
if (!built.length) {
  console.log('nothing built under artifacts/: npm run build:target -- <triple> | --all')
  process.exit(required.length ? 1 : 0)
}
for (const target of built) {
  const dir = join(ARTIFACTS, `bindings-${target}`)
  for (const file of platformFiles(target)) {
    check(`${target}: ${file}`, () => {
      const { problems, summary } = checkBinary(target, isWorker(file) ? 'worker' : 'addon', join(dir, file))
      if (problems.length) throw new Error(`${summary}\n${problems.join('\n')}`)
      return summary
    })
  }
}

// ---- 2. packages, and which one npm picks for each platform --------------------------------------

rmSync(stage, { recursive: true, force: true })
const packs = join(stage, 'packs')
mkdirSync(packs, { recursive: true })
const npmDir = join(stage, 'npm')
cpSync(join(root, 'npm'), npmDir, { recursive: true })
const problems = assemble({ artifacts: ARTIFACTS, npmDir, targets: built })
for (const p of problems) record(false, 'assemble', p)

const run = (cmd, args, cwd, options = {}) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options })
const pack = (dir) => {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', packs], dir))
  return { ...info, tarball: join(packs, info.filename) }
}
// Unbuilt targets are packed as their manifest alone: enough for npm to choose between them.
const platformPacks = Object.fromEntries(ALL.map((t) => [t, pack(join(npmDir, PLATFORMS[t]))]))
const data = pack(join(npmDir, DATA_DIR))

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const mainStage = join(stage, 'main')
mkdirSync(mainStage, { recursive: true })
const rawMain = pack(root)
sh('tar', ['xzf', rawMain.tarball, '-C', mainStage])
rmSync(rawMain.tarball)
writeFileSync(join(mainStage, 'package', 'package.json'), `${JSON.stringify(releaseManifest(pkg), null, 2)}\n`)
const main = pack(join(mainStage, 'package'))

/**
 * Installed bytes (npm's `unpackedSize`) each package may take, and the launcher worker. The
 * issue's goal: a platform package at most half of what it was (23.7 MB for linux-x64-gnu before
 * the launcher and the data package), the data counted once. Set from the sizes measured with
 * both changes; a budget is raised on purpose, in the same commit as what needs it.
 * - Platform packages: the `.node` (11.0–12.2 MB) and the launcher (0.3 MB). musl keeps the whole
 *   engine in its worker (a static musl executable cannot `dlopen`): two ≈ 12 MB files. Raised
 *   from 12 to 13 MB with the run store, the journal's replay and Seatbelt (issues 42, 43): the
 *   linux-x64-gnu package measured 12.12 MB (`.node` 11.78 MB), 1 MB of room for the Windows launcher.
 * - The launcher: ≈ 0.3 MB; past 1 MB, the crate has been linked back into it.
 * - The data package: the sentence model, 23.3 MB.
 */
const MB = 1e6
const BUDGET = {
  main: 0.6 * MB,
  data: 25 * MB,
  platform: (target) => (target.includes('musl') ? 25 * MB : 13 * MB),
  worker: (target) => (target.includes('musl') ? null : 1 * MB),
}

const mb = (n) => `${(n / 1e6).toFixed(2)} MB`
const filesOf = (p) => Object.fromEntries(p.files.map((f) => [f.path, f.size]))
const listed = (p) => p.files.filter((f) => !/^(README\.md|package\.json)$/.test(f.path)).map((f) => `${f.path} ${mb(f.size)}`)
const sizes = {
  main: { name: main.name, packed: main.size, unpacked: main.unpackedSize, budget: BUDGET.main },
  data: { name: data.name, packed: data.size, unpacked: data.unpackedSize, budget: BUDGET.data, files: filesOf(data) },
}
console.log('\n| package | packed | installed | budget | files |\n|---|---|---|---|---|')
console.log(`| ${main.name} | ${mb(main.size)} | ${mb(main.unpackedSize)} | ${mb(BUDGET.main)} | ${main.entryCount} |`)
console.log(`| ${data.name} | ${mb(data.size)} | ${mb(data.unpackedSize)} | ${mb(BUDGET.data)} | ${listed(data).join(', ')} |`)
for (const t of built) {
  const p = platformPacks[t]
  sizes[t] = { name: p.name, packed: p.size, unpacked: p.unpackedSize, budget: BUDGET.platform(t), workerBudget: BUDGET.worker(t), files: filesOf(p) }
  console.log(`| ${p.name} | ${mb(p.size)} | ${mb(p.unpackedSize)} | ${mb(BUDGET.platform(t))} | ${listed(p).join(', ')} |`)
}
console.log('')

/** A FAIL naming the package's files and sizes when it is past its budget. */
function budget(what, p, limit) {
  const over = p.unpackedSize > limit
  const detail = over ? `${mb(p.unpackedSize)}, over budget: ${listed(p).join(', ')}` : `${mb(p.unpackedSize)} in ${p.entryCount} files`
  record(!over, `${what} installs at most ${mb(limit)}`, detail)
  return !over
}
sizes.main.ok = budget(main.name, main, BUDGET.main)
sizes.data.ok = budget(data.name, data, BUDGET.data)
check(`${data.name}: exactly its manifest, README and ${DATA_FILES.join(', ')}; no os, cpu or libc`, () => {
  const want = ['README.md', 'package.json', ...DATA_FILES].sort()
  const has = data.files.map((f) => f.path).sort()
  if (JSON.stringify(has) !== JSON.stringify(want)) throw new Error(`has ${has.join(', ')}; expected ${want.join(', ')}`)
  const manifest = JSON.parse(readFileSync(join(npmDir, DATA_DIR, 'package.json'), 'utf8'))
  const pinned = ['os', 'cpu', 'libc'].filter((k) => k in manifest)
  if (pinned.length) throw new Error(`it has ${pinned.join(', ')}`)
  if (manifest.version !== pkg.version) throw new Error(`version ${manifest.version}, not ${pkg.version}`)
  return `${pkg.version}`
})
for (const t of built) {
  const p = platformPacks[t]
  sizes[t].ok = budget(p.name, p, BUDGET.platform(t))
  const worker = p.files.find((f) => isWorker(f.path))
  if (worker && BUDGET.worker(t) !== null) {
    const over = worker.size > BUDGET.worker(t)
    sizes[t].workerOk = !over
    record(!over, `${PLATFORMS[t]}: the launcher ${WORKER} is at most ${mb(BUDGET.worker(t))}`, `${mb(worker.size)}${over ? ': the engine is linked into it again?' : ''}`)
  }
  check(`${p.name}: no data file, and depends on ${DATA_PACKAGE}@${pkg.version}`, () => {
    const bins = p.files.filter((f) => DATA_FILES.includes(f.path) || f.path.endsWith('.bin')).map((f) => f.path)
    if (bins.length) throw new Error(`it ships ${bins.join(', ')}`)
    const dep = JSON.parse(readFileSync(join(npmDir, PLATFORMS[t], 'package.json'), 'utf8')).dependencies?.[DATA_PACKAGE]
    if (dep !== pkg.version) throw new Error(`dependencies["${DATA_PACKAGE}"] is ${dep}`)
  })
}
writeFileSync(join(stage, 'sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`)
console.log('')

/** Where the addon looks for the data package from its `.node`'s directory (`package_places`). */
function dataPlaces(dir) {
  const places = []
  for (let a = realpathSync(dir); ; a = dirname(a)) {
    if (basename(a) !== 'node_modules') places.push(join(a, 'node_modules', ...DATA_PACKAGE.split('/'), MODEL))
    if (dirname(a) === a) return places
  }
}

/** npm's own platform flags for a target. */
function npmPlatform(target) {
  const dir = PLATFORMS[target]
  const [os, cpu, abi] = dir.split('-')
  const flags = [`--os=${os}`, `--cpu=${cpu}`]
  if (os === 'linux') flags.push(`--libc=${abi === 'musl' ? 'musl' : 'glibc'}`)
  return flags
}
const projects = {}
for (const target of ALL) {
  check(`npm install on ${PLATFORMS[target]} picks @codecall/native-${PLATFORMS[target]} alone`, () => {
    const project = join(stage, `user-${PLATFORMS[target]}`)
    mkdirSync(project, { recursive: true })
    const overrides = Object.fromEntries(ALL.map((t) => [platformPacks[t].name, `file:${platformPacks[t].tarball}`]))
    overrides[data.name] = `file:${data.tarball}`
    const manifest = { name: 'codecall-user', version: '1.0.0', private: true, dependencies: { [main.name]: `file:${main.tarball}` }, overrides }
    writeFileSync(join(project, 'package.json'), JSON.stringify(manifest, null, 2))
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', ...npmPlatform(target)], project)
    const installed = readdirSync(join(project, 'node_modules', '@codecall')).sort()
    const want = ['native', 'native-data', `native-${PLATFORMS[target]}`].sort()
    if (JSON.stringify(installed) !== JSON.stringify(want)) throw new Error(`installed ${installed.join(', ')}; expected ${want.join(', ')}`)
    projects[target] = project
    return `${npmPlatform(target).join(' ')}`
  })
  if (!projects[target]) continue
  check(`${PLATFORMS[target]}: one copy of ${MODEL}, found from the installed .node's place`, () => {
    const project = projects[target]
    const copies = filesNamed(join(project, 'node_modules'), MODEL)
    if (copies.length !== 1) throw new Error(`${copies.length} copies: ${copies.join(', ') || 'none'}`)
    const platformDir = join(project, 'node_modules', '@codecall', `native-${PLATFORMS[target]}`)
    const hit = dataPlaces(platformDir).find((p) => existsSync(p))
    if (!hit) throw new Error(`not found from ${realpathSync(platformDir)}: looked in ${dataPlaces(platformDir).join(', ')}`)
    if (realpathSync(hit) !== realpathSync(copies[0])) throw new Error(`the walk reaches ${hit}, not ${copies[0]}`)
    return relative(project, hit)
  })
}

// ---- 3. run what runs here -----------------------------------------------------------------------

/**
 * The Windows library with the `test-hooks` feature, for the Wine checks of a stuck and a crashing
 * worker; built with the same zig road as the release, in its own target dir. The release profile
 * with debug assertions on: the feature refuses a build without them, and a debug cdylib exports
 * every Rust symbol, past PE's 65 535. `null`, with a failed check, when it does not build.
 */
function windowsHooksLibrary() {
  const triple = 'x86_64-pc-windows-gnu'
  const stub = join(root, '.cross', 'libnode-stub')
  mkdirSync(stub, { recursive: true })
  writeFileSync(join(stub, 'libnode.dll'), '')
  writeFileSync(join(stub, 'libnode.a'), '!<arch>\n')
  try {
    execFileSync('cargo-zigbuild', ['rustc', '--release', '--locked', '--lib', '--crate-type', 'cdylib', '--features', 'test-hooks', '--target', triple, '--target-dir', HOOKS_TARGET_DIR], {
      cwd: root,
      env: { ...process.env, ...zig(), LIBNODE_PATH: stub, CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS: 'true', [`CFLAGS_${triple.replace(/-/g, '_')}`]: '-fvisibility=hidden' },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  } catch (e) {
    record(false, 'win32-x64: the test-hooks library builds', e.message)
    return null
  }
  return join(HOOKS_TARGET_DIR, triple, 'release', 'codecall_native.dll')
}

function smoke(target, label, command, args, env, seccomp, expected = 8) {
  const project = projects[target]
  if (!project) return record(false, `${label}: no install to run`)
  cpSync(join(root, 'scripts', 'platforms', 'smoke.cjs'), join(project, 'smoke.cjs'))
  const reportFile = join(project, 'smoke-report.json')
  rmSync(reportFile, { force: true })
  const started = Date.now()
  try {
    // No CODECALL_EMBEDDINGS_PATH: the installed addon must find the data package by itself.
    const { CODECALL_EMBEDDINGS_PATH: _, ...base } = process.env
    run(command, [...args, 'smoke.cjs', 'smoke-report.json'], project, { env: { ...base, ...env, CODECALL_SMOKE_SECCOMP: seccomp }, timeout: 600_000 })
  } catch (e) {
    record(false, `${label}: the smoke test did not finish`, `${e.message}\n${e.stderr ?? ''}`)
  }
  if (!existsSync(reportFile)) return record(false, `${label}: no report`)
  const report = JSON.parse(readFileSync(reportFile, 'utf8'))
  log(`${label}: Node ${report.node} ${report.platform}-${report.arch}, ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const c of report.checks) record(c.ok, `${label}: ${c.name}`, c.ok ? `${c.detail} (${c.ms} ms)` : c.detail)
  if (report.checks.length < expected) record(false, `${label}: ${report.checks.length} of ${expected} checks ran`)
}

if (flag('--no-run')) {
  log('--no-run: nothing executed')
} else {
  if (built.includes('x86_64-unknown-linux-gnu') && process.platform === 'linux' && process.arch === 'x64') {
    smoke('x86_64-unknown-linux-gnu', 'linux-x64-gnu (this machine)', process.execPath, [], {}, 'on')
  }
  if (built.includes('aarch64-unknown-linux-gnu')) {
    const env = qemuArm64()
    // qemu-user implements no seccomp(2): the worker runs without its filter and must say so.
    smoke('aarch64-unknown-linux-gnu', 'linux-arm64-gnu (qemu-user)', nodeArm64(), [], env, 'off')
  }
  // No musl Node runs here, but the musl workers are static executables: this machine's kernel runs
  // them, driven by the gnu addon of the same version (CODECALL_WORKER_PATH), so the musl build of
  // the engine, its fences and the pipe protocol run for real.
  for (const [musl, gnu, node, env, seccomp] of [
    ['x86_64-unknown-linux-musl', 'x86_64-unknown-linux-gnu', () => process.execPath, () => ({}), 'on'],
    ['aarch64-unknown-linux-musl', 'aarch64-unknown-linux-gnu', nodeArm64, qemuArm64, 'off'],
  ]) {
    if (!built.includes(musl) || !built.includes(gnu)) continue
    if (gnu === 'x86_64-unknown-linux-gnu' && !(process.platform === 'linux' && process.arch === 'x64')) continue
    const worker = join(ARTIFACTS, `bindings-${musl}`, WORKER)
    smoke(gnu, `${PLATFORMS[musl]} worker (static, under the ${PLATFORMS[gnu]} addon)`, node(), [], { ...env(), CODECALL_WORKER_PATH: worker }, seccomp)
  }
  if (built.includes('x86_64-pc-windows-msvc') && !flag('--no-wine')) {
    const { env, wineBin } = wine()
    // Process isolation (issue 43): the worker launcher `codecall-worker.exe`, in its job object.
    smoke('x86_64-pc-windows-msvc', 'win32-x64 (Wine)', wineBin, [nodeWin()], { ...env, NODE_SKIP_PLATFORM_CHECK: '1' }, 'wine')
    // The hard cases (a worker stuck past its deadline is killed, a crash is contained), with a
    // test-hooks build of the Windows library that the installed launcher maps instead.
    const hooks = windowsHooksLibrary()
    if (hooks) {
      const wineHooks = `Z:${hooks.replace(/\//g, '\\')}`
      const hooksEnv = { ...env, NODE_SKIP_PLATFORM_CHECK: '1', CODECALL_WORKER_LIBRARY: wineHooks, CODECALL_SMOKE_HOOKS: '1' }
      smoke('x86_64-pc-windows-msvc', 'win32-x64 (Wine, test-hooks worker)', wineBin, [nodeWin()], hooksEnv, 'wine', 3)
    }
  }
}

if (failures) {
  console.log(`\n${failures} platform check(s) failed`)
  process.exit(1)
}
console.log(`\nplatform checks passed (${built.length} of ${ALL.length} targets built)`)
