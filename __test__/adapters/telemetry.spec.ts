// §10 in the adapters: a client's `_meta.traceparent` is the parent of the meta-tool call's spans,
// and each tool a script calls gets its own `codecall.tool_call` span as its `_meta.traceparent`
// (SDK 1.x tools read `extra._meta`, 2.x `ctx.mcpReq._meta`) — not the client's, which it got
// before. A direct call of a listed tool keeps the client's `_meta` as it came.
//
// The real SDK with an in-memory exporter, registered in this file's worker. Every client call is
// made in ROOT_CONTEXT: client and server share this process's AsyncLocalStorage, and the link
// must come from `_meta`, not from the client's own async context leaking into the server.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport as MemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer as McpServerV2, InMemoryTransport as MemoryV2 } from '@modelcontextprotocol/server'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { FastMCP } from 'fastmcp'
import { codeMode } from '../../lib/adapters/mcp-sdk.mjs'
import { codeMode as fastCodeMode } from '../../lib/adapters/fastmcp.mjs'
import type { CodeCall } from '../../index.js'
// @ts-expect-error — plain JS with JSDoc types, no .d.mts (not a public module)
import * as otelLib from '../../lib/common/otel.mjs'

const exporter = new InMemorySpanExporter()
const contextManager = new AsyncLocalStorageContextManager().enable()
context.setGlobalContextManager(contextManager)
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
trace.setGlobalTracerProvider(provider)
afterAll(async () => {
  await provider.shutdown()
  trace.disable()
  context.disable()
})

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_SPAN = '00f067aa0ba902b7'
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`
const TRACESTATE = 'client=adapter'

/** What a tool saw of its request: its `_meta` and the keys of its `extra` / `ctx`. */
type Seen = { meta: Record<string, any> | undefined; keys: string[]; active?: string }

const open: (() => Promise<unknown>)[] = []
beforeEach(() => exporter.reset())
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close().catch(() => {})
})

/** The client's call, outside any context of this process. */
const fromOutside = <T>(fn: () => Promise<T>) => context.with(ROOT_CONTEXT, fn)

const parse = (traceparent: unknown) => {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(String(traceparent))
  expect(m, String(traceparent)).not.toBeNull()
  return { traceId: m![1], spanId: m![2] }
}

const spans = () => exporter.getFinishedSpans()
const byId = (id: string) => spans().find((s) => s.spanContext().spanId === id)
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId

/** The span a tool got as its traceparent: a codecall.tool_call under a `kind` span under the client's. */
function expectToolCallSpan(traceparent: unknown, tool: string, kind = 'codecall.execute', client: string | null = CLIENT_SPAN) {
  const { traceId, spanId } = parse(traceparent)
  expect(spanId).not.toBe(CLIENT_SPAN)
  const toolCall = byId(spanId)
  expect(toolCall?.name, `span ${spanId} (the tool's traceparent) is a codecall.tool_call`).toBe('codecall.tool_call')
  expect(toolCall!.attributes['gen_ai.tool.name']).toBe(tool)
  const parent = byId(parentOf(toolCall!)!)
  expect(parent?.name).toBe(kind)
  expect(parentOf(parent!)).toBe(client ?? undefined)
  if (client) expect(traceId).toBe(TRACE_ID)
  return { toolCall: toolCall!, parent: parent! }
}

function sdkV1() {
  const server = new McpServerV1({ name: 'shop', version: '1.0.0' })
  const seen: Seen[] = []
  const probe = async (extra: any) => {
    seen.push({ meta: extra._meta, keys: Object.keys(extra).sort(), active: trace.getActiveSpan()?.spanContext().spanId })
    return { content: [{ type: 'text' as const, text: JSON.stringify({ traceparent: extra._meta?.traceparent ?? null }) }] }
  }
  server.registerTool('users_probe', { description: 'Report the trace context the handler got' }, probe)
  server.registerTool('users_list', { description: 'List the users', inputSchema: { limit: z.number().optional() } }, async (_args: any, extra: any) => probe(extra))
  return { server, seen }
}

async function connectV1(server: any, options: Record<string, unknown> = {}) {
  const codecall = codeMode(server, options) as CodeCall
  const [a, b] = MemoryV1.createLinkedPair()
  await server.connect(a)
  const client = new ClientV1({ name: 'test', version: '1' })
  await client.connect(b)
  open.push(() => codecall.dispose(), () => client.close())
  return { codecall, client }
}

