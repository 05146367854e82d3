// The gateway's cost and its saving, side by side, on real MCP servers from npm:
//
//   A  one tool call made directly: SDK client → fixture server (stdio)
//   B  the same call as a one-line script through the gateway, end to end over MCP:
//      SDK client → `codecall serve` (stdio) → codecall_execute → SDK client → fixture
//   C  ten tool calls: ten direct round trips, one after the other
//   D  the same ten calls in one codecall_execute (Promise.all), end to end
//   E  the context a client loads: tools/list of everything + memory + filesystem directly,
//      against the gateway's tools/list in front of the same three servers
//
//   node bench/gateway.mjs [iterations=200]
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CLI = join(ROOT, 'lib/gateway/cli.mjs')
const FIXTURE = join(ROOT, '__test__/fixtures/gateway/fixture-server.mjs')
const pkg = (name) => join(ROOT, 'node_modules/@modelcontextprotocol', name, 'dist/index.js')
const N = Number(process.argv[2] ?? 200)
const dir = mkdtempSync(join(tmpdir(), 'codecall-bench-'))

async function connect(command, args) {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }))
  return client
}

async function measure(label, n, fn) {
  for (let i = 0; i < Math.min(20, n); i++) await fn(i)
  const times = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn(i)
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))]
  const row = { label, n, p50: q(0.5), p90: q(0.9), p99: q(0.99) }
  console.log(`${label.padEnd(58)} p50 ${row.p50.toFixed(2).padStart(7)} ms  p90 ${row.p90.toFixed(2).padStart(7)} ms  p99 ${row.p99.toFixed(2).padStart(7)} ms`)
  return row
}

const config = join(dir, 'codecall.json')
writeFileSync(
  config,
  JSON.stringify({
    mcpServers: {
      fx: { command: process.execPath, args: [FIXTURE] },
      everything: { command: process.execPath, args: [pkg('server-everything')] },
      memory: { command: process.execPath, args: [pkg('server-memory')], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
      filesystem: { command: process.execPath, args: [pkg('server-filesystem'), dir] },
    },
    codecall: { vm: { preset: 'secure' } },
  }),
)

const direct = await connect(process.execPath, [FIXTURE])
const gateway = await connect(process.execPath, [CLI, 'serve', '--config', config, '--quiet'])
const execute = async (script) => {
  const r = await gateway.callTool({ name: 'codecall_execute', arguments: { script } })
  if (r.structuredContent?.status !== 'ok') throw new Error(JSON.stringify(r.structuredContent))
  return r.structuredContent
}

console.log(`gateway benchmark: Node ${process.version}, ${N} iterations per row\n`)
const a = await measure('A  1 call, direct (SDK client → fixture)', N, () => direct.callTool({ name: 'echo', arguments: { text: 'x' } }))
const b = await measure('B  1 call in codecall_execute (client → gateway → fixture)', N, () => execute(`return await callTool('fx:echo', { text: 'x' })`))
const c = await measure('C  10 calls, direct, one after the other', Math.ceil(N / 5), async () => {
  for (let i = 0; i < 10; i++) await direct.callTool({ name: 'echo', arguments: { text: String(i) } })
})
const d = await measure('D  10 calls in one codecall_execute (Promise.all)', Math.ceil(N / 5), () =>
  execute(`return await Promise.all(Array.from({ length: 10 }, (_, i) => callTool('fx:echo', { text: String(i) })))`),
)
console.log(`\nB / A = ${(b.p50 / a.p50).toFixed(2)} (gateway overhead per single call: ${(b.p50 - a.p50).toFixed(2)} ms at p50)`)
console.log(`D / C = ${(d.p50 / c.p50).toFixed(2)} (ten calls as one plan vs ten round trips from the client)`)

const sizes = []
for (const [name, args] of [
  ['everything', [pkg('server-everything')]],
  ['memory', [pkg('server-memory')]],
  ['filesystem', [pkg('server-filesystem'), dir]],
]) {
  const client = await connect(process.execPath, args)
  const { tools } = await client.listTools()
  sizes.push({ name, tools: tools.length, bytes: JSON.stringify(tools).length })
  await client.close()
}
const upstreamBytes = sizes.reduce((n, s) => n + s.bytes, 0)
const { tools: metaTools } = await gateway.listTools()
const gatewayBytes = JSON.stringify(metaTools).length
console.log(`\nE  tools/list: ${sizes.map((s) => `${s.name} ${s.tools} tools ${(s.bytes / 1024).toFixed(1)} KB`).join(', ')}`)
console.log(`   directly ${(upstreamBytes / 1024).toFixed(1)} KB (~${Math.round(upstreamBytes / 4)} tokens) vs gateway ${(gatewayBytes / 1024).toFixed(1)} KB (~${Math.round(gatewayBytes / 4)} tokens, ${metaTools.length} meta-tools): ${(100 - (100 * gatewayBytes) / upstreamBytes).toFixed(1)}% smaller`)

await direct.close()
await gateway.close()
