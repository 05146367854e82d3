// The host side of the bridge, on Node's main thread. Compiled once per Sandbox.
//
// Rust hands it messages as strings, in batches: one threadsafe function per sandbox calls
// `route(keys, kinds, payloads, tokens)` with everything queued since Node's thread last woke, in
// the order it was sent, and each message goes to its execution's dispatcher (`register`). It runs
// the host's own functions: whatever they return — a value, a promise, a throw, a rejection —
// comes back to Rust as JSON through `reply(token, errorJson, valueJson, counted)`. It never
// blocks on the host's promises.
//
// `limit` is the largest answer, in bytes of JSON, an execution of this sandbox takes (binding.rs,
// `answer_limit`). An answer over it is refused before it is serialized (see `counted`).
(function (reply, limit) {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const apply = Reflect.apply;
  // Lone surrogates in a host's message or code are data: U+FFFD, not a reason to lose both.
  const toWellFormed = String.prototype.toWellFormed;
  const wellFormed = (s) => apply(toWellFormed, s, []);
  const isArray = Array.isArray;
  const keysOf = Object.keys;
  const objectTag = Object.prototype.toString;
  const stringValueOf = String.prototype.valueOf;
  const TypedArray = Object.getPrototypeOf(Uint8Array.prototype);
  const typedArrayTag = Object.getOwnPropertyDescriptor(TypedArray, Symbol.toStringTag).get;
  const typedArrayLength = Object.getOwnPropertyDescriptor(TypedArray, 'length').get;
  const bufferToJSON = typeof Buffer === 'function' ? Buffer.prototype.toJSON : undefined;
  const byteLength = typeof Buffer === 'function' ? Buffer.byteLength : undefined;
  const isRawJSON = typeof JSON.isRawJSON === 'function' ? JSON.isRawJSON : undefined;

  // What of a host error crosses (binding.rs cuts a message to 16 KiB and a code to 256 bytes,
  // and drops details over 1 MiB): a huge message is cut here first, never serialized whole.
  const MAX_TEXT = 16 << 10;
  const MAX_DETAILS = Math.min(limit, 1 << 20);
  // An approval is one of three short strings: anything longer is a decline, not worth serializing.
  const MAX_APPROVAL = 1 << 10;

  function describe(e) {
    const out = { message: 'Host error', code: undefined, details: undefined };
    try {
      if (e !== null && typeof e === 'object') {
        clip(out, 'message', String(e.message));
        if (typeof e.code === 'string') clip(out, 'code', e.code);
        const details = e.details;
        if (details !== undefined && counted(details, MAX_DETAILS) < 0) out.details = stringify(details);
      } else {
        clip(out, 'message', String(e));
      }
    } catch (_) {}
    return stringify(out);
  }

  // `out[name]` = `text`, cut to what the bridge keeps; if it was cut, `out[name + 'Bytes']` says
  // how long it was in UTF-8 (`name + 'AtLeast'`: at least, for a text too long to measure at once).
  function clip(out, name, text) {
    if (text.length <= MAX_TEXT) {
      out[name] = wellFormed(text);
      return;
    }
    out[name] = wellFormed(text.slice(0, MAX_TEXT));
    if (byteLength !== undefined && text.length <= 1 << 25) {
      out[name + 'Bytes'] = byteLength(text, 'utf8');
    } else {
      // UTF-8 takes at least one byte per UTF-16 unit.
      out[name + 'Bytes'] = text.length;
      out[name + 'AtLeast'] = true;
    }
  }

  // JSON.stringify of a huge answer (a 270 MB string, an array of 10^8 elements) holds Node's
  // thread for seconds — every execution's host calls wait — only for the bridge to refuse it.
  // `counted` refuses it first: it counts at least what JSON.stringify would write for `value` and
  // stops as soon as that passes `max`, returning the count (a lower bound of the JSON's length,
  // and of its UTF-8 bytes). A string counts by its length, an array by its length before any of
  // its elements is read, a typed array (or Buffer) by its length before it is turned into an
  // object of index keys. It reads the value as JSON.stringify does — toJSON, getters and proxy
  // traps run (so they run twice for an answer that fits); Maps and Sets are `{}`. It returns -1 when
  // the answer may fit and when it cannot tell (a cycle, a BigInt, a nesting deeper than
  // JSON.stringify goes): JSON.stringify then serializes it or throws its own error, and the
  // bridge still checks the real size.
  function counted(value, max) {
    // The containers being read, innermost last: the container, its keys (undefined: an array),
    // the next index, the end.
    const nodes = [];
    const names = [];
    const next = [];
    const ends = [];
    let depth = 0;
    let size = 0;
    let v = value;
    let key = '';
    let member = false; // v is an object's property (left out if it serializes to nothing)
    for (;;) {
      // What JSON.stringify writes for v: its toJSON's answer, a boxed primitive unboxed.
      if ((typeof v === 'object' && v !== null) || typeof v === 'bigint') {
        const toJSON = v.toJSON;
        if (typeof toJSON === 'function') {
          if (toJSON === bufferToJSON && apply(typedArrayTag, v, []) !== undefined) {
            // Buffer's toJSON copies every byte into an array: {"type":"Buffer","data":[…]}.
            const over = size + 26 + 2 * apply(typedArrayLength, v, []);
            if (over > max) return over;
          }
          v = apply(toJSON, v, [typeof key === 'number' ? String(key) : key]);
        }
      }
      let add;
      if (typeof v === 'string') add = v.length + 2;
      else if (typeof v === 'number') add = numberSize(v);
      else if (typeof v === 'boolean') add = 4;
      else if (v === null) add = 4;
      else if (typeof v === 'bigint') return -1; // JSON.stringify throws
      // undefined, a function, a symbol: left out of an object, null in an array, nothing at all.
      else if (typeof v !== 'object') add = member ? -1 : depth > 0 ? 4 : 0;
      else if (isArray(v)) {
        // "[", then each element: at least one character, and "," or "]".
        const n = v.length;
        add = 1 + 2 * n;
        if (size + add <= max) {
          if (!open(v)) return -1;
          enter(v, undefined, n);
        }
      } else if (apply(typedArrayTag, v, []) !== undefined) {
        // {"0":…,"1":…}: each element its index, two quotes, a colon, a digit at least, "," or "}".
        const n = apply(typedArrayLength, v, []);
        add = 1 + indexDigits(n) + 5 * n;
        for (let i = 0; i < n && size + add <= max; i++) add += numberSize(v[i]) - 1;
      } else if (isRawJSON !== undefined && isRawJSON(v)) {
        add = v.rawJSON.length;
      } else {
        add = boxed(v);
        if (add < 0) {
          // "{", then each property that serializes: "key":value and "," or "}".
          if (add === -2 || !open(v)) return -1;
          const k = keysOf(v);
          add = 1;
          enter(v, k, k.length);
        }
      }
      if (member) add = add < 0 ? 0 : add + key.length + 4;
      size += add;
      if (size > max) return size;

      // The next value to count: the next element or property of the innermost open container.
      for (;;) {
        if (depth === 0) return -1;
        const d = depth - 1;
        const i = next[d];
        if (i < ends[d]) {
          next[d] = i + 1;
          const k = names[d];
          if (k === undefined) {
            key = i;
            v = nodes[d][i];
            member = false;
            size -= 1; // counted with the array
          } else {
            key = k[i];
            v = nodes[d][key];
            member = true;
          }
          break;
        }
        nodes[d] = undefined;
        names[d] = undefined;
        depth--;
      }
    }

    function enter(o, k, n) {
      nodes[depth] = o;
      names[depth] = k;
      next[depth] = 0;
      ends[depth] = n;
      depth++;
    }

    // Whether `o` may be entered: not deeper than JSON.stringify goes (it throws a RangeError),
    // and not one of the outermost open containers (a cycle: JSON.stringify throws). A cycle
    // through a deeper one is followed until MAX_DEPTH, or until the count passes `max`.
    function open(o) {
      if (depth >= MAX_DEPTH) return false;
      for (let i = 0; i < depth && i < SHALLOW; i++) if (nodes[i] === o) return false;
      return true;
    }
  }

  // JSON.stringify unwraps String, Number, Boolean and BigInt objects: their size, else -1 (any
  // other object), or -2 (a BigInt: JSON.stringify throws).
  function boxed(v) {
    const tag = apply(objectTag, v, []);
    if (tag === '[object String]') {
      try {
        apply(stringValueOf, v, []);
      } catch (_) {
        return -1; // a look-alike
      }
      return String(v).length + 2;
    }
    if (tag === '[object Number]' || tag === '[object Boolean]') return 1;
    if (tag === '[object BigInt]') return -2;
    return -1;
  }

  // Nesting deeper than JSON.stringify goes (about 4000 levels on Node's main thread) is left to
  // it; a container is checked against the SHALLOW outermost open ones for a cycle.
  const MAX_DEPTH = 10000;
  const SHALLOW = 8;

  // At least how many characters JSON.stringify writes for the number `n`.
  function numberSize(n) {
    if (n !== n || n === Infinity || n === -Infinity) return 4; // null
    let sign = 0;
    if (n < 0) {
      n = -n;
      sign = 1;
    }
    if (n < 10) return sign + 1;
    if (n < 100) return sign + 2;
    if (n < 1e3) return sign + 3;
    if (n < 1e4) return sign + 4;
    if (n < 1e5) return sign + 5;
    return n < 1e21 ? sign + 6 : sign + 5; // 100000, 1e+21
  }

  // The digits of 0, 1, …, n − 1 together.
  function indexDigits(n) {
    let total = 0;
    for (let digits = 1, from = 0, to = 10; from < n; digits++, from = to, to *= 10) {
      total += digits * (Math.min(n, to) - from);
    }
    return total;
  }

  // Runs a host function and reports exactly once, through `done(errorJson, valueJson, counted)`,
  // whatever it does: return a value or a promise, throw, reject. (The engine's invoke uses it
  // too.) An answer of more than `max` bytes of JSON (this sandbox's limit if undefined) is not
  // serialized: `done(undefined, undefined, counted)` says at least how many it counted.
  // `seen(threw, valueOrError)`, if given, sees the outcome first, unserialized (telemetry).
  function settle(fn, self, args, done, seen, max = limit) {
    let settled = false;
    const ok = (value) => {
      if (settled) return;
      settled = true;
      if (seen !== undefined) peek(seen, false, value);
      let json;
      try {
        const over = counted(value, max);
        if (over >= 0) {
          done(undefined, undefined, over);
          return;
        }
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

  function invoke(fn, self, args, token, seen, max) {
    settle(fn, self, args, (errorJson, valueJson, over) => reply(token, errorJson, valueJson, over), seen, max);
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
          const meta = { callId: m.callId, executionId: m.executionId };
          // A saved script's call (§11): the execution that called the script.
          if (m.parentExecutionId !== undefined) meta.parentExecutionId = m.parentExecutionId;
          const args = [m.name, m.input, meta];
          // A call answered from a run's journal (§12, `host.replaying`) reaches no tool: no span.
          if (run === undefined || host.replaying === true) invoke(host.callTool, host, args, token);
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
          if (m.parentExecutionId !== undefined) self.parentExecutionId = m.parentExecutionId;
          const style = run === undefined || host.replaying === true ? undefined : toolFunction(host, m.name);
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
            ? () => invoke(host.approve, host, [request], token, undefined, MAX_APPROVAL)
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
