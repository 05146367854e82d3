// The gateway as an MCP server, on the official SDK, to clients of both protocol eras (§6, §12):
// over stdio (one client: SDK 2.x `serveStdio`, which serves a 2025 handshake or 2026-07-28
// requests), or Streamable HTTP at /mcp — legacy clients get sessions (SDK 1.x, as before),
// modern requests a per-request SDK 2.x server (`createMcpHandler`) — all sharing one Gateway
// (one engine, one set of upstream connections). HTTP is loopback by default; with a token every request needs
// `Authorization: Bearer <token>`, and a non-loopback bind without one is refused.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import { createMcpHandler, isLegacyRequest, Server } from '@modelcontextprotocol/server'
import { serveStdio as sdkServeStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio'
import { invalidArgumentsResult, LOG_LEVELS, metaToolResult, RequestScope, unknownTool } from '../common/mcp.mjs'
import { canElicitForm, modernRequest, ParkedRuns, principalOf, stateKey } from '../common/modern.mjs'
import { withMetaParent } from '../common/otel.mjs'
import { SqliteRunStore, VERSION } from './gateway.mjs'

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

/**
 * SDK 1.x, for 2025-era HTTP sessions only: loaded by `serveHttp` (a stdio gateway — and a
 * client's probe process — never pays for it).
 * @type {{ Server: typeof import('@modelcontextprotocol/sdk/server/index.js').Server,
 *          StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport,
 *          types: typeof import('@modelcontextprotocol/sdk/types.js') } | null}
 */
let legacySdk = null

async function loadLegacySdk() {
  if (!legacySdk) {
    const [server, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ])
    legacySdk = { Server: server.Server, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport, types }
  }
  return legacySdk
}

/** How long a client may cache the meta-tool list (§12): fixed in codecall_only mode. */
const LIST_TTL_MS = { fixed: 3_600_000, varying: 60_000 }

/**
 * The live MCP servers of one Gateway (legacy sessions, stdio connections of either era, the
 * modern HTTP handler), told when the tool list changes; and the runs waiting across requests.
 */
export class Sessions {
  /**
   * @param {import('./gateway.mjs').Gateway} gateway
   * @param {{ stateKey?: unknown, log?: (line: string) => void }} [options]
   */
  constructor(gateway, options) {
    this.gateway = gateway
    /** Servers that may be told of list changes: legacy 1.x sessions and 2.x stdio instances. @type {Map<any, 'legacy' | 'modern'>} */
    this.servers = new Map()
    /** Modern HTTP handlers: list changes go to their `subscriptions/listen` streams. @type {Set<{ notify: { toolsChanged(): void } }>} */
    this.handlers = new Set()
    const approval = gateway.config.codecall.approval
    const key = stateKey(options?.stateKey ?? gateway.config.codecall.stateKey, process.env, 'codecall.stateKey')
    /** §12: executions waiting for a person across modern requests. */
    // §12: with codecall.runs.store, a waiting run is kept there too (opened on first need).
    const runsPath = gateway.config.codecall.runs?.store
    const store = runsPath ? () => new SqliteRunStore(runsPath) : null
    this.runs = new ParkedRuns({ key: key.key, timeoutMs: approval?.timeoutMs ?? 120_000, log: options?.log ?? gateway.log, store })
  }

  get instructions() {
    const save = this.gateway.metaByKind.save
    return save ? `${INSTRUCTIONS} ${SAVE_INSTRUCTIONS(save)}` : INSTRUCTIONS
  }

  /** Cache hints of the modern era's list results and discover (§12). */
  get cacheHints() {
    const ttlMs = this.gateway.config.codecall.mode === 'codecall_only' ? LIST_TTL_MS.fixed : LIST_TTL_MS.varying
    return { 'tools/list': { ttlMs, cacheScope: /** @type {const} */ ('public') }, 'server/discover': { ttlMs, cacheScope: /** @type {const} */ ('public') } }
  }

