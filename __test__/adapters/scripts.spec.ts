// Spec §11 through the adapters: `codeMode(server, { scripts })` with the official SDK's McpServer
// (1.x) and FastMCP, each driven by the real SDK Client over the in-memory transport. A model
// saves a plan, finds it with codecall_search, runs it by name, and another saved script calls it
// with callTool('saved:a'); every call inside still goes through the server's own tools/call.
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { FastMCP } from 'fastmcp'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { codeMode } from '../../lib/adapters/mcp-sdk.mjs'
import { codeMode as fastCodeMode } from '../../lib/adapters/fastmcp.mjs'
import type { CodeCall } from '../../index.js'

const USERS = [
  { id: 1, name: 'Ada', team: 'core' },
  { id: 2, name: 'Grace', team: 'infra' },
  { id: 3, name: 'Alan', team: 'core' },
]
const text = (v: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(v) }] })

const open: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {})
})

async function sdkServer(options: Record<string, unknown>) {
  const calls: string[] = []
  const server = new McpServer({ name: 'shop', version: '1.0.0' })
  server.registerTool('users_list', { description: 'List the users of the workspace', inputSchema: { team: z.string().optional() } }, async ({ team }) => {
    calls.push('users_list')
    return text(USERS.filter((u) => team === undefined || u.team === team))
  })
  server.registerTool('users_count', { description: 'Count users (needs a whole number limit)', inputSchema: { limit: z.number().int() } }, async ({ limit }) => {
    calls.push('users_count')
    return text(Math.min(limit, USERS.length))
  })
  const codecall = codeMode(server, options) as CodeCall
  const [a, b] = InMemoryTransport.createLinkedPair()
  await server.connect(a)
  const client = new Client({ name: 'test', version: '1' })
  await client.connect(b)
  open.push(() => codecall.dispose(), () => client.close())
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })).structuredContent as any
  return { codecall, client, calls, call }
}

describe('codeMode(McpServer, { scripts }) — SDK 1.x', () => {
  it('lists codecall_save; a plan saved by executionId is found, described and run by name', async () => {
    const { client, call, calls } = await sdkServer({ scripts: { store: ':memory:' } })
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).toContain('codecall_save')
    const ran = await call('codecall_execute', {
      script: "const users = await callTool('users_list', { team: input.team }); return users.map((u) => u.name)",
      input: { team: 'core' },
    })
    expect(ran).toMatchObject({ status: 'ok', result: ['Ada', 'Alan'] })
    const saved = await call('codecall_save', {
      name: 'team-names',
      description: 'Names of the members of one team',
      executionId: ran.stats.executionId,
      inputSchema: { type: 'object', properties: { team: { type: 'string' } }, required: ['team'] },
    })
    expect(saved).toEqual({ name: 'saved:team-names', version: 1 })
    const search = await call('codecall_search', { query: 'names of the members of a team' })
    expect(search.tools.find((t: any) => t.name === 'saved:team-names')).toMatchObject({ appId: 'saved', source: 'saved' })
    const described = await call('codecall_describe', { toolNames: ['saved:team-names'] })
    expect(described.tools[0]).toMatchObject({ name: 'saved:team-names', version: 1, script: expect.stringContaining("callTool('users_list'") })
    const byName = await call('codecall_execute', { scriptName: 'team-names', input: { team: 'infra' } })
    expect(byName).toMatchObject({ status: 'ok', result: ['Grace'] })
    // Every call went through the server's own tools/call.
    expect(calls).toEqual(['users_list', 'users_list'])
  })

  it("a saved script calls another with callTool('saved:a'); its failure carries the inner error", async () => {
    const { call, codecall } = await sdkServer({ scripts: { store: ':memory:' }, directCalls: { enabled: true } })
    expect(await call('codecall_save', { name: 'a', description: 'Users of one team', script: "return await callTool('users_list', { team: input.team })" })).toEqual({ name: 'saved:a', version: 1 })
    expect(
      await call('codecall_save', {
        name: 'b',
        description: 'How many users each team has',
        // The secure preset has no loops: map and Promise.all.
        script: `const teams = ['core', 'infra']
const sizes = await Promise.all(teams.map((team) => callTool('saved:a', { team })))
return Object.fromEntries(teams.map((team, i) => [team, sizes[i].length]))`,
      }),
    ).toEqual({ name: 'saved:b', version: 1 })
    expect(await call('codecall_execute', { scriptName: 'b' })).toMatchObject({ status: 'ok', result: { core: 2, infra: 1 } })
    expect(await call('codecall_invoke', { tool: 'saved:b', input: {} })).toMatchObject({ status: 'ok', result: { core: 2, infra: 1 } })
    // The server's own zod validation holds inside a saved script called from a plan.
    await codecall.scripts!.save({ name: 'count', description: 'Count users', script: "return await callTool('users_count', { limit: input.limit })" })
    const failed = await call('codecall_execute', {
      script: "const r = await callTool('saved:count', { limit: 1.5 }, { throwOnError: false }); return r.error",
    })
    expect(failed.status).toBe('ok')
    expect(failed.result).toMatchObject({ code: 'TOOL_EXECUTION_ERROR', details: { code: 'TOOL_EXECUTION_ERROR' } })
    // What a direct CodeCall user sees is what the model saved.
    expect((await codecall.scripts!.list()).map((s) => s.name)).toEqual(['a', 'b', 'count'])
  })

  it('without scripts there is no save tool and saved:<name> is unknown', async () => {
    const { client, call } = await sdkServer({})
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('codecall_save')
    const r = await call('codecall_execute', { script: "return await callTool('saved:a', {})" })
    expect(r.status).not.toBe('ok')
    expect(JSON.stringify(r.error)).toContain('TOOL_NOT_FOUND')
  })
})

describe('codeMode(FastMCP, { scripts })', () => {
  it("every session finds saved scripts; the calls inside still pass the session's own canAccess", async () => {
    const quiet = { debug() {}, error() {}, info() {}, log() {}, warn() {} }
    const server = new FastMCP<{ role: string }>({ name: 'acl', version: '1.0.0', ping: { enabled: false }, logger: quiet })
    server.addTool({ name: 'users_list', description: 'List the users', execute: async () => JSON.stringify(USERS) })
    server.addTool({ name: 'admin_wipe', description: 'Wipe the workspace', canAccess: (auth) => auth?.role === 'admin', execute: async () => '"wiped"' })
    const codecall = fastCodeMode(server, { scripts: { store: ':memory:' } }) as CodeCall
    open.push(() => codecall.dispose(), () => server.stop())
    const session = async (role: string) => {
      const [a, b] = InMemoryTransport.createLinkedPair()
      const client = new Client({ name: role, version: '1' })
      await Promise.all([server.connect(a, { role }), client.connect(b)])
      open.push(() => client.close())
      return async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })).structuredContent as any
    }
    const admin = await session('admin')
    const guest = await session('guest')
    expect(await admin('codecall_save', { name: 'wipe', description: 'Wipe the whole workspace clean', script: "return await callTool('admin_wipe', {})" })).toEqual({
      name: 'saved:wipe',
      version: 1,
    })
    expect((await admin('codecall_execute', { scriptName: 'wipe' })).result).toBe('wiped')
    const found = await guest('codecall_search', { query: 'wipe the whole workspace clean' })
    expect(found.tools.map((t: any) => t.name)).toContain('saved:wipe')
    expect(found.tools.map((t: any) => t.name)).not.toContain('admin_wipe')
    const refused = await guest('codecall_execute', { scriptName: 'wipe' })
    expect(refused.status).not.toBe('ok')
  })
})
