// Saved scripts (spec §11): what running a plan by name costs against sending the same code
// inline, what a nested `callTool('saved:…')` costs, and what a save costs (SQLite file in WAL
// mode, and ':memory:'). One CodeCall, an in-process host, sequential runs; medians of rounds.
//
//   npm run build && node bench/saved-scripts.mjs [runs=400] [rounds=3]
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const require = createRequire(import.meta.url)
const { CodeCall } = require('../index.js')

const runs = Number(process.argv[2] ?? 400)
const rounds = Number(process.argv[3] ?? 3)

const tools = ['users:list', 'orders:list', 'orders:get', 'billing:get', 'report:build'].map((name) => ({
  name,
  description: `The ${name} tool`,
  inputSchema: { type: 'object', properties: { id: { type: 'string' }, limit: { type: 'integer' } } },
}))
const plan = `const users = await callTool('users:list', { limit: input.limit });
const orders = await callTool('orders:list', { limit: input.limit });
const [one, bill] = await __safe_parallel([() => callTool('orders:get', { id: 'o1' }), () => callTool('billing:get', { id: 'b1' })]);
const report = await callTool('report:build', { id: 'r1' });
return { users: users.items.length, orders: orders.items.length, one: one.id, bill: bill.id, report: report.id };`
const host = { callTool: (name, input) => ({ id: input.id ?? name, items: [{ id: 1 }, { id: 2 }] }) }

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Median per subject of `rounds` medians of `runs` runs, the subjects interleaved round by round. */
async function timeAll(subjects) {
  const per = subjects.map(() => [])
  for (let r = 0; r < rounds; r++) {
    for (const [k, [, fn]] of subjects.entries()) {
      const samples = []
      for (let i = 0; i < runs; i++) {
        const t = performance.now()
        await fn(i)
        samples.push(performance.now() - t)
      }
      per[k].push(median(samples))
    }
  }
  return subjects.map(([name], k) => [name, median(per[k]) * 1000])
}

const dir = mkdtempSync(join(tmpdir(), 'codecall-bench-scripts-'))
try {
  const rows = []
  for (const store of [join(dir, 'scripts.db'), ':memory:']) {
    const cc = new CodeCall({ scripts: { store } })
    cc.setTools(tools)
    await cc.scripts.save({ name: 'five-calls', description: 'Five calls, a join', script: plan })
    const check = await cc.execute({ scriptName: 'five-calls', input: { limit: 5 } }, host)
    if (check.status !== 'ok') throw new Error(JSON.stringify(check))
    // Warm-up; the sentence model's background work on the saved tool done first.
    await cc.ready()
    for (let i = 0; i < 50; i++) await cc.execute({ script: plan, input: { limit: 5 } }, host)
    const label = store === ':memory:' ? "':memory:'" : 'SQLite file (WAL)'
    rows.push(
      ...(await timeAll([
        [`inline script (${label})`, () => cc.execute({ script: plan, input: { limit: 5 } }, host)],
        [`execute({ scriptName }) (${label})`, () => cc.execute({ scriptName: 'five-calls', input: { limit: 5 } }, host)],
        [`plan calling saved:five-calls (${label})`, () => cc.execute({ script: "return await callTool('saved:five-calls', { limit: 5 })" }, host)],
      ])),
    )
    rows.push(...(await timeAll([[`scripts.save (${label})`, (i) => cc.scripts.save({ name: `s${i % 50}`, description: 'A saved plan', script: plan })]])))
    await cc.ready()
    rows.push(...(await timeAll([[`search, 51 saved scripts (${label})`, () => cc.search({ query: 'five calls and a join' })]])))
    await cc.dispose()
  }
  console.log(`runs=${runs} rounds=${rounds} node ${process.version}\n`)
  console.log('| subject | p50 µs |\n|---|---:|')
  for (const [name, us] of rows) console.log(`| ${name} | ${us.toFixed(0)} |`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
