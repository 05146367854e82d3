// End to end over real MCP: the official SDK client against the example server
// (examples/mcp-server) — over stdio as a child process, and over Streamable HTTP in this process.
import { join } from 'node:path'

import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// @ts-ignore -- plain ESM example without declarations
import { allTools } from '../examples/mcp-server/apps/index.mjs'
// @ts-ignore -- plain ESM example without declarations
import { startHttp } from '../examples/mcp-server/server.mjs'

const SERVER = join(__dirname, '..', 'examples', 'mcp-server', 'server.mjs')

type Tool = { name: string; internal?: boolean; codecall?: { visibleInListTools?: boolean; enabledInCodeCall?: boolean } }
const exampleTools: Tool[] = allTools()
const visible = exampleTools.filter((t) => !t.internal && t.codecall?.visibleInListTools === true).map((t) => t.name)
const internal = exampleTools.filter((t) => t.internal).map((t) => t.name)

async function connect(args: string[] = []) {
  const client = new Client({ name: 'e2e', version: '1.0.0' })
  const messages: { logger?: string; data: unknown }[] = []
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    messages.push(n.params as { logger?: string; data: unknown })
  })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [SERVER, ...args], stderr: 'pipe' }))
  return { client, messages }
}

/** A meta-tool's JSON answer. */
async function call(client: Client, name: string, args: Record<string, unknown>, options?: { onprogress?: (p: unknown) => void }) {
  const r = await client.callTool({ name, arguments: args }, undefined, options)
  return { ...(r.structuredContent as Record<string, any>), isError: r.isError } as Record<string, any>
}

