#!/usr/bin/env node
// An MCP server in "code mode": a realistic tool set (5 apps, 100+ tools, in-memory data) behind
// CodeCall. `list_tools` answers with CodeCall's meta-tools (and the few tools marked visible);
// `tools/call` of a meta-tool goes through `codecall.handle()`; every tool call — from a script or
// a direct call — runs through the host pipeline (input validation, PII masking, audit).
//
//   node examples/mcp-server/server.mjs                 # stdio
//   node examples/mcp-server/server.mjs --http 3000     # Streamable HTTP on http://127.0.0.1:3000/mcp
//   options: --mode codecall_only|codecall_opt_in|metadata_driven  --separator :|_  --no-direct-calls
//            --preset secure|balanced|...  --audit (audit lines on stderr)
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { CodeCall } from '../../index.js'
import { allTools } from './apps/index.mjs'
import { createStore } from './data.mjs'
import { createPipeline } from './pipeline.mjs'

const SERVER_INFO = { name: 'codecall-example', version: '0.1.0' }

/** MCP logging levels for the sandbox's `mcpLog` levels. */
const LEVELS = { debug: 'debug', info: 'info', warn: 'warning', warning: 'warning', error: 'error' }

/**
 * Builds the example: store, pipeline, CodeCall. `connect(transport)` serves one MCP session.
 * @param {{ mode?: string, separator?: string, directCalls?: boolean, preset?: string, onAudit?: (e: any) => void, tools?: any[] }} [options]
 */
export function createExampleServer(options = {}) {
  const store = createStore()
  const tools = options.tools ?? allTools()
  const pipeline = createPipeline({ tools, store, onAudit: options.onAudit })
  const sessions = new Set()

  const codecall = new CodeCall({
    mode: options.mode ?? 'codecall_only',
    metaToolSeparator: options.separator ?? ':',
    directCalls: { enabled: options.directCalls ?? true },
    vm: { preset: options.preset ?? 'secure' },
    onToolsChanged: () => {
      listed = names(codecall.listTools())
      for (const server of sessions) server.sendToolListChanged().catch(() => {})
    },
  })
  const names = (list) => new Set(list.map((t) => t.name))
  /** What `tools/call` may name: the meta-tools (fixed), and the listed tools (kept by onToolsChanged). */
  const metaNames = names(codecall.metaTools())
  let listed = new Set()
  codecall.setTools(tools)

  /** The CodeCall host for one MCP request: the pipeline, and events as MCP notifications. */
  function hostFor(extra) {
    const progressToken = extra?._meta?.progressToken
    let progress = 0
    const pending = new Set()
    const notify = (notification) => {
      const sent = extra.sendNotification(notification).catch(() => {})
      pending.add(sent)
      sent.finally(() => pending.delete(sent))
    }
    return {
      /** Resolves once every notification of this request is written — and, after progress
       *  notifications, a few milliseconds later: the SDK client (1.x) handles a notification a
       *  microtask after reading it but a response at once, so a response that arrives in the same
       *  read as the last progress notifications makes the client drop them ("unknown token"). */
      async flushed() {
        await Promise.all(pending)
        if (progress > 0) await new Promise((resolve) => setTimeout(resolve, 5))
      },
      callTool: (name, input, meta) => pipeline.callTool(name, input, { via: 'codecall', ...meta }),
      onEvent(event) {
        if (event.type === 'tool_call_start' || event.type === 'tool_call_end') {
          const done = event.type === 'tool_call_end'
          notify({
            method: 'notifications/message',
            params: { level: done && event.status === 'error' ? 'warning' : 'info', logger: 'codecall', data: event },
          })
          if (progressToken !== undefined && done) {
            progress += 1
            notify({
              method: 'notifications/progress',
              params: {
                progressToken,
                progress,
                message: `${event.toolName} ${event.status} in ${event.durationMs.toFixed(1)} ms`,
              },
            })
          }
        } else if (event.type === 'log') {
          notify({
            method: 'notifications/message',
            params: { level: LEVELS[event.level] ?? 'info', logger: 'script', data: { message: event.message, metadata: event.metadata } },
          })
        } else if (event.type === 'notify') {
          notify({ method: 'notifications/message', params: { level: 'info', logger: 'script', data: { event: event.event, payload: event.payload } } })
        }
      },
    }
  }

  async function callTool(name, args, extra) {
    if (metaNames.has(name)) {
      let result
      const host = hostFor(extra)
      try {
        result = await codecall.handle(name, args ?? {}, host)
        await host.flushed()
      } catch (e) {
        // Malformed meta-tool arguments (ERR_INVALID_ARG): the model can read and fix them.
        return { isError: true, content: [{ type: 'text', text: `${e.code ?? 'ERROR'}: ${e.message}` }] }
      }
      const failed = result?.status !== undefined && result.status !== 'ok'
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, isError: failed }
    }
    if (listed.has(name)) return pipeline.callTool(name, args, { via: 'direct' })
    throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`)
  }

  /** Serves one MCP session on `transport`; returns the SDK server. */
  async function connect(transport) {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions:
        'This server is in code mode: search for tools, describe them, then execute one JavaScript plan that calls them.',
    })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: codecall.listTools() }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(request.params.name, request.params.arguments, { ...extra, _meta: request.params._meta }),
    )
    sessions.add(server)
    server.onclose = () => sessions.delete(server)
    await server.connect(transport)
    return server
  }

  async function close() {
    for (const server of [...sessions]) await server.close().catch(() => {})
    await codecall.dispose()
  }

  return { codecall, pipeline, store, tools, connect, close }
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
