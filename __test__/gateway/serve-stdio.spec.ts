// `codecall serve` over stdio, driven by the official SDK client, in front of real MCP servers from
// npm (everything, memory, filesystem) and the fixture server's failure paths.
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ToolListChangedNotificationSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { callMeta, connectStdio, isRunning, leftovers, markedProcesses, newMark, servers, tempDir, waitFor, writeConfig } from './helpers'

const NAME = /^[a-zA-Z0-9_-]{1,64}$/
const mark = newMark()
const dir = tempDir()
const audit = join(dir, 'audit.jsonl')
let client: Client
let gatewayPid: number
let stderr: () => string
const listChanged: number[] = []
const messages: any[] = []

beforeAll(async () => {
  writeFileSync(join(dir, 'people.json'), JSON.stringify([{ name: 'Ada', role: 'engineer' }, { name: 'Grace', role: 'admiral' }]))
  const config = writeConfig(dir, {
    mcpServers: {
      everything: servers.everything(mark),
      memory: servers.memory(mark, join(dir, 'memory.jsonl')),
      files: servers.filesystem(mark, dir),
      fx: { ...servers.fixture(mark), exclude: ['admin_*'] },
      slow: { ...servers.fixture(mark, '--slow-start', '1500', '--name', 'slow'), include: ['echo', 'pid'] },
      nope: { command: 'codecall-no-such-command-anywhere', env: { CODECALL_TEST_MARK: mark } },
    },
    codecall: { callTimeoutMs: 2000, audit: 'audit.jsonl', vm: { preset: 'secure', timeoutMs: 10_000 } },
  })
  const c = await connectStdio(config, [], { CODECALL_TEST_MARK: mark })
  client = c.client
  gatewayPid = c.pid
  stderr = c.stderr
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged.push(Date.now())
  })
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    messages.push(n.params)
  })
})

afterAll(async () => {
  await client?.close()
  await waitFor(() => !isRunning(gatewayPid), 10_000, 'the gateway to exit')
  expect(await leftovers(mark)).toEqual([])
})

const execute = (script: string, extra: Record<string, unknown> = {}, options = {}) =>
  callMeta(client, 'codecall_execute', { script, ...extra }, options)

describe('tools/list', () => {
  it('lists the meta-tools with names every client accepts', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
    for (const t of tools) expect(t.name).toMatch(NAME)
  })

  it('refuses a tools/call of anything but a meta-tool: JSON-RPC -32602, "MCP error -32602" said once', async () => {
    const e = await client.callTool({ name: 'everything:echo', arguments: {} }).then(() => null, (e) => e)
    expect(e.code).toBe(-32602)
    expect(e.message).toBe('MCP error -32602: Unknown tool: everything:echo (this server lists codecall_search, codecall_describe, codecall_execute)')
  })
})

describe('what the meta-tools answer to bad arguments', () => {
  /** The argument error as the client reads it: structuredContent, and the same as JSON text. */
  const refused = (message: string) => {
    const structuredContent = { status: 'error', error: { code: 'ERR_INVALID_ARG', message } }
    return { isError: true, structuredContent, content: [{ type: 'text', text: JSON.stringify(structuredContent) }] }
  }
  const raw = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args })

  it('an unknown key is refused with the allowed keys named, as the client called the tool', async () => {
    expect(await raw('codecall_execute', { script: 'return 1', timeoutMs: 5000 })).toEqual(
      refused("codecall_execute: unknown key 'timeoutMs' (allowed: script, context, allowedTools, language, input)"),
    )
    expect(await raw('codecall_search', { query: 'echo', limit: 3 })).toEqual(
      refused("codecall_search: unknown key 'limit' (allowed: query, queries, topK, filter)"),
    )
    expect(await raw('codecall_search', { query: 'echo', filter: { appIds: ['fx'], appId: 'fx' } })).toEqual(
      refused("codecall_search: unknown key 'filter.appId' (allowed in filter: appIds, tags, includeOpenApi, includeInline)"),
    )
    expect(await raw('codecall_describe', { toolNames: ['fx:echo'], verbose: true })).toEqual(
      refused("codecall_describe: unknown key 'verbose' (allowed: toolNames)"),
    )
  })

  it('a wrong value is the same kind of result, with structuredContent', async () => {
    expect(await raw('codecall_search', { topK: 3 })).toEqual(refused('input.query must be a string (or input.queries an array of strings)'))
    expect(await raw('codecall_execute', { script: 1 })).toEqual(refused('input.script must be a string'))
  })

  it('every optional key may be omitted, undefined or null; seed 000 describe keys are still read', async () => {
    for (const extra of [{}, { context: undefined, allowedTools: undefined, language: undefined, input: undefined }, { context: null, allowedTools: null, language: null }]) {
      expect(await execute('return 6 * 7', extra)).toMatchObject({ status: 'ok', result: 42 })
    }
    expect(await execute('return input', { input: null })).toMatchObject({ status: 'ok', result: null })
    for (const extra of [{}, { queries: undefined, topK: undefined, filter: undefined }, { queries: null, topK: null, filter: null }, { filter: { appIds: null, tags: null, includeOpenApi: null, includeInline: null } }]) {
      const r = await callMeta(client, 'codecall_search', { query: 'echo the given text', ...extra })
      expect(r.tools[0].name).toBe('fx:echo')
    }
    const d = await callMeta(client, 'codecall_describe', { tools: ['fx:echo', 'fx:pid'], max: 1 })
    expect(d.tools.map((t: any) => t.name)).toEqual(['fx:echo'])
    expect(d.omitted).toEqual(['fx:pid'])
  })
})

