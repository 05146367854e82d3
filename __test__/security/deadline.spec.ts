// Issue 40, item 3: the deadline is seen within one native step, whatever its weight. QuickJS polls
// its interrupt every 10 000 bytecode branches; a loop whose every step is one builtin call that
// takes a millisecond and charges nothing (it allocates nothing, or walks a chain) was reported
// `TIMEOUT` on time by the watchdog, but its thread went on for 10–40 s. At the deadline the pool
// now sets the runtime's interrupt counter to 0 (`JS_RequestInterrupt`), so the next branch or call
// stops the script.
//
// What the tests observe, without timing anything:
// - Thread isolation: a thread still busy 100 ms after its execution's deadline is set aside (and
//   replaced); past 4 set aside at once, the sandbox warns. Each attack runs 5 times, one after
//   another, on a one-thread sandbox: had each kept its thread busy for seconds, the fifth would
//   make the sandbox warn; a script that stops within one step never leaves a thread set aside.
// - Process isolation (the worker runs the same pool): a result the execution reports itself
//   carries its logs; one the host reports for it (40 ms after the deadline, when the worker has
//   not answered) has none, and that worker is then retired. On a loaded machine a stopped script
//   may still miss 40 ms, so each attack is tried up to three times, and the families are counted
//   together: before the fix, only the 8 families whose steps were already cheap stopped
//   themselves; now (nearly) all do.
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteResult } from '../../index.js'
import { withNeighbours } from './neighbours.js'

/** Two plain executions parked on a host tool that answers while the attack is past its deadline. */
const withParkedNeighbours = (sb: Sandbox, attack: () => Promise<ExecuteResult>) =>
  withNeighbours(sb, attack, { answerMs: 600, timeoutMs: 4000, settleMs: 20 })

/** The attack's own report (with its log line), at most three tries. */
async function stopsItself(run: () => Promise<ExecuteResult>): Promise<ExecuteResult> {
  let r = await run()
  for (let i = 1; i < 3 && r.status === 'timeout' && r.logs === undefined; i++) r = await run()
  return r
}

// Each step is about a millisecond of C that polls nothing and charges nothing.
export const FAMILIES: [string, string][] = [
  ['trim of a string of spaces', "const s = ' '.repeat(4e6) + 'x' + ' '.repeat(4e6); for (;;) s.trim()"],
  ['trimStart / trimEnd', "const s = ' '.repeat(8e6) + 'x'; for (;;) { s.trimStart(); s.trimEnd() }"],
  ['join of empty strings', "const a = Array(1e6).fill(''); for (;;) a.join('')"],
  ['toString of an array of empty strings', "const a = Array(1e6).fill(''); for (;;) String(a)"],
  ['flat of empty arrays', 'const a = Array.from({ length: 3e5 }, () => []); for (;;) a.flat()'],
  ['a 4 MB string as a property key (get)', "const k = 'k'.repeat(4e6), o = {}; for (;;) o[k]"],
  ['a 4 MB string as a property key (in, set)', "const k = 'k'.repeat(4e6), o = {}; for (;;) { k in o; o[k] = 1; delete o[k] }"],
  ['Object.hasOwn with a long key', "const k = 'q'.repeat(4e6), o = {}; for (;;) Object.hasOwn(o, k)"],
  ['a prototype chain of 5e4, walked', 'let p = {}; for (let i = 0; i < 5e4; i++) p = Object.create(p); for (;;) p.x'],
  ['a prototype chain of 5e4, instanceof', 'function C() {} let p = {}; for (let i = 0; i < 5e4; i++) p = Object.create(p); for (;;) p instanceof C'],
  ['a Proxy chain without traps', 'let p = {}; for (let i = 0; i < 800; i++) p = new Proxy(p, {}); for (;;) p.x'],
  ['a bound-function chain, called', 'let f = () => 0; for (let i = 0; i < 800; i++) f = f.bind(null); for (;;) f()'],
  ['a bound-function chain, instanceof', 'let f = function () {}; for (let i = 0; i < 800; i++) f = f.bind(null); for (;;) ({}) instanceof f'],
  ['includes of a fast array', 'const a = Array(2e6).fill(1); for (;;) a.includes(2)'],
  ['a regexp scan without a match', "const s = 'a'.repeat(4e6); for (;;) /b/.test(s)"],
]

const LOOPS = { preset: 'experimental', maxIterations: 1e12, memoryLimitBytes: 256 << 20 } as const
const TIMEOUT = { status: 'timeout', error: { code: 'TIMEOUT' } }
const setAside = (sb: Sandbox) => sb.warnings.filter((w) => /set aside/.test(w))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * `attack` five times, one after another, on a new one-thread sandbox (the first beside two
 * parked neighbours); then no thread may have been set aside past the bound (no warning) and the
 * sandbox answers at once.
 */
