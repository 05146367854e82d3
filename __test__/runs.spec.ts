// Runs that outlive a process (issue 42, api.md §12), through the engine API: `CodeCallOptions.runs`
// keeps an execution waiting for a person as a journal; another engine (standing for another
// process: its own pool, index and workers) with the same key and store resumes it by replay —
// no tool called again, no event sent again, approvals not asked again — then goes on live. The
// gateway across real processes (HTTP instances, SIGKILL) is __test__/gateway/runs.spec.ts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, Sandbox, SqliteRunStore, type RunStore } from '../index.js'
import { ApprovalRounds } from '../lib/adapters/stateless.mjs'

// Modules without declarations, loaded untyped.
const load = (path: string): Promise<any> => import(new URL(path, import.meta.url).href)
const { ParkedRuns } = await load('../lib/common/modern.mjs')
const { MAX_JOURNAL_BYTES } = await load('../lib/common/journal.mjs')

const linux = process.platform === 'linux'
const isolations = linux ? (['thread', 'process'] as const) : (['thread'] as const)
const KEY = 'runs-spec-state-key-0123456789'
const dir = mkdtempSync(join(tmpdir(), 'codecall-runs-'))
const closers: (() => unknown)[] = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
  rmSync(dir, { recursive: true, force: true })
})

const tools = [
  { name: 'shop:list', description: 'List the items', annotations: { readOnlyHint: true } },
  { name: 'shop:get', description: 'Get one item', annotations: { readOnlyHint: true } },
  { name: 'shop:note', description: 'Note a value', annotations: { readOnlyHint: true } },
  { name: 'shop:big', description: 'A large answer', annotations: { readOnlyHint: true } },
  { name: 'shop:delete', description: 'Delete an item' },
]

let dbs = 0
function freshDb() {
  return join(dir, `runs-${(dbs += 1)}.db`)
}

/** An engine standing for one process: its own pool and workers, the shared store and key. */
function instance(store: string | RunStore, isolation: 'thread' | 'process', extraTools: typeof tools = []) {
  const engine = new CodeCall({ approval: { ask: ['shop:delete'] }, runs: { store }, vm: { isolation } })
  engine.setTools([...tools, ...extraTools])
  const rounds = new ApprovalRounds(engine, { stateKey: KEY })
  closers.push(() => engine.dispose())
  closers.push(() => rounds.close())
  return rounds
}

/** Calls that reached a tool, across every instance of a test. */
function counter() {
  const counts: Record<string, number> = {}
  const events: any[] = []
  const host = () => ({
    callTool: (name: string, input: any) => {
      counts[name] = (counts[name] ?? 0) + 1
      if (name === 'shop:list') return [1, 2, 3]
      if (name === 'shop:get') return { id: input.id }
      if (name === 'shop:big') return 'x'.repeat(input.n)
      if (name === 'shop:note') return { noted: input }
      return { deleted: input.id }
    },
    onEvent: (e: any) => events.push(e),
  })
  return { counts, events, host }
}

const accept = (out: any) => Object.fromEntries(Object.keys(out.inputRequests).map((k) => [k, { action: 'accept' }]))

// Reads three systems (one call, then three in parallel), notes a random number and the time,
// then deletes two items: each delete needs a person's yes, so the run waits twice.
const plan = `
  const items = await callTool('shop:list', {});
  const got = await Promise.all(items.map((id) => callTool('shop:get', { id })));
  mcpLog('info', 'read', { n: got.length });
  await callTool('shop:note', { r: Math.random(), t: Date.now() });
  const d1 = await callTool('shop:delete', { id: items[0] });
  const d2 = await callTool('shop:delete', { id: items[1] });
  return { d1, d2, n: got.length, r: Math.random(), t: Date.now() }`
const args = { script: plan }

