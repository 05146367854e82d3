// The demo, for now: what the validator says about plans a model might send, plans running in the
// sandbox against a small in-process tool pipeline, then tool search over the real tools of 43 MCP
// servers. (The end-to-end demo over real MCP arrives with the CodeCall engine.)
// Run: npm run demo
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { validate, Sandbox, ToolIndex } = require('..')

const plans = [
  ['a good plan', `const users = await callTool('users:list', { status: 'active' })
const admins = users.items.filter((u) => u.role === 'admin')
return admins.map((a) => a.email)`],
  ['a TypeScript plan', `interface User { id: string; role: 'admin' | 'user' }
const users = await callTool<User[]>('users:list', {})
return users.filter((u): u is User => u.role === 'admin').length`, { language: 'typescript' }],
  ['an escape through the constructor', `const F = (() => {})['constructor']
return F('return process')()`],
  ['a hidden eval', 'const run = { \\u0065val }.eval\nreturn run("1 + 1")'],
  ['a loop under `secure`', `let n = 0
while (true) n++`],
  ['calling the engine itself', `await callTool('codecall:execute', { script: 'return 1' })`],
  ['a syntax error', `const total = items.reduce((a, b) => a + b, 0\nreturn total`],
]

for (const [title, script, options] of plans) {
  const result = validate(script, options)
  console.log(`\n■ ${title}`)
  console.log(script.split('\n').map((l) => `    ${l}`).join('\n'))
  if (result.ok) {
    console.log(`  → ok; tools: ${JSON.stringify(result.toolNames)}${result.dynamicToolCalls ? ' (and dynamic ones)' : ''}`)
  } else {
    const { code, kind, message, location } = result.error
    const where = location ? ` at ${location.line}:${location.column}` : ''
    console.log(`  → ${result.status} ${code}${kind ? ` (${kind})` : ''}${where}: ${message}`)
  }
}

// ---- the sandbox ---------------------------------------------------------------------------

// A stand-in for a server's tool pipeline: in production this is where auth, PII scrubbing and
// audit plugins run. Every callTool of a plan comes through here.
const users = [
  { id: 'u1', name: 'Ada', role: 'admin', email: 'ada@example.com' },
  { id: 'u2', name: 'Linus', role: 'user', email: 'linus@example.com' },
  { id: 'u3', name: 'Grace', role: 'admin', email: 'grace@example.com' },
]
const audit = []
const host = {
  async callTool(name, input, meta) {
    audit.push(`${meta.callId} ${name} ${JSON.stringify(input)}`)
    await new Promise((r) => setTimeout(r, 5)) // a network hop
    if (name === 'users:list') return users.filter((u) => !input.role || u.role === input.role)
    if (name === 'billing:invoices') return [{ user: input.userId, amountCents: input.userId === 'u1' ? 1200 : 800 }]
    throw Object.assign(new Error(`Unknown tool ${name}`), { code: 'UNKNOWN_TOOL' })
  },
  onEvent(e) {
    if (e.type === 'tool_call_end') console.log(`    event: ${e.toolName} ${e.status} in ${e.durationMs.toFixed(1)} ms`)
  },
}

const sandbox = new Sandbox({ preset: 'secure' })
const runs = [
  ['a join across two tools, in parallel', `const admins = await callTool('users:list', { role: 'admin' })
const invoices = await __safe_parallel(admins.map((a) => () => callTool('billing:invoices', { userId: a.id })))
return admins.map((a, i) => ({ name: a.name, billedCents: invoices[i][0].amountCents }))`],
  ['a tool that fails, uncaught', `await callTool('crm:delete', { id: 'u2' })`],
  ['a plan that never ends', `await new Promise((resolve) => { /* forgot to resolve */ })`],
  ['an escape attempt at run time', `const name = ['codecall', 'execute'].join(':')
return await callTool(name, { script: 'return 1' }, { throwOnError: false })`],
]
for (const [title, script] of runs) {
  console.log(`\n▶ ${title}`)
  console.log(script.split('\n').map((l) => `    ${l}`).join('\n'))
  const r = await sandbox.execute(script, host)
  const { stats, ...rest } = r
  console.log(`  → ${JSON.stringify(rest)}  (${stats.durationMs.toFixed(1)} ms, ${stats.toolCalls} tool calls)`)
}
await sandbox.dispose()
console.log(`\nThe host's audit log saw every call:\n${audit.map((l) => `    ${l}`).join('\n')}`)

// 3. Tool search: the model finds tools by describing the task. The index holds the real tools of
//    43 MCP servers from npm (bench/search/corpus.json).
console.log('\nTool search: 1 138 real MCP tools, found by describing the task')
const corpus = JSON.parse(readFileSync(new URL('../bench/search/corpus.json', import.meta.url), 'utf8'))
const index = new ToolIndex()
let t0 = performance.now()
index.upsert(corpus.tools.map((t) => ({ name: `${t.appId}:${t.name}`, appId: t.appId, description: t.description, inputSchema: t.inputSchema })))
index.search('warm up')
console.log(`  indexed ${index.size} tools in ${(performance.now() - t0).toFixed(0)} ms`)
for (const [query, options] of [
  ['open a ticket about the login page crashing', { appIds: ['linear', 'github'] }],
  ['approve MR !231', undefined],
  ['turn this street address into coordinates', undefined],
  ['list k8s pods in the staging namespace', undefined],
  ['take a screenshot of the dashbaord', undefined],
]) {
  t0 = performance.now()
  const hits = index.search(query, { ...options, topK: 3 })
  const took = ((performance.now() - t0) * 1000).toFixed(0)
  console.log(`\n▶ "${query}"${options ? ` (appIds: ${options.appIds.join(', ')})` : ''}  ${took} µs`)
  for (const h of hits) console.log(`    ${h.score.toFixed(3)}  ${h.name}`)
}