describe('the example server over stdio (codecall_only)', () => {
  let client: Client
  let messages: { logger?: string; data: unknown }[]
  beforeAll(async () => {
    ;({ client, messages } = await connect())
  })
  afterAll(async () => {
    await client?.close()
  })

  it('lists the four meta-tools and the visible tools only', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['codecall:search', 'codecall:describe', 'codecall:execute', 'codecall:invoke', ...visible])
    for (const t of tools.slice(0, 4)) {
      expect(t.description).toMatch(/Example: \{/)
      expect(t.inputSchema.type).toBe('object')
    }
    const all = exampleTools.length
    expect(all).toBeGreaterThanOrEqual(100)
    // ≥ 90% smaller than listing every tool
    const listed = JSON.stringify({ tools }).length
    const everything = JSON.stringify({ tools: exampleTools.filter((t) => !t.internal).map(({ handler, ...t }: any) => t) }).length
    expect(listed / everything).toBeLessThan(0.1)
  })

  it('searches in plain words, filters by app, and never shows internal tools', async () => {
    const r = await call(client, 'codecall:search', { query: 'refund a payment', topK: 3 })
    expect(r.tools[0]).toMatchObject({ name: 'billing:refundPayment', appId: 'billing', source: 'inline' })
    expect(r.tools[0].score).toBeGreaterThan(0)
    expect(r.tools.length).toBeLessThanOrEqual(3)
    expect(r.totalIndexed).toBe(exampleTools.filter((t) => !t.internal && t.codecall?.enabledInCodeCall !== false).length)
    const scoped = await call(client, 'codecall:search', { query: 'list', topK: 20, filter: { appIds: ['support'] } })
    expect(scoped.tools.length).toBeGreaterThan(0)
    expect(scoped.tools.every((t: { appId: string }) => t.appId === 'support')).toBe(true)
    for (const name of internal) {
      const words = name.split(':')[1].replace(/^_/, '').replace(/([A-Z])/g, ' $1')
      const hits = await call(client, 'codecall:search', { query: `${words} ${name}`, topK: 50 })
      expect(hits.tools.map((t: { name: string }) => t.name)).not.toContain(name)
    }
    const bad = await client.callTool({ name: 'codecall:search', arguments: { topK: 3 } })
    expect(bad.isError).toBe(true)
    expect((bad.content as { text: string }[])[0].text).toMatch(/ERR_INVALID_ARG.*query/)
  })

  it('describes tools with schemas, TypeScript and usage examples; meta-tools and internal tools are notFound', async () => {
    const r = await call(client, 'codecall:describe', { toolNames: ['users:get', 'codecall:execute', ...internal, 'nope:nothing'] })
    expect(r.tools.map((t: { name: string }) => t.name)).toEqual(['users:get'])
    expect(r.notFound).toEqual(['codecall:execute', ...internal, 'nope:nothing'])
    const [tool] = r.tools
    expect(tool).toMatchObject({ appId: 'users', inputSchema: { type: 'object' } })
    expect(tool.typescript).toContain("declare function callTool(name: 'users:get'")
    expect(tool.usageExamples.length).toBeGreaterThan(0)
    expect(tool.usageExamples[0].code).toContain("callTool('users:get'")
  })

  it('executes a plan across apps; the script sees PII masked; progress and log notifications arrive', async () => {
    let progress = 0
    messages.length = 0
    const r = await call(
      client,
      'codecall:execute',
      {
        script: `const page = await callTool('users:list', { limit: 3 })
const rows = await __safe_parallel(page.items.map((u) => () => callTool('orders:list', { userId: u.id, limit: 1 })))
const me = await callTool('users:get', { userId: page.items[0].id })
mcpLog('info', 'joined', { n: rows.length })
return { emails: page.items.map((u) => u.email), me: [me.email, me.phone, me.address], orderTotals: rows.map((o) => o.total) }`,
      },
      { onprogress: () => progress++ },
    )
    expect(r.status).toBe('ok')
    expect(r.isError).toBeFalsy()
    expect(r.stats.toolCalls).toBe(5)
    for (const email of r.result.emails) expect(email).toMatch(/^[a-z]\*\*\*@/)
    expect(r.result.me[0]).toMatch(/^[a-z]\*\*\*@/)
    expect(r.result.me[1]).toMatch(/^\*\*\*-\*\*\*-\d{4}$/)
    expect(r.result.me[2]).toMatchObject({ line1: '[redacted]', postalCode: expect.stringMatching(/^..\*\*\*$/) })
    expect(r.result.orderTotals).toHaveLength(3)
    expect(progress).toBeGreaterThan(0)
    const events = messages.filter((m) => m.logger === 'codecall').map((m) => m.data as { type: string; toolName: string })
    expect(events.filter((e) => e.type === 'tool_call_start')).toHaveLength(5)
    expect(events.filter((e) => e.type === 'tool_call_end').map((e) => e.toolName)).toContain('orders:list')
    expect(messages.some((m) => m.logger === 'script' && (m.data as { message?: string }).message === 'joined')).toBe(true)
  })

  it('returns statuses for syntax errors, tool errors, self-reference and internal tools', async () => {
    const syntax = await call(client, 'codecall:execute', { script: 'const x = (' })
    expect(syntax).toMatchObject({ status: 'syntax_error', isError: true, error: { code: 'SYNTAX_ERROR', location: { line: 1 } } })
    const tool = await call(client, 'codecall:execute', { script: "return await callTool('orders:get', { orderId: 'ord_999999' })" })
    expect(tool).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_EXECUTION_ERROR', toolName: 'orders:get' } })
    expect(tool.error.message).toMatch(/not found/i)
    const self = await call(client, 'codecall:execute', { script: "return await callTool('codecall:search', { query: 'x' })" })
    expect(self).toMatchObject({ status: 'illegal_access', error: { code: 'SELF_REFERENCE_BLOCKED' } })
    const dynamic = await call(client, 'codecall:execute', { script: "const m = 'codecall:' + 'invoke'\nreturn await callTool(m, {})" })
    expect(dynamic).toMatchObject({ status: 'tool_error', error: { code: 'SELF_REFERENCE_BLOCKED' } })
    for (const name of internal) {
      const hidden = await call(client, 'codecall:execute', { script: `return await callTool(${JSON.stringify(name)}, {})` })
      expect(hidden).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_NOT_FOUND' } })
      const invoked = await call(client, 'codecall:invoke', { tool: name, input: {} })
      expect(invoked).toMatchObject({ status: 'error', error: { code: 'TOOL_NOT_FOUND' } })
      await expect(client.callTool({ name, arguments: {} })).rejects.toThrow(/Unknown tool/)
    }
  })

  it('invokes one tool directly through the same pipeline', async () => {
    const ok = await call(client, 'codecall:invoke', { tool: 'users:get', input: { userId: 'usr_002' } })
    expect(ok).toMatchObject({ status: 'ok', result: { id: 'usr_002', dateOfBirth: expect.stringMatching(/^\d{4}-01-01$/) } })
    const err = await call(client, 'codecall:invoke', { tool: 'users:get', input: { userId: 'usr_999' } })
    expect(err).toMatchObject({ status: 'error', isError: true, error: { code: 'TOOL_EXECUTION_ERROR', toolName: 'users:get', toolInput: { userId: 'usr_999' } } })
    const self = await call(client, 'codecall:invoke', { tool: 'codecall:execute', input: { script: 'return 1' } })
    expect(self).toMatchObject({ status: 'error', error: { code: 'SELF_REFERENCE_BLOCKED' } })
    // a visible tool is also callable directly, through the same pipeline (PII masked)
    const whoami = await client.callTool({ name: 'users:whoami', arguments: {} })
    expect(JSON.stringify(whoami.structuredContent)).toMatch(/\*\*\*@/)
  })
})

