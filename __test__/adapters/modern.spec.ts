// `codeMode(server, { engine })` on SDK 2.x's modern server patterns (api.md §8, §12): a server
// built per HTTP request by `createMcpHandler(factory)` (served in-process through its fetch face)
// and per stdio connection by `serveStdio(factory)` (examples/modern-server.mjs in a child
// process), one engine for all of them, driven by the real TS client 2.4 pinned to 2026-07-28, in
// auto mode and legacy — and by raw JSON-RPC for what a client library would never send.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { codeMode } from '../../lib/adapters/mcp-sdk.mjs'
import { CodeCall, SqliteRunStore } from '../../index.js'

// Modules without declarations, loaded untyped.
const load = (path: string): Promise<any> => import(new URL(path, import.meta.url).href)
const { ParkedRuns, StateSeal, argsDigest } = await load('../../lib/common/modern.mjs')

const ROOT = resolve(__dirname, '../..')
const MODERN = '2026-07-28'
type Mode = 'legacy' | 'auto' | { pin: string }
const MODES: [string, Mode][] = [
  ['pinned to 2026-07-28', { pin: MODERN }],
  ['auto', 'auto'],
  ['legacy', 'legacy'],
]

/** Every tool call that reached a tool handler, by tool. */
const calls: Record<string, number> = {}
const count = (tool: string) => (calls[tool] = (calls[tool] ?? 0) + 1)
const text = (v: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(v) }] })

/** Servers built, and what codeMode returned for each. */
const built: unknown[] = []

function register(server: McpServer) {
  server.registerTool(
    'users_list',
    { description: 'List the users of the workspace', inputSchema: z.object({ limit: z.number().int().optional() }), annotations: { readOnlyHint: true } },
    async ({ limit }) => (count('users_list'), text([{ id: 1, name: 'Ada' }, { id: 2, name: 'Grace' }].slice(0, limit ?? 10))),
  )
  server.registerTool(
    'users_delete',
    { description: 'Delete a user account', inputSchema: z.object({ id: z.number().int() }), annotations: { destructiveHint: true } },
    async ({ id }) => (count('users_delete'), text({ deleted: id })),
  )
  server.registerTool(
    'orders_cancel',
    { description: 'Cancel an order', inputSchema: z.object({ orderId: z.number().int() }), annotations: { destructiveHint: true } },
    async ({ orderId }) => (count('orders_cancel'), text({ cancelled: orderId })),
  )
  return server
}

const engine = new CodeCall({ metaToolSeparator: '_', directCalls: { enabled: true }, approval: { require: 'destructive' }, scripts: { store: ':memory:' } })
// The engine is indexed when a server's tools differ from what it holds: count it.
let indexed = 0
const setTools = engine.setTools.bind(engine)
engine.setTools = (tools) => {
  indexed += 1
  return setTools(tools)
}

function factory() {
  // `logging`: the SDK sends no log message without it.
  const server = register(new McpServer({ name: 'shop', version: '1.0.0' }, { capabilities: { logging: {} } }))
  built.push(codeMode(server, { engine, stateKey: 'test-state-key-of-at-least-16-bytes' }))
  return server
}
const handler = createMcpHandler(factory)

afterAll(async () => {
  await handler.close()
  await engine.dispose()
})

type Elicit = (params: { message: string; requestedSchema?: unknown }) => Promise<{ action: string; content?: Record<string, unknown> }>
const clients: Client[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {})
})

function newClient(mode: Mode, elicit?: Elicit) {
  const client = new Client({ name: 'test', version: '1' }, { versionNegotiation: { mode }, ...(elicit ? { capabilities: { elicitation: { form: {} } } } : {}) })
  if (elicit) client.setRequestHandler('elicitation/create', (r: any) => elicit(r.params) as any)
  clients.push(client)
  return client
}

