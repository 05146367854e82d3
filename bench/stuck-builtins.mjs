// How long a timed-out script keeps a core busy after its deadline when it is inside one long
// builtin written in C (spec §2.6, issue 25); how a neighbour parked on a host tool on the same
// thread or worker (its own timeout 5 s) ends; and how long a neighbour submitted at the deadline
// to the same one-slot sandbox waits. CPU is this process's own (thread isolation: the stuck thread
// is in it) plus its children's, live and reaped (process isolation: the worker), read from
// /proc over a fixed window after the deadline, so a worker killed meanwhile still counts.
//
//   npm run build && node bench/stuck-builtins.mjs
//   CODECALL_ADDON=artifacts/bindings-x86_64-unknown-linux-gnu/codecall.linux-x64-gnu.node \
//   CODECALL_WORKER_PATH=artifacts/bindings-x86_64-unknown-linux-gnu/codecall-worker \
//     node bench/stuck-builtins.mjs        # another build, e.g. one from before the fix
//   node bench/stuck-builtins.mjs --cost   # what the polls cost the same builtins when they finish
//   ONLY='in a loop' node bench/stuck-builtins.mjs   # only the cases whose name matches
//
// Linux only (/proc). Numbers in BENCHMARKS.md "Long builtins after the deadline".
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'

const require = createRequire(import.meta.url)
const { Sandbox } = process.env.CODECALL_ADDON ? require(resolve(process.env.CODECALL_ADDON)) : require('..')
const TIMEOUT_MS = 300
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 6000)
const TICK = 1 / 100 // seconds per clock tick (USER_HZ is 100 on Linux)

/** CPU seconds of this process and all its children, live and reaped. */
function cpuSeconds() {
  const fields = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  const self = fields('self')
  // utime stime cutime cstime are fields 14–17 (1-based), 12–15 after the split at ') '.
  let ticks = +self[11] + +self[12] + +self[13] + +self[14]
  for (const task of readdirSync('/proc/self/task')) {
    let children = ''
    try {
      children = readFileSync(`/proc/self/task/${task}/children`, 'utf8')
    } catch {}
    for (const pid of children.split(' ').filter(Boolean)) {
      try {
        const f = fields(pid)
        ticks += +f[11] + +f[12]
      } catch {}
    }
  }
  return ticks * TICK
}

/** Options of the cases that loop. */
const LOOPS = { allowLoops: true, maxIterations: 1e12 }
const HEAP128 = { memoryLimitBytes: 128 << 20 }

