// Optional means optional: every optional argument of every sandbox global and exported API works
// when omitted, `undefined` or `null` (a missing mcpLog metadata argument once failed the whole
// script). And nothing a script returns vanishes: keys and values with lone surrogates, NUL and
// astral characters all arrive (lone surrogates as U+FFFD). Both isolation modes.
import { afterAll, describe, expect, it } from 'vitest'
import { CodeCall, Sandbox, ToolIndex, validate } from '../index.js'

const sandboxes = { thread: new Sandbox({ isolation: 'thread' }), process: new Sandbox({ isolation: 'process' }) }
afterAll(async () => {
  for (const s of Object.values(sandboxes)) await s.dispose()
})

describe.each(Object.entries(sandboxes))('sandbox globals (%s)', (_, sandbox) => {
  const run = async (script: string) => {
    const events: any[] = []
    const calls: any[] = []
    const r: any = await sandbox.execute(script, {
      callTool: (name, input) => (calls.push({ name, input }), { ok: true }),
      onEvent: (e) => events.push(e),
    })
    return { r, events, calls }
  }

  it.each([
    ['mcpLog without metadata', "mcpLog('info', 'm')"],
    ['mcpLog, metadata undefined', "mcpLog('info', 'm', undefined)"],
    ['mcpLog, metadata null', "mcpLog('info', 'm', null)"],
  ])('%s sends a log event without metadata', async (_, script) => {
    const { r, events } = await run(`${script}; return 1`)
    expect(r.status).toBe('ok')
    expect(events).toEqual([{ type: 'log', executionId: r.stats.executionId, level: 'info', message: 'm' }])
  })

  it('mcpLog with metadata keeps it', async () => {
    const { events } = await run(`mcpLog('warn', 'm', { a: 1 }); return 1`)
    expect(events[0].metadata).toEqual({ a: 1 })
  })

  it.each([
    ['omitted', "mcpNotify('e')"],
    ['undefined', "mcpNotify('e', undefined)"],
    ['null', "mcpNotify('e', null)"],
  ])('mcpNotify, payload %s', async (_, script) => {
    const { r, events } = await run(`${script}; return 1`)
    expect(r.status).toBe('ok')
    expect(events).toEqual([{ type: 'notify', executionId: r.stats.executionId, event: 'e', payload: null }])
  })

  it.each([
    ['input omitted', "callTool('t')"],
    ['input undefined', "callTool('t', undefined)"],
    ['input null', "callTool('t', null)"],
    ['options undefined', "callTool('t', {}, undefined)"],
    ['options null', "callTool('t', {}, null)"],
    ['options {}', "callTool('t', {}, {})"],
  ])('callTool, %s', async (_, call) => {
    const { r, calls } = await run(`return await ${call}`)
    expect(r).toMatchObject({ status: 'ok', result: { ok: true } })
    expect(calls).toEqual([{ name: 't', input: {} }])
  })

  it.each([
    ['omitted', '__safe_parallel([() => 1, () => 2])'],
    ['undefined', '__safe_parallel([() => 1, () => 2], undefined)'],
    ['null', '__safe_parallel([() => 1, () => 2], null)'],
    ['{}', '__safe_parallel([() => 1, () => 2], {})'],
  ])('__safe_parallel, options %s', async (_, call) => {
    const { r } = await run(`return await ${call}`)
    expect(r).toMatchObject({ status: 'ok', result: [1, 2] })
  })

  it('console.* with no arguments, getTool with none', async () => {
    const { r } = await run(`console.log(); console.warn(); return [getTool(), getTool(undefined), getTool(null)]`)
    expect(r).toMatchObject({ status: 'ok', result: [null, null, null], logs: ['', '[warn] '] })
  })
})