for (const isolation of isolations) {
  describe(`a run in the run store (${isolation} isolation)`, () => {
    it('moves between instances round by round; every tool is called exactly once; nothing is sent twice', async () => {
      const db = freshDb()
      const [a, b, c] = [instance(db, isolation), instance(db, isolation), instance(db, isolation)]
      const { counts, events, host } = counter()
      const first = await a.handle('codecall:execute', args, host(), { canElicit: true })
      expect(first.resultType).toBe('input_required')
      expect(counts).toEqual({ 'shop:list': 1, 'shop:get': 3, 'shop:note': 1 })
      const startsBefore = events.filter((e) => e.type === 'tool_call_start').length
      const logsBefore = events.filter((e) => e.type === 'log').length
      expect(startsBefore).toBe(5)
      expect(logsBefore).toBe(1)

      // Round 1 answered on another instance: it replays (no tool again), deletes, waits again.
      // `host.replayed` hears of each call answered from the journal (the gateway's audit uses it).
      const replayed: string[] = []
      const resuming = { ...host(), replayed: (fn: string, a: any[]) => replayed.push(`${fn} ${a[0]}`) }
      const second = await b.handle('codecall:execute', args, resuming, { canElicit: true, requestState: (first as any).requestState, inputResponses: accept(first) })
      expect(replayed.sort()).toEqual(['callTool shop:get', 'callTool shop:get', 'callTool shop:get', 'callTool shop:list', 'callTool shop:note'])
      expect(second.resultType).toBe('input_required')
      expect(counts).toEqual({ 'shop:list': 1, 'shop:get': 3, 'shop:note': 1, 'shop:delete': 1 })
      // The replayed calls and the log were not sent again: only the live delete's events.
      expect(events.filter((e) => e.type === 'tool_call_start').length).toBe(startsBefore + 1)
      expect(events.filter((e) => e.type === 'log').length).toBe(logsBefore)

      // The spent state is refused everywhere, also by the instance that still holds the run.
      await expect(a.handle('codecall:execute', args, host(), { canElicit: true, requestState: (first as any).requestState, inputResponses: accept(first) })).rejects.toThrow(/already used/)
      await expect(c.handle('codecall:execute', args, host(), { canElicit: true, requestState: (first as any).requestState, inputResponses: accept(first) })).rejects.toThrow(/already used|no such run/)

      // Round 2 on a third instance.
      const done = await c.handle('codecall:execute', args, host(), { canElicit: true, requestState: (second as any).requestState, inputResponses: accept(second) })
      expect(done.resultType).toBe('complete')
      const result = (done as any).result
      expect(result.status).toBe('ok')
      expect(result.result.d1).toEqual({ deleted: 1 })
      expect(result.result.d2).toEqual({ deleted: 2 })
      expect(result.result.n).toBe(3)
      expect(counts).toEqual({ 'shop:list': 1, 'shop:get': 3, 'shop:note': 1, 'shop:delete': 2 })
    })

    it('the same process keeps the fast path (the run parked in memory), and the store still decides who continues', async () => {
      const db = freshDb()
      const a = instance(db, isolation)
      const { counts, host } = counter()
      const first: any = await a.handle('codecall:execute', args, host(), { canElicit: true })
      const second: any = await a.handle('codecall:execute', args, host(), { canElicit: true, requestState: first.requestState, inputResponses: accept(first) })
      const done: any = await a.handle('codecall:execute', args, host(), { canElicit: true, requestState: second.requestState, inputResponses: accept(second) })
      expect(done.result.status).toBe('ok')
      expect(counts).toEqual({ 'shop:list': 1, 'shop:get': 3, 'shop:note': 1, 'shop:delete': 2 })
    })

    it('two instances resuming the same state at once: one continues, the other is refused; the delete runs once', async () => {
      const db = freshDb()
      const [a, b, c] = [instance(db, isolation), instance(db, isolation), instance(db, isolation)]
      const { counts, host } = counter()
      const first: any = await a.handle('codecall:execute', args, host(), { canElicit: true })
      const retry = (r: ApprovalRounds) => r.handle('codecall:execute', args, host(), { canElicit: true, requestState: first.requestState, inputResponses: accept(first) })
      const outcomes = await Promise.allSettled([retry(b), retry(c)])
      const won = outcomes.filter((o) => o.status === 'fulfilled')
      const lost = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[]
      expect(won.length).toBe(1)
      expect(lost.length).toBe(1)
      expect(lost[0].reason.code).toBe('ERR_INVALID_ARG')
      expect(String(lost[0].reason.message)).toMatch(/already used|no such run/)
      expect(counts['shop:delete']).toBe(1)
      expect(counts['shop:list']).toBe(1)
    })

    it('a replay that asks for another call than the journal holds ends with EXECUTION_ERROR; nothing runs twice', async () => {
      const db = freshDb()
      // The second instance knows a tool the first did not: the plan takes another branch there.
      const extra = [{ name: 'shop:extra', description: 'Only on the second instance', annotations: { readOnlyHint: true } }]
      const a = instance(db, isolation)
      const b = instance(db, isolation, extra)
      const { counts, host } = counter()
      const branching = { script: "const x = getTool('shop:extra') ? await callTool('shop:get', { id: 9 }) : await callTool('shop:list', {}); await callTool('shop:delete', { id: 1 }); return x" }
      const first: any = await a.handle('codecall:execute', branching, host(), { canElicit: true })
      expect(first.resultType).toBe('input_required')
      expect(counts).toEqual({ 'shop:list': 1 })
      await expect(b.handle('codecall:execute', branching, host(), { canElicit: true, requestState: first.requestState, inputResponses: accept(first) })).rejects.toMatchObject({
        code: 'EXECUTION_ERROR',
        message: expect.stringContaining('the run could not be resumed'),
      })
      expect(counts).toEqual({ 'shop:list': 1 })
    })

    it('a diverging replay (another input this time) ends only itself: two neighbours on the same engine finish', async () => {
      const rows = new Map<string, string>()
      const store: RunStore = { put: (id, j) => void rows.set(id, j), get: (id) => rows.get(id), delete: (id) => rows.delete(id) }
      const [a, b] = [instance(store, isolation), instance(store, isolation)]
      const { counts, host } = counter()
      const first: any = await a.handle('codecall:execute', args, host(), { canElicit: true })
      // The journal's first call now holds another input digest than the script will send.
      const [id, journal] = [...rows.entries()][0]
      const data = JSON.parse(journal)
      const call = data.entries.find((e: any) => e.k === 'call' && e.n === 'tool:shop:get')
      call.d = 'not-the-digest-of-that-input'
      rows.set(id, JSON.stringify(data))
      // Neighbours on b: each waits on a slow tool while the replay diverges beside them.
      let release = () => {}
      const gate = new Promise<void>((r) => (release = r))
      const slow = { callTool: async () => (await gate, 7) }
      const neighbours = [0, 1].map(() => b.handle('codecall:execute', { script: "return await callTool('shop:list', {})" }, slow, {}))
      await expect(b.handle('codecall:execute', args, host(), { canElicit: true, requestState: first.requestState, inputResponses: accept(first) })).rejects.toMatchObject({
        code: 'EXECUTION_ERROR',
        message: expect.stringMatching(/could not be resumed: call .* \(tool:shop:get\) has another input/),
      })
      release()
      for (const n of await Promise.all(neighbours)) expect((n as any).result).toMatchObject({ status: 'ok', result: 7 })
      expect(counts['shop:delete']).toBeUndefined()
    })
  })
}

