// One run, same workloads, side by side: @codecall/native's Sandbox (worker processes, the default
// on Linux and macOS, and threads) vs node:vm, vm2, isolated-vm, quickjs-emscripten (asyncify build)
// and `run`. Prints Markdown tables of medians and ratios.
//
//   node --expose-gc bench/sandbox.mjs            # everything (a few minutes)
//   node --expose-gc bench/sandbox.mjs A B        # some workloads
//
// Peers are dev dependencies; isolated-vm needs its native build:
//   npm rebuild isolated-vm --foreground-scripts --ignore-scripts=false
//
// Workloads:
//   A  trivial `return 1 + 1`, a fresh context each time: p50 latency
//   B  1000 sequential `await callTool` in one execution: µs per call
//   C  200 concurrent executions × 10 calls to a host tool that takes 2 ms: wall time (ideal 20 ms)
//   D  a CPU-bound script: median ms
//   E  memory per execution parked awaiting the host (RSS delta / N, measured in a child process;
//      for process isolation the workers' RSS is counted too)
//   W  worker processes: start time (new sandbox to first result, and spawn to ready) and RSS
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import vm from 'node:vm'

const require = createRequire(import.meta.url)
const self = fileURLToPath(import.meta.url)

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms

// ---- engines: each runs `script` (an async function body that may call `callTool(name, input)`)

const NATIVE = '@codecall/native'
const NATIVE_THREAD = '@codecall/native (thread)'

function nativeEngine(isolation = 'process') {
  const { Sandbox } = require('..')
  const sandbox = new Sandbox({ preset: 'experimental', maxIterations: 1e9, maxToolCalls: 1e6, timeoutMs: 60_000, maxQueue: 100_000, isolation })
  if (sandbox.isolation !== isolation) throw new Error(`runs in ${sandbox.isolation}: ${sandbox.warnings.join('; ')}`)
  return {
    name: isolation === 'process' ? NATIVE : NATIVE_THREAD,
    async run(script, callTool) {
      const r = await sandbox.execute(script, { callTool })
      if (r.status !== 'ok') throw new Error(`native: ${JSON.stringify(r.error)}`)
      return r.result
    },
    close: () => sandbox.dispose(),
  }
}

function nodeVmEngine() {
  return {
    name: 'node:vm',
    async run(script, callTool) {
      const context = vm.createContext({ callTool })
      return vm.runInContext(`(async () => {${script}\n})()`, context)
    },
    close() {},
  }
}

function vm2Engine() {
  const { VM } = require('vm2')
  return {
    name: 'vm2',
    async run(script, callTool) {
      const machine = new VM({ sandbox: { callTool }, timeout: 60_000 })
      return machine.run(`(async () => {${script}\n})()`)
    },
    close() {},
  }
}

function isolatedVmEngine() {
  const ivm = require('isolated-vm')
  const isolate = new ivm.Isolate({ memoryLimit: 128 })
  return {
    name: 'isolated-vm',
    async run(script, callTool) {
      const context = await isolate.createContext()
      const ref = new ivm.Reference(async (name, input) => callTool(name, input))
      await context.evalClosure(
        `globalThis.callTool = (name, input) => $0.apply(undefined, [name, input], { arguments: { copy: true }, result: { promise: true, copy: true } })`,
        [ref],
      )
      try {
        return await context.eval(`(async () => {${script}\n})()`, { promise: true, copy: true })
      } finally {
        context.release()
      }
    },
    close: () => isolate.dispose(),
  }
}

async function quickjsEmscriptenEngine() {
  const { newQuickJSAsyncWASMModule } = await import('quickjs-emscripten')
  const module = await newQuickJSAsyncWASMModule()
  // An asyncify module can suspend one call at a time: executions run one after another.
  let queue = Promise.resolve()
  return {
    name: 'quickjs-emscripten',
    run(script, callTool) {
      const job = queue.then(async () => {
        const ctx = module.newContext()
        ctx.runtime.setMemoryLimit(128 * 1024 * 1024)
        try {
          const fn = ctx.newAsyncifiedFunction('callTool', async (nameHandle, inputHandle) => {
            const out = await callTool(ctx.getString(nameHandle), inputHandle ? ctx.dump(inputHandle) : undefined)
            return ctx.newString(JSON.stringify(out ?? null))
          })
          ctx.setProp(ctx.global, '__callTool', fn)
          fn.dispose()
          // The asyncified call returns synchronously inside the guest.
          const code = `const callTool = (n, i) => JSON.parse(__callTool(n, i)); (() => {${script.replaceAll('await ', '')}\n})()`
          const result = await ctx.evalCodeAsync(code)
          const handle = ctx.unwrapResult(result)
          const value = ctx.dump(handle)
          handle.dispose()
          return value
        } finally {
          ctx.dispose()
        }
      })
      queue = job.catch(() => {})
      return job
    },
    close() {},
  }
}

