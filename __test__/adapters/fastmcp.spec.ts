// `codeMode(server)` from `@codecall/native/fastmcp` against the real `fastmcp` from npm, driven by
// the real SDK Client — over the in-memory transport (FastMCP's public `connect`) and over its
// own Streamable HTTP server (`start({ transportType: 'httpStream' })`).
import { createServer } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { FastMCP, FastMCPSession, UserError } from 'fastmcp'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { codeMode } from '../../lib/adapters/fastmcp.mjs'
import type { CodeCall } from '../../index.js'

const USERS = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
]
const ORDERS = [
  { id: 10, userId: 1, total: 30 },
  { id: 11, userId: 2, total: 12.5 },
  { id: 12, userId: 1, total: 7 },
]

type Seen = { tool: string; context: Record<string, unknown> }

function makeServer(seen: Seen[]) {
  const server = new FastMCP<{ user: string }>({
    name: 'shop',
    version: '1.0.0',
    ping: { enabled: false },
    logger: { debug() {}, error() {}, info() {}, log() {}, warn() {} },
    authenticate: async () => ({ user: 'ada@example.com' }),
  })
  server.addTool({
    name: 'users_list',
    description: 'List the users of the workspace',
    parameters: z.object({ limit: z.number().int().min(1).max(10).optional() }),
    execute: async (args) => JSON.stringify(USERS.slice(0, args.limit ?? 10)),
  })
  server.addTool({
    name: 'orders_by_user',
    description: 'Orders placed by one user',
    parameters: z.object({ userId: z.number().int() }),
    execute: async (args) => {
      seen.push({ tool: 'orders_by_user', context: { userId: args.userId } })
      return JSON.stringify(ORDERS.filter((o) => o.userId === args.userId))
    },
  })
  server.addTool({
    name: 'orders_summary',
    description: 'Count and total of all orders',
    execute: async () => ({ content: [{ type: 'text', text: JSON.stringify({ count: ORDERS.length, total: 49.5 }) }] }),
  })
  server.addTool({
    name: 'billing_charge',
    description: 'Charge a card',
    parameters: z.object({ amount: z.number().positive() }),
    execute: async () => {
      throw new Error('payment gateway down')
    },
  })
  server.addTool({
    name: 'billing_refund',
    description: 'Refund a payment',
    parameters: z.object({ paymentId: z.string() }),
    execute: async () => {
      throw new UserError('refund window closed')
    },
  })
  server.addTool({
    name: 'users_context',
    description: 'Report what the handler received',
    execute: async (_args, context) => {
      seen.push({ tool: 'users_context', context: { session: context.session, requestId: context.requestId, signal: context.signal instanceof AbortSignal } })
      await context.reportProgress({ progress: 1, total: 2 })
      await context.reportProgress({ progress: 2, total: 2 })
      context.log.info('halfway there')
      return JSON.stringify({ user: context.session?.user ?? null })
    },
  })
  return server
}

const open: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {})
})

type Elicit = (params: { message: string }) => Promise<{ action: string; content?: Record<string, unknown> }>

async function inMemory(options: Record<string, unknown> = {}, elicit?: Elicit) {
  const seen: Seen[] = []
  const server = makeServer(seen)
  const codecall = codeMode(server, options) as CodeCall
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'test', version: '1' }, elicit ? { capabilities: { elicitation: {} } } : undefined)
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (r) => elicit(r.params as any) as any)
  await Promise.all([server.connect(serverSide, { user: 'ada@example.com' }), client.connect(clientSide)])
  open.push(() => codecall.dispose(), () => client.close(), () => server.stop())
  const call = async (name: string, args: Record<string, unknown>, opts: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args }, undefined, opts)).structuredContent as any
  return { server, seen, codecall, client, call, execute: (script: string, opts = {}) => call('codecall_execute', { script }, opts) }
}