describe('the journal', () => {
  it('a custom RunStore (async) is all it takes; a damaged journal is not resumed', async () => {
    const rows = new Map<string, { journal: string; expiresAt: number }>()
    const ops: string[] = []
    const store: RunStore = {
      async put(id, journal, expiresAt) {
        ops.push('put')
        rows.set(id, { journal, expiresAt })
      },
      async get(id) {
        ops.push('get')
        const row = rows.get(id)
        return row && row.expiresAt > Date.now() ? row.journal : undefined
      },
      async delete(id) {
        ops.push('delete')
        return rows.delete(id)
      },
    }
    const [a, b] = [instance(store, 'thread'), instance(store, 'thread')]
    const { counts, host } = counter()
    const first: any = await a.handle('codecall:execute', args, host(), { canElicit: true })
    expect(ops).toEqual(['put'])
    expect(rows.size).toBe(1)
    const [row] = [...rows.values()]
    // What a tool returned is in the journal, never in the state the client holds.
    expect(row.journal).toContain('tool:shop:get')
    expect(first.requestState).not.toContain('shop')
    const second: any = await b.handle('codecall:execute', args, host(), { canElicit: true, requestState: first.requestState, inputResponses: accept(first) })
    expect(ops).toEqual(['put', 'get', 'delete', 'put'])
    expect(second.resultType).toBe('input_required')

    // Damage the stored journal: a call it holds names another tool.
    const [id, stored] = [...rows.entries()][0]
    rows.set(id, { ...stored, journal: stored.journal.replace('"n":"tool:shop:list"', '"n":"tool:shop:other"') })
    await expect(a.handle('codecall:execute', args, host(), { canElicit: true, requestState: second.requestState, inputResponses: accept(second) })).rejects.toMatchObject({
      code: 'EXECUTION_ERROR',
      message: expect.stringMatching(/could not be resumed: call .* is tool:shop:list, the journal holds tool:shop:other/),
    })
    expect(counts).toEqual({ 'shop:list': 1, 'shop:get': 3, 'shop:note': 1, 'shop:delete': 1 })
    // Claimed, then not resumed: the journal is gone with the run.
    expect(rows.size).toBe(0)
  })

  it('a store that throws fails that run cleanly (EXECUTION_ERROR), never the engine', async () => {
    let fail = true
    const rows = new Map<string, string>()
    const store: RunStore = {
      put(id, journal) {
        if (fail) throw new Error('database is down')
        rows.set(id, journal)
      },
      get: (id) => rows.get(id),
      delete: (id) => rows.delete(id),
    }
    const a = instance(store, 'thread')
    const { counts, host } = counter()
    await expect(a.handle('codecall:execute', args, host(), { canElicit: true })).rejects.toMatchObject({ code: 'EXECUTION_ERROR', message: expect.stringContaining('database is down') })
    expect(a.waiting).toBe(0)
    fail = false
    const ok: any = await a.handle('codecall:execute', { script: "return (await callTool('shop:list', {})).length" }, host(), { canElicit: true })
    expect(ok.result).toMatchObject({ status: 'ok', result: 3 })
    expect(counts['shop:delete']).toBeUndefined()
  })

  it('a journal over its bound is not kept: the run waits in its own process only, and says so', async () => {
    const db = freshDb()
    const lines: string[] = []
    const engine = new CodeCall({ approval: { ask: ['shop:delete'] }, runs: { store: db } })
    engine.setTools(tools)
    closers.push(() => engine.dispose())
    const store = (engine as any)[Symbol.for('codecall.runs')]
    const parked = new ParkedRuns({ key: Buffer.from(KEY), store, log: (l: string) => lines.push(l) })
    closers.push(() => parked.close())
    const { counts, host } = counter()
    const n = Math.ceil(MAX_JOURNAL_BYTES / 3) + 1000
    const big = { script: `const a = await callTool('shop:big', { n: ${n} }); const b = await callTool('shop:big', { n: ${n} }); const c = await callTool('shop:big', { n: ${n} }); await callTool('shop:delete', { id: 1 }); return a.length + b.length + c.length` }
    const call = (extra: Record<string, unknown>) =>
      parked.call({ tool: 'codecall:execute', args: big, principal: null, attach: { logLevel: null }, start: (run: any) => engine.handle('codecall:execute', big, run.journal({ ...host(), approve: run.approve })), ...extra })
    const first: any = await call({})
    expect(first.inputRequired).toBeDefined()
    expect(lines.join('\n')).toMatch(/not kept in the run store: its journal passed/)
    // Nothing in the store: another instance cannot resume it …
    const other = new ParkedRuns({ key: Buffer.from(KEY), store })
    closers.push(() => other.close())
    const responses = Object.fromEntries(Object.keys(first.inputRequired.inputRequests).map((k) => [k, { action: 'accept' }]))
    await expect(other.call({ tool: 'codecall:execute', args: big, principal: null, attach: { logLevel: null }, requestState: first.inputRequired.requestState, inputResponses: responses, start: () => Promise.reject(new Error('not started')) })).rejects.toThrow(/no such run/)
    // … the process that holds it still can.
    const done: any = await call({ requestState: first.inputRequired.requestState, inputResponses: responses })
    expect(done.result).toMatchObject({ status: 'ok', result: 3 * n })
    expect(counts).toEqual({ 'shop:big': 3, 'shop:delete': 1 })
  })

  it('an expired run is refused, and its journal leaves the store', async () => {
    const db = freshDb()
    const engine = new CodeCall({ approval: { ask: ['shop:delete'] }, runs: { store: db } })
    engine.setTools(tools)
    closers.push(() => engine.dispose())
    const store = (engine as any)[Symbol.for('codecall.runs')] as SqliteRunStore
    let now = Date.now()
    const parked = new ParkedRuns({ key: Buffer.from(KEY), store, timeoutMs: 60_000, graceMs: 0, now: () => now })
    closers.push(() => parked.close())
    const other = new ParkedRuns({ key: Buffer.from(KEY), store, now: () => now })
    closers.push(() => other.close())
    const { counts, host } = counter()
    const start = (run: any) => engine.handle('codecall:execute', args, run.journal({ ...host(), approve: run.approve }))
    const first: any = await parked.call({ tool: 'codecall:execute', args, principal: null, attach: { logLevel: null }, start })
    expect(first.inputRequired).toBeDefined()
    now += 61_000
    const responses = Object.fromEntries(Object.keys(first.inputRequired.inputRequests).map((k) => [k, { action: 'accept' }]))
    await expect(other.call({ tool: 'codecall:execute', args, principal: null, attach: { logLevel: null }, requestState: first.inputRequired.requestState, inputResponses: responses, start })).rejects.toThrow(/expired/)
    expect(counts['shop:delete']).toBeUndefined()
  })
})

