// `codeMode(server)` from `@codecall/native/mcp-sdk` against the real SDKs from npm: McpServer and
// the low-level Server of @modelcontextprotocol/sdk 1.x, McpServer of @modelcontextprotocol/server
// 2.x — each driven by the real SDK Client over the in-memory transport.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Server as ServerV1 } from '@modelcontextprotocol/sdk/server/index.js'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport as MemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js'
import { CallToolRequestSchema, ElicitRequestSchema, ListToolsRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { McpServer as McpServerV2, InMemoryTransport as MemoryV2 } from '@modelcontextprotocol/server'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { codeMode } from '../../lib/adapters/mcp-sdk.mjs'
import { codecallMeta } from '../../tool-options.js'
import type { CodeCall } from '../../index.js'

type Seen = { tool: string; args: unknown; keys: string[]; signal: boolean; progressToken?: unknown }

/** One server of the flavour, with the same tools: two apps, failures, structured output, context. */
/** §9: a client's elicitation handler (its params in, the ElicitResult out). */
type Elicit = (params: { message: string; requestedSchema?: unknown }) => Promise<{ action: string; content?: Record<string, unknown> }>

interface Harness {
  server: any
  seen: Seen[]
  register(name: string, description: string, handler?: () => unknown): void
  connect(elicit?: Elicit): Promise<{ client: any; close: () => Promise<void> }>
  /** SDK 2.x's Client takes `(params, options)` and notification methods as strings. */
  v2?: boolean
}

const USERS = [
  { id: 1, name: 'Ada', team: 'core' },
  { id: 2, name: 'Grace', team: 'infra' },
]
const ORDERS = [
  { id: 10, userId: 1, total: 30 },
  { id: 11, userId: 2, total: 12.5 },
  { id: 12, userId: 1, total: 7 },
]

/** The tool handlers, shared by every flavour: `(args, extra)` → CallToolResult. */
function handlers(seen: Seen[]) {
  const record = (tool: string, args: unknown, extra: any) => {
    const meta = extra?._meta ?? extra?.mcpReq?._meta
    seen.push({ tool, args, keys: Object.keys(extra ?? {}).sort(), signal: (extra?.signal ?? extra?.mcpReq?.signal) instanceof AbortSignal, progressToken: meta?.progressToken })
  }
  const text = (v: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(v) }] })
  return {
    users_list: async (args: any, extra: any) => (record('users_list', args, extra), text(USERS.slice(0, args?.limit ?? 10))),
    orders_by_user: async (args: any, extra: any) => (record('orders_by_user', args, extra), text(ORDERS.filter((o) => o.userId === args.userId))),
    orders_summary: async (args: any, extra: any) => {
      record('orders_summary', args, extra)
      const total = ORDERS.reduce((n, o) => n + o.total, 0)
      return { content: [{ type: 'text' as const, text: `total ${total}` }], structuredContent: { count: ORDERS.length, total } }
    },
    billing_charge: async (args: any, extra: any) => {
      record('billing_charge', args, extra)
      throw new Error('payment gateway down')
    },
    billing_refund: async (args: any, extra: any) => (record('billing_refund', args, extra), { isError: true, content: [{ type: 'text' as const, text: 'refund window closed' }] }),
    users_context: async (args: any, extra: any) => {
      record('users_context', args, extra)
      const notify = extra?.sendNotification ?? extra?.mcpReq?.notify
      const token = (extra?._meta ?? extra?.mcpReq?._meta)?.progressToken
      if (token !== undefined) {
        await notify({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2, message: 'half' } })
        await notify({ method: 'notifications/progress', params: { progressToken: token, progress: 2, total: 2, message: 'done' } })
      }
      return text({ sawSignal: (extra?.signal ?? extra?.mcpReq?.signal) instanceof AbortSignal })
    },
  }
}

