// Saved scripts (spec §11) through CodeCall's JavaScript API, in both isolations: save (by script
// and by executionId, per session), the saved:<name> tool in search/describe, runs by name, by
// invoke and from other scripts (time, budget and policy shared; depth and cycles refused), the
// errors of §11's last bullets, a host's own ScriptStore (also one that throws), and the optional
// options omitted, undefined and null.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, type CodeCallHost, type ExecuteEvent, type SavedScript, type ScriptStore } from '../../index.js'
import { expectInvalidArg } from '../helpers.js'

const tools = [
  {
    name: 'math:add',
    description: 'Add two numbers',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    annotations: { readOnlyHint: true },
  },
  { name: 'files:delete', description: 'Delete a file', annotations: { destructiveHint: true } },
]

const adder = {
  name: 'adder',
  description: 'Add input.a and input.b with the math tool',
  script: "const r = await callTool('math:add', { a: input.a, b: input.b }); return r.sum",
  inputSchema: { type: 'object', required: ['a', 'b'], properties: { a: { type: 'number' }, b: { type: 'number' } } },
}

function makeHost(extra: Partial<CodeCallHost> = {}) {
  const calls: string[] = []
  const metas: { executionId: string; parentExecutionId?: string }[] = []
  const events: ExecuteEvent[] = []
  const host: CodeCallHost = {
    callTool: (name, input: any, meta) => {
      calls.push(name)
      metas.push(meta)
      if (name === 'math:add') return { sum: input.a + input.b }
      return { ok: true }
    },
    onEvent: (e) => events.push(e),
    ...extra,
  }
  return { host, calls, events, metas }
}

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