describe('a standing clock and a seeded Math.random (host.clock, host.randomSeed)', () => {
  for (const isolation of isolations) {
    it(`the same seed gives the same numbers, the clock stands still (${isolation} isolation)`, async () => {
      const sandbox = new Sandbox({ isolation })
      closers.push(() => sandbox.dispose())
      const code = 'const t0 = Date.now(); Array.from({ length: 1e5 }, (_, i) => i).reduce((a, b) => a + b, 0); return [t0, Date.now(), new Date().getTime(), Date().length > 0, new Date(5).getTime(), Math.random(), Math.random()]'
      const host = { callTool: () => null, clock: 1_700_000_000_000, randomSeed: 42 }
      const a: any = await sandbox.execute(code, host)
      const b: any = await sandbox.execute(code, host)
      expect(a.status).toBe('ok')
      expect(a.result.slice(0, 5)).toEqual([1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_000, true, 5])
      expect(a.result).toEqual(b.result)
      const c: any = await sandbox.execute(code, { ...host, randomSeed: 43 })
      expect(c.result[5]).not.toBe(a.result[5])
      for (const r of a.result.slice(5)) expect(r >= 0 && r < 1).toBe(true)
      // Omitted, undefined, null: the real clock and QuickJS's own generator.
      for (const h of [{ callTool: () => null }, { callTool: () => null, clock: undefined, randomSeed: undefined }, { callTool: () => null, clock: null, randomSeed: null }]) {
        const r: any = await sandbox.execute('return Date.now()', h as any)
        expect(Math.abs(r.result - Date.now())).toBeLessThan(60_000)
      }
      for (const bad of [-1, 1.5, Number.MAX_SAFE_INTEGER + 2, '1', NaN]) {
        // Refused as every bad host is: thrown by execute() itself.
        expect(() => sandbox.execute('return 1', { callTool: () => null, clock: bad } as any)).toThrow(/host.clock must be a whole number/)
        expect(() => sandbox.execute('return 1', { callTool: () => null, randomSeed: bad } as any)).toThrow(/host.randomSeed must be a whole number/)
      }
    })
  }

  it('a script cannot reach the real clock around the standing one', async () => {
    const sandbox = new Sandbox({})
    closers.push(() => sandbox.dispose())
    // (`.constructor` is refused by the validator itself, so the prototype's own is not a way.)
    const code = `
      class Later extends Date {}
      const seen = [Reflect.construct(Date, []).getTime(), new Later().getTime(), Date.now(), Date.UTC(2020, 1, 1)];
      Date.now = () => 1; // the script may replace it for itself
      seen.push(Date.now());
      return seen`
    const r: any = await sandbox.execute(code, { callTool: () => null, clock: 1000 })
    expect(r.status).toBe('ok')
    expect(r.result).toEqual([1000, 1000, 1000, Date.UTC(2020, 1, 1), 1])
  })
})

