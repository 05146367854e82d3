// Red team for spec §2.6 "a failure belongs to the execution that caused it": what crosses the
// thread boundary or the worker pipe — syntax the engine cannot run, strings with lone surrogates,
// errors that cannot be read — must end only the execution that sent it, with a code and a message
// that say what happened, while neighbours on the same worker or thread finish with their own
// results. Every attack runs in both isolations, beside two plain executions parked on a host tool
// of the same sandbox (`poolSize: 1`: one thread, or one worker process).
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, validate, type ExecuteHost, type ExecuteResult } from '../../index.js'
import { withNeighbours } from './neighbours.js'

/**
 * The shape of issue 32: two plain executions park on a tool that answers at 1.5 s (their own
 * deadline: 4 s) before `attack` starts, so their answers arrive while the attack is past its own
 * deadline — stuck, if a builtin ignored the interrupt. They must still finish `ok` with their own
 * results: a thread stuck in one execution holds only that one.
 */
const withParkedNeighbours = (sb: Sandbox, attack: () => Promise<ExecuteResult>) =>
  withNeighbours(sb, attack, { answerMs: 1500, timeoutMs: 4000, settleMs: 50 })

for (const isolation of ['thread', 'process'] as const) {
  describe(`${isolation} isolation`, () => {
    const sb = new Sandbox({ isolation, poolSize: 1, preset: 'balanced' })
    afterAll(() => sb.dispose())

    describe('validate() and execute() agree on syntax the engine cannot run', () => {
      const cases: [string, string, { line: number; column: number }, RegExp][] = [
        ['a decorator', '@d class A {}\nreturn 1', { line: 1, column: 1 }, /Decorators/],
        ['a method decorator', 'const A = class {\n  @log m() {}\n}\nreturn 1', { line: 2, column: 3 }, /Decorators/],
        ['an accessor field', 'class A { accessor x = 1 }\nreturn 1', { line: 1, column: 11 }, /'accessor'/],
        ['a hashbang line', '#!/usr/bin/env node\nreturn 1', { line: 1, column: 1 }, /'#!'/],
      ]
      for (const [what, script, location, message] of cases) {
        it(what, async () => {
          const expected = { status: 'syntax_error', error: { code: 'SYNTAX_ERROR', message: expect.stringMatching(message), location } }
          expect(validate(script)).toEqual({ ok: false, ...expected })
          const r = await withNeighbours(sb, () => sb.execute(script))
          expect(r).toMatchObject(expected)
        })
      }

      it('TypeScript decorators too', async () => {
        const script = 'const n: number = 1\n@d class A { accessor x: number = n }\nreturn 1'
        expect(validate(script, { language: 'typescript' })).toMatchObject({ ok: false, status: 'syntax_error', error: { location: { line: 2, column: 1 } } })
        const r = await sb.execute(script, {}, { language: 'typescript' })
        expect(r).toMatchObject({ status: 'syntax_error', error: { location: { line: 2, column: 1 } } })
      })
    })

    describe('frames: one message too large for the pipe ends only its execution', () => {
      // ~20 MB: over the default message limit (2 × (maxResultBytes + maxConsoleBytes) + 16 MiB).
      const attacks: [string, string, RegExp][] = [
        ['an event', "mcpNotify('big', 'x'.repeat(20e6))", /mcpNotify\('big', …\): the event and its payload is \d+ bytes/],
        ['a log line', "mcpLog('info', 'x'.repeat(20e6), {})", /mcpLog\('info', …\): the log message and metadata is \d+ bytes/],
        ['a tool name', "await callTool('x'.repeat(20e6), {})", /callTool\('x{100}… \(20000000 bytes\)'\): the tool name and input/],
        ['a tool input', "await callTool('t:x', { s: 'x'.repeat(20e6) })", /callTool\('t:x'\): the tool name and input is \d+ bytes/],
        ['a caught one', "try { mcpNotify('big', 'x'.repeat(20e6)) } catch (e) {}\nreturn 'caught'", /mcpNotify/],
        ['an error whose JSON escapes grow past it', "throw new Error('\\x01'.repeat(3.3e6))", /The error the script threw is \d+ bytes as JSON/],
      ]
      for (const [what, script, message] of attacks) {
        it(what, async () => {
          const events: unknown[] = []
          const r = await withNeighbours(sb, () => sb.execute(script, { onEvent: (e) => events.push(e), callTool: () => 1 }))
          expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'RESULT_TOO_LARGE', message: expect.stringMatching(message) } })
          expect(JSON.stringify(r).length).toBeLessThan(10_000)
          expect(JSON.stringify(events).length).toBeLessThan(10_000)
        })
      }
    })

    describe('long builtins: a script stuck in C stops at its own deadline', () => {
      // Each would keep its thread or worker busy far past the neighbours' own 5 s deadline if
      // QuickJS did not poll the interrupt inside it (the patches in vendor/rquickjs-sys): before,
      // process isolation killed the worker 2 s after the deadline (neighbours: WORKER_CRASHED)
      // and thread isolation left the neighbours to time out.
      // Built from hex digits (linear), so that the time goes into the operation under test.
      const hex = (digits: number) => `BigInt('0x' + 'f'.repeat(${digits}))`
      const attacks: [string, string][] = [
        ['a sparse join', "return new Array(1e9).join('')"],
        ['copyWithin over an array-like of length 2^53-1', 'return [].copyWithin.call({ length: 2 ** 53 - 1 }, 0, 1)'],
        ['lastIndexOf over an array-like', 'return [].lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)'],
        ['reverse of an array-like', 'return [].reverse.call({ length: 2 ** 53 - 1 })'],
        ['BigInt toString, repeated', `const x = ${hex(150000)}; return [1, 2, 3, 4, 5, 6, 7, 8].map(() => x.toString().length)`],
        ['BigInt power, repeated', 'return Array.from({ length: 100 }, () => 3n ** 600000n > 0n).length'],
        ['BigInt multiplication, repeated', `const x = ${hex(75000)}; return Array.from({ length: 1000 }, () => x * x > 0n).length`],
        ['BigInt division, repeated', `const x = ${hex(150000)}, y = ${hex(37500)}; return Array.from({ length: 1000 }, () => x / y > 0n).length`],
        ['BigInt from a long decimal string, repeated', "const s = '9'.repeat(300000); return Array.from({ length: 1000 }, () => BigInt(s) > 0n).length"],
        ['String indexOf, n·m', "return 'a'.repeat(1e6).indexOf('a'.repeat(5e5) + 'b')"],
        ['String lastIndexOf, n·m', "return 'a'.repeat(1e6).lastIndexOf('a'.repeat(5e5) + 'b')"],
        ['String includes, n·m', "return 'a'.repeat(1e6).includes('a'.repeat(5e5) + 'b')"],
        ['String split, n·m', "return 'a'.repeat(1e6).split('a'.repeat(5e5) + 'b').length"],
        ['String replaceAll, n·m', "return 'a'.repeat(1e6).replaceAll('a'.repeat(5e5) + 'b', '').length"],
        // Long strings compared in C, element by element.
        ['Array indexOf of long strings sharing a prefix', "const p = '\\u0100'.repeat(1e6), x = (p + 'x').slice(0); return Array(2e5).fill(x).indexOf((p + 'y').slice(0))"],
        ['Array sort of long equal strings', "return Array(2e5).fill('\\u0100'.repeat(4e6)).sort().length"],
        ['Set lookups of a long string, repeated', "const s = 'a'.repeat(4e6), m = new Set(); return Array.from({ length: 1e5 }, () => m.has(s)).length"],
        // Quadratic Unicode normalization.
        ['normalize NFD of many combining marks', "return ('a' + '\\u0316\\u0301'.repeat(1.5e5)).normalize('NFD').length"],
        ['normalize NFC of many combining marks', "return ('a' + '\\u0301\\u0316'.repeat(1.5e5)).normalize('NFC').length"],
        // A Proxy's ownKeys checked pairwise.
        ['Proxy ownKeys of 3e5 keys', "const k = Object.keys(Array(3e5).fill(0)); return Reflect.ownKeys(new Proxy({}, { ownKeys: () => k })).length"],
        // Regexp compilation.
        ['RegExp of 4e5 alternatives', "return String(new RegExp('(?:' + 'ab|'.repeat(4e5) + 'c)')).length"],
        ['RegExp character class of 1e5 code points', "return String(new RegExp('[' + Array.from({ length: 1e5 }, (_, i) => String.fromCodePoint(0x10000 + 2 * i)).join('') + ']', 'u')).length"],
        // Milliseconds of C a step, 10 000 steps between polls before.
        ['join, repeated', "const a = Array(1e3).fill('x'.repeat(1e4)); return Array.from({ length: 1e5 }, () => a.join('').length).length"],
        ['typed array set, repeated', 'const a = new Uint8Array(2e7), b = new Uint8Array(2e7).fill(1); return Array.from({ length: 1e5 }, () => a.set(b)).length'],
        ['toUpperCase, repeated', "const s = '\\u00e9'.repeat(1e7); return Array.from({ length: 1e5 }, () => s.toUpperCase().length).length"],
        ['parseInt of a long string, repeated', "const s = '1'.repeat(4e6); return Array.from({ length: 1e5 }, () => parseInt(s)).length"],
      ]
      for (const [what, script] of attacks) {
        it(what, async () => {
          const r = await withParkedNeighbours(sb, () => sb.execute(script, {}, { timeoutMs: 500 }))
          expect(r).toMatchObject({ status: 'timeout', error: { code: 'TIMEOUT', message: 'Script execution timed out after 500ms' } })
          // And the sandbox goes on answering.
          expect(await sb.execute('return 1', {}, { timeoutMs: 1000 })).toMatchObject({ status: 'ok', result: 1 })
        })
      }
    })

    describe('the scheduler: a ready execution never waits behind another one', () => {
      it('several attacks at once, each stuck past its own deadline', async () => {
        const attacks = [
          "return 'a'.repeat(1e6).indexOf('a'.repeat(5e5) + 'b')",
          "return new Array(1e9).join('')",
          'return [].lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)',
        ]
        const results = await withParkedNeighbours(sb, async () => {
          const all = await Promise.all(attacks.map((a) => sb.execute(a, {}, { timeoutMs: 300 })))
          return { status: 'ok', result: all, stats: all[0].stats } as ExecuteResult
        })
        for (const r of (results as { result: ExecuteResult[] }).result) expect(r).toMatchObject({ status: 'timeout' })
        expect(await sb.execute('return 1', {}, { timeoutMs: 1000 })).toMatchObject({ status: 'ok', result: 1 })
      })

      it('an answer that arrives while another execution runs its CPU goes to a free thread', async () => {
        // Two threads (or one worker of two): a busy loop holds one until its deadline; the
        // neighbours' answers must not wait for it.
        const two = new Sandbox({ isolation, poolSize: 2, preset: 'balanced', maxIterations: 1e12 })
        try {
          const busy = two.execute('let i = 0; for (;;) i++', {}, { timeoutMs: 3500 })
          const r = await withParkedNeighbours(two, () => busy)
          expect(r).toMatchObject({ status: 'timeout' })
        } finally {
          await two.dispose()
        }
      })
    })

    describe("host answers: one the execution cannot take fails that call alone", () => {
      it('an answer larger than the execution\'s heap', async () => {
        const host: ExecuteHost = { callTool: () => 'x'.repeat(70e6) }
        const r = await withNeighbours(sb, () => sb.execute("const r = await callTool('t:big', {}, { throwOnError: false }); return r", host))
        expect(r).toMatchObject({
          status: 'ok',
          result: { success: false, error: { code: 'TOOL_EXECUTION_ERROR', message: expect.stringMatching(/The tool's answer is 70000002 bytes of JSON, more than this execution can take/) } },
        })
      })

      it('a host error with a 20 MB message and code', async () => {
        const host: ExecuteHost = {
          callTool: () => {
            throw Object.assign(new Error('m'.repeat(20e6)), { code: 'C'.repeat(1e6) })
          },
        }
        const events: unknown[] = []
        const r = await withNeighbours(sb, () => sb.execute("return await callTool('t:x', {})", { ...host, onEvent: (e) => events.push(e) }))
        expect(r).toMatchObject({ status: 'tool_error', error: { message: expect.stringMatching(/^m+… \(20000000 bytes in all\)$/) } })
        expect(JSON.stringify(r).length).toBeLessThan(40_000)
      })
    })

    describe('an error that cannot be read', () => {
      // The neighbours keep the sandbox's 5 s; the spinning script gets 300 ms.
      const spin = new Sandbox({ isolation, poolSize: 1, preset: 'experimental', timeoutMs: 5000, maxIterations: 1e12 })
      afterAll(() => spin.dispose())

      it('a message getter that spins: on time, and the message says why it is not there', async () => {
        for (const script of [
          'throw { get message() { while (true) {} } }',
          "throw Object.defineProperty(new Error('x'), 'message', { get() { for (;;) {} } })",
        ]) {
          const started = Date.now()
          const r = await withNeighbours(spin, () => spin.execute(script, {}, { timeoutMs: 300 }))
          expect(Date.now() - started).toBeLessThan(300 + 1000) // the neighbours' 150 ms tools included
          expect(r).toMatchObject({
            status: 'runtime_error',
            error: { code: 'EXECUTION_ERROR', message: expect.stringMatching(/'message' could not be read: its getter was still running/) },
          })
        }
      })

      it('a message getter that throws', async () => {
        const r = await spin.execute("throw { get message() { throw new Error('no') } }", {}, { timeoutMs: 300 })
        expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'EXECUTION_ERROR', message: expect.stringMatching(/'message' could not be read: its getter threw/) } })
      })
    })

    describe('lone UTF-16 surrogates are data everywhere a string crosses', () => {
      const lone = '\uD800'
      const fixed = '\uFFFD'

      it('console.*', async () => {
        const r = await withNeighbours(sb, () => sb.execute("console.log('a\\uD800b'); console.error('\\uDC00'); return 1"))
        expect(r).toMatchObject({ status: 'ok', result: 1, logs: [`a${fixed}b`, `[error] ${fixed}`] })
      })

      it('mcpLog and mcpNotify, with and without a listener', async () => {
        const events: { type: string; level?: string; message?: string; event?: string }[] = []
        const script = "mcpLog('i\\uD800', 'm\\uD800', { k: 'v\\uD800' }); mcpNotify('e\\uD800', { p: '\\uD800' }); return 2"
        const r = await withNeighbours(sb, () => sb.execute(script, { onEvent: (e) => events.push(e) }))
        expect(r).toMatchObject({ status: 'ok', result: 2 })
        expect(events).toEqual([
          // Metadata and payloads are JSON: their escapes carry the surrogate through unchanged.
          expect.objectContaining({ type: 'log', level: `i${fixed}`, message: `m${fixed}`, metadata: { k: `v${lone}` } }),
          expect.objectContaining({ type: 'notify', event: `e${fixed}`, payload: { p: lone } }),
        ])
        expect(await sb.execute(script)).toMatchObject({ status: 'ok', result: 2 })
      })

      it('a tool name, its input and getTool', async () => {
        const seen: unknown[] = []
        const host: ExecuteHost = {
          callTool: (name, input) => (seen.push(name, input), { echoed: name }),
          getTool: (name) => (seen.push(`getTool ${name}`), name.startsWith('t:') ? { name, description: 'a tool' } : null),
        }
        const script = "const t = getTool('t\\uD800'); const r = await callTool('t:x\\uD800', { s: 'i\\uD800' }); return [t, r.echoed]"
        const r = await withNeighbours(sb, () => sb.execute(script, host))
        expect(r).toMatchObject({ status: 'ok', result: [null, `t:x${fixed}`] })
        // The input is JSON, like payloads: it carries the surrogate through unchanged.
        expect(seen).toEqual([`getTool t${fixed}`, `getTool t:x${fixed}`, `t:x${fixed}`, { s: `i${lone}` }])
      })

      it("a host error's message and code keep what they say", async () => {
        const host: ExecuteHost = {
          callTool: () => {
            throw Object.assign(new Error(`bad ${lone} text`), { code: `E_${lone}` })
          },
        }
        const r = await withNeighbours(sb, () => sb.execute("return await callTool('t:x', {})", host))
        expect(r).toMatchObject({ status: 'tool_error', error: { code: `E_${fixed}`, message: `bad ${fixed} text` } })
      })

      it('a tool result holding one is passed to the script', async () => {
        const r = await sb.execute("const r = await callTool('t:x', {}); return [r.text.length, r.text.charCodeAt(1)]", {
          callTool: () => ({ text: `a${lone}b` }),
        })
        expect(r).toMatchObject({ status: 'ok', result: [3, 0xd800] })
      })
    })
  })
}
