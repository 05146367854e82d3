// Issue 32, item 4 (spec §2.6: "the host checks an answer's size before it frames it"): a host
// answer larger than the execution can take is refused BEFORE it is serialized. JSON.stringify of
// a 270 MB string or of a 5·10^7-element array holds Node's event loop for seconds — every other
// execution's host calls wait — only for the bridge to find the JSON too large. host.js now counts
// a lower bound of the answer's JSON first (a string by its length, an array by its length, a
// typed array by its length…) and stops as soon as that passes the limit.
//
// Every attack runs in both isolations beside two executions parked on a 4 s host tool of the
// same sandbox (`poolSize: 1`: one thread, or one worker process), which must finish `ok` with
// their own results, while a 10 ms interval records the largest gap in Node's event loop. Before
// this change (bench/host-answers.mjs, BENCHMARKS.md "Host answers over the limit") the gap was
// about 1 s for the string and 9 s for the array, after it a few ms: HELD_MS is deliberately gross.
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, Sandbox, type CodeCallHost, type ExecuteHost, type ExecuteResult } from '../../index.js'

// The balanced preset's memoryLimitBytes: the largest answer its executions take.
const LIMIT = 64 * 1024 * 1024
// The most Node's event loop may be held while an answer is refused (machines are noisy).
const HELD_MS = 600
const TOO_LARGE = (n: number | string) =>
  new RegExp(
    `^The tool's answer is ${n} bytes of JSON, more than this execution can take \\(${LIMIT} bytes: its memoryLimitBytes\\); ${n} is a lower bound, counted without serializing it$`,
  )

// Built once, outside the timed windows (building the array takes a second or two itself).
let bigArray: string[] | undefined
function array(): string[] {
  if (bigArray === undefined) {
    bigArray = []
    for (let i = 0; i < 5e7; i++) bigArray.push('xx')
  }
  return bigArray
}
const bigString = 'x'.repeat(270e6)

/**
 * Runs `attack` while two executions are parked on a 4 s host tool of `sb`; checks that they end
 * `ok` with their own results. `held` is the largest gap between 10 ms ticks during the attack.
 */
async function withNeighbours<T>(sb: Sandbox | CodeCall, attack: () => Promise<T>): Promise<{ result: T; held: number }> {
  const host = (n: number): ExecuteHost => ({
    callTool: (name, input) => new Promise((resolve) => setTimeout(() => resolve({ name, n, input }), 4000)),
  })
  const script = (n: number) => `const r = await callTool('slow:echo', { n: ${n} }); return [r.n, r.input.n]`
  const neighbours = [1, 2].map((n) =>
    sb instanceof Sandbox ? sb.execute(script(n), host(n)) : (sb.execute({ script: script(n) }, host(n) as CodeCallHost) as Promise<ExecuteResult>),
  )
  // Both are parked on their tool before the attack starts.
  await new Promise((resolve) => setTimeout(resolve, 200))
  let last = performance.now()
  let held = 0
  const timer = setInterval(() => {
    const now = performance.now()
    held = Math.max(held, now - last)
    last = now
  }, 10)
  let result: T
  try {
    result = await attack()
  } finally {
    clearInterval(timer)
  }
  held = Math.max(held, performance.now() - last)
  const [a, b] = await Promise.all(neighbours)
  expect(a).toMatchObject({ status: 'ok', result: [1, 1] })
  expect(b).toMatchObject({ status: 'ok', result: [2, 2] })
  return { result, held }
}

const held: Record<string, number> = {}
afterAll(() => {
  // Reported, not asserted tightly: machines are noisy.
  console.log('largest event-loop gap while the answer was refused (ms):', held)
})

const callOnce = "const r = await callTool('t:big', {}, { throwOnError: false }); return r"

