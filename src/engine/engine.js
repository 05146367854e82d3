// The engine's helpers on Node's main thread, compiled once per CodeCall. Rust hands them JSON
// strings and the host's own functions; they never block on the host's promises. `settle` is the
// sandbox's (host.js): it runs a host function and reports its outcome once, as JSON.
(function (settle) {
  'use strict';
  const parse = JSON.parse;
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
        settle(host.callTool, host, [name, parse(inputJson), meta], (errorJson, valueJson) => {
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
        });
      });
    },
  };
});
