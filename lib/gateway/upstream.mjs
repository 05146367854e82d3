// One upstream MCP server, spoken to with the official SDK client: stdio (a child process) or
// HTTP (Streamable HTTP, falling back to SSE). It owns the connection's life — start, loss,
// restart with backoff on next use, close with no process left behind — and the server's tool
// list, filtered once here: seed 002's internal tools and the config's include/exclude globs never
// leave this file.
//
// It never throws at its callers for the upstream's sake: every failure of a call is a
// `GatewayError` naming the server, with a stable `code` the engine passes to the script.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  ErrorCode as McpErrorCode,
  LoggingMessageNotificationSchema,
  McpError,
  ResultSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { coalesced } from '../common/mcp.mjs'
import { clientSpan, metaWithContext, otel } from '../common/otel.mjs'
import { globToRegExp } from './config.mjs'
import { describeError, GatewayError } from './errors.mjs'
import { killTree, processTree } from './processes.mjs'

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
 * How a CLIENT span reads a failed request: every upstream failure is the script's
 * TOOL_EXECUTION_ERROR (as `#callError` makes it), with the JSON-RPC error code beside it.
 * A tool's `isError` answer is a failed call too (the script gets TOOL_EXECUTION_ERROR).
 */
const REQUEST_SPAN = {
  error: (e) => ({
    code: 'TOOL_EXECUTION_ERROR',
    attributes: e instanceof McpError && Number.isInteger(e.code) ? { 'codecall.mcp.error_code': e.code } : undefined,
  }),
}
const TOOL_CALL_SPAN = { ...REQUEST_SPAN, result: (r) => (r?.isError === true ? 'TOOL_EXECUTION_ERROR' : undefined) }

/** Restart delays after consecutive failed starts: 1 s, 2 s, 4 s, ... at most 60 s. */
const backoffMs = (failures) => (failures <= 0 ? 0 : Math.min(60_000, 1000 * 2 ** (failures - 1)))

