// The gateway: code mode in front of MCP servers that already exist (api.md §6). One `CodeCall`
// engine indexes every upstream's tools as `<server>:<tool>` (appId = server); each meta-tool call
// gets a host whose `callTool` resolves into the upstream through the SDK client, and whose
// `functions` are seed 003's `mcp.*` and seed 004's `call_tool`. Every way a script reaches an
// upstream passes the same policy (allowedServers, internal tools, include/exclude), counts
// against the same `maxToolCalls` and sends the same events. Saved scripts (§11) are the engine's:
// the gateway passes `codecall.scripts` on, gives the host the session's id and names a saved run
// in its audit line.
//
// Transports to the MCP client (stdio, HTTP sessions) live in server.mjs; this file knows none.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { approveByElicitation, indexTools, LOG_LEVELS, RequestScope, unwrapResult } from '../common/mcp.mjs'
import { untraced } from '../common/otel.mjs'
import { Audit } from './audit.mjs'
import { describeError, GatewayError, Upstream } from './upstream.mjs'

const require = createRequire(import.meta.url)
const { CodeCall, SqliteRunStore } = require('../../index.js')
export { SqliteRunStore }
export const VERSION = require('../../package.json').version
export { RequestScope, unwrapResult }

export class Gateway {
  /**
   * @param {import('./index.mjs').GatewayConfig} config
   * @param {{ log?: (line: string) => void, audit?: string | null, onToolsChanged?: () => void,
   *           onUpstreamLog?: (server: string, params: any) => void }} [options]
   */
  constructor(config, options) {
    options ??= {}
    this.config = config
    this.log = options.log ?? ((line) => process.stderr.write(`codecall: ${line}\n`))
    this.onToolsChanged = options.onToolsChanged ?? (() => {})
    this.onUpstreamLog = options.onUpstreamLog
    const c = config.codecall
    this.allowedServers = c.allowedServers.length ? new Set(c.allowedServers) : null
    const auditPath = options.audit !== undefined ? options.audit : c.audit
    this.audit = auditPath ? new Audit(auditPath, this.log) : null
    /** Scopes with an upstream call in flight, per server: upstream logging goes to them. */
    this.active = new Map()
    this.suppressChanges = false
    /** The engine's options (with a scripts store, the engine is made on the first request that needs it: §12). */
    this.engineOptions = {
      mode: c.mode,
      topK: c.topK,
      maxDefinitions: c.maxDefinitions,
      metaToolPrefix: c.metaToolPrefix,
      metaToolSeparator: /** @type {any} */ (c.metaToolSeparator),
      vm: c.vm,
      search: { ...c.search, cacheDir: c.cacheDir === false ? undefined : (c.cacheDir ?? userCacheDir(process.env)) },
      directCalls: c.directCalls,
      approval: c.approval,
      // §11: only when configured — the key alone would ask the engine for saved scripts.
      ...(c.scripts ? { scripts: c.scripts } : {}),
      onToolsChanged: () => {
        if (!this.suppressChanges) this.onToolsChanged()
      },
    }
    // A store whose folder does not exist is refused now (the engine would say so only when made;
    // the run store is opened by the first request that may wait for a person).
    for (const [what, store] of [['codecall.scripts.store', c.scripts?.store], ['codecall.runs.store', c.runs?.store]]) {
      if (typeof store !== 'string' || store === ':memory:') continue
      let folder = false
      try {
        folder = statSync(dirname(store)).isDirectory()
      } catch {
        // Below.
      }
      if (!folder) throw new Error(`${what}: the folder of ${store} does not exist (folders are not created)`)
    }
    // What the engine would refuse (vm limits, ...) is refused now. Starting opens no store and
    // starts no upstream (a client's probe process costs nothing): with a store, that check is
    // made by an engine without it, and the engine itself is made when a request needs it.
    /** @type {any} */
    this.engine = null
    if (c.scripts) {
      const { scripts: _store, onToolsChanged: _changed, ...checked } = this.engineOptions
      new CodeCall(checked).dispose().catch(() => {})
    } else {
      this.engine = new CodeCall(this.engineOptions)
    }
    // The meta-tools' names, as the engine names them (checked when it is made).
    const kinds = ['search', 'describe', 'execute', ...(c.directCalls?.enabled ? ['invoke'] : []), ...(c.scripts ? ['save'] : [])]
    this.metaByKind = {}
    for (const kind of kinds) this.metaByKind[kind] = `${c.metaToolPrefix}${c.metaToolSeparator}${kind}`
    this.metaNames = new Set(Object.values(this.metaByKind))
    if (this.engine) this.#namesFromEngine()
    /** @type {Map<string, Upstream>} */
    this.upstreams = new Map()
    for (const spec of config.servers) {
      this.upstreams.set(
        spec.name,
        new Upstream(spec, {
          clientInfo: { name: 'codecall-gateway', version: VERSION },
          startupTimeoutMs: c.startupTimeoutMs,
          callTimeoutMs: c.callTimeoutMs,
          // Where stdio upstreams' protocol eras are remembered, so a start spawns one process.
          cacheDir: c.cacheDir === false ? undefined : (c.cacheDir ?? userCacheDir(process.env)),
          log: this.log,
          onToolsChanged: () => this.reindex(),
          onLog: (u, params) => this.#upstreamLog(u, params),
        }),
      )
    }
    this.started = null
    /** @type {(() => void) | null} told once every upstream has started or failed */
    this.onStarted = null
    this.closed = false
    /** `<server>:<tool>` → whether the engine indexes it (by its mode); cleared on each re-index. */
    this.indexed = new Map()
    /**
     * A saved script's SHA-256 → its code's length, for audit lines. Keyed by the hash, not by
     * `name@version`: a name removed and saved again starts at version 1 with other code.
     */
    this.savedLengths = new Map()
  }