const DESCRIPTIONS: Record<string, string> = {
  users_list: 'List the users of the workspace',
  orders_by_user: 'Orders placed by one user',
  orders_summary: 'Count and total of all orders',
  billing_charge: 'Charge a card',
  billing_refund: 'Refund a payment',
  users_context: 'Report what the handler received',
}

function mcpServerV1(): Harness {
  const server = new McpServerV1({ name: 'shop', version: '1.0.0' })
  const seen: Seen[] = []
  const h = handlers(seen)
  server.registerTool('users_list', { description: DESCRIPTIONS.users_list, inputSchema: { limit: z.number().int().min(1).max(10).optional() } }, h.users_list)
  server.registerTool('orders_by_user', { description: DESCRIPTIONS.orders_by_user, inputSchema: { userId: z.number().int() } }, h.orders_by_user)
  server.registerTool(
    'orders_summary',
    { description: DESCRIPTIONS.orders_summary, outputSchema: { count: z.number(), total: z.number() }, _meta: codecallMeta({ tags: ['reporting'] }, { ui: 'none' }) },
    (extra: any) => h.orders_summary({}, extra),
  )
  server.registerTool('billing_charge', { description: DESCRIPTIONS.billing_charge, inputSchema: { amount: z.number().positive() } }, h.billing_charge)
  server.registerTool('billing_refund', { description: DESCRIPTIONS.billing_refund, inputSchema: { paymentId: z.string() } }, h.billing_refund)
  server.registerTool('users_context', { description: DESCRIPTIONS.users_context }, (extra: any) => h.users_context({}, extra))
  return {
    server,
    seen,
    register: (name, description, fn) => server.registerTool(name, { description }, async () => ({ content: [{ type: 'text', text: JSON.stringify(fn ? fn() : name) }] })),
    connect: async (elicit?: Elicit) => {
      const [a, b] = MemoryV1.createLinkedPair()
      await server.connect(a)
      const client = new ClientV1({ name: 'test', version: '1' }, elicit ? { capabilities: { elicitation: {} } } : undefined)
      if (elicit) client.setRequestHandler(ElicitRequestSchema, (r: any) => elicit(r.params) as any)
      await client.connect(b)
      return { client, close: () => client.close() }
    },
  }
}

function mcpServerV2(): Harness {
  const server = new McpServerV2({ name: 'shop', version: '1.0.0' })
  const seen: Seen[] = []
  const h = handlers(seen)
  server.registerTool('users_list', { description: DESCRIPTIONS.users_list, inputSchema: z.object({ limit: z.number().int().min(1).max(10).optional() }) }, h.users_list)
  server.registerTool('orders_by_user', { description: DESCRIPTIONS.orders_by_user, inputSchema: z.object({ userId: z.number().int() }) }, h.orders_by_user)
  server.registerTool(
    'orders_summary',
    { description: DESCRIPTIONS.orders_summary, outputSchema: z.object({ count: z.number(), total: z.number() }), _meta: { codecall: { tags: ['reporting'] } } },
    (ctx: any) => h.orders_summary({}, ctx),
  )
  server.registerTool('billing_charge', { description: DESCRIPTIONS.billing_charge, inputSchema: z.object({ amount: z.number().positive() }) }, h.billing_charge)
  server.registerTool('billing_refund', { description: DESCRIPTIONS.billing_refund, inputSchema: z.object({ paymentId: z.string() }) }, h.billing_refund)
  server.registerTool('users_context', { description: DESCRIPTIONS.users_context }, (ctx: any) => h.users_context({}, ctx))
  return {
    server,
    seen,
    v2: true,
    register: (name, description, fn) => server.registerTool(name, { description }, async () => ({ content: [{ type: 'text', text: JSON.stringify(fn ? fn() : name) }] })),
    connect: async (elicit?: Elicit) => {
      const [a, b] = MemoryV2.createLinkedPair()
      await server.connect(a)
      const client = new ClientV2({ name: 'test', version: '1' }, elicit ? { capabilities: { elicitation: { form: {} } } } : undefined)
      if (elicit) client.setRequestHandler('elicitation/create', (r: any) => elicit(r.params) as any)
      await client.connect(b)
      return { client, close: () => client.close() }
    },
  }
}

