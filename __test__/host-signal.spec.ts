// CodeCallHost.signal (issue 41): an AbortSignal ends execute, invoke and handle — a saved script
// run by name and the saved scripts a plan calls included — with EXECUTION_ABORTED, as
// ExecuteOptions.signal does a Sandbox's: while a tool or approve() is pending, and at once (nothing
// runs, no tool is called) when it is aborted already. Omitted, undefined and null: no signal.
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, type CodeCallHost } from '../index.js'

const linux = process.platform === 'linux'
const isolations = linux ? (['thread', 'process'] as const) : (['thread'] as const)

const tools = [
  { name: 'slow:wait', description: 'Waits until released', annotations: { readOnlyHint: true } },
  { name: 'fast:ping', description: 'Answers at once', annotations: { readOnlyHint: true } },
  { name: 'files:delete', description: 'Delete a file', annotations: { destructiveHint: true } },
]

const engines: CodeCall[] = []
afterAll(() => Promise.all(engines.map((cc) => cc.dispose())))

function make(options: ConstructorParameters<typeof CodeCall>[0] = {}) {
  const cc = new CodeCall({ directCalls: { enabled: true }, ...options })
  cc.setTools(tools)
  engines.push(cc)
  return cc
}

/** A host whose `slow:wait` waits until `release()`; it records every tool call. */
function makeHost(extra: Partial<CodeCallHost> = {}) {
  const calls: string[] = []
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  let started!: () => void
  const waiting = new Promise<void>((r) => (started = r))
  const host: CodeCallHost = {
    callTool: async (name) => {
      calls.push(name)
      if (name === 'slow:wait') {
        started()
        await released
      }
      return { ok: true }
    },
    ...extra,
  }
  return { host, calls, release, waiting }
}

/** A host whose `approve()` never answers; resolves `asked` when it is asked. */
function approvalHost(signal: AbortSignal) {
  let asked!: () => void
  const askedP = new Promise<void>((r) => (asked = r))
  const calls: string[] = []
  const host: CodeCallHost = {
    callTool: (name) => {
      calls.push(name)
      return { ok: true }
    },
    approve: () => {
      asked()
      return new Promise(() => {})
    },
    signal,
  }
  return { host, asked: askedP, calls }
}

const aborted = { status: 'runtime_error', error: { code: 'EXECUTION_ABORTED' } }

for (const isolation of isolations) {
  describe(`host.signal (${isolation} isolation)`, () => {
    it('aborting ends execute and handle(execute) while a tool is pending', async () => {
      const cc = make({ vm: { isolation } })
      for (const run of [
        (host: CodeCallHost) => cc.execute({ script: "await callTool('slow:wait', {}); return 1" }, host),
        (host: CodeCallHost) => cc.handle('codecall:execute', { script: "await callTool('slow:wait', {}); return 1" }, host),
      ]) {
        const controller = new AbortController()
        const { host, waiting, release } = makeHost({ signal: controller.signal })
        const pending = run(host)
        await waiting
        controller.abort()
        expect(await pending).toMatchObject(aborted)
        release()
      }
    })

    it('an already-aborted signal runs nothing', async () => {
      const cc = make({ vm: { isolation } })
      const { host, calls } = makeHost({ signal: AbortSignal.abort() })
      expect(await cc.execute({ script: "await callTool('fast:ping', {}); return 1" }, host)).toMatchObject(aborted)
      expect(await cc.handle('codecall:execute', { script: "await callTool('fast:ping', {}); return 1" }, host)).toMatchObject(aborted)
      expect(await cc.invoke({ tool: 'fast:ping', input: {} }, host)).toMatchObject({ status: 'error', error: { code: 'EXECUTION_ABORTED', toolName: 'fast:ping' } })
      expect(await cc.handle('codecall:invoke', { tool: 'fast:ping', input: {} }, host)).toMatchObject({ status: 'error', error: { code: 'EXECUTION_ABORTED' } })
      expect(calls).toEqual([])
    })

    it('aborting while approve() is pending ends execute', async () => {
      const cc = make({ vm: { isolation }, approval: { require: 'destructive', timeoutMs: 600_000 } })
      const controller = new AbortController()
      const { host, asked, calls } = approvalHost(controller.signal)
      const pending = cc.execute({ script: "await callTool('files:delete', {}); return 1" }, host)
      await asked
      controller.abort()
      // The approval's timeout is ten minutes: only the abort can end it within the test's time.
      expect(await pending).toMatchObject(aborted)
      expect(calls).toEqual([])
    })

    it('saved scripts: a run by name and a nested run end too', async () => {
      const cc = make({ vm: { isolation }, scripts: { store: ':memory:' } })
      await cc.scripts!.save({ name: 'waiter', description: 'Waits, then pings', script: "await callTool('slow:wait', {}); await callTool('fast:ping', {}); return 1" })
      for (const input of [{ scriptName: 'waiter' }, { script: "return await callTool('saved:waiter', {})" }]) {
        const controller = new AbortController()
        const { host, calls, waiting, release } = makeHost({ signal: controller.signal })
        const pending = cc.execute(input, host)
        await waiting
        controller.abort()
        expect(await pending).toMatchObject(aborted)
        // The nested run ended with its caller: released now, it calls nothing more.
        release()
        await new Promise((r) => setTimeout(r, 200))
        expect(calls).toEqual(['slow:wait'])
      }
      // invoke of a saved script is a run too.
      const controller = new AbortController()
      const { host, waiting, release } = makeHost({ signal: controller.signal })
      const pending = cc.invoke({ tool: 'saved:waiter', input: {} }, host)
      await waiting
      controller.abort()
      expect(await pending).toMatchObject({ status: 'error', error: { details: { code: 'EXECUTION_ABORTED' } } })
      release()
    })
  })
}