async function runEngine() {
  const { createRunner, setMaxWorkers } = await import('run')
  setMaxWorkers(256)
  const runner = createRunner({ limits: { timeoutMs: 60_000, maxBridgeRequests: 100_000, memoryLimitBytes: 128 * 1024 * 1024 } })
  return {
    name: 'run',
    async run(script, callTool) {
      const r = await runner.run({
        source: `const callTool = (n, i) => tools.callTool(n, i);\n${script}`,
        hostFunctions: { tools: { callTool } },
      })
      if (r.status !== 'completed') throw new Error(`run: ${r.status}`)
      return r.value
    },
    close() {},
  }
}

const factories = {
  [NATIVE]: () => nativeEngine('process'),
  [NATIVE_THREAD]: () => nativeEngine('thread'),
  'node:vm': nodeVmEngine,
  vm2: vm2Engine,
  'isolated-vm': isolatedVmEngine,
  'quickjs-emscripten': quickjsEmscriptenEngine,
  run: runEngine,
}

async function open(name) {
  try {
    return await factories[name]()
  } catch (e) {
    return { name, unavailable: e.message.split('\n')[0] }
  }
}

// ---- workloads ------------------------------------------------------------------------------

const identity = (_name, input) => input

async function workloadA(engine) {
  const iterations = engine.name === 'quickjs-emscripten' || engine.name === 'run' ? 200 : 500
  for (let i = 0; i < 20; i++) await engine.run('return 1 + 1', identity)
  const samples = []
  for (let i = 0; i < iterations; i++) {
    const t = now()
    const v = await engine.run('return 1 + 1', identity)
    samples.push(now() - t)
    if (v !== 2) throw new Error(`${engine.name}: A returned ${v}`)
  }
  return median(samples) * 1000 // µs
}

const loopCalls = `let s = 0; for (let i = 0; i < 1000; i++) { const r = await callTool('add', { i }); s += r.i } return s`

async function workloadB(engine) {
  const samples = []
  for (let round = 0; round < 5; round++) {
    const t = now()
    const v = await engine.run(loopCalls, identity)
    samples.push((now() - t) / 1000)
    if (v !== 499500) throw new Error(`${engine.name}: B returned ${v}`)
  }
  return median(samples) * 1000 // µs per call
}

async function workloadC(engine) {
  const slowTool = () => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), 2))
  const script = `let n = 0; for (let i = 0; i < 10; i++) { const r = await callTool('slow', { i }); if (r.ok) n++ } return n`
  const samples = []
  for (let round = 0; round < 3; round++) {
    const t = now()
    const results = await Promise.all(Array.from({ length: 200 }, () => engine.run(script, slowTool)))
    samples.push(now() - t)
    if (results.some((v) => v !== 10)) throw new Error(`${engine.name}: C returned ${results[0]}`)
  }
  return median(samples)
}

const cpuScript = `let s = 0; for (let i = 0; i < 2000000; i++) { s = (s + i * i) % 1000003 } return s`

async function workloadD(engine) {
  const samples = []
  for (let round = 0; round < 5; round++) {
    const t = now()
    await engine.run(cpuScript, identity)
    samples.push(now() - t)
  }
  return median(samples)
}

/** In a child process: park `n` executions on a host call, report RSS growth per execution. */
async function parkedChild(name, n) {
  const engine = await open(name)
  if (engine.unavailable) return console.log(JSON.stringify({ unavailable: engine.unavailable }))
  const held = []
  let arrived = 0
  const wait = () =>
    new Promise((resolve) => {
      arrived++
      held.push(resolve)
    })
  globalThis.gc?.()
  await new Promise((r) => setTimeout(r, 200))
  if (name === NATIVE) {
    // Start the workers first: their start-up memory is not what a parked execution costs.
    await Promise.all(Array.from({ length: 8 }, () => engine.run('return 1', wait)))
    await new Promise((r) => setTimeout(r, 200))
  }
  const before = process.memoryUsage().rss + workersRss()
  const runs = Array.from({ length: n }, () => engine.run("const r = await callTool('wait', {}); return r", wait).catch((e) => e))
  const deadline = Date.now() + 120_000
  while (arrived < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  globalThis.gc?.()
  await new Promise((r) => setTimeout(r, 200))
  const after = process.memoryUsage().rss + workersRss()
  const perExecution = (after - before) / n
  for (const resolve of held) resolve(1)
  await Promise.all(runs)
  await engine.close?.()
  console.log(JSON.stringify({ arrived, perExecution }))
}

function workloadE(name, n) {
  const child = spawnSync(process.execPath, ['--expose-gc', self, '--parked', name, String(n)], {
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 1 << 20,
  })
  const line = child.stdout.trim().split('\n').pop() ?? ''
  try {
    const out = JSON.parse(line)
    if (out.unavailable) return null
    if (out.arrived < n) return `${out.arrived}/${n} parked`
    return out.perExecution / 1024 // KiB
  } catch {
    return `failed (${(child.stderr || '').split('\n')[0].slice(0, 60)})`
  }
}

/** Resident memory of this process's worker processes, in bytes. */
function workerPids() {
  const pids = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      const [state, ppid] = stat.slice(close + 2).split(' ')
      if (Number(ppid) === process.pid && stat.slice(stat.indexOf('(') + 1, close) === 'codecall-worker' && state !== 'Z') pids.push(entry)
    } catch {}
  }
  return pids
}

