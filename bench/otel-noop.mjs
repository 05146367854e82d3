// `node --import ./bench/otel-noop.mjs ...`: a registered OpenTelemetry SDK that records everything
// and keeps nothing — the `sdk` mode of bench/telemetry.mjs. Spans go through a BasicTracerProvider
// and a SimpleSpanProcessor (each span exported as it ends) to an exporter that only counts them;
// the MeterProvider has a reader that is never collected (instruments record into the SDK's
// aggregation; nothing is exported). What this costs the engine is what an app with a real SDK
// pays, minus its exporter's own work.
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'

/** Spans handed to the exporter in this process (bench/telemetry.mjs reports it as a sanity check). */
const counter = (globalThis[Symbol.for('codecall.bench.exportedSpans')] = { spans: 0 })

const dropAll = {
  export(spans, done) {
    counter.spans += spans.length
    done({ code: 0 }) // ExportResultCode.SUCCESS
  },
  shutdown: () => Promise.resolve(),
  forceFlush: () => Promise.resolve(),
}

class NeverCollected extends MetricReader {
  onShutdown() {
    return Promise.resolve()
  }
  onForceFlush() {
    return Promise.resolve()
  }
}

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropAll)] }))
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new NeverCollected()] }))
