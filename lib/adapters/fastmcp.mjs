// `@codecall/native/fastmcp`: `codeMode(server, options?)` for `FastMCP` servers (`fastmcp` 4.x,
// api.md §8).
//
// FastMCP keeps its tools private and gives each client session its own SDK `Server`, whose
// `tools/list` and `tools/call` handlers it (re)installs in `FastMCPSession#setupToolHandlers`
// — at the session's start and after every addTool / removeTool. There is no public way to
// replace what those answer, so this reaches in at that one method (patched once, on the
// prototype, for the ESM and the CommonJS build of fastmcp alike): it lets FastMCP install its
// handlers, keeps them, and puts code mode in front — only for sessions of servers given to
// codeMode (recognised by the meta-tools registered on them). Every real tool call still runs
// FastMCP's own handler: its parameter validation, `canAccess`, timeouts, and the `context` given
// to `execute` (session, log, reportProgress, streamContent, signal, requestId).
// `__test__/adapters/fastmcp.spec.ts` fails loudly the day a version moves that method.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { assertUnclaimed, attach, claim, invalidArg, callThrough, listingContext } from './core.mjs'

const require = createRequire(import.meta.url)

/** Meta-tool objects registered on a server → that server's code mode. */
const owners = new WeakMap()
const patched = new WeakSet()

/**
 * fastmcp's ESM build, loaded with this module (the adapter of fastmcp may load fastmcp) — without
 * a top-level await, so that `require('@codecall/native/fastmcp')` works too: `require` of an ES
 * module (Node >= 20.19) gives the very instance `import` does. Older Node gets it from `import()`
 * a moment after this module loads.
 * @type {any}
 */
let esm = esmBuildNow()
if (!esm) {
  import('fastmcp').then(
    (m) => (esm = m),
    () => {},
  )
}

function esmBuildNow() {
  try {
    return require(fileURLToPath(import.meta.resolve('fastmcp')))
  } catch {
    return null
  }
}

/** The build of fastmcp `server` came from: ESM, else the CommonJS one (loaded only then). */
function buildOf(server) {
  if (esm && typeof esm.FastMCP === 'function' && server instanceof esm.FastMCP) return esm
  try {
    const cjs = require('fastmcp')
    if (typeof cjs.FastMCP === 'function' && server instanceof cjs.FastMCP) return cjs
  } catch {
    // no CommonJS build resolvable from here
  }
  return null
}

function patch(Session) {
  if (patched.has(Session)) return
  const setup = Session.prototype.setupToolHandlers
  if (typeof setup !== 'function') {
    throw invalidArg('codeMode(server): this fastmcp has no FastMCPSession#setupToolHandlers (a version this adapter does not know?)')
  }
  patched.add(Session)
  Session.prototype.setupToolHandlers = function (tools, ...rest) {
    const out = setup.call(this, tools, ...rest)
    const owner = Array.isArray(tools) ? tools.map((t) => owners.get(t)).find(Boolean) : undefined
    const handlers = this.server?._requestHandlers
    if (owner && handlers instanceof Map) owner.wrap(this, handlers)
    return out
  }
}

/**
 * Puts CodeCall in front of a FastMCP server: `tools/list` answers the meta-tools (separator `_`
 * unless given), a meta-tool runs the engine, and every tool call goes through FastMCP's own
 * `tools/call` path of the client's session. Call it before `start()` / `connect()` (sessions
 * that already exist keep serving the plain tools). Returns the `CodeCall`.
 * @param {any} server
 * @param {Record<string, any>} [options]
 */
export function codeMode(server, options = {}) {
  if (server === null || typeof server !== 'object' || typeof server.addTools !== 'function' || typeof server.removeTool !== 'function') {
    throw invalidArg('codeMode(server): server must be a FastMCP server')
  }
  const build = buildOf(server)
  if (!build) throw invalidArg("codeMode(server): server is not a FastMCP of the 'fastmcp' package this adapter resolves (install it beside @codecall/native)")
  assertUnclaimed(server, 'a FastMCP server')
  patch(build.FastMCPSession)

  /**
   * Each session's own handlers (FastMCP lists each session its own tools: `canAccess`). The
   * index holds the tools of every live session; each session's search and describe show only its
   * own, and its calls go through its own tools/call.
   * @type {WeakMap<object, { list: Function, call: Function, names?: Set<string> }>}
   */
  const inner = new WeakMap()
  /** The session set up last (stateless HTTP sessions are in no list but this one). */
  let latest = null
  const live = () => {
    const out = new Set(Array.isArray(server.sessions) ? server.sessions.map((s) => inner.get(s)).filter(Boolean) : [])
    if (latest) out.add(latest)
    return [...out]
  }
  const listing = (own) => own.list({ method: 'tools/list', params: {} }, listingContext())
  /** @type {{ list: Function, call: Function, changed: () => void, wrap: (session: any, handlers: Map<string, Function>) => void }} */
  const owner = {
    list: async () => ({ tools: [] }),
    call: async () => ({ content: [] }),
    changed: () => {},
    wrap(session, handlers) {
      /** @type {any} */
      const own = { list: handlers.get('tools/list'), call: handlers.get('tools/call'), session }
      if (typeof own.list !== 'function' || typeof own.call !== 'function') return
      inner.set(session, own)
      latest = own
      handlers.set('tools/list', (request, extra) => owner.list(request, extra, own))
      handlers.set('tools/call', (request, extra) => owner.call(request, extra, own))
      owner.changed()
    },
  }

  const codecall = attach(
    {
      serverName: typeof server.options?.name === 'string' ? server.options.name : 'fastmcp',
      async listTools() {
        const byName = new Map()
        for (const own of live()) {
          const result = await listing(own)
          const tools = Array.isArray(result?.tools) ? result.tools : []
          own.names = new Set(tools.map((t) => t.name))
          for (const t of tools) if (!byName.has(t.name)) byName.set(t.name, t)
        }
        return [...byName.values()]
      },
      async visible(own) {
        if (!own) return null
        if (!own.names) {
          const result = await listing(own)
          own.names = new Set((Array.isArray(result?.tools) ? result.tools : []).map((t) => t.name))
        }
        return own.names
      },
      callTool(name, args, request, extra, inner) {
        return callThrough(inner.call, name, args, request, extra)
      },
      context(extra, own) {
        const session = own?.session
        return {
          sessionId: extra?.sessionId ?? null,
          sendNotification: extra?.sendNotification,
          signal: extra?.signal,
          // §9: ask the client of the session whose request runs the plan.
          canElicit: () => Boolean(session?.clientCapabilities?.elicitation),
          elicit: (params, options) => session.requestElicitation(params, options),
        }
      },
      install({ list, call }) {
        owner.list = list
        owner.call = call
      },
      watch(changed) {
        owner.changed = changed
      },
      // FastMCP announces its own tool changes to every session.
      sendToolListChanged() {},
    },
    options,
  )

  // The meta-tools as real FastMCP tools: they give every session the tools capability, and mark
  // this server's sessions for the patched setupToolHandlers. Their calls never reach `execute`.
  const markers = codecall.metaTools().map((t) => ({
    name: t.name,
    description: t.description,
    execute: async () => {
      throw new Error(`${t.name} is served by codeMode`)
    },
  }))
  for (const m of markers) owners.set(m, owner)
  server.addTools(markers)
  claim(server)
  // The engine lives as long as the server.
  const stop = server.stop
  if (typeof stop === 'function') {
    server.stop = async function (...args) {
      try {
        return await stop.apply(this, args)
      } finally {
        await codecall.dispose().catch(() => {})
      }
    }
  }
  return codecall
}
