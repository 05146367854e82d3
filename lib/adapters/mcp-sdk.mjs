// `@codecall/native/mcp-sdk`: `codeMode(server, options?)` for the official TypeScript SDK —
// `McpServer` and the low-level `Server` of `@modelcontextprotocol/sdk` 1.x, and `McpServer` of
// `@modelcontextprotocol/server` 2.x (api.md §8). It loads no SDK itself: it works on the
// server object it is given, whichever copy of the SDK made it.
//
// The SDKs have no public API to replace what `tools/list` and `tools/call` answer, so this
// reaches in at one place, the same in every version: the protocol's map of request handlers
// (`server._requestHandlers`, method → `(request, extra) => result`). The entries found there
// are the SDK's own, with its request parsing, input validation and outputSchema checks; they
// are kept and called for every real tool call. `__test__/adapters/` fails loudly the day a
// version moves that map.
import { assertUnclaimed, attach, claim, invalidArg, callThrough, listingContext, releaseEngine, unknownTool } from './core.mjs'
import { modernRequest, principalOf } from '../common/modern.mjs'

/**
 * A handler context without a retry's `requestState` and `inputResponses`: those answer the
 * meta-tool's `input_required`, not the tools a script calls (a tool's own multi-round-trip, or a
 * server's `requestState.verify` hook, must not read them as its own).
 */
function withoutRetryMaterial(extra) {
  const req = extra?.mcpReq
  if (req === null || typeof req !== 'object') return extra
  const state = typeof req.requestState === 'function' ? req.requestState() : undefined
  if (state === undefined && req.inputResponses === undefined) return extra
  try {
    const props = Object.getOwnPropertyDescriptors(req)
    delete props.inputResponses
    delete props.droppedInputResponseKeys
    props.requestState = { value: () => undefined, writable: true, enumerable: true, configurable: true }
    const mcpReq = Object.create(Object.getPrototypeOf(req), props)
    const outer = Object.getOwnPropertyDescriptors(extra)
    outer.mcpReq = { value: mcpReq, writable: true, enumerable: true, configurable: true }
    return Object.create(Object.getPrototypeOf(extra), outer)
  } catch {
    return extra
  }
}

/** The low-level `Server` under a server object, and whether it is an `McpServer`. */
function lowLevel(server) {
  const isMcpServer = typeof server.registerTool === 'function' && server.server && typeof server.server === 'object'
  const low = isMcpServer ? server.server : server
  if (!(low._requestHandlers instanceof Map) || typeof low.setRequestHandler !== 'function') {
    throw invalidArg(
      'codeMode(server): expected an McpServer or Server of @modelcontextprotocol/sdk 1.x or @modelcontextprotocol/server 2.x ' +
        '(no request-handler map found: an SDK version this adapter does not know?)',
    )
  }
  return { low, isMcpServer }
}

/**
 * Puts CodeCall in front of an SDK server. Call it after registering tools (later ones are
 * re-indexed too). Returns the `CodeCall`: the server's own, disposed when the server closes (or
 * when its last run parked across requests ends), or `options.engine`, shared and never disposed
 * here (SDK 2.x's `createMcpHandler` / `serveStdio` build a server per request / connection).
 * @param {any} server
 * @param {Record<string, any>} [options]
 */
