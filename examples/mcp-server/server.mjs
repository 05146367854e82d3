#!/usr/bin/env node
// An MCP server in "code mode": a realistic tool set (6 apps, 130 tools, in-memory data) on the
// official SDK's low-level `Server`, with every tool call going through the host pipeline (input
// validation, PII masking, audit). Code mode is one line — `codeMode(server, options)` from
// `@codecall/native/mcp-sdk` — after the server's own tools/list and tools/call handlers: tools/list
// then answers CodeCall's meta-tools (and the few tools marked visible), and every tool call of a
// plan, like a direct call of a visible tool, still goes through the tools/call handler below.
//
//   node examples/mcp-server/server.mjs                 # stdio
//   node examples/mcp-server/server.mjs --http 3000     # Streamable HTTP on http://127.0.0.1:3000/mcp
//   options: --mode codecall_only|codecall_opt_in|metadata_driven  --separator :|_  --no-direct-calls
//            --preset secure|balanced|...  --audit (audit lines on stderr)
//            --scripts <file.db | :memory:>  (saved scripts: codecall:save, and one shipped script)
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { codeMode } from '@codecall/native/mcp-sdk'
import { allTools } from './apps/index.mjs'
import { createStore } from './data.mjs'
import { createPipeline } from './pipeline.mjs'

const SERVER_INFO = { name: 'codecall-example', version: '0.1.0' }

/**
 * The saved script this server ships with (§11): models find it with search as
 * `saved:customer-overview` and run it by name or from a plan — one call instead of three.
 */
export const CUSTOMER_OVERVIEW = {
  name: 'customer-overview',
  description: "A customer's profile, five latest orders and open invoices, in one call",
  inputSchema: { type: 'object', properties: { userId: { type: 'string' } }, required: ['userId'] },
  tags: ['support'],
  script: `const [user, orders, invoices] = await Promise.all([
  callTool('users:get', { userId: input.userId }),
  callTool('orders:list', { userId: input.userId, limit: 5 }),
  callTool('billing:listInvoices', { userId: input.userId, status: 'open' }),
])
return { name: user.name, email: user.email, orders: orders.total, openInvoices: invoices.items.length }`,
}

/** A tool of the apps as MCP lists it; its CodeCall metadata rides in `_meta.codecall`. */
function mcpTool({ handler, appId, tags, examples, codecall, internal, source, ...tool }) {
  return { ...tool, _meta: { codecall: { appId, tags, examples, codecall, internal, source } } }
}

/**
 * Builds the example: store, pipeline, tools. `connect(transport)` serves one MCP session with a
 * server of its own in code mode; `addTool(tool)` adds a tool at run time (every session re-indexes
 * and tells its client).
 * `scripts` turns saved scripts on (off when absent): a SQLite file shared by every session (and
 * process), or `':memory:'` (each session its own, gone when it closes).
 * @param {{ mode?: string, separator?: string, directCalls?: boolean, preset?: string, onAudit?: (e: any) => void, tools?: any[], scripts?: string }} [options]
 */
