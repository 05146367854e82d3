// The demo: an MCP server in code mode, driven end to end by the official MCP SDK client.
//
// It starts examples/mcp-server (5 apps, 100+ tools, in-memory data, a host pipeline that validates
// input, masks PII and audits every call) over stdio, then does what a model would: list tools,
// search in plain words, describe the hits, execute one plan that joins several apps, see a
// syntax error and a tool error come back as statuses, invoke one tool directly, have a person
// approve a risky call, and save the plan that worked as a tool of its own.
//
// Run: npm run demo   (installs and builds what is missing first)
import { execSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const step = (cmd) => {
  console.log(`[demo] ${cmd}`)
  execSync(cmd, { cwd: root, stdio: 'inherit' })
}
if (!existsSync(join(root, 'node_modules', '@modelcontextprotocol', 'sdk'))) step('npm ci --ignore-scripts')
if (!readdirSync(root).some((f) => /^codecall\..*\.node$/.test(f))) step('npm run build')

const { Client } = await import('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js')
const { ElicitRequestSchema, LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } = await import(
  '@modelcontextprotocol/sdk/types.js'
)
const { allTools } = await import('./mcp-server/apps/index.mjs')

const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s)
const dim = (s) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s)
const indent = (s, n = 4) => String(s).split('\n').map((l) => ' '.repeat(n) + l).join('\n')
const ms = (t) => `${t.toFixed(1)} ms`
const kb = (n) => `${(n / 1024).toFixed(1)} KB`
const tokens = (bytes) => Math.round(bytes / 4) // the usual ~4 bytes per token of JSON

async function timed(label, fn) {
  const t0 = performance.now()
  const value = await fn()
  console.log(dim(`  (${label}: ${ms(performance.now() - t0)})`))
  return value
}

/** Calls a meta-tool and returns its JSON answer. */
async function call(name, args, options) {
  const r = await client.callTool({ name, arguments: args }, undefined, options)
  return r.structuredContent ?? JSON.parse(r.content[0].text)
}

// The client can ask its user (elicitation): the server's approval policy puts risky calls to a
// person through it. Here the "person" reads the question and says yes.
const client = new Client({ name: 'codecall-demo', version: '0.1.0' }, { capabilities: { elicitation: {} } })
const approvals = []
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  approvals.push(request.params.message)
  return { action: 'accept', content: { always: false } }
})
const logs = []
client.onerror = (e) => console.log('[client error]', String(e?.message ?? e).slice(0, 300))
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params))
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {})
const transport = new StdioClientTransport({
  command: process.execPath,
  // Saved scripts in memory: a fresh clone needs nothing (`--scripts file.db` keeps them).
  args: [join(root, 'examples', 'mcp-server', 'server.mjs'), '--scripts', ':memory:'],
  stderr: 'inherit',
})

console.log(bold('\n■ 1. Connect to the example MCP server over stdio'))
await timed('spawn + initialize', () => client.connect(transport))
console.log(`  server: ${client.getServerVersion()?.name}; instructions: ${client.getInstructions()}`)

console.log(bold('\n■ 2. tools/list'))
const { tools } = await timed('tools/list', () => client.listTools())
for (const t of tools) console.log(`  - ${t.name}${t.description ? dim(` — ${t.description.split('\n')[0].slice(0, 90)}`) : ''}`)
const withCodeCall = Buffer.byteLength(JSON.stringify({ tools }))
const every = allTools()
  .filter((t) => !t.internal)
  .map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({
    name, title, description, inputSchema, outputSchema, annotations,
  }))
const withoutCodeCall = Buffer.byteLength(JSON.stringify({ tools: every }))
console.log(
  `  context: ${tools.length} tools, ${kb(withCodeCall)} (~${tokens(withCodeCall)} tokens) with CodeCall` +
    ` vs ${every.length} tools, ${kb(withoutCodeCall)} (~${tokens(withoutCodeCall)} tokens) listing every tool` +
    ` → ${(100 * (1 - withCodeCall / withoutCodeCall)).toFixed(1)}% smaller`,
)

console.log(bold('\n■ 3. codecall:search — "customers with open support tickets and unpaid invoices"'))
const found = await timed('search', () =>
  call('codecall:search', {
    queries: ['list open support tickets', 'get a customer profile', 'unpaid invoices of a customer', 'orders of a user'],
    topK: 6,
  }),
)
for (const t of found.tools) console.log(`  ${t.score.toFixed(3)}  ${t.name}${dim(` — ${t.description.slice(0, 80)}`)}`)
console.log(`  (${found.totalIndexed} tools indexed)`)

console.log(bold('\n■ 4. codecall:describe — the tools the plan will use'))
const described = await timed('describe', () =>
  call('codecall:describe', { toolNames: ['support:listTickets', 'users:get', 'billing:listInvoices', 'orders:list'] }),
)
for (const t of described.tools) {
  console.log(`  ${bold(t.name)} (${t.appId}) — ${t.usageExamples.length} usage examples`)
  console.log(indent(t.typescript.split('\n').slice(0, 8).join('\n') + (t.typescript.split('\n').length > 8 ? '\n  ...' : '')))
}
console.log('  first usage example of users:get:')
console.log(indent(described.tools.find((t) => t.name === 'users:get')?.usageExamples[0]?.code ?? '(none)', 6))