describe.each(Object.entries(sandboxes))('host members (%s)', (_, sandbox) => {
  const script = "let r = 'called'; try { await callTool('x:t') } catch (e) { r = e.code } return [r, getTool('x:t')]"
  it.each([
    ['omitted', {}],
    ['undefined', { deniedTools: undefined }],
    ['null', { deniedTools: null }],
    ['{}', { deniedTools: {} }],
  ])('deniedTools %s denies nothing', async (_, extra) => {
    const r: any = await sandbox.execute(script, { callTool: () => ({ ok: true }), getTool: (n: string) => ({ name: n }), ...(extra as object) })
    expect(r.result).toEqual(['called', { name: 'x:t' }])
  })

  it('deniedTools refuses matching tools with the reason, and getTool answers null without asking', async () => {
    const asked: string[] = []
    const r: any = await sandbox.execute(script, {
      callTool: () => ({ ok: true }),
      getTool: (n: string) => (asked.push(n), { name: n }),
      deniedTools: { 'x:*': 'server x is off limits' },
    })
    expect(r.result).toEqual(['ACCESS_DENIED', null])
    expect(asked).toEqual([])
  })

  it.each([
    [[], /host\.deniedTools must be an object/],
    ['x:*', /host\.deniedTools must be an object/],
    [{ 'x:*': 1 }, /host\.deniedTools\['x:\*'\] must be a string/],
  ])('deniedTools %j is an ERR_INVALID_ARG', (denied, message) => {
    expect(() => sandbox.execute('1', { deniedTools: denied as any })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(message) }))
  })
})

describe('exported APIs: optional arguments omitted, undefined or null', () => {
  it('Sandbox, execute', async () => {
    for (const options of [undefined, null]) {
      const s = new Sandbox(options as any)
      try {
        for (const host of [undefined, null]) {
          for (const execOptions of [undefined, null]) {
            expect(((await s.execute('return 2', host as any, execOptions as any)) as any).result).toBe(2)
          }
        }
      } finally {
        await s.dispose()
      }
    }
  })

  it('validate, ToolIndex, CodeCall', async () => {
    for (const none of [undefined, null]) {
      expect(validate('1', none as any).ok).toBe(true)
      const index = new ToolIndex(none as any)
      index.upsert([{ name: 'a:b', description: 'find things' }])
      expect(index.search('find', none as any).map((h) => h.name)).toEqual(['a:b'])
      const cc = new CodeCall(none as any)
      try {
        cc.setTools([{ name: 'x', description: 'find things' }])
        expect(cc.search({ query: 'find' }).tools.map((t) => t.name)).toEqual(['x'])
      } finally {
        await cc.dispose()
      }
    }
  })

  it("a tool's server words (IndexedTool.server, ToolDefinition.server): omitted, undefined, null, or parts of them", async () => {
    const variants: any[] = [
      {},
      { server: undefined },
      { server: null },
      { server: {} },
      { server: { title: null, description: undefined, instructions: null } },
      { server: { title: 'Things', description: 'Finds things', instructions: 'Use find. '.repeat(2000) } },
    ]
    for (const extra of variants) {
      const index = new ToolIndex({ semantic: false })
      index.upsert([{ name: 'a:b', description: 'find things', ...extra }])
      expect(index.search('find').map((h) => h.name)).toEqual(['a:b'])
      const cc = new CodeCall({ search: { semantic: false } })
      try {
        cc.setTools([{ name: 'x', description: 'find things', ...extra }])
        expect(cc.search({ query: 'find' }).tools.map((t) => t.name)).toEqual(['x'])
        // Search metadata only: never listed or described.
        expect(JSON.stringify(cc.describe({ toolNames: ['x'] }))).not.toContain('Finds things')
      } finally {
        await cc.dispose()
      }
    }
    for (const server of ['words', 1, ['a'], { title: 1 }, { instructions: {} }]) {
      expect(() => new ToolIndex({ semantic: false }).upsert([{ name: 'a', server } as any])).toThrow(/server/)
      const cc = new CodeCall({ search: { semantic: false } })
      try {
        expect(() => cc.setTools([{ name: 'x', server } as any])).toThrow(/server/)
      } finally {
        await cc.dispose()
      }
    }
  })
})

