// What OpenTelemetry costs the engine (issue 27, docs/design/telemetry-plan.md §7): the host bridge
// workloads of bench/bridge-cpu.mjs, through `CodeCall.execute` with a 1-tool index and a host
// whose `callTool` answers at once. A = sequential `return 1 + 1` executions (p50 wall, and this
// process's CPU per execution); B = 5 executions of 1 000 sequential `await callTool('x', {})`
// (wall and CPU per call; in process isolation the workers' CPU is not counted). Three modes, each
// in its own child process, rounds interleaved (the order rotates), median of the rounds per cell:
//
// - `off`: `@opentelemetry/api` not installed. The `.node` is copied into a temp folder outside
//   this checkout and loaded through `NAPI_RS_NATIVE_LIBRARY_PATH` (same index.js); the engine
//   resolves the API from the addon's own location, where there is none.
// - `api`: the API resolves (this checkout's dev dependency), no provider registered.
// - `sdk`: `--import bench/otel-noop.mjs`: a registered SDK that records every span and metric and
//   exports nothing.
//
// Every mode gets the same worker (`CODECALL_WORKER_PATH`) and embedding table
// (`CODECALL_EMBEDDINGS_PATH`); NODE_OPTIONS is cleared for the children.
//
//   npm run build && npm run bench:telemetry          # = node bench/telemetry.mjs
//   node bench/telemetry.mjs --quick                   # small counts, one round (a smoke run)
//   node bench/telemetry.mjs --addon artifacts/before/codecall.linux-x64-gnu.node --modes off --label before
//
// Options: --rounds N (default 3; 1 with --quick), --modes off,api,sdk, --isolations thread,process,
// --before <.node> [--before-worker <exe>] (another build, e.g. the parent commit's, as mode 'before',
// interleaved), --addon <.node> (env CODECALL_BENCH_ADDON; its api/sdk copy goes to target/bench-telemetry/ so the
// API still resolves), --worker <exe> (env CODECALL_BENCH_WORKER; default: beside --addon, else
// where the addon itself would look), --label <text> (prefixes the row names).
import { execFileSync, spawnSync } from 'node:child_process'
import { accessSync, constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

import { PLATFORMS, TABLE, WORKER } from '../scripts/assemble.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const CHILD_ENV = 'CODECALL_BENCH_TELEMETRY_CHILD'
const MODES = ['off', 'api', 'sdk']
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

if (process.env[CHILD_ENV]) await child(JSON.parse(process.env[CHILD_ENV]))
else await parent()

// ---- the parent: prepares each mode, runs the children, prints the table -------------------------

async function parent() {
  const args = parseArgs(process.argv.slice(2))
  const quick = args.quick === true
  const rounds = Number(args.rounds ?? (quick ? 1 : 3))
  // --before <.node>: another build (the parent commit's) as a fourth mode, 'before', run as 'off'
  // is (no API resolvable) and interleaved with the others — "within noise of today".
  const allModes = args.before ? ['before', ...MODES] : MODES
  const modes = list(args.modes, allModes)
  const isolations = list(args.isolations, process.platform === 'win32' ? ['thread'] : ['thread', 'process'])
  for (const m of modes) if (!allModes.includes(m)) throw new Error(`unknown mode '${m}' (${allModes.join(', ')})`)
  const counts = quick ? { warm: 20, a: 100, bRuns: 2, bCalls: 100 } : { warm: 100, a: 1000, bRuns: 5, bCalls: 1000 }

  const target = hostTarget()
  const addonOption = args.addon ?? process.env.CODECALL_BENCH_ADDON
  const addon = resolve(addonOption ?? rootAddon(target))
  if (!existsSync(addon)) throw new Error(`${addon} not found: run \`npm run build\` first (or pass --addon)`)
  const workerOption = args.worker ?? process.env.CODECALL_BENCH_WORKER
  const worker = resolve(workerOption ?? (addonOption && isExecutable(join(dirname(addon), WORKER)) ? join(dirname(addon), WORKER) : locateWorker(addon, target)))
  if (!isExecutable(worker)) throw new Error(`${worker} is not an executable worker (pass --worker)`)
  const table = join(root, 'src', 'search', 'embeddings', TABLE)

  // `off`: the addon alone in a folder outside this checkout, where no @opentelemetry/api resolves.
  const offDir = mkdtempSync(join(tmpdir(), 'codecall-bench-telemetry-'))
  if (!relative(root, offDir).startsWith('..')) throw new Error(`${offDir} is inside ${root}`)
  const offAddon = join(offDir, basename(addon))
  copyFileSync(addon, offAddon)
  try {
    createRequire(join(offDir, 'x.js')).resolve('@opentelemetry/api')
    throw new Error(`@opentelemetry/api resolves from ${offDir}: the 'off' mode would not be "not installed"`)
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND') throw e
  }
  let before = null
  if (args.before) {
    const beforeAddon = resolve(args.before)
    const beforeWorker = resolve(args['before-worker'] ?? (isExecutable(join(dirname(beforeAddon), WORKER)) ? join(dirname(beforeAddon), WORKER) : locateWorker(beforeAddon, target)))
    if (!isExecutable(beforeWorker)) throw new Error(`${beforeWorker} is not an executable worker (pass --before-worker)`)
    const dir = mkdtempSync(join(tmpdir(), 'codecall-bench-telemetry-before-'))
    before = { addon: join(dir, basename(beforeAddon)), worker: beforeWorker, dir, from: beforeAddon }
    copyFileSync(beforeAddon, before.addon)
  }
  // `api`/`sdk` with --addon: a copy inside this checkout, so the API resolves from it.
  let inRepoAddon = null
  if (addonOption) {
    const dir = join(root, 'target', 'bench-telemetry')
    mkdirSync(dir, { recursive: true })
    inRepoAddon = join(dir, basename(addon))
    copyFileSync(addon, inRepoAddon)
  }

  const baseEnv = { ...process.env }
  for (const k of ['NAPI_RS_NATIVE_LIBRARY_PATH', 'CODECALL_WORKER_PATH', 'CODECALL_EMBEDDINGS_PATH', 'NODE_OPTIONS', CHILD_ENV]) delete baseEnv[k]
  const spec = (mode) => {
    const w = mode === 'before' ? before.worker : worker
    const env = { ...baseEnv, CODECALL_WORKER_PATH: w, CODECALL_EMBEDDINGS_PATH: table }
    const nativePath = mode === 'off' ? offAddon : mode === 'before' ? before.addon : inRepoAddon
    if (nativePath) env.NAPI_RS_NATIVE_LIBRARY_PATH = nativePath
    const nodeArgs = mode === 'sdk' ? ['--import', join(root, 'bench', 'otel-noop.mjs')] : []
    env[CHILD_ENV] = JSON.stringify({ mode, isolations, counts, addon: nativePath ?? join(root, basename(addon)), worker: w })
    return { env, nodeArgs }
  }

  const label = args.label ? `${args.label} ` : ''
  const command = `node bench/telemetry.mjs${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`
  console.error(`${command}\naddon ${addon}\nworker ${worker}\n${rounds} round(s) × modes ${modes.join(', ')} × ${isolations.join(', ')}`)
  /** mode → round results */
  const results = Object.fromEntries(modes.map((m) => [m, []]))
  try {
    for (let r = 0; r < rounds; r++) {
      const order = modes.map((_, i) => modes[(i + r) % modes.length])
      for (const mode of order) {
        const { env, nodeArgs } = spec(mode)
        const t = performance.now()
        const p = spawnSync(process.execPath, [...nodeArgs, fileURLToPath(import.meta.url)], { cwd: root, env, encoding: 'utf8', timeout: 15 * 60_000 })
        const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('{'))
        if (p.status !== 0 || !line) throw new Error(`the '${mode}' child failed (status ${p.status}${p.signal ? `, ${p.signal}` : ''}):\n${p.stdout}${p.stderr}`)
        const out = JSON.parse(line)
        results[mode].push(out)
        console.error(`round ${r + 1}/${rounds} ${mode} (${((performance.now() - t) / 1000).toFixed(1)} s): ${JSON.stringify(out.cells)}`)
      }
    }
  } finally {
    rmSync(offDir, { recursive: true, force: true })
    if (before) rmSync(before.dir, { recursive: true, force: true })
  }

  const cols = [
    ['A_p50_us', 'A p50', 'µs'],
    ['A_cpu_us', 'A CPU', 'µs/exec'],
    ['B_wall_us', 'B wall', 'µs/call'],
    ['B_cpu_us', 'B CPU', 'µs/call'],
  ]
  const header = isolations.flatMap((iso) => cols.map(([, name, unit]) => `${iso} ${name}${iso === 'process' && name.includes('CPU') ? ', host' : ''} (${unit})`))
  const rows = modes.map((mode) => {
    const cells = isolations.flatMap((iso) =>
      cols.map(([key]) => {
        const v = median(results[mode].map((o) => o.cells[iso][key]))
        return key.startsWith('B') ? v.toFixed(1) : v.toFixed(0)
      }),
    )
    return `| ${label}${mode} | ${cells.join(' | ')} |`
  })
  const commit = git(['rev-parse', '--short', 'HEAD'])
  const dirty = git(['status', '--porcelain', '--untracked-files=no'])
  console.log(`\n| mode | ${header.join(' | ')} |\n|---|${header.map(() => '---:').join('|')}|\n${rows.join('\n')}`)
  console.log(`\n\`${command}\` — ${rounds === 1 ? 'one round' : `median of ${rounds} rounds`}; A = ${counts.a} executions, B = ${counts.bRuns} × ${counts.bCalls} calls;` +
    ` checkout ${commit}${dirty ? ' (modified)' : ''}, addon ${relative(root, addon) || addon}, Node ${process.version}.`)
  for (const mode of modes) {
    const last = results[mode].at(-1)
    const spans = last.exportedSpans === null ? '' : `, ${last.exportedSpans} spans exported by otel-noop.mjs`
    console.log(`- ${mode}: @opentelemetry/api ${last.apiLoaded ? 'loaded' : 'not loaded'}${spans}; addon ${last.addonMapped ?? '?'}`)
  }
}