describe('codeMode(FastMCP) over the in-memory transport', () => {
  it('lists the meta-tools (separator _), nothing else', async () => {
    const { client } = await inMemory()
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
  })

  it("search ranks the right tool; describe gives FastMCP's JSON Schema of the zod parameters", async () => {
    const { call } = await inMemory()
    const r = await call('codecall_search', { query: 'orders placed by a user' })
    expect(r.tools[0]).toMatchObject({ name: 'orders_by_user', appId: 'orders' })
    expect(r.totalIndexed).toBe(6)
    const d = await call('codecall_describe', { toolNames: ['users_list'] })
    expect(d.tools[0].inputSchema.properties.limit).toMatchObject({ type: 'integer', maximum: 10 })
    expect(d.tools[0].typescript).toContain("callTool(name: 'users_list', input: { limit?: number })")
  })

  it('a script joins two apps', async () => {
    const { execute } = await inMemory()
    const r = await execute(`
      const users = await callTool('users_list', {})
      const orders = await Promise.all(users.map((u) => callTool('orders_by_user', { userId: u.id })))
      return users.map((u, i) => u.name + ':' + orders[i].reduce((n, o) => n + o.total, 0))`)
    expect(r).toMatchObject({ status: 'ok', result: ['Ada:37', 'Grace:12.5'] })
  })

  it('thrown errors, UserErrors and parameter validation come back as ToolErrors', async () => {
    const { execute } = await inMemory()
    const r = await execute(`
      return {
        thrown: await callTool('billing_charge', { amount: 5 }, { throwOnError: false }),
        user: await callTool('billing_refund', { paymentId: 'p1' }, { throwOnError: false }),
        invalid: await callTool('users_list', { limit: 'ten' }, { throwOnError: false }),
        unknown: await callTool('users_delete_all', {}, { throwOnError: false }),
      }`)
    expect(r.status).toBe('ok')
    expect(r.result.thrown.error.code).toBe('TOOL_EXECUTION_ERROR')
    expect(r.result.thrown.error.message).toMatch(/payment gateway down/)
    expect(r.result.user.error).toEqual({ code: 'TOOL_EXECUTION_ERROR', message: 'refund window closed' })
    expect(r.result.invalid.error.message).toMatch(/parameter validation failed/)
    expect(r.result.unknown.error.code).toBe('TOOL_NOT_FOUND')
  })

  it("execute gets FastMCP's context (session auth, signal, progress, logging)", async () => {
    const { execute, seen } = await inMemory()
    const progress: any[] = []
    const r = await execute(`return await callTool('users_context')`, { onprogress: (p: any) => progress.push(p) })
    expect(r.result).toEqual({ user: 'ada@example.com' })
    expect(seen[0].context).toMatchObject({ session: { user: 'ada@example.com' }, signal: true })
    expect(progress.map((p) => p.progress)).toEqual([1, 2])
  })

  it('finds tools added later, and the client hears of it', async () => {
    const { server, call, execute, client } = await inMemory()
    let changed = 0
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++)
    server.addTool({ name: 'inventory_restock', description: 'Restock a product in the warehouse', execute: async () => '{"restocked":true}' })
    await vi.waitFor(async () => expect((await call('codecall_search', { query: 'restock warehouse' })).tools[0]?.name).toBe('inventory_restock'))
    expect((await execute(`return await callTool('inventory_restock')`)).result).toEqual({ restocked: true })
    expect((await client.listTools()).tools).toHaveLength(3)
    await vi.waitFor(() => expect(changed).toBeGreaterThan(0))
    server.removeTool('inventory_restock')
    await vi.waitFor(async () => expect((await execute(`return await callTool('inventory_restock', {}, { throwOnError: false })`)).result.error.code).toBe('TOOL_NOT_FOUND'))
  })

  it('codecall_opt_in with options.tools: listed tools are called directly through FastMCP', async () => {
    const { client, call } = await inMemory({
      mode: 'codecall_opt_in',
      tools: { users_list: { codecall: { enabledInCodeCall: true, visibleInListTools: true } }, orders_by_user: { codecall: { enabledInCodeCall: true } } },
    })
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', 'users_list'])
    const direct = await client.callTool({ name: 'users_list', arguments: { limit: 1 } })
    expect(JSON.parse((direct.content as any)[0].text)).toEqual([USERS[0]])
    await expect(client.callTool({ name: 'billing_charge', arguments: { amount: 1 } })).rejects.toThrow(/Unknown tool/)
    const r = await call('codecall_search', { query: 'orders users billing', topK: 10 })
    expect(r.tools.map((t: any) => t.name).sort()).toEqual(['orders_by_user', 'users_list'])
  })

  it('bad arguments are a result with structuredContent; an unknown tool says "MCP error -32602" once', async () => {
    const { client } = await inMemory()
    const r = await client.callTool({ name: 'codecall_execute', arguments: { script: 'return 1', timeoutMs: 5000 } })
    const structuredContent = {
      status: 'error',
      error: { code: 'ERR_INVALID_ARG', message: "codecall_execute: unknown key 'timeoutMs' (allowed: script, context, allowedTools, language, input)" },
    }
    expect(r).toMatchObject({ isError: true, structuredContent, content: [{ type: 'text', text: JSON.stringify(structuredContent) }] })
    const e = await client.callTool({ name: 'billing_charge', arguments: { amount: 1 } }).then(() => null, (e: any) => e)
    expect(e.code).toBe(-32602)
    expect(e.message).toBe('MCP error -32602: Unknown tool: billing_charge')
  })

  it("shows each session only the tools its own auth may see (canAccess), whoever connected last", async () => {
    const server = new FastMCP<{ role: string }>({ name: 'acl', version: '1.0.0', ping: { enabled: false }, logger: { debug() {}, error() {}, info() {}, log() {}, warn() {} } })
    server.addTool({ name: 'users_list', description: 'List the users', execute: async () => '[]' })
    server.addTool({ name: 'admin_delete_everything', description: 'Delete everything in the workspace', canAccess: (auth) => auth?.role === 'admin', execute: async () => '"gone"' })
    const codecall = codeMode(server) as CodeCall
    open.push(() => codecall.dispose(), () => server.stop())
    const session = async (role: string) => {
      const [a, b] = InMemoryTransport.createLinkedPair()
      const client = new Client({ name: role, version: '1' })
      await Promise.all([server.connect(a, { role }), client.connect(b)])
      open.push(() => client.close())
      return async (query: string) => ((await client.callTool({ name: 'codecall_search', arguments: { query } })).structuredContent as any).tools.map((t: any) => t.name)
    }
    const admin = await session('admin')
    expect(await admin('delete everything')).toContain('admin_delete_everything')
    const guest = await session('guest')
    expect(await guest('delete everything')).not.toContain('admin_delete_everything')
    expect(await admin('delete everything')).toContain('admin_delete_everything')
    const admin2 = await session('admin')
    expect(await guest('delete everything')).not.toContain('admin_delete_everything')
    expect(await admin2('delete everything')).toContain('admin_delete_everything')
  })

  it('refuses a second codeMode, and anything that is not a FastMCP', async () => {
    const server = makeServer([])
    const codecall = codeMode(server) as CodeCall
    open.push(() => codecall.dispose())
    expect(() => codeMode(server)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG' }))
    for (const bad of [null, {}, { addTools() {}, removeTool() {} }]) {
      expect(() => codeMode(bad as any)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG' }))
    }
  })

  it('fastmcp still installs tool handlers in FastMCPSession#setupToolHandlers (the one place the adapter reaches in)', () => {
    expect(typeof (FastMCPSession.prototype as any).setupToolHandlers).toBe('function')
  })
})

describe('codeMode(FastMCP) over its own Streamable HTTP server', () => {
  it('serves code mode to every session', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as any).port
        probe.close(() => resolve(p))
      })
    })
    const server = makeServer([])
    const codecall = codeMode(server) as CodeCall
    await server.start({ transportType: 'httpStream', httpStream: { port, host: '127.0.0.1' } })
    open.push(() => server.stop(), () => codecall.dispose())
    const clients = await Promise.all(
      [1, 2].map(async () => {
        const client = new Client({ name: 'http', version: '1' })
        await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)))
        open.push(() => client.close())
        return client
      }),
    )
    for (const client of clients) {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
      const r = await client.callTool({ name: 'codecall_execute', arguments: { script: `return (await callTool('users_list', { limit: 1 }))[0].name` } })
      expect((r.structuredContent as any).result).toBe('Ada')
    }
  })
})

describe('codeMode(FastMCP) asks the session\'s client for approvals (§9)', () => {
  it('accept runs the call, decline never reaches the tool; without the capability, whenUnavailable', async () => {
    const asked: string[] = []
    const { execute, seen } = await inMemory({ approval: { ask: ['orders_*'] } }, async (p) => {
      asked.push(p.message)
      return p.message.includes('"userId": 2') ? { action: 'decline' } : { action: 'accept', content: {} }
    })
    const r = await execute(`
      const a = await callTool('orders_by_user', { userId: 1 })
      const b = await callTool('orders_by_user', { userId: 2 }, { throwOnError: false })
      return [a.length, b.error.code]`)
    expect(r).toMatchObject({ status: 'ok', result: [2, 'ACCESS_DENIED'] })
    expect(asked).toHaveLength(2)
    expect(seen.map((s) => s.tool)).toEqual(['orders_by_user'])
    const none = await inMemory({ approval: { ask: ['orders_*'] } })
    const n = await none.execute("return (await callTool('orders_by_user', { userId: 1 }, { throwOnError: false })).error.message")
    expect(n.result).toBe("Tool 'orders_by_user' was not approved: the client cannot ask for approval")
    expect(none.seen).toEqual([])
  })
})