  /**
   * The engine, made on first use (a store that cannot be opened is an error then, naming its path).
   * @returns {any}
   */
  get codecall() {
    if (this.engine === null) {
      if (this.closed) throw Object.assign(new Error('The gateway is closed'), { code: 'POOL_DISPOSED' })
      this.engine = new CodeCall(this.engineOptions)
      this.#namesFromEngine()
    }
    return this.engine
  }

  /** The meta-tools' names as the engine has them. */
  #namesFromEngine() {
    const c = this.config.codecall
    this.metaNames = new Set(this.engine.metaTools().map((/** @type {any} */ t) => t.name))
    this.metaByKind = {}
    for (const name of this.metaNames) this.metaByKind[name.slice(c.metaToolPrefix.length + c.metaToolSeparator.length)] = name
  }

  /**
   * The MCP `tools/list` answer for a client: upstreams start now (a first real request); when the
   * mode lists upstream tools, it waits for them as a meta-tool call does.
   */
  async listToolsReady() {
    const started = this.start()
    if (this.config.codecall.mode !== 'codecall_only') await this.#startedOrLate(started)
    return this.listTools()
  }

  /** Waits for the upstreams' start, at most min(startupTimeoutMs, 10 s). */
  async #startedOrLate(started) {
    let timer
    await Promise.race([started, new Promise((r) => (timer = setTimeout(r, Math.min(this.config.codecall.startupTimeoutMs, 10_000))))])
    clearTimeout(timer)
  }

  /** Starts every upstream in parallel; resolves when each is connected or has failed. */
  start() {
    if (!this.started) {
      this.started = Promise.all([...this.upstreams.values()].map((u) => u.start().then(() => this.reindex())))
      this.started.then(() => this.onStarted?.()).catch(() => {})
    }
    return this.started
  }

  /** Rebuilds the engine's tools from every upstream's current list (one list_changed at most). */
  reindex() {
    if (this.closed) return
    this.indexed.clear()
    const defs = []
    for (const u of this.upstreams.values()) {
      // A server outside allowedServers is never described or searched: scripts cannot call it.
      if (!this.#allowed(u.name)) continue
      const server = u.ownWords()
      for (const tool of u.tools.values()) defs.push(toolDefinition(u.name, tool, server))
    }
    indexTools(
      this.codecall,
      defs,
      (name, message) => this.log(`tool '${name}' not indexed: ${message}`),
      (fn) => {
        this.suppressChanges = true
        try {
          fn()
        } finally {
          this.suppressChanges = false
        }
        this.onToolsChanged()
      },
    )
  }

  /** The MCP `tools/list` answer: the meta-tools (and the tools the mode shows). */
  listTools() {
    return this.codecall.listTools()
  }

  isMetaTool(name) {
    return this.metaNames.has(name)
  }

  /** `codecall_search` without a client (the `codecall search` command). */
  async search(query, topK) {
    await this.start()
    // One answer, so it waits for the tools' vectors (the cache folder makes a second run quick).
    await this.codecall.ready()
    return this.codecall.search({ query, topK })
  }

  /**
   * Runs one meta-tool call. Resolves to the engine's result; rejects with `ERR_INVALID_ARG`
   * errors for malformed arguments. Writes the audit line for execute and invoke.
   * @param {string} name @param {any} args @param {RequestScope} scope
   * @param {{ allowedServers?: string[] | null }} [overrides]
   */
  async handle(name, args, scope, overrides) {
    overrides ??= {}
    // Upstreams still starting after this are called when they are ready (a call waits for its
    // server's start); one slow server does not hold every meta-tool call for its whole timeout.
    await this.#startedOrLate(this.start())
    this.#kickFailed()
    const kind = name === this.metaByKind.execute ? 'execute' : name === this.metaByKind.invoke ? 'invoke' : null
    const started = performance.now()
    let result
    let failure
    try {
      // The run's allowedTools bind mcp.callTool and call_tool as they bind callTool.
      const allowedTools = kind === 'execute' && Array.isArray(args?.allowedTools) ? args.allowedTools.filter((t) => typeof t === 'string') : null
      const host = this.hostFor(scope, { ...overrides, allowedTools })
      // §12: a run that may wait for a person goes through its journal.
      result = await this.codecall.handle(name, args ?? {}, scope.journal ? scope.journal(host) : host)
      return result
    } catch (e) {
      failure = e
      throw e
    } finally {
      scope.end()
      // §12: a copy of a run let go because another process continues it writes no line: the run's
      // line is written where it ends.
      if (kind && this.audit && !scope.handedOver()) {
        const durationMs = performance.now() - started
        const saved = savedRun(result)
        const length = saved ? await this.#savedLength(saved) : 0
        this.#audit(kind, name, args, scope, result, failure, durationMs, saved, length)
      }
    }
  }

  /**
   * The length of a saved script's code, read once per version from the store (the engine's result
   * names the run's version and hash, not its length); 0 when the store cannot say.
   * @param {{ name: string, version: number, codeSha256: string | null }} saved
   */
  async #savedLength(saved) {
    const key = saved.codeSha256
    let length = key === null ? undefined : this.savedLengths.get(key)
    if (length === undefined) {
      let script
      try {
        script = await this.codecall.scripts?.get(saved.name.slice('saved:'.length), saved.version)
      } catch {
        return 0
      }
      // Another host may have replaced this version since the run: only the code that ran counts.
      if (typeof script?.script !== 'string' || (key !== null && script.codeSha256 !== key)) return 0
      length = script.script.length
      if (key !== null) this.savedLengths.set(key, length)
    }
    return length
  }

  #audit(kind, name, args, scope, result, failure, durationMs, saved, savedLength) {
    const script = kind === 'execute' && args && typeof args === 'object' && typeof args.script === 'string' ? args.script : null
    const line = {
      ts: new Date().toISOString(),
      sessionId: scope.sessionId,
      // §11: a saved script's run is named by its version, and hashed as the code it ran.
      tool: saved ? `${saved.name}@${saved.version}` : name,
      codeSha256: saved ? saved.codeSha256 : script === null ? null : createHash('sha256').update(script, 'utf8').digest('hex'),
      codeLength: saved ? savedLength : script === null ? 0 : script.length,
      durationMs: Math.round(durationMs * 10) / 10,
      // invoke: a call refused before the host (unknown, not allowed) reached no server.
      toolCalls: kind === 'execute' ? (result?.stats?.toolCalls ?? 0) : result && (result.status === 'ok' || result.error?.code === 'TOOL_EXECUTION_ERROR') ? 1 : 0,
      servers: [...scope.servers].sort(),
      status: failure ? 'invalid_arguments' : (result?.status ?? 'error'),
    }
    // §9: with an approval policy, how many calls a person was asked about and did not approve.
    if (this.config.codecall.approval) {
      line.approvals = scope.approvals
      line.declined = scope.declined
    }
    const code = failure ? (failure.code ?? 'ERR_INVALID_ARG') : result?.error?.code
    if (code) line.errorCode = code
    // §12: a run continued in this process from the run store (replayed, then live).
    if (scope.resumed) line.resumed = true
    this.audit?.write(line)
  }

  /** Failed upstreams whose backoff has passed are restarted in the background on any use. */
  #kickFailed() {
    for (const u of this.upstreams.values()) {
      if (u.status === 'failed' && !u.starting && Date.now() >= u.retryAt) u.start().then(() => this.reindex())
    }
  }

  #allowed(server) {
    return this.allowedServers === null || this.allowedServers.has(server)
  }

  /** The upstream of `server` for a script: configured and allowed; noted as reached. */
  #target(scope, server, allowed) {
    if (typeof server !== 'string' || server === '') throw new GatewayError('ERR_INVALID_ARG', 'server must be a non-empty string')
    const u = this.upstreams.get(server)
    if (!u) throw new GatewayError('TOOL_NOT_FOUND', `No MCP server '${server}'`, { server })
    // api.md §6: a configured server outside allowedServers is ACCESS_DENIED.
    if (!allowed(server)) throw new GatewayError('ACCESS_DENIED', `MCP server '${server}' is not in allowedServers`, { server })
    scope.servers.add(server)
    return u
  }

  /**
   * The upstream for `mcp.callTool` / `call_tool`, which the engine does not check: the checks of
   * a script's `callTool` (api.md §2.3), in its order — the run's allowedTools, then the index.
   * (`callTool` itself reaches the host only after the engine made them.)
   * @param {string[] | null} allowedTools
   */
  #scriptTool(scope, server, tool, allowed, allowedTools) {
    const u = this.#target(scope, server, allowed)
    if (typeof tool !== 'string' || tool === '') throw new GatewayError('ERR_INVALID_ARG', 'tool must be a non-empty string')
    const name = `${server}:${tool}`
    if (allowedTools && !allowedTools.includes(name)) {
      throw new GatewayError('ACCESS_DENIED', `Tool '${name}' is not in allowedTools for this execution`, { server, tool })
    }
    // A server still starting (or restarting) is checked once it is ready, in #callUpstream.
    if (u.status === 'connected' && !this.#isIndexed(name)) throw new GatewayError('TOOL_NOT_FOUND', `Tool '${name}' was not found`, { server, tool })
    return u
  }

  /** Whether the engine indexes `name` — by its mode's rules, as its own callTool check does. */
  #isIndexed(name) {
    let known = this.indexed.get(name)
    if (known === undefined) {
      // The exact name is a search's best hit (score 1) when, and only when, the tool is indexed.
      const at = name.indexOf(':')
      // Not a search of the client's: no codecall.search span in its trace (§10).
      const hits = untraced(() => this.codecall.search({ query: name, topK: 3, filter: { appIds: [name.slice(0, at)] } })).tools
      known = hits.some((t) => t.name === name)
      this.indexed.set(name, known)
    }
    return known
  }

  /**
   * Calls an upstream tool for a script; resolves to the raw `CallToolResult`. `unchecked`: the
   * engine did not check the index for this call (mcp.callTool, call_tool) — a script's callTool
   * reaches here only after it did, so that path asks nothing more of the index.
   */
  async #callUpstream(scope, u, tool, args, unchecked = false) {
    await u.ready(Math.min(u.callTimeoutMs, this.config.codecall.startupTimeoutMs))
    // The server's current list: a tool it has dropped since the last index is not called.
    if (!u.hasTool(tool) || (unchecked && !this.#isIndexed(`${u.name}:${tool}`))) {
      throw new GatewayError('TOOL_NOT_FOUND', `Tool '${u.name}:${tool}' was not found`, { server: u.name, tool })
    }
    const input = args === undefined || args === null ? {} : args
    if (typeof input !== 'object' || Array.isArray(input)) {
      throw new GatewayError('ERR_INVALID_ARG', `arguments of '${u.name}:${tool}' must be an object`)
    }
    return this.#tracked(scope, u, () =>
      u.request('tools/call', { name: tool, arguments: input }, {
        what: `tool '${tool}'`,
        signal: scope.signal,
        onprogress: (p) =>
          scope.step(`${u.name}:${tool}${p.message ? `: ${p.message}` : ''} (${p.progress}${p.total !== undefined ? `/${p.total}` : ''})`),
      }),
    )
  }

  async #tracked(scope, u, fn) {
    if (!this.active.has(u.name)) this.active.set(u.name, new Set())
    const set = this.active.get(u.name)
    set.add(scope)
    try {
      return await fn()
    } finally {
      set.delete(scope)
    }
  }

  /** Upstream `notifications/message` reach the clients whose scripts are calling that server. */
  #upstreamLog(u, params) {
    const scopes = this.active.get(u.name)
    if (scopes && scopes.size > 0) {
      const level = LOG_LEVELS.includes(params?.level) ? params.level : 'info'
      for (const scope of scopes) scope.log(level, params?.logger ? `${u.name}/${params.logger}` : u.name, params?.data)
    } else if (this.onUpstreamLog) {
      this.onUpstreamLog(u.name, params)
    }
  }

  /**
   * The `CodeCallHost` for one meta-tool call.
   * @param {RequestScope} scope
   * @param {{ allowedServers?: string[] | null, allowedTools?: string[] | null }} [overrides]
   */
  hostFor(scope, overrides) {
    overrides ??= {}
    const allowedList = overrides.allowedServers
    const allowedTools = overrides.allowedTools ?? null
    // An explicit list (exec --allowed-servers) narrows the config's; `null`/absent does not.
    const allowed = Array.isArray(allowedList) ? (s) => allowedList.includes(s) && this.#allowed(s) : (s) => this.#allowed(s)
    const gateway = this
    const visible = () => [...this.upstreams.values()].filter((u) => allowed(u.name))
    const servers = (server) => {
      if (server === undefined || server === null) return visible()
      return [this.#target(scope, server, allowed)]
    }
    /** Runs a host function with tool_call_start / tool_call_end events, as a script's callTool has. */
    const traced = (meta, toolName, input, fn) => {
      const ids = { executionId: meta?.executionId ?? null, callId: meta?.callId ?? `${scope.sessionId ?? 'call'}-${++scope.nextCall}`, toolName }
      const started = performance.now()
      scope.event({ type: 'tool_call_start', ...ids, input })
      const end = (status, error) => {
        /** @type {Record<string, unknown>} */
        const e = { type: 'tool_call_end', ...ids, input, status, durationMs: performance.now() - started }
        if (error) e.error = { code: error.code ?? 'TOOL_EXECUTION_ERROR', message: error.message }
        scope.event(e)
      }
      return Promise.resolve()
        .then(fn)
        .then(
          (v) => {
            end('ok')
            return v
          },
          (e) => {
            end('error', e)
            throw e
          },
        )
    }
    /** Each server's items of one list method, skipping servers without the capability or down. */
    const gather = async (server, capability, method, key, shape) => {
      const out = []
      for (const u of servers(server)) {
        if (server === undefined || server === null) {
          if (u.status !== 'connected' || !u.capabilities?.[capability]) continue
        } else if (u.status === 'connected' && !u.capabilities?.[capability]) {
          continue
        }
        scope.servers.add(u.name)
        const items = await this.#tracked(scope, u, () => u.list(method, key, { signal: scope.signal })).catch((e) => {
          if (server === undefined || server === null) return []
          throw e
        })
        for (const item of items) if (item && typeof item === 'object') out.push(shape(u.name, item))
      }
      return out
    }
    const functions = {
      'mcp.listServers'() {
        return visible().map((u) => u.info())
      },
      'mcp.listTools'(server) {
        return servers(server).flatMap((u) =>
          [...u.tools.values()]
            .filter((t) => gateway.#isIndexed(`${u.name}:${t.name}`))
            .map((t) => ({ server: u.name, name: t.name, description: t.description, inputSchema: t.inputSchema })),
        )
      },
      'mcp.callTool'(server, tool, args) {
        return traced(this, `${server}:${tool}`, args ?? {}, () => gateway.#callUpstream(scope, gateway.#scriptTool(scope, server, tool, allowed, allowedTools), tool, args, true))
      },
      'mcp.listResources'(server) {
        return gather(server, 'resources', 'resources/list', 'resources', (s, r) => ({ server: s, uri: r.uri, name: r.name, description: r.description, mimeType: r.mimeType }))
      },
      'mcp.listResourceTemplates'(server) {
        return gather(server, 'resources', 'resources/templates/list', 'resourceTemplates', (s, r) => ({
          server: s, uriTemplate: r.uriTemplate, name: r.name, description: r.description, mimeType: r.mimeType,
        }))
      },
      'mcp.readResource'(server, uri) {
        if (typeof uri !== 'string') return Promise.reject(new GatewayError('ERR_INVALID_ARG', 'mcp.readResource(server, uri): uri must be a string'))
        return traced(this, `${server}:resources/read`, { uri }, () => {
          const u = gateway.#target(scope, server, allowed)
          return gateway.#tracked(scope, u, () => u.request('resources/read', { uri }, { what: `resources/read of ${uri}`, signal: scope.signal }))
        })
      },
      'mcp.listPrompts'(server) {
        return gather(server, 'prompts', 'prompts/list', 'prompts', (s, p) => ({ server: s, name: p.name, description: p.description, arguments: p.arguments }))
      },
      'mcp.getPrompt'(server, name, args) {
        if (typeof name !== 'string') return Promise.reject(new GatewayError('ERR_INVALID_ARG', 'mcp.getPrompt(server, name, args): name must be a string'))
        const promptArgs = {}
        for (const [k, v] of Object.entries(args && typeof args === 'object' ? args : {})) promptArgs[k] = typeof v === 'string' ? v : JSON.stringify(v)
        return traced(this, `${server}:prompts/get`, { name, arguments: promptArgs }, () => {
          const u = gateway.#target(scope, server, allowed)
          return gateway.#tracked(scope, u, () =>
            u.request('prompts/get', { name, arguments: promptArgs }, { what: `prompt '${name}'`, signal: scope.signal }),
          )
        })
      },
      // Seed 004: never rejects for the tool's sake — `{ ok: true, result }` or `{ ok: false, error }`.
      call_tool(server, tool, args) {
        return traced(this, `${server}:${tool}`, args ?? {}, async () => {
          try {
            const result = await gateway.#callUpstream(scope, gateway.#scriptTool(scope, server, tool, allowed, allowedTools), tool, args, true)
            const r = unwrapResult(result)
            return r.ok ? { ok: true, result: r.value } : { ok: false, error: { code: 'TOOL_EXECUTION_ERROR', message: r.message } }
          } catch (e) {
            return { ok: false, error: { code: e?.code ?? 'TOOL_EXECUTION_ERROR', message: e instanceof GatewayError ? e.message : describeError(e) } }
          }
        })
      },
    }
    // api.md §6: a script that names a tool of a configured server outside allowedServers gets
    // ACCESS_DENIED naming the policy, though that server's tools are not in the index.
    /** @type {Record<string, string>} */
    const deniedTools = {}
    for (const u of this.upstreams.values()) {
      if (!allowed(u.name)) deniedTools[`${u.name}:*`] = `MCP server '${u.name}' is not in allowedServers`
    }
    // §9: a person approves risky calls through the requesting client (elicitation), or however the
    // scope asks (exec: the terminal). A client that cannot ask leaves `approve` out: the policy's
    // whenUnavailable decides.
    const timeout = /** @type {number} */ (this.config.codecall.approval?.timeoutMs ?? 120_000)
    const elicit = scope.elicit
    const approve =
      scope.approve ??
      (elicit && scope.canElicit()
        ? (/** @type {any} */ request) => {
            const at = request.toolName.indexOf(':')
            const names = at > 0 ? { server: request.toolName.slice(0, at), tool: request.toolName.slice(at + 1) } : {}
            return approveByElicitation(elicit, request, { ...names, signal: scope.signal, timeout })
          }
        : undefined)
    return {
      // §11: whose recent executions a `codecall_save` by executionId reads (null: one shared).
      sessionId: scope.sessionId,
      // §12: the request's stream closed, or notifications/cancelled: the execution ends.
      signal: scope.signal,
      deniedTools,
      ...(approve ? { approve } : {}),
      // §9: these functions call '<server>:<tool>' — approvals hold for them as for callTool.
      toolFunctions: /** @type {Record<string, 'throw' | 'result'>} */ ({ 'mcp.callTool': 'throw', call_tool: 'result' }),
      callTool: (name, input) => {
        const at = typeof name === 'string' ? name.indexOf(':') : -1
        if (at <= 0) return Promise.reject(new GatewayError('TOOL_NOT_FOUND', `Tool '${name}' was not found (names are '<server>:<tool>')`))
        const server = name.slice(0, at)
        const tool = name.slice(at + 1)
        return Promise.resolve().then(() => this.#callUpstream(scope, this.#target(scope, server, allowed), tool, input))
      },
      onEvent: (event) => scope.event(event),
      functions,
      // §12: a call of a resumed run answered from its journal: its server counts in the audit
      // line as if the call ran here (it ran in the process that started the run).
      replayed: (/** @type {string} */ fn, /** @type {any[]} */ a) => {
        const name = fn === 'callTool' ? a[0] : a[0] !== undefined && typeof a[1] === 'string' ? `${a[0]}:${a[1]}` : null
        const at = typeof name === 'string' ? name.indexOf(':') : -1
        if (at > 0 && this.upstreams.has(name.slice(0, at))) scope.servers.add(name.slice(0, at))
      },
    }
  }

  /** Closes every upstream (no process left behind), the audit file and the engine. */
  async close() {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.upstreams.values()].map((u) => u.close().catch(() => {})))
    await this.engine?.dispose().catch(() => {})
    await this.audit?.close()
  }
}

