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
    // codecall:invoke's one call into the host's pipeline. Rust (engine/invoke.rs) decides
    // everything: the start event, then `finish(errorJson, valueJson)` returns
    // `{ result, end }` as JSON; `end` is the tool_call_end event. The promise never rejects.
    invoke(host, name, inputJson, meta, startJson, finish) {
      const emit = (event) => {
        if (typeof host.onEvent !== 'function') return;
        try {
          host.onEvent(event);
        } catch (_) {
          // A throwing onEvent never breaks the call.
        }
      };
      const started = performance.now();
      emit(parse(startJson));
      return new Promise((resolve) => {
        settle(host.callTool, host, [name, parse(inputJson), meta], (errorJson, valueJson) => {
          let out;
          try {
            out = parse(finish(errorJson, valueJson));
          } catch (e) {
            // Only if Rust could not be reached: still one end event and one error result.
            const error = { code: 'TOOL_EXECUTION_ERROR', message: String(e && e.message) };
            const ids = { executionId: meta.executionId, callId: meta.callId, toolName: name };
            out = {
              result: { status: 'error', error: { ...error, toolName: name, toolInput: parse(inputJson) } },
              end: { type: 'tool_call_end', ...ids, input: parse(inputJson), status: 'error', durationMs: performance.now() - started, error },
            };
          }
          emit(out.end);
          resolve(out.result);
        });
      });
    },
  };
});
