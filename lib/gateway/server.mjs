// The gateway as an MCP server, on the official SDK: over stdio (one client), or Streamable HTTP
// at /mcp with many sessions — all of them sharing one Gateway (one engine, one set of upstream
// connections). HTTP is loopback by default; with a token every request needs
// `Authorization: Bearer <token>`, and a non-loopback bind without one is refused.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { invalidArgumentsResult, LOG_LEVELS, metaToolResult, RequestScope, unknownTool } from '../common/mcp.mjs'
import { withMetaParent } from '../common/otel.mjs'
import { VERSION } from './gateway.mjs'

const INSTRUCTIONS =
  'This server is in code mode over several MCP servers. Search for tools (names are "<server>:<tool>"), ' +
  'describe them, then execute one JavaScript plan that calls them with callTool(name, input); ' +
  'mcp.listServers(), mcp.listResources(), mcp.readResource(server, uri), mcp.listPrompts() and ' +
  'mcp.getPrompt(server, name, args) are there too.'

/** §11: said only when saved scripts are on. */
const SAVE_INSTRUCTIONS = (save) =>
  `A plan that worked can be saved with ${save} (by its executionId); saved plans are the tools "saved:<name>", found by search and run by name.`

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

  /**
   * A new SDK server for one client session.
   * @param {() => string | null} [sessionId]
   */
  create(sessionId = () => null) {
    const gateway = this.gateway
    const server = new Server(
      { name: 'codecall', version: VERSION },
      { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: gateway.metaByKind.save ? `${INSTRUCTIONS} ${SAVE_INSTRUCTIONS(gateway.metaByKind.save)}` : INSTRUCTIONS },
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
        throw unknownTool(name, ` (this server lists ${[...gateway.metaNames].join(', ')})`)
      }
      const scope = new RequestScope({
        sessionId: sessionId() ?? extra.sessionId ?? null,
        sendNotification: (n) => extra.sendNotification(n),
        progressToken: request.params._meta?.progressToken,
        logLevel: () => level,
        signal: extra.signal,
        // §9: approvals are asked of this session's own client, on this request's stream.
        elicit: (params, options) => server.elicitInput(params, { ...options, relatedRequestId: extra.requestId }),
        canElicit: () => Boolean(server.getClientCapabilities()?.elicitation),
      })
      try {
        // §10: the client's `_meta.traceparent` is the parent of this call's spans.
        const result = await withMetaParent(request.params._meta, () => gateway.handle(name, args ?? {}, scope))
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
  // Once: the transport's close() calls onclose again (and the SDK's close runs through it), so
  // a close that starts from either end must not start another.
  let closed = false
  const ended = () => {
    if (closed) return
    closed = true
    onClosed()
  }
  transport.onclose = ended
  process.stdin.on('end', ended)
  await server.connect(transport)
  return async () => {
    if (closed && !server.transport) return
    closed = true
    await server.close().catch(() => {})
  }
}

/** At most this many HTTP sessions at once; more get 503. */
const MAX_SESSIONS = 1000
/** A session unused this long is closed. */
const SESSION_IDLE_MS = 30 * 60_000
/** The largest request body read before a session exists. */
const MAX_BODY_BYTES = 4 * 1024 * 1024
const TOO_LARGE = Symbol('too large')

function jsonError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
}

/** The request's JSON body (undefined if it is not JSON), read up to `limit` bytes. */
function readJson(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = []
    let size = 0
    req.on('data', (chunk) => {
      size += chunk.length
      if (size > limit) {
        // Stop keeping it; let the rest drain so the 413 can be read.
        req.removeAllListeners('data')
        req.resume()
        resolve(TOO_LARGE)
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      } catch {
        resolve(undefined)
      }
    })
    req.on('error', reject)
  })
}

/** A JSON-RPC initialize request (alone, or in a batch). */
function isInitialize(body) {
  const one = (m) => m !== null && typeof m === 'object' && m.jsonrpc === '2.0' && m.method === 'initialize' && m.id !== undefined
  return Array.isArray(body) ? body.some(one) : one(body)
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
  /** When each session was last used. @type {Map<StreamableHTTPServerTransport, number>} */
  const seen = new Map()
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
      if (transport) {
        seen.set(transport, Date.now())
        await transport.handleRequest(req, res)
        return
      }
      if (req.method !== 'POST' || sessionId !== undefined) {
        jsonError(res, sessionId === undefined ? 400 : 404, sessionId === undefined ? 'No session: initialize first' : 'Unknown session')
        return
      }
      // A new session only for a well-formed initialize request: anything else would leave a
      // server behind that no session id can ever reach (or close).
      const body = await readJson(req, MAX_BODY_BYTES)
      if (body === TOO_LARGE) return void jsonError(res, 413, `Request body over ${MAX_BODY_BYTES} bytes`)
      if (!isInitialize(body)) return void jsonError(res, 400, 'No session: the first request must be initialize')
      if (transports.size >= MAX_SESSIONS) return void jsonError(res, 503, `Too many sessions (${MAX_SESSIONS}); close one first`)
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, created)
          seen.set(created, Date.now())
        },
      })
      const server = sessions.create(() => created.sessionId ?? null)
      created.onclose = () => {
        if (created.sessionId) transports.delete(created.sessionId)
        seen.delete(created)
        server.close().catch(() => {})
      }
      await server.connect(created)
      await created.handleRequest(req, res, body)
      if (!created.sessionId) await server.close().catch(() => {})
    } catch (e) {
      log(`HTTP request failed: ${e?.message ?? e}`)
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal error\n')
    }
  })
  // Sessions idle for longer than SESSION_IDLE_MS are closed (a client that vanished never says so).
  const sweep = setInterval(() => {
    const cutoff = Date.now() - SESSION_IDLE_MS
    for (const [transport, at] of seen) if (at < cutoff) transport.close().catch(() => {})
  }, Math.min(SESSION_IDLE_MS, 60_000))
  sweep.unref()
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
      clearInterval(sweep)
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})))
      http.closeAllConnections?.()
      await new Promise((resolve) => http.close(() => resolve(undefined)))
    },
  }
}