/** A client of `handler` over Streamable HTTP, in-process (the handler's fetch face). */
async function overHttp(mode: Mode, elicit?: Elicit, authInfo?: { token: string; clientId: string; scopes: string[] }, h = handler) {
  const client = newClient(mode, elicit)
  const transport = new StreamableHTTPClientTransport(new URL('http://shop.test/mcp'), {
    fetch: (url, init) => h.fetch(new Request(url, init), authInfo ? { authInfo } : undefined),
  })
  await client.connect(transport)
  return client
}

const structured = (r: any) => r.structuredContent as any
const execute = async (client: Client, script: string) => structured(await client.callTool({ name: 'codecall_execute', arguments: { script } }))

describe.each(MODES)('createMcpHandler(factory), a client %s', (_, mode) => {
  it('search, describe, execute and invoke through the shared engine', async () => {
    const client = await overHttp(mode)
    expect(client.getProtocolEra?.()).toBe(mode === 'legacy' ? 'legacy' : 'modern')
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', 'codecall_invoke', 'codecall_save'])
    const found = structured(await client.callTool({ name: 'codecall_search', arguments: { query: 'list the users' } }))
    expect(found.tools[0].name).toBe('users_list')
    const described = structured(await client.callTool({ name: 'codecall_describe', arguments: { toolNames: ['users_delete'] } }))
    expect(described.tools[0].inputSchema).toMatchObject({ type: 'object', properties: { id: { type: 'integer' } } })
    const before = calls.users_list ?? 0
    const r = await execute(client, "const u = await callTool('users_list', { limit: 1 }); return u[0].name")
    expect(r).toMatchObject({ status: 'ok', result: 'Ada' })
    const invoked = structured(await client.callTool({ name: 'codecall_invoke', arguments: { tool: 'users_list', input: {} } }))
    expect(invoked).toMatchObject({ status: 'ok', result: [{ id: 1 }, { id: 2 }] })
    expect(calls.users_list).toBe(before + 2)
    // Validation of the tool's own input, through the server's own tools/call.
    const bad = await execute(client, "return await callTool('users_list', { limit: 'x' }, { throwOnError: false })")
    expect(bad.result.success).toBe(false)
  })

  it('saves by executionId in a later request (no session: the process, or the principal)', async () => {
    const client = await overHttp(mode)
    const ran = await execute(client, "return (await callTool('users_list', {})).length")
    expect(ran.status).toBe('ok')
    const other = await overHttp(mode)
    const saved = structured(
      await other.callTool({ name: 'codecall_save', arguments: { name: `count-users-${typeof mode === 'string' ? mode : 'pin'}`, description: 'Count the users', executionId: ran.stats.executionId } }),
    )
    expect(saved).toMatchObject({ name: expect.stringMatching(/^saved:count-users/), version: 1 })
  })
})

