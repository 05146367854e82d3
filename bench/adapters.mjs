// The framework adapters' own cost: a one-call plan through `codeMode(server)` against calling
// the same tool directly through the same client, per framework (real SDK Client, in-memory
// transport, one process):
//
//   A  direct:   client.callTool('echo')                                  (the tool listed too)
//   B  plan:     client.callTool('codecall_execute', "return await callTool('echo', …)")
//   C  engine:   codecall.execute(same script) with a host that answers at once — no MCP at all
//
// B − A is what a plan costs over a direct call; B − A − C is the adapter's own part (the
// meta-tool dispatch, the synthetic tools/call into the framework, the result shaping).
//
//   node bench/adapters.mjs [iterations=500] [isolation=process|thread]
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport as MemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer as McpServerV2, InMemoryTransport as MemoryV2 } from '@modelcontextprotocol/server'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { FastMCP } from 'fastmcp'
import { z } from 'zod'
import { createRequire } from 'node:module'
import { codeMode as sdkCodeMode } from '../lib/adapters/mcp-sdk.mjs'
import { codeMode as fastmcpCodeMode } from '../lib/adapters/fastmcp.mjs'

const { CodeCall } = createRequire(import.meta.url)('../index.js')
const N = Number(process.argv[2] ?? 500)
const isolation = process.argv[3] ?? 'process'
const SCRIPT = `return await callTool('echo', { text: 'x' })`
const visible = { mode: 'codecall_opt_in', vm: { isolation }, tools: { echo: { codecall: { enabledInCodeCall: true, visibleInListTools: true } } } }
const echo = (text) => ({ content: [{ type: 'text', text: JSON.stringify({ text }) }] })

async function p50(n, fn) {
  for (let i = 0; i < Math.min(50, n); i++) await fn()
  const t = []
  for (let i = 0; i < n; i++) {
    const s = performance.now()
    await fn()
    t.push(performance.now() - s)
  }
  t.sort((a, b) => a - b)
  return t[Math.floor(n / 2)]
}

const flavours = {
  async 'sdk 1.x McpServer'() {
    const server = new McpServerV1({ name: 'b', version: '1' })
    server.registerTool('echo', { description: 'Echo', inputSchema: { text: z.string() } }, async ({ text }) => echo(text))
    const codecall = sdkCodeMode(server, visible)
    const [a, b] = MemoryV1.createLinkedPair()
    await server.connect(a)
    const client = new ClientV1({ name: 'b', version: '1' })
    await client.connect(b)
    return { codecall, call: (name, args) => client.callTool({ name, arguments: args }), close: () => client.close() }
  },
  async 'server 2.x McpServer'() {
    const server = new McpServerV2({ name: 'b', version: '1' })
    server.registerTool('echo', { description: 'Echo', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => echo(text))
    const codecall = sdkCodeMode(server, visible)
    const [a, b] = MemoryV2.createLinkedPair()
    await server.connect(a)
    const client = new ClientV2({ name: 'b', version: '1' })
    await client.connect(b)
    return { codecall, call: (name, args) => client.callTool({ name, arguments: args }), close: () => client.close() }
  },
  async 'fastmcp 4.x FastMCP'() {
    const server = new FastMCP({ name: 'b', version: '1.0.0', ping: { enabled: false }, logger: { debug() {}, error() {}, info() {}, log() {}, warn() {} } })
    server.addTool({ name: 'echo', description: 'Echo', parameters: z.object({ text: z.string() }), execute: async ({ text }) => JSON.stringify({ text }) })
    const codecall = fastmcpCodeMode(server, visible)
    const [a, b] = MemoryV1.createLinkedPair()
    const client = new ClientV1({ name: 'b', version: '1' })
    await Promise.all([server.connect(a), client.connect(b)])
    return { codecall, call: (name, args) => client.callTool({ name, arguments: args }), close: async () => (await client.close(), await server.stop()) }
  },
}

const engine = new CodeCall({ vm: { isolation } })
engine.setTools([{ name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }])
const C = await p50(N, () => engine.execute({ script: SCRIPT }, { callTool: (_, input) => echo(input.text) }))

console.log(`adapters benchmark: Node ${process.version}, ${N} iterations per row, isolation '${isolation}'`)
console.log(`C  engine alone (CodeCall.execute, host answers at once): p50 ${C.toFixed(3)} ms\n`)
console.log(`${'framework'.padEnd(22)} ${'A direct'.padStart(10)} ${'B plan'.padStart(10)} ${'B − A'.padStart(10)} ${'B − A − C'.padStart(11)}`)
for (const [name, make] of Object.entries(flavours)) {
  const f = await make()
  const A = await p50(N, () => f.call('echo', { text: 'x' }))
  const B = await p50(N, async () => {
    const r = await f.call('codecall_execute', { script: SCRIPT })
    if (r.structuredContent?.status !== 'ok') throw new Error(JSON.stringify(r))
  })
  console.log(`${name.padEnd(22)} ${A.toFixed(3).padStart(7)} ms ${B.toFixed(3).padStart(7)} ms ${(B - A).toFixed(3).padStart(7)} ms ${(B - A - C).toFixed(3).padStart(8)} ms`)
  await f.close()
  await f.codecall.dispose()
}
await engine.dispose()