describe('search and describe', () => {
  it('finds upstream tools as <server>:<tool> with the server as appId', async () => {
    const r = await callMeta(client, 'codecall_search', { query: 'add two numbers' })
    expect(r.tools[0]).toMatchObject({ name: 'everything:get-sum', appId: 'everything' })
    const files = await callMeta(client, 'codecall_search', { query: 'write a file', filter: { appIds: ['files'] } })
    expect(files.tools.map((t: any) => t.name)).toContain('files:write_file')
    expect(files.tools.every((t: any) => t.appId === 'files')).toBe(true)
  })

  it('never finds internal or excluded tools', async () => {
    const r = await callMeta(client, 'codecall_search', { queries: ['secret', 'configuration', 'workspace root', 'reset everything'], topK: 50 })
    const names = r.tools.map((t: any) => t.name)
    for (const hidden of ['fx:internal_secrets_get', 'fx:config_set', 'fx:workspace_root', 'fx:admin_reset']) expect(names).not.toContain(hidden)
    const d = await callMeta(client, 'codecall_describe', { toolNames: ['fx:config_set', 'fx:admin_reset', 'slow:hang', 'fx:echo'] })
    expect(d.tools.map((t: any) => t.name)).toEqual(['fx:echo'])
    expect(d.notFound).toEqual(['fx:config_set', 'fx:admin_reset', 'slow:hang'])
  })

  it('describes an upstream tool with its TypeScript declaration', async () => {
    const d = await callMeta(client, 'codecall_describe', { toolNames: ['everything:get-sum'] })
    expect(d.tools[0].typescript).toContain("callTool(name: 'everything:get-sum'")
    expect(d.tools[0].inputSchema.properties).toHaveProperty('a')
  })
})

describe('execute', () => {
  it('joins data from two different upstream servers in one script', async () => {
    const script = `
      const text = await callTool('files:read_text_file', { path: input.file })
      const people = JSON.parse(typeof text === 'string' ? text : text.content)
      await callTool('memory:create_entities', { entities: people.map((p) => ({ name: p.name, entityType: 'person', observations: [p.role] })) })
      const graph = await callTool('memory:read_graph', {})
      const sum = await callTool('everything:get-sum', { a: people.length, b: graph.entities.length })
      return { people: graph.entities.map((e) => e.name + ' (' + e.observations[0] + ')').sort(), sum }`
    const r = await execute(script, { input: { file: join(dir, 'people.json') } })
    expect(r.status).toBe('ok')
    expect(r.result.people).toEqual(['Ada (engineer)', 'Grace (admiral)'])
    expect(JSON.stringify(r.result.sum)).toContain('4')
    expect(r.stats.toolCalls).toBe(4)
  })

  it('runs TypeScript', async () => {
    const r = await execute(`const r: { echoed: string } = await callTool('fx:echo', { text: 'typed' }); return r.echoed`, { language: 'typescript' })
    expect(r).toMatchObject({ status: 'ok', result: 'typed' })
  })

  it('unwraps structuredContent and keeps an upstream tool error a ToolError', async () => {
    const r = await execute(`
      const s = await callTool('fx:structured')
      const e = await callTool('fx:fail', {}, { throwOnError: false })
      return { s, e }`)
    expect(r.result.s).toEqual({ n: 42 })
    expect(r.result.e).toEqual({ success: false, error: { code: 'TOOL_EXECUTION_ERROR', message: 'fixture failure: the tool says no' } })
  })

  it('reports an uncaught upstream failure as tool_error', async () => {
    const r = await execute(`return await callTool('fx:fail')`)
    expect(r.status).toBe('tool_error')
    expect(r.error).toMatchObject({ source: 'tool', code: 'TOOL_EXECUTION_ERROR', toolName: 'fx:fail' })
  })

  it('refuses internal and excluded tools as not found, whatever the spelling', async () => {
    const r = await execute(`
      const names = ['fx:internal_secrets_get', 'fx:config_set', 'fx:workspace_root', 'fx:admin_reset', 'slow:hang', 'fx', ':echo', 'nowhere:echo']
      return await Promise.all(names.map((n) => callTool(n, {}, { throwOnError: false }).then((r) => r.error && r.error.code)))`)
    expect(r.result).toEqual(Array(8).fill('TOOL_NOT_FOUND'))
  })

  it('blocks the meta-tools from scripts', async () => {
    const r = await execute(`return await callTool('codecall_execute', { script: '1' })`)
    expect(r.status).toBe('illegal_access')
    expect(r.error.code).toBe('SELF_REFERENCE_BLOCKED')
  })
})