// ---- a child: one mode, every isolation ----------------------------------------------------------

async function child({ mode, isolations, counts, addon, worker }) {
  const require = createRequire(import.meta.url)
  const { CodeCall } = require('..')
  const now = () => performance.now()
  const cpu = () => {
    const u = process.cpuUsage()
    return u.user + u.system
  }
  const A = { script: 'return 1 + 1' }
  const bScript = (n) => ({ script: `let n = 0; for (let i = 0; i < ${n}; i++) { await callTool('x', {}); n++ } return n` })
  const B = bScript(counts.bCalls)
  const host = { callTool: () => 1 }
  const expect = (r, value, what) => {
    if (r.status !== 'ok' || r.result !== value) throw new Error(`${what}: ${JSON.stringify(r).slice(0, 500)}`)
  }

  const cells = {}
  for (const isolation of isolations) {
    const cc = new CodeCall({ vm: { preset: 'experimental', isolation } })
    cc.setTools([{ name: 'x', description: 'Answers at once', inputSchema: { type: 'object' } }])
    for (let i = 0; i < counts.warm; i++) expect(await cc.execute(A, host), 2, 'A (warm-up)')
    expect(await cc.execute(bScript(Math.min(100, counts.bCalls)), host), Math.min(100, counts.bCalls), 'B (warm-up)')
    if (isolation === 'process') checkWorkers(worker)

    let c = cpu()
    const s = []
    for (let i = 0; i < counts.a; i++) {
      const t = now()
      const r = await cc.execute(A, host)
      s.push(now() - t)
      if (r.status !== 'ok') expect(r, 2, 'A')
    }
    const aCpu = (cpu() - c) / counts.a
    s.sort((x, y) => x - y)

    const calls = counts.bRuns * counts.bCalls
    c = cpu()
    const t0 = now()
    for (let r = 0; r < counts.bRuns; r++) expect(await cc.execute(B, host), counts.bCalls, 'B')
    const bWall = ((now() - t0) * 1000) / calls
    const bCpu = (cpu() - c) / calls
    cells[isolation] = { A_p50_us: s[Math.floor(s.length / 2)] * 1000, A_cpu_us: aCpu, B_wall_us: bWall, B_cpu_us: bCpu }
    await cc.dispose()
  }

  const apiLoaded = Object.keys(require.cache).some((k) => k.includes(`${sep}@opentelemetry${sep}api${sep}`))
  const addonMapped = mappedAddon()
  if (mode === 'off' || mode === 'before') {
    if (apiLoaded) throw new Error("'off' mode: @opentelemetry/api was loaded")
    if (addonMapped && addonMapped !== realpathSync(addon)) throw new Error(`'off' mode: the addon loaded is ${addonMapped}, not ${addon}`)
  }
  const exported = globalThis[Symbol.for('codecall.bench.exportedSpans')]
  console.log(JSON.stringify({ mode, cells, apiLoaded, exportedSpans: exported ? exported.spans : null, addonMapped }))
}

