// CodeCall engine throughput: `codecall:execute` of a 5-call plan through `handle()` with an
// in-process host, executions per second at concurrency 1, 16 and 256. Prints a Markdown table of
// medians over rounds, side by side with the same plan on a bare `Sandbox` (the engine's overhead:
// JSON in/out, the index-backed tool check, CallToolResult unwrapping) and with the example
// server's real pipeline (ajv input validation, PII masking, audit).
//
//   node bench/engine.mjs [seconds-per-cell=2]
import { createRequire } from 'node:module'
import os from 'node:os'

const require = createRequire(import.meta.url)
const { CodeCall, Sandbox } = require('..')
const { allTools } = await import('../examples/mcp-server/apps/index.mjs')
const { createStore } = await import('../examples/mcp-server/data.mjs')
const { createPipeline } = await import('../examples/mcp-server/pipeline.mjs')

const seconds = Number(process.argv[2] ?? 2)
const ROUNDS = 3
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

// Five calls across three apps, two of them in parallel, and a join.
const PLAN = `const page = await callTool('users:list', { limit: 5 })
const [orders, tickets] = await __safe_parallel([
  () => callTool('orders:list', { userId: page.items[0].id, limit: 5 }),
  () => callTool('support:listTickets', { requesterId: page.items[0].id, limit: 5 }),
])
const user = await callTool('users:get', { userId: page.items[0].id })
const invoices = await callTool('billing:listInvoices', { userId: user.id, limit: 5 })
return { user: user.name, orders: orders.total, tickets: tickets.total, invoices: invoices.items.length }`

const tools = allTools()
const limits = { maxQueue: 100_000, queueTimeoutMs: 120_000 }

/** A minimal in-process host: fixed, already-built results (measures the engine, not the tools) —
 *  MCP `CallToolResult`s for CodeCall, which unwraps them; the plain values for a bare Sandbox. */
function fixedHost(mcp = true) {
  const page = (items) =>
    mcp ? { content: [{ type: 'text', text: JSON.stringify({ items, total: items.length }) }] } : { items, total: items.length }
  const answers = {
    'users:list': page([{ id: 'usr_001', name: 'Ada' }]),
    'orders:list': page([{ id: 'ord_001' }]),
    'support:listTickets': page([]),
    'users:get': mcp ? { content: [], structuredContent: { id: 'usr_001', name: 'Ada' } } : { id: 'usr_001', name: 'Ada' },
    'billing:listInvoices': page([{ id: 'inv_001' }]),
  }
  return { callTool: (name) => answers[name] }
}

function pipelineHost() {
  const pipeline = createPipeline({ tools, store: createStore() })
  return { callTool: (name, input, meta) => pipeline.callTool(name, input, { via: 'codecall', ...meta }) }
}

const subjects = {
  'CodeCall.handle, fixed host': () => {
    const cc = new CodeCall({ vm: limits })
    cc.setTools(tools)
    const host = fixedHost()
    return { run: () => cc.handle('codecall:execute', { script: PLAN }, host), close: () => cc.dispose() }
  },
  'Sandbox.execute, fixed host': () => {
    const sandbox = new Sandbox(limits)
    const host = fixedHost(false)
    return { run: () => sandbox.execute(PLAN, host), close: () => sandbox.dispose() }
  },
  'CodeCall.handle, example pipeline': () => {
    const cc = new CodeCall({ vm: limits })
    cc.setTools(tools)
    const host = pipelineHost()
    return { run: () => cc.handle('codecall:execute', { script: PLAN }, host), close: () => cc.dispose() }
  },
}

/** Executions per second with `concurrency` in flight for `ms`. */
async function throughput(run, concurrency, ms) {
  let done = 0
  let failed = 0
  const end = performance.now() + ms
  const worker = async () => {
    while (performance.now() < end) {
      const r = await run()
      if (r.status === 'ok') done++
      else if (failed++ === 0) console.error('failed:', JSON.stringify(r.error))
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { perSecond: done / ((performance.now() - t0) / 1000), failed }
}

console.log(`# CodeCall engine throughput — ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, Node ${process.version}`)
console.log(`\n5-call plan through \`handle('codecall:execute')\`; executions/s, median of ${ROUNDS} rounds of ${seconds} s\n`)
console.log('| subject | c=1 | c=16 | c=256 | p50 latency at c=1 |')
console.log('|---|---:|---:|---:|---:|')
for (const [label, make] of Object.entries(subjects)) {
  const s = make()
  await throughput(s.run, 16, 300) // warm up
  const cells = []
  for (const c of [1, 16, 256]) {
    const rounds = []
    for (let i = 0; i < ROUNDS; i++) rounds.push((await throughput(s.run, c, seconds * 1000)).perSecond)
    cells.push(median(rounds))
  }
  const lat = []
  for (let i = 0; i < 300; i++) {
    const t = performance.now()
    await s.run()
    lat.push(performance.now() - t)
  }
  console.log(`| ${label} | ${cells.map((x) => Math.round(x).toLocaleString('en-US')).join(' | ')} | ${(median(lat) * 1000).toFixed(0)} µs |`)
  await s.close()
}
