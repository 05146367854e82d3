// Hostile scripts against the sandbox itself. Every one must end in a result — never a crash, a
// hang, or anything reaching the host process. Run in the most permissive preset where the
// validator would otherwise refuse the attempt before it runs: the runtime must hold on its own.
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteResult } from '../../index.js'

function expectResult(r: ExecuteResult) {
  expect(['ok', 'syntax_error', 'illegal_access', 'runtime_error', 'tool_error', 'timeout']).toContain(r.status)
}

// The whole suite runs in both isolation modes: worker processes must hold exactly as threads do.
for (const isolation of ['thread', 'process'] as const) {
  describe(`${isolation} isolation`, () => {
    const open = new Sandbox({ preset: 'experimental', disabledGlobals: [], timeoutMs: 2000, maxIterations: 1e9, isolation })
    const secure = new Sandbox({ isolation })
    afterAll(async () => {
      await open.dispose()
      await secure.dispose()
    })

    it('runs where it says', () => {
      expect(open.isolation).toBe(isolation)
      expect(open.warnings).toEqual([])
    })

    describe('escapes through constructors', () => {
      const attempts = [
        "return (() => {}).constructor('return process')()",
        "return (async () => {}).constructor('return process')()",
        "return (function* () {}).constructor('return process')().next()",
        "return (async function* () {}).constructor('return 1')",
        "const F = Object.getPrototypeOf(function () {}).constructor; return F('return globalThis')()",
        "return Reflect.construct(Object.getPrototypeOf(async () => {}).constructor, ['return 1'])",
        "return [].map.constructor('return this')()",
        "return callTool.constructor('return process')()",
        "return Object.getOwnPropertyDescriptor(Object.getPrototypeOf(() => {}), 'constructor').value('return 1')()",
        "const p = Object.getPrototypeOf(() => {}); delete p.constructor; return p.constructor",
        "return new Proxy({}, { get: () => 1 }).constructor.constructor('return 1')()",
        "return globalThis['ev' + 'al']('1 + 1')",
        "return new (Object.getPrototypeOf(function(){}).constructor)('return 1')()",
      ]
      for (const script of attempts) {
        it(script, async () => {
          const r = await open.execute(script)
          expectResult(r)
          if (r.status === 'ok') {
            // Nothing compiled: whatever came back is not the result of compiled code.
            expect(r.result).not.toBe(2)
            expect(typeof r.result === 'function').toBe(false)
          } else {
            expect(r.status).toBe('runtime_error')
          }
          expect(JSON.stringify(r)).not.toMatch(/\/home|\/usr|node:|process\.versions/)
        })
      }

      it('the secure preset refuses them before running', async () => {
        const r = await secure.execute("return (() => {})['constructor']('return 1')()")
        expect(r).toMatchObject({ status: 'illegal_access', error: { kind: 'ForbiddenMember' } })
      })
    })

    describe('prototype pollution through results', () => {
      it('a __proto__ key in a result never changes a host prototype', async () => {
        const r = await open.execute("const o = JSON.parse('{\"__proto__\": {\"isAdmin\": true}, \"constructor\": {\"prototype\": {\"x\": 1}}}'); return o")
        expect(r.status).toBe('ok')
        expect(({} as Record<string, unknown>).isAdmin).toBeUndefined()
        expect(({} as Record<string, unknown>).x).toBeUndefined()
        const result = (r as { result: Record<string, unknown> }).result
        expect(Object.getPrototypeOf(result)).toBe(Object.prototype)
      })

      it('polluting the sandbox prototypes does not leak into the next execution', async () => {
        await open.execute('Object.prototype.leak = 1; Array.prototype.push = () => 0; JSON.stringify = () => "x"; return 1')
        const r = await open.execute("const a = []; a.push(1); return [({}).leak, a.length, JSON.stringify({a: 1})]")
        expect(r).toMatchObject({ status: 'ok', result: [null, 1, '{"a":1}'] }) // undefined in an array crosses as null
      })

      it('overwriting built-ins does not change what the sandbox does', async () => {
        const r = await open.execute(
          `Promise.prototype.then = function () { throw new Error('hijacked') }
           JSON.parse = () => ({ forged: true }); JSON.stringify = () => '"forged"'
           Array.prototype.map = null; Object.freeze = (x) => x
           const r = await callTool('echo', { a: 1 })
           return r`,
          { callTool: (_n, input) => input },
        )
        expect(r).toMatchObject({ status: 'ok', result: { a: 1 } })
      })
    })

    describe('serialization side effects', () => {
      it('getters that call callTool during serialization end in an error', async () => {
        const calls: string[] = []
        const r = await open.execute("return { get secret() { callTool('exfiltrate', {}); return 1 } }", {
          callTool: (name) => {
            calls.push(name)
            return 1
          },
        })
        expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'SERIALIZATION_ERROR' } })
        expect(calls).toEqual([])
      })

      it('toJSON that calls callTool is refused too', async () => {
        const r = await open.execute("return { toJSON() { return callTool('x') } }", { callTool: () => 1 })
        expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'SERIALIZATION_ERROR' } })
      })

      it('a getter that loops forever is stopped by the deadline', async () => {
        const r = await open.execute('return { get x() { while (true) {} } }')
        expect(r.status).toBe('timeout')
      })

      it('huge and deeply nested results end in errors, not crashes', async () => {
        const deep = await open.execute('let o = {}; const root = o; for (let i = 0; i < 100000; i++) { o.n = {}; o = o.n } return root')
        expect(deep).toMatchObject({ status: 'runtime_error', error: { code: 'SERIALIZATION_ERROR' } })
        const wide = await open.execute("return Array.from({ length: 200000 }, (_, i) => ({ i, s: 'xxxxxxxx' }))")
        expect(wide).toMatchObject({ status: 'runtime_error', error: { code: 'RESULT_TOO_LARGE' } })
      })
    })

    describe('floods and loops', () => {
      it('promise floods hit the memory or time limit', async () => {
        const r = await open.execute('const ps = []; while (true) ps.push(new Promise(() => {}))')
        expect(['runtime_error', 'timeout']).toContain(r.status)
      })

      it('a microtask loop after return does not keep running', async () => {
        const started = Date.now()
        const r = await open.execute('const spin = () => Promise.resolve().then(spin); spin(); return 1')
        expect(r).toMatchObject({ status: 'ok', result: 1 })
        expect(Date.now() - started).toBeLessThan(1500)
      })

      it('a microtask loop before return is stopped by the deadline or the heap limit', async () => {
        const r = await open.execute('const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {})')
        // Each turn chains one more promise, so the heap may run out before the clock does.
        if (r.status === 'timeout') return
        expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'MEMORY_LIMIT_EXCEEDED' } })
      })

      it('a flat microtask loop (no growing chain) is stopped by the deadline', async () => {
        const r = await open.execute('const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})')
        expect(r.status).toBe('timeout')
      })

      it('never-settling promises end in a result', async () => {
        const r = await open.execute('await new Promise(() => {})')
        expect(r.status).toBe('runtime_error')
      })

      it('console floods are bounded', async () => {
        const r = await open.execute("for (let i = 0; i < 100000; i++) console.log('spam spam spam spam spam'); return 1")
        expect(r.status).toBe('ok')
        const logs = (r as { logs: string[] }).logs
        expect(logs.join('\n').length).toBeLessThan(70 * 1024)
        expect(logs[logs.length - 1]).toMatch(/^\[truncated\]/)
      })

      it('event floods do not break the host', async () => {
        let n = 0
        const r = await open.execute("for (let i = 0; i < 20000; i++) mcpNotify('e', { i }); return 1", { onEvent: () => n++ })
        expect(r).toMatchObject({ status: 'ok' })
        expect(n).toBe(20000)
      })

      it('regex backtracking is stopped by the deadline', async () => {
        const r = await open.execute("return /^(a+)+$/.test('a'.repeat(40) + 'b')")
        expect(r.status).toBe('timeout')
      })
    })

    describe('re-entrancy and host misbehaviour', () => {
      it('a host that calls execute again from callTool works', async () => {
        const sb = new Sandbox({ isolation })
        const r = await sb.execute("return await callTool('nested')", {
          callTool: async () => {
            const inner = await sb.execute('return 41 + 1')
            return inner.status === 'ok' ? inner.result : null
          },
        })
        expect(r).toMatchObject({ status: 'ok', result: 42 })
        await sb.dispose()
      })

      it('a host that returns a cyclic object fails that call only', async () => {
        const r = await open.execute("const r = await callTool('x', {}, { throwOnError: false }); return r.success", {
          callTool: () => {
            const a: Record<string, unknown> = {}
            a.a = a
            return a
          },
        })
        expect(r).toMatchObject({ status: 'ok', result: false })
      })

      it('a host that throws non-errors is reported', async () => {
        const r = await open.execute("const r = await callTool('x', {}, { throwOnError: false }); return r.error.message", {
          callTool: () => {
            throw 'plain string'
          },
        })
        expect(r).toMatchObject({ status: 'ok', result: 'plain string' })
      })

      it('a host getter that throws on callTool is handled', async () => {
        const host = Object.defineProperty({}, 'callTool', {
          get() {
            throw new Error('getter')
          },
        })
        await expect(Promise.resolve().then(() => open.execute('return 1', host as never))).rejects.toThrow()
      })
    })

    describe('after the end', () => {
      it('an error whose getters call callTool cannot reach the host while it is reported', async () => {
        const calls: string[] = []
        const host = {
          callTool: (name: string) => {
            calls.push(name)
            return 1
          },
        }
        const r = await open.execute("throw { get message() { callTool('late'); return 'm' }, toJSON() { callTool('later'); return {} } }", host)
        expect(r.status).toBe('runtime_error')
        await new Promise((resolve) => setTimeout(resolve, 50))
        expect(calls).toEqual([])
      })
    })
  })
}