export function createExampleServer(options = {}) {
  const store = createStore()
  const tools = options.tools ?? allTools()
  const pipeline = createPipeline({ tools, store, onAudit: options.onAudit })
  /** @type {Set<{ server: Server, codecall: import('../../index.js').CodeCall }>} */
  const sessions = new Set()
  /** Finished tool calls per progress token: a plan's calls report progress as they end. */
  const progressed = new Map()

  /** The server's own tools/call: the pipeline, plus one progress step per call when asked. */
  async function callTool(request, extra) {
    const { name, arguments: args } = request.params
    const result = await pipeline.callTool(name, args ?? {}, { via: 'mcp', sessionId: extra.sessionId })
    const token = request.params._meta?.progressToken ?? extra._meta?.progressToken
    if (token !== undefined) {
      const n = (progressed.get(token) ?? 0) + 1
      progressed.set(token, n)
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: n, message: `${name} ${result.isError ? 'error' : 'ok'}` } })
    }
    return result
  }

  /** Serves one MCP session on `transport`; returns the SDK server and its CodeCall. */
  async function connect(transport) {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions:
        'This server is in code mode: search for tools, describe them, then execute one JavaScript plan that calls them.',
    })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.map(mcpTool) }))
    server.setRequestHandler(CallToolRequestSchema, callTool)
    const codecall = codeMode(server, {
      mode: options.mode ?? 'codecall_only',
      metaToolSeparator: options.separator ?? ':',
      directCalls: { enabled: options.directCalls ?? true },
      vm: { preset: options.preset ?? 'secure' },
      // §9: a person approves refunds, coupon deletions and order cancellations through the MCP
      // client (elicitation); a client that cannot ask gets ACCESS_DENIED for those.
      approval: options.approval ?? { ask: ['billing:refund*', 'billing:delete*', 'orders:cancel'] },
      // §11: plans a model saves with codecall:save become tools (`saved:<name>`).
      ...(options.scripts ? { scripts: { store: options.scripts } } : {}),
    })
    // A store that has it already (a file another session seeded) keeps its versions.
    if (codecall.scripts && !(await codecall.scripts.get(CUSTOMER_OVERVIEW.name))) await codecall.scripts.save(CUSTOMER_OVERVIEW)
    const session = { server, codecall }
    sessions.add(session)
    server.onclose = () => {
      sessions.delete(session)
      codecall.dispose().catch(() => {})
    }
    await server.connect(transport)
    return session
  }

  /** Adds a tool at run time: each session's server announces it, and code mode re-indexes. */
  function addTool(tool) {
    tools.push(tool)
    for (const { server } of sessions) server.sendToolListChanged().catch(() => {})
  }

  async function close() {
    for (const { server, codecall } of [...sessions]) {
      await server.close().catch(() => {})
      await codecall.dispose().catch(() => {})
    }
  }

  return { pipeline, store, tools, connect, addTool, close }
}

/**
 * Serves the example over Streamable HTTP at `/mcp` (one SDK server per session).
 * @returns {Promise<{ url: string, example: ReturnType<typeof createExampleServer>, close: () => Promise<void> }>}
 */
export async function startHttp({ port = 0, host = '127.0.0.1', ...options } = {}) {
  const example = createExampleServer(options)
  const transports = new Map()
  const http = createServer(async (req, res) => {
    try {
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
        res.writeHead(404).end()
        return
      }
      const sessionId = req.headers['mcp-session-id']
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined
      if (!transport) {
        if (req.method !== 'POST' || sessionId !== undefined) {
          res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }))
          return
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        })
        transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId)
        await example.connect(transport)
      }
      await transport.handleRequest(req, res)
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e?.message ?? e))
    }
  })
  await new Promise((resolve) => http.listen(port, host, resolve))
  const address = http.address()
  return {
    url: `http://${host}:${address.port}/mcp`,
    example,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => {})
      http.closeAllConnections?.()
      await new Promise((resolve) => http.close(() => resolve()))
      await example.close()
    },
  }
}

function parseArgs(argv) {
  const out = { directCalls: true }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const next = () => argv[++i]
    if (a === '--http') out.http = /^\d+$/.test(argv[i + 1] ?? '') ? Number(next()) : 3000
    else if (a === '--mode') out.mode = next()
    else if (a === '--separator') out.separator = next()
    else if (a === '--preset') out.preset = next()
    else if (a === '--no-direct-calls') out.directCalls = false
    else if (a === '--audit') out.audit = true
    else if (a === '--scripts') out.scripts = next()
    else throw new Error(`unknown argument ${a}`)
  }
  return out
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const onAudit = args.audit ? (e) => process.stderr.write(`audit ${JSON.stringify(e)}\n`) : undefined
  if (args.http !== undefined) {
    const { url } = await startHttp({ port: args.http, ...args, onAudit })
    process.stderr.write(`codecall example MCP server on ${url}\n`)
    return
  }
  const example = createExampleServer({ ...args, onAudit })
  const transport = new StdioServerTransport()
  transport.onclose = () => example.close().then(() => process.exit(0))
  await example.connect(transport)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    process.stderr.write(`${e?.stack ?? e}\n`)
    process.exit(1)
  })
}
