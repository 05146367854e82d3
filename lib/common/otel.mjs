// OpenTelemetry for the gateway and the adapters (api.md §10): W3C trace context in and out of
// `params._meta`, and the gateway's CLIENT spans. The engine records its own spans (execute,
// tool_call, ...); this file only puts them in the right trace.
//
// `@opentelemetry/api` is an optional peer dependency: it is looked up once, on first use, from
// this package's own folder (never the application's cwd), so the engine finds the same file.
// Without it every helper below is a plain call of its function: nothing is allocated or measured.
// Nothing here may throw into a request: the API and the application's SDK are someone else's code.
import { createRequire } from 'node:module'

/** @typedef {typeof import('@opentelemetry/api')} Api */
/** @typedef {import('@opentelemetry/api').Context} Context */
/** @typedef {import('@opentelemetry/api').Span} Span */
/** @typedef {import('@opentelemetry/api').Attributes} Attributes */

/** Set by the engine next to a script's `codecall.tool_call` span: "inside a script's tool call". */
export const TOOL_CALL = Symbol.for('codecall.tool_call')

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)
const CODE = /^[A-Z][A-Z0-9_]{0,63}$/

/** @type {Api | null | undefined} undefined: not looked up yet; null: not installed. */
let api
/** @type {import('@opentelemetry/api').Tracer | undefined} */
let tracer

/** The `@opentelemetry/api` module, or `null` when it does not resolve from this package. */
export function otel() {
  if (api === undefined) {
    api = null
    try {
      const require = createRequire(import.meta.url)
      api = require(require.resolve('@opentelemetry/api'))
    } catch {
      // Not installed (or broken): telemetry stays off.
    }
  }
  return api
}

/** An error code as `error.type`: codes only; anything else (free text from a host) is `_OTHER`. */
export function errorType(code) {
  return typeof code === 'string' && CODE.test(code) ? code : '_OTHER'
}

/**
 * The context for work under an incoming request's `_meta.traceparent` (and `tracestate`): the
 * active context with that remote span as parent. `null` without the API or a valid traceparent.
 * @param {unknown} meta
 * @returns {Context | null}
 */
export function parentFromMeta(meta) {
  const otelApi = otel()
  if (!otelApi || meta === null || typeof meta !== 'object') return null
  try {
    const { traceparent, tracestate } = /** @type {Record<string, unknown>} */ (meta)
    if (typeof traceparent !== 'string') return null
    const m = TRACEPARENT.exec(traceparent.trim())
    if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return null
    return otelApi.trace.setSpanContext(otelApi.context.active(), {
      traceId: m[1],
      spanId: m[2],
      traceFlags: parseInt(m[3], 16),
      isRemote: true,
      traceState: typeof tracestate === 'string' && tracestate !== '' ? otelApi.createTraceState(tracestate) : undefined,
    })
  } catch {
    return null
  }
}

/**
 * `fn()` with `meta.traceparent` as the parent of what it starts (just `fn()` without the API or a
 * valid traceparent).
 * @template T
 * @param {unknown} meta
 * @param {() => T} fn
 * @returns {T}
 */
export function withMetaParent(meta, fn) {
  const ctx = parentFromMeta(meta)
  return ctx ? within(ctx, fn) : fn()
}

/** §12, read by the engine's telemetry: where a run's first span is told, and the span to link. */
const RUN_SINK = Symbol.for('codecall.run.sink')
const RUN_LINK = Symbol.for('codecall.run.link')

/**
 * `fn()` for a run that may outlive its process: the engine's span for it tells `trace.sink` its
 * span context (kept in the journal), and links `trace.link` (the first run's) when resumed. Just
 * `fn()` without the API.
 * @template T
 * @param {{ sink: (spanContext: { traceId: string, spanId: string, traceFlags: number }) => void, link?: unknown }} trace
 * @param {() => T} fn
 * @returns {T}
 */
export function withRunContext(trace, fn) {
  const otelApi = otel()
  if (!otelApi) return fn()
  let ctx
  try {
    ctx = otelApi.context.active().setValue(RUN_SINK, trace.sink)
    if (trace.link !== undefined && trace.link !== null) ctx = ctx.setValue(RUN_LINK, trace.link)
  } catch {
    return fn()
  }
  return within(ctx, fn)
}

/** `fn` in `ctx`; if the context manager itself fails, `fn` still runs (once). */
function within(ctx, fn) {
  let ran = false
  try {
    return /** @type {Api} */ (api).context.with(ctx, () => {
      ran = true
      return fn()
    })
  } catch (e) {
    if (ran) throw e
    return fn()
  }
}

/**
 * The `_meta` to send on from here: a copy of `meta` whose `traceparent` / `tracestate` are the
 * active span context's (dropped when it has none). `meta` itself when nothing changes — always
 * without the API. Never mutates `meta`.
 * @param {Record<string, unknown> | undefined} meta
 * @returns {Record<string, unknown> | undefined}
 */