describe('createMcpHandler(factory) with codeMode(server, { engine })', () => {
  it('builds no engine per request and indexes once for the same tools', async () => {
    const start = built.length
    const indexedBefore = indexed
    const client = await overHttp({ pin: MODERN })
    for (let i = 0; i < 5; i++) await client.callTool({ name: 'codecall_search', arguments: { query: 'users' } })
    expect(built.length - start).toBeGreaterThanOrEqual(5)
    expect(new Set(built)).toEqual(new Set([engine]))
    // The first server ever indexed it (maybe in another test); the same tools never again.
    expect(indexed - indexedBefore).toBe(indexedBefore === 0 ? 1 : 0)
    expect(indexed).toBe(1)
    // The per-request servers closed; the engine serves on.
    expect(await engine.execute({ script: 'return 1' }, { callTool: () => null })).toMatchObject({ status: 'ok', result: 1 })
  })

  it('re-indexes when a server brings other tools', async () => {
    const other = new CodeCall({ metaToolSeparator: '_' })
    let extra = false
    const h = createMcpHandler(() => {
      const server = register(new McpServer({ name: 'shop', version: '1.0.0' }))
      if (extra) server.registerTool('stock_audit', { description: 'Audit the warehouse stock' }, async () => text('ok'))
      codeMode(server, { engine: other })
      return server
    })
    try {
      const client = await overHttp({ pin: MODERN }, undefined, undefined, h)
      expect(structured(await client.callTool({ name: 'codecall_search', arguments: { query: 'audit warehouse stock' } })).tools.map((t: any) => t.name)).not.toContain('stock_audit')
      extra = true
      expect(structured(await client.callTool({ name: 'codecall_search', arguments: { query: 'audit warehouse stock' } })).tools[0].name).toBe('stock_audit')
    } finally {
      await h.close()
      await other.dispose()
    }
  })

  it('engine options next to engine are refused; tools, stateKey and approvalTimeoutMs are taken', async () => {
    const server = () => register(new McpServer({ name: 'x', version: '1' }))
    expect(() => codeMode(server(), { engine, approval: { require: 'all' } } as any)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(/'approval' belongs to the engine/) }),
    )
    expect(() => codeMode(server(), { engine, mode: 'codecall_opt_in', vm: {} } as any)).toThrow(/'mode', 'vm' belong to the engine/)
    expect(() => codeMode(server(), { engine: {} } as any)).toThrow(/options.engine must be a CodeCall/)
    expect(() => codeMode(server(), { approvalTimeoutMs: 5 } as any)).toThrow(/approvalTimeoutMs goes with options.engine/)
    expect(() => codeMode(server(), { engine, stateKey: 'another-key-of-at-least-16-bytes' })).toThrow(/another stateKey/)
    expect(() => codeMode(server(), { engine, stateKey: 'short' })).toThrow(/another stateKey/)
    expect(codeMode(server(), { engine, stateKey: Buffer.from('test-state-key-of-at-least-16-bytes'), tools: { users_list: { tags: ['x'] } } })).toBe(engine)
    // Optional means optional: each adapter option may be null or undefined.
    const fresh = new CodeCall({ metaToolSeparator: '_' })
    try {
      expect(codeMode(server(), { engine: fresh, stateKey: null, approvalTimeoutMs: null, tools: null } as any)).toBe(fresh)
      expect(codeMode(server(), { engine: fresh, stateKey: undefined, approvalTimeoutMs: undefined, tools: undefined })).toBe(fresh)
      const own = codeMode(server(), { stateKey: null, approvalTimeoutMs: null, tools: null, engine: null } as any)
      expect(own).not.toBe(fresh)
      await own.dispose()
    } finally {
      await fresh.dispose()
    }
  })
})

/** An elicitation handler that answers from a list, and what it was asked. */
function answers(...replies: { action: string; content?: Record<string, unknown> }[]) {
  const asked: string[] = []
  const elicit: Elicit = async (p) => {
    asked.push(p.message)
    return replies.shift() ?? { action: 'decline' }
  }
  return { asked, elicit }
}

