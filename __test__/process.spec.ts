// isolation: 'process' (api.md §2.6). The scenarios that count processes or crash a worker run in
// a child Node process (fixtures/process-scenarios.mjs): its workers are its own, and a crash
// that reached the host would end that child, not the test runner.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteEvent } from '../index.js'
import { HOOKS_LIBRARY, HOOKS_WORKER } from './setup/test-hooks-worker.js'

const linux = process.platform === 'linux'
const FIXTURE = join(__dirname, 'fixtures', 'process-scenarios.mjs')

function scenario(name: string, env: Record<string, string> = {}): Record<string, any> {
  const out = execFileSync(process.execPath, [FIXTURE, name], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return JSON.parse(out.trim().split('\n').pop() ?? '{}')
}
const withHooks = { CODECALL_WORKER_PATH: HOOKS_WORKER, CODECALL_WORKER_LIBRARY: HOOKS_LIBRARY }
// Built by the globalSetup wherever cargo exists (always in .ci/run).
const hooks = linux && existsSync(HOOKS_WORKER)

const sandboxes: Sandbox[] = []
function sandbox(options?: ConstructorParameters<typeof Sandbox>[0]) {
  const s = new Sandbox(options)
  sandboxes.push(s)
  return s
}
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.dispose()))
})

describe.runIf(linux || process.platform === 'darwin' || process.platform === 'win32')('process isolation is the default', () => {
  it('a new Sandbox runs scripts in worker processes, with no warning', async () => {
    const sb = sandbox()
    expect(sb.isolation).toBe('process')
    expect(await sb.execute('return 1 + 1')).toMatchObject({ status: 'ok', result: 2 })
    expect(sb.warnings).toEqual([])
  })

  it('thread isolation stays selectable per sandbox', async () => {
    const sb = sandbox({ isolation: 'thread' })
    expect(sb.isolation).toBe('thread')
    expect(await sb.execute('return 3')).toMatchObject({ status: 'ok', result: 3 })
  })
})

describe('the bridge over pipes behaves as in threads', () => {
  const proc = sandbox({ isolation: 'process' })

  it('tool calls, events, host functions, getTool, logs and input', async () => {
    const events: ExecuteEvent[] = []
    const r = await proc.execute(
      `const a = await callTool('users:get', { id: input.id })
       const b = await mcp.lookup('x', 2)
       const t = getTool('users:get')
       console.log('seen', a.id)
       mcpLog('info', 'hello', { k: 1 })
       mcpNotify('progress', { done: 1 })
       return { a, b, t: t && t.name, ctx: codecallContext.tenant }`,
      {
        callTool: (name, input) => ({ name, ...(input as object) }),
        getTool: (name) => (name === 'users:get' ? { name, description: 'd', inputSchema: {} } : undefined),
        onEvent: (e) => events.push(e),
        functions: { 'mcp.lookup': (k: string, n: number) => k.repeat(n) },
      },
      { input: { id: 7 }, context: { tenant: 't1' } },
    )
    expect(r).toMatchObject({
      status: 'ok',
      result: { a: { name: 'users:get', id: 7 }, b: 'xx', t: 'users:get', ctx: 't1' },
      logs: ['seen 7'],
      stats: { toolCalls: 2 },
    })
    expect(events.map((e) => e.type)).toEqual(['tool_call_start', 'tool_call_end', 'log', 'notify'])
    for (const e of events) expect(e.executionId).toBe(r.stats.executionId)
  })

  it('tool errors, timeouts, aborts and limits keep their codes', async () => {
    const failing = await proc.execute("await callTool('x')", {
      callTool: () => {
        throw Object.assign(new Error('denied'), { code: 'E_AUTH' })
      },
    })
    // The host error's own code is kept (api.md §2.3).
    expect(failing).toMatchObject({ status: 'tool_error', error: { code: 'E_AUTH', toolName: 'x', message: 'denied' } })

    const slow = await proc.execute("return await callTool('slow')", { callTool: () => new Promise(() => {}) }, { timeoutMs: 150 })
    expect(slow).toMatchObject({ status: 'timeout', error: { code: 'TIMEOUT', message: 'Script execution timed out after 150ms' } })

    const controller = new AbortController()
    const aborted = proc.execute("return await callTool('wait')", { callTool: () => new Promise(() => {}) }, { signal: controller.signal })
    setTimeout(() => controller.abort(), 30)
    expect(await aborted).toMatchObject({ status: 'runtime_error', error: { code: 'EXECUTION_ABORTED', source: 'sandbox' } })

    const oom = await sandbox({ isolation: 'process', preset: 'balanced', maxIterations: 1e9, memoryLimitBytes: 4 << 20 }).execute(
      "const a = []; for (let i = 0; i < 1e7; i++) a.push('x' + i); return a.length",
    )
    expect(oom).toMatchObject({ status: 'runtime_error', error: { code: 'MEMORY_LIMIT_EXCEEDED' } })

    expect(await proc.execute('return (')).toMatchObject({ status: 'syntax_error' })
    expect(await proc.execute('return eval("1")')).toMatchObject({ status: 'illegal_access' })
  })

  it('many executions awaiting tools share few workers', async () => {
    const sb = sandbox({ isolation: 'process', poolSize: 2, maxQueue: 5000 })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const runs = Array.from({ length: 2000 }, (_, i) =>
      sb.execute(`return (await callTool('wait', input)).i`, { callTool: async (_n, input) => (await gate, input) }, { input: { i } }),
    )
    setTimeout(release, 200)
    const results = await Promise.all(runs)
    expect(results.every((r, i) => r.status === 'ok' && r.result === i)).toBe(true)
  })

  it('maxQueue and queueTimeoutMs apply to process pools', async () => {
    const sb = sandbox({ isolation: 'process', poolSize: 1, maxQueue: 0 })
    expect(await sb.execute('return 1')).toMatchObject({ status: 'runtime_error', error: { code: 'QUEUE_FULL' } })
  })

  it('dispose ends running executions with POOL_DISPOSED', async () => {
    const sb = new Sandbox({ isolation: 'process' })
    const running = sb.execute("return await callTool('never')", { callTool: () => new Promise(() => {}) })
    await new Promise((r) => setTimeout(r, 50))
    await sb.dispose()
    expect(await running).toMatchObject({ status: 'runtime_error', error: { code: 'POOL_DISPOSED' } })
    expect(await sb.execute('return 1')).toMatchObject({ error: { code: 'POOL_DISPOSED' } })
  })
})