describe('host.signal with invoke', () => {
  it('aborting ends an invoke whose tool is pending; its late answer is dropped', async () => {
    const cc = make()
    const controller = new AbortController()
    const events: unknown[] = []
    const { host, waiting, release } = makeHost({ signal: controller.signal, onEvent: (e) => events.push(e) })
    const pending = cc.invoke({ tool: 'slow:wait', input: {} }, host)
    await waiting
    controller.abort()
    expect(await pending).toMatchObject({ status: 'error', error: { code: 'EXECUTION_ABORTED', toolName: 'slow:wait', toolInput: {} } })
    release()
    await new Promise((r) => setTimeout(r, 50))
    expect(events.map((e: any) => e.type)).toEqual(['tool_call_start'])
  })

  it('aborting ends an invoke waiting for approve()', async () => {
    const cc = make({ approval: { require: 'destructive', timeoutMs: 600_000 } })
    const controller = new AbortController()
    const { host, asked, calls } = approvalHost(controller.signal)
    const pending = cc.invoke({ tool: 'files:delete', input: {} }, host)
    await asked
    controller.abort()
    expect(await pending).toMatchObject({ status: 'error', error: { code: 'EXECUTION_ABORTED' } })
    expect(calls).toEqual([])
  })

  it('omitted, undefined and null mean no signal; anything else is ERR_INVALID_ARG', async () => {
    const cc = make()
    for (const signal of ['omitted', undefined, null]) {
      const { host } = makeHost(signal === 'omitted' ? {} : ({ signal } as never))
      expect(await cc.execute({ script: "return await callTool('fast:ping', {})" }, host)).toMatchObject({ status: 'ok', result: { ok: true } })
      expect(await cc.handle('codecall:execute', { script: 'return 2' }, host)).toMatchObject({ status: 'ok', result: 2 })
      expect(await cc.invoke({ tool: 'fast:ping', input: {} }, host)).toMatchObject({ status: 'ok', result: { ok: true } })
      expect(await cc.handle('codecall:invoke', { tool: 'fast:ping', input: {} }, host)).toMatchObject({ status: 'ok' })
    }
    for (const signal of [{}, 'abort', 1]) {
      const { host } = makeHost({ signal } as never)
      await expect(cc.execute({ script: 'return 1' }, host)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(/host\.signal/) })
      await expect(cc.invoke({ tool: 'fast:ping', input: {} }, host)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG', message: expect.stringMatching(/host\.signal/) })
    }
  })

  it('a signal that is never aborted changes nothing', async () => {
    const cc = make()
    const controller = new AbortController()
    const { host, calls } = makeHost({ signal: controller.signal })
    expect(await cc.execute({ script: "await callTool('fast:ping', {}); return 3" }, host)).toMatchObject({ status: 'ok', result: 3 })
    expect(await cc.invoke({ tool: 'fast:ping', input: {} }, host)).toMatchObject({ status: 'ok' })
    expect(calls).toEqual(['fast:ping', 'fast:ping'])
  })
})
