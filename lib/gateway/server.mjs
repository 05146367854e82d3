// The gateway as an MCP server, on the official SDK: over stdio (one client), or Streamable HTTP
// at /mcp with many sessions — all of them sharing one Gateway (one engine, one set of upstream
// connections). HTTP is loopback by default; with a token every request needs
// `Authorization: Bearer <token>`, and a non-loopback bind without one is refused.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  SetLevelRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { invalidArgumentsResult, LOG_LEVELS, metaToolResult, RequestScope } from '../common/mcp.mjs'
import { VERSION } from './gateway.mjs'

const INSTRUCTIONS =
  'This server is in code mode over several MCP servers. Search for tools (names are "<server>:<tool>"), ' +
  'describe them, then execute one JavaScript plan that calls them with callTool(name, input); ' +
  'mcp.listServers(), mcp.listResources(), mcp.readResource(server, uri), mcp.listPrompts() and ' +
  'mcp.getPrompt(server, name, args) are there too.'

/** Hosts a loopback bind answers to; anything else (DNS rebinding) is refused. */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]|::1)$/i

export function isLoopback(host) {
  return LOOPBACK.test(host)
}

/** The set of live MCP sessions of one Gateway, told when the tool list changes. */
export class Sessions {
  constructor(gateway) {
    this.gateway = gateway
    /** @type {Set<Server>} */
    this.servers = new Set()
  }

  /** A new SDK server for one client session. */
  create(sessionId = () => null) {
    const gateway = this.gateway
    const server = new Server(
      { name: 'codecall', version: VERSION },
      { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: INSTRUCTIONS },
    )
    let level = 'info'
    server.setRequestHandler(SetLevelRequestSchema, (request) => {
      level = request.params.level
      return {}
    })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: gateway.listTools() }))
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name, arguments: args } = request.params
      if (!gateway.isMetaTool(name)) {
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name} (this server lists ${[...gateway.metaNames].join(', ')})`)
      }
      const scope = new RequestScope({
        sessionId: sessionId() ?? extra.sessionId ?? null,
        sendNotification: (n) => extra.sendNotification(n),
        progressToken: request.params._meta?.progressToken,
        logLevel: () => level,
        signal: extra.signal,
      })
      try {
        const result = await gateway.handle(name, args ?? {}, scope)
        await scope.flushed()
        return metaToolResult(result)
      } catch (e) {
        return invalidArgumentsResult(e)
      }
    })
    this.servers.add(server)
    server.onclose = () => this.servers.delete(server)
    return server
  }

  toolsChanged() {
    for (const server of this.servers) server.sendToolListChanged().catch(() => {})
  }

  /** Upstream logging that no running script is waiting for goes to every session. */
  log(serverName, params) {
    const level = LOG_LEVELS.includes(params?.level) ? params.level : 'info'
    for (const server of this.servers) {
      server.sendLoggingMessage({ level, logger: serverName, data: params?.data }).catch(() => {})
    }
  }

  async close() {
    await Promise.all([...this.servers].map((s) => s.close().catch(() => {})))
  }
}

/** Serves one client over stdin/stdout; resolves to a `close()` for shutdown. */
export async function serveStdio(gateway, sessions, onClosed) {
  const server = sessions.create()
  const transport = new StdioServerTransport()
  transport.onclose = onClosed
  process.stdin.on('end', onClosed)
  await server.connect(transport)
  return async () => {
    await server.close().catch(() => {})
  }
}

function sameSecret(given, expected) {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/**
 * Streamable HTTP at `/mcp`. Resolves to `{ url, close }` once listening.
 * @param {import('./gateway.mjs').Gateway} gateway
 * @param {Sessions} sessions
 * @param {{ port: number, host: string, token?: string | null, log: (line: string, level?: string) => void }} options
 */
export async function serveHttp(gateway, sessions, options) {
  const { port, host, token, log } = options
  /** @type {Map<string, StreamableHTTPServerTransport>} */
  const transports = new Map()
  const loopback = isLoopback(host)
  const http = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost')
      if (loopback) {
        // DNS rebinding: a web page must not reach a loopback server through a name it controls.
        const hostHeader = String(req.headers.host ?? '').replace(/:\d+$/, '')
        const origin = req.headers.origin
        let originHost = null
        try {
          originHost = origin ? new URL(origin).hostname : null
        } catch {
          originHost = '?'
        }
        if (!isLoopback(hostHeader) || (originHost !== null && !isLoopback(originHost))) {
          res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden: loopback server, non-loopback Host or Origin\n')
          return
        }
      }
      if (token) {
        const auth = String(req.headers.authorization ?? '')
        const m = /^Bearer\s+(.+)$/i.exec(auth)
        if (!m || !sameSecret(m[1].trim(), token)) {
          res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="codecall"' })
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized: a valid Bearer token is required' }, id: null }))
          return
        }
      }
      if (url.pathname !== '/mcp') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: the MCP endpoint is /mcp\n')
        return
      }
      const sessionId = req.headers['mcp-session-id']
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined
      if (!transport) {
        if (req.method !== 'POST' || sessionId !== undefined) {
          res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: sessionId === undefined ? 'No session: initialize first' : 'Unknown session' }, id: null }))
          return
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, created),
        })
        created.onclose = () => {
          if (created.sessionId) transports.delete(created.sessionId)
        }
        const server = sessions.create(() => created.sessionId ?? null)
        await server.connect(created)
        transport = created
      }
      await /** @type {StreamableHTTPServerTransport} */ (transport).handleRequest(req, res)
    } catch (e) {
      log(`HTTP request failed: ${e?.message ?? e}`)
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal error\n')
    }
  })
  await /** @type {Promise<void>} */ (new Promise((resolve, reject) => {
    http.once('error', reject)
    http.listen(port, host, () => {
      http.off('error', reject)
      resolve()
    })
  }))
  const address = /** @type {import('node:net').AddressInfo} */ (http.address())
  const shownHost = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shownHost}:${address.port}/mcp`,
    async close() {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})))
      http.closeAllConnections?.()
      await new Promise((resolve) => http.close(() => resolve(undefined)))
    },
  }
}