describe('mcp.* (seed 003) and call_tool (seed 004)', () => {
  it('lists servers with their status, and the reason of a failed one', async () => {
    const r = await execute(`return await mcp.listServers()`)
    const byName = Object.fromEntries(r.result.map((s: any) => [s.name, s]))
    expect(Object.keys(byName).sort()).toEqual(['everything', 'files', 'fx', 'memory', 'nope', 'slow'])
    expect(byName.everything).toMatchObject({ status: 'connected', transport: 'stdio', capabilities: { tools: true, resources: true, prompts: true } })
    expect(byName.slow).toMatchObject({ status: 'connected', tools: 2 })
    expect(byName.nope.status).toBe('failed')
    expect(byName.nope.reason).toMatch(/codecall-no-such-command-anywhere/)
  })

  it('lists tools per server, filtered as the index is', async () => {
    const r = await execute(`return (await mcp.listTools('fx')).map((t) => t.name)`)
    expect(r.result).toEqual(expect.arrayContaining(['echo', 'fail', 'hang']))
    for (const hidden of ['internal_secrets_get', 'config_set', 'workspace_root', 'admin_reset']) expect(r.result).not.toContain(hidden)
    const all = await execute(`const t = await mcp.listTools(); return [...new Set(t.map((x) => x.server))].sort()`)
    expect(all.result).toEqual(['everything', 'files', 'fx', 'memory', 'slow'])
  })

  it('calls tools, reads resources and gets prompts', async () => {
    const r = await execute(`
      const echo = await mcp.callTool('everything', 'echo', { message: 'hi' })
      const resources = await mcp.listResources('everything')
      const first = await mcp.readResource(resources[0].server, resources[0].uri)
      const templates = await mcp.listResourceTemplates('everything')
      const prompts = await mcp.listPrompts()
      const prompt = await mcp.getPrompt('everything', 'args-prompt', { city: 'Paris' })
      const fxNote = await mcp.readResource('fx', 'fixture://notes/1')
      return { echo, n: resources.length, first: first.contents[0].uri === resources[0].uri, templates: templates.length,
               prompts: prompts.map((p) => p.server + '/' + p.name), prompt: prompt.messages[0].content.text, fxNote: fxNote.contents[0].text }`)
    expect(r.status).toBe('ok')
    expect(r.result.echo.content[0].text).toContain('hi')
    expect(r.result.n).toBeGreaterThan(0)
    expect(r.result.first).toBe(true)
    expect(r.result.templates).toBeGreaterThan(0)
    expect(r.result.prompts).toEqual(expect.arrayContaining(['everything/args-prompt', 'fx/greet', 'slow/greet']))
    expect(r.result.prompt).toContain('Paris')
    expect(r.result.fxNote).toBe('the first note')
  })

  it('call_tool never throws for the tool or the server', async () => {
    const r = await execute(`
      return await Promise.all([
        call_tool('fx', 'echo', { text: 'ok' }),
        call_tool('fx', 'fail', {}),
        call_tool('fx', 'throw', {}),
        call_tool('fx', 'config_set', {}),
        call_tool('nowhere', 'echo', {}),
        call_tool('nope', 'anything', {}),
      ])`)
    expect(r.status).toBe('ok')
    const [ok, fail, thrown, internal, unknown, down] = r.result
    expect(ok).toEqual({ ok: true, result: { echoed: 'ok', server: 'fixture' } })
    expect(fail).toEqual({ ok: false, error: { code: 'TOOL_EXECUTION_ERROR', message: 'fixture failure: the tool says no' } })
    expect(thrown.error.message).toMatch(/'fx'.*JSON-RPC error -32602.*fixture JSON-RPC error/)
    expect(internal.error.code).toBe('TOOL_NOT_FOUND')
    expect(unknown.error.code).toBe('TOOL_NOT_FOUND')
    expect(down).toMatchObject({ ok: false, error: { code: 'TOOL_EXECUTION_ERROR' } })
    expect(down.error.message).toMatch(/'nope'/)
  })

  it("binds mcp.callTool and call_tool by the index and the run's allowedTools, as callTool", async () => {
    // A tool whose own metadata keeps it out of code mode is not found, by any of them.
    const outOfIndex = await execute(`return await Promise.all([
      callTool('fx:opted_out', {}, { throwOnError: false }).then((r) => r.error.code),
      mcp.callTool('fx', 'opted_out', {}).then(() => 'called', (e) => e.code),
      call_tool('fx', 'opted_out', {}).then((r) => r.error.code),
      mcp.listTools('fx').then((t) => t.some((x) => x.name === 'opted_out')),
    ])`)
    expect(outOfIndex.result).toEqual(['TOOL_NOT_FOUND', 'TOOL_NOT_FOUND', 'TOOL_NOT_FOUND', false])
    // The run's allowedTools bind all of them alike.
    const r = await execute(
      `return await Promise.all([
        callTool('fx:pid', {}, { throwOnError: false }).then((r) => r.error.code),
        mcp.callTool('fx', 'pid', {}).then(() => 'called', (e) => e.code),
        call_tool('fx', 'pid', {}).then((r) => r.error.code),
        call_tool('fx', 'echo', { text: 'allowed' }).then((r) => r.ok),
      ])`,
      { allowedTools: ['fx:echo'] },
    )
    expect(r.result).toEqual(['ACCESS_DENIED', 'ACCESS_DENIED', 'ACCESS_DENIED', true])
  })

  it('counts every kind of call against maxToolCalls', async () => {
    const r = await execute(`
      await mcp.listServers(); await call_tool('fx', 'echo', { text: 'a' }); await callTool('fx:echo', { text: 'b' })
      return 'done'`)
    expect(r.stats.toolCalls).toBe(3)
  })

  it('sends tool_call events for mcp.callTool and call_tool too (debug level, asked for with logging/setLevel)', async () => {
    messages.length = 0
    await execute(`return await callTool('fx:echo', { text: 'quiet' })`)
    expect(messages.filter((m) => m.logger === 'codecall')).toEqual([])
    await client.setLoggingLevel('debug')
    await execute(`await mcp.callTool('fx', 'echo', { text: 'e1' }); await call_tool('fx', 'echo', { text: 'e2' }); return 1`)
    const events = messages.filter((m) => m.logger === 'codecall').map((m) => `${m.data.type}:${m.data.toolName}`)
    expect(events).toEqual(['tool_call_start:fx:echo', 'tool_call_end:fx:echo', 'tool_call_start:fx:echo', 'tool_call_end:fx:echo'])
    const start = messages.find((m) => m.logger === 'codecall')
    expect(start.level).toBe('debug')
    expect(start.data.executionId).toMatch(/\S/)
    await client.setLoggingLevel('info')
  })
})

