// What every framework adapter shares (api.md §8): a CodeCall in front of a server's own tools.
// A framework binding gives three things — the server's own `tools/list` answer, a call through
// the server's own `tools/call` path, and a way to hear that its tools changed — and installs
// the two handlers this file builds. Everything else (metadata, modes, the meta-tools, events as
// notifications) is decided here once, the same for every framework.
//
// It never calls a tool any other way than through the binding's `callTool`, so the framework's
// input validation, outputSchema checks and the handler's context are those of a direct call.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { approveByElicitation, coalesced, indexTools, invalidArgumentsResult, metaToolResult, RequestScope, unknownTool } from '../common/mcp.mjs'
import { inToolCall, metaWithContext, withMetaParent } from '../common/otel.mjs'
import { canElicitForm, ParkedRuns, stateKey } from '../common/modern.mjs'

export { unknownTool }

const require = createRequire(import.meta.url)
const { CodeCall, SqliteRunStore } = require('../../index.js')

/** Servers already in code mode: a second `codeMode()` is a caller error, not a double wrap. */
const wrapped = new WeakSet()

/** A `TypeError` with `code: 'ERR_INVALID_ARG'`, as the rest of the package throws. */
export function invalidArg(message) {
  const e = new TypeError(message)
  // @ts-ignore — a code on a TypeError, as Node's own errors have.
  e.code = 'ERR_INVALID_ARG'
  return e
}

/** Throws `ERR_INVALID_ARG` unless `server` is an object not yet in code mode. */
export function assertUnclaimed(server, what) {
  if (server === null || typeof server !== 'object') throw invalidArg(`codeMode(server): server must be ${what}`)
  if (wrapped.has(server)) throw invalidArg('codeMode(server): this server is already in code mode')
}

/** Marks `server` as in code mode (once its set-up succeeded: a failed codeMode can be retried). */
export function claim(server) {
  wrapped.add(server)
}

/** An `extra` good enough for listing tools outside any request (v1 `extra`, v2 `ctx`). */
export function listingContext() {
  const signal = new AbortController().signal
  const refuse = async () => {
    throw new Error('not available while codeMode lists tools')
  }
  const notify = async () => {}
  return {
    signal,
    sessionId: undefined,
    _meta: {},
    requestId: 0,
    sendNotification: notify,
    sendRequest: refuse,
    mcpReq: { id: 0, method: 'tools/list', _meta: {}, signal, send: refuse, notify, log: notify },
    http: undefined,
  }
}

/**
 * A tool call through a framework's own `tools/call` handler: a request like the client's (its
 * id and `_meta`, so the progress token reaches the tool), with the client request's `extra`.
 */
export function callThrough(handler, name, args, request, extra) {
  const params = { name, arguments: args ?? {} }
  if (request?.params?._meta !== undefined) params._meta = request.params._meta
  return Promise.resolve(handler({ jsonrpc: '2.0', id: request?.id ?? 0, method: 'tools/call', params }, extra))
}

/**
 * §10: the client request and `extra` a script's tool call hands on, with the `traceparent` /
 * `tracestate` of its own `codecall.tool_call` span (the active one) in place of the client's —
 * in the request's `_meta` and in `extra`'s (SDK 1.x tools read `extra._meta`, 2.x
 * `ctx.mcpReq._meta`). Shallow copies that keep every other key and the prototype; the client's
 * objects stay as they are. Unchanged when there is nothing to replace (or it cannot be copied).
 * @returns {{ request: any, extra: any }}
 */
export function forToolCall(request, extra) {
  const meta = request?.params?._meta
  const own = metaWithContext(meta)
  if (own === meta || request === null || typeof request !== 'object') return { request, extra }
  try {
    const params = request.params !== null && typeof request.params === 'object' ? request.params : {}
    const out = { request: copyWith(request, 'params', copyWith(params, '_meta', own)), extra }
    if (extra === null || typeof extra !== 'object') return out
    if ('_meta' in extra) out.extra = copyWith(out.extra, '_meta', extra._meta === meta ? own : metaWithContext(extra._meta))
    const req = extra.mcpReq
    if (req !== null && typeof req === 'object' && '_meta' in req) {
      out.extra = copyWith(out.extra, 'mcpReq', copyWith(req, '_meta', req._meta === meta ? own : metaWithContext(req._meta)))
    }
    return out
  } catch {
    return { request, extra }
  }
}

