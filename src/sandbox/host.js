// The host side of the bridge, on Node's main thread. Compiled once per Sandbox.
//
// Rust hands it messages as strings, in batches: one threadsafe function per sandbox calls
// `route(keys, kinds, payloads, tokens)` with everything queued since Node's thread last woke, in
// the order it was sent, and each message goes to its execution's dispatcher (`register`). It runs
// the host's own functions: whatever they return — a value, a promise, a throw, a rejection —
// comes back to Rust as JSON through `reply(token, errorJson, valueJson)`. It never blocks on the
// host's promises.
(function (reply) {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const apply = Reflect.apply;
  // Lone surrogates in a host's message or code are data: U+FFFD, not a reason to lose both.
  const toWellFormed = String.prototype.toWellFormed;
  const wellFormed = (s) => apply(toWellFormed, s, []);

  function describe(e) {
    let message = 'Host error';
    let code;
    let details;
    try {
      if (e !== null && typeof e === 'object') {
        message = wellFormed(String(e.message));
        if (typeof e.code === 'string') code = wellFormed(e.code);
        if (e.details !== undefined) details = stringify(e.details);
      } else {
        message = wellFormed(String(e));
      }
    } catch (_) {}
    return stringify({ message, code, details });
  }

  // Runs a host function and reports exactly once, through `done(errorJson, valueJson)`, whatever
  // it does: return a value or a promise, throw, reject. (The engine's invoke uses it too.)
  // `seen(threw, valueOrError)`, if given, sees the outcome first, unserialized (telemetry).
  function settle(fn, self, args, done, seen) {
    let settled = false;
    const ok = (value) => {
      if (settled) return;
      settled = true;
      if (seen !== undefined) peek(seen, false, value);
      let json;
      try {
        json = stringify(value);
      } catch (e) {
        done(describe(e), undefined);
        return;
      }
      done(undefined, json);
    };
    const fail = (e) => {
      if (settled) return;
      settled = true;
      if (seen !== undefined) peek(seen, true, e);
      done(describe(e), undefined);
    };
    try {
      const result = apply(fn, self, args);
      if (result !== null && (typeof result === 'object' || typeof result === 'function') && typeof result.then === 'function') {
        result.then(ok, fail);
      } else {
        ok(result);
      }
    } catch (e) {
      fail(e);
    }
  }

  function peek(seen, threw, v) {
    try {
      seen(threw, v);
    } catch (_) {}
  }

  function invoke(fn, self, args, token, seen) {
    settle(fn, self, args, (errorJson, valueJson) => reply(token, errorJson, valueJson), seen);
  }

  // `run` (telemetry, engine/telemetry.js) is undefined unless this execution records: then the
  // host's callbacks run with its span current, and each tool call under its own span.
  function createDispatcher(host, signal, abort, run) {
    let resolve;
    const promise = new Promise((r) => {
      resolve = r;
    });
    const onAbort = () => abort();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });

    function dispatch(kind, payload, token) {
      switch (kind) {
        case 'tool': {
          const m = parse(payload);
          if (typeof host.callTool !== 'function') {
            reply(token, stringify({ message: 'The host has no callTool function' }), undefined);
            return;
          }
          const args = [m.name, m.input, { callId: m.callId, executionId: m.executionId }];
          if (run === undefined) invoke(host.callTool, host, args, token);
          else run.tool(m.name, m.callId, m.executionId, (seen) => invoke(host.callTool, host, args, token, seen));
          return;
        }
        case 'fn': {
          const m = parse(payload);
          const functions = host.functions;
          const fn = functions !== null && typeof functions === 'object' ? functions[m.name] : undefined;
          if (typeof fn !== 'function') {
            reply(token, stringify({ message: `The host has no function '${m.name}'` }), undefined);
            return;
          }
          // `this` is the call's `{ callId, executionId }`, as callTool's third argument.
          const self = { callId: m.callId, executionId: m.executionId };
          const style = run === undefined ? undefined : toolFunction(host, m.name);
          if (style === undefined) {
            invoke(fn, self, m.args, token);
            return;
          }
          // A tool function (`mcp.callTool(server, tool, input)`): a tool call of its own.
          const a = m.args;
          const name = Array.isArray(a) && typeof a[0] === 'string' && typeof a[1] === 'string' ? run.toolName(`${a[0]}:${a[1]}`) : '_OTHER';
          const asResult = style === 'result';
          run.tool(name, m.callId, m.executionId, (seen) =>
            invoke(fn, self, m.args, token, (threw, v) => seen(threw, v, asResult)),
          );
          return;
        }
        case 'getTool': {
          if (typeof host.getTool !== 'function') {
            reply(token, undefined, undefined);
            return;
          }
          invoke(host.getTool, host, [payload], token);
          return;
        }
        case 'approve': {
          // §9: no approve() at all means the host cannot ask (the policy's whenUnavailable).
          const request = parse(payload);
          const ask = typeof host.approve === 'function'
            ? () => invoke(host.approve, host, [request], token)
            : () => reply(token, undefined, '"__unavailable"');
          if (run === undefined) ask();
          else run.approve(request, ask);
          return;
        }
        case 'event': {
          const wanted = run !== undefined && run.wantsEvents();
          if (typeof host.onEvent !== 'function' && !wanted) return;
          try {
            const event = parse(payload);
            // Telemetry reads it before the host may change it.
            if (wanted) run.event(event);
            if (typeof host.onEvent === 'function') host.onEvent(event);
          } catch (_) {
            // A throwing onEvent never breaks the execution.
          }
          return;
        }
        case 'complete': {
          if (signal) signal.removeEventListener('abort', onAbort);
          const result = parse(payload);
          if (run !== undefined) run.complete(result);
          resolve(result);
          return;
        }
      }
    }
    return [promise, dispatch];
  }

  // The style of a host function listed in `host.toolFunctions`, else undefined.
  function toolFunction(host, name) {
    const listed = host.toolFunctions;
    if (listed === null || typeof listed !== 'object' || !Object.prototype.hasOwnProperty.call(listed, name)) return undefined;
    return listed[name] === 'result' ? 'result' : 'throw';
  }

  // Execution key → its dispatcher, from `register` until its result is delivered.
  const dispatchers = new Map();

  // Each execution's host callbacks (callTool, functions, approve, getTool, onEvent) run in the
  // async context its execute() was called in: an AsyncLocalStorage store — the request's user,
  // its trace — is that caller's, not whichever execution's call woke Node's thread first.
  // (`process.getBuiltinModule` is Node ≥ 20.16; older Nodes keep the old behaviour.)
  const asyncHooks = typeof process === 'object' && typeof process.getBuiltinModule === 'function'
    ? process.getBuiltinModule('node:async_hooks')
    : undefined;
  const AsyncResource = asyncHooks ? asyncHooks.AsyncResource : undefined;

  function register(key, host, signal, abort, run) {
    const pair = createDispatcher(host, signal, abort, run);
    let dispatch = pair[1];
    if (run !== undefined) {
      const traced = dispatch;
      dispatch = (kind, payload, token) => run.within(traced, kind, payload, token);
    }
    if (AsyncResource !== undefined) {
      const scope = new AsyncResource('CodeCallExecution');
      const inner = dispatch;
      dispatch = (kind, payload, token) => scope.runInAsyncScope(inner, null, kind, payload, token);
    }
    dispatchers.set(key, dispatch);
    return pair[0];
  }

  function route(keys, kinds, payloads, tokens) {
    const n = keys.length;
    for (let i = 0; i < n; i++) {
      const key = keys[i];
      const dispatch = dispatchers.get(key);
      if (dispatch === undefined) continue;
      const kind = kinds[i];
      if (kind === 'complete') dispatchers.delete(key);
      try {
        dispatch(kind, payloads[i], tokens[i]);
      } catch (_) {
        // One execution's message never stops the rest of the batch.
      }
    }
  }

  return { register, route, settle };
});