describe('failure paths', () => {
  it('ends a call to a hanging tool within callTimeoutMs, naming the server', async () => {
    const r = await execute(`return await callTool('fx:hang')`)
    expect(r.status).toBe('tool_error')
    expect(r.error.message).toMatch(/MCP server 'fx' did not answer tool 'hang' within 2000 ms/)
  })

  it('turns a JSON-RPC error into TOOL_EXECUTION_ERROR', async () => {
    const r = await execute(`return await callTool('fx:throw')`)
    expect(r.error).toMatchObject({ code: 'TOOL_EXECUTION_ERROR', toolName: 'fx:throw' })
    expect(r.error.message).toMatch(/fixture JSON-RPC error: bad params/)
  })

  it('survives an upstream that kills itself mid-call, and restarts it on next use', async () => {
    const before = await execute(`return (await callTool('fx:pid')).pid`)
    const died = await execute(`return await callTool('fx:die')`)
    expect(died.status).toBe('tool_error')
    expect(died.error.message).toMatch(/MCP server 'fx' closed the connection/)
    await waitFor(() => !isRunning(before.result), 5000, 'the fixture to be gone')
    const others = await execute(`return (await callTool('everything:get-sum', { a: 1, b: 2 }))`)
    expect(others.status).toBe('ok')
    const after = await execute(`return (await callTool('fx:pid')).pid`)
    expect(after.status).toBe('ok')
    expect(after.result).not.toBe(before.result)
    expect(stderr()).toMatch(/\[fx\] the server process exited/)
  })

  it('keeps serving when one upstream does not exist, and says why', async () => {
    const r = await execute(`return await callTool('everything:echo', { message: 'still here' })`)
    expect(r.status).toBe('ok')
    expect(stderr()).toMatch(/\[nope\] failed to start: command not found: codecall-no-such-command-anywhere/)
  })
})