console.log(bold('\n■ 5. codecall:execute — one plan across support, users, orders and billing'))
const plan = `// Customers with open tickets: who they are, how many orders, what they owe.
const tickets = await callTool('support:listTickets', { status: ['open'], limit: 50 })
const customerIds = [...new Set(tickets.items.map((t) => t.requesterId))].slice(0, 5)
const rows = await __safe_parallel(customerIds.map((userId) => async () => {
  const [user, orders, invoices] = await Promise.all([
    callTool('users:get', { userId }),
    callTool('orders:list', { userId, limit: 5 }),
    callTool('billing:listInvoices', { userId, status: 'open' }),
  ])
  const cents = (m) => (typeof m === 'number' ? m : m?.amount ?? 0)
  return {
    customer: user.name,
    email: user.email, // masked by the host's PII step before the script sees it
    openTickets: tickets.items.filter((t) => t.requesterId === userId).length,
    orders: orders.total,
    owedUsd: invoices.items.reduce((sum, i) => sum + cents(i.amountDue), 0) / 100,
  }
}), { maxConcurrency: 5 })
console.log('joined', rows.length, 'customers')
return rows.sort((a, b) => b.owedUsd - a.owedUsd)`
console.log(indent(plan))
let progress = 0
logs.length = 0
const executed = await timed('execute', () =>
  call('codecall:execute', { script: plan }, { onprogress: () => progress++ }),
)
console.log(`  → status ${bold(executed.status)}; ${executed.stats.toolCalls} tool calls in ${ms(executed.stats.durationMs)} inside the sandbox`)
console.table(executed.result)
console.log(`  logs: ${JSON.stringify(executed.logs ?? [])}`)
console.log(`  the client received ${progress} progress notifications and ${logs.length} log messages (tool_call_start/end)`)

console.log(bold('\n■ 6. Mistakes come back as statuses, not crashes'))
const syntax = await call('codecall:execute', { script: "const x = await callTool('users:list', {\nreturn x" })
console.log(`  a syntax error      → ${syntax.status} ${syntax.error.code} at ${syntax.error.location.line}:${syntax.error.location.column}: ${syntax.error.message}`)
const refund = await call('codecall:execute', {
  script: `const payments = await callTool('billing:listPayments', { limit: 1 })
const p = payments.items[0]
return await callTool('billing:refundPayment', { paymentId: p.id, amount: 100000000 })`,
})
console.log(`  a tool error        → ${refund.status} ${refund.error.code} from ${refund.error.toolName}: ${refund.error.message}`)
const escape = await call('codecall:execute', { script: "const f = (() => {}).constructor('return process')\nreturn f()" })
console.log(`  an escape attempt   → ${escape.status} ${escape.error.code}: ${escape.error.message}`)
const self = await call('codecall:execute', { script: "return await callTool('codecall:execute', { script: 'return 1' })" })
console.log(`  calling itself      → ${self.status} ${self.error.code}`)
const hidden = await call('codecall:execute', { script: "return await callTool('users:_purgeAll', {})" })
console.log(`  an internal tool    → ${hidden.status} ${hidden.error.code}: ${hidden.error.message}`)

console.log(bold('\n■ 7. codecall:invoke — one call, no script'))
const invoked = await timed('invoke', () => call('codecall:invoke', { tool: 'users:get', input: { userId: 'usr_002' } }))
console.log(indent(JSON.stringify(invoked, null, 2).split('\n').slice(0, 14).join('\n')))

console.log(bold('\n■ 8. A person approves a risky call (MCP elicitation)'))
approvals.length = 0
const approved = await timed('execute, with one approval', () =>
  call('codecall:execute', {
    script: "const r = await callTool('orders:cancel', { orderId: 'ord_120', reason: 'customer_request' }); return { status: r.order.status, refundId: r.refundId }",
  }),
)
for (const message of approvals) {
  console.log('  the person was asked:')
  console.log(indent(message.split('\n').slice(0, 6).join('\n'), 4))
  console.log('  → accept')
}
console.log(`  result: ${approved.status} ${JSON.stringify(approved.result ?? approved.error)}`)

console.log(bold('\n■ 9. codecall:save — the plan of step 5 becomes a tool'))
// The plan is saved by the executionId of its run: the model does not send the code again.
const saved = await timed('save', () =>
  call('codecall:save', {
    name: 'open-ticket-customers',
    description: 'Customers with open support tickets: orders and what they owe, most owed first',
    executionId: executed.stats.executionId,
  }),
)
console.log(`  saved as ${bold(saved.name)} version ${saved.version}`)
const again = await call('codecall:search', { query: 'customers with open tickets and what they owe', topK: 3 })
for (const t of again.tools) console.log(`  ${t.score.toFixed(3)}  ${t.name}${dim(` — ${t.description.slice(0, 80)}`)}`)
const byName = await timed('execute by name', () => call('codecall:execute', { scriptName: 'open-ticket-customers' }))
console.log(`  execute { scriptName } → ${byName.status}; ${byName.stats.toolCalls} tool calls; the same ${byName.result.length} customers`)
// The server ships one saved script too; a plan calls it like any tool.
const nested = await call('codecall:execute', {
  script: "const o = await callTool('saved:customer-overview', { userId: 'usr_002' })\nreturn `${o.name}: ${o.orders} orders; open invoices: ${o.openInvoices}`",
})
console.log(`  a plan calling saved:customer-overview → ${nested.status} ${JSON.stringify(nested.result ?? nested.error)}`)

await client.close()
console.log(bold('\nDone.'))