export function metaWithContext(meta) {
  const otelApi = otel()
  if (!otelApi) return meta
  try {
    const base = meta !== null && typeof meta === 'object' ? meta : undefined
    const sc = otelApi.trace.getSpanContext(otelApi.context.active())
    if (!sc || !otelApi.trace.isSpanContextValid(sc)) {
      if (!base || (!('traceparent' in base) && !('tracestate' in base))) return meta
      const { traceparent: _p, tracestate: _s, ...rest } = base
      return rest
    }
    /** @type {Record<string, unknown>} */
    const out = { ...base, traceparent: `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}` }
    const state = sc.traceState?.serialize()
    if (state) out.tracestate = state
    else delete out.tracestate
    return out
  } catch {
    return meta
  }
}

/** The OpenTelemetry SDKs' "record nothing here" key (`suppressTracing` of @opentelemetry/core). */
const SUPPRESS_TRACING = Symbol.for('OpenTelemetry SDK Context Key SUPPRESS_TRACING')

/**
 * `fn()` with tracing suppressed: for the gateway's own use of the engine (an index check is not a
 * meta-tool call, and must not show up as a `codecall.search` in the user's trace).
 * @template T
 * @param {() => T} fn
 * @returns {T}
 */
export function untraced(fn) {
  const otelApi = otel()
  if (!otelApi) return fn()
  let ctx
  try {
    ctx = otelApi.context.active().setValue(SUPPRESS_TRACING, true)
  } catch {
    return fn()
  }
  return within(ctx, fn)
}

/** Whether the active context is one of a script's tool calls (the engine marked it). */
export function inToolCall() {
  const otelApi = otel()
  if (!otelApi) return false
  try {
    return otelApi.context.active().getValue(TOOL_CALL) === true
  } catch {
    return false
  }
}

/**
 * Has the application's SDK (if one is registered) export what it still holds: before a CLI's
 * `process.exit`, which would drop a batch processor's queue and the metrics since the last
 * export. Waits at most `timeoutMs`; never rejects.
 * @param {number} [timeoutMs]
 * @returns {Promise<void>}
 */
export async function flushTelemetry(timeoutMs = 3000) {
  const otelApi = otel()
  if (!otelApi) return
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  try {
    /** @type {any} */
    const tracing = otelApi.trace.getTracerProvider()
    /** @type {any[]} */
    const providers = [tracing?.getDelegate?.() ?? tracing, otelApi.metrics.getMeterProvider()]
    const flushes = providers.map(async (p) => {
      if (typeof p?.forceFlush === 'function') await p.forceFlush()
    })
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, timeoutMs)
    })
    await Promise.race([Promise.allSettled(flushes), late])
  } catch {
    // nothing more to do on the way out
  } finally {
    clearTimeout(timer)
  }
}

/** @param {Api} otelApi @returns {import('@opentelemetry/api').Tracer} */
function getTracer(otelApi) {
  if (!tracer) {
    let version
    try {
      version = createRequire(import.meta.url)('../../package.json').version
    } catch {
      // no version then
    }
    // A ProxyTracer when no provider is registered yet: it follows one registered later.
    tracer = otelApi.trace.getTracer('@codecall/native', version)
  }
  return tracer
}

/**
 * `fn()` inside a CLIENT span `name` (a request to another server), so what `fn` sends carries it
 * as its parent. The span ends when `fn`'s promise settles; a rejection sets status ERROR and
 * `error.type` — the error's `code`, or the one `how.error(e)` gives, with its attributes. Never
 * an error's message.
 * @template T
 * @param {string} name
 * @param {Attributes} attributes
 * @param {() => Promise<T>} fn
 * @param {{ error?: (e: any) => { code?: unknown, attributes?: Attributes }, result?: (value: T) => string | undefined }} [how]
 *   `result`: an error code for a value that is a failure all the same (a tool's `isError`).
 * @returns {Promise<T>}
 */
export function clientSpan(name, attributes, fn, how) {
  const otelApi = otel()
  if (!otelApi) return fn()
  /** @type {Span} */
  let span
  /** @type {Context | null} */
  let ctx = null
  try {
    span = getTracer(otelApi).startSpan(name, { kind: otelApi.SpanKind.CLIENT, attributes })
    // No provider (or not sampled): nothing to record; the active context goes on as it is.
    if (span.isRecording()) ctx = otelApi.trace.setSpan(otelApi.context.active(), span)
  } catch {
    // as if there were no provider
  }
  if (!ctx) return fn()
  const active = ctx
  const fail = (code, extra) => {
    try {
      span.setAttributes({ ...extra, 'error.type': errorType(code) })
      span.setStatus({ code: otelApi.SpanStatusCode.ERROR })
    } catch {
      // the SDK's problem, not the request's
    }
  }
  const end = () => {
    try {
      span.end()
    } catch {
      // as above
    }
  }
  return new Promise((resolve) => resolve(within(active, fn))).then(
    (value) => {
      let code
      try {
        code = how?.result?.(value)
      } catch {
        // a value it cannot read is not a failure
      }
      if (code !== undefined) fail(code)
      end()
      return value
    },
    (e) => {
      let code = e?.code
      let extra
      try {
        const read = how?.error?.(e)
        if (read?.code !== undefined) code = read.code
        extra = read?.attributes
      } catch {
        // the error's own code then
      }
      fail(code, extra)
      end()
      throw e
    },
  )
}