describe.each(MODES.slice(0, 2))('approvals by input_required (§12), a client %s', (_, mode) => {
  it('approve runs the call once; the rest of the script runs once', async () => {
    const { asked, elicit } = answers({ action: 'accept', content: { always: false } })
    const client = await overHttp(mode, elicit)
    const before = { ...calls }
    const r = await execute(client, "const u = await callTool('users_list', {}); const d = await callTool('users_delete', { id: u[1].id }); return d")
    expect(r).toMatchObject({ status: 'ok', result: { deleted: 2 } })
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatch(/the tool 'users_delete'/)
    expect(asked[0]).toContain('"id": 2')
    expect(calls.users_list).toBe((before.users_list ?? 0) + 1)
    expect(calls.users_delete).toBe((before.users_delete ?? 0) + 1)
  })

  it('approve_always holds for the rest of the run: the second call is not asked', async () => {
    const { asked, elicit } = answers({ action: 'accept', content: { always: true } })
    const client = await overHttp(mode, elicit)
    const before = calls.users_delete ?? 0
    const r = await execute(client, "await callTool('users_delete', { id: 1 }); return await callTool('users_delete', { id: 2 })")
    expect(r).toMatchObject({ status: 'ok', result: { deleted: 2 } })
    expect(asked).toHaveLength(1)
    expect(calls.users_delete).toBe(before + 2)
  })

  it('decline: ACCESS_DENIED "declined by the user", the tool is never reached', async () => {
    const { asked, elicit } = answers({ action: 'decline' })
    const client = await overHttp(mode, elicit)
    const before = calls.users_delete ?? 0
    const r = await execute(client, "return (await callTool('users_delete', { id: 1 }, { throwOnError: false })).error")
    expect(r.result).toEqual({ code: 'ACCESS_DENIED', message: "Tool 'users_delete' was not approved: declined by the user" })
    expect(asked).toHaveLength(1)
    expect(calls.users_delete ?? 0).toBe(before)
  })

  it('two rounds: each call asked in its turn, nothing runs twice', async () => {
    const { asked, elicit } = answers({ action: 'accept' }, { action: 'accept' })
    const client = await overHttp(mode, elicit)
    const before = { ...calls }
    const r = await execute(
      client,
      "const u = await callTool('users_list', {}); const d = await callTool('users_delete', { id: u[0].id }); const c = await callTool('orders_cancel', { orderId: 7 }); return [d, c]",
    )
    expect(r).toMatchObject({ status: 'ok', result: [{ deleted: 1 }, { cancelled: 7 }] })
    expect(asked.map((m) => /the tool '(\w+)'/.exec(m)?.[1])).toEqual(['users_delete', 'orders_cancel'])
    for (const tool of ['users_list', 'users_delete', 'orders_cancel']) expect(calls[tool]).toBe((before[tool] ?? 0) + 1)
  })

  it('invoke asks too', async () => {
    const { asked, elicit } = answers({ action: 'accept' })
    const client = await overHttp(mode, elicit)
    const r = structured(await client.callTool({ name: 'codecall_invoke', arguments: { tool: 'orders_cancel', input: { orderId: 3 } } }))
    expect(r).toMatchObject({ status: 'ok', result: { cancelled: 3 } })
    expect(asked).toHaveLength(1)
  })

  it('a client without the elicitation capability: whenUnavailable, nobody asked', async () => {
    const client = await overHttp(mode)
    const before = calls.users_delete ?? 0
    const r = await execute(client, "return (await callTool('users_delete', { id: 1 }, { throwOnError: false })).error.message")
    expect(r.result).toBe("Tool 'users_delete' was not approved: the client cannot ask for approval")
    expect(calls.users_delete ?? 0).toBe(before)
  })
})