/** The low-level Server, with hand-written JSON Schemas and its own validation. */
function serverV1(): Harness {
  const server = new ServerV1({ name: 'shop', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
  const seen: Seen[] = []
  const h: Record<string, (args: any, extra: any) => Promise<any>> = handlers(seen)
  const tools: any[] = [
    { name: 'users_list', description: DESCRIPTIONS.users_list, inputSchema: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 10 } } } },
    { name: 'orders_by_user', description: DESCRIPTIONS.orders_by_user, inputSchema: { type: 'object', properties: { userId: { type: 'integer' } }, required: ['userId'] } },
    {
      name: 'orders_summary',
      description: DESCRIPTIONS.orders_summary,
      inputSchema: { type: 'object', properties: {} },
      outputSchema: { type: 'object', properties: { count: { type: 'number' }, total: { type: 'number' } }, required: ['count', 'total'] },
      _meta: { codecall: { tags: ['reporting'] } },
    },
    { name: 'billing_charge', description: DESCRIPTIONS.billing_charge, inputSchema: { type: 'object', properties: { amount: { type: 'number', exclusiveMinimum: 0 } }, required: ['amount'] } },
    { name: 'billing_refund', description: DESCRIPTIONS.billing_refund, inputSchema: { type: 'object', properties: { paymentId: { type: 'string' } }, required: ['paymentId'] } },
    { name: 'users_context', description: DESCRIPTIONS.users_context, inputSchema: { type: 'object', properties: {} } },
  ]
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params
    const fn = h[name]
    if (!fn) return { isError: true, content: [{ type: 'text', text: `Tool ${name} not found` }] }
    if (name === 'users_list' && args.limit !== undefined && typeof args.limit !== 'number') {
      return { isError: true, content: [{ type: 'text', text: 'Input validation error: limit must be a number' }] }
    }
    if (name === 'billing_charge') return fn(args, extra).catch((e: Error) => ({ isError: true, content: [{ type: 'text', text: e.message }] }))
    return fn(args, extra)
  })
  return {
    server,
    seen,
    register: (name, description, fn) => {
      tools.push({ name, description, inputSchema: { type: 'object', properties: {} } })
      h[name] = async () => ({ content: [{ type: 'text', text: JSON.stringify(fn ? fn() : name) }] })
      server.sendToolListChanged().catch(() => {})
    },
    connect: async (elicit?: Elicit) => {
      const [a, b] = MemoryV1.createLinkedPair()
      await server.connect(a)
      const client = new ClientV1({ name: 'test', version: '1' }, elicit ? { capabilities: { elicitation: {} } } : undefined)
      if (elicit) client.setRequestHandler(ElicitRequestSchema, (r: any) => elicit(r.params) as any)
      await client.connect(b)
      return { client, close: () => client.close() }
    },
  }
}

const FLAVOURS: [string, () => Harness][] = [
  ['@modelcontextprotocol/sdk 1.x McpServer', mcpServerV1],
  ['@modelcontextprotocol/sdk 1.x Server', serverV1],
  ['@modelcontextprotocol/server 2.x McpServer', mcpServerV2],
]

const open: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
})

async function setup(make: () => Harness, options: Record<string, unknown> = {}, elicit?: Elicit) {
  const harness = make()
  const codecall = codeMode(harness.server, options) as CodeCall
  const { client, close } = await harness.connect(elicit)
  open.push(close, () => codecall.dispose())
  const call = async (name: string, args: Record<string, unknown>, opts: Record<string, unknown> = {}) => {
    const r = harness.v2 ? await client.callTool({ name, arguments: args }, opts) : await client.callTool({ name, arguments: args }, undefined, opts)
    return r.structuredContent as any
  }
  const onListChanged = (fn: () => void) =>
    harness.v2 ? client.setNotificationHandler('notifications/tools/list_changed', fn) : client.setNotificationHandler(ToolListChangedNotificationSchema, fn)
  return { harness, codecall, client, call, onListChanged, execute: (script: string, opts = {}) => call('codecall_execute', { script }, opts) }
}

