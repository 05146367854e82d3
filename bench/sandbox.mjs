// One run, same workloads, side by side: @codecall/native's Sandbox vs node:vm, vm2, isolated-vm,
// quickjs-emscripten (asyncify build) and `run`. Prints Markdown tables of medians and ratios.
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
//   E  memory per execution parked awaiting the host (RSS delta / N, measured in a child process)
import { spawnSync } from 'node:child_process'
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

function nativeEngine() {
  const { Sandbox } = require('..')
  const sandbox = new Sandbox({ preset: 'experimental', maxIterations: 1e9, maxToolCalls: 1e6, timeoutMs: 60_000, maxQueue: 100_000 })
  return {
    name: '@codecall/native',
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
  '@codecall/native': nativeEngine,
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
  const before = process.memoryUsage().rss
  const runs = Array.from({ length: n }, () => engine.run("const r = await callTool('wait', {}); return r", wait).catch((e) => e))
  const deadline = Date.now() + 120_000
  while (arrived < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  globalThis.gc?.()
  await new Promise((r) => setTimeout(r, 200))
  const after = process.memoryUsage().rss
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

// ---- main -------------------------------------------------------------------------------------

async function main() {
  const selected = process.argv.slice(2).filter((a) => /^[A-E]$/.test(a))
  const workloads = selected.length ? selected : ['A', 'B', 'C', 'D', 'E']
  const names = Object.keys(factories)
  const table = {}
  for (const name of names) table[name] = {}

  for (const name of names) {
    const engine = await open(name)
    if (engine.unavailable) {
      for (const w of workloads) table[name][w] = `unavailable: ${engine.unavailable.slice(0, 50)}`
      continue
    }
    for (const w of workloads.filter((w) => w !== 'E')) {
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
      table[name].E10 = name === '@codecall/native' ? workloadE(name, 10_000) : 'not run'
    }
  }

  const fmt = (v, unit, digits = 1) => (typeof v === 'number' ? `${v.toFixed(digits)} ${unit}` : v ?? '–')
  const ours = table['@codecall/native']
  const ratio = (v, base) => (typeof v === 'number' && typeof base === 'number' ? ` (${(v / base).toFixed(1)}×)` : '')
  console.log(`node ${process.version}, ${process.platform}-${process.arch}, ${new Date().toISOString().slice(0, 10)}`)
  console.log('Medians; in parentheses, the peer relative to @codecall/native (higher = slower / larger).\n')
  console.log('| engine | A: trivial run, p50 | B: µs per sequential call | C: 200×10 calls of a 2 ms tool | D: CPU-bound | E: per parked execution (1 000) | E (10 000) |')
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const name of names) {
    const r = table[name]
    const cells = [
      fmt(r.A, 'µs') + (name === '@codecall/native' ? '' : ratio(r.A, ours.A)),
      fmt(r.B, 'µs') + (name === '@codecall/native' ? '' : ratio(r.B, ours.B)),
      fmt(r.C, 'ms', 0) + (name === '@codecall/native' ? ` (${typeof r.C === 'number' ? (r.C / 20).toFixed(2) : '?'}× ideal)` : ratio(r.C, ours.C)),
      fmt(r.D, 'ms') + (name === '@codecall/native' ? '' : ratio(r.D, ours.D)),
      fmt(r.E1, 'KiB', 0),
      fmt(r.E10, 'KiB', 0),
    ]
    console.log(`| ${name} | ${cells.join(' | ')} |`)
  }
}

if (process.argv[2] === '--parked') {
  await parkedChild(process.argv[3], Number(process.argv[4]))
} else {
  await main()
}