for (const isolation of ['thread', 'process'] as const) {
  describe(`saved scripts (${isolation} isolation)`, () => {
    const make = (options: Record<string, unknown> = {}) => {
      const cc = new CodeCall({ scripts: { store: ':memory:' }, vm: { isolation }, ...options })
      cc.setTools(tools)
      return cc
    }

    it('saves a plan, finds it, describes it and runs it by name, by invoke and from a plan', async () => {
      const cc = make({ directCalls: { enabled: true } })
      const { host, calls, events, metas } = makeHost()
      expect(await cc.scripts!.save(adder)).toEqual({ name: 'saved:adder', version: 1 })
      const found = cc.search({ query: 'add two numbers together' }).tools
      expect(found.map((t) => t.name)).toContain('saved:adder')
      expect(found.find((t) => t.name === 'saved:adder')).toMatchObject({ appId: 'saved', source: 'saved' })
      const d = cc.describe({ toolNames: ['saved:adder'] }).tools[0] as any
      expect(d).toMatchObject({ name: 'saved:adder', appId: 'saved', version: 1, script: adder.script })
      expect(d.description).toBe(adder.description)
      expect(d.inputSchema).toEqual(adder.inputSchema)
      expect(d.typescript).toContain("callTool(name: 'saved:adder'")
      // Never in tools/list: found through search, like every indexed tool.
      expect(cc.listTools().map((t) => t.name)).not.toContain('saved:adder')

      const byName: any = await cc.execute({ scriptName: 'adder', input: { a: 2, b: 5 } }, host)
      expect(byName).toMatchObject({ status: 'ok', result: 7, saved: { name: 'saved:adder', version: 1 } })
      expect(byName.saved.codeSha256).toMatch(/^[0-9a-f]{64}$/)
      expect(await cc.invoke({ tool: 'saved:adder', input: { a: 1, b: 1 } }, host)).toMatchObject({ status: 'ok', result: 2 })
      const nested = await cc.execute({ script: "return (await callTool('saved:adder', { a: 10, b: 1 })) * 2" }, host)
      expect(nested).toMatchObject({ status: 'ok', result: 22 })
      // The host never saw the saved:… call itself, only the tool calls inside it.
      expect(calls.every((c) => c === 'math:add')).toBe(true)
      const inner = events.filter((e: any) => e.parentExecutionId === nested.stats.executionId)
      expect(inner.map((e) => e.type)).toEqual(['tool_call_start', 'tool_call_end'])
      expect((inner[0] as any).executionId).not.toBe(nested.stats.executionId)
      // Each run's id is its own and unguessable (§12), the nested one's too.
      expect(nested.stats.executionId).toMatch(/^exec-[0-9a-f]{32}$/)
      expect((inner[0] as any).executionId).toMatch(/^exec-[0-9a-f]{32}$/)
      // The host's callTool hears the same: its own executionId, the caller's as parentExecutionId.
      expect(metas.at(-1)).toMatchObject({ executionId: (inner[0] as any).executionId, parentExecutionId: nested.stats.executionId })
      expect(metas[0].parentExecutionId).toBeUndefined()
      await cc.dispose()
    })

    it('saves the plan that just ran by its executionId, per session, and versions each save', async () => {
      const cc = make({ scripts: { store: ':memory:', historySize: 2 } })
      const { host } = makeHost({ sessionId: 'a' } as any)
      const ran = await cc.execute({ script: 'const n: number = 4; return n * 2', language: 'typescript' }, host)
      const save = { name: 'eight', description: 'Eight', executionId: ran.stats.executionId }
      expect(await cc.handle('codecall:save', save, host)).toEqual({ name: 'saved:eight', version: 1 })
      expect((await cc.scripts!.get('eight'))?.language).toBe('typescript')
      // Another session cannot save it.
      await expect(cc.handle('codecall:save', save, { ...host, sessionId: 'b' } as any)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
      // Past historySize it is forgotten.
      await cc.execute({ script: 'return 1' }, host)
      await cc.execute({ script: 'return 2' }, host)
      await expect(cc.handle('codecall:save', save, host)).rejects.toThrow(/not one of this session's last executions/)
      expect(await cc.scripts!.save({ name: 'eight', description: 'Eight again', script: 'return 8' })).toEqual({ name: 'saved:eight', version: 2 })
      expect(await cc.execute({ scriptName: 'eight@1' }, host)).toMatchObject({ status: 'ok', result: 8 })
      expect((await cc.scripts!.list()).map((s) => `${s.name}@${s.version}`)).toEqual(['eight@2'])
      await cc.dispose()
    })

    it('refuses bad saves with ERR_INVALID_ARG or the validator\'s code, storing nothing', async () => {
      const cc = make({ vm: { isolation, maxScriptBytes: 200 } })
      const bad = [
        { name: 'Bad Name', description: 'd', script: 'return 1' },
        { name: 'ok', script: 'return 1' },
        { name: 'ok', description: 'd' },
        { name: 'ok', description: 'd', script: 'return 1', executionId: 'exec-1-1' },
        { name: 'ok', description: 'd', executionId: 'exec-9-9' },
        { name: 'ok', description: 'd', script: `return '${'x'.repeat(300)}'` },
        { name: 'ok', description: 'd', script: 'return 1', colour: 'red' },
      ]
      for (const input of bad) {
        await expect(cc.handle('codecall:save', input, makeHost().host)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
      }
      await expect(cc.scripts!.save({ name: 'ok', description: 'd', script: 'return (' })).rejects.toMatchObject({
        code: 'SYNTAX_ERROR',
        location: { line: 1 },
      })
      await expect(cc.scripts!.save({ name: 'ok', description: 'd', script: 'while (true) {}' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' })
      await expect(cc.scripts!.save({ name: 'ok', description: 'd', script: "return callTool('codecall:execute', {})" })).rejects.toMatchObject({
        code: 'SELF_REFERENCE_BLOCKED',
      })
      expect(await cc.scripts!.list()).toEqual([])
      await cc.dispose()
    })

    it('checks the input against the saved inputSchema, naming the path', async () => {
      const cc = make({ directCalls: { enabled: true } })
      await cc.scripts!.save(adder)
      const { host } = makeHost()
      await expect(cc.execute({ scriptName: 'adder', input: { a: 1 } }, host)).rejects.toMatchObject({
        code: 'ERR_INVALID_ARG',
        message: expect.stringMatching(/input\.b is required/),
      })
      await expect(cc.invoke({ tool: 'saved:adder', input: { a: 'x', b: 1 } }, host)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
      const r: any = await cc.execute({ script: "return await callTool('saved:adder', { a: 1, b: 'two' })" }, host)
      expect(r.status).toBe('tool_error')
      expect(r.error).toMatchObject({ code: 'TOOL_EXECUTION_ERROR', details: { code: 'ERR_INVALID_ARG' } })
      expect(r.error.message).toMatch(/input\.b/)
      await cc.dispose()
    })

    it('refuses cycles and nesting past maxDepth with ACCESS_DENIED naming the chain', async () => {
      const cc = make({ scripts: { store: ':memory:', maxDepth: 2 } })
      const { host } = makeHost()
      await cc.scripts!.save({ name: 'self', description: 'calls itself', script: "return await callTool('saved:self', {})" })
      const self: any = await cc.execute({ scriptName: 'self' }, host)
      expect(self.error).toMatchObject({ code: 'ACCESS_DENIED' })
      expect(self.error.message).toContain('saved:self@1 → saved:self')
      await cc.scripts!.save({ name: 'one', description: 'd', script: "return await callTool('saved:two', {})" })
      await cc.scripts!.save({ name: 'two', description: 'd', script: "return await callTool('saved:three', {})" })
      await cc.scripts!.save({ name: 'three', description: 'd', script: 'return 3' })
      // plan → one (1) → two (2) → three (3 > maxDepth 2).
      const deep: any = await cc.execute({ script: "return await callTool('saved:one', {})" }, host)
      expect(deep.error.code).toBe('TOOL_EXECUTION_ERROR')
      expect(JSON.stringify(deep.error)).toContain('"code":"ACCESS_DENIED"')
      expect(JSON.stringify(deep.error)).toContain('saved:one@1 → saved:two@1 → saved:three')
      // Run by name, `one` is depth 1 too: the same refusal.
      expect(JSON.stringify(await cc.execute({ scriptName: 'one' }, host))).toContain('ACCESS_DENIED')
      await cc.dispose()
    })

    it('shares the caller\'s maxToolCalls, allowedTools and time', async () => {
      const cc = make({ vm: { isolation, maxToolCalls: 4, timeoutMs: 400 } })
      const { host } = makeHost()
      await cc.scripts!.save({
        name: 'three-adds',
        description: 'Adds three times',
        script: "await callTool('math:add', {a:1,b:1}); await callTool('math:add', {a:1,b:1}); return (await callTool('math:add', {a:1,b:1})).sum",
      })
      // 1 own call + the saved:… call + 3 inside = 5 > 4.
      const over: any = await cc.execute({ script: "await callTool('math:add', {a:0,b:0}); return await callTool('saved:three-adds', {})" }, host)
      expect(JSON.stringify(over.error)).toContain('MAX_TOOL_CALLS_EXCEEDED')
      expect(await cc.execute({ script: "return await callTool('saved:three-adds', {})" }, host)).toMatchObject({ status: 'ok', result: 2 })
      // allowedTools binds the saved script too.
      const bound: any = await cc.execute({ script: "return await callTool('saved:three-adds', {})", allowedTools: ['saved:three-adds'] }, host)
      expect(JSON.stringify(bound.error)).toContain('not in allowedTools')
      // The nested run gets what is left of the caller's time.
      const slow = makeHost({ callTool: () => new Promise((r) => setTimeout(() => r({ sum: 1 }), 2000)) })
      const started = performance.now()
      const timed: any = await cc.execute({ script: "return await callTool('saved:three-adds', {})" }, slow.host)
      expect(timed.status).toBe('timeout')
      expect(performance.now() - started).toBeLessThan(1900)
      await cc.dispose()
    })

    it('asks for approval of calls inside a saved script, never of the saved:… call itself', async () => {
      const cc = make({ approval: { require: 'destructive' } })
      await cc.scripts!.save({ name: 'cleanup', description: 'Deletes a file', script: "return await callTool('files:delete', { path: '/tmp/x' })" })
      const asked: string[] = []
      const { host, calls } = makeHost({
        approve: async (req) => {
          asked.push(req.toolName)
          return 'decline' as const
        },
      })
      const r: any = await cc.execute({ script: "return await callTool('saved:cleanup', {})" }, host)
      expect(asked).toEqual(['files:delete'])
      expect(calls).toEqual([])
      expect(JSON.stringify(r.error)).toContain('declined by the user')
      await cc.dispose()
    })

    it('runs at most 8 saved scripts of one plan at once; the rest are TOO_MANY_PENDING_CALLS', async () => {
      const cc = make({ vm: { isolation, timeoutMs: 5000 } })
      await cc.scripts!.save({ name: 'slow', description: 'One slow add', script: "return (await callTool('math:add', { a: 1, b: 1 })).sum" })
      const slow = makeHost({ callTool: () => new Promise((r) => setTimeout(() => r({ sum: 2 }), 200)) })
      const calls = Array.from({ length: 10 }, () => "callTool('saved:slow', {})").join(', ')
      const r: any = await cc.execute(
        { script: `const all = await Promise.allSettled([${calls}]); return all.map((x) => x.status === 'fulfilled' ? x.value : x.reason.code)` },
        slow.host,
      )
      expect(r.status).toBe('ok')
      expect(r.result.filter((x: unknown) => x === 2)).toHaveLength(8)
      expect(r.result.filter((x: unknown) => x === 'TOO_MANY_PENDING_CALLS')).toHaveLength(2)
      await cc.dispose()
    })

    it('keeps saved tools through setTools and refuses host tools in the saved: namespace', async () => {
      const cc = make()
      await cc.scripts!.save(adder)
      cc.setTools([tools[0]])
      expect(cc.search({ query: 'add numbers' }).tools.map((t) => t.name)).toContain('saved:adder')
      expectInvalidArg(() => cc.setTools([{ name: 'saved:evil', description: 'x' }]), /saved:/)
      await cc.dispose()
    })
  })
}

describe('saved scripts: stores and options', () => {
  it('a SQLite file keeps scripts across CodeCall instances; a missing folder is an error naming the path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codecall-scripts-'))
    dirs.push(dir)
    const file = join(dir, 'scripts.db')
    const a = new CodeCall({ scripts: { store: file } })
    await a.scripts!.save(adder)
    const b = new CodeCall({ scripts: { store: file } })
    b.setTools(tools)
    expect(b.search({ query: 'add numbers' }).tools.map((t) => t.name)).toContain('saved:adder')
    await a.scripts!.save({ ...adder, description: 'Adds, second version' })
    // Another instance's save is seen by the next search, without restarting.
    expect(b.describe({ toolNames: ['saved:adder'] }).tools[0]).toMatchObject({ version: 2 })
    await a.dispose()
    // Disposed, the store went with the engine (its file closed): calls fail, the engine says why.
    await expect(a.scripts!.list()).rejects.toMatchObject({ code: 'POOL_DISPOSED', message: expect.stringMatching(/disposed/) })
    await b.dispose()
    const missing = join(dir, 'no-such-folder', 'scripts.db')
    expectInvalidArg(() => new CodeCall({ scripts: { store: missing } }), new RegExp(missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
  })

  it('a host ScriptStore serves everything, and one that throws fails only that call', async () => {
    const rows = new Map<string, SavedScript[]>()
    let broken = false
    const store: ScriptStore = {
      latest: async (name) => rows.get(name)?.at(-1),
      get: async (name, version) => rows.get(name)?.find((s) => s.version === version),
      put: async (s) => {
        if (broken) throw new Error('database is down')
        const list = rows.get(s.name) ?? []
        const saved = { ...s, version: list.length + 1, createdAt: new Date().toISOString() } as SavedScript
        rows.set(s.name, [...list, saved])
        return saved
      },
      list: async () => [...rows.values()].map((l) => l.at(-1)!),
      remove: async (name) => rows.delete(name),
    }
    const cc = new CodeCall({ scripts: { store } })
    cc.setTools(tools)
    const { host } = makeHost()
    expect(await cc.handle('codecall:save', adder, host)).toEqual({ name: 'saved:adder', version: 1 })
    const found: any = await cc.handle('codecall:search', { query: 'add numbers' }, host)
    expect(found.tools.map((t: any) => t.name)).toContain('saved:adder')
    expect(await cc.execute({ script: "return await callTool('saved:adder', { a: 2, b: 2 })" }, host)).toMatchObject({ result: 4 })
    broken = true
    await expect(cc.scripts!.save({ ...adder, name: 'other' })).rejects.toMatchObject({ code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(/database is down/) })
    // The engine goes on.
    expect(await cc.execute({ scriptName: 'adder', input: { a: 1, b: 2 } }, host)).toMatchObject({ status: 'ok', result: 3 })
    expect(await cc.scripts!.remove('adder')).toBe(true)
    expect(await cc.scripts!.get('adder')).toBeUndefined()
    // A store that answers another script than the one asked for is not believed.
    broken = false
    await cc.scripts!.save({ ...adder, name: 'other' })
    const liar = new CodeCall({ scripts: { store: { ...store, latest: async () => rows.get('other')!.at(-1) } } })
    liar.setTools(tools)
    const lied: any = await liar.execute({ script: "return await callTool('saved:wanted', {})" }, host)
    expect(lied.error).toMatchObject({ code: 'TOOL_EXECUTION_ERROR' })
    expect(lied.error.message).toMatch(/answered saved:other@1 for saved:wanted/)
    await expect(liar.execute({ scriptName: 'wanted' }, host)).rejects.toMatchObject({ code: 'TOOL_EXECUTION_ERROR' })
    await liar.dispose()
    await cc.dispose()
  })

  it('options: historySize and maxDepth omitted, undefined or null; bad values refused', async () => {
    for (const extra of [{}, { historySize: undefined, maxDepth: undefined }, { historySize: null, maxDepth: null }]) {
      const cc = new CodeCall({ scripts: { store: ':memory:', ...extra } as any })
      expect(cc.metaTools().map((t) => t.name)).toContain('codecall:save')
      await cc.dispose()
    }
    expect(new CodeCall({}).scripts).toBeUndefined()
    expect(new CodeCall({ scripts: null } as any).metaTools().map((t) => t.name)).not.toContain('codecall:save')
    expectInvalidArg(() => new CodeCall({ scripts: {} } as any), /options\.scripts\.store/)
    expectInvalidArg(() => new CodeCall({ scripts: { store: ':memory:', maxDepth: 0 } }), /maxDepth/)
    expectInvalidArg(() => new CodeCall({ scripts: { store: ':memory:', historySize: -1 } }), /historySize/)
    expectInvalidArg(() => new CodeCall({ scripts: { store: ':memory:', maxdepth: 2 } } as any), /maxDepth/)
    expectInvalidArg(() => new CodeCall({ scripts: { store: { latest() {} } } } as any), /options\.scripts\.store\.get/)
    // All meta-tools together stay under 8 KB of JSON with save listed.
    const all = new CodeCall({ scripts: { store: ':memory:' }, directCalls: { enabled: true } })
    expect(JSON.stringify(all.metaTools()).length).toBeLessThan(8192)
    await all.dispose()
  })
})