describe.each(FLAVOURS)('codeMode(%s)', (_, make) => {
  it('lists the meta-tools (separator _) and nothing else in codecall_only', async () => {
    const { client } = await setup(make)
    const { tools } = await client.listTools()
    expect(tools.map((t: any) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
  })

  it('search ranks the right tool; appId from the name prefix', async () => {
    const { call } = await setup(make)
    const r = await call('codecall_search', { query: 'orders placed by a user' })
    expect(r.tools[0]).toMatchObject({ name: 'orders_by_user', appId: 'orders' })
    const billing = await call('codecall_search', { query: 'refund a payment', filter: { appIds: ['billing'] } })
    expect(billing.tools[0].name).toBe('billing_refund')
    expect(r.totalIndexed).toBe(6)
  })

  it("describe gives the framework's JSON Schema of the tool", async () => {
    const { call } = await setup(make)
    const d = await call('codecall_describe', { toolNames: ['users_list', 'orders_summary'] })
    expect(d.tools[0].inputSchema.properties.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 10 })
    expect(d.tools[0].typescript).toContain("callTool(name: 'users_list', input: { limit?: number })")
    expect(d.tools[1].outputSchema.properties).toHaveProperty('total')
  })

  it('a script joins two apps through the server’s own tools/call', async () => {
    const { execute, harness } = await setup(make)
    const r = await execute(`
      const users = await callTool('users_list', {})
      const orders = await Promise.all(users.map((u) => callTool('orders_by_user', { userId: u.id })))
      const summary = await callTool('orders_summary')
      return { spend: users.map((u, i) => u.name + ':' + orders[i].reduce((n, o) => n + o.total, 0)), summary }`)
    expect(r.status).toBe('ok')
    expect(r.result).toEqual({ spend: ['Ada:37', 'Grace:12.5'], summary: { count: 3, total: 49.5 } })
    expect(harness.seen.map((s) => s.tool)).toEqual(['users_list', 'orders_by_user', 'orders_by_user', 'orders_summary'])
  })

  it('tool errors and validation failures come back as ToolErrors', async () => {
    const { execute } = await setup(make)
    const r = await execute(`
      const out = {}
      out.thrown = await callTool('billing_charge', { amount: 5 }, { throwOnError: false })
      out.isError = await callTool('billing_refund', { paymentId: 'p1' }, { throwOnError: false })
      out.invalid = await callTool('users_list', { limit: 'ten' }, { throwOnError: false })
      out.unknown = await callTool('users_delete_all', {}, { throwOnError: false })
      return out`)
    expect(r.status).toBe('ok')
    expect(r.result.thrown.error).toMatchObject({ code: 'TOOL_EXECUTION_ERROR' })
    expect(r.result.thrown.error.message).toMatch(/payment gateway down/)
    expect(r.result.isError.error).toEqual({ code: 'TOOL_EXECUTION_ERROR', message: 'refund window closed' })
    expect(r.result.invalid.error.code).toBe('TOOL_EXECUTION_ERROR')
    expect(r.result.invalid.error.message).toMatch(/validation|limit/i)
    expect(r.result.unknown.error.code).toBe('TOOL_NOT_FOUND')
    const uncaught = await execute(`return await callTool('billing_refund', { paymentId: 'p2' })`)
    expect(uncaught).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_EXECUTION_ERROR', toolName: 'billing_refund' } })
  })

  it("the handler gets the request's context, and its progress reaches the client", async () => {
    const { execute, harness } = await setup(make)
    const progress: any[] = []
    const r = await execute(`return await callTool('users_context')`, { onprogress: (p: any) => progress.push(p) })
    expect(r.result).toEqual({ sawSignal: true })
    const seen = harness.seen.find((s) => s.tool === 'users_context')!
    expect(seen.signal).toBe(true)
    expect(seen.progressToken).toBeDefined()
    expect(progress.map((p) => p.message)).toEqual(['half', 'done'])
  })

  it('finds tools registered after codeMode, and tells the client', async () => {
    const { harness, call, execute, onListChanged } = await setup(make)
    let changed = 0
    onListChanged(() => void changed++)
    harness.register('inventory_restock', 'Restock a product in the warehouse', () => ({ restocked: true }))
    await vi.waitFor(async () => {
      const r = await call('codecall_search', { query: 'restock warehouse' })
      expect(r.tools[0]?.name).toBe('inventory_restock')
    })
    expect((await execute(`return await callTool('inventory_restock')`)).result).toEqual({ restocked: true })
    await vi.waitFor(() => expect(changed).toBeGreaterThan(0))
  })

  it('re-indexes tools disabled, enabled or removed later (McpServer)', async () => {
    const { harness, call } = await setup(make)
    if (typeof harness.server.registerTool !== 'function') return
    const tool = harness.server.registerTool('inventory_count', { description: 'Count the stock of a product' }, async () => ({
      content: [{ type: 'text', text: '3' }],
    }))
    const top = async () => (await call('codecall_search', { query: 'count stock of a product' })).tools[0]?.name
    await vi.waitFor(async () => expect(await top()).toBe('inventory_count'))
    tool.disable()
    await vi.waitFor(async () => expect(await top()).not.toBe('inventory_count'))
    tool.enable()
    await vi.waitFor(async () => expect(await top()).toBe('inventory_count'))
    tool.remove()
    await vi.waitFor(async () => expect(await top()).not.toBe('inventory_count'))
  })

  it('codecall_opt_in indexes only opted-in tools; options.tools lists and tags them', async () => {
    const { client, call } = await setup(make, {
      mode: 'codecall_opt_in',
      directCalls: { enabled: true },
      tools: {
        users_list: { codecall: { enabledInCodeCall: true, visibleInListTools: true } },
        orders_by_user: { codecall: { enabledInCodeCall: true }, appId: 'sales' },
      },
    })
    const { tools } = await client.listTools()
    expect(tools.map((t: any) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', 'codecall_invoke', 'users_list'])
    const r = await call('codecall_search', { query: 'orders users', topK: 10 })
    expect(r.tools.map((t: any) => t.name).sort()).toEqual(['orders_by_user', 'users_list'])
    expect(r.tools.find((t: any) => t.name === 'orders_by_user').appId).toBe('sales')
    // A listed tool is called directly, through the server's own path.
    const direct = await client.callTool({ name: 'users_list', arguments: { limit: 1 } })
    expect(JSON.parse((direct.content as any)[0].text)).toEqual([USERS[0]])
    // An unlisted one is not.
    await expect(client.callTool({ name: 'billing_charge', arguments: { amount: 1 } })).rejects.toThrow(/Unknown tool/)
    const invoked = await call('codecall_invoke', { tool: 'orders_by_user', input: { userId: 2 } })
    expect(invoked).toEqual({ status: 'ok', result: [ORDERS[1]] })
  })

  it('metadata_driven reads _meta.codecall from the tool', async () => {
    const { call } = await setup(make, { mode: 'metadata_driven', tools: { orders_summary: { codecall: { enabledInCodeCall: true } } } })
    const r = await call('codecall_search', { query: 'orders total', topK: 10 })
    expect(r.tools.map((t: any) => t.name)).toEqual(['orders_summary'])
    const tagged = await call('codecall_search', { query: 'orders', filter: { tags: ['reporting'] } })
    expect(tagged.tools.map((t: any) => t.name)).toEqual(['orders_summary'])
  })

  it('refuses a second codeMode on the same server', async () => {
    const harness = make()
    const codecall = codeMode(harness.server) as CodeCall
    open.push(() => codecall.dispose())
    expect(() => codeMode(harness.server)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG' }))
  })

  it('bad meta-tool arguments: an unknown key is refused naming the allowed ones, as a result with structuredContent', async () => {
    const { client, call } = await setup(make, { directCalls: { enabled: true } })
    const refused = (message: string) => {
      const structuredContent = { status: 'error', error: { code: 'ERR_INVALID_ARG', message } }
      return { isError: true, structuredContent, content: [{ type: 'text', text: JSON.stringify(structuredContent) }] }
    }
    const raw = async (name: string, args: Record<string, unknown>) => {
      const { content, structuredContent, isError } = await client.callTool({ name, arguments: args })
      return { content, structuredContent, isError }
    }
    expect(await raw('codecall_execute', { script: 'return 1', timeoutMs: 5000 })).toEqual(
      refused("codecall_execute: unknown key 'timeoutMs' (allowed: script, context, allowedTools, language, input)"),
    )
    expect(await raw('codecall_invoke', { tool: 'users_list', input: {}, timeout: 1 })).toEqual(
      refused("codecall_invoke: unknown key 'timeout' (allowed: tool, input)"),
    )
    expect(await raw('codecall_search', { query: 'users', filter: { app: 'users' } })).toEqual(
      refused("codecall_search: unknown key 'filter.app' (allowed in filter: appIds, tags, includeOpenApi, includeInline)"),
    )
    expect(await raw('codecall_describe', { toolNames: 'users_list' })).toEqual(refused('input.toolNames must be an array of strings'))
    // Optional keys omitted, undefined or null.
    expect(await call('codecall_execute', { script: 'return 1', context: undefined, allowedTools: null, language: null })).toMatchObject({ status: 'ok', result: 1 })
    expect(await call('codecall_invoke', { tool: 'users_list', input: null })).toEqual({ status: 'ok', result: USERS })
    expect(await call('codecall_invoke', { tool: 'users_list' })).toEqual({ status: 'ok', result: USERS })
    expect((await call('codecall_search', { query: 'list users', topK: null, filter: null, queries: undefined })).tools[0].name).toBe('users_list')
  })

  it('an unknown tool is JSON-RPC -32602, and the client says "MCP error -32602" at most once', async () => {
    const harness = make()
    const { client } = await setup(() => harness)
    const e = await client.callTool({ name: 'billing_charge', arguments: { amount: 1 } }).then(() => null, (e: any) => e)
    expect(e.code).toBe(-32602)
    // SDK 1.x's client puts "MCP error <code>: " before the server's message; 2.x's does not.
    expect(e.message).toBe(harness.v2 ? 'Unknown tool: billing_charge' : 'MCP error -32602: Unknown tool: billing_charge')
  })
})

describe('codeMode(): lifetimes and bad tools', () => {
  it('one malformed tool does not keep the others out of the index', async () => {
    const { harness, call } = await setup(mcpServerV1)
    harness.server.registerTool('broken_tool', { description: 'Has bad metadata', _meta: { codecall: { tags: [1] } } }, async () => ({ content: [] }))
    harness.server.registerTool('inventory_audit', { description: 'Audit the warehouse stock' }, async () => ({ content: [{ type: 'text', text: '1' }] }))
    await vi.waitFor(async () => expect((await call('codecall_search', { query: 'audit warehouse stock' })).tools[0]?.name).toBe('inventory_audit'))
    expect((await call('codecall_search', { query: 'orders placed by a user' })).tools[0].name).toBe('orders_by_user')
  })

  it('the CodeCall is disposed when the server closes', async () => {
    const { codecall, client } = await setup(mcpServerV1)
    await client.close()
    await vi.waitFor(async () => {
      const r = await codecall.execute({ script: 'return 1' }, { callTool: () => null })
      expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
    })
  })

  it('a codeMode that failed can be retried (the server is not marked)', async () => {
    const server = new McpServerV1({ name: 'empty', version: '1' })
    const [a] = MemoryV1.createLinkedPair()
    await server.connect(a)
    expect(() => codeMode(server)).toThrow(/cannot serve tools/)
    expect(() => codeMode(server)).toThrow(/cannot serve tools/)
    await server.close()
  })
})

describe('codeMode(): arguments and the SDK internals it relies on', () => {
  it('throws ERR_INVALID_ARG for something that is not an SDK server', () => {
    for (const bad of [null, undefined, 42, {}, { registerTool() {} }]) {
      expect(() => codeMode(bad as any)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG' }))
    }
  })

  it('options are optional: omitted, undefined or null-free {}', async () => {
    for (const options of [undefined, {}]) {
      const { client } = await setup(mcpServerV1, options as any)
      expect((await client.listTools()).tools).toHaveLength(3)
    }
  })

  it.each([
    ['sdk 1.x McpServer', () => new McpServerV1({ name: 'x', version: '1' }).server],
    ['sdk 1.x Server', () => new ServerV1({ name: 'x', version: '1' }, { capabilities: { tools: {} } })],
    ['server 2.x McpServer', () => (new McpServerV2({ name: 'x', version: '1' }) as any).server],
  ])('%s still keeps its request handlers in a Map (the one place the adapter reaches in)', (_, make) => {
    const low: any = make()
    expect(low._requestHandlers).toBeInstanceOf(Map)
    expect(typeof low.setRequestHandler).toBe('function')
  })

  it('the SDK warns about no tool name codeMode adds', async () => {
    const warn = vi.spyOn(console, 'warn')
    try {
      await setup(mcpServerV1)
      await setup(mcpServerV2)
      expect(warn).not.toHaveBeenCalled()
    } finally {
      warn.mockRestore()
    }
  })
})

describe.each(FLAVOURS)("codeMode(%s) asks the session's client for approvals (§9)", (_, make) => {
  it('accept runs the call, decline never reaches the tool', async () => {
    const asked: string[] = []
    const { execute, harness } = await setup(make, { approval: { ask: ['orders_*'] } }, async (p) => {
      asked.push(p.message)
      return p.message.includes("'orders_summary'") ? { action: 'decline' } : { action: 'accept', content: { always: false } }
    })
    const r = await execute(`
      const users = await callTool('users_list', {})
      const orders = await callTool('orders_by_user', { userId: users[0].id })
      const summary = await callTool('orders_summary', {}, { throwOnError: false })
      return [orders.length, summary.error]`)
    expect(r).toMatchObject({ status: 'ok', result: [2, { code: 'ACCESS_DENIED', message: "Tool 'orders_summary' was not approved: declined by the user" }] })
    expect(asked).toHaveLength(2)
    expect(asked[0]).toMatch(/the tool 'orders_by_user'/)
    expect(asked[0]).toContain('"userId": 1')
    expect(harness.seen.map((s) => s.tool)).toEqual(['users_list', 'orders_by_user'])
  })

  it('a client without elicitation: whenUnavailable', async () => {
    const denied = await setup(make, { approval: { ask: ['users_*'] } })
    const r = await denied.execute("return (await callTool('users_list', {}, { throwOnError: false })).error.message")
    expect(r.result).toBe("Tool 'users_list' was not approved: the client cannot ask for approval")
    expect(denied.harness.seen).toEqual([])
    const allowed = await setup(make, { approval: { ask: ['users_*'], whenUnavailable: 'allow' } })
    const ok = await allowed.execute("return (await callTool('users_list', {})).length")
    expect(ok.result).toBe(2)
  })
})