export class Upstream {
  /**
   * @param {import('./index.mjs').ServerConfig} spec
   * @param {{ clientInfo: { name: string, version: string }, startupTimeoutMs: number, callTimeoutMs: number,
   *           log: (line: string, level?: 'info' | 'warn') => void, onToolsChanged: (u: Upstream) => void,
   *           onLog: (u: Upstream, params: any) => void }} options
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
    this.transportKind = spec.transport
    this.failures = 0
    this.retryAt = 0
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
    const startedAt = Date.now()
    const timeout = this.options.startupTimeoutMs
    try {
      if (this.spec.transport === 'stdio') {
        await this.#open(this.#stdioTransport(), timeout)
      } else if (this.spec.transport === 'sse') {
        await this.#open(this.#sseTransport(), timeout)
      } else {
        try {
          await this.#open(this.#httpTransport(), timeout)
        } catch (e) {
          // Servers that predate Streamable HTTP answer its POST with 4xx; try the SSE transport.
          if (e?.code === 401 || e?.code === 403 || e instanceof McpError) throw e
          this.options.log(`[${this.name}] Streamable HTTP failed (${e?.message ?? e}); trying SSE`, 'info')
          await this.#open(this.#sseTransport(), Math.max(1000, timeout - (Date.now() - startedAt)))
        }
      }
      await this.#refreshTools()
      this.status = 'connected'
      this.reason = undefined
      this.failures = 0
      this.retryAt = 0
      this.options.log(`[${this.name}] connected (${this.transportKind}, ${this.tools.size} tools${this.hiddenTools ? `, ${this.hiddenTools} hidden` : ''}) in ${Date.now() - startedAt} ms`, 'info')
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

  async #open(transport, timeoutMs) {
    const client = new Client(this.options.clientInfo, { capabilities: {} })
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.relist())
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => this.options.onLog(this, n.params))
    // Start-up failures are reported once, by #connect; later transport errors here.
    client.onerror = (e) => {
      if (this.status === 'connected') this.options.log(`[${this.name}] ${describeError(e)}`)
    }
    this.client = client
    this.transport = transport
    let timer
    const timedOut = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to initialize within ${timeoutMs} ms`)), timeoutMs)
    })
    const connecting = client.connect(transport, { timeout: timeoutMs })
    // The child exists as soon as connect() has started it: remember it now, so a close during the
    // start (or a failed start) still ends its whole process tree.
    if (transport instanceof StdioClientTransport) this.pid = transport.pid
    try {
      await Promise.race([connecting, timedOut])
    } catch (e) {
      await this.#drop()
      throw e
    } finally {
      clearTimeout(timer)
    }
    deferResponses(transport)
    this.capabilities = client.getServerCapabilities() ?? {}
    this.serverInfo = client.getServerVersion()
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
  }

  #stdioTransport() {
    this.transportKind = 'stdio'
    const spec = /** @type {any} */ (this.spec)
    const transport = new StdioClientTransport({
      command: spec.command,
      args: spec.args,
      // As MCP clients do: a small default environment plus the server's own `env` — the
      // gateway's secrets (CODECALL_TOKEN, ...) are not passed on.
      env: { ...getDefaultEnvironment(), ...spec.env },
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
    return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } })
  }

  #sseTransport() {
    this.transportKind = 'sse'
    const spec = /** @type {any} */ (this.spec)
    const headers = spec.headers
    return new SSEClientTransport(new URL(spec.url), {
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
      if (left <= 0) throw new McpError(McpErrorCode.RequestTimeout, `${method} took longer than ${timeoutMs} ms over ${page} pages`)
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
      throw this.#callError(e, what ?? method, timeoutMs)
    }
  }

  /**
   * One request on `client`. With telemetry (§10) it runs in a CLIENT span `<method> <server>`,
   * and the server gets that span as `params._meta.traceparent` — on a copy of `params`, beside
   * whatever `_meta` they had (the SDK adds its progressToken to it the same way).
   * @param {any} client @param {string} method @param {Record<string, any>} params @param {any} options
   * @returns {Promise<Record<string, any>>}
   */
  #send(client, method, params, options) {
    if (!otel()) return client.request({ method, params }, ResultSchema, options)
    /** @type {Record<string, string>} */
    const attributes = {
      'mcp.method.name': method,
      'codecall.server': this.name,
      'network.transport': this.transportKind === 'stdio' ? 'pipe' : 'tcp',
    }
    const call = method === 'tools/call'
    if (call && typeof params?.name === 'string') attributes['gen_ai.tool.name'] = params.name
    return clientSpan(
      `${method} ${this.name}`,
      attributes,
      () => {
        const meta = metaWithContext(params?._meta)
        return client.request({ method, params: meta === params?._meta ? params : { ...params, _meta: meta } }, ResultSchema, options)
      },
      call ? TOOL_CALL_SPAN : REQUEST_SPAN,
    )
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
      throw this.#callError(e, method, timeoutMs)
    }
  }

  #callError(e, what, timeoutMs) {
    const details = { server: this.name }
    if (e instanceof McpError) {
      details.mcpCode = e.code
      if (e.code === McpErrorCode.RequestTimeout) {
        return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' did not answer ${what} within ${timeoutMs} ms`, details)
      }
      if (e.code === McpErrorCode.ConnectionClosed) {
        return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' closed the connection during ${what}`, details)
      }
      if (e.data !== undefined) details.data = e.data
      // The SDK prefixes "MCP error <code>: " on each side of the wire; say it once.
      const message = String(e.message).replace(/^(MCP error -?\d+: )+/, '')
      return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' failed ${what} (JSON-RPC error ${e.code}): ${message}`, details)
    }
    if (e?.name === 'AbortError') {
      return new GatewayError('TOOL_EXECUTION_ERROR', `${what} on MCP server '${this.name}' was cancelled`, details)
    }
    return new GatewayError('TOOL_EXECUTION_ERROR', `MCP server '${this.name}' failed ${what}: ${describeError(e)}`, details)
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
    const { client, transport, pid } = this
    this.client = null
    this.transport = null
    this.pid = null
    // The server's own children (npx → node, a shell → a binary) do not always follow it out.
    const tree = pid ? processTree(pid) : []
    if (client) await client.close().catch(() => {})
    else if (transport) await transport.close().catch(() => {})
    if (tree.length) await killTree(tree)
  }
}

/**
 * The SDK client (1.x) runs a notification's handler a microtask after reading it, but settles a
 * response at once — and forgets the request's progress handler then. A server that sends its last
 * progress notification right before the response (in the same read) would have it dropped as
 * "unknown token". Responses are delivered two microtasks late, after the handlers of the
 * notifications read before them.
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