describe('the run store itself', () => {
  it('SqliteRunStore: put, get, delete claims once, expiry; a missing folder is named', () => {
    const store = new SqliteRunStore(freshDb())
    closers.push(() => store.close())
    store.put('r.0', '{"a":1}', Date.now() + 60_000)
    expect(store.get('r.0')).toBe('{"a":1}')
    expect(store.delete('r.0')).toBe(true)
    expect(store.delete('r.0')).toBe(false)
    store.put('r.1', '{}', Date.now() - 1)
    expect(store.get('r.1')).toBeNull()
    expect(store.delete('r.1')).toBe(false)
    expect(() => new SqliteRunStore(join(dir, 'missing', 'x.db'))).toThrow(/missing/)
  })

  it('CodeCallOptions.runs: checked at construction, optional, shares the scripts file', () => {
    expect(() => new CodeCall({ runs: { store: join(dir, 'nope', 'runs.db') } })).toThrow(/cannot open the run store .*nope/)
    expect(() => new CodeCall({ runs: {} as any })).toThrow(/options.runs.store is required/)
    expect(() => new CodeCall({ runs: { store: { put() {}, get() {} } as any } })).toThrow(/no delete\(\) method/)
    expect(() => new CodeCall({ runs: { store: 5 as any } })).toThrow(/path or a RunStore/)
    for (const runs of [undefined, null]) {
      const cc = new CodeCall({ runs })
      expect((cc as any)[Symbol.for('codecall.runs')]).toBeUndefined()
      closers.push(() => cc.dispose())
    }
    const shared = freshDb()
    const cc = new CodeCall({ scripts: { store: shared }, runs: { store: shared } })
    closers.push(() => cc.dispose())
    expect((cc as any)[Symbol.for('codecall.runs')]).toBeInstanceOf(SqliteRunStore)
  })
})

