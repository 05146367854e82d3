// This build against another one, interleaved in fresh processes so that both see the same
// machine: A (a trivial execution, µs each, sequential) and B (µs per sequential `await callTool`)
// in both isolations. For changes to the pool's fast path, where bench/sandbox.mjs's single run is
// too noisy to tell a few µs apart.
//
//   node bench/before-after.mjs <other checkout or .../index.js> [rounds=3]
//
// The other checkout needs its own `npm run build` (its index.js finds its .node and worker).
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const self = fileURLToPath(import.meta.url)

if (process.argv[2] === '--child') {
  const [, , , entry, isolation, workload] = process.argv
  const { Sandbox } = (await import('node:module')).createRequire(self)(entry)
  const sb = new Sandbox({ isolation, poolSize: 2, preset: 'experimental', maxIterations: 1e9, maxToolCalls: 1e6, timeoutMs: 60_000 })
  const host = { callTool: (_name, input) => input }
  const runA = async () => {
    const t = process.hrtime.bigint()
    for (let i = 0; i < 2000; i++) await sb.execute('return 1 + 1')
    return Number(process.hrtime.bigint() - t) / 2000 / 1000
  }
  const script = 'let s = 0; for (let i = 0; i < 2000; i++) s += (await callTool("t", { i })).i; return s'
  const runB = async () => {
    const t = process.hrtime.bigint()
    await sb.execute(script, host)
    return Number(process.hrtime.bigint() - t) / 2000 / 1000
  }
  const run = workload === 'A' ? runA : runB
  await run()
  const xs = []
  for (let k = 0; k < 5; k++) xs.push(await run())
  xs.sort((a, b) => a - b)
  process.stdout.write(String(xs[2]))
  await sb.dispose()
  process.exit(0)
}

const other = process.argv[2]
if (!other) {
  console.error('usage: node bench/before-after.mjs <other checkout or index.js> [rounds]')
  process.exit(2)
}
const before = existsSync(resolve(other, 'index.js')) ? resolve(other, 'index.js') : resolve(other)
const after = resolve(self, '../../index.js')
const rounds = Number(process.argv[3] ?? 3)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rows = []
for (const isolation of ['thread', 'process']) {
  for (const workload of ['A', 'B']) {
    const got = { before: [], after: [] }
    for (let r = 0; r < rounds; r++) {
      for (const [which, entry] of [['before', before], ['after', after]]) {
        got[which].push(Number(execFileSync(process.execPath, [self, '--child', entry, isolation, workload], { encoding: 'utf8' })))
      }
    }
    const b = median(got.before)
    const a = median(got.after)
    rows.push({ isolation, workload: workload === 'A' ? 'A: µs per trivial execution' : 'B: µs per sequential call', before: b.toFixed(1), after: a.toFixed(1), ratio: (a / b).toFixed(2) })
  }
}
console.table(rows)
