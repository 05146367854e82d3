// The stateless era (MCP 2026-07-28, api.md §12), measured:
//
//   G  the gateway's connect time over stdio, per client mode of the SDK 2.x client (legacy, auto,
//      pinned 2026-07-28): spawn `codecall serve`, connect, first tools/list — with one upstream
//      (the npm memory server). Auto mode on stdio probes in a throwaway sibling process first.
//   H  the SDK's modern HTTP pattern (`createMcpHandler(factory)`, a server per request) with one
//      shared engine (`codeMode(server, { engine })`): a trivial execute and a search, against a
//      plain tool call on the same server, and the same call on the factory without codeMode (what
//      attaching it costs), through the real SDK client (HTTP on loopback).
//
//   node bench/modern.mjs [connects=8] [requests=300]
//
// CODECALL_CLI=<path to lib/gateway/cli.mjs>: G against another checkout's gateway (a before/after
// comparison: a `git worktree` of an older commit, with node_modules linked and the addon copied).
// CODECALL_BENCH=G or H: only that part.
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import { z } from 'zod'
import { codeMode } from '../lib/adapters/mcp-sdk.mjs'

const require = createRequire(import.meta.url)
const { CodeCall } = require('../index.js')
const CONNECTS = Number(process.argv[2] ?? 8)
const REQUESTS = Number(process.argv[3] ?? 300)
const ROOT = new URL('..', import.meta.url).pathname
const CLI = process.env.CODECALL_CLI ?? join(ROOT, 'lib/gateway/cli.mjs')
const ONLY = process.env.CODECALL_BENCH

function stats(samples) {
  const t = [...samples].sort((a, b) => a - b)
  const at = (q) => t[Math.min(t.length - 1, Math.floor(q * t.length))]
  return { min: t[0], p50: at(0.5), max: t[t.length - 1] }
}
const ms = (v) => `${v.toFixed(v < 10 ? 2 : 0)} ms`
const row = (name, s) => console.log(`| ${name} | ${ms(s.min)} | ${ms(s.p50)} | ${ms(s.max)} |`)

async function connectTimes() {
  const dir = mkdtempSync(join(tmpdir(), 'codecall-bench-modern-'))
  const config = join(dir, 'codecall.json')
  const memory = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js')
  writeFileSync(config, JSON.stringify({ mcpServers: { memory: { command: process.execPath, args: [memory], env: { MEMORY_FILE_PATH: join(dir, 'm.jsonl') } } }, codecall: { cacheDir: false } }))
  console.log(`\nG — gateway connect over stdio (spawn, connect, first tools/list), ${CONNECTS} connects each, ${CLI}\n`)
  console.log('| client mode | min | p50 | max |\n|---|---|---|---|')
  for (const [name, mode] of [['legacy', 'legacy'], ['auto', 'auto'], ['pinned 2026-07-28', { pin: '2026-07-28' }]]) {
    const samples = []
    try {
      for (let i = 0; i < CONNECTS; i++) {
        const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode } })
        const t0 = performance.now()
        try {
          await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'serve', '--config', config, '--quiet'], stderr: 'ignore' }))
          await client.listTools()
          samples.push(performance.now() - t0)
        } finally {
          await client.close().catch(() => {})
        }
      }
      row(name, stats(samples))
    } catch (e) {
      // A gateway of before issue 41 answers no client pinned to 2026-07-28.
      console.log(`| ${name} | fails: ${String(e?.message ?? e).split('\n')[0]} | | |`)
    }
  }
}

async function perRequest() {
  const engine = new CodeCall({ metaToolSeparator: '_', mode: 'codecall_opt_in', vm: { isolation: process.platform === 'linux' ? 'process' : 'thread' } })
  const factory = (withCodeMode = true) => {
    const server = new McpServer({ name: 'bench', version: '1.0.0' })
    server.registerTool('echo', { description: 'Echo the given text back', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }))
    server.registerTool('users_list', { description: 'List the users of the directory', inputSchema: z.object({ limit: z.number().optional() }) }, async () => ({ content: [{ type: 'text', text: '[]' }] }))
    if (withCodeMode) codeMode(server, { engine, tools: { echo: { codecall: { enabledInCodeCall: true, visibleInListTools: true } } } })
    return server
  }
  const handler = createMcpHandler(() => factory())
  // The same factory without code mode (at /bare): what attaching it to each server costs.
  const bare = createMcpHandler(() => factory(false))
  const http = createServer(async (req, res) => {
    const chunks = []
    for await (const c of req) chunks.push(c)
    const headers = new Headers()
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v)
    const response = await (req.url === '/bare' ? bare : handler).fetch(new Request(`http://localhost${req.url}`, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined }))
    res.writeHead(response.status, Object.fromEntries(response.headers))
    res.end(Buffer.from(await response.arrayBuffer()))
  })
  await new Promise((r) => http.listen(0, '127.0.0.1', r))
  const url = new URL(`http://127.0.0.1:${http.address().port}/mcp`)
  const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new StreamableHTTPClientTransport(url))
  const bareClient = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await bareClient.connect(new StreamableHTTPClientTransport(new URL('/bare', url)))
  const run = async (fn) => {
    for (let i = 0; i < Math.min(30, REQUESTS); i++) await fn()
    const samples = []
    for (let i = 0; i < REQUESTS; i++) {
      const t0 = performance.now()
      await fn()
      samples.push(performance.now() - t0)
    }
    return stats(samples)
  }
  console.log(`\nH — the modern HTTP pattern (a server per request, one shared engine), ${REQUESTS} requests each\n`)
  console.log('| request | min | p50 | max |\n|---|---|---|---|')
  const bareCall = await run(() => bareClient.callTool({ name: 'echo', arguments: { text: 'x' } }))
  row('plain tool call, the factory without codeMode', bareCall)
  const plain = await run(() => client.callTool({ name: 'echo', arguments: { text: 'x' } }))
  row('plain tool call (echo, listed beside the meta-tools)', plain)
  const execute = await run(() => client.callTool({ name: 'codecall_execute', arguments: { script: "return await callTool('echo', { text: 'x' })" } }))
  row('codecall_execute, one tool call', execute)
  const search = await run(() => client.callTool({ name: 'codecall_search', arguments: { query: 'list users' } }))
  row('codecall_search', search)
  console.log(`\nat p50: codeMode's attach (plain − without codeMode) ${ms(plain.p50 - bareCall.p50)}; execute − plain ${ms(execute.p50 - plain.p50)}; search − plain ${ms(search.p50 - plain.p50)}`)
  await client.close()
  await bareClient.close()
  http.close()
  await handler.close()
  await bare.close()
  await engine.dispose()
}

if (ONLY !== 'H') await connectTimes()
if (ONLY !== 'G') await perRequest().catch((e) => console.log(`\nH skipped: ${e?.message ?? e}`))