describe('codeMode(@modelcontextprotocol/sdk 1.x McpServer) with an OpenTelemetry SDK', () => {
  it("a tool called by a script gets its own tool_call span as traceparent, in the client's trace", async () => {
    const { server, seen } = sdkV1()
    const { client } = await connectV1(server)
    // Frozen: neither the adapter nor the engine may write to the client's `_meta`.
    const meta = Object.freeze({ traceparent: TRACEPARENT, tracestate: TRACESTATE, 'com.example/tenant': 't-1' })
    const progress: unknown[] = []
    const r = await fromOutside(() =>
      client.callTool(
        { name: 'codecall_execute', arguments: { script: `return [await callTool('users_probe'), await callTool('users_list', { limit: 1 })]` }, _meta: meta },
        undefined,
        { onprogress: (p) => void progress.push(p) },
      ),
    )
    const out = r.structuredContent as any
    expect(out.status).toBe('ok')
    expect(seen).toHaveLength(2)
    const execute = new Set<string>()
    for (const [i, s] of seen.entries()) {
      const tool = i === 0 ? 'users_probe' : 'users_list'
      // What the tool answered is what it saw.
      expect(out.result[i].traceparent).toBe(s.meta?.traceparent)
      const { toolCall, parent } = expectToolCallSpan(s.meta?.traceparent, tool)
      execute.add(parent.spanContext().spanId)
      // The client's tracestate goes with its trace; its other `_meta` keys and the progress token stay.
      expect(s.meta).toMatchObject({ tracestate: TRACESTATE, 'com.example/tenant': 't-1' })
      expect(s.meta?.progressToken).toBeDefined()
      // Everything else of `extra` is there as before.
      expect(s.keys).toEqual(expect.arrayContaining(['_meta', 'requestId', 'sendNotification', 'sendRequest', 'signal']))
      // In process, the handler also runs with its tool_call span active (its own spans nest under it).
      expect(s.active).toBe(toolCall.spanContext().spanId)
    }
    expect(execute.size).toBe(1)
    expect(seen[0].meta?.traceparent).not.toBe(seen[1].meta?.traceparent)
    expect(meta).toEqual({ traceparent: TRACEPARENT, tracestate: TRACESTATE, 'com.example/tenant': 't-1' })
  })

  it('without a client traceparent the tool gets its tool_call span, under a root execute span', async () => {
    const { server, seen } = sdkV1()
    const { client } = await connectV1(server)
    const r = await fromOutside(() => client.callTool({ name: 'codecall_execute', arguments: { script: `return await callTool('users_probe')` } }))
    expect((r.structuredContent as any).status).toBe('ok')
    const { parent } = expectToolCallSpan(seen[0].meta?.traceparent, 'users_probe', 'codecall.execute', null)
    expect(parent.spanContext().traceId).toBe(parse(seen[0].meta?.traceparent).traceId)
  })

  it("a direct call of a listed tool keeps the client's _meta as it came", async () => {
    const { server, seen } = sdkV1()
    const { client } = await connectV1(server, { mode: 'codecall_opt_in', tools: { users_probe: { codecall: { enabledInCodeCall: true, visibleInListTools: true } } } })
    const meta = { traceparent: TRACEPARENT, tracestate: TRACESTATE, 'com.example/tenant': 't-2' }
    await fromOutside(() => client.callTool({ name: 'users_probe', arguments: {}, _meta: meta }))
    // Even from inside another script's tool call of this process (its span active, its marker set).
    const elsewhere = trace.getTracer('test').startSpan('elsewhere', {}, ROOT_CONTEXT)
    const marked = trace.setSpan(ROOT_CONTEXT, elsewhere).setValue(Symbol.for('codecall.tool_call'), true)
    await context.with(marked, () => client.callTool({ name: 'users_probe', arguments: {}, _meta: meta }))
    elsewhere.end()
    expect(seen).toHaveLength(2)
    for (const s of seen) expect(s.meta).toEqual(meta)
    expect(spans().filter((s) => s.name.startsWith('codecall.'))).toEqual([])
  })

  it('codecall_invoke: the tool gets its tool_call span, under codecall.invoke, under the client', async () => {
    const { server, seen } = sdkV1()
    const { client } = await connectV1(server, { directCalls: { enabled: true } })
    const r = await fromOutside(() =>
      client.callTool({ name: 'codecall_invoke', arguments: { tool: 'users_probe', input: {} }, _meta: { traceparent: TRACEPARENT } }),
    )
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ status: 'ok' })
    expectToolCallSpan(seen[0].meta?.traceparent, 'users_probe', 'codecall.invoke')
  })

  it('search and describe: one span each, under the client', async () => {
    const { server } = sdkV1()
    const { client } = await connectV1(server)
    await fromOutside(() => client.callTool({ name: 'codecall_search', arguments: { query: 'users' }, _meta: { traceparent: TRACEPARENT } }))
    await fromOutside(() => client.callTool({ name: 'codecall_describe', arguments: { toolNames: ['users_probe'] }, _meta: { traceparent: TRACEPARENT } }))
    const ours = spans().filter((s) => s.name.startsWith('codecall.'))
    expect(ours.map((s) => s.name)).toEqual(['codecall.search', 'codecall.describe'])
    for (const s of ours) {
      expect(s.spanContext().traceId).toBe(TRACE_ID)
      expect(parentOf(s)).toBe(CLIENT_SPAN)
      expect(s.kind).toBe(SpanKind.INTERNAL)
    }
  })
})

