// One upstream MCP server, spoken to with the official SDK client (`@modelcontextprotocol/client`
// 2.x): stdio (a child process) or HTTP (Streamable HTTP, falling back to the old SSE transport).
// Upstreams of both protocol eras are reached: the client negotiates the era (§12) — modern
// (2026-07-28: `server/discover`, no handshake, list changes through `subscriptions/listen`) or
// legacy (`initialize`). It owns the connection's life — start, loss, restart with backoff on next
// use, close with no process left behind — and the server's tool list, filtered once here: seed
// 002's internal tools and the config's include/exclude globs never leave this file.
//
// It never throws at its callers for the upstream's sake: every failure of a call is a
// `GatewayError` naming the server, with a stable `code` the engine passes to the script.
//
// Errors are told apart by their `code` (a JSON-RPC number, or the client's own string codes),
// never by `instanceof` across packages.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { coalesced } from '../common/mcp.mjs'
import { clientSpan, metaWithContext, otel } from '../common/otel.mjs'
import { globToRegExp } from './config.mjs'
import { describeError, GatewayError } from './errors.mjs'
import { killTree, processTree } from './processes.mjs'

/**
 * The SDK 2.x client, loaded by the first upstream start: a gateway that only answers
 * `server/discover` or `initialize` (a client's probe process) never loads it.
 * @type {typeof import('@modelcontextprotocol/client') & typeof import('@modelcontextprotocol/client/stdio')}
 */
let sdk = /** @type {any} */ (null)

async function loadSdk() {
  if (!sdk) {
    const [client, stdio] = await Promise.all([import('@modelcontextprotocol/client'), import('@modelcontextprotocol/client/stdio')])
    sdk = /** @type {any} */ ({ ...client, ...stdio })
  }
  return sdk
}

export { describeError, GatewayError }

/** Seed 002: tools a server keeps for itself are never indexed, described, listed or callable. */
export function isInternalTool(tool) {
  return tool._internal === true || tool._meta?.internal === true || String(tool.name).startsWith('internal_')
}

const MAX_PAGES = 50
const MAX_ITEMS = 10_000
const MAX_STDERR_LINE = 2000
/**
 * @typedef {{ what?: string, timeoutMs?: number, signal?: AbortSignal,
 *             onprogress?: (progress: { progress: number, total?: number, message?: string }) => void }} RequestOptions
 */

/**
 * Every result as the server sent it. Without a result schema the 2.x client validates spec
 * results against its own schemas, and rebuilds them; a relay must not (extra keys, their order,
 * a tool's own `_internal` flag). The client has already checked the era's envelope (a modern
 * result's `resultType`) before this runs.
 * @type {import('@modelcontextprotocol/client').StandardSchemaV1<Record<string, unknown>>}
 */
const AS_SENT = {
  '~standard': {
    version: 1,
    vendor: 'codecall',
    validate: (value) =>
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? { value: /** @type {Record<string, unknown>} */ (value) }
        : { issues: [{ message: 'a result must be a JSON object' }] },
  },
}

/** The JSON-RPC codes the 1.x client gave its own timeouts and closes; kept in `details.mcpCode`. */
const TIMEOUT_CODE = -32001
const CLOSED_CODE = -32000
/** SEP-2243: a Streamable HTTP request whose `Mcp-*` headers disagree with its body (a stale tool list). */
const HEADER_MISMATCH = -32020

/**
 * How a CLIENT span reads a failed request: every upstream failure is the script's
 * TOOL_EXECUTION_ERROR (as `#callError` makes it), with the JSON-RPC error code beside it.
 * A tool's `isError` answer is a failed call too (the script gets TOOL_EXECUTION_ERROR).
 */
const REQUEST_SPAN = {
  error: (e) => ({
    code: 'TOOL_EXECUTION_ERROR',
    attributes: Number.isInteger(e?.code) ? { 'codecall.mcp.error_code': e.code } : undefined,
  }),
}
const TOOL_CALL_SPAN = { ...REQUEST_SPAN, result: (r) => (r?.isError === true ? 'TOOL_EXECUTION_ERROR' : undefined) }

