// Host answers over the limit (issue 32): how long Node's event loop is held while the sandbox
// refuses a tool answer larger than the execution can take, and what the size check costs on the
// ordinary small answer.
//
//   node --expose-gc bench/host-answers.mjs              # both isolations
//   node --expose-gc bench/host-answers.mjs thread       # one
//
// "held" is the largest gap between ticks of a 10 ms setInterval while one execution calls a tool
// that answers the big value (built before the timing starts), minus the 10 ms period.
// "small" is µs per call of 2000 sequential `await callTool` answering a small object (median of 5).
// "settle" times host.js's own `settle` (size count + JSON.stringify) against JSON.stringify alone,
// on Node's thread only, for a small answer and a 10 000-row one (median of 7 batches).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Sandbox } = require('..')

const now = () => Number(process.hrtime.bigint()) / 1e6
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function held(sb, answer) {
  let last = now()
  let worst = 0
  const timer = setInterval(() => {
    const t = now()
    worst = Math.max(worst, t - last)
    last = t
  }, 10)
  const started = now()
  const r = await sb.execute("return await callTool('t:big', {}, { throwOnError: false })", { callTool: () => answer })
  const wall = now() - started
  await new Promise((resolve) => setTimeout(resolve, 30))
  clearInterval(timer)
  return { held: Math.max(0, worst - 10), wall, message: r.result?.error?.message ?? JSON.stringify(r).slice(0, 200) }
}

async function small(sb) {
  const answer = { ok: true, id: 42, name: 'issue 42', tags: ['a', 'b'], body: 'x'.repeat(200) }
  const script = 'let n = 0\nfor (let i = 0; i < 2000; i++) { const r = await callTool("t:small", { i }); n += r.id }\nreturn n'
  const runs = []
  for (let k = 0; k < 6; k++) {
    const started = now()
    const r = await sb.execute(script, { callTool: () => answer })
    if (r.status !== 'ok') throw new Error(JSON.stringify(r))
    if (k > 0) runs.push(((now() - started) * 1000) / 2000)
  }
  return median(runs)
}

function settleCost() {
  const factory = (0, eval)(readFileSync(new URL('../src/sandbox/host.js', import.meta.url), 'utf8'))
  const { settle } = factory(() => {}, 64 << 20)
  const small = { ok: true, id: 42, name: 'issue 42', tags: ['a', 'b'], body: 'x'.repeat(200) }
  const rows = Array.from({ length: 10000 }, (_, i) => ({ id: i, name: `row ${i}`, tags: ['a', 'b'], ok: true, score: i / 7 }))
  let sink = 0
  const done = (e, json) => {
    sink += json.length
  }
  for (const [what, value, n] of [['small answer', small, 200_000], ['10 000 rows', rows, 20]]) {
    const time = (f) => {
      const runs = []
      for (let k = 0; k < 8; k++) {
        const started = now()
        for (let i = 0; i < n; i++) f()
        if (k > 0) runs.push(((now() - started) * 1000) / n)
      }
      return median(runs)
    }
    const plain = time(() => (sink += JSON.stringify(value).length))
    const settled = time(() => settle(() => value, null, [], done))
    console.log(`settle\t${what}\tJSON.stringify ${plain.toFixed(2)} µs, settle (count + stringify) ${settled.toFixed(2)} µs`)
  }
  return sink
}

if (process.argv.includes('settle')) {
  settleCost()
  process.exit(0)
}

const isolations = process.argv.slice(2).filter((a) => a === 'thread' || a === 'process')
for (const isolation of isolations.length > 0 ? isolations : ['thread', 'process']) {
  const sb = new Sandbox({ isolation, poolSize: 1, preset: 'balanced', maxIterations: 1e9, maxToolCalls: 1e6, timeoutMs: 60_000 })
  const string = 'x'.repeat(270e6)
  const array = []
  for (let i = 0; i < 5e7; i++) array.push('xx')
  for (const [what, answer] of [['270 MB string', string], ['5e7-element array', array]]) {
    globalThis.gc?.()
    const r = await held(sb, answer)
    console.log(`${isolation}\t${what}\theld ${r.held.toFixed(0)} ms\twall ${r.wall.toFixed(0)} ms\t${r.message.slice(0, 140)}`)
  }
  globalThis.gc?.()
  console.log(`${isolation}\tsmall answer\t${(await small(sb)).toFixed(1)} µs per call`)
  sb.dispose()
}
