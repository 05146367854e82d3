// What every framework adapter shares (api.md §8): a CodeCall in front of a server's own tools.
// A framework binding gives three things — the server's own `tools/list` answer, a call through
// the server's own `tools/call` path, and a way to hear that its tools changed — and installs
// the two handlers this file builds. Everything else (metadata, modes, the meta-tools, events as
// notifications) is decided here once, the same for every framework.
//
// It never calls a tool any other way than through the binding's `callTool`, so the framework's
// input validation, outputSchema checks and the handler's context are those of a direct call.
import { createRequire } from 'node:module'
import { approveByElicitation, coalesced, indexTools, invalidArgumentsResult, metaToolResult, RequestScope, unknownTool } from '../common/mcp.mjs'
import { inToolCall, metaWithContext, withMetaParent } from '../common/otel.mjs'

export { unknownTool }

const require = createRequire(import.meta.url)
const { CodeCall } = require('../../index.js')

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

/**
 * Puts a CodeCall in front of a server through a framework binding; returns the CodeCall.
 *
 * @param {{
 *   serverName: string,
 *   listTools: () => Promise<any[]>,
 *   callTool: (name: string, args: unknown, request: any, extra: any, via?: any) => Promise<any>,
 *   context: (extra: any, via?: any) => { sessionId?: string | null, sendNotification?: (n: any) => Promise<void>, signal?: AbortSignal,
 *     elicit?: (params: any, options: { signal?: AbortSignal, timeout?: number }) => Promise<any>, canElicit?: () => boolean },
 *   install: (handlers: { list: (request: any, extra: any) => Promise<any>, call: (request: any, extra: any, via?: any) => Promise<any> }) => void,
 *   watch: (changed: () => void) => void,
 *   sendToolListChanged: () => void,
 *   visible?: (via: any) => Promise<Set<string> | null>,
 *   log?: (line: string) => void,
 * }} binding
 * @param {Record<string, any>} [options]
 */
export function attach(binding, options) {
  options ??= {}
  if (options === null || typeof options !== 'object') throw invalidArg('codeMode(server, options): options must be an object')
  const { tools: overrides, ...rest } = options
  if (overrides !== undefined && overrides !== null && typeof overrides !== 'object') {
    throw invalidArg('codeMode(server, options): options.tools must be an object of per-tool metadata')
  }
  const userChanged = rest.onToolsChanged
  const approvalOn = rest.approval !== undefined && rest.approval !== null
  const approvalTimeout = typeof rest.approval?.timeoutMs === 'number' ? rest.approval.timeoutMs : 120_000
  let ready = false
  let holding = false
  const changed = () => {
    listed = names(codecall.listTools())
    if (ready) binding.sendToolListChanged()
    if (typeof userChanged === 'function') userChanged()
  }
  const codecall = new CodeCall({
    metaToolSeparator: '_',
    ...rest,
    onToolsChanged: () => {
      if (!holding) changed()
    },
  })
  const log = binding.log ?? ((line) => process.stderr.write(`codecall: ${line}\n`))
  const names = (list) => new Set(list.map((t) => t.name))
  const metaNames = names(codecall.metaTools())
  let listed = new Set()

  // The server's tools, read through its own tools/list: JSON Schema as the framework converts it.
  const refresh = coalesced(async () => {
    try {
      const tools = await binding.listTools()
      const defs = tools.filter((t) => !metaNames.has(t.name)).map((t) => toolDefinition(t, binding.serverName, overrides))
      indexTools(codecall, defs, (name, message) => log(`codeMode: tool '${name}' not indexed: ${message}`), (fn) => {
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
    }
  })
  const current = () => refresh.pending() ?? Promise.resolve()
  const refreshed = () =>
    refresh().catch((e) => log(`codeMode: listing the server's tools failed: ${e?.message ?? e}`))
  binding.watch(refreshed)
  refreshed()

  binding.install({
    list: async () => {
      await current()
      return { tools: codecall.listTools() }
    },
    // `via`: what the binding needs to reach this request's own tools/call path (e.g. its session).
    call: async (request, extra, via) => {
      await current()
      const name = request?.params?.name
      const args = request?.params?.arguments
      if (metaNames.has(name)) {
        // Notifications only: progress is the tools' own (they get the request's token), and the
        // request's signal already reaches them through their own context.
        const context = binding.context(extra, via)
        const scope = new RequestScope({ sessionId: context.sessionId, sendNotification: context.sendNotification })
        /** @type {any} */
        const host = {
          // §11: whose recent executions `codecall_save` reads an executionId from (null: one shared).
          sessionId: context.sessionId ?? null,
          // The script's calls run with this request's context (session, auth, signal, progress token),
          // and, inside the engine's tool_call span (§10), that span as their trace context.
          callTool: (tool, input) => {
            if (!inToolCall()) return binding.callTool(tool, input, request, extra, via)
            const own = forToolCall(request, extra)
            return binding.callTool(tool, input, own.request, own.extra, via)
          },
          onEvent: (event) => scope.event(event),
        }
        // §9: approvals through this session's client (elicitation); without the capability,
        // `approve` stays absent and the policy's whenUnavailable decides.
        const elicit = context.elicit
        if (approvalOn && elicit && context.canElicit?.()) {
          const signal = context.signal ? AbortSignal.any([context.signal, scope.signal]) : scope.signal
          host.approve = (/** @type {any} */ r) => approveByElicitation(elicit, r, { signal, timeout: approvalTimeout })
        }
        try {
          // §10: the client's `_meta.traceparent` is the parent of this call's spans.
          const result = await withMetaParent(request?.params?._meta, () => codecall.handle(name, args ?? {}, host))
          await scope.flushed()
          // Where the framework shows each session its own tools (FastMCP's canAccess), a session
          // is never shown another's in search or describe.
          const visible = binding.visible ? await binding.visible(via) : null
          return metaToolResult(visible ? onlyVisible(result, visible) : result)
        } catch (e) {
          return invalidArgumentsResult(e)
        } finally {
          scope.end()
        }
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
