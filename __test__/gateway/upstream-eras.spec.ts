// Upstreams of both protocol eras behind `codecall serve` (§6, §12): a modern-only server
// (`@modelcontextprotocol/server` 2.x with `legacy: 'reject'`, which refuses `initialize`) over
// stdio and over Streamable HTTP, beside legacy servers (the 1.x fixture, server-memory from npm).
// Search finds their tools, scripts call them, their list changes re-index (through
// `subscriptions/listen`), their progress and logs reach the client — and a stdio upstream starts
// one process per start: the era a client in auto mode learns from a throwaway probe process is
// remembered (in memory for restarts, in the cache folder across runs), so only the first start
// ever pays the probe.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { callMeta, connectStdio, isRunning, leftovers, newMark, ROOT, servers, tempDir, waitFor, writeConfig } from './helpers'

const MODERN = join(ROOT, '__test__/fixtures/gateway/modern-server.mjs')
const ONCE = join(ROOT, '__test__/fixtures/gateway/upstream-once.mjs')
const COUNT = join(ROOT, '__test__/fixtures/gateway/count-starts.mjs')
const run = promisify(execFile)

const mark = newMark()
const dir = tempDir()
const pidsFile = join(dir, 'modern-pids.txt')
let client: Client
let gatewayPid: number
let httpChild: ChildProcess
const listChanged: number[] = []
const messages: any[] = []

const pids = (file = pidsFile) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [])

/** The modern fixture over HTTP; resolves to its port. */
function modernOverHttp() {
  httpChild = spawn(process.execPath, [MODERN, '--http', '0', '--name', 'modern-http'], {
    env: { ...process.env, CODECALL_TEST_MARK: mark },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  return new Promise<number>((resolve, reject) => {
    let err = ''
    httpChild.stderr!.on('data', (c) => {
      err += c
      const m = /listening (\d+)/.exec(err)
      if (m) resolve(Number(m[1]))
    })
    httpChild.on('exit', () => reject(new Error(`modern fixture over HTTP exited: ${err}`)))
  })
}

const modernStdio = (file: string, ...args: string[]) => ({
  command: process.execPath,
  args: [MODERN, '--pids', file, ...args],
  env: { CODECALL_TEST_MARK: mark },
})

beforeAll(async () => {
  const port = await modernOverHttp()
  const config = writeConfig(dir, {
    mcpServers: {
      modern: modernStdio(pidsFile),
      web: { url: `http://127.0.0.1:${port}/mcp` },
      memory: servers.memory(mark, join(dir, 'memory.jsonl')),
      fx: servers.fixture(mark),
    },
    codecall: { callTimeoutMs: 5000, cacheDir: false, vm: { preset: 'secure', timeoutMs: 15_000 } },
  })
  const c = await connectStdio(config, [], { CODECALL_TEST_MARK: mark })
  client = c.client
  gatewayPid = c.pid
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged.push(Date.now())
  })
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    messages.push(n.params)
  })
}, 60_000)

afterAll(async () => {
  await client?.close()
  if (gatewayPid) await waitFor(() => !isRunning(gatewayPid), 10_000, 'the gateway to exit')
  httpChild?.kill('SIGTERM')
  expect(await leftovers(mark)).toEqual([])
})

const execute = (script: string, extra: Record<string, unknown> = {}, options = {}) => callMeta(client, 'codecall_execute', { script, ...extra }, options)
const search = async (query: string, topK = 20) => ((await callMeta(client, 'codecall_search', { query, topK })).tools as any[]).map((t) => t.name)

