// OpenTelemetry from the engine (api.md §10), with the real SDK: spans, their parents, their
// attributes, metrics — and never a byte of the data (a marker planted in every place a script,
// a host or a caller can put data is searched for in everything exported). Both isolations.
//
// This file registers a global tracer provider, meter provider and context manager: vitest runs
// each file in its own worker, so no other file sees them.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { context, metrics, trace, ROOT_CONTEXT, SpanStatusCode, type Span } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CodeCall } from '../index.js'

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })
const meterProvider = new MeterProvider({ readers: [reader] })
const tracer = trace.getTracer('test')
const MARK = 'M4RK3R-9f1c'

// The CodeCall made before any provider exists: instruments must follow the provider registered
// later (the API has no proxy meter provider).
const early = new CodeCall()
early.setTools([{ name: 'a:echo', description: 'echo' }])

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  metrics.setGlobalMeterProvider(meterProvider)
})
afterAll(async () => {
  await early.dispose()
  await meterProvider.shutdown()
  await provider.shutdown()
})
beforeEach(() => exporter.reset())

const later = (ms: number) => new Promise((r) => setTimeout(r, ms))
const spans = () => exporter.getFinishedSpans()
const named = (name: string) => spans().filter((s) => s.name === name)
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId
const idOf = (s: ReadableSpan | Span) => ('spanContext' in s ? s.spanContext() : (s as ReadableSpan).spanContext()).spanId

async function collect(): Promise<ResourceMetrics> {
  await reader.forceFlush()
  const all = metricExporter.getMetrics()
  return all[all.length - 1]
}
function points(rm: ResourceMetrics, name: string) {
  for (const sm of rm.scopeMetrics) for (const m of sm.metrics) if (m.descriptor.name === name) return m.dataPoints as { attributes: Record<string, unknown>; value: any }[]
  return []
}

// Everything a span or a metric exports, as one string to search.
function exported(rm?: ResourceMetrics) {
  const s = spans().map((sp) => ({
    name: sp.name,
    attributes: sp.attributes,
    status: sp.status,
    events: sp.events,
    links: sp.links,
  }))
  const m = rm ? rm.scopeMetrics.flatMap((sm) => sm.metrics.map((x) => ({ name: x.descriptor.name, points: x.dataPoints.map((p) => p.attributes) }))) : []
  return JSON.stringify({ s, m })
}