/**
 * The saved script an execute or invoke ran (§11: the engine's result names it), or null.
 * @returns {{ name: string, version: number, codeSha256: string | null } | null}
 */
function savedRun(result) {
  const saved = result && typeof result === 'object' ? result.saved : undefined
  if (!saved || typeof saved !== 'object' || typeof saved.name !== 'string' || !Number.isInteger(saved.version)) return null
  const name = saved.name.startsWith('saved:') ? saved.name : `saved:${saved.name}`
  return { name, version: saved.version, codeSha256: typeof saved.codeSha256 === 'string' ? saved.codeSha256 : null }
}

/**
 * An upstream tool as a CodeCall `ToolDefinition`: `<server>:<tool>`, appId = server; `words`, the
 * upstream's own description of itself (`Upstream.ownWords()`), goes in `server` (searched only).
 */
function toolDefinition(server, tool, words) {
  const def = { name: `${server}:${tool.name}`, appId: server, source: 'mcp' }
  if (words) def.server = words
  if (typeof tool.title === 'string') def.title = tool.title
  if (typeof tool.description === 'string') def.description = tool.description
  if (tool.inputSchema && typeof tool.inputSchema === 'object') def.inputSchema = tool.inputSchema
  if (tool.outputSchema && typeof tool.outputSchema === 'object') def.outputSchema = tool.outputSchema
  if (tool.annotations && typeof tool.annotations === 'object') def.annotations = tool.annotations
  const meta = tool._meta?.codecall
  if (meta && typeof meta === 'object') {
    if (Array.isArray(meta.tags)) def.tags = meta.tags.filter((t) => typeof t === 'string')
    if (typeof meta.enabledInCodeCall === 'boolean') def.codecall = { enabledInCodeCall: meta.enabledInCodeCall }
    // §9: an upstream may ask for approval of its own tools or deny them, never loosen the
    // gateway's policy ('allow' is the gateway config's alone).
    if (meta.approval === 'ask' || meta.approval === 'deny') def.approval = meta.approval
  }
  return def
}

/**
 * The user's cache folder for the gateway's tool vectors; `undefined` when there is no home.
 * @param {Record<string, string | undefined>} env
 */
export function userCacheDir(env) {
  if (process.platform === 'win32') return env.LOCALAPPDATA ? join(env.LOCALAPPDATA, 'codecall') : undefined
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'codecall')
  let home
  try {
    home = env.HOME || homedir()
  } catch {
    return undefined
  }
  if (!home) return undefined
  return process.platform === 'darwin' ? join(home, 'Library', 'Caches', 'codecall') : join(home, '.cache', 'codecall')
}