describe('the gateway config: codecall.runs', () => {
  it('store resolved against the config folder; null is as absent; mistakes name their key; a missing folder is refused at start', async () => {
    const { parseConfig, Gateway } = await import('../lib/gateway/index.mjs')
    const base = { mcpServers: {} }
    const parsed = parseConfig({ ...base, codecall: { runs: { store: './r.db' } } }, { baseDir: dir })
    expect(parsed.codecall.runs).toEqual({ store: join(dir, 'r.db') })
    expect(parseConfig({ ...base, codecall: { runs: { store: ':memory:' } } }).codecall.runs).toEqual({ store: ':memory:' })
    for (const none of [null, undefined]) expect(parseConfig({ ...base, codecall: { runs: none } }).codecall.runs).toBeUndefined()
    expect(() => parseConfig({ ...base, codecall: { runs: { stor: './r.db' } } })).toThrow(/codecall\.runs\.stor: unknown key/)
    expect(() => parseConfig({ ...base, codecall: { runs: {} } })).toThrow(/codecall\.runs: needs 'store'/)
    expect(() => parseConfig({ ...base, codecall: { runs: { store: '' } } })).toThrow(/codecall\.runs\.store/)
    expect(() => new Gateway(parseConfig({ ...base, codecall: { runs: { store: join(dir, 'nope', 'r.db') } } }))).toThrow(/codecall\.runs\.store: the folder .*nope/)
    // A good store: starting opens nothing (the file appears with the first run that may wait).
    const gateway = new Gateway(parseConfig({ ...base, codecall: { runs: { store: join(dir, 'later.db') } } }))
    const { existsSync } = await import('node:fs')
    expect(existsSync(join(dir, 'later.db'))).toBe(false)
    await gateway.close()
  })
})

describe('a run store and dispose()', () => {
  it('closes a store the engine opened from a path, lets go of an application’s own (not closed), and holds neither after', async () => {
    const opened = new CodeCall({ runs: { store: freshDb() } })
    const store = (opened as any)[Symbol.for('codecall.runs')] as SqliteRunStore
    store.put('r.0', '{}', Date.now() + 60_000)
    await opened.dispose()
    expect((opened as any)[Symbol.for('codecall.runs')]).toBeUndefined()
    expect(() => store.get('r.0')).toThrow(/closed/)
    let closed = 0
    const own = { put() {}, get: () => undefined, delete: () => false, close: () => (closed += 1) }
    const mine = new CodeCall({ runs: { store: own } })
    expect((mine as any)[Symbol.for('codecall.runs')]).toBe(own)
    await mine.dispose()
    expect((mine as any)[Symbol.for('codecall.runs')]).toBeUndefined()
    expect(closed).toBe(0)
  })

  it('a few hundred engines with a file store, made and disposed: their files are closed (open descriptors come back)', async () => {
    const { readdirSync } = await import('node:fs')
    const fds = () => (process.platform === 'linux' ? readdirSync('/proc/self/fd').length : 0)
    const db = freshDb()
    const warm = new CodeCall({ runs: { store: db } })
    await warm.dispose()
    const before = fds()
    for (let i = 0; i < 200; i++) await new CodeCall({ runs: { store: db } }).dispose()
    expect(fds() - before).toBeLessThan(10)
  })
})