for (const isolation of ['thread', 'process'] as const) {
  describe(`engine telemetry (${isolation} isolation)`, () => {
    const cc = new CodeCall({
      vm: { isolation },
      approval: { ask: ['a:risky*'] },
      directCalls: { enabled: true },
    })
    cc.setTools([
      { name: 'a:echo', description: `echo ${MARK}` },
      { name: 'a:wait', description: 'waits' },
      { name: 'a:fail', description: 'throws' },
      { name: 'a:iserror', description: 'isError' },
      { name: 'a:risky', description: 'asks first' },
      { name: 'a:hang', description: 'never answers' },
    ])
    afterAll(() => cc.dispose())

    const host = (extra: Record<string, unknown> = {}) => ({
      callTool: async (name: string, input: unknown) => {
        // The host's own span, made with whatever context is current in its callTool.
        return tracer.startActiveSpan(`host ${name}`, async (span) => {
          try {
            if (name === 'a:wait') await later(100)
            if (name === 'a:fail') throw Object.assign(new Error(`boom ${MARK}`), { code: 'E_UPSTREAM' })
            if (name === 'a:iserror') return { isError: true, content: [{ type: 'text', text: `bad ${MARK}` }] }
            if (name === 'a:hang') return new Promise(() => {})
            return { echoed: input, secret: MARK }
          } finally {
            span.end()
          }
        })
      },
      ...extra,
    })

    it('execute → tool_call per call (callTool and __safe_parallel) → the host’s own span', async () => {
      const events: any[] = []
      const script = `// ${MARK}
        const a = await callTool('a:echo', { v: '${MARK}' })
        const [b, c] = await __safe_parallel([() => callTool('a:wait', {}), () => callTool('a:echo', { n: 2 })])
        console.log('${MARK}'); mcpLog('info', '${MARK}', { m: '${MARK}' }); mcpNotify('${MARK}', { m: '${MARK}' })
        return { a, b, c, m: '${MARK}' }`
      const r = await tracer.startActiveSpan('outer', async (outer) => {
        const r = await cc.execute({ script, input: { m: MARK }, context: { m: MARK } }, host({ onEvent: (e: any) => events.push(e) }))
        outer.end()
        return r
      })
      expect(r.status).toBe('ok')
      const [outer] = named('outer')
      const [exec] = named('codecall.execute')
      expect(parentOf(exec)).toBe(idOf(outer))
      expect(exec.attributes).toMatchObject({
        'codecall.status': 'ok',
        'codecall.tool_calls': 3,
        'codecall.isolation': isolation,
        'codecall.execution_id': r.stats.executionId,
        'codecall.code.sha256': createHash('sha256').update(script, 'utf8').digest('hex'),
        'codecall.code.length': script.length,
        'codecall.language': 'javascript',
      })
      expect(typeof exec.attributes['codecall.duration_ms']).toBe('number')
      expect(exec.status.code).toBe(SpanStatusCode.UNSET)
      const tools = named('codecall.tool_call')
      expect(tools.map((t) => t.attributes['gen_ai.tool.name']).sort()).toEqual(['a:echo', 'a:echo', 'a:wait'])
      for (const t of tools) {
        expect(parentOf(t)).toBe(idOf(exec))
        expect(t.attributes['codecall.status']).toBe('ok')
        expect(t.attributes['gen_ai.operation.name']).toBe('execute_tool')
        expect(t.attributes['codecall.execution_id']).toBe(r.stats.executionId)
        // The host's span is a child of its own tool call.
        const hostSpans = spans().filter((s) => s.name.startsWith('host ') && parentOf(s) === idOf(t))
        expect(hostSpans.map((s) => s.name)).toEqual([`host ${t.attributes['gen_ai.tool.name']}`])
      }
      // The same call ids as the events the host saw.
      const ends = events.filter((e) => e.type === 'tool_call_end').map((e) => e.callId).sort()
      expect(tools.map((t) => t.attributes['codecall.call_id']).sort()).toEqual(ends)
      expect(exported()).not.toContain(MARK)
    })

    it('two executions in flight: each tool call and host span under its own execution', async () => {
      const run = (label: string) =>
        tracer.startActiveSpan(label, async (outer) => {
          const r = await cc.execute({ script: `await callTool('a:wait', {}); await callTool('a:echo', {}); return '${label}'` }, host())
          outer.end()
          return r
        })
      const [ra, rb] = await Promise.all([run('A'), later(20).then(() => run('B'))])
      expect([ra.status, rb.status]).toEqual(['ok', 'ok'])
      for (const [label, r] of [['A', ra], ['B', rb]] as const) {
        const [outer] = named(label)
        const exec = named('codecall.execute').find((s) => s.attributes['codecall.execution_id'] === r.stats.executionId)!
        expect(parentOf(exec)).toBe(idOf(outer))
        const tools = named('codecall.tool_call').filter((t) => parentOf(t) === idOf(exec))
        expect(tools).toHaveLength(2)
        for (const t of tools) expect(t.attributes['codecall.execution_id']).toBe(r.stats.executionId)
        const hostSpans = spans().filter((s) => s.name.startsWith('host ') && tools.some((t) => idOf(t) === parentOf(s)))
        expect(hostSpans).toHaveLength(2)
      }
    })

    it('errors: a host throw, isError, a free-text code, a tool_error, a syntax error, a timeout', async () => {
      const r1 = await cc.execute(
        {
          script: `const x = await callTool('a:iserror', {}, { throwOnError: false });
                   const y = await callTool('a:fail', {}, { throwOnError: false });
                   return await callTool('a:fail', {})`,
        },
        host(),
      )
      expect(r1.status).toBe('tool_error')
      const tools = named('codecall.tool_call')
      const byName = (n: string) => tools.filter((t) => t.attributes['gen_ai.tool.name'] === n)
      expect(byName('a:iserror')[0].attributes['error.type']).toBe('TOOL_EXECUTION_ERROR')
      for (const t of byName('a:fail')) {
        expect(t.status.code).toBe(SpanStatusCode.ERROR)
        expect(t.status.message).toBeUndefined()
        expect(t.attributes['error.type']).toBe('E_UPSTREAM')
        expect(t.events).toEqual([])
      }
      const [exec] = named('codecall.execute')
      expect(exec.status.code).toBe(SpanStatusCode.ERROR)
      expect(exec.attributes['codecall.status']).toBe('tool_error')
      expect(exec.attributes['error.type']).toBe('E_UPSTREAM')

      exporter.reset()
      const freeText = host({
        callTool: () => {
          throw Object.assign(new Error('x'), { code: `not a code ${MARK}` })
        },
      })
      await cc.execute({ script: "return await callTool('a:echo', {})" }, freeText)
      expect(named('codecall.tool_call')[0].attributes['error.type']).toBe('_OTHER')
      expect(named('codecall.execute')[0].attributes['error.type']).toBe('_OTHER')

      exporter.reset()
      const syntax = await cc.execute({ script: `return (${MARK}` }, host())
      expect(syntax.status).toBe('syntax_error')
      expect(named('codecall.execute')[0].attributes['error.type']).toBe('SYNTAX_ERROR')

      exporter.reset()
      const cc2 = new CodeCall({ vm: { isolation, timeoutMs: 300 } })
      cc2.setTools([{ name: 'a:hang', description: 'hangs' }])
      try {
        const t = await cc2.execute({ script: "await callTool('a:hang', {}); return 1" }, host())
        expect(t.status).toBe('timeout')
      } finally {
        await cc2.dispose()
      }
      const [hang] = named('codecall.tool_call')
      expect(hang.status.code).toBe(SpanStatusCode.ERROR)
      expect(hang.attributes['error.type']).toBe('TIMEOUT')
      expect(named('codecall.execute')[0].attributes['error.type']).toBe('TIMEOUT')
      expect(exported()).not.toContain(MARK)
    })

    it('approvals: a codecall.approval span while a person decides, then the call', async () => {
      const r = await cc.execute(
        { script: "await callTool('a:risky', { m: 1 }); return await callTool('a:risky', {}, { throwOnError: false })" },
        host({ approve: async (req: any) => (await later(30), req.callId.endsWith('1') ? 'approve' : 'decline') }),
      )
      expect(r.status).toBe('ok')
      const approvals = named('codecall.approval')
      expect(approvals.map((a) => a.attributes['codecall.approval.decision'])).toEqual(['approve', 'decline'])
      const [exec] = named('codecall.execute')
      for (const a of approvals) {
        expect(parentOf(a)).toBe(idOf(exec))
        expect(a.attributes['gen_ai.tool.name']).toBe('a:risky')
        expect(a.attributes['codecall.approval.waited_ms']).toBeGreaterThan(0)
        expect(a.status.code).toBe(SpanStatusCode.UNSET)
      }
      // Only the approved call reached the host.
      expect(named('codecall.tool_call')).toHaveLength(1)
      // No approve() at all: 'unavailable', still one approval span.
      exporter.reset()
      await cc.execute({ script: "return await callTool('a:risky', {}, { throwOnError: false })" }, host())
      expect(named('codecall.approval').map((a) => a.attributes['codecall.approval.decision'])).toEqual(['unavailable'])
    })

    it('search, describe, invoke and handle: one span each, counts only', async () => {
      cc.search({ query: `echo ${MARK}` })
      const [search] = named('codecall.search')
      expect(search.attributes['codecall.search.total_indexed']).toBe(6)
      expect(typeof search.attributes['codecall.search.results']).toBe('number')
      cc.describe({ toolNames: ['a:echo', `nope${MARK}`] })
      expect(named('codecall.describe')[0].attributes).toMatchObject({
        'codecall.describe.requested': 2,
        'codecall.describe.found': 1,
        'codecall.describe.not_found': 1,
      })
      const inv = await cc.invoke({ tool: 'a:echo', input: { m: MARK } }, host())
      expect(inv.status).toBe('ok')
      const [invoke] = named('codecall.invoke')
      expect(invoke.attributes['gen_ai.tool.name']).toBe('a:echo')
      const [call] = named('codecall.tool_call')
      expect(parentOf(call)).toBe(idOf(invoke))
      expect(spans().find((s) => s.name === 'host a:echo' && parentOf(s) === idOf(call))).toBeTruthy()
      // invoke asks too.
      await cc.invoke({ tool: 'a:risky', input: {} }, host({ approve: () => 'decline' }))
      const risky = named('codecall.invoke')[1]
      expect(risky.attributes['error.type']).toBe('ACCESS_DENIED')
      expect(named('codecall.approval').map((a) => parentOf(a))).toEqual([idOf(risky)])
      // A refused invoke (unknown tool) ends its span with the code.
      await cc.invoke({ tool: `nope${MARK}`, input: {} }, host())
      expect(named('codecall.invoke')[2].attributes['error.type']).toBe('TOOL_NOT_FOUND')

      exporter.reset()
      await cc.handle('codecall:search', { query: 'echo' }, host())
      await cc.handle('codecall:describe', { toolNames: ['a:echo'] }, host())
      await cc.handle('codecall:execute', { script: 'return 1' }, host())
      await cc.handle('codecall:invoke', { tool: 'a:echo', input: {} }, host())
      expect(spans().filter((s) => s.name.startsWith('codecall.') && s.name !== 'codecall.tool_call').map((s) => s.name)).toEqual([
        'codecall.search',
        'codecall.describe',
        'codecall.execute',
        'codecall.invoke',
      ])
      expect(exported()).not.toContain(MARK)
    })

    it('invalid arguments end the span as invalid_arguments, and still throw/reject', async () => {
      await expect(cc.execute({ scrip: 'return 1' } as any, host())).rejects.toThrow(/unknown|script/)
      const [exec] = named('codecall.execute')
      expect(exec.attributes['codecall.status']).toBe('invalid_arguments')
      expect(exec.attributes['error.type']).toBe('ERR_INVALID_ARG')
      expect(() => cc.search({ query: 1 } as any)).toThrow(TypeError)
      expect(named('codecall.search')[0].attributes['error.type']).toBe('ERR_INVALID_ARG')
    })

    it('a host without onEvent still gets its tool-call spans; gateway-style tool functions too', async () => {
      const r = await cc.execute(
        {
          script: `await callTool('a:echo', {});
                   await mcp.callTool('a', 'echo', { m: '${MARK}' });
                   const x = await call_tool('a', 'fail', {});
                   await call_tool('zz', 'made_up_${MARK}', {});
                   return x.ok`,
        },
        {
          ...host(),
          functions: {
            'mcp.callTool': async (server: string, tool: string) => {
              if (tool === 'fail') throw Object.assign(new Error('x'), { code: 'E_FN' })
              return tracer.startActiveSpan('host fn', (s) => (s.end(), { ok: true }))
            },
            call_tool: async (server: string, tool: string) =>
              tool === 'fail' ? { ok: false, error: { code: 'TOOL_EXECUTION_ERROR', message: MARK } } : { ok: true },
          },
          toolFunctions: { 'mcp.callTool': 'throw', call_tool: 'result' },
        } as any,
      )
      expect(r.status).toBe('ok')
      const tools = named('codecall.tool_call')
      expect(tools.map((t) => [t.attributes['gen_ai.tool.name'], t.attributes['codecall.status']])).toEqual([
        ['a:echo', 'ok'],
        ['a:echo', 'ok'],
        ['a:fail', 'error'],
        ['_OTHER', 'ok'],
      ])
      const fnSpan = named('host fn')[0]
      expect(parentOf(fnSpan)).toBe(idOf(tools[1]))
      expect(exported()).not.toContain(MARK)
    })

    it('metrics: executions, duration, tool calls, queue gauge', async () => {
      const before = await collect()
      const count = (rm: ResourceMetrics, name: string, attrs: Record<string, unknown>) =>
        points(rm, name)
          .filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
          .reduce((n, p) => n + (typeof p.value === 'number' ? p.value : p.value.count), 0)
      await cc.execute({ script: "await callTool('a:echo', {}); return 1" }, host())
      await cc.execute({ script: 'throw new Error("x")' }, host())
      const after = await collect()
      expect(count(after, 'codecall.executions', { 'codecall.status': 'ok' }) - count(before, 'codecall.executions', { 'codecall.status': 'ok' })).toBe(1)
      expect(
        count(after, 'codecall.executions', { 'codecall.status': 'runtime_error' }) - count(before, 'codecall.executions', { 'codecall.status': 'runtime_error' }),
      ).toBe(1)
      expect(count(after, 'codecall.execution.duration', {}) - count(before, 'codecall.execution.duration', {})).toBe(2)
      expect(
        count(after, 'codecall.tool_calls', { 'gen_ai.tool.name': 'a:echo', 'codecall.status': 'ok' }) -
          count(before, 'codecall.tool_calls', { 'gen_ai.tool.name': 'a:echo', 'codecall.status': 'ok' }),
      ).toBe(1)

      // The queue: one worker, spinning; two more wait for it.
      const small = new CodeCall({ vm: { isolation, poolSize: 1, queueTimeoutMs: 20_000, preset: 'balanced', maxIterations: 1e12, timeoutMs: 600 } })
      try {
        const runs = [0, 1, 2].map(() => small.execute({ script: 'while (true) {}' }, { callTool: () => ({}) }))
        await later(300)
        const queued = points(await collect(), 'codecall.sandbox.queue').filter((p) => p.attributes['codecall.isolation'] === isolation)
        expect(queued.reduce((n, p) => n + p.value, 0)).toBeGreaterThanOrEqual(1)
        expect((await Promise.all(runs)).map((r) => r.status)).toEqual(['timeout', 'timeout', 'timeout'])
        const idle = points(await collect(), 'codecall.sandbox.queue').filter((p) => p.attributes['codecall.isolation'] === isolation)
        expect(idle.reduce((n, p) => n + p.value, 0)).toBe(0)
      } finally {
        await small.dispose()
      }
      // The CodeCall made before the providers were registered records too.
      const b2 = await collect()
      await early.execute({ script: 'return 1' }, { callTool: () => ({}) })
      const a2 = await collect()
      expect(count(a2, 'codecall.executions', {}) - count(b2, 'codecall.executions', {})).toBe(1)
      expect(exported(a2)).not.toContain(MARK)
    })

    it('with no provider (a non-recording parent), results are the same and nothing is exported', async () => {
      const r = await context.with(trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 0 })), () =>
        cc.execute({ script: "return await callTool('a:echo', { v: 1 })" }, host()),
      )
      expect(r.status).toBe('ok')
      // The default sampler follows the parent: not sampled, nothing recorded.
      expect(named('codecall.execute')).toHaveLength(0)
    })
  })
}