// [name, script, timeoutMs, options?]: sorts need their input built first (in bytecode, which polls), so
// their deadline falls after that, inside the sort.
const CASES = [
  ['sparse join', "return new Array(1e9).join('')", TIMEOUT_MS],
  ['array-like copyWithin', 'return [].copyWithin.call({ length: 2 ** 53 - 1 }, 0, 1)', TIMEOUT_MS],
  ['BigInt toString, repeated', 'const x = 3n ** 600000n; return [1, 2, 3, 4, 5, 6, 7, 8].map(() => x.toString().length)', TIMEOUT_MS],
  ['string indexOf (n·m)', "return 'a'.repeat(1e6).indexOf('a'.repeat(5e5) + 'b')", TIMEOUT_MS],
  ['array sort (default order)', 'const a = Array.from({ length: 2e6 }, (_, i) => (i * 7919) % 1e6); return a.sort().length', 450],
  ['typed array sort', 'const a = new Float64Array(1e7); a.set(Array.from({ length: 1e7 }, (_, i) => (i * 7919) % 1e6)); return a.sort().length', 1400],
  ['array indexOf of long strings', "const p = '\\u0100'.repeat(1e6), x = (p + 'x').slice(0); return Array(2e5).fill(x).indexOf((p + 'y').slice(0))", TIMEOUT_MS],
  ['normalize, combining marks', "return ('a' + '\\u0316\\u0301'.repeat(1.5e5)).normalize('NFD').length", TIMEOUT_MS],
  ['Proxy ownKeys of 3e5 keys', "const k = Object.keys(Array(3e5).fill(0)); return Reflect.ownKeys(new Proxy({}, { ownKeys: () => k })).length", TIMEOUT_MS],
  ['RegExp of 4e5 alternatives', "return String(new RegExp('(?:' + 'ab|'.repeat(4e5) + 'c)')).length", TIMEOUT_MS],
  ['join, repeated (ms a step)', "const a = Array(1e3).fill('x'.repeat(1e4)); return Array.from({ length: 1e5 }, () => a.join('').length).length", TIMEOUT_MS],
  // Issue 40: loops whose every step is a builtin that takes about a millisecond and charges
  // nothing (it allocates nothing, or walks a chain): without the forced poll at the deadline, each
  // is one bytecode branch of the 10 000 between two polls, so the loop runs 10–40 s past its deadline.
  ['trim, in a loop (allocates nothing)', "const s = ' '.repeat(4e6) + 'x' + ' '.repeat(4e6); for (;;) s.trim()", TIMEOUT_MS, LOOPS],
  ['join of empty strings, in a loop', "const a = Array(1e6).fill(''); for (;;) a.join('')", TIMEOUT_MS, LOOPS],
  ['flat of empty arrays, in a loop', 'const a = Array.from({ length: 3e5 }, () => []); for (;;) a.flat()', TIMEOUT_MS, LOOPS],
  ['a 4 MB string as a property key, in a loop', "const k = 'k'.repeat(4e6), o = {}; for (;;) o[k]", TIMEOUT_MS, LOOPS],
  ['prototype chain of 2e5, in a loop', 'let p = {}; for (let i = 0; i < 2e5; i++) p = Object.create(p); for (;;) p.x', TIMEOUT_MS, LOOPS],
  ['Proxy chain of 500, in a loop', 'let p = {}; for (let i = 0; i < 500; i++) p = new Proxy(p, {}); for (;;) p.x', TIMEOUT_MS, LOOPS],
  // One call as large as a 128 MiB heap allows: the deadline falls inside it.
  ['one toUpperCase of 40M é (128 MiB heap)', "const s = '\\u00e9'.repeat(4e7); return s.toUpperCase().length", 300, HEAP128],
  ['one JSON.stringify of 2.5M strings (128 MiB heap)', "const a = Array(2.5e6).fill('abcdefghijklmnop'); return JSON.stringify(a).length", 150, HEAP128],
  ['one JSON.parse of 27 MB (128 MiB heap)', 'const s = JSON.stringify(Array(3.3e6).fill(1234567)); return JSON.parse(s).length', 650, HEAP128],
  ['one repeat of 64 MB (128 MiB heap)', "return 'ab'.repeat(3.2e7).length", 50, HEAP128],
  ['one split of 2M characters (128 MiB heap)', "const s = 'ab'.repeat(1e6); return s.split('').length", 50, HEAP128],
  ['bound-function chain of 500, in a loop', 'let f = () => 0; for (let i = 0; i < 500; i++) f = f.bind(null); for (;;) f()', TIMEOUT_MS, LOOPS],
]

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** One case in this process: a stuck builtin of an old build would go on burning CPU through the
 * next case's window, so the parent runs each case in a fresh process. */
async function one(isolation, index) {
  const [name, script, timeoutMs, options] = CASES[index]
  const sb = new Sandbox({ isolation, poolSize: 1, timeoutMs: 10_000, memoryLimitBytes: 512 << 20, queueTimeoutMs: 30_000, ...options })
  await sb.execute('return 1') // the slot's thread or worker is up
  // A neighbour parked on a host tool on the same thread or worker while the script runs.
  const parkedHost = { callTool: () => new Promise((r) => setTimeout(() => r(1), 150)) }
  const started = performance.now()
  const parked = sb.execute("return await callTool('slow')", parkedHost, { timeoutMs: 5000 }).then((p) => ({ status: p.status, code: p.error?.code, ms: performance.now() - started }))
  const r = await sb.execute(script, {}, { timeoutMs })
  const deadline = performance.now()
  const cpu0 = cpuSeconds()
  const neighbour = sb.execute('return 2').then((n) => ({ status: n.status, code: n.error?.code, ms: performance.now() - deadline }))
  await sleep(WINDOW_MS)
  const cpu = cpuSeconds() - cpu0
  const n = await neighbour
  const p = await parked
  await sb.dispose()
  return {
    isolation,
    case: name,
    status: r.status === 'ok' ? 'ok (finished in time)' : r.error.code,
    cpuAfterDeadlineMs: Math.round(cpu * 1000),
    parkedNeighbour: p.status === 'ok' ? `ok at ${p.ms.toFixed(0)} ms` : `${p.code} at ${p.ms.toFixed(0)} ms`,
    nextNeighbour: n.status === 'ok' ? `ok after ${n.ms.toFixed(0)} ms` : `${n.code} after ${n.ms.toFixed(0)} ms`,
  }
}