describe.runIf(linux)('worker processes (Linux)', () => {
  it('start lazily, are fenced (seccomp, no core, address-space limit) and are gone after dispose', () => {
    const r = scenario('lifecycle')
    expect(r.isolation).toBe('process')
    expect(r.warnings).toEqual([])
    expect(r.beforeFirst).toBe(0)
    expect(r.first).toBe(2)
    expect(r.afterFirst).toBe(1)
    expect(r.stillAlive).toBe(true)
    expect(r.fence).toEqual([{ seccomp: '2', noNewPrivs: '1' }])
    expect(r.limit[0].core).toEqual(['0', '0'])
    expect(Number(r.limit[0].addressSpace[0])).toBeGreaterThan(0)
    expect(r.twoAtOnce).toEqual(['a', 'b'])
    expect(r.afterTwo).toBe(2)
    expect(r.disposed).toBe('POOL_DISPOSED')
    expect(r.afterDispose).toBe(0)
  })

  it.runIf(hooks)('a builtin that ignores the interrupt comes back as TIMEOUT on time, and its worker is killed', () => {
    const r = scenario('stuck', withHooks)
    expect(r.code).toBe('TIMEOUT')
    expect(r.message).toBe('Script execution timed out after 300ms')
    expect(r.elapsed).toBeLessThan(300 + 250)
    expect(r.gone).toBeGreaterThanOrEqual(0) // the process is gone, not left spinning
    expect(r.after).toBe(2)
    expect(r.replaced).toBe(1)
    expect(r.newPid).toBe(true)
    expect(r.indexOf).toBe('TIMEOUT')
    expect(r.indexOfElapsed).toBeLessThan(300 + 250)
  })

  it.runIf(hooks)("one stuck script does not end its neighbour's run on the same worker", () => {
    const r = scenario('neighbour', withHooks)
    expect(r.stuck).toBe('TIMEOUT')
    expect(r.stuckAt).toBeLessThan(20 + 200 + 250)
    expect(r.aliveAfterStuck).toBe(true) // draining: kept for the neighbour
    expect(r.neighbour).toBe('slow')
    expect(r.gone).toBeGreaterThanOrEqual(0) // killed once the neighbour finished
    expect(r.next).toBe(3)
    expect(r.left).toBe(1)
  })

  it.runIf(hooks)('a stuck thread holds only its own execution: parked neighbours run on a spare thread of the same worker', () => {
    const r = scenario('parked', withHooks)
    expect(r.stuck).toBe('TIMEOUT')
    expect(r.stuckAt).toBeLessThan(100 + 300 + 250)
    expect(r.aliveAfterStuck).toBe(true) // draining: kept for the neighbours
    expect(r.meanwhile).toBe(4)
    expect(r.workersMeanwhile).toBe(2)
    expect(r.neighbours).toEqual([['slow', 1], ['slow', 2]])
    // Their own deadline is 6 s; the tool answers at 2 s, while the stuck thread spins for 20 s.
    for (const at of r.neighboursAt) expect(at).toBeLessThan(6000)
    expect(r.gone).toBeGreaterThanOrEqual(0) // killed once they were done
  })

  it.runIf(hooks)('a crashing worker: the host survives, that run is WORKER_CRASHED, other workers carry on', () => {
    const r = scenario('crash', withHooks)
    expect(r.crash).toBe('WORKER_CRASHED')
    expect(r.message).toMatch(/signal/)
    expect(r.other).toBe('ok')
    expect(r.otherResult).toBe('slow')
    expect(r.after).toBe(5)
    expect(r.left).toBeGreaterThanOrEqual(1)
    expect(r.left).toBeLessThanOrEqual(2)
  })

  it.runIf(hooks)('a crash retries neighbours that had not called a tool, on a fresh worker', () => {
    const r = scenario('neighbours', withHooks)
    expect(r.crash).toBe('WORKER_CRASHED')
    expect(r.withTool).toBe('WORKER_CRASHED')
    expect(r.busy).toBe('ok')
    expect(r.busyResult).toBe('done')
    expect(r.after).toBe(6)
    expect(r.left).toBe(1)
  })

  it.runIf(hooks)('seccomp: an open() from inside the worker kills it, and only it', () => {
    const r = scenario('seccomp', withHooks)
    expect(r.code).toBe('WORKER_CRASHED')
    expect(r.message).toMatch(/SIGSYS/)
    expect(r.after).toBe(7)
    expect(r.warnings).toEqual([])
  })

  it('the release worker has no test hooks', () => {
    expect(scenario('unfiltered').hooks).toEqual(['undefined', 'undefined'])
  })
})
