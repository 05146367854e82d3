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
    // everything: the start event, then `finish(errorJson, valueJson, counted)` returns
    // `{ result, end }` as JSON; `end` is the tool_call_end event. The promise never rejects.
    // `run` (telemetry) is undefined unless this call records: then the approval and the tool
    // call get their spans, and the host's callbacks run under them.
    invoke(host, name, inputJson, meta, startJson, finish, askJson, run) {
      const emit = (event) => {
        if (typeof host.onEvent !== 'function') return;
        try {
          host.onEvent(event);
        } catch (_) {
          // A throwing onEvent never breaks the call.
        }
      };
      if (run !== undefined) {
        run.named(name, meta.executionId);
        return run.within(calls).then((result) => {
          run.invoked(result);
          return result;
        });
      }
      return calls();

      function calls() {
      // §9: a call that needs a person's yes is asked about first; a call not approved has no
      // start or end event and ends ACCESS_DENIED with a message that says which no.
      if (askJson !== null && askJson !== undefined) {
        const ask = parse(askJson);
        const asked = run === undefined ? approve(host, name, ask) : run.approve(ask.request, () => approve(host, name, ask));
        return asked.then(({ decision, waitedMs, message }) => {
          if (run !== undefined) run.approved(String(meta.callId), decision, waitedMs);
          emit({ type: 'approval', executionId: meta.executionId, callId: meta.callId, toolName: name, decision, waitedMs });
          const go = decision === 'approve' || decision === 'approve_always' || (decision === 'unavailable' && ask.allowWhenUnavailable);
          if (go) return call();
          return { status: 'error', error: { code: 'ACCESS_DENIED', message, toolName: name, toolInput: parse(inputJson) } };
        });
      }
      return call();
      }

      function call() {
      const started = performance.now();
      emit(parse(startJson));
      return new Promise((resolve) => {
        const args = [name, parse(inputJson), meta];
        // `counted`: settle refused an answer over the sandbox's limit before serializing it.
        const done = (errorJson, valueJson, counted) => {
          let out;
          try {
            out = parse(finish(errorJson, valueJson, counted));
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
        };
        if (run === undefined) settle(host.callTool, host, args, done);
        else run.tool(name, meta.callId, meta.executionId, (seen) => settle(host.callTool, host, args, done, seen));
      });
      }
    },
  };

  // Asks `host.approve(request)` once, bounded by `ask.timeoutMs`: resolves `{ decision,
  // waitedMs, message }`, never rejects (a throw or another answer is a decline that says so).
  function approve(host, name, ask) {
    const asked = performance.now();
    const no = (why) => `Tool '${name}' was not approved: ${why}`;
    return new Promise((resolve) => {
      let settled = false;
      let timer;
      const done = (decision, message) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ decision, waitedMs: performance.now() - asked, message });
      };
      if (typeof host.approve !== 'function') {
        done('unavailable', no('the client cannot ask for approval'));
        return;
      }
      timer = setTimeout(() => done('timeout', no('approval timed out')), ask.timeoutMs);
      // An approval is one of three short strings: a longer answer is a decline, not serialized.
      settle(host.approve, host, [ask.request], (errorJson, valueJson, counted) => {
        if (counted !== undefined) {
          done('decline', no(`declined by the user (approve() answered ${counted} bytes of JSON or more, not 'approve', 'approve_always' or 'decline')`));
          return;
        }
        if (errorJson !== undefined) {
          let thrown = '';
          try {
            thrown = String(parse(errorJson).message).slice(0, 200);
          } catch (_) {}
          done('decline', no(`declined by the user (approve() threw: ${thrown})`));
          return;
        }
        const answer = valueJson === undefined ? undefined : parse(valueJson);
        if (answer === 'approve' || answer === 'approve_always') done(answer);
        else if (answer === 'decline') done('decline', no('declined by the user'));
        else done('decline', no(`declined by the user (approve() answered ${String(valueJson).slice(0, 100)}, not 'approve', 'approve_always' or 'decline')`));
      }, undefined, 1024);
    });
  }
});
