// `@codecall/native/stateless`: approvals across requests for a host with its own wiring
// (api.md §12) — the engine API under the gateway's and the adapter's input_required.
import { afterAll, describe, expect, it } from 'vitest'
import { CodeCall } from '../index.js'
import { ApprovalRounds } from '../lib/adapters/stateless.mjs'

const engine = new CodeCall({ approval: { ask: ['shop:delete'] } })
engine.setTools([
  { name: 'shop:list', description: 'List the items', annotations: { readOnlyHint: true } },
  { name: 'shop:delete', description: 'Delete an item', inputSchema: { type: 'object', properties: { id: { type: 'number' } } } },
])
afterAll(() => engine.dispose())

/** A host of one request: counts the calls that reached it. */
function host() {
  const calls: string[] = []
  return {
    calls,
    callTool: (name: string, input: any) => {
      calls.push(name)
      return name === 'shop:list' ? [1, 2, 3] : { deleted: input.id }
    },
  }
}

const script = "const items = await callTool('shop:list', {}); const d = await callTool('shop:delete', { id: items[0] }); return d.deleted"
const args = { script }

describe('ApprovalRounds', () => {
  const rounds = new ApprovalRounds(engine, { stateKey: 'a-test-key-of-enough-bytes' })
  afterAll(() => rounds.close())

  it('asks with input_required, then the retry (another request, another host) continues the same run', async () => {
    const first = host()
    const out = await rounds.handle('codecall:execute', args, first, { canElicit: true })
    expect(out.resultType).toBe('input_required')
    if (out.resultType !== 'input_required') return
    const [key] = Object.keys(out.inputRequests)
    expect(out.inputRequests[key].params.message).toContain("'shop:delete'")
    expect(first.calls).toEqual(['shop:list'])
    expect(rounds.waiting).toBe(1)
    const second = host()
    const done = await rounds.handle('codecall:execute', args, second, { canElicit: true, requestState: out.requestState, inputResponses: { [key]: { action: 'accept' } } })
    expect(done).toMatchObject({ resultType: 'complete', result: { status: 'ok', result: 1 } })
    // The list ran once, in the first request; the delete in the retry's.
    expect(first.calls).toEqual(['shop:list'])
    expect(second.calls).toEqual(['shop:delete'])
    expect(rounds.waiting).toBe(0)
    // Spent.
    await expect(rounds.handle('codecall:execute', args, host(), { canElicit: true, requestState: out.requestState, inputResponses: { [key]: { action: 'accept' } } })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
  })

  it('refuses a state for other arguments or another principal; nothing runs', async () => {
    const first = host()
    const out = await rounds.handle('codecall:execute', args, first, { canElicit: true, principal: 'alice' })
    if (out.resultType !== 'input_required') throw new Error('expected input_required')
    const other = host()
    await expect(rounds.handle('codecall:execute', { script: 'return 1' }, other, { canElicit: true, principal: 'alice', requestState: out.requestState })).rejects.toThrow(/other arguments/)
    await expect(rounds.handle('codecall:execute', args, other, { canElicit: true, principal: 'bob', requestState: out.requestState })).rejects.toThrow(/another principal/)
    expect(other.calls).toEqual([])
    // Declined: the delete never reaches the host.
    const [key] = Object.keys(out.inputRequests)
    const done = await rounds.handle('codecall:execute', args, other, { canElicit: true, principal: 'alice', requestState: out.requestState, inputResponses: { [key]: { action: 'decline' } } })
    expect(done.resultType).toBe('complete')
    expect((done as any).result.error.message).toContain('declined by the user')
    expect(other.calls).toEqual([])
  })

  it('a client that cannot elicit gets whenUnavailable; optional arguments may be null or absent', async () => {
    for (const request of [undefined, null, {}, { canElicit: null, requestState: null, inputResponses: null, principal: null, signal: null }]) {
      const h = host()
      const out = await rounds.handle('codecall:execute', args, h, request as any)
      expect(out.resultType).toBe('complete')
      expect((out as any).result.error.message).toContain('the client cannot ask for approval')
      expect(h.calls).toEqual(['shop:list'])
    }
    expect(() => new ApprovalRounds(engine, null)).not.toThrow()
    expect(() => new ApprovalRounds(engine, { stateKey: null, approvalTimeoutMs: null })).not.toThrow()
    expect(() => new ApprovalRounds(engine, { stateKey: 'short' })).toThrow(/at least 16 bytes/)
    expect(() => new ApprovalRounds({} as any)).toThrow(/must be a CodeCall/)
  })

  it("without an option of its own, the engine's stateKey seals the state (CodeCallOptions.stateKey)", async () => {
    const keyed = new CodeCall({ approval: { ask: ['shop:delete'] }, stateKey: 'the-engine-key-0123456789' })
    const same = new CodeCall({ approval: { ask: ['shop:delete'] }, stateKey: 'the-engine-key-0123456789' })
    const other = new CodeCall({ approval: { ask: ['shop:delete'] }, stateKey: 'another-engine-key-98765' })
    try {
      for (const e of [keyed, same, other]) e.setTools([{ name: 'shop:list' }, { name: 'shop:delete' }])
      const a = new ApprovalRounds(keyed)
      const out = await a.handle('codecall:execute', args, host(), { canElicit: true })
      if (out.resultType !== 'input_required') throw new Error('expected input_required')
      // The same key opens the seal (the run itself lives in the first one's memory).
      await expect(new ApprovalRounds(same).handle('codecall:execute', args, host(), { canElicit: true, requestState: out.requestState })).rejects.toThrow(/no such run here/)
      await expect(new ApprovalRounds(other).handle('codecall:execute', args, host(), { canElicit: true, requestState: out.requestState })).rejects.toThrow(/forged or altered/)
      a.close()
    } finally {
      await Promise.all([keyed.dispose(), same.dispose(), other.dispose()])
    }
    for (const stateKey of [null, undefined]) await new CodeCall({ stateKey }).dispose()
    expect(() => new CodeCall({ stateKey: 'short' })).toThrow(/options\.stateKey must be at least 16 bytes/)
    expect(() => new CodeCall({ stateKey: 42 as any })).toThrow(/options\.stateKey/)
  })

  it('a run with no call needing approval completes in one round', async () => {
    const out = await rounds.handle('codecall:execute', { script: "return (await callTool('shop:list', {})).length" }, host(), { canElicit: true })
    expect(out).toMatchObject({ resultType: 'complete', result: { status: 'ok', result: 3 } })
  })
})