/** A shallow copy of `obj` (own properties as they are, same prototype) with `key` set to `value`. */
function copyWith(obj, key, value) {
  const props = Object.getOwnPropertyDescriptors(obj)
  props[key] = { value, writable: true, enumerable: true, configurable: true }
  return Object.create(Object.getPrototypeOf(obj), props)
}

const METADATA_KEYS = ['appId', 'tags', 'examples', 'codecall', 'internal', 'source', 'approval']

/** `appId` from a tool name's prefix before its first `_ . : /`, else the server's name (§8). */
export function defaultAppId(name, serverName) {
  const m = /^([^_.:/]+)[_.:/]./.exec(name)
  return m ? m[1] : serverName
}

/**
 * A listed MCP tool plus its CodeCall metadata (`_meta.codecall`, then `options.tools[name]`,
 * which wins) as a CodeCall `ToolDefinition`.
 */
export function toolDefinition(tool, serverName, overrides) {
  const def = { name: tool.name }
  for (const key of ['title', 'description', 'inputSchema', 'outputSchema', 'annotations']) {
    if (tool[key] !== undefined && tool[key] !== null) def[key] = tool[key]
  }
  const fromMeta = tool._meta && typeof tool._meta === 'object' ? tool._meta.codecall : undefined
  for (const source of [fromMeta, overrides?.[tool.name]]) {
    if (!source || typeof source !== 'object') continue
    for (const key of METADATA_KEYS) if (source[key] !== undefined) def[key] = source[key]
  }
  if (def.appId === undefined) def.appId = defaultAppId(tool.name, serverName)
  return def
}

/** How long a client may keep a `tools/list` answer that holds only the meta-tools (they never change). */
const FIXED_LIST_TTL_MS = 3_600_000
/** Adapter options that may stand next to `engine` (the rest are the engine's own: `new CodeCall(...)`). */
const WITH_ENGINE = ['engine', 'tools', 'stateKey', 'approvalTimeoutMs']

/**
 * What the adapters keep per engine, made on its first `codeMode()`: the fingerprint of the tools
 * it was given (a server built per request whose tools are the same costs no re-index), its
 * meta-tool names, the approval wait its requests are bounded by, the runs parked across requests
 * (§12), and, for an engine of its own server, whether it waits to be disposed.
 * @type {WeakMap<object, { owned: boolean, fingerprint: string | null, metaNames: Set<string>, approvalTimeoutMs: number,
 *   keyOption: unknown, parked: ParkedRuns, live: number, released: boolean, warned: boolean }>}
 */
const engines = new WeakMap()

/**
 * Parked runs per state key, for the whole process: a client's retry may reach another server
 * instance (and, without a shared engine, another engine) than the request that parked the run.
 * @type {Map<string, ParkedRuns>}
 */
const parkedByKey = new Map()

/** The `ParkedRuns` of a state key (option, else `CODECALL_STATE_KEY`, else one random key per process). */
function parkedRunsFor(keyOption, timeoutMs, log, store) {
  const { key, configured } = stateKey(keyOption)
  // §12: runs kept in a run store are resumed through the same one. A store the engine opened
  // from a file is known by its path, and the runs parked through it use a connection of their
  // own (an engine of a server built per request is disposed, and closes its store, with it).
  const file = store instanceof SqliteRunStore && store.path !== ':memory:' ? store.path : null
  const where = file !== null ? `/f:${file}` : store ? `/s:${storeId(store)}` : ''
  const id = `${configured ? `k:${key.toString('hex')}` : 'process'}${where}`
  let parked = parkedByKey.get(id)
  if (!parked) {
    const own = file !== null ? () => new SqliteRunStore(file) : (store ?? null)
    parked = new ParkedRuns({ key, timeoutMs, log, names: () => ({}), store: own })
    parkedByKey.set(id, parked)
  }
  // One key, one set of runs: a state lives as long as the longest approval wait it may cover.
  parked.timeoutMs = Math.max(parked.timeoutMs, timeoutMs)
  return parked
}

/** Where a `CodeCall` keeps its `stateKey` option (engine.js `keep`; not enumerable). */
export const ENGINE_STATE_KEY = Symbol.for('codecall.stateKey')
/** Where a `CodeCall` keeps its run store (`options.runs.store`, opened; not enumerable). */
export const ENGINE_RUNS = Symbol.for('codecall.runs')