describe('a modern-only upstream behind codecall serve', () => {
  it('search finds its tools, over stdio and over HTTP, beside the legacy servers’ tools', async () => {
    const names = await search('echo the given text back')
    expect(names).toEqual(expect.arrayContaining(['modern:echo', 'web:echo', 'fx:echo']))
    const memory = await search('create entities in the knowledge graph')
    expect(memory).toContain('memory:create_entities')
  })

  it('lists each server with the era it speaks', async () => {
    const r = await execute(`return (await mcp.listServers()).map((s) => [s.name, s.status, s.era, s.transport])`)
    expect(r.status).toBe('ok')
    expect(r.result).toEqual(
      expect.arrayContaining([
        ['modern', 'connected', 'modern', 'stdio'],
        ['web', 'connected', 'modern', 'http'],
        ['memory', 'connected', 'legacy', 'stdio'],
        ['fx', 'connected', 'legacy', 'stdio'],
      ]),
    )
  })

  it('an execute calls modern and legacy tools in one script', async () => {
    const r = await execute(`
      const a = await callTool('modern:echo', { text: 'over stdio' })
      const b = await callTool('web:echo', { text: 'over http' })
      await callTool('memory:create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['modern era'] }] })
      const graph = await callTool('memory:read_graph', {})
      const c = await call_tool('fx', 'echo', { text: 'legacy' })
      return { a, b, ada: graph.entities.find((e) => e.name === 'Ada').observations, c: c.result }`)
    expect(r.status).toBe('ok')
    expect(r.result).toEqual({
      a: { echoed: 'over stdio', server: 'modern-fixture' },
      b: { echoed: 'over http', server: 'modern-http' },
      ada: ['modern era'],
      c: { echoed: 'legacy', server: 'fixture' },
    })
  })

  it('passes a modern upstream’s progress and logs (asked for per request) through to the client', async () => {
    messages.length = 0
    const progress: any[] = []
    const r = await execute(`return await callTool('modern:progress', { steps: 3 })`, {}, { onprogress: (p: any) => progress.push(p) })
    expect(r.status).toBe('ok')
    expect(messages.filter((m) => m.logger === 'modern/worker').map((m) => m.data)).toEqual(['modern step 1', 'modern step 2', 'modern step 3'])
    expect(progress.map((p) => p.message)).toEqual(expect.arrayContaining([expect.stringContaining('modern:progress: step 3 (3/3)')]))
  })

  it('a cancelled call is cancelled at the modern upstream too', async () => {
    const r = await execute(`return await callTool('web:hang')`, {}, { timeout: 60_000 }).catch((e) => e)
    // callTimeoutMs (5 s) ends the call; the upstream's handler sees the abort.
    expect(r.status).toBe('tool_error')
    expect(r.error.message).toMatch(/MCP server 'web' did not answer tool 'hang' within 5000 ms/)
    const n = await execute(`return await callTool('web:cancelled')`)
    expect(n.result).toBeGreaterThanOrEqual(1)
  }, 30_000)

  for (const server of ['modern', 'web']) {
    it(`re-indexes ${server} on a list change it sends through subscriptions/listen, and passes it on`, async () => {
      const before = listChanged.length
      const r = await execute(`return await callTool('${server}:add_tool', { name: 'brand_new_${server}' })`)
      expect(r.status).toBe('ok')
      await waitFor(() => listChanged.length > before, 10_000, 'tools/list_changed from the gateway')
      await waitFor(async () => (await search(`added at run time brand_new_${server}`)).includes(`${server}:brand_new_${server}`), 10_000, 'the new tool in the index')
      const called = await execute(`return await callTool('${server}:brand_new_${server}')`)
      expect(called.result).toBe(`I am brand_new_${server}`)
    })
  }

  it('starts a stdio upstream once per start: the first start ever pays the era probe, a restart does not', async () => {
    // The first start: a throwaway probe process (it answers server/discover, and is gone), then
    // the server.
    const [probe, first] = pids()
    expect(pids()).toHaveLength(2)
    expect(isRunning(probe)).toBe(false)
    const r = await execute(`return await callTool('modern:pid')`)
    expect(r.result).toBe(first)
    // The server dies; the next call restarts it, with the era it already knows: one process.
    process.kill(first, 'SIGKILL')
    await waitFor(() => !isRunning(first), 5000, 'the modern fixture to be gone')
    await waitFor(async () => (await execute(`return await callTool('modern:pid')`)).status === 'ok', 10_000, 'the modern fixture to restart')
    const after = pids()
    expect(after).toHaveLength(3)
    const again = await execute(`return await callTool('modern:pid')`)
    expect(again.result).toBe(after[2])
  })
})