describe('a run store (§12): the retry reaches another instance', () => {
  it('two instances, each its own engine over one store and key: every call runs once, each round on the other instance', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codecall-adapter-runs-'))
    const path = join(dir, 'runs.db')
    // Each instance its own store object over one file; reads counted: a retry that finds its run
    // in this process's memory reads no store, one that resumes from the store does.
    const reads: number[] = [0, 0]
    const engines = [0, 1].map((i) => {
      const file = new SqliteRunStore(path)
      const store = { put: file.put.bind(file), delete: file.delete.bind(file), get: (id: string) => ((reads[i] += 1), file.get(id)) }
      return new CodeCall({ metaToolSeparator: '_', approval: { require: 'destructive' }, runs: { store } })
    })
    const handlers = engines.map((e) =>
      createMcpHandler(() => {
        const server = register(new McpServer({ name: 'shop', version: '1.0.0' }))
        codeMode(server, { engine: e, stateKey: 'adapter-runs-state-key-0123456789' })
        return server
      }),
    )
    try {
      // Behind a load balancer without sticky sessions: each request goes to the next instance.
      let n = 0
      const served: number[] = []
      const { asked, elicit } = answers({ action: 'accept' }, { action: 'accept' })
      const client = newClient({ pin: MODERN }, elicit)
      const transport = new StreamableHTTPClientTransport(new URL('http://shop.test/mcp'), {
        fetch: (url, init) => {
          const i = n++ % 2
          served.push(i)
          return handlers[i].fetch(new Request(url, init))
        },
      })
      await client.connect(transport)
      const before = { ...calls }
      served.length = 0
      const r = await execute(
        client,
        "const u = await callTool('users_list', {}); const d = await callTool('users_delete', { id: u[0].id }); const c = await callTool('orders_cancel', { orderId: 8 }); return [d, c]",
      )
      expect(r).toMatchObject({ status: 'ok', result: [{ deleted: 1 }, { cancelled: 8 }] })
      expect(asked).toHaveLength(2)
      // The call and its two retries were served by alternating instances.
      expect(new Set(served).size).toBe(2)
      for (const tool of ['users_list', 'users_delete', 'orders_cancel']) expect(calls[tool]).toBe((before[tool] ?? 0) + 1)
      // Both retries were resumed from the store, by replay, each on the instance that did not hold the run.
      expect(reads[0] + reads[1]).toBe(2)
    } finally {
      for (const h of handlers) await h.close()
      for (const e of engines) await e.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('a run store without engine: each request’s server its own engine over one file', () => {
  it('the retry resumes the run (its own request, its own engine); every call once; the engines go', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codecall-adapter-runs-owned-'))
    const owned: any[] = []
    const h = createMcpHandler(() => {
      const server = register(new McpServer({ name: 'shop', version: '1.0.0' }))
      owned.push(codeMode(server, { approval: { require: 'destructive' }, runs: { store: join(dir, 'runs.db') }, stateKey: 'adapter-owned-runs-key-0123456789' }))
      return server
    })
    try {
      const { asked, elicit } = answers({ action: 'accept' })
      const client = await overHttp({ pin: MODERN }, elicit, undefined, h)
      const before = { ...calls }
      const r = await execute(client, "const u = await callTool('users_list', {}); return await callTool('orders_cancel', { orderId: u[0].id })")
      expect(r).toMatchObject({ status: 'ok', result: { cancelled: 1 } })
      expect(asked).toHaveLength(1)
      for (const tool of ['users_list', 'orders_cancel']) expect(calls[tool]).toBe((before[tool] ?? 0) + 1)
      await vi.waitFor(async () => {
        for (const e of owned) expect(await e.execute({ script: 'return 1' }, { callTool: () => null })).toMatchObject({ error: { code: 'POOL_DISPOSED' } })
      })
    } finally {
      await h.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('approvals on legacy requests', () => {
  it('stateless legacy HTTP (a server per request, no session to ask through): whenUnavailable', async () => {
    const { asked, elicit } = answers({ action: 'accept' })
    const client = await overHttp('legacy', elicit)
    const r = await execute(client, "return (await callTool('users_delete', { id: 1 }, { throwOnError: false })).error.message")
    expect(r.result).toBe("Tool 'users_delete' was not approved: the client cannot ask for approval")
    expect(asked).toEqual([])
  })
})

describe('without engine: each server its own, disposed when its last parked run ends', () => {
  it('a run parked by one request is resumed through the next request’s server, then its engine goes', async () => {
    const owned: any[] = []
    const h = createMcpHandler(() => {
      const server = register(new McpServer({ name: 'shop', version: '1.0.0' }))
      owned.push(codeMode(server, { approval: { require: 'destructive' } }))
      return server
    })
    try {
      const { asked, elicit } = answers({ action: 'accept' })
      const client = await overHttp({ pin: MODERN }, elicit, undefined, h)
      const before = calls.orders_cancel ?? 0
      const r = await execute(client, "return await callTool('orders_cancel', { orderId: 9 })")
      expect(r).toMatchObject({ status: 'ok', result: { cancelled: 9 } })
      expect(asked).toHaveLength(1)
      expect(calls.orders_cancel).toBe(before + 1)
      // connect (discover) + the call + its retry: a server and engine each; the first call's
      // engine ran the whole execution, and every one of them is disposed once it is over.
      expect(owned.length).toBeGreaterThanOrEqual(2)
      await vi.waitFor(async () => {
        for (const e of owned) expect(await e.execute({ script: 'return 1' }, { callTool: () => null })).toMatchObject({ error: { code: 'POOL_DISPOSED' } })
      })
    } finally {
      await h.close()
    }
  })
})

// ---- Raw JSON-RPC: the wire, and requestStates no client library would send. ----

let nextId = 1
const KEYS = {
  version: 'io.modelcontextprotocol/protocolVersion',
  capabilities: 'io.modelcontextprotocol/clientCapabilities',
  info: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
}

/** One modern POST: the `_meta` envelope, and the headers 2026-07-28 requires. */
async function raw(method: string, params: Record<string, any> = {}, opts: { capabilities?: object; logLevel?: string; authInfo?: any } = {}) {
  const _meta: Record<string, unknown> = { [KEYS.version]: MODERN, [KEYS.capabilities]: opts.capabilities ?? { elicitation: { form: {} } }, [KEYS.info]: { name: 'raw', version: '1' } }
  if (opts.logLevel) _meta[KEYS.logLevel] = opts.logLevel
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method }
  if (method === 'tools/call') headers['mcp-name'] = params.name
  const id = nextId++
  const res = await handler.fetch(
    new Request('http://shop.test/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta } }) }),
    opts.authInfo ? { authInfo: opts.authInfo } : undefined,
  )
  const body = await res.text()
  const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? body
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(body)]
  const response = messages.find((m) => m.id === id)
  return { status: res.status, messages, response, result: response?.result }
}

const SCRIPT = "const u = await callTool('users_list', {}); return await callTool('users_delete', { id: u[0].id })"
const runScript = (extra: Record<string, any> = {}, opts = {}) => raw('tools/call', { name: 'codecall_execute', arguments: { script: SCRIPT }, ...extra }, opts)
const accept = (inputRequests: Record<string, unknown>) => Object.fromEntries(Object.keys(inputRequests).map((k) => [k, { action: 'accept', content: { always: false } }]))

describe('the wire (raw JSON-RPC)', () => {
  it('tools/list and server/discover: resultType, ttlMs, cacheScope, serverInfo', async () => {
    const list = await raw('tools/list')
    expect(list.status).toBe(200)
    expect(list.result).toMatchObject({ resultType: 'complete', ttlMs: 3_600_000, cacheScope: 'public', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'shop' } } })
    expect(list.result.tools.map((t: any) => t.name)).toContain('codecall_execute')
    const discover = await raw('server/discover')
    expect(discover.result).toMatchObject({ resultType: 'complete', supportedVersions: expect.arrayContaining([MODERN]), ttlMs: expect.any(Number), cacheScope: expect.any(String) })
    const called = await raw('tools/call', { name: 'codecall_search', arguments: { query: 'users' } })
    expect(called.result).toMatchObject({ resultType: 'complete', isError: false })
  })

  it('input_required: one form elicitation per pending call, keyed by callId, and a sealed requestState', async () => {
    const first = await runScript()
    expect(first.result).toMatchObject({ resultType: 'input_required', requestState: expect.stringMatching(/^cc1\./) })
    const [[key, request]] = Object.entries(first.result.inputRequests) as [string, any][]
    expect(key).toEqual(expect.any(String))
    expect(request).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', requestedSchema: { type: 'object', properties: { always: { type: 'boolean' } } } } })
    expect(request.params.message).toMatch(/the tool 'users_delete'/)
    // Nothing a tool returned travels in the state in clear.
    expect(Buffer.from(first.result.requestState.split('.')[1], 'base64url').toString()).not.toContain('Ada')
    const before = calls.users_delete ?? 0
    const done = await runScript({ requestState: first.result.requestState, inputResponses: accept(first.result.inputRequests) })
    expect(done.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'ok', result: { deleted: 1 } } })
    expect(calls.users_delete).toBe(before + 1)
  })

  it('logs only to a request that asked for them (logLevel)', async () => {
    const quiet = await raw('tools/call', { name: 'codecall_execute', arguments: { script: "mcpLog('info', 'hello'); return 1" } }, { capabilities: {} })
    expect(quiet.messages.filter((m) => m.method === 'notifications/message')).toEqual([])
    const loud = await raw('tools/call', { name: 'codecall_execute', arguments: { script: "mcpLog('info', 'hello'); return 1" } }, { capabilities: {}, logLevel: 'info' })
    expect(loud.messages.filter((m) => m.method === 'notifications/message').map((m) => m.params.data?.message)).toContain('hello')
  })

  describe('a requestState is refused, and nothing runs', () => {
    const refused = async (state: unknown, extra: Record<string, any> = {}, opts = {}) => {
      const before = { ...calls }
      const r = await runScript({ requestState: state, inputResponses: { 'call-1': { action: 'accept' } }, ...extra }, opts)
      expect(r.result).toMatchObject({ resultType: 'complete', isError: true, structuredContent: { status: 'error', error: { code: 'ERR_INVALID_ARG' } } })
      expect(calls).toEqual(before)
      return r.result.structuredContent.error.message as string
    }

    it('altered', async () => {
      const { result } = await runScript()
      const [prefix, body, tag] = result.requestState.split('.')
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString())
      const altered = `${prefix}.${Buffer.from(JSON.stringify({ ...payload, x: payload.x + 3_600_000 })).toString('base64url')}.${tag}`
      expect(await refused(altered)).toMatch(/forged or altered/)
      expect(await refused('not a state')).toMatch(/not a state this server issued/)
    })

    it('for other arguments', async () => {
      const { result } = await runScript()
      const before = { ...calls }
      const r = await raw('tools/call', { name: 'codecall_execute', arguments: { script: "return await callTool('users_delete', { id: 2 })" }, requestState: result.requestState, inputResponses: accept(result.inputRequests) })
      expect(r.result.structuredContent.error).toMatchObject({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(/another tool or other arguments/) })
      expect(calls).toEqual(before)
    })

    it('reused: spent by a retry, or its run ended', async () => {
      const { result } = await runScript()
      // A retry without an answer asks again, with a new state; the old one is spent.
      const again = await runScript({ requestState: result.requestState })
      expect(again.result).toMatchObject({ resultType: 'input_required' })
      expect(await refused(result.requestState)).toMatch(/already used/)
      const done = await runScript({ requestState: again.result.requestState, inputResponses: accept(again.result.inputRequests) })
      expect(done.result.structuredContent).toMatchObject({ status: 'ok' })
      expect(await refused(again.result.requestState)).toMatch(/no such run/)
    })

    it('of another key', async () => {
      const { result } = await runScript()
      const payload = JSON.parse(Buffer.from(result.requestState.split('.')[1], 'base64url').toString())
      const foreign = new StateSeal(Buffer.from('another-key-another-key-another-key')).seal(payload)
      expect(await refused(foreign)).toMatch(/forged or altered/)
    })

    it('of another principal', async () => {
      const ada = { token: 'token-ada', clientId: 'ada', scopes: [] }
      const eve = { token: 'token-eve', clientId: 'eve', scopes: [] }
      const { result } = await runScript({}, { authInfo: ada })
      expect(await refused(result.requestState, { inputResponses: accept(result.inputRequests) }, { authInfo: eve })).toMatch(/another principal/)
      expect(await refused(result.requestState, { inputResponses: accept(result.inputRequests) })).toMatch(/another principal/)
      const done = await runScript({ requestState: result.requestState, inputResponses: accept(result.inputRequests) }, { authInfo: ada })
      expect(done.result.structuredContent).toMatchObject({ status: 'ok' })
    })
  })

  it('executionIds are per principal: another principal cannot save mine', async () => {
    const ada = { token: 'token-ada', clientId: 'ada', scopes: [] }
    const eve = { token: 'token-eve', clientId: 'eve', scopes: [] }
    const ran = await raw('tools/call', { name: 'codecall_execute', arguments: { script: 'return 42' } }, { authInfo: ada })
    const id = ran.result.structuredContent.stats.executionId
    const save = (authInfo: unknown) => raw('tools/call', { name: 'codecall_save', arguments: { name: 'forty-two', description: 'The answer', executionId: id } }, { authInfo })
    expect((await save(eve)).result.structuredContent).toMatchObject({ status: 'error', error: { code: 'ERR_INVALID_ARG' } })
    expect((await save(ada)).result.structuredContent).toMatchObject({ name: 'saved:forty-two' })
  })
})

describe('ParkedRuns: expiry (injected clock)', () => {
  it('an expired state is refused and runs nothing', async () => {
    let now = 1_000_000
    const parked = new ParkedRuns({ key: Buffer.alloc(32, 7), timeoutMs: 1000, graceMs: 0, now: () => now })
    let ran = 0
    const call = (requestState?: string, inputResponses?: Record<string, unknown>) =>
      parked.call({
        tool: 'codecall_execute',
        args: { script: 'x' },
        principal: null,
        requestState,
        inputResponses,
        attach: { logLevel: null },
        start: async (run: any) => {
          const decision = await run.approve({ callId: 'c1', toolName: 'users_delete', input: {}, reason: 'destructive' })
          ran += 1
          return decision
        },
      })
    const first: any = await call()
    expect(first.inputRequired.inputRequests).toHaveProperty('c1')
    expect(argsDigest({ script: 'x' })).toHaveLength(22)
    now += 1001
    await expect(call(first.inputRequired.requestState, { c1: { action: 'accept' } })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(/expired/) })
    expect(ran).toBe(0)
    parked.close()
  })
})

describe('serveStdio(factory): examples/modern-server.mjs over stdio', () => {
  const connect = async (mode: Mode, elicit?: Elicit) => {
    const client = newClient(mode, elicit)
    const transport = new StdioClientTransport({ command: process.execPath, args: [join(ROOT, 'examples/modern-server.mjs'), '--stdio'], cwd: ROOT, stderr: 'pipe' })
    await client.connect(transport)
    return client
  }

  it.each(MODES)('a client %s: search, execute, an approval, a decline', async (_, mode) => {
    const { asked, elicit } = answers({ action: 'accept' }, { action: 'decline' })
    const client = await connect(mode, elicit)
    expect(client.getProtocolEra?.()).toBe(mode === 'legacy' ? 'legacy' : 'modern')
    expect(structured(await client.callTool({ name: 'codecall_search', arguments: { query: 'delete a user' } })).tools[0].name).toBe('users_delete')
    const r = await execute(
      client,
      "const d = await callTool('users_delete', { id: 2 }); const again = await callTool('users_delete', { id: 1 }, { throwOnError: false }); return [d, again.error?.message, (await callTool('users_list', {})).length]",
    )
    expect(r).toMatchObject({ status: 'ok', result: [{ deleted: true }, "Tool 'users_delete' was not approved: declined by the user", 1] })
    expect(asked).toHaveLength(2)
  })
})

describe('examples/modern-server.mjs over HTTP (createMcpHandler)', () => {
  it('serves a pinned client, approvals by input_required', async () => {
    const example = await load('../../examples/modern-server.mjs')
    try {
      const { asked, elicit } = answers({ action: 'accept' })
      const client = await overHttp({ pin: MODERN }, elicit, undefined, example.handler)
      const r = await execute(client, "return await callTool('users_delete', { id: 1 })")
      expect(r).toMatchObject({ status: 'ok', result: { deleted: true } })
      expect(asked).toHaveLength(1)
      expect(example.users.map((u: any) => u.id)).toEqual([2])
    } finally {
      await example.handler.close()
      await example.engine.dispose()
    }
  })
})