/** Process isolation really runs in `worker` (Linux: a child process of ours runs that file), not a fallback to threads. */
function checkWorkers(worker) {
  if (process.platform !== 'linux') return
  const want = realpathSync(worker)
  const mine = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid
      } catch {
        return false
      }
    })
    .map((d) => {
      try {
        return readlinkSync(`/proc/${d}/exe`)
      } catch {
        return null
      }
    })
  if (!mine.includes(want)) throw new Error(`process isolation: no child process runs ${want} (children: ${mine.join(', ') || 'none'}); did it fall back to threads?`)
}

/** The `.node` this process has mapped (Linux), or null. */
function mappedAddon() {
  if (process.platform !== 'linux') return null
  const hits = new Set(
    readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .map((l) => l.slice(l.indexOf('/')))
      .filter((p) => p.startsWith('/') && p.endsWith('.node')),
  )
  return hits.size === 1 ? [...hits][0] : hits.size ? [...hits].join(', ') : null
}

// ---- helpers -------------------------------------------------------------------------------------

function parseArgs(argv) {
  const out = {}
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i])
    if (!m) throw new Error(`unexpected argument ${argv[i]}`)
    if (m[1] === 'quick') out.quick = true
    else if (['rounds', 'modes', 'isolations', 'addon', 'worker', 'label', 'before', 'before-worker'].includes(m[1])) {
      const v = m[2] ?? argv[++i]
      if (v === undefined) throw new Error(`--${m[1]} needs a value`)
      out[m[1]] = v
    } else throw new Error(`unknown option --${m[1]}`)
  }
  return out
}

