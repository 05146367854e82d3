// Spec §9 in the engine: which calls need a person's yes, asked through `CodeCallHost.approve`,
// in both isolations. A call not approved never reaches the host's callTool and has no
// tool_call_start/_end; the wait does not count against the script's timeout.
import { afterAll, describe, expect, it } from 'vitest'
import { CodeCall, type ApprovalRequest, type CodeCallHost, type ExecuteEvent, type ToolDefinition } from '../index.js'

const TOOLS: ToolDefinition[] = [
  { name: 'repo:get', description: 'Read a repository', annotations: { readOnlyHint: true } },
  { name: 'repo:star', description: 'Star a repository', annotations: { readOnlyHint: false, destructiveHint: false } },
  { name: 'repo:delete', description: 'Delete a repository', annotations: { destructiveHint: true } },
  { name: 'repo:touch', description: 'No annotations: MCP says it may destroy' },
  { name: 'repo:wipe', description: 'Denied by its own metadata', annotations: { readOnlyHint: true }, approval: 'deny' },
]

type Answer = (r: ApprovalRequest) => unknown

function harness(answer?: Answer) {
  const calls: string[] = []
  const events: ExecuteEvent[] = []
  const asked: ApprovalRequest[] = []
  const host: CodeCallHost = {
    callTool: (name, input) => {
      calls.push(name)
      return { name, input }
    },
    onEvent: (e) => events.push(e),
  }
  if (answer) host.approve = (r) => (asked.push(r), answer(r)) as any
  return { calls, events, asked, host }
}

const later = <T>(ms: number, v: T) => new Promise<T>((r) => setTimeout(() => r(v), ms))