describe('era verdicts across gateway runs (the cache folder)', () => {
  const cacheDir = join(dir, 'cache')
  const once = async (spec: unknown) => {
    const { stdout } = await run(process.execPath, [ONCE, JSON.stringify(spec), cacheDir], { env: { ...process.env, CODECALL_TEST_MARK: mark }, timeout: 30_000 })
    return JSON.parse(stdout)
  }
  const verdictsFile = join(cacheDir, 'upstream-eras.json')

  it('a modern-only stdio server: two processes on the first run, one on every later run', async () => {
    const file = join(dir, 'runs-modern.txt')
    const spec = { name: 'm', transport: 'stdio', ...modernStdio(file) }
    expect(await once(spec)).toMatchObject({ status: 'connected', era: 'modern', tools: expect.arrayContaining(['echo', 'add_tool']) })
    expect(pids(file)).toHaveLength(2)
    for (let i = 0; i < 2; i++) {
      expect(await once(spec)).toMatchObject({ status: 'connected', era: 'modern' })
      expect(pids(file)).toHaveLength(3 + i)
    }
    const stored = Object.values(JSON.parse(readFileSync(verdictsFile, 'utf8')).verdicts) as any[]
    expect(stored).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'modern', discover: expect.objectContaining({ supportedVersions: ['2026-07-28'] }) })]))
    // Nothing of the server's environment is stored, only a hash of what starts it.
    expect(readFileSync(verdictsFile, 'utf8')).not.toContain(mark)
  })

  it('a legacy stdio server (server-memory from npm, SDK 1.x): likewise', async () => {
    const file = join(dir, 'runs-memory.txt')
    const memory = servers.memory(mark, join(dir, 'memory-runs.jsonl'))
    const spec = { name: 'l', transport: 'stdio', ...memory, args: ['--import', COUNT, ...memory.args], env: { ...memory.env, CODECALL_COUNT_STARTS: file } }
    expect(await once(spec)).toMatchObject({ status: 'connected', era: 'legacy', tools: expect.arrayContaining(['create_entities']) })
    expect(pids(file)).toHaveLength(2)
    expect(await once(spec)).toMatchObject({ status: 'connected', era: 'legacy' })
    expect(pids(file)).toHaveLength(3)
    const stored = Object.values(JSON.parse(readFileSync(verdictsFile, 'utf8')).verdicts) as any[]
    expect(stored.map((v) => v.kind).sort()).toEqual(['legacy', 'modern'])
  })

  it('a remembered verdict that went stale is forgotten, and the era asked again, in the same start', async () => {
    const file = join(dir, 'runs-stale.txt')
    const spec = { name: 's', transport: 'stdio', ...modernStdio(file, '--name', 'stale') }
    expect(await once(spec)).toMatchObject({ era: 'modern' })
    expect(pids(file)).toHaveLength(2)
    // Say every server is legacy: the modern-only one refuses initialize.
    const data = JSON.parse(readFileSync(verdictsFile, 'utf8'))
    for (const v of Object.values(data.verdicts) as any[]) {
      v.kind = 'legacy'
      delete v.discover
    }
    writeFileSync(verdictsFile, JSON.stringify(data))
    expect(await once(spec)).toMatchObject({ status: 'connected', era: 'modern' })
    // The refused start, then the probe and the server.
    expect(pids(file)).toHaveLength(5)
    expect(await once(spec)).toMatchObject({ status: 'connected', era: 'modern' })
    expect(pids(file)).toHaveLength(6)
  })
})

describe('results of a modern upstream', () => {
  it('are relayed as the server sent them (its own keys, in its order; resultType is the wire’s, not the result’s)', async () => {
    const script = join(dir, 'as-sent.mjs')
    writeFileSync(
      script,
      `import { Upstream } from ${JSON.stringify(join(ROOT, 'lib/gateway/upstream.mjs'))}
const u = new Upstream({ name: 'm', transport: 'stdio', command: process.execPath, args: [${JSON.stringify(MODERN)}], env: { CODECALL_TEST_MARK: ${JSON.stringify(mark)} }, exclude: [] },
  { clientInfo: { name: 't', version: '1' }, startupTimeoutMs: 15000, callTimeoutMs: 5000, log: () => {}, onToolsChanged: () => {}, onLog: () => {} })
await u.start()
const r = await u.request('tools/call', { name: 'as_sent', arguments: {} })
process.stdout.write(JSON.stringify(r))
await u.close()
`,
    )
    const { stdout } = await run(process.execPath, [script], { timeout: 30_000 })
    const result = JSON.parse(stdout)
    expect(Object.keys(result)).toEqual(['_meta', 'content', 'zeta', 'alpha'])
    expect(result).toMatchObject({ zeta: 1, alpha: { nested: true }, content: [{ type: 'text', text: 'as sent' }], _meta: { 'example.com/own': 'meta' } })
    expect(result).not.toHaveProperty('resultType')
  })
})