function list(value, fallback) {
  return value ? value.split(',').map((s) => s.trim()).filter(Boolean) : fallback
}

function hostTarget() {
  const { platform, arch } = process
  const cpu = arch === 'x64' ? 'x86_64' : arch === 'arm64' ? 'aarch64' : arch
  if (platform === 'linux') return `${cpu}-unknown-linux-${process.report?.getReport?.().header?.glibcVersionRuntime ? 'gnu' : 'musl'}`
  if (platform === 'darwin') return `${cpu}-apple-darwin`
  if (platform === 'win32') return 'x86_64-pc-windows-msvc'
  throw new Error(`no target for ${platform}-${arch}`)
}

/** `npm run build`'s addon at the repo root (the file index.js loads). */
function rootAddon(target) {
  return join(root, `codecall.${PLATFORMS[target]}.node`)
}

/** Where the addon at `addon` finds its worker (src/sandbox/process/locate.rs, release profile). */
function locateWorker(addon, target) {
  const dir = dirname(addon)
  const candidates = [join(dir, WORKER), join(dir, 'target', target, 'release', WORKER), join(dir, 'target', 'release', WORKER)]
  const found = candidates.find(isExecutable)
  if (!found) throw new Error(`no ${WORKER} found (looked in ${candidates.join(', ')}): run \`npm run build\` or pass --worker`)
  return found
}

function isExecutable(p) {
  try {
    accessSync(p, constants.X_OK)
    return statSync(p).isFile()
  } catch {
    return false
  }
}

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return '?'
  }
}