describe('every mode over stdio', () => {
  for (const mode of ['codecall_opt_in', 'metadata_driven']) {
    it(`${mode}: lists the meta-tools and visible tools; indexes only opted-in tools`, async () => {
      const { client } = await connect(['--mode', mode, '--separator', '_', '--no-direct-calls'])
      try {
        const { tools } = await client.listTools()
        expect(tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', ...visible])
        const r = await call(client, 'codecall_search', { query: 'list users', topK: 50 })
        const optedIn = exampleTools.filter((t) => !t.internal && t.codecall?.enabledInCodeCall === true).map((t) => t.name)
        expect(r.totalIndexed).toBe(optedIn.length)
        for (const t of r.tools) expect(optedIn).toContain(t.name)
        const notIndexed = await call(client, 'codecall_execute', { script: "return await callTool('users:list', {})" })
        expect(notIndexed).toMatchObject(optedIn.includes('users:list') ? { status: 'ok' } : { status: 'tool_error', error: { code: 'TOOL_NOT_FOUND' } })
        await expect(client.callTool({ name: 'codecall_invoke', arguments: { tool: 'users:list' } })).rejects.toThrow(/Unknown tool/)
      } finally {
        await client.close()
      }
    })
  }
})

describe('the example server over Streamable HTTP', () => {
  it('serves the meta-tools, runs plans, and sends list_changed after a tool is added', async () => {
    const server = await startHttp({ port: 0 })
    const client = new Client({ name: 'e2e-http', version: '1.0.0' })
    let changed = 0
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++
    })
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name).slice(0, 4)).toEqual(['codecall:search', 'codecall:describe', 'codecall:execute', 'codecall:invoke'])
      const r = await call(client, 'codecall:execute', {
        script: "const p = await callTool('analytics:revenueByMonth', {})\nreturn typeof p === 'object'",
      })
      expect(r).toMatchObject({ status: 'ok', result: true })

      server.example.addTool({ name: 'inventory:newReport', appId: 'inventory', description: 'A report added at run time', codecall: { visibleInListTools: true } })
      await expect.poll(() => changed, { timeout: 5000 }).toBeGreaterThan(0)
      const after = await client.listTools()
      expect(after.tools.map((t) => t.name)).toContain('inventory:newReport')
      const found = await call(client, 'codecall:search', { query: 'report added at run time', topK: 1 })
      expect(found.tools[0].name).toBe('inventory:newReport')
    } finally {
      await client.close()
      await server.close()
    }
  })
})