/** The same builtins on ordinary inputs, run to completion: what the polls cost (thread
 * isolation, so the numbers are the engine's; median of 9 runs, ms, timed inside the script). */
async function cost() {
  const sb = new Sandbox({ isolation: 'thread', poolSize: 1, timeoutMs: 60_000, memoryLimitBytes: 512 << 20 })
  const work = [
    ['indexOf, 1 MB text, 1 000 short needles', "const t = 'lorem ipsum dolor sit amet, '.repeat(4e4); const w = Array.from({ length: 1000 }, (_, i) => 'x' + i); const s = Date.now(); w.forEach((n) => t.indexOf(n)); return Date.now() - s"],
    ['split a 1 MB CSV line', "const t = 'abc,def,'.repeat(1.3e5); const s = Date.now(); t.split(',').length; return Date.now() - s"],
    ['sort 200 000 numbers (default order)', 'const a = Array.from({ length: 2e5 }, (_, i) => (i * 7919) % 1e5); const s = Date.now(); a.sort(); return Date.now() - s'],
    ['sort 2 000 000 Float64', 'const a = new Float64Array(2e6); a.set(Array.from({ length: 2e6 }, (_, i) => (i * 7919) % 1e6)); const s = Date.now(); a.sort(); return Date.now() - s'],
    ['BigInt 3n ** 200000n, printed', 'const s = Date.now(); (3n ** 200000n).toString().length; return Date.now() - s'],
    ['join a sparse array of 10 000 000', "const s = Date.now(); new Array(1e7).join(''); return Date.now() - s"],
    // Issue 40: the interrupt counter's relaxed atomics (every branch and call), polls in large
    // allocations and in the loops that fill a string.
    ['3 000 000 calls of a small callback', 'const s = Date.now(); let n = 0; Array.from({ length: 3e6 }, (_, i) => { n += i & 1 }); return Date.now() - s'],
    ['toUpperCase of 8 MB, JSON.stringify of 1e6 numbers', "const t = 'abc\u00e9'.repeat(2e6), a = Array.from({ length: 1e6 }, (_, i) => i); const s = Date.now(); t.toUpperCase(); JSON.stringify(a); return Date.now() - s"],
    ["'ab'.repeat(1e7), padStart to 2e7", "const s = Date.now(); 'ab'.repeat(1e7); 'x'.padStart(2e7, 'yz'); return Date.now() - s"],
  ]
  const rows = []
  for (const [name, script] of work) {
    const ms = []
    for (let i = 0; i < 9; i++) ms.push((await sb.execute(script)).result)
    ms.sort((a, b) => a - b)
    rows.push({ workload: name, medianMs: ms[4], min: ms[0], max: ms[8] })
  }
  await sb.dispose()
  return rows
}

if (process.argv[2] === '--cost') {
  const rows = await cost()
  console.table(rows)
  console.log(JSON.stringify(rows))
  process.exit(0)
}
if (process.argv[2] === '--one') {
  process.stdout.write(JSON.stringify(await one(process.argv[3], Number(process.argv[4]))))
  process.exit(0)
}
const rows = []
for (const isolation of ['thread', 'process']) {
  for (let i = 0; i < CASES.length; i++) {
    if (process.env.ONLY && !new RegExp(process.env.ONLY).test(CASES[i][0])) continue
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--one', isolation, String(i)], { encoding: 'utf8', timeout: WINDOW_MS + 60_000 })
    rows.push(JSON.parse(out))
  }
}
console.table(rows)
console.log(JSON.stringify({ timeoutMs: TIMEOUT_MS, windowMs: WINDOW_MS, rows }))
