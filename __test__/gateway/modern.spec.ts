// `codecall serve` to clients of the 2026-07-28 era (api.md §12), driven by the official SDK 2.x
// client (`@modelcontextprotocol/client` 2.4) pinned to 2026-07-28, in auto mode and legacy, over
// stdio and Streamable HTTP; approvals by `input_required` across requests; the sealed
// `requestState` refused when forged, altered, reused or foreign (raw JSON-RPC); starting costs
// nothing (a probe starts no upstream and opens no store).
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { CLI, FIXTURE, leftovers, newMark, startCli, tempDir, waitFor, writeConfig } from './helpers'

const MODERN = '2026-07-28'
type Mode = 'legacy' | 'auto' | { pin: string }
type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean | string[]> }

const mark = newMark()
const dir = tempDir()
/** Each start of the fixture upstream appends its pid here (a wrapper around the fixture server). */
const starts = join(dir, 'starts.log')
const wrapper = join(dir, 'counted-fixture.mjs')
writeFileSync(wrapper, `import { appendFileSync } from 'node:fs'\nappendFileSync(${JSON.stringify(starts)}, process.pid + '\\n')\nprocess.argv.push('--approval-tools')\nawait import(${JSON.stringify(FIXTURE)})\n`)
const upstream = { command: process.execPath, args: [wrapper], env: { CODECALL_TEST_MARK: mark } }
const store = join(dir, 'scripts.db')
const config = writeConfig(dir, {
  mcpServers: { fx: upstream },
  codecall: {
    directCalls: { enabled: true },
    approval: { ask: ['fx:repo_delete', 'fx:repo_touch'], timeoutMs: 20_000 },
    scripts: { store },
    vm: { preset: 'secure', timeoutMs: 10_000 },
    audit: 'audit.jsonl',
    stateKey: 'a-state-key-for-these-tests-only',
  },
})
/** The audit lines written so far. */
const auditLines = (): any[] => (existsSync(join(dir, 'audit.jsonl')) ? readFileSync(join(dir, 'audit.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [])
const startCount = () => (existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n').filter(Boolean).length : 0)

/** An SDK 2.x client over stdio to `codecall serve`, in `mode`; `answer` makes it declare elicitation. */
async function stdioClient(mode: Mode, answer?: (message: string) => Answer, configFile = config) {
  const asked: string[] = []
  const client = new Client({ name: 'modern-test', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities: answer ? { elicitation: { form: {} } } : {} })
  if (answer) {
    client.setRequestHandler('elicitation/create', async (request: any) => {
      asked.push(request.params.message)
      return answer(request.params.message)
    })
  }
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'serve', '--config', configFile], env: { ...(process.env as Record<string, string>), CODECALL_TEST_MARK: mark }, stderr: 'pipe' })
  await client.connect(transport)
  return { client, asked }
}

async function meta(client: Client, name: string, args: Record<string, unknown>) {
  const r: any = await client.callTool({ name, arguments: args })
  return r.structuredContent
}

/** The fixture's own count of calls per tool (a read-only tool: never asked about). */
async function calls(client: Client): Promise<Record<string, number>> {
  const r = await meta(client, 'codecall_execute', { script: "return await callTool('fx:calls', {})" })
  return r.result
}

afterAll(async () => {
  expect(await leftovers(mark)).toEqual([])
})

describe('stdio, a client pinned to 2026-07-28', () => {
  let client: Client
  let asked: string[]
  let answers: Answer[] = []
  beforeAll(async () => {
    const c = await stdioClient({ pin: MODERN }, () => answers.shift() ?? { action: 'decline' })
    client = c.client
    asked = c.asked
  })
  afterAll(async () => {
    await client?.close()
  })

  it('speaks the modern era; the meta-tool list carries a long ttlMs and the same list every time', async () => {
    expect(client.getProtocolEra()).toBe('modern')
    const list: any = await client.listTools()
    expect(list.tools.map((t: any) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', 'codecall_invoke', 'codecall_save'])
    expect(list.ttlMs).toBeGreaterThanOrEqual(60_000)
    expect(['public', 'private']).toContain(list.cacheScope)
    expect(((await client.listTools()) as any).tools).toEqual(list.tools)
  })

  it('search, describe, execute and invoke answer as they do for a legacy client', async () => {
    const found = await meta(client, 'codecall_search', { query: 'echo the given text back' })
    expect(found.tools[0].name).toBe('fx:echo')
    const described = await meta(client, 'codecall_describe', { toolNames: ['fx:echo'] })
    expect(described.tools[0]).toMatchObject({ name: 'fx:echo', inputSchema: { properties: { text: { type: 'string' } } } })
    const ran = await meta(client, 'codecall_execute', { script: "return (await callTool('fx:echo', { text: 'hi' })).echoed" })
    expect(ran).toMatchObject({ status: 'ok', result: 'hi' })
    // §12: a handle a client holds across requests, that no one else can guess.
    expect(ran.stats.executionId).toMatch(/^exec-[0-9a-f]{32}$/)
    const invoked = await meta(client, 'codecall_invoke', { tool: 'fx:echo', input: { text: 'yo' } })
    expect(invoked).toMatchObject({ status: 'ok', result: { echoed: 'yo' } })
  })

  it('saves by executionId in a later request (no session: the same principal)', async () => {
    const ran = await meta(client, 'codecall_execute', { script: "return (await callTool('fx:echo', { text: input.word })).echoed", input: { word: 'x' } })
    expect(ran.status).toBe('ok')
    const saved = await meta(client, 'codecall_save', { name: 'echo-word', description: 'Echo a word', executionId: ran.stats.executionId })
    expect(saved).toMatchObject({ name: 'saved:echo-word', version: 1 })
    const again = await meta(client, 'codecall_execute', { scriptName: 'echo-word', input: { word: 'again' } })
    expect(again).toMatchObject({ status: 'ok', result: 'again' })
  })

  it('approvals by input_required: the retry goes on with the same execution; no call runs twice', async () => {
    const before = await calls(client)
    answers = [{ action: 'accept', content: { always: false } }]
    asked.length = 0
    const r = await meta(client, 'codecall_execute', {
      script: "const a = await callTool('fx:repo_get', { repo: 'r' }); const b = await callTool('fx:repo_delete', { repo: 'r' }); return [a.done, b.done]",
    })
    expect(r).toMatchObject({ status: 'ok', result: ['repo_get', 'repo_delete'] })
    expect(asked).toHaveLength(1)
    expect(asked[0]).toContain("the tool 'repo_delete' of the MCP server 'fx'")
    const after = await calls(client)
    expect((after.repo_get ?? 0) - (before.repo_get ?? 0)).toBe(1)
    expect((after.repo_delete ?? 0) - (before.repo_delete ?? 0)).toBe(1)
  })

  it('approve_always holds for the rest of the run; a later call of another tool asks again in a further round', async () => {
    const before = await calls(client)
    answers = [{ action: 'accept', content: { always: true } }, { action: 'accept' }]
    asked.length = 0
    const r = await meta(client, 'codecall_execute', {
      script: "await callTool('fx:repo_delete', { repo: 'a' }); await callTool('fx:repo_delete', { repo: 'b' }); await callTool('fx:repo_touch', {}); return 'done'",
    })
    expect(r).toMatchObject({ status: 'ok', result: 'done' })
    expect(asked).toHaveLength(2)
    expect(asked[1]).toContain("'repo_touch'")
    const after = await calls(client)
    expect((after.repo_delete ?? 0) - (before.repo_delete ?? 0)).toBe(2)
    expect((after.repo_touch ?? 0) - (before.repo_touch ?? 0)).toBe(1)
  })

  it('list changes reach a subscriptions/listen stream', async () => {
    const changed: number[] = []
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed.push(Date.now())
    })
    const subscription = await client.listen({ toolsListChanged: true })
    try {
      expect(subscription.honoredFilter.toolsListChanged).toBe(true)
      await meta(client, 'codecall_execute', { script: "return await callTool('fx:add_tool', { name: 'added_over_stdio' })" })
      await waitFor(() => changed.length > 0, 15_000, 'a tools/list_changed on the listen stream')
      expect((await meta(client, 'codecall_search', { query: 'added_over_stdio' })).tools.map((t: any) => t.name)).toContain('fx:added_over_stdio')
    } finally {
      await subscription.close()
    }
  })

  it('notifications/cancelled ends the execution (EXECUTION_ABORTED), not its timeout', async () => {
    const script = "/* stdio cancel */ await callTool('fx:hang', {}); return 'never'"
    const controller = new AbortController()
    const pending = client.callTool({ name: 'codecall_execute', arguments: { script } }, { signal: controller.signal }).catch((e) => e)
    await new Promise((r) => setTimeout(r, 500))
    controller.abort()
    await pending
    const line = await waitFor(() => auditLines().find((l) => l.codeLength === script.length), 9_000, 'the cancelled execution to end')
    expect(line.errorCode).toBe('EXECUTION_ABORTED')
  })

  it('a declined call never reaches the tool; the script can go on', async () => {
    const before = await calls(client)
    answers = [{ action: 'decline' }]
    const r = await meta(client, 'codecall_execute', {
      script: "const r = await call_tool('fx', 'repo_delete', { repo: 'z' }); return r.ok ? 'ran' : r.error.code + ': ' + r.error.message",
    })
    expect(r.status).toBe('ok')
    expect(r.result).toMatch(/^ACCESS_DENIED: .*declined by the user/)
    expect((await calls(client)).repo_delete ?? 0).toBe(before.repo_delete ?? 0)
  })
})

describe('stdio, other eras and clients', () => {
  it('a modern client that cannot elicit gets whenUnavailable (deny), nothing asked, nothing run', async () => {
    const { client } = await stdioClient({ pin: MODERN })
    try {
      const before = await calls(client)
      const r = await meta(client, 'codecall_execute', { script: "await callTool('fx:repo_delete', { repo: 'q' })" })
      expect(r.status).toBe('tool_error')
      expect(r.error.code).toBe('ACCESS_DENIED')
      expect(r.error.message).toContain('the client cannot ask for approval')
      expect((await calls(client)).repo_delete ?? 0).toBe(before.repo_delete ?? 0)
    } finally {
      await client.close()
    }
  })

  it('auto mode speaks modern; its probe process starts no upstream (one upstream start per connect)', async () => {
    const before = startCount()
    const { client, asked } = await stdioClient('auto', () => ({ action: 'accept' }))
    try {
      expect(client.getProtocolEra()).toBe('modern')
      const r = await meta(client, 'codecall_execute', { script: "return (await callTool('fx:repo_delete', { repo: 'auto' })).done" })
      expect(r).toMatchObject({ status: 'ok', result: 'repo_delete' })
      expect(asked).toHaveLength(1)
      expect(startCount() - before).toBe(1)
    } finally {
      await client.close()
    }
  })

  it('a legacy client of the SDK 2.x is asked with elicitation/create, as before', async () => {
    const { client, asked } = await stdioClient('legacy', () => ({ action: 'accept' }))
    try {
      expect(client.getProtocolEra()).toBe('legacy')
      const r = await meta(client, 'codecall_execute', { script: "return (await callTool('fx:repo_delete', { repo: 'legacy' })).done" })
      expect(r).toMatchObject({ status: 'ok', result: 'repo_delete' })
      expect(asked).toHaveLength(1)
    } finally {
      await client.close()
    }
  })
})

describe('starting costs nothing', () => {
  /** Sends one JSON-RPC line to a fresh `codecall serve` over stdio, reads the answer, closes stdin. */
  function probe(message: unknown, configFile: string) {
    return new Promise<any>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, 'serve', '--config', configFile], { env: { ...process.env, CODECALL_TEST_MARK: mark }, stdio: ['pipe', 'pipe', 'pipe'] })
      let out = ''
      const timer = setTimeout(() => reject(new Error('no answer')), 20_000)
      child.stdout.on('data', (c) => {
        out += c
        const line = out.split('\n')[0]
        if (out.includes('\n')) {
          clearTimeout(timer)
          child.stdin.end()
          child.on('exit', () => resolve(JSON.parse(line)))
        }
      })
      child.stdin.write(`${JSON.stringify(message)}\n`)
    })
  }

  it('server/discover and initialize start no upstream and open no store', async () => {
    const own = tempDir()
    const ownStore = join(own, 'never.db')
    const file = writeConfig(own, { mcpServers: { fx: upstream }, codecall: { scripts: { store: ownStore } } })
    const before = startCount()
    const discover = await probe(
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } } },
      file,
    )
    expect(discover.result.supportedVersions).toContain(MODERN)
    expect(discover.result.instructions).toContain('codecall_save')
    const init = await probe({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'p', version: '1' } } }, file)
    expect(init.result.serverInfo.name).toBe('codecall')
    expect(startCount()).toBe(before)
    expect(existsSync(ownStore)).toBe(false)
  })
})