/** @type {WeakMap<object, number>} */
const storeIds = new WeakMap()
let storesSeen = 0
/** A number per run store object, for keying the runs parked through it. */
function storeId(store) {
  let id = storeIds.get(store)
  if (id === undefined) {
    id = storesSeen += 1
    storeIds.set(store, id)
  }
  return id
}

/** An object that looks like a `CodeCall` (any copy of this package). */
function isEngine(value) {
  return value !== null && typeof value === 'object' && ['handle', 'setTools', 'upsertTools', 'listTools', 'metaTools', 'dispose'].every((m) => typeof value[m] === 'function')
}

/** Same key bytes (a string or bytes) — or both unset. */
function sameKey(a, b) {
  if (a === b) return true
  if (a === undefined || a === null || b === undefined || b === null) return false
  const bytes = (v) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v instanceof Uint8Array ? Buffer.from(v) : null)
  const x = bytes(a)
  const y = bytes(b)
  return x !== null && y !== null && x.equals(y)
}

/** A short digest of the tool definitions an engine was given. */
function fingerprint(defs) {
  return createHash('sha256').update(JSON.stringify(defs)).digest('base64url')
}

/**
 * Lets an engine go when its server closes: disposed now if it is the server's own and no run of
 * it is in flight, else when its last run ends (a run parked across requests may be resumed through
 * another server instance). An engine given with `options.engine` is the application's: untouched.
 * @param {any} codecall
 */
export function releaseEngine(codecall) {
  const state = engines.get(codecall)
  if (!state) {
    codecall?.dispose?.().catch(() => {})
    return
  }
  if (!state.owned) return
  state.released = true
  if (state.live === 0) codecall.dispose().catch(() => {})
}

/**
 * What the adapter keeps per engine: the tools it holds (fingerprint), its meta-tool names, the
 * approval wait, the state key and its parked runs, the servers attached now. A server's own
 * engine (`owned`) never warns about its separator (the adapter chose it).
 */
function newEngineState(owned, codecall, timeoutMs, keyOption, log) {
  return {
    owned,
    fingerprint: null,
    metaNames: new Set(codecall.metaTools().map((/** @type {any} */ t) => t.name)),
    approvalTimeoutMs: timeoutMs,
    keyOption,
    parked: parkedRunsFor(keyOption, timeoutMs, log, codecall[ENGINE_RUNS]),
    live: 0,
    released: false,
    warned: owned,
  }
}

/**
 * Puts a CodeCall in front of a server through a framework binding; returns the CodeCall.
 *
 * `options.engine`: a `CodeCall` the application made once and shares between servers (SDK 2.x
 * builds one per HTTP request or stdio connection); nothing is built per server then, and the
 * engine's tools are re-indexed only when this server's differ from what it holds. Engine options
 * belong to the engine: next to `engine`, only `tools`, `stateKey` and `approvalTimeoutMs` (the
 * engine's `approval.timeoutMs`, when not the default) are taken.
 *
 * @param {{
 *   serverName: string,
 *   listTools: () => Promise<any[]>,
 *   callTool: (name: string, args: unknown, request: any, extra: any, via?: any) => Promise<any>,
 *   context: (extra: any, via?: any) => { sessionId?: string | null, sendNotification?: (n: any) => Promise<void>, signal?: AbortSignal,
 *     elicit?: (params: any, options: { signal?: AbortSignal, timeout?: number }) => Promise<any>, canElicit?: () => boolean,
 *     modern?: { protocolVersion: string, capabilities: Record<string, any>, logLevel: string | null } | null,
 *     principal?: string | null, requestState?: unknown, inputResponses?: Record<string, unknown>, toolExtra?: any },
 *   install: (handlers: { list: (request: any, extra: any) => Promise<any>, call: (request: any, extra: any, via?: any) => Promise<any> }) => void,
 *   watch: (changed: () => void) => void,
 *   sendToolListChanged: () => void,
 *   visible?: (via: any) => Promise<Set<string> | null>,
 *   modern?: (extra: any) => object | null,
 *   cacheHint?: () => { ttlMs?: number, cacheScope?: string } | undefined,
 *   log?: (line: string) => void,
 * }} binding
 *   `context().modern`: the request is of the stateless era (§12) and what it declared; then
 *   `principal` (its HTTP auth), `requestState` / `inputResponses` (a retry's), and `toolExtra`
 *   (the context its tool calls get: without the retry's material, which is the meta-tool's).
 * @param {Record<string, any>} [options]
 */