/** Restart delays after consecutive failed starts: 1 s, 2 s, 4 s, ... at most 60 s. */
const backoffMs = (failures) => (failures <= 0 ? 0 : Math.min(60_000, 1000 * 2 ** (failures - 1)))

/*
 * The era of a stdio upstream, remembered.
 *
 * A client in auto mode learns a stdio server's era by sending `server/discover` to a throwaway
 * sibling process (the SDK's own choice: some servers — Rust rmcp — exit on any request before
 * `initialize`, so the probe must not spend the real process), then starts the real one. Done on
 * every start, each stdio upstream would start twice per gateway start and per restart. So the
 * verdict is kept, per upstream — keyed by a hash of what starts it (command, args, env, cwd), so
 * a changed config probes again — in memory for restarts, and in `upstream-eras.json` in the
 * gateway's cache folder (when it has one) for the next gateway; the client gets it as `prior` and
 * starts one process, with no probe. Measured on the fixtures (a modern-only `serveStdio` server
 * and a 1.x one): the first start ever costs 2 processes (probe + server), every later start 1.
 *
 * Not probing in place (`server/discover` on the real process, then `initialize` on the same
 * pipe) would save the first probe too, but kills rmcp-style servers; not done.
 *
 * A verdict can go stale: the server is upgraded (a legacy verdict still works — the server still
 * answers `initialize` — so legacy verdicts are dated and re-probed after VERDICT_TTL_MS) or
 * downgraded (a modern verdict fails at once). A start that fails on a remembered verdict forgets
 * it and probes again, within the same start.
 */
const VERDICT_TTL_MS = 24 * 60 * 60 * 1000
const VERDICTS_FILE = 'upstream-eras.json'
/** @typedef {{ kind: 'modern', discover: any, at: number } | { kind: 'legacy', at: number }} Verdict */
/** @type {Map<string, Verdict>} */
const verdicts = new Map()

