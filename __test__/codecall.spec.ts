// CodeCall through its JavaScript API, with an in-process host: options, callbacks, the meta-tools,
// execute's CallToolResult unwrapping, invoke, handle, and the argument errors of the contract.
import { readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import { CodeCall, type CodeCallHost, type ExecuteEvent, type ToolDefinition } from '../index.js'
import { expectInvalidArg } from './helpers.js'

const tools: ToolDefinition[] = [
  {
    name: 'users:list',
    appId: 'users',
    description: 'List users with pagination',
    inputSchema: { type: 'object', properties: { limit: { type: 'integer', minimum: 1 } } },
    examples: [{ description: 'First five users', input: { limit: 5 } }],
  },
  {
    name: 'users:get',
    appId: 'users',
    description: 'Get one user by id',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
  { name: 'users:whoami', appId: 'users', description: 'The current user', codecall: { visibleInListTools: true } },
  { name: 'billing:charge', appId: 'billing', description: 'Charge a card', codecall: { enabledInCodeCall: false } },
  { name: 'billing:listInvoices', appId: 'billing', source: 'openapi', description: 'List invoices', tags: ['money'] },
  { name: 'admin:purge', appId: 'admin', description: 'Purge all users', internal: true },
]

/** A host whose tools answer like MCP servers do. */
function host(calls: { name: string; input: unknown }[] = [], events: ExecuteEvent[] = []): CodeCallHost {
  return {
    callTool(name, input) {
      calls.push({ name, input })
      switch (name) {
        case 'users:list':
          return { content: [{ type: 'text', text: JSON.stringify({ items: [{ id: 'u1' }, { id: 'u2' }] }) }] }
        case 'users:get':
          return Promise.resolve({ content: [{ type: 'text', text: 'x' }], structuredContent: { id: (input as { id: string }).id } })
        case 'billing:listInvoices':
          return { content: [{ type: 'text', text: 'not json' }] }
        default:
          return { isError: true, content: [{ type: 'text', text: `${name} failed` }], structuredContent: { reason: 'boom' } }
      }
    },
    onEvent: (e) => events.push(e),
  }
}

describe('CodeCall', () => {
  it('lists the meta-tools then the visible tools, and keeps internal and disabled tools out', async () => {
    const cc = new CodeCall({ directCalls: { enabled: true } })
    cc.setTools(tools)
    expect(cc.listTools().map((t) => t.name)).toEqual([
      'codecall:search',
      'codecall:describe',
      'codecall:execute',
      'codecall:invoke',
      'users:whoami',
    ])
    expect(cc.metaTools()).toHaveLength(4)
    expect(JSON.stringify(cc.metaTools()).length).toBeLessThan(6 * 1024)
    const found = cc.search({ query: 'purge charge users invoices', topK: 50 })
    expect(found.totalIndexed).toBe(4)
    expect(found.tools.map((t) => t.name).sort()).toEqual(['billing:listInvoices', 'users:get', 'users:list', 'users:whoami'])
    await cc.dispose()
  })

  it('uses the configured meta-tool names everywhere', async () => {
    const cc = new CodeCall({ metaToolPrefix: 'cc', metaToolSeparator: '_' })
    cc.setTools(tools)
    expect(cc.metaTools().map((t) => t.name)).toEqual(['cc_search', 'cc_describe', 'cc_execute'])
    const r = await cc.handle('cc_execute', { script: "return await callTool('cc_search', { query: 'x' })" }, host())
    expect(r).toMatchObject({ status: 'illegal_access', error: { code: 'SELF_REFERENCE_BLOCKED' } })
    const dynamic = await cc.handle('cc_execute', { script: "const n = ['cc', 'describe'].join('_')\nreturn await callTool(n, {})" }, host())
    expect(dynamic).toMatchObject({ status: 'tool_error', error: { code: 'SELF_REFERENCE_BLOCKED' } })
    await expect(cc.handle('codecall:execute', { script: 'return 1' }, host())).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
    await cc.dispose()
  })

  it('asks includeTools first, with each tool summary', async () => {
    const seen: unknown[] = []
    const cc = new CodeCall({
      mode: 'metadata_driven',
      includeTools: (t) => {
        seen.push(t)
        return t.appId !== 'billing'
      },
    })
    cc.setTools([
      { name: 'a:x', appId: 'a', codecall: { enabledInCodeCall: true } },
      { name: 'billing:y', appId: 'billing', tags: ['t'], codecall: { enabledInCodeCall: true, visibleInListTools: true } },
    ])
    expect(seen).toContainEqual({ name: 'billing:y', appId: 'billing', source: 'inline', tags: ['t'] })
    expect(cc.search({ query: 'x y', topK: 10 }).tools.map((t) => t.name)).toEqual(['a:x'])
    expect(cc.listTools().map((t) => t.name)).not.toContain('billing:y')
    await cc.dispose()
  })

  it('calls onToolsChanged only when what is listed or indexed changes', async () => {
    let changes = 0
    const cc = new CodeCall({ mode: 'codecall_opt_in', onToolsChanged: () => changes++ })
    cc.setTools([{ name: 'a:x' }])
    expect(changes).toBe(0)
    cc.upsertTools([{ name: 'a:x', codecall: { enabledInCodeCall: true } }])
    expect(changes).toBe(1)
    cc.upsertTools([{ name: 'a:x', codecall: { enabledInCodeCall: true } }])
    expect(changes).toBe(1)
    cc.removeTools(['a:x', 'unknown'])
    expect(changes).toBe(2)
    const throwing = new CodeCall({
      onToolsChanged: () => {
        throw new Error('listener bug')
      },
    })
    expect(() => throwing.setTools([{ name: 'a:y' }])).not.toThrow()
    // callbacks may read the engine they are called from
    const seen: string[][] = []
    const reading: CodeCall = new CodeCall({ onToolsChanged: () => seen.push(reading.listTools().map((t) => t.name)) })
    reading.setTools([{ name: 'a:z', codecall: { visibleInListTools: true } }])
    expect(seen).toEqual([['codecall:search', 'codecall:describe', 'codecall:execute', 'a:z']])
    await Promise.all([cc.dispose(), throwing.dispose(), reading.dispose()])
  })

  it('unwraps CallToolResults for scripts and reports tool errors with the tool message', async () => {
    const cc = new CodeCall()
    cc.setTools(tools)
    const calls: { name: string; input: unknown }[] = []
    const events: ExecuteEvent[] = []
    const r = await cc.execute(
      {
        script: `const list = await callTool('users:list', {})
const one = await callTool('users:get', { id: list.items[1].id })
const text = await callTool('billing:listInvoices', {})
return { ids: list.items.map((u) => u.id), one, text }`,
      },
      host(calls, events),
    )
    expect(r).toMatchObject({ status: 'ok', result: { ids: ['u1', 'u2'], one: { id: 'u2' }, text: 'not json' } })
    expect(calls.map((c) => c.name)).toEqual(['users:list', 'users:get', 'billing:listInvoices'])
    expect(events.filter((e) => e.type === 'tool_call_end')).toHaveLength(3)

    const failed = await cc.execute({ script: "return await callTool('users:whoami', {})" }, host())
    expect(failed).toMatchObject({
      status: 'tool_error',
      error: { code: 'TOOL_EXECUTION_ERROR', message: 'users:whoami failed', toolName: 'users:whoami', details: { reason: 'boom' } },
    })
    const caught = await cc.execute(
      { script: "const r = await callTool('users:whoami', {}, { throwOnError: false })\nreturn r" },
      host(),
    )
    expect(caught).toMatchObject({ status: 'ok', result: { success: false, error: { code: 'TOOL_EXECUTION_ERROR' } } })
    await cc.dispose()
  })

  it('lets scripts reach only indexed tools, and honours allowedTools, context, input and TypeScript', async () => {
    const cc = new CodeCall()
    cc.setTools(tools)
    const calls: { name: string; input: unknown }[] = []
    for (const name of ['admin:purge', 'billing:charge', 'nope']) {
      const r = await cc.execute({ script: `return await callTool('${name}', {})` }, host(calls))
      expect(r).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_NOT_FOUND', toolName: name } })
    }
    expect(calls).toEqual([])
    const denied = await cc.execute({ script: "return await callTool('users:get', { id: 'x' })", allowedTools: ['users:list'] }, host())
    expect(denied).toMatchObject({ status: 'tool_error', error: { code: 'ACCESS_DENIED' } })
    const info = await cc.execute({ script: "return [getTool('users:get')?.appId, getTool('admin:purge')]" }, host())
    expect(info).toMatchObject({ status: 'ok', result: ['users', null] })
    const ts = await cc.execute(
      { script: 'const n: number = input.n\nreturn codecallContext.tenant + n', language: 'typescript', context: { tenant: 't' }, input: { n: 1 } },
      host(),
    )
    expect(ts).toMatchObject({ status: 'ok', result: 't1' })
    await cc.dispose()
  })

  it('describes indexed tools with schemas, TypeScript and usage examples, and nothing else', async () => {
    const cc = new CodeCall({ maxDefinitions: 2 })
    cc.setTools(tools)
    const r = cc.describe({ toolNames: ['users:list', 'codecall:execute', 'admin:purge', 'billing:charge', 'users:get', 'users:whoami'] })
    expect(r.tools.map((t) => t.name)).toEqual(['users:list', 'users:get'])
    expect(r.notFound).toEqual(['codecall:execute', 'admin:purge', 'billing:charge'])
    expect(r.omitted).toEqual(['users:whoami'])
    const list = r.tools[0]
    expect(list).toMatchObject({ appId: 'users', description: 'List users with pagination', outputSchema: null, annotations: {} })
    expect(list.typescript).toContain("declare function callTool(name: 'users:list'")
    expect(list.usageExamples[0]).toEqual({ description: 'First five users', code: expect.stringContaining("callTool('users:list', { limit: 5 })") })
    expect(list.usageExamples[1].description).toBe('List users') // then generated by intent
    expect(r.tools[1].usageExamples[0].code).toMatch(/callTool\('users:get', \{ id: '[^']+' \}\)/) // required args present
    expect(cc.describe({ tools: ['users:list', 'users:get'], max: 1 }).tools).toHaveLength(1)
    await cc.dispose()
  })

  it('invokes one tool through the pipeline, with the directCalls policy', async () => {
    const filtered: string[] = []
    const cc = new CodeCall({
      directCalls: {
        enabled: true,
        allowedTools: ['users:get', 'users:whoami', 'billing:listInvoices', 'admin:purge'],
        filter: (t) => {
          filtered.push(t.name)
          return t.appId === 'users'
        },
      },
    })
    cc.setTools(tools)
    const calls: { name: string; input: unknown }[] = []
    const events: ExecuteEvent[] = []
    expect(await cc.invoke({ tool: 'users:get', input: { id: 'u9' } }, host(calls, events))).toEqual({ status: 'ok', result: { id: 'u9' } })
    expect(calls).toEqual([{ name: 'users:get', input: { id: 'u9' } }])
    expect(events.map((e) => e.type)).toEqual(['tool_call_start', 'tool_call_end'])
    expect(events[1]).toMatchObject({ toolName: 'users:get', status: 'ok', input: { id: 'u9' }, callId: (events[0] as { callId: string }).callId })
    events.length = 0
    await cc.invoke({ tool: 'users:whoami', input: {} }, host([], events))
    expect(events[1]).toMatchObject({ type: 'tool_call_end', status: 'error', error: { code: 'TOOL_EXECUTION_ERROR' } })
    expect(await cc.invoke({ tool: 'users:whoami', input: {} }, host())).toMatchObject({
      status: 'error',
      error: { code: 'TOOL_EXECUTION_ERROR', message: 'users:whoami failed', toolName: 'users:whoami', toolInput: {}, details: { reason: 'boom' } },
    })
    const refused = async (tool: string) => ((await cc.invoke({ tool, input: {} }, host())) as { error: { code: string } }).error.code
    expect(await refused('users:list')).toBe('ACCESS_DENIED') // not on the allowlist
    expect(await refused('billing:listInvoices')).toBe('ACCESS_DENIED') // the filter says no
    expect(await refused('admin:purge')).toBe('TOOL_NOT_FOUND')
    expect(await refused('codecall:search')).toBe('SELF_REFERENCE_BLOCKED')
    expect(filtered).not.toContain('admin:purge')
    // Each call that reaches the host has its own id, which nobody can guess (§12).
    events.length = 0
    await cc.invoke({ tool: 'users:get', input: { id: 'u1' } }, host([], events))
    await cc.invoke({ tool: 'users:get', input: { id: 'u2' } }, host([], events))
    const ids = events.map((e) => (e as { callId: string; executionId: string }))
    expect(ids[0].callId).toMatch(/^invoke-[0-9a-f]{32}$/)
    expect(ids[0].executionId).toBe(ids[0].callId)
    expect(ids[2].callId).toMatch(/^invoke-[0-9a-f]{32}$/)
    expect(ids[2].callId).not.toBe(ids[0].callId)
    const throwing = { callTool: () => { throw Object.assign(new Error('rate limited'), { code: 'RATE_LIMIT' }) } }
    expect(await cc.invoke({ tool: 'users:get', input: { id: 'x' } }, throwing)).toMatchObject({
      status: 'error',
      error: { code: 'RATE_LIMIT', message: 'rate limited' },
    })
    expect(await cc.handle('codecall:invoke', { tool: 'users:get', input: { id: 'h' } }, host())).toEqual({ status: 'ok', result: { id: 'h' } })
    const disabled = new CodeCall()
    disabled.setTools(tools)
    expect(await disabled.invoke({ tool: 'users:get', input: {} }, host())).toMatchObject({ status: 'error', error: { code: 'ACCESS_DENIED' } })
    await expect(disabled.handle('codecall:invoke', { tool: 'users:get' }, host())).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
    await Promise.all([cc.dispose(), disabled.dispose()])
  })

  it('dispatches every meta-tool through handle()', async () => {
    const cc = new CodeCall({ directCalls: { enabled: true } })
    cc.setTools(tools)
    const found = (await cc.handle('codecall:search', { query: 'list users' }, host())) as { tools: { name: string }[] }
    expect(found.tools[0].name).toBe('users:list')
    expect(await cc.handle('codecall:describe', { toolNames: ['users:get'] }, host())).toMatchObject({ tools: [{ name: 'users:get' }] })
    expect(await cc.handle('codecall:execute', { script: 'return 1 + 1' }, host())).toMatchObject({ status: 'ok', result: 2 })
    await cc.dispose()
    expect(await cc.execute({ script: 'return 1' }, host())).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
  })

  it('search.semantic: on when omitted, undefined or null; false turns the semantic signal off', async () => {
    // The query shares no word with the tool: only the semantic signal finds it.
    const list: ToolDefinition[] = [...tools, { name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }]
    const engines: CodeCall[] = []
    const found = async (options: ConstructorParameters<typeof CodeCall>[0]) => {
      const cc = new CodeCall(options)
      engines.push(cc)
      cc.setTools(list)
      // Tools are embedded in the background; until then search is lexical.
      await cc.ready()
      return cc.search({ query: 'will it rain tomorrow' }).tools.map((t) => t.name)
    }
    for (const search of [undefined, {}, { semantic: undefined }, { semantic: null }, { semantic: true }]) {
      expect(await found({ search: search as never })).toEqual(['weather:get_forecast'])
    }
    expect(await found({})).toEqual(['weather:get_forecast'])
    expect(await found({ search: { semantic: false } })).toEqual([])
    expectInvalidArg(() => new CodeCall({ search: { semantic: 'yes' } as never }), /options\.search\.semantic/)
    await Promise.all(engines.map((cc) => cc.dispose()))
  })

  it('search.cacheDir: omitted, undefined and null keep nothing on disk; a folder keeps the vectors', async () => {
    const dir = join(tmpdir(), `codecall-cc-cache-${process.pid}-${Date.now()}`)
    const tools = [{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' }]
    for (const search of [undefined, {}, { cacheDir: undefined }, { cacheDir: null as never }, { cacheDir: dir }]) {
      const cc = new CodeCall({ search })
      try {
        cc.setTools(tools)
        await cc.ready()
        expect(cc.search({ query: 'will it rain tomorrow' }).tools.map((t) => t.name)).toEqual(['weather:get_forecast'])
      } finally {
        await cc.dispose()
      }
    }
    expect(readdirSync(dir).filter((f) => f.endsWith('.vec'))).toHaveLength(1)
    rmSync(dir, { recursive: true, force: true })
  })

  it('rejects bad arguments with ERR_INVALID_ARG (throws for sync methods, rejects for async ones)', async () => {
    expectInvalidArg(() => new CodeCall({ mode: 'everything' as never }), /options\.mode/)
    expectInvalidArg(() => new CodeCall({ topK: 0 }), /options\.topK/)
    expectInvalidArg(() => new CodeCall({ maxDefinitions: -1 }), /options\.maxDefinitions/)
    expectInvalidArg(() => new CodeCall({ includeTools: 'yes' as never }), /options\.includeTools/)
    expectInvalidArg(() => new CodeCall({ directCalls: { enabled: 'yes' as never } }), /options\.directCalls\.enabled/)
    expectInvalidArg(() => new CodeCall({ vm: { preset: 'open' as never } }), /options\.vm/)
    expectInvalidArg(() => new CodeCall({ search: { similarityThreshold: 2 } }), /similarityThreshold/)
    expectInvalidArg(() => new CodeCall({ search: { cacheDir: '' } }), /options\.search\.cacheDir/)
    expectInvalidArg(() => new CodeCall({ search: { cacheDir: 7 as never } }), /options\.search\.cacheDir/)
    expectInvalidArg(() => new CodeCall({ metaToolSeparator: '/' as never }), /metaToolSeparator/)
    expectInvalidArg(() => new CodeCall({ metaToolPrefix: 'has space' }), /metaToolPrefix/)
    const cc = new CodeCall()
    expectInvalidArg(() => cc.setTools({} as never), /tools must be an array/)
    expectInvalidArg(() => cc.setTools([{ name: '' }]), /tools\[0\]\.name/)
    expectInvalidArg(() => cc.setTools([{ name: 'codecall:search' }]), /reserved/)
    const cyclic: Record<string, unknown> = { name: 'a:b' }
    cyclic.inputSchema = { self: cyclic }
    expectInvalidArg(() => cc.setTools([cyclic as ToolDefinition]), /tools\[0\]/)
    expectInvalidArg(() => cc.search({} as never), /query/)
    expectInvalidArg(() => cc.search({ query: 'x', topK: -1 }), /topK/)
    expectInvalidArg(() => cc.describe({} as never), /toolNames/)
    for (const p of [
      cc.execute({} as never, host()),
      cc.execute({ script: 1 } as never, host()),
      cc.execute({ script: 'return 1', context: [] as never }, host()),
      cc.execute({ script: 'return 1' }, 5 as never),
      cc.invoke({ tool: 'users:get' }, {} as never),
      cc.handle('users:get', {}, host()),
      cc.handle(42 as never, {}, host()),
    ]) {
      await expect(p).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG' })
    }
    await cc.dispose()
  })
})

describe('numbers through JSON', () => {
  it('a float in a tool’s text result or in input reaches the script as the exact double', async () => {
    const cc = new CodeCall()
    cc.setTools([{ name: 'n:echo', description: 'Echo numbers', annotations: { readOnlyHint: true } }])
    // Doubles whose shortest text a parser that is not exact reads one unit in the last place off.
    const values = [0.028606771158512734, 0.1 + 0.2, 1.7976931348623157e308, 5e-324, 2 ** -1074 * 3, 123456789.12345679, 0.3000000000000001]
    for (let i = 0; i < 200; i++) values.push(Math.random(), Math.random() * 1e-300, Math.random() * 1e300)
    const host: CodeCallHost = { callTool: () => ({ content: [{ type: 'text', text: JSON.stringify(values) }] }) }
    const r: any = await cc.handle('codecall:execute', { script: "const v = await callTool('n:echo', {}); return v.map((x, i) => x === input[i])", input: values }, host)
    expect(r.status).toBe('ok')
    expect(r.result.every(Boolean)).toBe(true)
    const got: any = await cc.handle('codecall:execute', { script: "return await callTool('n:echo', {})" }, host)
    expect(got.result).toEqual(values)
    const echoed: any = await cc.handle('codecall:execute', { script: 'return input', input: values }, host)
    expect(echoed.result).toEqual(values)
    await cc.dispose()
  })
})
