// `codecall serve --http`: Streamable HTTP at /mcp with a bearer token, many sessions sharing one
// engine and one set of upstream connections; upstreams over HTTP (Streamable HTTP, and an old
// SSE-only server through the fallback); SIGINT / SIGTERM close every upstream.
import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { callMeta, FIXTURE, isRunning, leftovers, markedProcesses, newMark, runCli, servers, startCli, tempDir, waitFor, writeConfig } from './helpers'

const mark = newMark()
const dir = tempDir()
const TOKEN = 'test-token-0123456789'
let url: string
let gateway: ReturnType<typeof startCli>
const httpUpstreams: ChildProcess[] = []

/** A fixture server over HTTP (`--http 0` or `--sse 0`); resolves to its port. */
function fixtureOverHttp(flag: '--http' | '--sse') {
  const child = spawn(process.execPath, [FIXTURE, flag, '0', '--name', flag.slice(2)], {
    env: { ...process.env, CODECALL_TEST_MARK: mark },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  httpUpstreams.push(child)
  return new Promise<number>((resolve, reject) => {
    let err = ''
    child.stderr!.on('data', (c) => {
      err += c
      const m = /listening (\d+)/.exec(err)
      if (m) resolve(Number(m[1]))
    })
    child.on('exit', () => reject(new Error(`fixture ${flag} exited: ${err}`)))
  })
}

async function connect(token: string | null = TOKEN) {
  const client = new Client({ name: 'http-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(url), token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {})
  await client.connect(transport)
  return { client, transport }
}

/** A raw POST (initialize unless `body` says otherwise) with the given headers; resolves to the status code. */
function post(headers: Record<string, string>, path = '/mcp', body?: string) {
  const target = new URL(url)
  return new Promise<number>((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on('error', reject)
    req.end(body ?? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }))
  })
}

beforeAll(async () => {
  const [httpPort, ssePort] = await Promise.all([fixtureOverHttp('--http'), fixtureOverHttp('--sse')])
  const config = writeConfig(dir, {
    mcpServers: {
      web: { url: `http://127.0.0.1:${httpPort}/mcp` },
      legacy: { url: `http://127.0.0.1:${ssePort}/sse`, headers: { 'X-Test': '${CODECALL_TEST_HEADER}' } },
      everything: servers.everything(mark),
      fx: servers.fixture(mark),
    },
    codecall: { directCalls: { enabled: true }, callTimeoutMs: 5000 },
  })
  gateway = startCli(['serve', '--config', config, '--http', '0'], {
    env: { CODECALL_TOKEN: TOKEN, CODECALL_TEST_MARK: mark, CODECALL_TEST_HEADER: 'yes' },
    ready: /listening on (http:\/\/\S+)/,
  })
  url = (await gateway.ready)[1]
})

afterAll(async () => {
  if (gateway.child.exitCode === null) {
    gateway.child.kill('SIGTERM')
    await gateway.exited
  }
  for (const c of httpUpstreams) c.kill('SIGTERM')
  expect(await leftovers(mark)).toEqual([])
})

describe('bearer token', () => {
  it('answers 401 without a token or with a wrong one', async () => {
    expect(await post({})).toBe(401)
    expect(await post({ authorization: 'Bearer wrong-token' })).toBe(401)
    expect(await post({ authorization: `Basic ${TOKEN}` })).toBe(401)
    await expect(connect(null)).rejects.toThrow()
    await expect(connect('nope')).rejects.toThrow()
  })

  it('accepts the right token (from CODECALL_TOKEN)', async () => {
    expect(await post({ authorization: `Bearer ${TOKEN}` })).toBe(200)
  })

  it('refuses DNS-rebinding hosts and foreign origins on loopback', async () => {
    expect(await post({ authorization: `Bearer ${TOKEN}`, host: 'evil.example:80' })).toBe(403)
    expect(await post({ authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' })).toBe(403)
    expect(await post({ authorization: `Bearer ${TOKEN}`, origin: 'http://localhost:5173' })).toBe(200)
  })

  it('opens a session only for an initialize request', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` }
    expect(await post(auth, '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))).toBe(400)
    expect(await post(auth, '/mcp', 'not json at all')).toBe(400)
    expect(await post(auth, '/mcp', JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/initialized' }]))).toBe(400)
    expect(await post(auth, '/mcp', 'x'.repeat(5 * 1024 * 1024))).toBe(413)
  })

  it('answers 404 off /mcp', async () => {
    expect(await post({ authorization: `Bearer ${TOKEN}` }, '/other')).toBe(404)
  })
})

describe('sessions', () => {
  it('serves two sessions at once on one engine and one set of upstreams', async () => {
    const a = await connect()
    const b = await connect()
    try {
      expect(a.transport.sessionId).toBeTruthy()
      expect(a.transport.sessionId).not.toBe(b.transport.sessionId)
      const { tools } = await a.client.listTools()
      expect(tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute', 'codecall_invoke'])
      const pid = `return (await callTool('fx:pid')).pid`
      const [ra, rb] = await Promise.all([callMeta(a.client, 'codecall_execute', { script: pid }), callMeta(b.client, 'codecall_execute', { script: pid })])
      expect(ra.status).toBe('ok')
      expect(ra.result).toBe(rb.result)
      const before = markedProcesses(mark).length
      const c = await connect()
      await callMeta(c.client, 'codecall_execute', { script: pid })
      expect(markedProcesses(mark).length).toBe(before)
      await c.client.close()
    } finally {
      await a.client.close()
      await b.client.close()
    }
  })

  it('passes an upstream list_changed on to every session', async () => {
    const a = await connect()
    const b = await connect()
    let changedA = 0
    let changedB = 0
    a.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changedA++)
    b.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changedB++)
    // The GET stream of each session carries notifications that belong to no request.
    await new Promise((r) => setTimeout(r, 200))
    const r = await callMeta(a.client, 'codecall_execute', { script: `return await callTool('web:add_tool', { name: 'web_late' })` })
    expect(r.status).toBe('ok')
    await waitFor(() => changedA > 0 && changedB > 0, 5000, 'list_changed in both sessions')
    const called = await callMeta(b.client, 'codecall_execute', { script: `return await callTool('web:web_late')` })
    expect(called.result).toEqual({ called: 'web_late' })
    await a.client.close()
    await b.client.close()
  })
})

describe('HTTP upstreams', () => {
  it('speaks Streamable HTTP, and falls back to SSE for an SSE-only server (headers from ${VAR})', async () => {
    const { client } = await connect()
    const r = await callMeta(client, 'codecall_execute', {
      script: `
        const servers = await mcp.listServers()
        const web = await callTool('web:echo', { text: 'over http' })
        const legacy = await callTool('legacy:echo', { text: 'over sse' })
        return { transports: servers.map((s) => s.name + '=' + s.transport + ':' + s.status).sort(), web: web.echoed, legacy: legacy.echoed }`,
    })
    expect(r.result).toEqual({
      transports: ['everything=stdio:connected', 'fx=stdio:connected', 'legacy=sse:connected', 'web=http:connected'],
      web: 'over http',
      legacy: 'over sse',
    })
    await client.close()
  })

  it('invokes one tool directly with codecall_invoke', async () => {
    const { client } = await connect()
    const r = await callMeta(client, 'codecall_invoke', { tool: 'everything:get-sum', input: { a: 2, b: 3 } })
    expect(r.status).toBe('ok')
    expect(JSON.stringify(r.result)).toContain('5')
    const denied = await callMeta(client, 'codecall_invoke', { tool: 'fx:config_set', input: {} })
    expect(denied.status).toBe('error')
    await client.close()
  })
})

describe('start-up refusals and shutdown', () => {
  it('refuses a non-loopback bind without a token', async () => {
    const file = writeConfig(dir, { mcpServers: {} }, 'empty.json')
    const r = await runCli(['serve', '--config', file, '--http', '0', '--host', '0.0.0.0'], { env: { CODECALL_TOKEN: '' } })
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/refusing to serve on non-loopback host 0\.0\.0\.0 without a token/)
  })

  it.each(['SIGTERM', 'SIGINT'] as const)('%s closes every upstream: no process left', async (signal) => {
    const own = newMark()
    const file = writeConfig(dir, {
      mcpServers: {
        a: servers.fixture(own),
        b: servers.everything(own),
        // A wrapper that starts a grandchild: the tree is closed, not just the child.
        c: { command: '/bin/sh', args: ['-c', `"${process.execPath}" "${FIXTURE}"; exit 0`], env: { CODECALL_TEST_MARK: own } },
      },
    }, `signal-${signal}.json`)
    const g = startCli(['serve', '--config', file, '--http', '0'], { env: { CODECALL_TEST_MARK: own }, ready: /listening on (\S+)/ })
    const url = (await g.ready)[1]
    // Nothing starts before a request needs the tools (§12): a 2026-07-28 tools/list starts them.
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} }
    const listed = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }),
    })
    expect(listed.status).toBe(200)
    await waitFor(() => /3 of 3 MCP servers connected/.test(g.stderr()), 30_000, 'the upstreams to start')
    const pids = markedProcesses(own)
    expect(pids.length).toBeGreaterThanOrEqual(4)
    g.child.kill(signal)
    const exit = await g.exited
    expect(exit.code).toBe(0)
    expect(await leftovers(own, 5000)).toEqual([])
    for (const pid of pids) expect(isRunning(pid)).toBe(false)
  })
})
