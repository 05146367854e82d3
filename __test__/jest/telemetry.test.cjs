// OpenTelemetry under Jest (api.md §10). Each Jest test file runs in a realm of its own, with its
// own copy of `@opentelemetry/api` and its own `globalThis`; the addon loads the API in Node's
// main realm. The SDK registered here reaches the engine once the API's global registry is shared
// with that realm — the one line the README gives. (Vitest and plain Node need nothing.)
const { runInThisContext } = require('node:vm')
const { context, trace } = require('@opentelemetry/api')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base')
const { CodeCall } = require('../..')

test('the engine records into the SDK a Jest test registered', async () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  const key = Symbol.for('opentelemetry.js.api.1')
  runInThisContext('globalThis')[key] = globalThis[key]

  const cc = new CodeCall({ vm: { isolation: 'thread' } })
  cc.setTools([{ name: 'a:echo', description: 'echo' }])
  try {
    const r = await trace.getTracer('test').startActiveSpan('outer', async (span) => {
      const r = await cc.execute({ script: "return await callTool('a:echo', { n: 1 })" }, { callTool: (name, input) => input })
      span.end()
      return r
    })
    expect(r).toMatchObject({ status: 'ok', result: { n: 1 } })
  } finally {
    await cc.dispose()
  }
  const spans = exporter.getFinishedSpans()
  const byName = (n) => spans.find((s) => s.name === n)
  const outer = byName('outer')
  const exec = byName('codecall.execute')
  const call = byName('codecall.tool_call')
  expect(exec.parentSpanContext.spanId).toBe(outer.spanContext().spanId)
  expect(call.parentSpanContext.spanId).toBe(exec.spanContext().spanId)
  expect(call.attributes['gen_ai.tool.name']).toBe('a:echo')
  await provider.shutdown()
  context.disable()
})