/** Small deterministic PRNG, so a failure names its seed. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x7fffffff
  }
}
const ALPHABET = ['a', 'Z', '0', ' ', '\u0000', '\uD800', '\uDBFF', '\uDC00', '\uDFFF', '😀', 'é', '"', '\\', '\n', '__proto__']
const randomString = (next: () => number) => Array.from({ length: 1 + Math.floor(next() * 6) }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]).join('')
const wellFormed = (s: string) => (s as any).toWellFormed() as string

describe.each(Object.entries(sandboxes))('nothing returned vanishes (%s)', (_, sandbox) => {
  it("a key with a lone surrogate arrives with U+FFFD (issue 15's case)", async () => {
    const r: any = await sandbox.execute(`const o = {}; o['k\\uD800'] = 'v'; return o`)
    expect(r.result).toEqual({ 'k\uFFFD': 'v' })
  })

  it.each([1, 2, 3, 4, 5, 6, 7, 8])('random keys and values, seed %i', async (seed) => {
    const next = rng(seed)
    const entries = Array.from({ length: 20 }, () => [randomString(next), randomString(next)] as [string, string])
    const r: any = await sandbox.execute('const o = Object.create(null); input.forEach(([k, v]) => { o[k] = v }); return { o, list: input.map(([, v]) => v) }', undefined, { input: entries })
    expect(r.status).toBe('ok')
    const expected: Record<string, string> = {}
    for (const [k, v] of entries) Object.defineProperty(expected, wellFormed(k), { value: wellFormed(v), enumerable: true, writable: true, configurable: true })
    expect(r.result.list).toEqual(entries.map(([, v]) => wellFormed(v)))
    expect(Object.keys(r.result.o).sort()).toEqual(Object.keys(expected).sort())
    for (const k of Object.keys(expected)) expect(r.result.o[k]).toBe(expected[k])
  })
})

describe('gateway and adapter APIs: optional arguments omitted, undefined or null', () => {
  it('parseConfig, loadConfig, RequestScope, Gateway (options, overrides)', async () => {
    const { parseConfig, loadConfig, RequestScope, Gateway } = await import('../lib/gateway/index.mjs')
    const { writeFileSync, mkdtempSync } = await import('node:fs')
    const { join } = await import('node:path')
    const { tmpdir } = await import('node:os')
    const file = join(mkdtempSync(join(tmpdir(), 'codecall-opt-')), 'codecall.json')
    writeFileSync(file, '{ "mcpServers": {} }')
    for (const none of [undefined, null]) {
      expect(parseConfig({ mcpServers: {} }, none as any).servers).toEqual([])
      expect(loadConfig(file, none as any).codecall.metaToolSeparator).toBe('_')
      expect(new RequestScope(none as any).sessionId).toBe(null)
      const gateway = new Gateway(parseConfig({ mcpServers: {} }), none as any)
      try {
        const r: any = await gateway.handle('codecall_execute', { script: 'return 3' }, new RequestScope(), none as any)
        expect(r.result).toBe(3)
        expect(typeof gateway.hostFor(new RequestScope(), none as any).callTool).toBe('function')
      } finally {
        await gateway.close()
      }
    }
  })

  it('codeMode(server, options) and codecallMeta(metadata, meta)', async () => {
    const { codeMode } = await import('../lib/adapters/mcp-sdk.mjs')
    const { codecallMeta } = await import('../tool-options.js')
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js')
    for (const none of [undefined, null]) {
      const server = new McpServer({ name: 'x', version: '1' })
      server.registerTool('a_b', { description: 'd', _meta: codecallMeta({ tags: ['t'] }, none as any) }, async () => ({ content: [] }))
      const cc = codeMode(server, none as any)
      try {
        expect(cc.metaTools().map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
      } finally {
        await cc.dispose()
      }
    }
  })
})