describe('codeMode(@modelcontextprotocol/server 2.x McpServer) with an OpenTelemetry SDK', () => {
  it("the tool's ctx.mcpReq._meta: its tool_call span, the client's other keys, the rest of ctx intact", async () => {
    const server = new McpServerV2({ name: 'shop', version: '1.0.0' })
    const seen: (Seen & { req: string[]; signal: boolean })[] = []
    server.registerTool('users_probe', { description: 'Report the trace context the handler got' }, async (ctx: any) => {
      seen.push({ meta: ctx.mcpReq._meta, keys: Object.keys(ctx).sort(), req: Object.keys(ctx.mcpReq).sort(), signal: ctx.mcpReq.signal instanceof AbortSignal })
      if (ctx.mcpReq._meta?.progressToken !== undefined) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: ctx.mcpReq._meta.progressToken, progress: 1, total: 1 } })
      }
      return { content: [{ type: 'text' as const, text: '{}' }] }
    })
    const codecall = codeMode(server) as CodeCall
    const [a, b] = MemoryV2.createLinkedPair()
    await server.connect(a)
    const client = new ClientV2({ name: 'test', version: '1' })
    await client.connect(b)
    open.push(() => codecall.dispose(), () => client.close())
    const progress: unknown[] = []
    const meta = Object.freeze({ traceparent: TRACEPARENT, 'com.example/tenant': 't-3' })
    const r = await fromOutside(() =>
      client.callTool({ name: 'codecall_execute', arguments: { script: `return await callTool('users_probe')` }, _meta: meta }, { onprogress: (p: unknown) => void progress.push(p) }),
    )
    expect((r.structuredContent as any).status).toBe('ok')
    expect(seen).toHaveLength(1)
    expect(seen[0].meta).toMatchObject({ 'com.example/tenant': 't-3' })
    expect(seen[0].meta?.progressToken).toBeDefined()
    expect(progress).toHaveLength(1)
    expect(seen[0].signal).toBe(true)
    expect(seen[0].req).toEqual(expect.arrayContaining(['_meta', 'id', 'method', 'notify', 'send', 'signal']))
    expectToolCallSpan(seen[0].meta?.traceparent, 'users_probe')
  })
})

describe('codeMode(FastMCP) with an OpenTelemetry SDK', () => {
  it("the request's _meta still reaches FastMCP's context (requestId, progress); the tool runs in its tool_call span", async () => {
    const seen: { requestId?: string; active?: string }[] = []
    const server = new FastMCP({ name: 'shop', version: '1.0.0', ping: { enabled: false }, logger: { debug() {}, error() {}, info() {}, log() {}, warn() {} } })
    server.addTool({
      name: 'users_probe',
      description: 'Report the context the handler got',
      execute: async (_args, ctx) => {
        seen.push({ requestId: ctx.requestId, active: trace.getActiveSpan()?.spanContext().spanId })
        await ctx.reportProgress({ progress: 1, total: 1 })
        return '{}'
      },
    })
    const codecall = fastCodeMode(server) as CodeCall
    const [serverSide, clientSide] = MemoryV1.createLinkedPair()
    const client = new ClientV1({ name: 'test', version: '1' })
    await Promise.all([server.connect(serverSide), client.connect(clientSide)])
    open.push(() => codecall.dispose(), () => client.close(), () => server.stop())
    const progress: unknown[] = []
    const r = await fromOutside(() =>
      client.callTool(
        { name: 'codecall_execute', arguments: { script: `return await callTool('users_probe')` }, _meta: { traceparent: TRACEPARENT, requestId: 'req-7' } },
        undefined,
        { onprogress: (p) => void progress.push(p) },
      ),
    )
    expect((r.structuredContent as any).status).toBe('ok')
    expect(seen[0].requestId).toBe('req-7')
    expect(progress).toHaveLength(1)
    const toolCall = byId(seen[0].active ?? '')
    expect(toolCall?.name).toBe('codecall.tool_call')
    expect(toolCall!.spanContext().traceId).toBe(TRACE_ID)
  })
})