for (const isolation of ['thread', 'process'] as const) {
  describe(`approvals (${isolation} isolation)`, () => {
    const engines: CodeCall[] = []
    const make = (approval: Record<string, unknown>, vm: Record<string, unknown> = {}) => {
      const cc = new CodeCall({ approval, vm: { isolation, ...vm }, directCalls: { enabled: true } })
      cc.setTools(TOOLS)
      engines.push(cc)
      return cc
    }
    afterAll(async () => {
      for (const cc of engines) await cc.dispose()
    })
    const execute = (cc: CodeCall, script: string, host: CodeCallHost) => cc.execute({ script }, host) as Promise<any>

    it("require 'destructive': MCP's defaults decide who is asked, with the annotations and the input", async () => {
      const cc = make({ require: 'destructive' })
      const h = harness(() => 'approve')
      const r = await execute(cc, "await callTool('repo:get', { n: 'get' }); await callTool('repo:star', { n: 'star' }); await callTool('repo:delete', { n: 'delete' }); await callTool('repo:touch', { n: 'touch' }); return 1", h.host)
      expect(r).toMatchObject({ status: 'ok', result: 1 })
      expect(h.asked.map((a) => [a.toolName, a.reason])).toEqual([['repo:delete', 'destructive'], ['repo:touch', 'destructive']])
      expect(h.asked[0]).toMatchObject({ input: { n: 'delete' }, annotations: { destructiveHint: true }, executionId: r.stats.executionId })
      expect(h.calls).toEqual(['repo:get', 'repo:star', 'repo:delete', 'repo:touch'])
      // The approval event comes before that call's start.
      const kinds = h.events.filter((e) => e.type !== 'log').map((e) => `${e.type}:${(e as any).toolName}`)
      expect(kinds.indexOf('approval:repo:delete')).toBeLessThan(kinds.indexOf('tool_call_start:repo:delete'))
      expect(h.events.find((e) => e.type === 'approval')).toMatchObject({ type: 'approval', toolName: 'repo:delete', decision: 'approve', waitedMs: expect.any(Number) })
    })

    it('a declined call never reaches the tool, has no start or end, and the script can go on', async () => {
      const cc = make({ require: 'writes' })
      const h = harness((r) => (r.toolName === 'repo:delete' ? 'decline' : 'approve'))
      const r = await execute(cc, "const a = await callTool('repo:delete', {}, { throwOnError: false }); const b = await callTool('repo:star', {}); return [a.error, b.name]", h.host)
      expect(r).toMatchObject({ status: 'ok', result: [{ code: 'ACCESS_DENIED', message: "Tool 'repo:delete' was not approved: declined by the user" }, 'repo:star'] })
      expect(h.calls).toEqual(['repo:star'])
      const forDelete = h.events.filter((e) => (e as any).toolName === 'repo:delete').map((e) => [e.type, (e as any).decision])
      expect(forDelete).toEqual([['approval', 'decline']])
    })

    it("deny globs and a tool's own 'deny' refuse without asking; allow globs skip asking", async () => {
      const cc = make({ require: 'all', deny: ['repo:del*'], allow: ['repo:get'] })
      const h = harness(() => 'approve')
      const r = await execute(cc, `
        const d = await callTool('repo:delete', {}, { throwOnError: false })
        const w = await callTool('repo:wipe', {}, { throwOnError: false })
        await callTool('repo:get', {})
        return [d.error.message, w.error.code]`, h.host)
      expect(r.result).toEqual(["Tool 'repo:delete' is denied by the approval policy (deny: 'repo:del*')", 'ACCESS_DENIED'])
      expect(h.asked).toEqual([])
      expect(h.calls).toEqual(['repo:get'])
      expect(h.events.filter((e) => e.type === 'approval')).toEqual([])
    })

    it('approve_always covers the rest of the execution for that tool only', async () => {
      const cc = make({ require: 'all' })
      const h = harness((r) => (r.toolName === 'repo:star' ? 'approve_always' : 'approve'))
      await execute(cc, "await callTool('repo:star', {}); await callTool('repo:star', {}); await callTool('repo:get', {}); await callTool('repo:get', {}); return 1", h.host)
      expect(h.asked.map((a) => a.toolName)).toEqual(['repo:star', 'repo:get', 'repo:get'])
      expect(h.calls).toEqual(['repo:star', 'repo:star', 'repo:get', 'repo:get'])
    })

    it("the wait does not count against the script's timeout", async () => {
      const cc = make({ require: 'all' }, { timeoutMs: 400 })
      const h = harness(() => later(1200, 'approve'))
      const r = await execute(cc, "const x = await callTool('repo:star', {}); return x.name", h.host)
      expect(r).toMatchObject({ status: 'ok', result: 'repo:star' })
      expect((h.events.find((e) => e.type === 'approval') as any).waitedMs).toBeGreaterThanOrEqual(1000)
    })

    it('other in-flight calls go on while a person decides; parallel asks come one at a time, in call order', async () => {
      const cc = make({ require: 'destructive' })
      let open = 0
      let most = 0
      const h = harness(async () => {
        most = Math.max(most, ++open)
        await later(100, null)
        open--
        return 'approve'
      })
      const r = await execute(cc, `
        const all = await Promise.all([callTool('repo:delete', { i: 1 }), callTool('repo:get', { i: 2 }), callTool('repo:touch', { i: 3 }), callTool('repo:delete', { i: 4 })])
        return all.map((x) => x.input.i)`, h.host)
      expect(r.result).toEqual([1, 2, 3, 4])
      expect(most).toBe(1)
      expect(h.asked.map((a) => (a.input as any).i)).toEqual([1, 3, 4])
      // The read-only call did not wait for the person.
      expect(h.calls[0]).toBe('repo:get')
    })

    it.each([
      ['timed out', { require: 'all', timeoutMs: 200 }, () => new Promise(() => {}), 'timeout', 'approval timed out'],
      ['no approve()', { require: 'all' }, undefined, 'unavailable', 'the client cannot ask for approval'],
      ['a throw', { require: 'all' }, () => { throw new Error('no UI') }, 'decline', 'declined by the user (approve() threw: no UI)'],
      ['another answer', { require: 'all' }, () => 'yes', 'decline', `declined by the user (approve() answered "yes", not 'approve', 'approve_always' or 'decline')`],
    ])('%s → ACCESS_DENIED that says which no', async (_, approval, answer, decision, why) => {
      const cc = make(approval)
      const h = harness(answer as Answer | undefined)
      const r = await execute(cc, "const a = await callTool('repo:star', {}, { throwOnError: false }); return a.error", h.host)
      expect(r.result).toEqual({ code: 'ACCESS_DENIED', message: `Tool 'repo:star' was not approved: ${why}` })
      expect(h.calls).toEqual([])
      expect(h.events.filter((e) => e.type === 'approval').map((e: any) => e.decision)).toEqual([decision])
    })

    it("whenUnavailable: 'allow' lets the call through when nobody can be asked", async () => {
      const cc = make({ require: 'all', whenUnavailable: 'allow' })
      const h = harness()
      const r = await execute(cc, "return (await callTool('repo:star', {})).name", h.host)
      expect(r.result).toBe('repo:star')
      expect(h.events.filter((e) => e.type === 'approval').map((e: any) => e.decision)).toEqual(['unavailable'])
    })

    it('invoke asks the same way', async () => {
      const cc = make({ require: 'destructive' })
      const yes = harness(() => 'approve')
      expect(await cc.invoke({ tool: 'repo:delete', input: { a: 1 } }, yes.host)).toMatchObject({ status: 'ok' })
      expect(yes.asked.map((a) => a.toolName)).toEqual(['repo:delete'])
      expect(yes.events.map((e) => e.type)).toEqual(['approval', 'tool_call_start', 'tool_call_end'])
      const no = harness(() => 'decline')
      expect(await cc.invoke({ tool: 'repo:delete', input: { a: 1 } }, no.host)).toEqual({
        status: 'error',
        error: { code: 'ACCESS_DENIED', message: "Tool 'repo:delete' was not approved: declined by the user", toolName: 'repo:delete', toolInput: { a: 1 } },
      })
      expect(no.calls).toEqual([])
      expect(no.events.map((e) => e.type)).toEqual(['approval'])
      const read = harness(() => 'decline')
      expect(await cc.invoke({ tool: 'repo:get', input: {} }, read.host)).toMatchObject({ status: 'ok' })
      expect(read.asked).toEqual([])
    })

    it("require 'none' (the default) never asks", async () => {
      const cc = make({})
      const h = harness(() => 'decline')
      await execute(cc, "await callTool('repo:delete', {}); return 1", h.host)
      expect(h.asked).toEqual([])
      expect(h.calls).toEqual(['repo:delete'])
    })
  })
}