function workersRss() {
  if (process.platform !== 'linux') return 0
  let total = 0
  for (const pid of workerPids()) {
    try {
      const kb = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s*(\d+)/m)
      total += kb ? Number(kb[1]) * 1024 : 0
    } catch {}
  }
  return total
}

/** Worker processes: time from `new Sandbox` to the first result (spawn, fences, warm-up, seccomp,
 *  first script), the next result, and each idle worker's RSS. */
async function workloadW() {
  const { Sandbox } = require('..')
  const first = []
  const second = []
  const rss = []
  for (let i = 0; i < 15; i++) {
    const sb = new Sandbox({ isolation: 'process', poolSize: 1 })
    let t = now()
    await sb.execute('return 1')
    first.push(now() - t)
    t = now()
    await sb.execute('return 1')
    second.push(now() - t)
    await new Promise((r) => setTimeout(r, 50))
    rss.push(workersRss() / 1024 / 1024)
    await sb.dispose()
  }
  return { first: median(first), second: median(second) * 1000, rss: median(rss) }
}

// ---- main -------------------------------------------------------------------------------------

async function main() {
  const selected = process.argv.slice(2).filter((a) => /^[A-EW]$/.test(a))
  const workloads = selected.length ? selected : ['A', 'B', 'C', 'D', 'E', 'W']
  // `--ours`: this package's two isolation modes only (quick before/after comparisons).
  const names = Object.keys(factories).filter((n) => !process.argv.includes('--ours') || n === NATIVE || n === NATIVE_THREAD)
  const table = {}
  for (const name of names) table[name] = {}

  for (const name of names) {
    const engine = await open(name)
    if (engine.unavailable) {
      for (const w of workloads) table[name][w] = `unavailable: ${engine.unavailable.slice(0, 50)}`
      continue
    }
    for (const w of workloads.filter((w) => w !== 'E' && w !== 'W')) {
      try {
        const fn = { A: workloadA, B: workloadB, C: workloadC, D: workloadD }[w]
        table[name][w] = await fn(engine)
      } catch (e) {
        table[name][w] = `failed: ${String(e.message).slice(0, 60)}`
      }
    }
    await engine.close?.()
  }
  if (workloads.includes('E')) {
    for (const name of names) {
      table[name].E1 = workloadE(name, 1000)
      table[name].E10 = name === NATIVE || name === NATIVE_THREAD ? workloadE(name, 10_000) : 'not run'
    }
  }

  const fmt = (v, unit, digits = 1) => (typeof v === 'number' ? `${v.toFixed(digits)} ${unit}` : v ?? '–')
  const ours = table[NATIVE]
  const ratio = (v, base) => (typeof v === 'number' && typeof base === 'number' ? ` (${(v / base).toFixed(1)}×)` : '')
  console.log(`node ${process.version}, ${process.platform}-${process.arch}, ${new Date().toISOString().slice(0, 10)}`)
  console.log('Medians; in parentheses, the peer relative to @codecall/native with process isolation, the default (higher = slower / larger).\n')
  console.log('| engine | A: trivial run, p50 | B: µs per sequential call | C: 200×10 calls of a 2 ms tool | D: CPU-bound | E: per parked execution (1 000) | E (10 000) |')
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const name of names) {
    const r = table[name]
    const cells = [
      fmt(r.A, 'µs') + (name === NATIVE ? '' : ratio(r.A, ours.A)),
      fmt(r.B, 'µs') + (name === NATIVE ? '' : ratio(r.B, ours.B)),
      fmt(r.C, 'ms', 0) + (name.startsWith(NATIVE) ? ` (${typeof r.C === 'number' ? (r.C / 20).toFixed(2) : '?'}× ideal)` : ratio(r.C, ours.C)),
      fmt(r.D, 'ms') + (name === NATIVE ? '' : ratio(r.D, ours.D)),
      fmt(r.E1, 'KiB', 0),
      fmt(r.E10, 'KiB', 0),
    ]
    console.log(`| ${name} | ${cells.join(' | ')} |`)
  }
  if (workloads.includes('W')) {
    const w = await workloadW()
    console.log('\nWorker processes (process isolation, poolSize 1, medians of 15 sandboxes):\n')
    console.log('| new Sandbox → first result (spawn, fences, warm-up, seccomp, first script) | next result | RSS per idle worker |')
    console.log('|---:|---:|---:|')
    console.log(`| ${w.first.toFixed(1)} ms | ${w.second.toFixed(0)} µs | ${w.rss.toFixed(1)} MiB |`)
  }
}

if (process.argv[2] === '--parked') {
  await parkedChild(process.argv[3], Number(process.argv[4]))
} else {
  await main()
}