describe('lib/common/otel.mjs: W3C trace context by hand', () => {
  const { parentFromMeta, withMetaParent, metaWithContext, errorType, inToolCall, TOOL_CALL } = otelLib as Record<string, any>

  it('reads a valid traceparent (and tracestate) as a remote parent; junk is ignored, never thrown', () => {
    const ctx = parentFromMeta({ traceparent: TRACEPARENT, tracestate: 'a=1,b=2' })
    const sc = trace.getSpanContext(ctx)!
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: CLIENT_SPAN, traceFlags: 1, isRemote: true })
    expect(sc.traceState?.get('b')).toBe('2')
    for (const traceparent of [
      undefined,
      42,
      '',
      'junk',
      `01-${TRACE_ID}-${CLIENT_SPAN}-01`, // a version this parser does not know
      `00-${TRACE_ID.toUpperCase()}-${CLIENT_SPAN}-01`,
      `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID}-${CLIENT_SPAN}-01-extra`,
    ]) {
      expect(parentFromMeta({ traceparent }), String(traceparent)).toBeNull()
    }
    for (const meta of [undefined, null, 'x', 1, {}]) expect(parentFromMeta(meta)).toBeNull()
    // A tracestate that does not parse costs the tracestate only.
    expect(trace.getSpanContext(parentFromMeta({ traceparent: TRACEPARENT, tracestate: '!!!' }))?.spanId).toBe(CLIENT_SPAN)
    expect(withMetaParent({ traceparent: 'junk' }, () => 7)).toBe(7)
    expect(withMetaParent({ traceparent: TRACEPARENT }, () => trace.getActiveSpan()?.spanContext().spanId)).toBe(CLIENT_SPAN)
  })

  it("metaWithContext: a copy with the active span's traceparent, the input untouched", () => {
    const meta = Object.freeze({ traceparent: 'old', tracestate: 'old=1', progressToken: 3 })
    // No active span: the keys that would lie about the context go, the rest stays.
    const none = context.with(ROOT_CONTEXT, () => metaWithContext(meta))
    expect(none).toEqual({ progressToken: 3 })
    expect(context.with(ROOT_CONTEXT, () => metaWithContext(undefined))).toBeUndefined()
    const plain = { progressToken: 1 }
    expect(context.with(ROOT_CONTEXT, () => metaWithContext(plain))).toBe(plain)
    const tracer = trace.getTracer('test')
    const span = tracer.startSpan('outer', {}, parentFromMeta({ traceparent: TRACEPARENT, tracestate: 'a=1' }))
    const out = context.with(trace.setSpan(ROOT_CONTEXT, span), () => metaWithContext(meta))
    span.end()
    expect(out).toEqual({ traceparent: `00-${TRACE_ID}-${span.spanContext().spanId}-01`, tracestate: 'a=1', progressToken: 3 })
    expect(meta).toEqual({ traceparent: 'old', tracestate: 'old=1', progressToken: 3 })
  })

  it('error.type takes codes only; the tool_call marker is read from the active context', () => {
    expect(errorType('TOOL_EXECUTION_ERROR')).toBe('TOOL_EXECUTION_ERROR')
    for (const code of ['tool_error', 'E X', 'a message with data', -32602, undefined, 'E'.repeat(65)]) expect(errorType(code)).toBe('_OTHER')
    expect(context.with(ROOT_CONTEXT, () => inToolCall())).toBe(false)
    expect(context.with(ROOT_CONTEXT.setValue(TOOL_CALL, true), () => inToolCall())).toBe(true)
  })

  it('a junk traceparent from a client changes nothing in the adapter', async () => {
    const { server, seen } = sdkV1()
    const { client } = await connectV1(server)
    const r = await fromOutside(() =>
      client.callTool({ name: 'codecall_execute', arguments: { script: `return await callTool('users_probe')` }, _meta: { traceparent: 'not-a-traceparent', tracestate: 42 } }),
    )
    expect((r.structuredContent as any).status).toBe('ok')
    // A new trace, rooted at the execution.
    expectToolCallSpan(seen[0].meta?.traceparent, 'users_probe', 'codecall.execute', null)
  })
})