it('an SDK that throws never breaks an execution, a tool call or an approval', async () => {
  const sdk = () => {
    throw new Error('broken SDK')
  }
  trace.disable()
  // The execution's span records (so the run goes on); every span under it throws.
  const real = provider.getTracer('real')
  const startSpan = (name: string, o: any, c: any) => (name === 'codecall.execute' ? real.startSpan(name, o, c) : sdk())
  trace.setGlobalTracerProvider({ getTracer: () => ({ startSpan, startActiveSpan: sdk }) } as any)
  try {
    // Both isolations, one slot each, two neighbours parked beside the execution on that slot.
    for (const isolation of ['thread', 'process'] as const) {
      const cc = new CodeCall({ vm: { isolation, poolSize: 1 }, approval: { ask: ['a:risky'] } })
      cc.setTools([
        { name: 'a:echo', description: 'echo' },
        { name: 'a:risky', description: 'asks' },
      ])
      try {
        exporter.reset()
        const host = { callTool: async (name: string) => (await later(50), { name }), approve: () => 'approve' as const }
        const neighbour = (n: number) => cc.execute({ script: `await callTool('a:echo', {}); return ${n}` }, host)
        const [r, n1, n2] = await Promise.all([
          cc.execute({ script: "const a = await callTool('a:echo', { v: 1 }); const b = await callTool('a:risky', {}); return [a, b]" }, host),
          neighbour(1),
          neighbour(2),
        ])
        expect(r).toMatchObject({ status: 'ok', result: [{ name: 'a:echo' }, { name: 'a:risky' }] })
        expect([n1, n2]).toMatchObject([{ status: 'ok', result: 1 }, { status: 'ok', result: 2 }])
        expect(cc.search({ query: 'echo' }).tools[0].name).toBe('a:echo')
        expect(named('codecall.execute')).toHaveLength(3)
      } finally {
        await cc.dispose()
      }
    }
  } finally {
    trace.disable()
    trace.setGlobalTracerProvider(provider)
  }
  // And the engine follows the provider registered again.
  exporter.reset()
  await early.execute({ script: 'return 1' }, { callTool: () => ({}) })
  expect(named('codecall.execute')).toHaveLength(1)
})

it('the API is loaded once, from the package', () => {
  const req = createRequire(import.meta.url)
  const file = req.resolve('@opentelemetry/api')
  expect(Object.keys(req.cache).filter((k) => k === file)).toHaveLength(1)
})