/** What starts a stdio server, as a key (the env's values are hashed, never stored). */
function verdictKey(spec) {
  const env = Object.fromEntries(Object.entries(spec.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return createHash('sha256')
    .update(JSON.stringify([spec.command, spec.args ?? [], env, spec.cwd ?? null]))
    .digest('hex')
}

const fresh = (v) =>
  v !== null &&
  typeof v === 'object' &&
  typeof v.at === 'number' &&
  Date.now() - v.at < VERDICT_TTL_MS &&
  (v.kind === 'legacy' || (v.kind === 'modern' && v.discover !== null && typeof v.discover === 'object' && Array.isArray(v.discover.supportedVersions)))

/** @returns {Record<string, Verdict>} */
function readVerdicts(dir) {
  try {
    const data = JSON.parse(readFileSync(join(dir, VERDICTS_FILE), 'utf8'))
    return data && data.version === 1 && data.verdicts && typeof data.verdicts === 'object' ? data.verdicts : {}
  } catch {
    return {}
  }
}

/** @param {string} key @param {string | undefined} dir @returns {Verdict | undefined} */
function loadVerdict(key, dir) {
  const known = verdicts.get(key)
  if (known && fresh(known)) return known
  verdicts.delete(key)
  if (!dir) return undefined
  const stored = readVerdicts(dir)[key]
  if (!fresh(stored)) return undefined
  verdicts.set(key, stored)
  return stored
}

/** Stores (or, with `undefined`, forgets) a verdict; the file is rewritten whole, through a rename. */
function storeVerdict(key, verdict, dir, log) {
  if (verdict) verdicts.set(key, verdict)
  else verdicts.delete(key)
  if (!dir) return
  try {
    const all = readVerdicts(dir)
    for (const k of Object.keys(all)) if (!fresh(all[k])) delete all[k]
    if (verdict) all[key] = verdict
    else delete all[key]
    mkdirSync(dir, { recursive: true })
    const file = join(dir, VERDICTS_FILE)
    const tmp = `${file}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify({ version: 1, verdicts: all }))
    renameSync(tmp, file)
  } catch (e) {
    log(`cannot write ${join(dir, VERDICTS_FILE)}: ${describeError(e)}`, 'info')
  }
}

export class Upstream {
  /**
   * @param {import('./index.mjs').ServerConfig} spec
   * @param {{ clientInfo: { name: string, version: string }, startupTimeoutMs: number, callTimeoutMs: number,
   *           log: (line: string, level?: 'info' | 'warn') => void, onToolsChanged: (u: Upstream) => void,
   *           onLog: (u: Upstream, params: any) => void, cacheDir?: string }} options
   *   `cacheDir`: where stdio servers' era verdicts are kept across gateway runs (else in memory only).
   */
  constructor(spec, options) {
    this.spec = spec
    this.name = spec.name
    this.options = options
    /** @type {'idle' | 'starting' | 'connected' | 'failed' | 'closed'} */
    this.status = 'idle'
    this.reason = undefined
    /** Upstream tool name → tool (raw MCP `Tool`), after the internal and include/exclude filters. */
    this.tools = new Map()
    this.hiddenTools = 0
    this.capabilities = {}
    this.serverInfo = undefined
    /** The server's `instructions` (its initialize / discover result), if it sent any. */
    this.instructions = undefined
    /** @type {'modern' | 'legacy' | undefined} The connection's protocol era. */
    this.era = undefined
    this.protocolVersion = undefined
    this.transportKind = spec.transport
    this.failures = 0
    this.retryAt = 0
    /** @type {import('@modelcontextprotocol/client').Client | null} */
    this.client = null
    this.transport = null
    this.pid = null
    this.starting = null
    /** On `list_changed`: re-list, one at a time; a burst of notices costs at most two. */
    this.relist = coalesced(async () => {
      try {
        await this.#refreshTools()
        this.options.onToolsChanged(this)
      } catch (e) {
        this.options.log(`[${this.name}] re-listing tools failed: ${describeError(e)}`)
      }
    })
    this.include = spec.include ? spec.include.map(globToRegExp) : null
    this.exclude = spec.exclude.map(globToRegExp)
    this.callTimeoutMs = spec.callTimeoutMs ?? options.callTimeoutMs
  }

  /** Connects (once at a time). Resolves to whether the server is connected; never rejects. */
  start() {
    if (this.status === 'closed') return Promise.resolve(false)
    if (!this.starting) {
      this.status = 'starting'
      this.starting = this.#connect().finally(() => {
        this.starting = null
      })
    }
    return this.starting
  }

  /**
   * Makes sure the server is connected before a call: waits for a start under way, restarts a
   * failed or lost server when its backoff has passed, and otherwise fails at once.
   */
  async ready(timeoutMs = this.options.startupTimeoutMs) {
    if (this.status === 'connected') return
    if (this.status === 'closed') throw this.#unavailable('the gateway is shutting down')
    if (!this.starting) {
      const wait = this.retryAt - Date.now()
      if (wait > 0) throw this.#unavailable(`${this.reason ?? 'not connected'}; next restart in ${Math.ceil(wait / 100) / 10} s`)
      this.start()
    }
    let timer
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, timeoutMs)
    })
    await Promise.race([this.starting, timeout]).finally(() => clearTimeout(timer))
    // (#connect changed the status meanwhile.)
    if (/** @type {string} */ (this.status) !== 'connected') throw this.#unavailable(this.reason ?? `not connected within ${timeoutMs} ms`)
  }

  #unavailable(why) {
    return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' is unavailable: ${why}`, { server: this.name })
  }

  async #connect() {
    await loadSdk()
    const startedAt = Date.now()
    const timeout = this.options.startupTimeoutMs
    const left = () => Math.max(1000, timeout - (Date.now() - startedAt))
    try {
      if (this.spec.transport === 'stdio') {
        await this.#connectStdio(timeout, left)
      } else if (this.spec.transport === 'sse') {
        await this.#open(this.#sseTransport(), timeout)
        await this.#refreshTools()
      } else {
        try {
          await this.#open(this.#httpTransport(), timeout)
        } catch (e) {
          // Servers that predate Streamable HTTP answer its POST with 4xx; try the SSE transport.
          // Not for an auth wall, nor a JSON-RPC error (the server spoke MCP and said no).
          if (isAuthError(e) || Number.isInteger(e?.code) || this.status === 'closed') throw e
          this.options.log(`[${this.name}] Streamable HTTP failed (${describeError(e)}); trying SSE`, 'info')
          await this.#open(this.#sseTransport(), left())
        }
        await this.#refreshTools()
      }
      this.status = 'connected'
      this.reason = undefined
      this.failures = 0
      this.retryAt = 0
      this.options.log(
        `[${this.name}] connected (${this.transportKind}, ${this.era ?? 'legacy'} era, ${this.tools.size} tools${this.hiddenTools ? `, ${this.hiddenTools} hidden` : ''}) in ${Date.now() - startedAt} ms`,
        'info',
      )
      return true
    } catch (e) {
      await this.#drop()
      if (this.status === 'closed') return false
      this.failures += 1
      this.retryAt = Date.now() + backoffMs(this.failures)
      this.status = 'failed'
      this.reason = `failed to start: ${describeError(e)}`
      this.options.log(`[${this.name}] ${this.reason}`)
      return false
    }
  }

  /** A stdio start: one process when the era is known (see VERDICT_TTL_MS above), else probe first. */
  async #connectStdio(timeout, left) {
    const key = verdictKey(this.spec)
    const dir = this.options.cacheDir
    const known = loadVerdict(key, dir)
    if (known) {
      try {
        const prior = known.kind === 'modern' ? { kind: /** @type {const} */ ('modern'), discover: known.discover } : { kind: /** @type {const} */ ('legacy') }
        await this.#open(this.#stdioTransport(), timeout, prior)
        await this.#refreshTools()
        return
      } catch (e) {
        await this.#drop()
        if (this.status === 'closed') throw e
        storeVerdict(key, undefined, dir, this.options.log)
        this.options.log(`[${this.name}] failed as a ${known.kind} server (${describeError(e)}); asking it its era again`, 'info')
      }
    }
    await this.#open(this.#stdioTransport(), known ? left() : timeout)
    const client = this.client
    const discover = client?.getProtocolEra() === 'modern' ? client.getDiscoverResult() : undefined
    storeVerdict(key, discover ? { kind: 'modern', discover, at: Date.now() } : { kind: 'legacy', at: Date.now() }, dir, this.options.log)
    await this.#refreshTools()
  }

  /**
   * Connects a new client over `transport`: the era negotiated (auto: `server/discover`, then
   * `initialize` if the server is legacy), or the one `prior` says. SSE is a legacy transport.
   * @param {any} transport @param {number} timeoutMs
   * @param {import('@modelcontextprotocol/client').PriorDiscovery} [prior]
   */
  async #open(transport, timeoutMs, prior) {
    const client = new sdk.Client(this.options.clientInfo, {
      capabilities: {},
      versionNegotiation: { mode: this.transportKind === 'sse' ? 'legacy' : 'auto', probe: { timeoutMs } },
    })
    // Legacy servers send list changes unasked; modern ones on the `subscriptions/listen` stream
    // opened below. Either way they arrive here.
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      if (this.client === client) this.relist()
    })
    client.setNotificationHandler('notifications/message', (n) => this.options.onLog(this, n.params))
    // Start-up failures are reported once, by #connect; later transport errors here.
    client.onerror = (e) => {
      if (this.status === 'connected' && this.client === client) this.options.log(`[${this.name}] ${describeError(e)}`)
    }
    this.client = client
    this.transport = transport
    let timer
    const timedOut = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${prior?.kind === 'modern' ? 'its first request' : 'initialize'} within ${timeoutMs} ms`)), timeoutMs)
    })
    const connecting = client.connect(transport, { timeout: timeoutMs, ...(prior ? { prior } : {}) })
    // The child exists as soon as connect() has started it (after the probe, when there is one):
    // #drop finds it through the transport, so a close during the start (or a failed start) still
    // ends its whole process tree.
    try {
      await Promise.race([connecting, timedOut])
    } catch (e) {
      connecting.catch(() => {})
      await this.#drop()
      throw e
    } finally {
      clearTimeout(timer)
    }
    if (transport instanceof sdk.StdioClientTransport) this.pid = transport.pid
    deferResponses(transport)
    relayToolResults(client)
    this.capabilities = client.getServerCapabilities() ?? {}
    this.serverInfo = client.getServerVersion()
    this.instructions = client.getInstructions()
    this.era = client.getProtocolEra()
    this.protocolVersion = client.getNegotiatedProtocolVersion()
    const connectedAt = Date.now()
    client.onclose = () => {
      if (this.client !== client) return
      this.client = null
      this.transport = null
      if (this.status === 'closed') return
      this.status = 'failed'
      this.reason = this.spec.transport === 'stdio' ? 'the server process exited' : 'the connection was closed'
      // A server that ran a while is restarted at once on next use; one that dies within two
      // seconds of its start (a crash loop) backs off like a failing start.
      this.failures = Date.now() - connectedAt < 2000 ? this.failures + 1 : 0
      this.retryAt = Date.now() + backoffMs(this.failures)
      this.options.log(`[${this.name}] ${this.reason}; it is restarted on next use`)
    }
    if (this.era === 'modern' && this.capabilities.tools?.listChanged) await this.#listen(client, timeoutMs)
  }

  /**
   * Modern servers send list changes only on a `subscriptions/listen` stream. (The client's
   * `listChanged` option opens one only after a probe, not on a `prior` verdict: opened here.)
   * A stream that ends unasked while the connection lives is opened again, and the list re-read.
   */
  async #listen(client, timeoutMs) {
    try {
      const subscription = await client.listen({ toolsListChanged: true }, { timeout: timeoutMs })
      subscription.closed.then((how) => {
        if (how !== 'remote' || this.client !== client || this.status === 'closed') return
        const timer = setTimeout(() => {
          if (this.client !== client || this.status === 'closed') return
          this.#listen(client, timeoutMs).then(() => this.relist())
        }, 1000)
        timer.unref?.()
      })
    } catch (e) {
      if (this.client === client) this.options.log(`[${this.name}] cannot listen for tool list changes: ${describeError(e)}`, 'info')
    }
  }

  #stdioTransport() {
    this.transportKind = 'stdio'
    const spec = /** @type {any} */ (this.spec)
    const transport = new sdk.StdioClientTransport({
      command: spec.command,
      args: spec.args,
      // As MCP clients do: a small default environment plus the server's own `env` — the
      // gateway's secrets (CODECALL_TOKEN, ...) are not passed on.
      env: { ...sdk.getDefaultEnvironment(), ...spec.env },
      cwd: spec.cwd,
      stderr: 'pipe',
    })
    let pending = ''
    transport.stderr?.on('data', (chunk) => {
      pending += chunk.toString('utf8')
      let nl
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).replace(/\r$/, '')
        pending = pending.slice(nl + 1)
        if (line) this.options.log(`[${this.name}] ${line.slice(0, MAX_STDERR_LINE)}`, 'info')
      }
      if (pending.length > MAX_STDERR_LINE) {
        this.options.log(`[${this.name}] ${pending.slice(0, MAX_STDERR_LINE)}`, 'info')
        pending = ''
      }
    })
    return transport
  }

  #httpTransport() {
    this.transportKind = 'http'
    const spec = /** @type {any} */ (this.spec)
    return new sdk.StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } })
  }

  #sseTransport() {
    this.transportKind = 'sse'
    const spec = /** @type {any} */ (this.spec)
    const headers = spec.headers
    return new sdk.SSEClientTransport(new URL(spec.url), {
      requestInit: { headers },
      eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }) },
    })
  }

  /** Re-reads the tool list (all pages) and applies the filters. */
  async #refreshTools() {
    const client = this.client
    if (!client) return
    if (!this.capabilities.tools) {
      this.tools = new Map()
      return
    }
    const listed = await this.#listAll(client, 'tools/list', 'tools', this.options.startupTimeoutMs)
    const tools = new Map()
    let hidden = 0
    for (const tool of listed) {
      if (tool === null || typeof tool !== 'object' || typeof tool.name !== 'string' || tool.name === '') continue
      if (isInternalTool(tool) || !this.#passes(tool.name)) {
        hidden += 1
        continue
      }
      tools.set(tool.name, tool)
    }
    this.tools = tools
    this.hiddenTools = hidden
  }

  #passes(name) {
    if (this.include && !this.include.some((re) => re.test(name))) return false
    return !this.exclude.some((re) => re.test(name))
  }

  /** Whether `tool` may be called: known, not internal, through the filters. */
  hasTool(tool) {
    return this.tools.has(tool)
  }

  /** Every page of a list, all of them within `timeoutMs` (one deadline, not one per page). */
  async #listAll(client, method, key, timeoutMs, signal) {
    const items = []
    const deadline = Date.now() + timeoutMs
    let cursor
    for (let page = 0; page < MAX_PAGES; page++) {
      const left = deadline - Date.now()
      if (left <= 0) throw new sdk.SdkError(sdk.SdkErrorCode.RequestTimeout, `${method} took longer than ${timeoutMs} ms over ${page} pages`)
      const result = await this.#send(client, method, cursor ? { cursor } : {}, { timeout: left, signal })
      const list = Array.isArray(result[key]) ? result[key] : []
      for (const item of list) if (items.length < MAX_ITEMS) items.push(item)
      cursor = typeof result.nextCursor === 'string' && result.nextCursor ? result.nextCursor : undefined
      if (!cursor || items.length >= MAX_ITEMS) break
    }
    return items
  }

  /**
   * One request to the server, bounded by `timeoutMs` and `signal`, with the server's progress
   * for it sent to `onprogress`. Failures become `GatewayError`s naming the server and `what`.
   * @param {string} method
   * @param {Record<string, unknown>} params
   * @param {RequestOptions} [options]
   */
  async request(method, params, { what, timeoutMs = this.callTimeoutMs, signal, onprogress } = {}) {
    await this.ready(Math.min(timeoutMs, this.options.startupTimeoutMs))
    const client = this.client
    if (!client) throw this.#unavailable(this.reason ?? 'not connected')
    try {
      return await this.#send(client, method, params, {
        timeout: timeoutMs,
        maxTotalTimeout: timeoutMs,
        signal,
        onprogress,
      })
    } catch (e) {
      // A modern HTTP server refused the call's headers: its tool list changed under us.
      if (e?.code === HEADER_MISMATCH && method === 'tools/call') this.relist()
      throw this.#callError(e, what ?? method, timeoutMs, signal)
    }
  }

  /**
   * One request on `client`. With telemetry (§10) it runs in a CLIENT span `<method> <server>`,
   * and the server gets that span as `params._meta.traceparent` — on a copy of `params`, beside
   * whatever `_meta` they had (the SDK adds its progressToken to it the same way). A modern server
   * that logs is asked for its logs (`_meta` logLevel; a legacy one sends them unasked, as no
   * `logging/setLevel` is sent). `tools/call` goes through the client's `callTool`, which mirrors
   * the arguments a modern HTTP server asks for into headers (SEP-2243); the result is relayed as
   * sent either way.
   * @param {import('@modelcontextprotocol/client').Client} client @param {string} method @param {Record<string, any>} params @param {any} options
   * @returns {Promise<Record<string, any>>}
   */
  #send(client, method, params, options) {
    const call = method === 'tools/call'
    const send = () => {
      let meta = metaWithContext(params?._meta)
      if (this.era === 'modern' && this.capabilities.logging && !(meta && sdk.LOG_LEVEL_META_KEY in meta)) meta = { ...meta, [sdk.LOG_LEVEL_META_KEY]: 'debug' }
      const sent = meta === params?._meta ? params : { ...params, _meta: meta }
      if (call && typeof sent?.name === 'string') {
        const tool = this.tools.get(sent.name)
        // The definition for the headers only: the result is not checked against its outputSchema.
        const toolDefinition = tool ? { ...tool, outputSchema: undefined } : undefined
        return /** @type {Promise<any>} */ (client.callTool(/** @type {any} */ (sent), { ...options, ...(toolDefinition ? { toolDefinition } : {}) }))
      }
      return client.request({ method, params: sent }, AS_SENT, options)
    }
    if (!otel()) return send()
    /** @type {Record<string, string>} */
    const attributes = {
      'mcp.method.name': method,
      'codecall.server': this.name,
      'network.transport': this.transportKind === 'stdio' ? 'pipe' : 'tcp',
    }
    if (call && typeof params?.name === 'string') attributes['gen_ai.tool.name'] = params.name
    return clientSpan(`${method} ${this.name}`, attributes, send, call ? TOOL_CALL_SPAN : REQUEST_SPAN)
  }

  /**
   * Lists every page of `resources/list`, `resources/templates/list` or `prompts/list`.
   * @param {string} method @param {string} key @param {RequestOptions} [options]
   */
  async list(method, key, { timeoutMs = this.callTimeoutMs, signal } = {}) {
    await this.ready(Math.min(timeoutMs, this.options.startupTimeoutMs))
    const client = this.client
    if (!client) throw this.#unavailable(this.reason ?? 'not connected')
    try {
      return await this.#listAll(client, method, key, timeoutMs, signal)
    } catch (e) {
      throw this.#callError(e, method, timeoutMs, signal)
    }
  }

  #callError(e, what, timeoutMs, signal) {
    const details = { server: this.name }
    // The client rejects an aborted request with its own timeout error (the abort's reason as
    // message): the signal says which it was.
    if (signal?.aborted || e?.name === 'AbortError') {
      return new GatewayError('TOOL_EXECUTION_ERROR', `${what} on MCP server '${this.name}' was cancelled`, details)
    }
    const code = e?.code
    if (code === sdk?.SdkErrorCode.RequestTimeout) {
      details.mcpCode = TIMEOUT_CODE
      return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' did not answer ${what} within ${timeoutMs} ms`, details)
    }
    if (code === sdk?.SdkErrorCode.ConnectionClosed) {
      details.mcpCode = CLOSED_CODE
      return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' closed the connection during ${what}`, details)
    }
    if (Number.isInteger(code)) {
      details.mcpCode = code
      if (e.data !== undefined) details.data = e.data
      // The SDK prefixes "MCP error <code>: " on each side of the wire; say it once.
      const message = String(e.message).replace(/^(MCP error -?\d+: )+/, '')
      return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' failed ${what} (JSON-RPC error ${code}): ${message}`, details)
    }
    return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' failed ${what}: ${describeError(e)}`, details)
  }

  /**
   * How the server describes itself, for search (`ToolDefinition.server`): `serverInfo.title` and
   * `.description`, and `instructions`, where they are strings; `undefined` when it sent none.
   * @returns {{ title?: string, description?: string, instructions?: string } | undefined}
   */
  ownWords() {
    const info = this.serverInfo && typeof this.serverInfo === 'object' ? this.serverInfo : {}
    /** @type {{ title?: string, description?: string, instructions?: string }} */
    const out = {}
    if (typeof info.title === 'string' && info.title.trim()) out.title = info.title
    if (typeof info.description === 'string' && info.description.trim()) out.description = info.description
    // The engine keeps 2 000 characters of it; 4 000 UTF-16 units hold at least that many.
    if (typeof this.instructions === 'string' && this.instructions.trim()) out.instructions = this.instructions.slice(0, 4000)
    return Object.keys(out).length ? out : undefined
  }

  /** What `mcp.listServers()` shows of this server. */
  info() {
    const c = this.capabilities ?? {}
    const out = {
      name: this.name,
      status: this.status === 'idle' ? 'starting' : this.status,
      transport: this.transportKind,
      tools: this.tools.size,
      capabilities: { tools: Boolean(c.tools), resources: Boolean(c.resources), prompts: Boolean(c.prompts) },
    }
    if (this.era && this.status === 'connected') out.era = this.era
    if (this.serverInfo) out.serverInfo = { name: this.serverInfo.name, version: this.serverInfo.version }
    if (this.reason && this.status !== 'connected') out.reason = this.reason
    return out
  }

  /** Closes the connection and everything it started; a closed upstream never restarts. */
  async close() {
    this.status = 'closed'
    // A start under way is cut short (its client and process closed now), not waited for.
    await this.#drop()
    await this.starting?.catch(() => {})
  }

  async #drop() {
    const { client, transport } = this
    const pid = this.pid ?? (sdk && transport instanceof sdk.StdioClientTransport ? transport.pid : null)
    this.client = null
    this.transport = null
    this.pid = null
    // The server's own children (npx → node, a shell → a binary) do not always follow it out.
    const tree = pid ? processTree(pid) : []
    if (client) await client.close().catch(() => {})
    // Also the transport itself: during the era probe the client does not hold it yet (closing it
    // then ends the probe, and no server process is started).
    if (transport) await transport.close().catch(() => {})
    if (tree.length) await killTree(tree)
  }
}