export function codeMode(server, options = {}) {
  assertUnclaimed(server, 'an McpServer or Server of the MCP TypeScript SDK')
  const { low, isMcpServer } = lowLevel(server)
  const handlers = low._requestHandlers

  if (isMcpServer && !server._toolHandlersInitialized && typeof server.setToolRequestHandlers === 'function') {
    // McpServer installs its tools/list and tools/call handlers on its first tool; make it do so
    // now, so they exist to be kept and its later registerTool() does not try again.
    try {
      server.setToolRequestHandlers()
    } catch (e) {
      throw invalidArg(`codeMode(server): the server cannot serve tools (${e.message}); call codeMode before connecting it`)
    }
  }

  /** The server's own handlers (the SDK's, or the user's on a low-level Server). */
  const inner = { list: handlers.get('tools/list'), call: handlers.get('tools/call') }
  /** Ours, once installed. @type {{ list?: Function, call?: Function }} */
  const mine = {}

  if (!isMcpServer) {
    // A low-level Server may get its tool handlers after codeMode(): keep ours in front of them.
    const setRequestHandler = low.setRequestHandler
    low.setRequestHandler = function (...args) {
      const out = setRequestHandler.apply(this, args)
      for (const [method, key] of [['tools/list', 'list'], ['tools/call', 'call']]) {
        const now = handlers.get(method)
        if (mine[key] && now && now !== mine[key]) {
          inner[key] = now
          handlers.set(method, mine[key])
        }
      }
      return out
    }
  }

  const owner = isMcpServer ? server : low
  const sendToolListChanged = typeof owner.sendToolListChanged === 'function' ? owner.sendToolListChanged.bind(owner) : () => {}
  const info = low._serverInfo ?? {}

  const codecall = attach(
    {
      serverName: typeof info.name === 'string' && info.name ? info.name : 'server',
      async listTools() {
        if (typeof inner.list !== 'function') return []
        const result = await inner.list({ method: 'tools/list', params: {} }, listingContext())
        return Array.isArray(result?.tools) ? result.tools : []
      },
      callTool(name, args, request, extra) {
        if (typeof inner.call !== 'function') return Promise.reject(unknownTool(name))
        return callThrough(inner.call, name, args, request, extra)
      },
      context(extra) {
        // §12: a modern request (SDK 2.x lifts its envelope into ctx.mcpReq.envelope) declares its
        // own capabilities and log level, and a retry carries its answers and requestState.
        const modern = modernRequest(extra)
        if (modern) {
          const req = extra.mcpReq
          return {
            modern,
            principal: principalOf(extra?.http?.authInfo),
            requestState: typeof req.requestState === 'function' ? req.requestState() : undefined,
            inputResponses: req.inputResponses,
            toolExtra: withoutRetryMaterial(extra),
            sessionId: null,
            sendNotification: req.notify,
            signal: req.signal,
          }
        }
        // §9: ask this request's own client (SDK 2.x: through the request; 1.x: the session's
        // server, related to this request so Streamable HTTP answers on its stream). Capabilities
        // are the connection's (its initialize): legacy stateful connections only.
        const viaRequest = typeof extra?.mcpReq?.elicitInput === 'function' ? extra.mcpReq : null
        return {
          sessionId: extra?.sessionId ?? null,
          sendNotification: extra?.sendNotification ?? extra?.mcpReq?.notify,
          signal: extra?.signal ?? extra?.mcpReq?.signal,
          canElicit: () => Boolean(typeof low.getClientCapabilities === 'function' && low.getClientCapabilities()?.elicitation),
          elicit: (params, options) =>
            viaRequest
              ? viaRequest.elicitInput(params, options)
              : low.elicitInput(params, { ...options, relatedRequestId: extra?.requestId }),
        }
      },
      modern: (extra) => modernRequest(extra),
      cacheHint() {
        // The server's own `cacheHints['tools/list']` (SDK 2.x), which its wrapped handler would add.
        const hint = low._cacheHints?.['tools/list']
        return hint !== null && typeof hint === 'object' ? hint : undefined
      },
      install({ list, call }) {
        mine.list = list
        mine.call = call
        handlers.set('tools/list', list)
        handlers.set('tools/call', call)
        if (typeof low.registerCapabilities === 'function' && !low._capabilities?.tools) {
          try {
            low.registerCapabilities({ tools: { listChanged: true } })
          } catch {
            // Already connected: the client was told the capabilities at initialize.
          }
        }
      },
      watch(changed) {
        // Every registration, update, enable, disable and removal ends in sendToolListChanged();
        // from now on that means "re-index", and CodeCall tells clients when what they see changed.
        owner.sendToolListChanged = () => {
          changed()
          return Promise.resolve()
        }
      },
      sendToolListChanged() {
        try {
          const sent = sendToolListChanged()
          if (sent && typeof sent.catch === 'function') sent.catch(() => {})
        } catch {
          // Not connected yet.
        }
      },
    },
    options,
  )
  claim(server)
  // The server's own engine (index, sandbox) lives as long as the server: when its connection
  // closes, it goes — once no run of it waits parked for a retry (§12). A shared engine
  // (`options.engine`) is the application's: it stays.
  const onclose = low._onclose
  if (typeof onclose === 'function') {
    low._onclose = function (...args) {
      try {
        return onclose.apply(this, args)
      } finally {
        releaseEngine(codecall)
      }
    }
  }
  return codecall
}
