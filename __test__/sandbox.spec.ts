import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteEvent, type ExecuteHost, type ExecuteResult } from '../index.js'
import { expectInvalidArg } from './helpers.js'

const sandboxes: Sandbox[] = []
function sandbox(options?: ConstructorParameters<typeof Sandbox>[0]) {
  const s = new Sandbox(options)
  sandboxes.push(s)
  return s
}
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.dispose()))
})

const echoHost: ExecuteHost = {
  callTool: (name, input) => ({ name, input }),
}

function errorOf(result: ExecuteResult) {
  if (result.status === 'ok') throw new Error(`expected an error, got ${JSON.stringify(result)}`)
  return result.error as { code: string; message: string; [k: string]: unknown }
}

describe('results', () => {
  const sb = sandbox()

  it('returns the value of `return`', async () => {
    const r = await sb.execute('return 1 + 1')
    expect(r).toMatchObject({ status: 'ok', result: 2 })
    expect(r.stats).toMatchObject({ toolCalls: 0 })
    expect(typeof r.stats.executionId).toBe('string')
    expect(r.stats.durationMs).toBeGreaterThanOrEqual(0)
  })

  it('gives each execution an id nobody can guess: 128 random bits, not a counter', async () => {
    const ids = (await Promise.all(Array.from({ length: 8 }, () => sb.execute('return 1')))).map((r) => r.stats.executionId)
    for (const id of ids) expect(id).toMatch(/^exec-[0-9a-f]{32}$/)
    expect(new Set(ids).size).toBe(ids.length)
    // The refused and the aborted have one too.
    expect((await sb.execute('return (')).stats.executionId).toMatch(/^exec-[0-9a-f]{32}$/)
    expect((await sb.execute('return 1', undefined, { signal: AbortSignal.abort() })).stats.executionId).toMatch(/^exec-[0-9a-f]{32}$/)
  })

  it('returns the last expression when there is no return', async () => {
    const r = await sb.execute('({ result: input.value * 2 })', undefined, { input: { value: 21 } })
    expect(r).toMatchObject({ status: 'ok', result: { result: 42 } })
  })

  it('leaves result absent for undefined', async () => {
    const r = await sb.execute('return undefined')
    expect(r.status).toBe('ok')
    expect('result' in r).toBe(false)
  })

  it('supports top-level await', async () => {
    expect(await sb.execute('const x = await Promise.resolve(20); return x + 1')).toMatchObject({ result: 21 })
  })

  it('runs TypeScript, keeping line numbers', async () => {
    const r = await sb.execute('const n: number = 1;\ninterface A { a: string }\nconst x = null as unknown as A;\nreturn x.a', undefined, {
      language: 'typescript',
    })
    expect(r.status).toBe('runtime_error')
    expect(errorOf(r).location).toMatchObject({ line: 4 })
  })

  it('runs TypeScript with runtime semantics (enum, parameter properties, generics)', async () => {
    const ts = { language: 'typescript' as const }
    expect(await sb.execute('enum Color { Red, Green }\nconst c: Color = Color.Green;\nreturn c', undefined, ts)).toMatchObject({
      status: 'ok',
      result: 1,
    })
    expect(
      await sb.execute('class P { constructor(private x: number) {} get(): number { return this.x } }\nreturn new P(3).get()', undefined, ts),
    ).toMatchObject({ status: 'ok', result: 3 })
    expect(await sb.execute('const f = <T,>(x: T): T => x;\nreturn f<number>(5)', undefined, ts)).toMatchObject({ status: 'ok', result: 5 })
  })

  it('reports syntax errors and illegal access before running', async () => {
    const syntax = await sb.execute('return (')
    expect(syntax).toMatchObject({ status: 'syntax_error', error: { code: 'SYNTAX_ERROR', location: { line: 1 } } })
    const illegal = await sb.execute("eval('1')")
    expect(illegal).toMatchObject({ status: 'illegal_access', error: { code: 'VALIDATION_ERROR', kind: 'IllegalBuiltinAccess' } })
    const self = await sb.execute("await callTool('codecall:execute', {})")
    expect(self).toMatchObject({ status: 'illegal_access', error: { code: 'SELF_REFERENCE_BLOCKED' } })
  })

  it('reports runtime errors with user positions and a clean stack', async () => {
    const r = await sb.execute('const a = 1;\nconst b = null;\nreturn b.c')
    expect(r.status).toBe('runtime_error')
    const e = errorOf(r)
    expect(e).toMatchObject({ source: 'script', code: 'EXECUTION_ERROR', name: 'TypeError', location: { line: 3 } })
    expect(e.stack).toMatch(/script\.js:3:\d+/)
    expect(e.stack).not.toMatch(/codecall|\/|node_modules/)
  })

  it('serializes results inside the sandbox', async () => {
    const fn = await sb.execute('return { items: [1, 2, 3, { fn: () => 1 }] }')
    expect(fn).toMatchObject({ status: 'runtime_error', error: { code: 'SERIALIZATION_ERROR' } })
    expect(errorOf(fn).message).toContain('$.items[3].fn')
    const cycle = await sb.execute('const a = {}; a.a = a; return a')
    expect(errorOf(cycle).code).toBe('SERIALIZATION_ERROR')
    expect(errorOf(await sb.execute('return 10n'))).toMatchObject({ code: 'SERIALIZATION_ERROR' })
    expect(errorOf(await sb.execute("return { s: Symbol('x') }"))).toMatchObject({ code: 'SERIALIZATION_ERROR' })
    const big = await sb.execute("return 'x'.repeat(2 * 1024 * 1024)")
    expect(errorOf(big).code).toBe('RESULT_TOO_LARGE')
    const surrogate = await sb.execute("return 'a\\ud800b'")
    expect(surrogate).toMatchObject({ status: 'ok', result: 'a\ufffdb' })
  })

  it('keeps __proto__ keys as plain data', async () => {
    const r = await sb.execute('return JSON.parse(\'{"__proto__": {"polluted": true}}\')')
    expect(r.status).toBe('ok')
    const result = (r as { result: Record<string, unknown> }).result
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype)
    expect(Object.keys(result)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

describe('callTool', () => {
  const sb = sandbox()

  it('reaches the host with name, input and meta', async () => {
    const seen: unknown[] = []
    const r = await sb.execute("const r = await callTool('users:list', { limit: 2 }); return r", {
      callTool(name, input, meta) {
        seen.push([name, input, meta])
        return { users: ['a', 'b'] }
      },
    })
    expect(r).toMatchObject({ status: 'ok', result: { users: ['a', 'b'] }, stats: { toolCalls: 1 } })
    expect(seen).toEqual([['users:list', { limit: 2 }, { callId: expect.any(String), executionId: r.stats.executionId }]])
  })

  it('accepts a value, a promise, a sync throw and a rejection from the host', async () => {
    const host: ExecuteHost = {
      callTool(name) {
        if (name === 'value') return 1
        if (name === 'promise') return new Promise((resolve) => setTimeout(() => resolve(2), 5))
        if (name === 'throw') throw Object.assign(new Error('sync boom'), { code: 'SYNC' })
        return Promise.reject(Object.assign(new Error('async boom'), { code: 'ASYNC', details: { retry: true } }))
      },
    }
    const r = await sb.execute(
      `const out = [await callTool('value'), await callTool('promise')]
       for (const n of ['throw', 'reject']) {
         const res = await callTool(n, {}, { throwOnError: false })
         out.push(res)
       }
       return out`,
      host,
      {},
    )
    expect(r).toMatchObject({ status: 'illegal_access', error: { kind: 'LoopNotAllowed' } }) // loops are off in 'secure'
    const balanced = sandbox({ preset: 'balanced' })
    const ok = await balanced.execute(
      `const out = [await callTool('value'), await callTool('promise')]
       for (const n of ['throw', 'reject']) out.push(await callTool(n, {}, { throwOnError: false }))
       return out`,
      host,
    )
    expect(ok).toMatchObject({
      status: 'ok',
      result: [
        1,
        2,
        { success: false, error: { code: 'SYNC', message: 'sync boom' } },
        { success: false, error: { code: 'ASYNC', message: 'async boom', details: { retry: true } } },
      ],
    })
  })

  it('ends with tool_error when a ToolError is uncaught', async () => {
    const r = await sb.execute("await callTool('billing:charge', { amount: 5 })", {
      callTool: () => {
        throw new Error('Rate limit exceeded')
      },
    })
    expect(r).toEqual({
      status: 'tool_error',
      error: {
        source: 'tool',
        code: 'TOOL_EXECUTION_ERROR',
        toolName: 'billing:charge',
        toolInput: { amount: 5 },
        message: 'Rate limit exceeded',
      },
      stats: expect.any(Object),
    })
  })

  it('lets scripts catch ToolErrors', async () => {
    const r = await sb.execute(
      "try { await callTool('x') } catch (e) { return [e.name, e.code, e.toolName, e instanceof Error] }",
      { callTool: () => Promise.reject(new Error('no')) },
    )
    expect(r).toMatchObject({ status: 'ok', result: ['ToolError', 'TOOL_EXECUTION_ERROR', 'x', true] })
  })

  it('applies the checks in order: allowedTools, getTool, maxToolCalls, maxConcurrentCalls', async () => {
    const host: ExecuteHost = { ...echoHost, getTool: (name) => (name === 'known' ? { name, description: 'd' } : null) }
    const denied = await sb.execute("return (await callTool('other', {}, { throwOnError: false })).error.code", host, {
      allowedTools: ['known'],
    })
    expect(denied).toMatchObject({ result: 'ACCESS_DENIED' })
    const missing = await sb.execute("return (await callTool('nope', {}, { throwOnError: false })).error.code", host)
    expect(missing).toMatchObject({ result: 'TOOL_NOT_FOUND' })
    const info = await sb.execute("return [getTool('known'), getTool('nope')]", host)
    expect(info).toMatchObject({ result: [{ name: 'known', description: 'd' }, null] })
    const limited = await sb.execute(
      "await callTool('known'); await callTool('known'); return (await callTool('known', {}, { throwOnError: false })).error.code",
      host,
      { maxToolCalls: 2 },
    )
    expect(limited).toMatchObject({ result: 'MAX_TOOL_CALLS_EXCEEDED' })
    const concurrent = sandbox({ maxConcurrentCalls: 2 })
    const pending = await concurrent.execute(
      "const p = [callTool('a'), callTool('a'), callTool('a', {}, { throwOnError: false })]; return (await Promise.all(p))[2].error.code",
      { callTool: () => new Promise((r) => setTimeout(() => r(1), 10)) },
    )
    expect(pending).toMatchObject({ result: 'TOO_MANY_PENDING_CALLS' })
  })

  it('blocks self-reference computed at run time', async () => {
    const r = await sb.execute(
      "const name = ['codecall', 'execute'].join(':'); return (await callTool(name, {}, { throwOnError: false })).error.code",
      echoHost,
    )
    expect(r).toMatchObject({ result: 'SELF_REFERENCE_BLOCKED' })
  })

  it('refuses input that is not JSON', async () => {
    const r = await sb.execute("try { await callTool('a', { f() {} }.f) } catch (e) { return e.name }", echoHost)
    expect(r.status).toBe('ok')
  })
})

describe('globals', () => {
  const sb = sandbox()

  it('codecallContext and input are deep-frozen copies', async () => {
    const context = { tenant: { id: 't1' } }
    const r = await sb.execute(
      "try { codecallContext.tenant.id = 'x' } catch (e) { return [e.name, codecallContext.tenant.id, Object.isFrozen(input.list)] }",
      undefined,
      { context, input: { list: [1] } },
    )
    expect(r).toMatchObject({ result: ['TypeError', 't1', true] })
    expect(context.tenant.id).toBe('t1')
  })

  it('captures console with prefixes and a byte budget', async () => {
    const r = await sb.execute("console.log('a', 1, { b: 2 }); console.info('i'); console.warn('w'); console.error('e'); console.debug('d')")
    expect(r).toMatchObject({ status: 'ok', logs: ['a 1 {"b":2}', 'i', '[warn] w', '[error] e', '[debug] d'] })
    const small = sandbox({ maxConsoleBytes: 10 })
    const cut = await small.execute("console.log('12345'); console.log('67890'); console.log('abcdef')")
    expect(cut.status === 'ok' && cut.logs).toEqual(['12345', '67890', '[truncated] 6 bytes of console output dropped (maxConsoleBytes)'])
  })

  it('has no console without allowConsole', async () => {
    const r = await sandbox({ allowConsole: false }).execute("console.log('x')")
    expect(r).toMatchObject({ status: 'illegal_access' })
  })

  it('mcpLog and mcpNotify become events, in order with tool calls', async () => {
    const events: ExecuteEvent[] = []
    const r = await sb.execute(
      "mcpNotify('step', { n: 1 }); const u = await callTool('users:list', { a: 1 }); mcpLog('info', 'loaded', { count: 2 }); return u.name",
      { ...echoHost, onEvent: (e) => events.push(e) },
    )
    expect(r).toMatchObject({ status: 'ok', result: 'users:list' })
    expect(events.map((e) => e.type)).toEqual(['notify', 'tool_call_start', 'tool_call_end', 'log'])
    expect(events[0]).toEqual({ type: 'notify', executionId: r.stats.executionId, event: 'step', payload: { n: 1 } })
    expect(events[1]).toMatchObject({ type: 'tool_call_start', toolName: 'users:list', input: { a: 1 } })
    expect(events[2]).toMatchObject({ type: 'tool_call_end', toolName: 'users:list', status: 'ok', durationMs: expect.any(Number) })
    expect((events[1] as { callId: string }).callId).toBe((events[2] as { callId: string }).callId)
    expect(events[3]).toEqual({ type: 'log', executionId: r.stats.executionId, level: 'info', message: 'loaded', metadata: { count: 2 } })
  })

  it('reports failed tool calls in tool_call_end', async () => {
    const events: ExecuteEvent[] = []
    await sb.execute("await callTool('x', {}, { throwOnError: false })", {
      callTool: () => Promise.reject(Object.assign(new Error('nope'), { code: 'E_NOPE' })),
      onEvent: (e) => events.push(e),
    })
    expect(events[1]).toMatchObject({ type: 'tool_call_end', status: 'error', error: { code: 'E_NOPE', message: 'nope' } })
  })

  for (const isolation of ['thread', 'process'] as const) {
    it(`many executions at once: each one's events arrive in order, all before its result (${isolation})`, async () => {
      const many = sandbox({ isolation, poolSize: 2, preset: 'balanced' })
      const seen = new Map<string, string[]>()
      const runs = Array.from({ length: 60 }, (_, i) =>
        many
          .execute(
            "for (let k = 0; k < 4; k++) { mcpNotify('k', { k }); await callTool('t', { i: input.i, k }) } mcpLog('info', 'end'); return input.i",
            {
              callTool: (_name, args) => (i % 2 ? Promise.resolve(args) : args),
              onEvent: (e) => {
                const list = seen.get(e.executionId) ?? []
                list.push(e.type === 'notify' ? `n${(e.payload as { k: number }).k}` : e.type)
                seen.set(e.executionId, list)
              },
            },
            { input: { i } },
          )
          .then((r) => ({ r, eventsAtResult: [...(seen.get(r.stats.executionId) ?? [])] })),
      )
      const expected = [0, 1, 2, 3].flatMap((k) => [`n${k}`, 'tool_call_start', 'tool_call_end']).concat('log')
      for (const [i, { r, eventsAtResult }] of (await Promise.all(runs)).entries()) {
        expect(r).toMatchObject({ status: 'ok', result: i })
        expect(eventsAtResult).toEqual(expected)
      }
      // Without onEvent nothing is delivered, and results are the same.
      const quiet = await Promise.all(Array.from({ length: 20 }, (_, i) => many.execute("mcpLog('info', 'x'); return await callTool('t', input)", echoHost, { input: { i } })))
      expect(quiet.map((r) => r.status === 'ok' && (r.result as { input: { i: number } }).input.i)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    })
  }

  it('a throwing onEvent does not break the execution', async () => {
    const r = await sb.execute("mcpNotify('x', {}); return 1", {
      onEvent: () => {
        throw new Error('observer bug')
      },
    })
    expect(r).toMatchObject({ status: 'ok', result: 1 })
  })

  it('__safe_parallel keeps order, bounds concurrency and reports failures', async () => {
    let inFlight = 0
    let peak = 0
    const host: ExecuteHost = {
      callTool: async (_name, input) => {
        inFlight++
        peak = Math.max(peak, inFlight)
        await new Promise((r) => setTimeout(r, 5))
        inFlight--
        return (input as { i: number }).i * 10
      },
    }
    const r = await sb.execute(
      "return await __safe_parallel([1, 2, 3, 4, 5].map((i) => () => callTool('t', { i })), { maxConcurrency: 2 })",
      host,
    )
    expect(r).toMatchObject({ status: 'ok', result: [10, 20, 30, 40, 50] })
    expect(peak).toBeLessThanOrEqual(2)
    const failing = await sb.execute(
      "try { await __safe_parallel([() => 1, () => { throw new Error('bad') }]) } catch (e) { return e.message }",
    )
    expect(failing).toMatchObject({ result: '1 of 2 parallel operations failed:\n  [1]: bad' })
    const tooMany = await sb.execute('try { await __safe_parallel(Array(101).fill(() => 1)) } catch (e) { return e.message }')
    expect(tooMany).toMatchObject({ result: 'Cannot execute more than 100 operations in parallel' })
  })

  it('host functions become async globals and frozen namespaces', async () => {
    const r = await sb.execute("return [await mcp.callTool('srv', 'tool', { a: 1 }), await double(21), Object.isFrozen(mcp)]", {
      functions: {
        'mcp.callTool': (server: unknown, tool: unknown, args: unknown) => ({ server, tool, args }),
        double: async (n: unknown) => (n as number) * 2,
      },
    })
    expect(r).toMatchObject({ result: [{ server: 'srv', tool: 'tool', args: { a: 1 } }, 42, true], stats: { toolCalls: 2 } })
  })

  it('has no eval, Function, timers, require or process', async () => {
    const r = await sandbox({ preset: 'experimental' }).execute(
      "return [typeof globalThis['ev' + 'al'], typeof globalThis['Func' + 'tion'], typeof setTimeout === 'undefined', typeof require, typeof process, typeof fetch]",
      undefined,
    )
    expect(r.status).toBe('illegal_access') // experimental still refuses require/process by name
    const r2 = await sandbox({ preset: 'experimental', disabledGlobals: [] }).execute(
      "return [typeof globalThis['ev' + 'al'], typeof globalThis['Func' + 'tion'], typeof setTimeout, typeof require, typeof process, typeof fetch]",
    )
    expect(r2).toMatchObject({ result: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'] })
  })
})

describe('limits', () => {
  it('timeoutMs covers CPU', async () => {
    const sb = sandbox({ preset: 'balanced', maxIterations: 1e12, timeoutMs: 200 })
    const started = Date.now()
    const r = await sb.execute('while (true) {}')
    expect(r).toMatchObject({ status: 'timeout', error: { code: 'TIMEOUT', message: 'Script execution timed out after 200ms' } })
    expect(Date.now() - started).toBeLessThan(200 + 1000)
  })

  it('timeoutMs covers time awaiting the host', async () => {
    const sb = sandbox({ timeoutMs: 150 })
    const r = await sb.execute("await callTool('slow')", { callTool: () => new Promise((r) => setTimeout(r, 2000)) })
    expect(r.status).toBe('timeout')
  })

  it('timeoutMs covers long native builtins (the vendored QuickJS polls the interrupt in them)', async () => {
    const sb = sandbox({ timeoutMs: 300 })
    const started = Date.now()
    const r = await sb.execute('return [].indexOf.call({ length: 2 ** 32 - 1 }, 1)')
    const elapsed = Date.now() - started
    expect(r.status).toBe('timeout')
    expect(elapsed).toBeLessThan(300 + 100 + 400) // the contract is +100 ms; slack for a loaded CI machine
    // The thread is free again (or, were a builtin to ignore the interrupt, replaced): the sandbox still answers.
    expect(await sb.execute('return 7')).toMatchObject({ status: 'ok', result: 7 })
  })

  it('options.timeoutMs may only lower the limit', async () => {
    const sb = sandbox({ preset: 'balanced', maxIterations: 1e12, timeoutMs: 200 })
    const r = await sb.execute('while (true) {}', undefined, { timeoutMs: 100_000 })
    expect(r).toMatchObject({ status: 'timeout', error: { message: 'Script execution timed out after 200ms' } })
  })

  it('memoryLimitBytes', async () => {
    const sb = sandbox({ preset: 'balanced', maxIterations: 1e12, memoryLimitBytes: 8 * 1024 * 1024 })
    const r = await sb.execute("const a = []; while (true) a.push('x'.repeat(1000) + a.length)")
    expect(r).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'MEMORY_LIMIT_EXCEEDED' } })
  })

  it('maxStackBytes', async () => {
    const r = await sandbox().execute('const f = (n) => f(n + 1) + 1; return f(0)')
    expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'STACK_OVERFLOW' } })
  })

  it('maxIterations counts all loops together, even when the error is caught', async () => {
    const sb = sandbox({ preset: 'balanced', maxIterations: 50 })
    const ok = await sb.execute('let n = 0; for (let i = 0; i < 5; i++) for (let j = 0; j < 5; j++) n++; return n')
    expect(ok).toMatchObject({ status: 'ok', result: 25, stats: { iterations: 30 } })
    const over = await sb.execute('let n = 0; try { for (let i = 0; i < 10; i++) for (let j = 0; j < 10; j++) n++ } catch {} return n')
    expect(over).toMatchObject({ status: 'runtime_error', error: { code: 'ITERATION_LIMIT_EXCEEDED' } })
  })

  it('maxScriptBytes', async () => {
    const r = await sandbox({ maxScriptBytes: 10 }).execute('return 1 + 1 + 1 + 1')
    expect(r).toMatchObject({ status: 'illegal_access', error: { kind: 'ScriptTooLarge' } })
  })

  for (const isolation of ['thread', 'process'] as const) {
    it(`maxQueue and queueTimeoutMs (${isolation})`, async () => {
      const sb = sandbox({ isolation, poolSize: 1, maxQueue: 1, queueTimeoutMs: 100, preset: 'balanced', maxIterations: 1e12, timeoutMs: 1000 })
      // poolSize 1: one execution runs at once (one thread, or one executor thread of one worker).
      const busy = [sb.execute('while (true) {}')]
      await new Promise((r) => setTimeout(r, 60))
      const queued = sb.execute('return 1')
      const full = sb.execute('return 2')
      const [q, f, ...b] = await Promise.all([queued, full, ...busy])
      for (const r of b) expect(r.status).toBe('timeout')
      expect(q).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'QUEUE_TIMEOUT' } })
      expect(f).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'QUEUE_FULL' } })
    })
  }

  for (const isolation of ['thread', 'process'] as const) {
    it(`poolSize bounds the executions running at once; the rest end QUEUE_TIMEOUT (${isolation})`, async () => {
      for (const poolSize of [1, 3]) {
        const sb = sandbox({ isolation, poolSize, queueTimeoutMs: 700, preset: 'balanced', maxIterations: 1e12, timeoutMs: 5000 })
        expect(sb.isolation).toBe(isolation)
        // Start every worker first (a worker's start-up would count against the queue timeout).
        let release!: () => void
        const gate = new Promise<void>((r) => (release = r))
        const parked = Array.from({ length: poolSize }, () => sb.execute("return await callTool('wait')", { callTool: () => gate }))
        await new Promise((r) => setTimeout(r, 50))
        release()
        expect((await Promise.all(parked)).map((r) => r.status)).toEqual(Array(poolSize).fill('ok'))
        // poolSize + 1 executions that each keep a thread busy for 1.5 s, started together.
        const script = 'const end = Date.now() + 1500; let n = 0; while (Date.now() < end) n++; return "done"'
        const results = await Promise.all(Array.from({ length: poolSize + 1 }, () => sb.execute(script)))
        const codes = results.map((r) => (r.status === 'ok' ? r.result : (r.error as { code: string }).code)).sort()
        expect(codes).toEqual([...Array(poolSize).fill('done'), 'QUEUE_TIMEOUT'].sort())
        const late = results.find((r) => r.status !== 'ok')
        expect(late).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'QUEUE_TIMEOUT' } })
        expect(late!.stats.durationMs).toBeLessThan(1500)
      }
    })
  }

  it('AbortSignal ends a run with EXECUTION_ABORTED', async () => {
    const sb = sandbox()
    const controller = new AbortController()
    const pending = sb.execute("await callTool('slow')", { callTool: () => new Promise(() => {}) }, { signal: controller.signal })
    setTimeout(() => controller.abort(), 20)
    expect(await pending).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'EXECUTION_ABORTED' } })
    const pre = await sb.execute('return 1', undefined, { signal: AbortSignal.abort() })
    expect(pre).toMatchObject({ error: { code: 'EXECUTION_ABORTED' } })
  })

  it('dispose() ends running executions with POOL_DISPOSED', async () => {
    const sb = new Sandbox()
    const pending = sb.execute("await callTool('never')", { callTool: () => new Promise(() => {}) })
    await new Promise((r) => setTimeout(r, 20))
    await sb.dispose()
    expect(await pending).toMatchObject({ status: 'runtime_error', error: { source: 'sandbox', code: 'POOL_DISPOSED' } })
    expect(await sb.execute('return 1')).toMatchObject({ error: { code: 'POOL_DISPOSED' } })
  })

  it('never-settling promises end at once, not at the deadline', async () => {
    const started = Date.now()
    const r = await sandbox().execute('await new Promise(() => {})')
    expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'EXECUTION_ERROR' } })
    expect(Date.now() - started).toBeLessThan(1000)
  })
})

