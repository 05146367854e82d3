// Runs that outlive a process (api.md §12) and OpenTelemetry (§10): the execution span of a run
// resumed from the run store says so and links the first run's span — the trace of one plan that
// waited for a person, across the processes that carried it.
//
// This file registers a global tracer provider and context manager: vitest runs each file in its
// own worker, so no other file sees them.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, expect, it } from 'vitest'

import { CodeCall } from '../index.js'
import { ApprovalRounds } from '../lib/adapters/stateless.mjs'

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const dir = mkdtempSync(join(tmpdir(), 'codecall-runs-otel-'))
const engines: CodeCall[] = []
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
})
afterAll(async () => {
  await Promise.all(engines.map((e) => e.dispose()))
  await provider.shutdown()
  rmSync(dir, { recursive: true, force: true })
})

it('the resumed execution span links the first one and says it was resumed', async () => {
  const store = join(dir, 'runs.db')
  const make = () => {
    const engine = new CodeCall({ approval: { ask: ['shop:delete'] }, runs: { store } })
    engine.setTools([
      { name: 'shop:list', description: 'List', annotations: { readOnlyHint: true } },
      { name: 'shop:delete', description: 'Delete' },
    ])
    engines.push(engine)
    return new ApprovalRounds(engine, { stateKey: 'runs-telemetry-key-0123456789' })
  }
  const [a, b] = [make(), make()]
  const host = () => ({ callTool: (name: string) => (name === 'shop:list' ? [1] : { ok: true }) })
  const args = { script: "const l = await callTool('shop:list', {}); return await callTool('shop:delete', { id: l[0] })" }
  const first: any = await a.handle('codecall:execute', args, host(), { canElicit: true })
  expect(first.resultType).toBe('input_required')
  const inputResponses = Object.fromEntries(Object.keys(first.inputRequests).map((k) => [k, { action: 'accept' }]))
  const done: any = await b.handle('codecall:execute', args, host(), { canElicit: true, requestState: first.requestState, inputResponses })
  expect(done.result.status).toBe('ok')
  // The first process lets go of its copy (aborted): its span ends.
  a.close()
  const executesNow = () => exporter.getFinishedSpans().filter((s) => s.name === 'codecall.execute')
  for (let i = 0; i < 100 && executesNow().length < 2; i++) await new Promise((r) => setTimeout(r, 50))
  const executes = executesNow()
  const resumed = executes.filter((s) => s.attributes['codecall.resumed'] === true)
  expect(resumed.length).toBe(1)
  expect(resumed[0].links.length).toBe(1)
  // The first run's span (ended when its process let go of it) is the one linked.
  const firstSpan = executes.find((s) => s.attributes['codecall.resumed'] !== true)
  expect(firstSpan).toBeDefined()
  expect(resumed[0].links[0].context.spanId).toBe(firstSpan!.spanContext().spanId)
  expect(resumed[0].links[0].context.traceId).toBe(firstSpan!.spanContext().traceId)
  // The call answered from the journal on the second instance reached no tool: no span of its own.
  // One tool_call span per call that ran: the list (first instance), the delete (second).
  const calls = exporter.getFinishedSpans().filter((s) => s.name === 'codecall.tool_call')
  expect(calls.map((s) => s.attributes['gen_ai.tool.name']).sort()).toEqual(['shop:delete', 'shop:list'])
})