export function attach(binding, options) {
  options ??= {}
  if (options === null || typeof options !== 'object') throw invalidArg('codeMode(server, options): options must be an object')
  const { tools: overrides, engine, stateKey: keyOption, approvalTimeoutMs: timeoutOption, ...rest } = options
  // Optional means optional: null is as absent.
  const approvalTimeoutMs = timeoutOption ?? undefined
  if (overrides !== undefined && overrides !== null && typeof overrides !== 'object') {
    throw invalidArg('codeMode(server, options): options.tools must be an object of per-tool metadata')
  }
  const shared = engine !== undefined && engine !== null
  if (shared) {
    if (!isEngine(engine)) throw invalidArg('codeMode(server, options): options.engine must be a CodeCall')
    const misplaced = Object.keys(rest).filter((k) => rest[k] !== undefined)
    if (misplaced.length > 0) {
      throw invalidArg(
        `codeMode(server, { engine }): ${misplaced.map((k) => `'${k}'`).join(', ')} belong${misplaced.length === 1 ? 's' : ''} to the engine — ` +
          `give ${misplaced.length === 1 ? 'it' : 'them'} to new CodeCall(...); next to engine, codeMode takes only ${WITH_ENGINE.slice(1).join(', ')}`,
      )
    }
  } else if (approvalTimeoutMs !== undefined) {
    throw invalidArg('codeMode(server, options): approvalTimeoutMs goes with options.engine (without one, options.approval.timeoutMs is the engine’s own)')
  }
  if (approvalTimeoutMs !== undefined && !(typeof approvalTimeoutMs === 'number' && Number.isFinite(approvalTimeoutMs) && approvalTimeoutMs > 0)) {
    throw invalidArg(`codeMode(server, options): approvalTimeoutMs must be a positive number of milliseconds (got ${String(approvalTimeoutMs)})`)
  }
  const log = binding.log ?? ((line) => process.stderr.write(`codecall: ${line}\n`))
  const names = (list) => new Set(list.map((t) => t.name))
  const userChanged = rest.onToolsChanged
  let ready = false
  let holding = false
  let listed = new Set()
  const changed = () => {
    listed = names(codecall.listTools())
    if (ready) binding.sendToolListChanged()
    if (typeof userChanged === 'function') userChanged()
  }

  /** @type {any} */
  let codecall
  let state = shared ? engines.get(engine) : undefined
  if (shared) {
    codecall = engine
    const timeoutMs = approvalTimeoutMs ?? 120_000
    // §12: the adapter's stateKey, else the engine's own option.
    const key = keyOption ?? engine[ENGINE_STATE_KEY]
    if (!state) {
      state = newEngineState(false, engine, timeoutMs, key, log)
      engines.set(engine, state)
    } else {
      if (!sameKey(state.keyOption, key)) throw invalidArg('codeMode(server, { engine }): this engine is already served with another stateKey (one key per engine)')
      if (approvalTimeoutMs !== undefined && approvalTimeoutMs !== state.approvalTimeoutMs) {
        throw invalidArg(`codeMode(server, { engine }): this engine is already served with approvalTimeoutMs ${state.approvalTimeoutMs}`)
      }
    }
    if (!state.warned && [...state.metaNames].some((n) => n.includes(':'))) {
      state.warned = true
      log("codeMode: the engine's meta-tool names contain ':' — create it with metaToolSeparator: '_' for clients that accept only [A-Za-z0-9_-]")
    }
  } else {
    codecall = new CodeCall({
      metaToolSeparator: '_',
      ...rest,
      onToolsChanged: () => {
        if (!holding) changed()
      },
    })
    const timeoutMs = typeof rest.approval?.timeoutMs === 'number' ? rest.approval.timeoutMs : 120_000
    state = newEngineState(true, codecall, timeoutMs, keyOption, log)
    engines.set(codecall, state)
  }
  const engineState = state
  // Without a policy of its own nothing asks; a shared engine's policy is not readable: offer `approve`.
  const approvalOn = shared || (rest.approval !== undefined && rest.approval !== null)
  const approvalTimeout = engineState.approvalTimeoutMs
  const metaNames = engineState.metaNames
  let synced = false

  // The server's tools, read through its own tools/list: JSON Schema as the framework converts it.
  const refresh = coalesced(async () => {
    try {
      const tools = await binding.listTools()
      const defs = tools.filter((t) => !metaNames.has(t.name)).map((t) => toolDefinition(t, binding.serverName, overrides))
      const report = (name, message) => log(`codeMode: tool '${name}' not indexed: ${message}`)
      if (shared) {
        // A server built per request lists what the engine already holds: nothing to index.
        const print = fingerprint(defs)
        if (engineState.fingerprint !== print) {
          const before = listed
          indexTools(codecall, defs, report)
          engineState.fingerprint = print
          listed = names(codecall.listTools())
          if (ready && (before.size !== listed.size || [...before].some((n) => !listed.has(n)))) binding.sendToolListChanged()
        } else if (!synced) {
          listed = names(codecall.listTools())
        }
        return
      }
      indexTools(codecall, defs, report, (fn) => {
        holding = true
        try {
          fn()
        } finally {
          holding = false
        }
        changed()
      })
    } finally {
      ready = true
      synced = true
    }
  })
  const refreshed = () =>
    refresh().catch((e) => log(`codeMode: listing the server's tools failed: ${e?.message ?? e}`))
  // An engine of its own is indexed at once; a shared one on the first request that needs it.
  const current = () => refresh.pending() ?? (synced ? Promise.resolve() : refreshed())
  binding.watch(refreshed)
  if (!shared) refreshed()

  /** A script's tool calls through this request's own tools/call path (§10: in its tool_call span). */
  const toolsOf = (request, extra, via) => (tool, input) => {
    if (!inToolCall()) return binding.callTool(tool, input, request, extra, via)
    const own = forToolCall(request, extra)
    return binding.callTool(tool, input, own.request, own.extra, via)
  }

  /** A meta-tool's answer as the client gets it. */
  const finish = async (result, via) => {
    // Where the framework shows each session its own tools (FastMCP's canAccess), a session
    // is never shown another's in search or describe.
    const visible = binding.visible ? await binding.visible(via) : null
    return metaToolResult(visible ? onlyVisible(result, visible) : result)
  }

  /** One meta-tool call run to its end within this request (no parking). */
  const runHere = async (name, args, request, host, scope, via) => {
    try {
      // §10: the client's `_meta.traceparent` is the parent of this call's spans.
      const result = await withMetaParent(request?.params?._meta, () => codecall.handle(name, args ?? {}, host))
      await scope.flushed()
      return await finish(result, via)
    } catch (e) {
      return invalidArgumentsResult(e)
    } finally {
      scope.end()
    }
  }

  /** §9 on a legacy connection: approvals by the session's `elicitation/create`. */
  const legacyCall = (name, args, request, extra, via, context) => {
    // Notifications only: progress is the tools' own (they get the request's token), and the
    // request's signal already reaches them through their own context.
    const scope = new RequestScope({ sessionId: context.sessionId, sendNotification: context.sendNotification })
    /** @type {any} */
    const host = {
      // §11: whose recent executions `codecall_save` reads an executionId from (null: one shared).
      sessionId: context.sessionId ?? null,
      // The script's calls run with this request's context (session, auth, signal, progress token),
      // and, inside the engine's tool_call span (§10), that span as their trace context.
      callTool: toolsOf(request, extra, via),
      onEvent: (event) => scope.event(event),
    }
    if (context.signal) host.signal = context.signal
    // §9: approvals through this session's client (elicitation); without the capability,
    // `approve` stays absent and the policy's whenUnavailable decides.
    const elicit = context.elicit
    if (approvalOn && elicit && context.canElicit?.()) {
      const signal = context.signal ? AbortSignal.any([context.signal, scope.signal]) : scope.signal
      host.approve = (/** @type {any} */ r) => approveByElicitation(elicit, r, { signal, timeout: approvalTimeout })
    }
    return runHere(name, args, request, host, scope, via)
  }

  /**
   * §12 on a modern request: no session, capabilities from the request, logs only at its
   * `logLevel`; approvals end the request with `input_required` and the run waits parked for the
   * retry, which may come through another server instance.
   */
  const modernCall = async (name, args, request, extra, via, context) => {
    const modern = /** @type {{ capabilities: Record<string, any>, logLevel: string | null }} */ (context.modern)
    const principal = context.principal ?? null
    const canAsk = canElicitForm(modern.capabilities)
    const requestState = context.requestState
    const callTool = toolsOf(request, context.toolExtra ?? extra, via)
    if ((requestState === undefined || requestState === null) && !canAsk) {
      // Nobody can be asked (whenUnavailable decides) and nothing to resume: run it here.
      const scope = new RequestScope({ sessionId: principal, sendNotification: context.sendNotification, logLevel: () => modern.logLevel })
      /** @type {any} */
      const host = { sessionId: principal, callTool, onEvent: (event) => scope.event(event) }
      if (context.signal) host.signal = context.signal
      return runHere(name, args, request, host, scope, via)
    }
    try {
      const out = await engineState.parked.call({
        tool: name,
        args: args ?? {},
        principal,
        requestState,
        inputResponses: context.inputResponses,
        // `callTool`: this request's own tools/call path, which the run's calls take while it is attached.
        attach: /** @type {any} */ ({ send: context.sendNotification, logLevel: modern.logLevel, signal: context.signal, callTool }),
        start: (run) => {
          engineState.live += 1
          const scope = new RequestScope({ sessionId: principal, sendNotification: (n) => run.send(n), logLevel: run.logLevel })
          /** @type {any} */
          const host = {
            // §11/§12: no session in this era — the principal's executions (null: this process's).
            sessionId: principal,
            signal: run.signal,
            callTool: (/** @type {string} */ tool, /** @type {unknown} */ input) => {
              // An expired or cancelled run calls nothing more.
              if (run.signal.aborted) throw new Error(`the execution was ended: ${run.signal.reason?.message ?? 'aborted'}`)
              return run.attached().callTool(tool, input)
            },
            onEvent: (/** @type {any} */ event) => scope.event(event),
          }
          if (canAsk) host.approve = run.approve
          return (async () => {
            try {
              const result = await withMetaParent(request?.params?._meta, () => codecall.handle(name, args ?? {}, run.journal(host)))
              await scope.flushed()
              return await finish(result, via)
            } finally {
              scope.end()
              engineState.live -= 1
              if (engineState.released && engineState.live === 0) codecall.dispose().catch(() => {})
            }
          })()
        },
      })
      if ('inputRequired' in out) return { resultType: 'input_required', ...out.inputRequired }
      return out.result
    } catch (e) {
      // A refused requestState (nothing ran), or malformed arguments.
      return invalidArgumentsResult(e)
    }
  }

  binding.install({
    list: async (request, extra) => {
      await current()
      const tools = codecall.listTools()
      /** @type {Record<string, unknown>} */
      const out = { tools }
      // §12: a modern list answer says how long it may be kept. The server's own hint wins; a list
      // of the meta-tools alone never changes and is the same for every client.
      if (binding.modern?.(extra)) {
        const hint = binding.cacheHint?.() ?? (tools.every((t) => metaNames.has(t.name)) ? { ttlMs: FIXED_LIST_TTL_MS, cacheScope: 'public' } : undefined)
        if (hint?.ttlMs !== undefined) out.ttlMs = hint.ttlMs
        if (hint?.cacheScope !== undefined) out.cacheScope = hint.cacheScope
      }
      return out
    },
    // `via`: what the binding needs to reach this request's own tools/call path (e.g. its session).
    call: async (request, extra, via) => {
      await current()
      const name = request?.params?.name
      const args = request?.params?.arguments
      if (metaNames.has(name)) {
        const context = binding.context(extra, via)
        if (context.modern) return modernCall(name, args, request, extra, via, context)
        return legacyCall(name, args, request, extra, via, context)
      }
      if (listed.has(name)) return binding.callTool(name, args, request, extra, via)
      throw unknownTool(name)
    },
  })
  return codecall
}

/**
 * A search or describe answer without the tools a session cannot see. Saved scripts (§11,
 * `saved:<name>`) are the engine's, not the framework's: every session sees them (each of their
 * calls still goes through this session's own tools/call).
 */
function onlyVisible(result, visible) {
  if (result === null || typeof result !== 'object' || !Array.isArray(result.tools)) return result
  const shown = (t) => visible.has(t.name) || String(t.name).startsWith('saved:')
  const hidden = result.tools.filter((t) => !shown(t)).map((t) => t.name)
  if (hidden.length === 0) return result
  const out = { ...result, tools: result.tools.filter(shown) }
  // describe: hidden tools read as unknown ones; search: they are simply not there.
  if (result.typescript !== undefined || 'notFound' in result || result.tools.some((t) => 'usageExamples' in t)) {
    out.notFound = [...(result.notFound ?? []), ...hidden]
  }
  return out
}
