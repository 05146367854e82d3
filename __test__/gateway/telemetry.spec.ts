// §10 through `codecall serve`, as a user turns it on: `node --import <their OTel setup>` (the
// fixture __test__/fixtures/otel/setup.mjs is the README's recipe, with file exporters). A real SDK
// client sends `_meta.traceparent`; the fixture upstream's `trace` tool answers the traceparent it
// received. Each of a script's three ways to call a tool must reach the upstream as
//   client span → codecall.execute → codecall.tool_call → gateway CLIENT span → upstream
// and no span or metric may carry the script, an input, a result or a message.
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectStdio, isRunning, leftovers, newMark, ROOT, servers, tempDir, waitFor, writeConfig } from './helpers'

const SETUP = join(ROOT, '__test__/fixtures/otel/setup.mjs')
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const CLIENT_SPAN = 'b7ad6b7169203331'
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`
const TRACESTATE = 'client=t61rcWkgMzE'
const SPAN_KIND_CLIENT = 2
const STATUS_ERROR = 2

type SpanLine = {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId?: string
  attributes: Record<string, unknown>
  status: { code: number; message?: string }
  events: unknown[]
  links: unknown[]
}

const readSpans = (file: string): SpanLine[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : []

/** `waitFor` of something that is `null` until it is there. */
const until = async <T>(fn: () => T | null, what: string, timeoutMs = 10_000): Promise<T> => (await waitFor(fn, timeoutMs, what)) as T

/** The script: the same upstream tool through callTool, mcp.callTool and call_tool. */
const THREE_WAYS = `
  const a = await callTool('fx:trace', { note: input.note })
  const b = await mcp.callTool('fx', 'trace', { note: input.note })
  const c = await call_tool('fx', 'trace', { note: input.note })
  return [a, JSON.parse(b.content[0].text), c.result]`

const parse = (traceparent: string) => {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent)
  expect(m, traceparent).not.toBeNull()
  return { traceId: m![1], spanId: m![2], flags: m![3] }
}

describe('codecall serve with an OpenTelemetry SDK (--import)', () => {
  const mark = newMark()
  const dir = tempDir()
  const spansFile = join(dir, 'spans.jsonl')
  const metricsFile = join(dir, 'metrics.json')
  let client: Awaited<ReturnType<typeof connectStdio>>['client']

  beforeAll(async () => {
    const config = writeConfig(dir, { mcpServers: { fx: servers.fixture(mark, '--trace-tool') } })
    const env = { CODECALL_TEST_SPANS: spansFile, CODECALL_TEST_METRICS: metricsFile, OTEL_METRIC_EXPORT_INTERVAL: '200' }
    // As the README says to turn it on: NODE_OPTIONS=--import=<setup> (upstreams get their own
    // small environment, so it stays with the gateway).
    ;({ client } = await connectStdio(config, [], { ...env, NODE_OPTIONS: `--import=${SETUP}` }))
  })
  afterAll(async () => {
    await client?.close()
    expect(await leftovers(mark)).toEqual([])
  })

  const execute = (script: string, input: unknown, meta: Record<string, unknown> = { traceparent: TRACEPARENT, tracestate: TRACESTATE }) =>
    client.callTool({ name: 'codecall_execute', arguments: { script, input }, _meta: meta }).then((r) => r.structuredContent as any)

  it("each way a script calls a tool reaches the upstream under its tool_call, under execute, under the client's span", async () => {
    const r = await execute(THREE_WAYS, { note: 'chain' })
    expect(r.status).toBe('ok')
    const received = r.result as { traceparent: string; tracestate: string | null; note: string }[]
    expect(received).toHaveLength(3)
    const ids = received.map((x) => parse(x.traceparent))
    for (const id of ids) expect(id).toMatchObject({ traceId: TRACE_ID, flags: '01' })
    // The client's tracestate travels with its trace.
    for (const x of received) expect(x.tracestate).toBe(TRACESTATE)
    expect(new Set(ids.map((id) => id.spanId)).size).toBe(3)

    // Spans are exported as they end; execute ends before its answer is sent.
    const spans = await until(() => {
      const all = readSpans(spansFile)
      return ids.every((id) => all.some((s) => s.spanId === id.spanId)) ? all : null
    }, 'the CLIENT spans the upstream saw')
    const byId = new Map(spans.map((s) => [s.spanId, s]))
    const executes = new Set<string>()
    for (const id of ids) {
      const clientSpan = byId.get(id.spanId)!
      expect(clientSpan).toMatchObject({
        name: 'tools/call fx',
        kind: SPAN_KIND_CLIENT,
        traceId: TRACE_ID,
        attributes: { 'mcp.method.name': 'tools/call', 'codecall.server': 'fx', 'gen_ai.tool.name': 'trace', 'network.transport': 'pipe' },
      })
      expect(clientSpan.status.code).not.toBe(STATUS_ERROR)
      const toolCall = byId.get(clientSpan.parentSpanId!)
      expect(toolCall, 'the CLIENT span has a codecall.tool_call parent').toBeDefined()
      expect(toolCall).toMatchObject({ name: 'codecall.tool_call', traceId: TRACE_ID, attributes: { 'gen_ai.tool.name': 'fx:trace' } })
      const exec = byId.get(toolCall!.parentSpanId!)
      expect(exec).toMatchObject({ name: 'codecall.execute', traceId: TRACE_ID, parentSpanId: CLIENT_SPAN })
      executes.add(exec!.spanId)
    }
    // One execution: all three tool calls under the same codecall.execute.
    expect(executes.size).toBe(1)
    // The gateway's own index checks (mcp.callTool, call_tool) are no searches of the client's.
    expect(spans.filter((s) => s.traceId === TRACE_ID && s.name === 'codecall.search')).toEqual([])
  })

  it('failed upstream requests: CLIENT spans with status ERROR and error.type, no message', async () => {
    const r = await execute(
      `return [await call_tool('fx', 'fail', {}), await call_tool('fx', 'throw', {}), await call_tool('fx', 'echo', { text: 'fine' })]`,
      {},
      { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    )
    expect(r.status).toBe('ok')
    expect(r.result.map((x: any) => x.ok)).toEqual([false, false, true])
    const spans = await until(() => {
      const all = readSpans(spansFile).filter((s) => s.kind === SPAN_KIND_CLIENT && s.traceId === TRACE_ID)
      return ['fail', 'throw', 'echo'].every((t) => all.some((s) => s.attributes['gen_ai.tool.name'] === t)) ? all : null
    }, 'the CLIENT spans')
    const of = (tool: string) => spans.find((s) => s.attributes['gen_ai.tool.name'] === tool)!
    // isError: a failed call to the script (TOOL_EXECUTION_ERROR), though the request itself succeeded.
    expect(of('fail')).toMatchObject({ status: { code: STATUS_ERROR }, attributes: { 'error.type': 'TOOL_EXECUTION_ERROR' } })
    expect(of('throw')).toMatchObject({ status: { code: STATUS_ERROR }, attributes: { 'error.type': 'TOOL_EXECUTION_ERROR', 'codecall.mcp.error_code': -32602 } })
    expect(of('echo').status.code).not.toBe(STATUS_ERROR)
    expect(of('echo').attributes['error.type']).toBeUndefined()
    for (const s of spans) expect(s.status.message ?? '').toBe('')
  })

  it('no span or metric holds the script, its input, a tool input, a result or a message', async () => {
    const marker = `mk${randomUUID().replaceAll('-', '')}`
    const script = `
      // ${marker} in a comment
      const tag = '${marker}-in-a-string'
      console.log('log', tag, input.note)
      const traced = await callTool('fx:trace', { note: input.note })
      const echoed = await callTool('fx:echo', { text: tag })
      const viaMcp = await mcp.callTool('fx', 'echo', { text: input.note })
      const failed = await call_tool('fx', 'fail', { note: tag })
      const missing = await call_tool('fx', 'no_such_${marker}', { note: tag })
      const prompt = await mcp.getPrompt('fx', 'greet', { who: tag })
      try { await callTool('fx:throw', { note: tag }) } catch (e) {}
      return { traced, echoed, viaMcp, failed, missing, prompt, tag }`
    const r = await execute(script, { note: `${marker}-input` }, { traceparent: `00-${TRACE_ID}-1111111111111111-01` })
    expect(r.status).toBe('ok')
    // The marker did go through the script, the tools and the result.
    expect(JSON.stringify(r.result)).toContain(`${marker}-input`)
    expect(r.result.echoed.echoed).toBe(`${marker}-in-a-string`)
    // A failed execution whose error message quotes the marker.
    const thrown = await execute(`throw new Error('${marker} failed')`, { note: marker }, { traceparent: `00-${TRACE_ID}-2222222222222222-01` })
    expect(thrown.status).toBe('runtime_error')
    expect(thrown.error.message).toContain(marker)

    // Only this test gets a prompt: its last CLIENT span.
    const spans = await until(() => {
      const all = readSpans(spansFile)
      return all.some((s) => s.name === 'prompts/get fx') ? all : null
    }, 'the spans of the run')
    for (const s of spans) expect(JSON.stringify(s)).not.toContain(marker)
    await new Promise((r) => setTimeout(r, 400)) // one more metrics export (every 200 ms)
    // (The metrics test below checks that there are some.)
    const metrics = existsSync(metricsFile) ? readFileSync(metricsFile, 'utf8') : ''
    expect(metrics).not.toContain(marker)
    // Not an empty scan: the run's spans are there — the CLIENT spans (trace, echo ×2, fail, throw,
    // getPrompt), the tool calls (the missing tool's too) and both executions.
    const ofRun = spans.filter((s) => s.traceId === TRACE_ID)
    expect(ofRun.filter((s) => s.kind === SPAN_KIND_CLIENT).length).toBeGreaterThanOrEqual(6)
    const executions = ofRun.filter((s) => s.name === 'codecall.execute')
    expect(executions.map((s) => s.parentSpanId)).toEqual(expect.arrayContaining(['1111111111111111', '2222222222222222']))
    expect(executions.find((s) => s.parentSpanId === '2222222222222222')).toMatchObject({ status: { code: STATUS_ERROR }, attributes: { 'error.type': 'EXECUTION_ERROR' } })
  })

  it('metrics reach the exporter of the setup', async () => {
    type Metric = { name: string; points: { attributes: Record<string, unknown>; value: any }[] }
    expect((await execute(THREE_WAYS, { note: 'metrics' })).status).toBe('ok')
    const metrics = await until(() => {
      if (!existsSync(metricsFile)) return null
      let list: Metric[]
      try {
        list = JSON.parse(readFileSync(metricsFile, 'utf8')) as Metric[]
      } catch {
        return null // the exporter is writing it now: read it again
      }
      return list.some((m) => m.name === 'codecall.tool_calls') ? list : null
    }, 'codecall metrics in the export')
    const named = (name: string) => metrics.find((m) => m.name === name)
    const executions = named('codecall.executions')!
    expect(executions.points.find((p) => p.attributes['codecall.status'] === 'ok')?.value).toBeGreaterThanOrEqual(1)
    expect(named('codecall.execution.duration')).toBeDefined()
    const calls = named('codecall.tool_calls')!
    expect(calls.points.some((p) => p.attributes['gen_ai.tool.name'] === 'fx:trace' && p.attributes['codecall.status'] === 'ok')).toBe(true)
  })
})

describe('codecall flushes the SDK when it exits', () => {
  const mark = newMark()
  const dir = tempDir()
  afterAll(async () => {
    expect(await leftovers(mark)).toEqual([])
  })

  it.each(['SIGTERM', 'stdin closed'])('%s: the metrics since the last export are exported', async (how) => {
    const metricsFile = join(dir, `metrics-${how.replace(' ', '-')}.json`)
    const config = writeConfig(dir, { mcpServers: { fx: servers.fixture(mark, '--trace-tool') } }, `flush-${how.replace(' ', '-')}.json`)
    // The SDK's own interval (60 s): only codecall's flush on the way out writes the file.
    const { client, transport, pid } = await connectStdio(config, [], { CODECALL_TEST_METRICS: metricsFile, OTEL_METRIC_EXPORT_INTERVAL: '' }, undefined, [`--import=${SETUP}`])
    const r = await client.callTool({ name: 'codecall_execute', arguments: { script: THREE_WAYS, input: { note: 'n' } } })
    expect((r.structuredContent as any).status).toBe('ok')
    expect(existsSync(metricsFile)).toBe(false)
    const exited = new Promise((resolve) => transport.onclose = () => resolve(undefined))
    if (how === 'SIGTERM') process.kill(pid, 'SIGTERM')
    else await client.close()
    await exited
    await waitFor(() => !isRunning(pid), 10_000, 'codecall to exit')
    const metrics = JSON.parse(readFileSync(metricsFile, 'utf8')) as { name: string; points: { attributes: Record<string, unknown>; value: any }[] }[]
    expect(metrics.find((m) => m.name === 'codecall.executions')?.points).toEqual([{ attributes: { 'codecall.status': 'ok' }, value: 1 }])
    if (how === 'SIGTERM') await client.close()
  })
})

describe('codecall serve with the API resolvable and no SDK', () => {
  const mark = newMark()
  const dir = tempDir()
  const spansFile = join(dir, 'spans.jsonl')
  const clients: Awaited<ReturnType<typeof connectStdio>>['client'][] = []
  let config: string

  beforeAll(() => {
    config = writeConfig(dir, { mcpServers: { fx: servers.fixture(mark, '--trace-tool') } })
  })
  afterAll(async () => {
    for (const c of clients) await c.close()
    expect(await leftovers(mark)).toEqual([])
  })

  const run = async (nodeArgs: string[]) => {
    const { client } = await connectStdio(config, [], { CODECALL_TEST_SPANS: spansFile }, undefined, nodeArgs)
    clients.push(client)
    const call = (script: string) =>
      client.callTool({ name: 'codecall_execute', arguments: { script, input: { note: 'n' } }, _meta: { traceparent: TRACEPARENT } }).then((r) => r.structuredContent as any)
    return {
      three: await call(THREE_WAYS),
      mixed: await call(`return [await callTool('fx:echo', { text: 'hi' }), await call_tool('fx', 'fail', {}), await mcp.callTool('fx', 'echo', { text: 'x' })]`),
    }
  }

  it('no --import: results as ever, nothing invented, nothing exported', async () => {
    const { three, mixed } = await run([])
    expect(three.status).toBe('ok')
    // No context manager: nothing to carry the client's context to the upstream.
    expect(three.result).toEqual([0, 1, 2].map(() => ({ traceparent: null, tracestate: null, note: 'n' })))
    expect(mixed.status).toBe('ok')
    expect(mixed.result[0]).toEqual({ echoed: 'hi', server: 'fixture' })
    expect(mixed.result[1]).toEqual({ ok: false, error: { code: 'TOOL_EXECUTION_ERROR', message: 'fixture failure: the tool says no' } })
    expect(mixed.result[2].content[0].text).toContain('"echoed":"x"')
    expect(existsSync(spansFile)).toBe(false)
  })

  it("a context manager but no tracer provider: the client's own span is passed on as the parent", async () => {
    // The setup fixture registers its tracer provider only with CODECALL_TEST_SPANS; run without it.
    const { client } = await connectStdio(config, [], { CODECALL_TEST_SPANS: '' }, undefined, [`--import=${SETUP}`])
    clients.push(client)
    const r = (await client.callTool({ name: 'codecall_execute', arguments: { script: THREE_WAYS, input: { note: 'n' } }, _meta: { traceparent: TRACEPARENT } }))
      .structuredContent as any
    expect(r.status).toBe('ok')
    expect(r.result.map((x: any) => x.traceparent)).toEqual([TRACEPARENT, TRACEPARENT, TRACEPARENT])
  })
})