  /**
   * A legacy (2025-era) SDK 1.x server for one HTTP session.
   * @param {() => string | null} [sessionId]
   */
  create(sessionId = () => null) {
    const gateway = this.gateway
    if (!legacySdk) throw new Error('Sessions.create: the legacy SDK is not loaded (serveHttp loads it)')
    const { Server: LegacyServer, types } = legacySdk
    const { CallToolRequestSchema, ListToolsRequestSchema, SetLevelRequestSchema } = types
    const server = new LegacyServer({ name: 'codecall', version: VERSION }, { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: this.instructions })
    let level = 'info'
    server.setRequestHandler(SetLevelRequestSchema, (request) => {
      level = request.params.level
      return {}
    })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await gateway.listToolsReady() }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.call(request.params, {
        sessionId: sessionId() ?? extra.sessionId ?? null,
        notify: (n) => extra.sendNotification(n),
        logLevel: () => level,
        signal: extra.signal,
        // §9: approvals are asked of this session's own client, on this request's stream.
        elicit: (params, options) => server.elicitInput(params, { ...options, relatedRequestId: extra.requestId }),
        canElicit: () => Boolean(server.getClientCapabilities()?.elicitation),
      }),
    )
    this.servers.set(server, 'legacy')
    server.onclose = () => this.servers.delete(server)
    return server
  }

  /**
   * An SDK 2.x server for one stdio connection (either era) or one modern HTTP request. Cheap:
   * nothing starts until a request needs the tools (a probe instance is thrown away).
   * @param {{ era: 'legacy' | 'modern', authInfo?: any, http?: boolean }} context
   */
  createModern(context) {
    const gateway = this.gateway
    const server = new Server(
      { name: 'codecall', version: VERSION },
      { capabilities: { tools: { listChanged: true }, logging: {} }, instructions: this.instructions, cacheHints: this.cacheHints },
    )
    let level = 'info'
    server.setRequestHandler('logging/setLevel', (request) => {
      level = request.params.level
      return {}
    })
    server.setRequestHandler('tools/list', async () => ({ tools: await gateway.listToolsReady() }))
    const principal = principalOf(context.authInfo)
    server.setRequestHandler('tools/call', (request, ctx) => {
      const req = ctx.mcpReq
      const modern = modernRequest(ctx, request)
      if (!modern) {
        return this.call(request.params, {
          sessionId: ctx.sessionId ?? null,
          notify: (n) => req.notify(n),
          logLevel: () => level,
          signal: req.signal,
          // §9: a legacy connection is asked with elicitation/create on this request.
          elicit: (params, options) => req.send({ method: 'elicitation/create', params }, options),
          canElicit: () => Boolean(server.getClientCapabilities()?.elicitation),
        })
      }
      return this.call(request.params, {
        sessionId: principal,
        notify: (n) => req.notify(n),
        logLevel: () => modern.logLevel,
        signal: req.signal,
        modern: { capabilities: modern.capabilities, principal, inputResponses: req.inputResponses, requestState: req.requestState() },
      })
    })
    // A stdio connection's server hears of list changes (modern: on its subscriptions/listen
    // streams); a per-request HTTP server lives for one request (its handler's listen streams do).
    if (context.http !== true) {
      this.servers.set(server, context.era)
      server.onclose = () => this.servers.delete(server)
    }
    return server
  }

  /**
   * One `tools/call` of a meta-tool, in either era.
   * @param {{ name: string, arguments?: any, _meta?: any }} params
   * @param {{ sessionId: string | null, notify: (n: any) => Promise<void>, logLevel: () => string | null, signal?: AbortSignal,
   *           elicit?: (params: any, options: any) => Promise<any>, canElicit?: () => boolean,
   *           modern?: { capabilities: any, principal: string | null, inputResponses?: any, requestState?: unknown } }} io
   */
  async call(params, io) {
    const gateway = this.gateway
    const { name, arguments: args } = params
    if (!gateway.isMetaTool(name)) {
      throw unknownTool(name, ` (this server lists ${[...gateway.metaNames].join(', ')})`)
    }
    const meta = params._meta
    const progressToken = meta?.progressToken
    const modern = io.modern
    const run = (/** @type {RequestScope} */ scope) =>
      // §10: the client's `_meta.traceparent` is the parent of this call's spans.
      withMetaParent(meta, () => gateway.handle(name, args ?? {}, scope)).then(async (result) => {
        await scope.flushed()
        return result
      })
    try {
      const asks = modern && gateway.config.codecall.approval && canElicitForm(modern.capabilities)
      if (modern && (asks || (modern.requestState !== undefined && modern.requestState !== null))) {
        // §12: a call that needs a person ends this request with input_required; the retry goes on.
        const out = await this.runs.call({
          tool: name,
          args: args ?? {},
          principal: modern.principal,
          requestState: modern.requestState,
          inputResponses: modern.inputResponses,
          attach: { send: io.notify, progressToken, logLevel: io.logLevel(), signal: io.signal },
          start: (r) => {
            const scope = new RequestScope({ sessionId: io.sessionId, sendNotification: r.send, progressToken: r.progressToken, logLevel: r.logLevel, signal: r.signal, approve: asks ? r.approve : undefined })
            scope.journal = r.journal
            scope.resumed = r.resumed
            scope.handedOver = r.handedOver
            return run(scope)
          },
        })
        if ('inputRequired' in out) return /** @type {any} */ ({ resultType: 'input_required', ...out.inputRequired })
        return metaToolResult(out.result)
      }
      const scope = new RequestScope({
        sessionId: io.sessionId,
        sendNotification: io.notify,
        progressToken,
        logLevel: io.logLevel,
        signal: io.signal,
        elicit: modern ? undefined : io.elicit,
        canElicit: modern ? undefined : io.canElicit,
      })
      return metaToolResult(await run(scope))
    } catch (e) {
      return invalidArgumentsResult(e)
    }
  }

  toolsChanged() {
    for (const server of this.servers.keys()) server.sendToolListChanged().catch(() => {})
    for (const handler of this.handlers) handler.notify.toolsChanged()
  }

  /** Upstream logging that no running script is waiting for goes to every legacy session. */
  log(serverName, params) {
    const level = LOG_LEVELS.includes(params?.level) ? params.level : 'info'
    for (const [server, era] of this.servers) {
      // §12: a modern client gets log messages only on a request that asked for them.
      if (era !== 'legacy') continue
      server.sendLoggingMessage({ level, logger: serverName, data: params?.data }).catch(() => {})
    }
  }

  async close() {
    this.runs.close()
    await Promise.all([...this.servers.keys()].map((s) => s.close().catch(() => {})))
  }
}