describe('Streamable HTTP', () => {
  let url: string
  let stop: () => void
  const token = 'http-token-for-the-modern-spec'
  beforeAll(async () => {
    const cli = startCli(['serve', '--config', config, '--http', '0', '--token', token], { env: { CODECALL_TEST_MARK: mark }, ready: /listening on (\S+)/ })
    url = (await cli.ready)[1]
    stop = () => cli.child.kill('SIGTERM')
  })
  afterAll(async () => {
    stop?.()
  })

  async function httpClient(mode: Mode, answer?: () => Answer) {
    const asked: string[] = []
    const client = new Client({ name: 'modern-http', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities: answer ? { elicitation: { form: {} } } : {} })
    if (answer) {
      client.setRequestHandler('elicitation/create', async (request: any) => {
        asked.push(request.params.message)
        return answer()
      })
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
    return { client, asked }
  }

  for (const mode of [{ pin: MODERN }, 'auto', 'legacy'] as Mode[]) {
    it(`${JSON.stringify(mode)}: search, execute, approvals`, async () => {
      const { client, asked } = await httpClient(mode, () => ({ action: 'accept', content: { always: true } }))
      try {
        expect(client.getProtocolEra()).toBe(mode === 'legacy' ? 'legacy' : 'modern')
        expect((await meta(client, 'codecall_search', { query: 'echo the given text back' })).tools[0].name).toBe('fx:echo')
        const r = await meta(client, 'codecall_execute', {
          script: "await callTool('fx:repo_delete', { repo: 'h1' }); await callTool('fx:repo_delete', { repo: 'h2' }); return (await callTool('fx:echo', { text: 'ok' })).echoed",
        })
        expect(r).toMatchObject({ status: 'ok', result: 'ok' })
        expect(asked).toHaveLength(1)
      } finally {
        await client.close()
      }
    })
  }

  it('list changes reach a subscriptions/listen stream over HTTP', async () => {
    const { client } = await httpClient({ pin: MODERN })
    const changed: number[] = []
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed.push(Date.now())
    })
    const subscription = await client.listen({ toolsListChanged: true })
    try {
      await meta(client, 'codecall_execute', { script: "return await callTool('fx:add_tool', { name: 'added_over_http' })" })
      await waitFor(() => changed.length > 0, 15_000, 'a tools/list_changed on the listen stream')
    } finally {
      await subscription.close()
      await client.close()
    }
  })

  /** One raw 2026-07-28 `tools/call` over HTTP; the JSON-RPC answer (JSON or the last SSE event). */
  async function rawCall(name: string, args: unknown, extra: Record<string, unknown> = {}, capabilities: unknown = { elicitation: { form: {} } }, base = url, bearer = token) {
    const body = {
      jsonrpc: '2.0',
      id: Math.floor(Math.random() * 1e9),
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        ...extra,
        _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': capabilities, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' } },
      },
    }
    const response = await fetch(base, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${bearer}`,
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify(body),
    })
    const text = await response.text()
    if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
      return events[events.length - 1]
    }
    return JSON.parse(text)
  }

  const deleting = { script: "await callTool('fx:repo_delete', { repo: 'sealed' }); return 'deleted'" }
  const deletes = async () => (await rawCall('codecall_execute', { script: "return (await callTool('fx:calls', {})).repo_delete ?? 0" })).result.structuredContent.result

  it('input_required carries one form elicitation per pending call and a sealed requestState', async () => {
    const first = await rawCall('codecall_execute', deleting)
    expect(first.result.resultType).toBe('input_required')
    const keys = Object.keys(first.result.inputRequests)
    expect(keys).toHaveLength(1)
    expect(first.result.inputRequests[keys[0]]).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', requestedSchema: { properties: { always: { type: 'boolean' } } } } })
    expect(typeof first.result.requestState).toBe('string')
    // Nothing a tool returned is in it (it names the run; it is sealed, not encrypted).
    expect(Buffer.from(first.result.requestState.split('.')[1], 'base64url').toString()).not.toContain('deleted')
  })

  it('forged, altered, other arguments, reused and foreign states are refused (ERR_INVALID_ARG) and run nothing', async () => {
    const before = await deletes()
    const first = await rawCall('codecall_execute', deleting)
    const state: string = first.result.requestState
    const key = Object.keys(first.result.inputRequests)[0]
    const yes = { inputResponses: { [key]: { action: 'accept', content: {} } } }
    const refused = (r: any) => {
      expect(r.result.isError).toBe(true)
      expect(r.result.structuredContent.error.code).toBe('ERR_INVALID_ARG')
      return r.result.structuredContent.error.message as string
    }
    // Altered: one character of the payload changed.
    const [p, body, tag] = state.split('.')
    const altered = `${p}.${body.slice(0, -2)}${body.at(-2) === 'A' ? 'B' : 'A'}${body.at(-1)}.${tag}`
    expect(refused(await rawCall('codecall_execute', deleting, { ...yes, requestState: altered }))).toMatch(/forged or altered/)
    expect(refused(await rawCall('codecall_execute', deleting, { ...yes, requestState: 'not-a-state' }))).toMatch(/not a state this server issued/)
    // Other arguments than the state was issued for.
    expect(refused(await rawCall('codecall_execute', { script: "return 'other'" }, { ...yes, requestState: state }))).toMatch(/other arguments/)
    // Another tool.
    expect(refused(await rawCall('codecall_invoke', { tool: 'fx:repo_delete', input: {} }, { ...yes, requestState: state }))).toMatch(/another tool/)
    expect(await deletes()).toBe(before)
    // The right retry runs the call once; the same state again is spent.
    const done = await rawCall('codecall_execute', deleting, { ...yes, requestState: state })
    expect(done.result.structuredContent).toMatchObject({ status: 'ok', result: 'deleted' })
    expect(refused(await rawCall('codecall_execute', deleting, { ...yes, requestState: state }))).toMatch(/already used|no such run/)
    expect(await deletes()).toBe(before + 1)
  })

  it('a state sealed by a gateway with another key is refused', async () => {
    const own = tempDir()
    const other = writeConfig(own, { mcpServers: { fx: upstream }, codecall: { approval: { ask: ['fx:repo_delete'] }, stateKey: 'another-key-entirely-123456' } })
    const cli = startCli(['serve', '--config', other, '--http', '0', '--token', token], { env: { CODECALL_TEST_MARK: mark }, ready: /listening on (\S+)/ })
    try {
      const otherUrl = (await cli.ready)[1]
      const first = await rawCall('codecall_execute', deleting, {}, undefined, otherUrl)
      expect(first.result.resultType).toBe('input_required')
      const key = Object.keys(first.result.inputRequests)[0]
      const r = await rawCall('codecall_execute', deleting, { inputResponses: { [key]: { action: 'accept' } }, requestState: first.result.requestState })
      expect(r.result.structuredContent.error).toMatchObject({ code: 'ERR_INVALID_ARG' })
      expect(r.result.structuredContent.error.message).toMatch(/forged or altered/)
    } finally {
      cli.child.kill('SIGTERM')
      await cli.exited
    }
  })

  it('a modern request without logLevel gets no log messages; a request that asks gets them on its own stream', async () => {
    const script = "mcpLog('info', 'hello from the plan'); return 1"
    const quiet = await fetchAll({ script }, undefined)
    expect(quiet.filter((m: any) => m.method === 'notifications/message')).toEqual([])
    const loud = await fetchAll({ script }, 'debug')
    expect(loud.some((m: any) => m.method === 'notifications/message' && JSON.stringify(m.params).includes('hello from the plan'))).toBe(true)
  })

  it("progress travels on the call's own response; results carry the server's serverInfo", async () => {
    const messages = await fetchAll({ script: "return await callTool('fx:progress', { steps: 3 })" }, undefined, 'tok-1')
    const progress = messages.filter((m: any) => m.method === 'notifications/progress')
    expect(progress.length).toBeGreaterThanOrEqual(3)
    for (const p of progress) expect(p.params.progressToken).toBe('tok-1')
    const last = messages[messages.length - 1]
    expect(last.result.structuredContent).toMatchObject({ status: 'ok', result: { steps: 3 } })
    expect(last.result.resultType).toBe('complete')
    expect(last.result._meta?.['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'codecall' })
  })

  /** Every JSON-RPC message of one modern execute over HTTP (an SSE stream when it sends more than its result). */
  async function fetchAll(args: unknown, logLevel: string | undefined, progressToken?: string) {
    const meta: Record<string, unknown> = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} }
    if (logLevel) meta['io.modelcontextprotocol/logLevel'] = logLevel
    if (progressToken) meta.progressToken = progressToken
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'codecall_execute' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'codecall_execute', arguments: args, _meta: meta } }),
    })
    const text = await response.text()
    if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
    }
    return [JSON.parse(text)]
  }

  it('closing the request stream ends its execution (EXECUTION_ABORTED)', async () => {
    const HTTP_HANG = "/* closed over HTTP, a longer comment */ await callTool('fx:hang', {}); return 'never'"
    const controller = new AbortController()
    const pending = fetch(url, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'codecall_execute' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'codecall_execute', arguments: { script: HTTP_HANG }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    }).catch((e) => e)
    await new Promise((r) => setTimeout(r, 500))
    controller.abort()
    await pending
    // Its audit line: ended by the close (aborted, or its upstream call cancelled), not by its timeout.
    const line = await waitFor(() => auditLines().find((l) => l.codeLength === HTTP_HANG.length), 9_000, 'the aborted execution to end')
    expect(line.errorCode).toBe('EXECUTION_ABORTED')
    // The gateway goes on answering.
    const r = await rawCall('codecall_execute', { script: "return (await callTool('fx:echo', { text: 'after' })).echoed" }, {}, {})
    expect(r.result.structuredContent).toMatchObject({ status: 'ok', result: 'after' })
  })
})
