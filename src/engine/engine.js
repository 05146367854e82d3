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
    // The CodeCall object holds its Rust side's JavaScript (`refs`) itself, under a hidden
    // property: Rust only looks it up, so callbacks that reach the CodeCall are collected with it.
    keep(target, refs) {
      Object.defineProperty(target, Symbol('codecall'), { value: refs });
      // §12: the key that seals requestState, for the package's own JavaScript (not enumerable).
      if (typeof refs.stateKey === 'string') Object.defineProperty(target, Symbol.for('codecall.stateKey'), { value: refs.stateKey });
      // §12: the run store (options.runs.store), for the same JavaScript.
      // A getter: dispose() lets go of the store (and closes one it opened from a path).
      if (refs.runs !== undefined && refs.runs !== null) Object.defineProperty(target, Symbol.for('codecall.runs'), { get: () => refs.runs });
    },
    // §11, saved scripts. A host's ScriptStore method, whose answer may be a promise: resolves to
    // its JSON (undefined for undefined), rejects with TOOL_EXECUTION_ERROR when it throws.
    storeCall(store, method, argsJson) {
      return new Promise((resolve) => resolve(store[method](...parse(argsJson)))).then(
        (v) => (v === undefined || v === null ? undefined : JSON.stringify(v)),
        (e) => {
          throw storeError(method, e);
        },
      );
    },
    // A refused save: an Error with the validator's code and location.
    fail(code, message, locationJson) {
      const error = new Error(message);
      error.code = code;
      if (locationJson !== undefined && locationJson !== null) error.location = parse(locationJson);
      return Promise.reject(error);
    },
    // A refresh nobody waits for: its failure is the next one's to report.
    quiet(promise) {
      promise.catch(() => {});
    },
    storeFailed(message) {
      return Promise.reject(storeError(null, message));
    },
    // The same for calls from other threads (a saved script a plan calls): the answer goes to
    // `reply(token, errorMessage, json)`, once.
    // The store is held weakly (the CodeCall holds it): the threadsafe function over this caller
    // is a GC root while the engine lives, and must not keep the store — and what it reaches —
    // alive past the CodeCall.
    storeCaller(store, reply) {
      const call = this.storeCall;
      const held = new WeakRef(store);
      return (method, argsJson, token) => {
        let answered;
        try {
          const live = held.deref();
          answered = live === undefined ? Promise.reject(new Error('the CodeCall is gone')) : call(live, method, argsJson);
        } catch (e) {
          answered = Promise.reject(e);
        }
        answered.then(
          (json) => reply(token, undefined, json),
          (e) => reply(token, String((e && e.message) || e), undefined),
        );
      };
    },
    // `promise.then(v => next(kind, v, extra, host, run, kit))`: Rust goes on once the store answered.
    // The meta-tool's search while tools' vectors are still being computed: waits for them (`ready`)
    // up to `ms`, then answers as `codecall.search(input)` does (its throw is the rejection).
    searchAfter(ready, ms, codecall, input) {
      let timer;
      // The timer keeps Node running while the search waits (at most `ms`): an awaited answer.
      const bound = new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
      });
      return Promise.race([ready, bound]).then(() => {
        clearTimeout(timer);
        return codecall.search(input);
      });
    },
    chain(promise, next, kind, extra, host, run) {
      const kit = this;
      return promise.then((v) => next(kind, v, extra, host, run, kit));
    },
    // CodeCall.scripts: each method is one `op` (Rust) call; all answer promises.
    scriptsApi(op, store, after) {
      const kit = this;
      const run = (method, arg) => {
        try {
          return Promise.resolve(op(method, arg === undefined ? undefined : JSON.stringify(arg), store, kit, after));
        } catch (e) {
          return Promise.reject(e);
        }
      };
      return Object.freeze({
        list: () => run('list'),
        get: (name, version) => run('get', [name, version === undefined ? null : version]),
        save: (input) => run('save', input === undefined ? null : input),
        remove: (name) => run('remove', [name]),
      });
    },
    // The `saved` field of a result run by name (the gateway's audit line names it).
    withSaved(promise, savedJson) {
      const saved = parse(savedJson);
      return promise.then((r) => {
        if (r !== null && typeof r === 'object') r.saved = saved;
        return r;
      });
    },
    // invoke of `saved:<name>`: its ExecuteResult as invoke's result.
    invokeResult(promise, name, inputJson) {
      return promise.then((r) => {
        if (r.status === 'ok') return { status: 'ok', result: r.result, saved: r.saved };
        const e = r.error || {};
        const details = { code: e.code, message: e.message };
        if (e.location) details.location = e.location;
        if (e.details !== undefined) details.details = e.details;
        if (r.stats) details.executionId = r.stats.executionId;
        return {
          status: 'error',
          error: { code: 'TOOL_EXECUTION_ERROR', message: `Saved script '${name}' failed (${e.code}): ${e.message}`, toolName: name, toolInput: parse(inputJson), details },
          saved: r.saved,
        };
      });
    },
    resolve(value) {
      return Promise.resolve(value);
    },
    // codecall:invoke's one call into the host's pipeline. Rust (engine/invoke.rs) decides
    // everything: the start event, then `finish(errorJson, valueJson, counted)` returns
    // `{ result, end }` as JSON; `end` is the tool_call_end event. The promise never rejects.
    // `run` (telemetry) is undefined unless this call records: then the approval and the tool
    // call get their spans, and the host's callbacks run under them. `signal` (the host's
    // AbortSignal, or null): aborted, the call resolves EXECUTION_ABORTED at once, whether it is
    // waiting for a person or for the tool (whose later answer is dropped, with its end event);
    // aborted before, nothing is asked or called.
    invoke(host, name, inputJson, meta, startJson, finish, askJson, run, signal) {
      const aborted = () => ({
        status: 'error',
        error: { code: 'EXECUTION_ABORTED', message: 'Execution was aborted by its AbortSignal', toolName: name, toolInput: parse(inputJson) },
      });
      if (signal !== null && signal !== undefined && signal.aborted) {
        const result = aborted();
        if (run !== undefined) run.invoked(result);
        return Promise.resolve(result);
      }
      // Settles with the call's result, or with EXECUTION_ABORTED when the signal fires first.
      let over = false;
      const raced = (promise) => {
        if (signal === null || signal === undefined) return promise;
        return new Promise((resolve) => {
          const onAbort = () => {
            over = true;
            resolve(aborted());
          };
          signal.addEventListener('abort', onAbort, { once: true });
          promise.then((result) => {
            signal.removeEventListener('abort', onAbort);
            resolve(result);
          });
        });
      };
      const emit = (event) => {
        if (over) return;
        if (typeof host.onEvent !== 'function') return;
        try {
          host.onEvent(event);
        } catch (_) {
          // A throwing onEvent never breaks the call.
        }
      };
      if (run !== undefined) {
        run.named(name, meta.executionId);
        return run.within(() => raced(calls())).then((result) => {
          run.invoked(result);
          return result;
        });
      }
      return raced(calls());

      function calls() {
      // §9: a call that needs a person's yes is asked about first; a call not approved has no
      // start or end event and ends ACCESS_DENIED with a message that says which no.
      if (askJson !== null && askJson !== undefined) {
        const ask = parse(askJson);
        const asked = run === undefined ? approve(host, name, ask, signal) : run.approve(ask.request, () => approve(host, name, ask, signal));
        return asked.then(({ decision, waitedMs, message }) => {
          if (decision === 'aborted') return aborted();
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
      if (over) return aborted();
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
        if (run === undefined || host.replaying === true) settle(host.callTool, host, args, done);
        else run.tool(name, meta.callId, meta.executionId, (seen) => settle(host.callTool, host, args, done, seen));
      });
      }
    },
  };

  function storeError(method, e) {
    const why = e !== null && typeof e === 'object' && 'message' in e ? String(e.message) : String(e);
    const error = new Error(`The saved-scripts store failed${method ? ` (${method})` : ''}: ${why}`);
    error.code = 'TOOL_EXECUTION_ERROR';
    return error;
  }

  // Asks `host.approve(request)` once, bounded by `ask.timeoutMs`: resolves `{ decision,
  // waitedMs, message }`, never rejects (a throw or another answer is a decline that says so).
  // An abort of `signal` ends the wait at once (decision 'aborted'; its timer goes).
  function approve(host, name, ask, signal) {
    const asked = performance.now();
    const no = (why) => `Tool '${name}' was not approved: ${why}`;
    return new Promise((resolve) => {
      let settled = false;
      let timer;
      const onAbort = () => done('aborted', undefined);
      const done = (decision, message) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (signal !== null && signal !== undefined) signal.removeEventListener('abort', onAbort);
        resolve({ decision, waitedMs: performance.now() - asked, message });
      };
      if (typeof host.approve !== 'function') {
        done('unavailable', no('the client cannot ask for approval'));
        return;
      }
      timer = setTimeout(() => done('timeout', no('approval timed out')), ask.timeoutMs);
      if (signal !== null && signal !== undefined) signal.addEventListener('abort', onAbort, { once: true });
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