/** A 401 or 403 (the client's typed HTTP errors, or a status on an older error). */
function isAuthError(e) {
  return (
    (sdk !== null && (e?.code === sdk?.SdkErrorCode.ClientHttpAuthentication || e?.code === sdk?.SdkErrorCode.ClientHttpForbidden)) ||
    e?.code === 401 ||
    e?.code === 403 ||
    e?.status === 401 ||
    e?.status === 403
  )
}

/**
 * `tools/call` results relayed as sent: `Client.callTool` asks the client's own `request()` with
 * no result schema, which would check the result against the SDK's schema and rebuild it.
 */
function relayToolResults(client) {
  const relay = /** @type {any} */ (client)
  const request = client.request.bind(client)
  relay.request = (req, schemaOrOptions, maybeOptions) =>
    req?.method === 'tools/call' && !(schemaOrOptions && typeof schemaOrOptions === 'object' && '~standard' in schemaOrOptions)
      ? request(req, AS_SENT, schemaOrOptions)
      : request(req, schemaOrOptions, maybeOptions)
}

/**
 * The SDK client (1.x and 2.x alike) runs a notification's handler a microtask after reading it,
 * but settles a response at once — and forgets the request's progress handler then. A server that
 * sends its last progress notification right before the response (in the same read) would have it
 * dropped as "unknown token". Responses are delivered two microtasks late, after the handlers of
 * the notifications read before them.
 */
function deferResponses(transport) {
  const deliver = transport.onmessage
  if (typeof deliver !== 'function') return
  transport.onmessage = (message, extra) => {
    if (message && typeof message === 'object' && 'id' in message && ('result' in message || 'error' in message)) {
      Promise.resolve()
        .then(() => undefined)
        .then(() => deliver.call(transport, message, extra))
    } else {
      deliver.call(transport, message, extra)
    }
  }
}
