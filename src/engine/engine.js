// The engine's helpers on Node's main thread, compiled once per CodeCall. Rust hands them JSON
// strings and the host's own functions; they never block on the host's promises.
(function () {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const apply = Reflect.apply;

  function describe(e) {
    let message = 'Host error';
    let code;
    let details;
    try {
      if (e !== null && typeof e === 'object') {
        message = String(e.message);
        if (typeof e.code === 'string') code = e.code;
        if (e.details !== undefined) details = stringify(e.details);
      } else {
        message = String(e);
      }
    } catch (_) {}
    return stringify({ message, code, details });
  }

  return {
    parse,
    // includeTools(tool): only `false` drops a tool (seed 000); a throw is the host's and propagates.
    include(fn, summaryJson) {
      return fn(parse(summaryJson)) !== false;
    },
    // directCalls.filter(tool): truthy allows; a throw denies.
    allow(fn, summaryJson) {
      try {
        return Boolean(fn(parse(summaryJson)));
      } catch (_) {
        return false;
      }
    },
    // onToolsChanged(): a throw never breaks the update.
    changed(fn) {
      try {
        fn();
      } catch (_) {}
    },
    reject(error) {
      return Promise.reject(error);
    },
    resolve(value) {
      return Promise.resolve(value);
    },
    // codecall:invoke — one call into the host's pipeline; `finish(errorJson, valueJson)` (Rust)
    // shapes the result JSON. tool_call_start / tool_call_end go to `host.onEvent` as in execute.
    // The promise never rejects.
    invoke(host, name, inputJson, meta, finish) {
      const emit = (event) => {
        if (typeof host.onEvent !== 'function') return;
        try {
          host.onEvent(event);
        } catch (_) {
          // A throwing onEvent never breaks the call.
        }
      };
      const ids = { executionId: meta.executionId, callId: meta.callId, toolName: name };
      const started = performance.now();
      emit({ type: 'tool_call_start', ...ids, input: parse(inputJson) });
      return new Promise((resolve) => {
        let settled = false;
        const done = (errorJson, valueJson) => {
          if (settled) return;
          settled = true;
          let result;
          try {
            result = parse(finish(errorJson, valueJson));
          } catch (e) {
            result = { status: 'error', error: { code: 'TOOL_EXECUTION_ERROR', message: String(e && e.message), toolName: name, toolInput: parse(inputJson) } };
          }
          const end = { type: 'tool_call_end', ...ids, input: parse(inputJson), status: result.status === 'ok' ? 'ok' : 'error', durationMs: performance.now() - started };
          if (result.status !== 'ok') end.error = { code: result.error.code, message: result.error.message };
          emit(end);
          resolve(result);
        };
        const ok = (value) => {
          let json;
          try {
            json = stringify(value);
          } catch (e) {
            done(describe(e), undefined);
            return;
          }
          done(undefined, json);
        };
        const fail = (e) => done(describe(e), undefined);
        try {
          const result = apply(host.callTool, host, [name, parse(inputJson), meta]);
          if (result !== null && (typeof result === 'object' || typeof result === 'function') && typeof result.then === 'function') {
            result.then(ok, fail);
          } else {
            ok(result);
          }
        } catch (e) {
          fail(e);
        }
      });
    },
  };
});
