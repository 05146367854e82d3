// OpenTelemetry for the engine (api.md §10), on Node's thread. Compiled once per Node environment,
// and only when `@opentelemetry/api` resolved from this package (telemetry.rs): without it, none of
// this exists and the engine's paths do no telemetry work at all.
//
// Spans carry ids, counts, statuses, error codes, durations, names and the script's SHA-256 —
// never the script, an input, a result, a log line or an error message (a tool's message may quote
// its data). No `recordException`: it would copy messages and stacks.
//
// One `Run` per meta-tool call that records (a span that records, or a registered MeterProvider).
// `begin` answers `undefined` when neither: then the call takes the plain path, exactly as without
// the API (the caller's context still reaches the host's callbacks, so a remote parent is passed on).
(function (api, version) {
  'use strict';
  const { trace, context, metrics, SpanStatusCode, SpanKind } = api;
  const NAME = '@codecall/native';
  // The tracer of the registered provider (a ProxyTracerProvider that follows the SDK once it is
  // set), fetched again only when another one is registered (after `trace.disable()`).
  let tracerOwner;
  let tracer;
  function currentTracer() {
    const p = trace.getTracerProvider();
    if (p !== tracerOwner) {
      tracerOwner = p;
      tracer = p.getTracer(NAME, version);
    }
    return tracer;
  }
  // Marks a context as "inside one of a script's tool calls": the adapters then hand the tool the
  // tool_call span as its `_meta.traceparent` instead of the client's.
  const TOOL_CALL = Symbol.for('codecall.tool_call');
  const now = () => performance.now();
  // Error codes become `error.type` only when they look like one: a host's `code` is free text.
  const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
  const codeOf = (c) => (typeof c === 'string' && CODE.test(c) ? c : '_OTHER');
  const isObject = (v) => v !== null && typeof v === 'object';

  // ----- metrics: instruments for whichever MeterProvider is registered now. The API has no proxy
  // meter provider, so instruments made before the application's SDK started would stay no-ops.
  const noopMeter = api.createNoopMeter();
  let provider;
  let instruments = null;
  // Live pools' queue readers: `read()` is the number of executions waiting, or -1 once the pool
  // is gone.
  const queues = new Set();
  // Each live reader's count; readers of pools that are gone leave the set.
  function readQueues(each) {
    for (const q of queues) {
      let n = -1;
      try {
        n = q.read();
      } catch (_) {}
      if (n < 0) queues.delete(q);
      else each(q, n);
    }
  }
  function observeQueues(result) {
    const sums = new Map();
    readQueues((q, n) => sums.set(q.isolation, (sums.get(q.isolation) || 0) + n));
    for (const [isolation, n] of sums) result.observe(n, { 'codecall.isolation': isolation });
  }
  function meters() {
    const p = metrics.getMeterProvider();
    if (p === provider) return instruments;
    provider = p;
    instruments = null;
    try {
      const meter = p.getMeter(NAME, version);
      if (meter === noopMeter) return null;
      instruments = {
        executions: meter.createCounter('codecall.executions', {
          unit: '{execution}',
          description: 'Code-mode executions, by status',
        }),
        duration: meter.createHistogram('codecall.execution.duration', {
          unit: 'ms',
          description: 'Wall time of one code-mode execution, validation included',
        }),
        toolCalls: meter.createCounter('codecall.tool_calls', {
          unit: '{call}',
          description: 'Tool calls made by scripts and codecall:invoke, by tool and status',
        }),
      };
      meter
        .createObservableGauge('codecall.sandbox.queue', {
          unit: '{execution}',
          description: 'Executions waiting for a free sandbox worker',
        })
        .addCallback(observeQueues);
    } catch (_) {
      instruments = null;
    }
    return instruments;
  }

  let crypto;
  const sha256 = (text) => {
    if (crypto === undefined) crypto = process.getBuiltinModule('node:crypto');
    return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
  };

  // Runs `fn(a, b, c)` with `ctx` current. A context manager that throws must not lose the call:
  // then it runs in the current context (once, never twice).
  function within(ctx, fn, a, b, c) {
    let ran = false;
    try {
      return context.with(ctx, () => {
        ran = true;
        return fn(a, b, c);
      });
    } catch (e) {
      if (ran) throw e;
      return fn(a, b, c);
    }
  }

  // Starts a span; an SDK that throws gives a span that records nothing.
  // §12: context keys (as `createContextKey` makes them) set by the package's run journal.
  const RUN_SINK = Symbol.for('codecall.run.sink');
  const RUN_LINK = Symbol.for('codecall.run.link');

  function start(name, attributes, parent, links) {
    try {
      const options = { kind: SpanKind.INTERNAL, attributes };
      if (links !== undefined) options.links = links;
      return tracer.startSpan(name, options, parent);
    } catch (_) {
      return trace.wrapSpanContext(api.INVALID_SPAN_CONTEXT);
    }
  }

  // ----- one meta-tool call
  function Run(kind, span, ctx, recording, m) {
    this.kind = kind;
    this.span = span;
    this.ctx = ctx;
    this.recording = recording;
    this.m = m;
    this.ended = false;
    // execute: is this name an indexed tool? (Rust, over the live registry.) A name a script made
    // up is recorded as `_OTHER`: the tool-name attribute's values stay bounded by the index.
    this.known = undefined;
    // callId → { span, name, started } of a tool call or an approval still open.
    this.tools = new Map();
    this.approvals = new Map();
  }

  function end(span, errorType) {
    try {
      if (errorType !== undefined) {
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    } catch (_) {}
  }

  // A tool call's span, current while `thunk(seen)` calls the host; `seen(threw, valueOrError)`
  // (settle's peek) ends it with what the host did.
  Run.prototype.tool = function (name, callId, executionId, thunk) {
    const span = start(
      'codecall.tool_call',
      {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'codecall.call_id': callId,
        'codecall.execution_id': executionId,
      },
      this.ctx,
    );
    const entry = { span, name, started: now() };
    this.tools.set(callId, entry);
    const run = this;
    const seen = (threw, v, resultStyle) => {
      if (run.tools.get(callId) !== entry) return;
      run.tools.delete(callId);
      let error;
      if (threw) error = isObject(v) && typeof v.code === 'string' ? codeOf(v.code) : 'TOOL_EXECUTION_ERROR';
      else if (isObject(v) && v.isError === true) error = 'TOOL_EXECUTION_ERROR';
      else if (resultStyle && isObject(v) && v.ok === false) error = codeOf(isObject(v.error) ? v.error.code : undefined);
      run.toolEnded(entry, error);
    };
    return within(trace.setSpan(this.ctx, span).setValue(TOOL_CALL, true), thunk, seen);
  };

  Run.prototype.toolEnded = function (entry, error, status) {
    try {
      entry.span.setAttribute('codecall.status', status || (error === undefined ? 'ok' : 'error'));
    } catch (_) {}
    end(entry.span, error);
    const m = this.m;
    if (m !== null) {
      const attributes = { 'gen_ai.tool.name': entry.name, 'codecall.status': error === undefined ? 'ok' : 'error' };
      if (error !== undefined) attributes['error.type'] = error;
      try {
        m.toolCalls.add(1, attributes);
      } catch (_) {}
    }
  };

  // A person is asked (§9): the span lasts until the `approval` event says what they answered.
  Run.prototype.approve = function (request, thunk) {
    const callId = isObject(request) ? String(request.callId) : '';
    const attributes = { 'codecall.call_id': callId };
    if (isObject(request)) {
      if (typeof request.executionId === 'string') attributes['codecall.execution_id'] = request.executionId;
      if (typeof request.toolName === 'string') attributes['gen_ai.tool.name'] = request.toolName;
      if (typeof request.reason === 'string') attributes['codecall.approval.reason'] = request.reason;
    }
    const span = start('codecall.approval', attributes, this.ctx);
    this.approvals.set(callId, span);
    return within(trace.setSpan(this.ctx, span), thunk);
  };

  Run.prototype.approved = function (callId, decision, waitedMs) {
    const span = this.approvals.get(callId);
    if (span === undefined) return;
    this.approvals.delete(callId);
    try {
      span.setAttribute('codecall.approval.decision', String(decision));
      if (typeof waitedMs === 'number') span.setAttribute('codecall.approval.waited_ms', waitedMs);
    } catch (_) {}
    // A decline is an outcome, not a failure.
    end(span, undefined);
  };

  // An execution's event (already parsed for the host, or parsed here when it has no onEvent).
  Run.prototype.event = function (e) {
    if (isObject(e) && e.type === 'approval') this.approved(String(e.callId), e.decision, e.waitedMs);
  };

  Run.prototype.wantsEvents = function () {
    return this.approvals.size > 0;
  };

  // Ends the run's span (and any tool call or approval still open, with the run's error).
  Run.prototype.close = function (status, error, attributes) {
    if (this.ended) return;
    this.ended = true;
    // A call still in flight: the run ended under it (a timeout), or the script returned without
    // awaiting it ('abandoned': the host may still finish it, nobody reads the answer).
    for (const entry of this.tools.values()) this.toolEnded(entry, error, error === undefined ? 'abandoned' : 'error');
    this.tools.clear();
    for (const span of this.approvals.values()) end(span, error);
    this.approvals.clear();
    if (this.recording) {
      try {
        this.span.setAttribute('codecall.status', status);
        if (attributes !== undefined) this.span.setAttributes(attributes);
      } catch (_) {}
    }
    end(this.span, error);
  };

  // Runs one of the execution's host callbacks with the run's span current.
  Run.prototype.within = function (fn, a, b, c) {
    return within(this.ctx, fn, a, b, c);
  };

  Run.prototype.complete = function (result) {
    completed(this, result);
  };

  Run.prototype.invoked = function (result) {
    invoked(this, result);
  };

  // invoke: the tool and the invoke's id, known once the engine accepted the call.
  Run.prototype.named = function (name, executionId) {
    if (!this.recording) return;
    try {
      this.span.setAttributes({ 'gen_ai.tool.name': name, 'codecall.execution_id': executionId });
    } catch (_) {}
  };

  Run.prototype.toolName = function (name) {
    return typeof name === 'string' && this.known !== undefined && this.known(name) === true ? name : '_OTHER';
  };

  // ----- the calls Rust makes

  function begin(kind, isolation) {
    try {
      currentTracer();
    } catch (_) {
      return undefined;
    }
    const m = meters();
    let parent = context.active();
    const attributes = {};
    if (isolation) attributes['codecall.isolation'] = isolation;
    // §12: a run that may outlive its process says where its span is (the journal keeps it), and a
    // resumed run's span links the first one's. Only the outermost call of the run sees them.
    const sink = parent.getValue(RUN_SINK);
    const first = parent.getValue(RUN_LINK);
    let links;
    if (sink !== undefined || first !== undefined) {
      parent = parent.deleteValue(RUN_SINK).deleteValue(RUN_LINK);
      if (isObject(first) && typeof first.traceId === 'string' && typeof first.spanId === 'string') {
        links = [{ context: { traceId: first.traceId, spanId: first.spanId, traceFlags: first.traceFlags | 0, isRemote: true } }];
        attributes['codecall.resumed'] = true;
      }
    }
    const span = start('codecall.' + kind, attributes, parent, links);
    if (typeof sink === 'function') {
      try {
        const sc = span.spanContext();
        sink({ traceId: sc.traceId, spanId: sc.spanId, traceFlags: sc.traceFlags });
      } catch (_) {}
    }
    const recording = span.isRecording();
    if (!recording && m === null) return undefined;
    return new Run(kind, span, trace.setSpan(parent, span), recording, m);
  }

  // execute: what only the input says — the script's SHA-256 (the gateway audit's codeSha256),
  // its length and language.
  function code(run, input, known) {
    run.known = known;
    if (!run.recording || !isObject(input) || typeof input.script !== 'string') return;
    try {
      run.span.setAttributes({
        'codecall.code.sha256': sha256(input.script),
        'codecall.code.length': input.script.length,
        'codecall.language': input.language === 'typescript' ? 'typescript' : 'javascript',
      });
    } catch (_) {}
  }

  // execute's result (the object the caller's promise resolves to).
  function completed(run, result) {
    if (run === undefined || run.ended) return;
    const status = isObject(result) && typeof result.status === 'string' ? result.status : 'runtime_error';
    const stats = isObject(result) && isObject(result.stats) ? result.stats : {};
    const error = status === 'ok' ? undefined : codeOf(isObject(result.error) ? result.error.code : undefined);
    const attributes = {};
    if (typeof stats.executionId === 'string') attributes['codecall.execution_id'] = stats.executionId;
    if (typeof stats.toolCalls === 'number') attributes['codecall.tool_calls'] = stats.toolCalls;
    if (typeof stats.durationMs === 'number') attributes['codecall.duration_ms'] = stats.durationMs;
    run.close(status, error, attributes);
    const m = run.m;
    if (m !== null) {
      try {
        m.executions.add(1, { 'codecall.status': status });
        if (typeof stats.durationMs === 'number') m.duration.record(stats.durationMs, { 'codecall.status': status });
      } catch (_) {}
    }
  }

  // invoke's result `{ status, result? | error? }`.
  function invoked(run, result) {
    if (run === undefined || run.ended) return;
    const ok = isObject(result) && result.status === 'ok';
    run.close(ok ? 'ok' : 'error', ok ? undefined : codeOf(isObject(result) && isObject(result.error) ? result.error.code : undefined));
  }

  // search / describe: counts only, never the query or the names asked for.
  function answered(run, out, requested) {
    if (run === undefined || run.ended) return;
    const attributes = {};
    if (isObject(out) && Array.isArray(out.tools)) {
      if (run.kind === 'search') {
        attributes['codecall.search.results'] = out.tools.length;
        if (typeof out.totalIndexed === 'number') attributes['codecall.search.total_indexed'] = out.totalIndexed;
      } else {
        attributes['codecall.describe.found'] = out.tools.length;
        attributes['codecall.describe.not_found'] = Array.isArray(out.notFound) ? out.notFound.length : 0;
        if (typeof requested === 'number') attributes['codecall.describe.requested'] = requested;
      }
    }
    run.close('ok', undefined, attributes);
  }

  // The call threw or rejected for its arguments (ERR_INVALID_ARG), or failed in the engine.
  function failed(run, code) {
    if (run === undefined || run.ended) return;
    const status = code === 'ERR_INVALID_ARG' ? 'invalid_arguments' : 'error';
    run.close(status, codeOf(code));
    if (run.kind === 'execute' && run.m !== null) {
      try {
        run.m.executions.add(1, { 'codecall.status': status });
      } catch (_) {}
    }
  }

  function watchQueue(read, isolation) {
    // Readers of pools gone without dispose() (a CodeCall collected) leave here, even when no
    // MeterProvider ever observes them.
    readQueues(() => {});
    const q = { read, isolation };
    queues.add(q);
    return q;
  }

  function unwatchQueue(q) {
    queues.delete(q);
  }

  return { begin, code, completed, invoked, answered, failed, watchQueue, unwatchQueue };
});
