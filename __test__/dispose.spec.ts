// Disposal frees everything (issue 41, spec §1 and §12): an engine with a saved-scripts store and
// an onToolsChanged that references it — what the adapters pass — gives back its memory, threads
// and worker processes on dispose(), and is collected when let go of without one. Counted in a
// child Node process (fixtures/dispose-churn.mjs) that creates 300 such engines after a warm-up.
// Resources are counted; nothing is timed.
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'
import { runChurn } from './helpers'

import { CodeCall } from '../index.js'

const linux = process.platform === 'linux'
const FIXTURE = join(__dirname, 'fixtures', 'dispose-churn.mjs')

interface Churn {
  baseline: { rss: number; threads: number; workers: number }
  final: { rss: number; threads: number; workers: number }
  rssGrowthMB: number
}

const churn = (...args: string[]) => runChurn<Churn>(FIXTURE, ...args)

// Before the fix: +780 MB and +900 threads (three per engine: the index writer's) for 300 engines;
// after it about +45–75 MB (the allocator keeps some of what it freed), and the threads back.
const RSS_BOUND_MB = 150
// Let go of without dispose(), engines wait for the GC: how many are alive at once before it
// collects them decides the peak (about +150–230 MB measured; bounded, not growing with the count).
const RSS_BOUND_DROPPED_MB = 350
const THREAD_MARGIN = 4

describe.runIf(linux)('300 engines created and disposed', () => {
  it("scripts ':memory:', thread isolation", { timeout: 300_000 }, () => {
    const r = churn('300', 'memory', 'thread')
    expect(r.final.threads).toBeLessThanOrEqual(r.baseline.threads + THREAD_MARGIN)
    expect(r.rssGrowthMB).toBeLessThan(RSS_BOUND_MB)
  })

  it('scripts in a file, process isolation: no worker process left either', { timeout: 300_000 }, () => {
    const r = churn('300', 'file', 'process')
    expect(r.final.threads).toBeLessThanOrEqual(r.baseline.threads + THREAD_MARGIN)
    expect(r.final.workers).toBeLessThanOrEqual(r.baseline.workers)
    expect(r.rssGrowthMB).toBeLessThan(RSS_BOUND_MB)
  })

  it('let go of without dispose(), they are collected all the same', { timeout: 300_000 }, () => {
    const r = churn('300', 'memory', 'thread', 'drop')
    expect(r.final.threads).toBeLessThanOrEqual(r.baseline.threads + THREAD_MARGIN)
    expect(r.rssGrowthMB).toBeLessThan(RSS_BOUND_DROPPED_MB)
  })
})

describe('after dispose()', () => {
  const engines: CodeCall[] = []
  afterAll(() => Promise.all(engines.map((cc) => cc.dispose())))

  it('execute resolves POOL_DISPOSED, invoke answers it, the rest throws or rejects it', async () => {
    let changed = 0
    const cc = new CodeCall({ directCalls: { enabled: true }, scripts: { store: ':memory:' }, onToolsChanged: () => changed++ })
    engines.push(cc)
    cc.setTools([{ name: 'users:list', description: 'List users' }])
    const host = { callTool: () => ({ ok: true }) }
    expect(await cc.invoke({ tool: 'users:list', input: {} }, host)).toMatchObject({ status: 'ok' })
    expect(cc.scripts).toBeDefined()
    await cc.dispose()
    await cc.dispose() // again: nothing happens

    const disposed = { code: 'POOL_DISPOSED', message: expect.stringMatching(/disposed/) }
    expect(await cc.execute({ script: 'return 1' }, host)).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
    expect(await cc.handle('codecall:execute', { script: 'return 1' }, host)).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
    expect(await cc.execute({ scriptName: 'gone' }, host)).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
    expect(await cc.invoke({ tool: 'users:list', input: {} }, host)).toMatchObject({ status: 'error', error: { code: 'POOL_DISPOSED', toolName: 'users:list' } })
    expect(await cc.handle('codecall:invoke', { tool: 'users:list', input: {} }, host)).toMatchObject({ status: 'error', error: { code: 'POOL_DISPOSED' } })
    await expect(cc.handle('codecall:search', { query: 'users' }, host)).rejects.toMatchObject(disposed)
    await expect(cc.handle('codecall:save', { name: 'x', description: 'd', script: 'return 1' }, host)).rejects.toMatchObject(disposed)
    for (const call of [
      () => cc.search({ query: 'users' }),
      () => cc.describe({ toolNames: ['users:list'] }),
      () => cc.listTools(),
      () => cc.metaTools(),
      () => cc.setTools([]),
      () => cc.upsertTools([]),
      () => cc.removeTools(['users:list']),
    ]) {
      let thrown: unknown
      try {
        call()
      } catch (e) {
        thrown = e
      }
      expect(thrown).toMatchObject(disposed)
    }
    // Nothing to wait for; the store went with the engine.
    await cc.ready()
    await expect(cc.scripts!.list()).rejects.toMatchObject(disposed)
    await expect(cc.scripts!.save({ name: 'x', description: 'd', script: 'return 1' })).rejects.toMatchObject(disposed)
    expect(changed).toBe(1)
    // A non-meta name is still the caller's mistake.
    await expect(cc.handle('users:list', {}, host)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
  })
})