async function neverStuck(attack: (sb: Sandbox) => Promise<ExecuteResult>, expected: object) {
  const sb = new Sandbox({ isolation: 'thread', poolSize: 1, ...LOOPS })
  try {
    expect(await withParkedNeighbours(sb, () => attack(sb))).toMatchObject(expected)
    for (let i = 0; i < 4; i++) expect(await attack(sb)).toMatchObject(expected)
    // Time for the watchdog to look at the last one (it sets a thread aside 100 ms after a deadline).
    await sleep(250)
    expect(setAside(sb)).toEqual([])
    expect(await sb.execute('return 1', {}, { timeoutMs: 1000 })).toMatchObject({ status: 'ok', result: 1 })
  } finally {
    await sb.dispose()
  }
}

describe('thread isolation: a loop of uncharged builtins stops at its deadline and frees its thread', () => {
  for (const [what, loop] of FAMILIES) {
    it(what, () => neverStuck((sb) => sb.execute(`console.log('start')\n${loop}`, {}, { timeoutMs: 300 }), TIMEOUT))
  }

  it('abort stops such a loop at its next step', () =>
    neverStuck(async (sb) => {
      const controller = new AbortController()
      const running = sb.execute("const s = ' '.repeat(8e6) + 'x'; for (;;) s.trim()", {}, { timeoutMs: 20_000, signal: controller.signal })
      setTimeout(() => controller.abort(), 200)
      return running
    }, { status: 'runtime_error', error: { code: 'EXECUTION_ABORTED' } }))
})

describe('process isolation: a loop of uncharged builtins stops at its deadline, beside two neighbours', () => {
  const sb = new Sandbox({ isolation: 'process', poolSize: 1, ...LOOPS })
  afterAll(() => sb.dispose())
  const stoppedItself: string[] = []

  for (const [what, loop] of FAMILIES) {
    it(what, async () => {
      const r = await stopsItself(() => withParkedNeighbours(sb, () => sb.execute(`console.log('start')\n${loop}`, {}, { timeoutMs: 300 })))
      expect(r).toMatchObject(TIMEOUT)
      if (r.status === 'timeout' && r.logs !== undefined) {
        expect(r.logs).toEqual(['start'])
        stoppedItself.push(what)
      }
      expect(await sb.execute('return 1', {}, { timeoutMs: 1000 })).toMatchObject({ status: 'ok', result: 1 })
    })
  }

  it('nearly every one stopped itself (8 of them did before the fix)', () => {
    expect(stoppedItself.length).toBeGreaterThanOrEqual(FAMILIES.length - 4)
  })
})

for (const isolation of ['thread', 'process'] as const) {
  describe(`${isolation} isolation`, () => {
    it('the iteration limit stops a loop that catches it, at once', async () => {
      const limited = new Sandbox({ isolation, poolSize: 1, allowLoops: true, maxIterations: 1000, memoryLimitBytes: 64 << 20 })
      try {
        // The limit's error is caught, and the script goes on without loops (callbacks): only the
        // interrupt, forced when the limit was passed, ends it — before, up to 10 000 more calls of
        // a few milliseconds each ran first, past the 8 s deadline.
        const script = "const s = ' '.repeat(8e6) + 'x'; try { for (;;) {} } catch (e) {}\nArray.from({ length: 1e6 }, () => s.trim())"
        const r = await limited.execute(script, {}, { timeoutMs: 8000 })
        expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'ITERATION_LIMIT_EXCEEDED' } })
      } finally {
        await limited.dispose()
      }
    })
  })
}

describe('item 4: a wave of such executions never starves the pool (thread isolation)', () => {
  it('8 at once on two threads: each stops itself, no thread is set aside, neighbours finish', async () => {
    const sb = new Sandbox({ isolation: 'thread', poolSize: 2, ...LOOPS })
    try {
      const wave = () =>
        Promise.all(
          Array.from({ length: 8 }, (_, i) => sb.execute(`console.log('start')\n${FAMILIES[i % FAMILIES.length][1]}`, {}, { timeoutMs: 200 + (i % 4) * 50 })),
        )
      const results = await withParkedNeighbours(sb, async () => {
        const all = await wave()
        return { status: 'ok', result: all, stats: all[0].stats } as ExecuteResult
      })
      const all = (results as { result: ExecuteResult[] }).result
      for (const r of all) expect(r).toMatchObject({ status: 'timeout', error: { code: 'TIMEOUT' } })
      // Had their threads run on for seconds, every one would lack its log, and 4 threads set aside
      // (the bound) would have made the sandbox warn for the others.
      expect(all.filter((r) => 'logs' in r && r.logs !== undefined).length).toBeGreaterThanOrEqual(2)
      await sleep(250)
      expect(setAside(sb)).toEqual([])
      // And work submitted right after the wave runs at once.
      const after = await Promise.all([1, 2, 3].map((n) => sb.execute(`return ${n}`, {}, { timeoutMs: 2000 })))
      expect(after.map((r) => r.status === 'ok' && r.result)).toEqual([1, 2, 3])
    } finally {
      await sb.dispose()
    }
  })
})