for (const isolation of ['thread', 'process'] as const) {
  describe(`${isolation} isolation`, () => {
    const sb = new Sandbox({ isolation, poolSize: 1, preset: 'balanced' })
    afterAll(() => sb.dispose())

    describe('a tool answer over the limit is refused before it is serialized', () => {
      const deepWide = () => {
        // 1.5·10^5 keys of 1000 characters that JSON escapes (300 MB of JSON), under 3000 levels.
        const value = '"\n'.repeat(500)
        let v: unknown = Object.fromEntries(Array.from({ length: 1.5e5 }, (_, i) => [`key${i}`, value]))
        for (let i = 0; i < 3000; i++) v = { level: i, next: v }
        return v
      }
      const cases: [string, () => unknown, RegExp][] = [
        ['a 270 MB string', () => bigString, TOO_LARGE(270000002)],
        ['an array of 5·10^7 small strings', array, TOO_LARGE(100000001)],
        ['a deep and wide object', deepWide, TOO_LARGE('\\d+')],
        ['a typed array (JSON: an object of index keys)', () => new Uint8Array(2e7), TOO_LARGE('\\d+')],
        ['a Buffer (toJSON: an array of numbers)', () => Buffer.alloc(4e7), TOO_LARGE(80000026)],
        ['a toJSON that answers something huge', () => ({ toJSON: () => array() }), TOO_LARGE(100000001)],
        ['a getter that answers something huge', () => ({ ok: true, get data() { return bigString } }), TOO_LARGE('\\d+')],
        ['a cyclic object with a huge part before the cycle', () => {
          const o: Record<string, unknown> = { data: array() }
          o.self = o
          return o
        }, TOO_LARGE('\\d+')],
      ]
      for (const [what, make, message] of cases) {
        it(what, async () => {
          const answer = make()
          const r = await withNeighbours(sb, () => sb.execute(callOnce, { callTool: () => answer }))
          expect(r.result).toMatchObject({ status: 'ok', result: { success: false, error: { code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(message) } } })
          held[`${isolation}: ${what}`] = Math.round(r.held)
          expect(r.held).toBeLessThan(HELD_MS)
        })
      }

      it('a small answer still arrives, exactly', async () => {
        const answer = { ok: true, n: [1, -2.5, 1e21, null], s: 'é😀"\n', d: new Date(0), m: new Map([[1, 2]]), t: new Uint8Array([1, 2]), u: undefined }
        const r = await sb.execute("return await callTool('t:small', {})", { callTool: () => answer })
        expect(r).toMatchObject({ status: 'ok', result: JSON.parse(JSON.stringify(answer)) })
      })

      it('an answer just over the limit is refused, one just under it arrives', async () => {
        // JSON.stringify of a string of n characters is n + 2 bytes here.
        const over = await sb.execute(callOnce, { callTool: () => 'x'.repeat(LIMIT - 1) })
        expect(over).toMatchObject({ status: 'ok', result: { success: false, error: { message: expect.stringMatching(TOO_LARGE(LIMIT + 1)) } } })
        const under = await sb.execute("const r = await callTool('t:big', {}); return r.length", { callTool: () => 'x'.repeat(LIMIT / 2) })
        expect(under).toMatchObject({ status: 'ok', result: LIMIT / 2 })
      })

      it('a cycle, a BigInt, a throwing getter: the errors JSON.stringify throws, as before', async () => {
        const cyclic: Record<string, unknown> = { a: [1, 2] }
        cyclic.self = cyclic
        // A cycle back to a container 10 levels down: followed to the count's depth limit, then
        // left to JSON.stringify.
        const chain: Record<string, unknown>[] = [{}]
        for (let i = 1; i < 20; i++) chain.push((chain[i - 1].next = {}) as Record<string, unknown>)
        chain[19].back = chain[10]
        const answers: [unknown, RegExp][] = [
          [cyclic, /Converting circular structure to JSON/],
          [chain[0], /Converting circular structure to JSON/],
          [[1, 2n], /BigInt/],
          [{ get x() { throw new Error('getter says no') } }, /getter says no/],
        ]
        for (const [answer, message] of answers) {
          const r = await sb.execute(callOnce, { callTool: () => answer })
          expect(r).toMatchObject({ status: 'ok', result: { success: false, error: { code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(message) } } })
        }
      })
    })

    describe('the other answers from the host', () => {
      it("a host function's answer", async () => {
        const r = await withNeighbours(sb, () =>
          sb.execute('try { await big() } catch (e) { return e.message }', { functions: { big: () => array() } }),
        )
        expect(r.result).toMatchObject({ status: 'ok', result: expect.stringMatching(TOO_LARGE(100000001)) })
        expect(r.held).toBeLessThan(HELD_MS)
      })

      it("getTool's answer: null, as for any answer it cannot take", async () => {
        const r = await withNeighbours(sb, () =>
          sb.execute("return getTool('t:big')", { callTool: () => 1, getTool: (name) => ({ name, description: 'd', inputSchema: { enum: array() } }) }),
        )
        expect(r.result).toMatchObject({ status: 'ok', result: null })
        expect(r.held).toBeLessThan(HELD_MS)
      })

      it('a host error with a 270 MB message and huge details', async () => {
        const host: ExecuteHost = {
          callTool: () => {
            throw Object.assign(new Error(bigString), { code: 'C'.repeat(1e6), details: array() })
          },
        }
        const r = await withNeighbours(sb, () => sb.execute("return await callTool('t:x', {})", host))
        expect(r.result).toMatchObject({ status: 'tool_error', error: { message: expect.stringMatching(/^x+… \(at least 270000000 bytes in all\)$/) } })
        expect(JSON.stringify(r.result).length).toBeLessThan(40_000)
        expect(r.held).toBeLessThan(HELD_MS)
      })

      it('a host error with a 20 MB message: its exact size', async () => {
        const r = await sb.execute("return await callTool('t:x', {})", { callTool: () => { throw new Error('é'.repeat(20e6)) } })
        expect(r).toMatchObject({ status: 'tool_error', error: { message: expect.stringMatching(/^é+… \(40000000 bytes in all\)$/) } })
      })
    })

    describe('CodeCall', () => {
      const tools = [
        { name: 'repo:big', description: 'Answers a lot', annotations: { readOnlyHint: true } },
        { name: 'repo:delete', description: 'Needs a yes', annotations: { destructiveHint: true } },
        { name: 'slow:echo', description: 'Slow', annotations: { readOnlyHint: true } },
      ]
      const cc = new CodeCall({ vm: { isolation, poolSize: 1, preset: 'balanced' }, directCalls: { enabled: true }, approval: { require: 'destructive' } })
      cc.setTools(tools)
      afterAll(() => cc.dispose())

      it("a script's tool call", async () => {
        const host: CodeCallHost = { callTool: () => array() }
        const r = await withNeighbours(cc, () => cc.execute({ script: "const r = await callTool('repo:big', {}, { throwOnError: false }); return r" }, host) as Promise<ExecuteResult>)
        expect(r.result).toMatchObject({ status: 'ok', result: { success: false, error: { code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(TOO_LARGE(100000001)) } } })
        expect(r.held).toBeLessThan(HELD_MS)
      })

      it('a direct call (invoke)', async () => {
        const r = await withNeighbours(cc, () => cc.invoke({ tool: 'repo:big', input: {} }, { callTool: () => bigString }))
        expect(r.result).toMatchObject({ status: 'error', error: { code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(TOO_LARGE(270000002)), toolName: 'repo:big' } })
        expect(r.held).toBeLessThan(HELD_MS)
      })

      it("approve()'s answer, in a script and in a direct call: a decline that says so", async () => {
        const why = /^Tool 'repo:delete' was not approved: declined by the user \(approve\(\) answered \d+ bytes of JSON or more, not 'approve', 'approve_always' or 'decline'\)$/
        const host: CodeCallHost = { callTool: () => 1, approve: () => bigString as never }
        const r = await withNeighbours(cc, () => cc.execute({ script: "const r = await callTool('repo:delete', {}, { throwOnError: false }); return r" }, host) as Promise<ExecuteResult>)
        expect(r.result).toMatchObject({ status: 'ok', result: { success: false, error: { code: 'ACCESS_DENIED', message: expect.stringMatching(why) } } })
        expect(r.held).toBeLessThan(HELD_MS)
        const direct = await cc.invoke({ tool: 'repo:delete', input: {} }, host)
        expect(direct).toMatchObject({ status: 'error', error: { code: 'ACCESS_DENIED', message: expect.stringMatching(why) } })
      })
    })
  })
}