describe('caller mistakes throw TypeError ERR_INVALID_ARG', () => {
  const sb = sandbox()
  const cases: [string, () => unknown][] = [
    ['bad preset', () => new Sandbox({ preset: 'nope' as never })],
    ['negative timeout', () => new Sandbox({ timeoutMs: -1 })],
    ['bad isolation', () => new Sandbox({ isolation: 'vm' as never })],
    ['non-string script', () => sb.execute(1 as never)],
    ['non-function callTool', () => sb.execute('1', { callTool: 1 as never })],
    ['non-function in functions', () => sb.execute('1', { functions: { a: 1 as never } })],
    ['functions shadowing a sandbox global', () => sb.execute('1', { functions: { 'callTool.x': () => 1 } })],
    ['functions with a reserved name', () => sb.execute('1', { functions: { __cc_tick: () => 1 } })],
    ['bad language', () => sb.execute('1', undefined, { language: 'py' as never })],
    ['cyclic context', () => sb.execute('1', undefined, { context: (() => { const a: Record<string, unknown> = {}; a.a = a; return a })() })],
    ['negative options.timeoutMs', () => sb.execute('1', undefined, { timeoutMs: -5 })],
    ['non-signal', () => sb.execute('1', undefined, { signal: {} as never })],
  ]
  for (const [name, call] of cases) {
    it(name, () => expectInvalidArg(call))
  }
})

describe('scale', () => {
  it('10 000 executions awaiting tools at once share a few threads', async () => {
    const sb = sandbox({ poolSize: 2, maxQueue: 20_000, queueTimeoutMs: 120_000, timeoutMs: 120_000 })
    const n = 10_000
    const held: ((v: unknown) => void)[] = []
    let allParked: () => void = () => {}
    const parked = new Promise<void>((resolve) => {
      allParked = resolve
    })
    const host: ExecuteHost = {
      callTool: (_name, input) =>
        new Promise((resolve) => {
          held.push(() => resolve({ n: (input as { i: number }).i }))
          if (held.length === n) allParked()
        }),
    }
    const runs = Array.from({ length: n }, (_, i) => sb.execute('const r = await callTool("wait", { i: input }); return r.n + 1', host, { input: i }))
    await parked
    expect(held.length).toBe(n)
    for (const release of held) release(undefined)
    const results = await Promise.all(runs)
    expect(results.every((r, i) => r.status === 'ok' && r.result === i + 1)).toBe(true)
  }, 180_000)
})