/** Serves one client over stdin/stdout, in whichever era it speaks; resolves to a `close()` for shutdown. */
export async function serveStdio(gateway, sessions, onClosed) {
  // Once: a close that starts from either end must not start another.
  let closed = false
  const ended = () => {
    if (closed) return
    closed = true
    onClosed()
  }
  const transport = new StdioServerTransport()
  const handle = sdkServeStdio((context) => sessions.createModern(context), {
    legacy: 'serve',
    transport,
    onerror: (e) => gateway.log(`stdio: ${e?.message ?? e}`, 'info'),
  })
  const onclose = transport.onclose
  transport.onclose = () => {
    try {
      onclose?.()
    } finally {
      ended()
    }
  }
  process.stdin.on('end', ended)
  return async () => {
    closed = true
    await handle.close().catch(() => {})
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

/**
 * The request's body, read up to `limit` bytes: its bytes and its JSON (undefined if it is not JSON).
 * @returns {Promise<typeof TOO_LARGE | { raw: Buffer, json: unknown }>}
 */
function readBody(req, limit) {
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
      const raw = Buffer.concat(chunks)
      let json
      try {
        json = JSON.parse(raw.toString('utf8'))
      } catch {
        json = undefined
      }
      resolve({ raw, json })
    })
    req.on('error', reject)
  })
}

/** A JSON-RPC initialize request (alone, or in a batch). */
function isInitialize(body) {
  const one = (m) => m !== null && typeof m === 'object' && m.jsonrpc === '2.0' && m.method === 'initialize' && m.id !== undefined
  return Array.isArray(body) ? body.some(one) : one(body)
}

/** A node:http request as a web `Request` (its body already read), aborted by `signal`. */
function webRequest(req, url, raw, signal) {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  return new Request(url, { method: req.method, headers, body: raw.length ? raw : undefined, signal })
}

/** Writes a web `Response` (JSON, or an SSE stream written as it comes) to a node:http response. */
async function sendWeb(res, response) {
  /** @type {Record<string, string>} */
  const headers = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  res.writeHead(response.status, headers)
  if (!response.body) return void res.end()
  const reader = response.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve))
      if (res.destroyed) break
    }
  } finally {
    reader.cancel().catch(() => {})
    res.end()
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
  const { StreamableHTTPServerTransport } = await loadLegacySdk()
  /** @type {Map<string, InstanceType<typeof StreamableHTTPServerTransport>>} */
  const transports = new Map()
  /** When each session was last used. @type {Map<InstanceType<typeof StreamableHTTPServerTransport>, number>} */
  const seen = new Map()
  const loopback = isLoopback(host)
  const modern = createMcpHandler((context) => sessions.createModern({ ...context, http: true }), {
    legacy: 'reject',
    maxRequestBodySize: MAX_BODY_BYTES,
    onerror: (e) => log(`HTTP (2026-07-28): ${e?.message ?? e}`, 'info'),
  })
  sessions.handlers.add(modern)
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
      const read = await readBody(req, MAX_BODY_BYTES)
      if (read === TOO_LARGE) return void jsonError(res, 413, `Request body over ${MAX_BODY_BYTES} bytes`)
      const body = read.json
      // §12: a request that carries the 2026-07-28 envelope is served by a server of its own (no
      // session); closing its stream aborts it. Everything else is a 2025-era session as before.
      const abort = new AbortController()
      const request = webRequest(req, url.href, read.raw, abort.signal)
      if (!(await isLegacyRequest(request, body))) {
        res.once('close', () => {
          if (!res.writableFinished) abort.abort(new Error('the client closed the request'))
        })
        const authInfo = token ? { token, clientId: 'codecall-bearer', scopes: [] } : undefined
        await sendWeb(res, await modern.fetch(request, { parsedBody: body, authInfo }))
        return
      }
      // A new session only for a well-formed initialize request: anything else would leave a
      // server behind that no session id can ever reach (or close).
      if (!isInitialize(body)) return void jsonError(res, 400, 'No session: the first request must be initialize (or send a 2026-07-28 request)')
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
      sessions.handlers.delete(modern)
      await modern.close().catch(() => {})
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})))
      http.closeAllConnections?.()
      await new Promise((resolve) => http.close(() => resolve(undefined)))
    },
  }
}