describe('notifications', () => {
  it('passes upstream progress and logging through to the client', async () => {
    messages.length = 0
    const progress: any[] = []
    const r = await execute(`return await callTool('fx:progress', { steps: 3 })`, {}, { onprogress: (p: any) => progress.push(p) })
    expect(r.status).toBe('ok')
    const upstream = progress.filter((p) => String(p.message).startsWith('fx:progress:'))
    expect(upstream.map((p) => p.message)).toEqual(['fx:progress: step 1 (1/3)', 'fx:progress: step 2 (2/3)', 'fx:progress: step 3 (3/3)'])
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1))
    const logs = messages.filter((m) => m.logger === 'fx/fixture').map((m) => m.data)
    expect(logs).toEqual(['working on step 1', 'working on step 2', 'working on step 3'])
  })

  it('progress of a real server (everything) reaches the client', async () => {
    const progress: any[] = []
    const r = await execute(`return await callTool('everything:trigger-long-running-operation', { duration: 0.3, steps: 3 })`, {}, {
      onprogress: (p: any) => progress.push(p),
    })
    expect(r.status).toBe('ok')
    const upstream = progress.filter((p) => /^everything:trigger-long-running-operation(: .*)? \(\d\/3\)$/.test(String(p.message)))
    expect(upstream.map((p) => String(p.message).slice(-5))).toEqual(['(1/3)', '(2/3)', '(3/3)'])
    expect(progress[progress.length - 1].message).toMatch(/^everything:trigger-long-running-operation ok in/)
  })

  it('re-indexes a server on its tools/list_changed and passes it on', async () => {
    const before = listChanged.length
    const r = await execute(`return await callTool('fx:add_tool', { name: 'late_tool' })`)
    expect(r.status).toBe('ok')
    await waitFor(() => listChanged.length > before, 5000, 'tools/list_changed')
    const found = await callMeta(client, 'codecall_search', { query: 'late tool added at run time' })
    expect(found.tools[0].name).toBe('fx:late_tool')
    const called = await execute(`return await callTool('fx:late_tool')`)
    expect(called.result).toEqual({ called: 'late_tool' })
  })
})

describe('audit', () => {
  it('writes one line per execute with the code hash, never the code or data', async () => {
    const script = `return await callTool('fx:echo', { text: 'audit-secret-value' })`
    await execute(script)
    // The audit stream writes asynchronously: the reply can arrive before its line is on disk.
    const hash = createHash('sha256').update(script).digest('hex')
    const readLines = () => readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    const written = () => {
      try {
        return readLines().at(-1)?.codeSha256 === hash
      } catch {
        return false // a line half written
      }
    }
    await waitFor(written, 10_000, 'the audit line of this execute')
    const lines = readLines()
    const last = lines[lines.length - 1]
    expect(last).toMatchObject({
      tool: 'codecall_execute',
      codeSha256: createHash('sha256').update(script).digest('hex'),
      codeLength: script.length,
      toolCalls: 1,
      servers: ['fx'],
      status: 'ok',
    })
    expect(Object.keys(last).sort()).toEqual(['codeLength', 'codeSha256', 'durationMs', 'servers', 'sessionId', 'status', 'toolCalls', 'tool', 'ts'].sort())
    const text = readFileSync(audit, 'utf8')
    expect(text).not.toContain('audit-secret-value')
    expect(text).not.toContain('people.json')
    expect(lines.some((l) => l.status === 'tool_error' && l.errorCode === 'TOOL_EXECUTION_ERROR')).toBe(true)
  })
})

describe('processes', () => {
  it('every upstream process is the gateway child (marked and alive while serving)', () => {
    expect(markedProcesses(mark).length).toBeGreaterThanOrEqual(5)
  })
})
