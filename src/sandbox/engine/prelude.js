// The sandbox's own JavaScript: the AgentScript globals of api.md §2.3, built on a few native
// primitives, and the hardening that runs before any user code.
//
// Compiled once per worker thread (into bytecode) and run in every fresh context before any user
// code: the policy-wide part at once (a worker prepares its next context while idle), the
// per-execution part (`configure`: context, input, host functions) when the execution starts. It
// receives the native primitives as arguments, so user code can never reach them: they live only
// in this closure. Every built-in it relies on is captured here, before user code runs, so a script that
// overwrites `JSON`, `Promise.prototype.then` or `Array.prototype.push` cannot change what the
// sandbox does.
(function (native, policy) {
  'use strict';

  // ---- built-ins captured before user code ----------------------------------------------------
  const global = globalThis;
  const ObjectCtor = Object;
  const { freeze, defineProperty, getOwnPropertyNames, getPrototypeOf, isFrozen } = Object;
  const isArray = Array.isArray;
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const promiseResolve = Promise.resolve.bind(Promise);
  const promiseReject = Promise.reject.bind(Promise);
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const WeakSetCtor = WeakSet;
  const weakSetAdd = WeakSet.prototype.add;
  const weakSetHas = WeakSet.prototype.has;
  const arraySort = Array.prototype.sort;
  const arrayJoin = Array.prototype.join;
  const arrayMap = Array.prototype.map;
  const arrayPush = Array.prototype.push;
  const stringSplit = String.prototype.split;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const ProxyCtor = Proxy;
  const then = (p, ok, fail) => apply(promiseThen, p, [ok, fail]);

  const { hostCall, getTool: nativeGetTool, emit, log } = native;

  // ---- ToolError ------------------------------------------------------------------------------
  const genuine = new WeakSetCtor();
  class ToolError extends ErrorCtor {
    constructor(code, message, toolName, toolInput, details) {
      super(message);
      defineProperty(this, 'name', { value: 'ToolError', writable: true, configurable: true });
      this.code = code;
      this.toolName = toolName;
      this.toolInput = toolInput;
      if (details !== undefined) this.details = details;
      apply(weakSetAdd, genuine, [this]);
    }
  }

  // The native side resolves every call with a record, never rejects:
  // { ok: true, data } or { ok: false, code, message, details? }.
  function settle(record, throwOnError, name, input) {
    if (record.ok) return throwOnError ? record.data : { success: true, data: record.data };
    if (!throwOnError) {
      const error = { code: record.code, message: record.message };
      if (record.details !== undefined) error.details = record.details;
      return { success: false, error };
    }
    throw new ToolError(record.code, record.message, name, input, record.details);
  }

  function callTool(name, input, options) {
    const throwOnError = !(options !== null && typeof options === 'object' && options.throwOnError === false);
    if (typeof name !== 'string') {
      return promiseReject(new TypeErrorCtor('callTool(name, input): name must be a string'));
    }
    let inputJson;
    try {
      inputJson = input === undefined || input === null ? '{}' : jsonStringify(input);
    } catch (e) {
      return promiseReject(new TypeErrorCtor(`callTool('${name}'): input is not JSON-representable (${e && e.message})`));
    }
    if (inputJson === undefined) {
      return promiseReject(new TypeErrorCtor(`callTool('${name}'): input is not JSON-representable`));
    }
    const toolInput = jsonParse(inputJson);
    return then(hostCall(0, name, inputJson), (record) => settle(record, throwOnError, name, toolInput));
  }

  function hostFunction(name) {
    const fn = function (...args) {
      let argsJson;
      try {
        argsJson = jsonStringify(args);
      } catch (e) {
        return promiseReject(new TypeErrorCtor(`${name}(): arguments are not JSON-representable (${e && e.message})`));
      }
      return then(hostCall(1, name, argsJson), (record) => settle(record, true, name, jsonParse(argsJson)));
    };
    defineProperty(fn, 'name', { value: name });
    return freeze(fn);
  }

  function getTool(name) {
    if (typeof name !== 'string') return null;
    const json = nativeGetTool(name);
    if (json === null || json === undefined) return null;
    let info;
    try {
      info = jsonParse(json);
    } catch (_) {
      return null;
    }
    if (info === null || typeof info !== 'object') return null;
    return deepFreeze({
      name: typeof info.name === 'string' ? info.name : name,
      appId: info.appId,
      description: info.description,
      inputSchema: info.inputSchema,
      outputSchema: info.outputSchema,
    });
  }

  // ---- context, input -------------------------------------------------------------------------
  function deepFreeze(value) {
    if (value === null || typeof value !== 'object' || isFrozen(value)) return value;
    freeze(value);
    const names = getOwnPropertyNames(value);
    for (let i = 0; i < names.length; i++) deepFreeze(value[names[i]]);
    return value;
  }

  // ---- console, mcpLog, mcpNotify -------------------------------------------------------------
  function format(args) {
    const parts = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let text;
      if (typeof a === 'string') text = a;
      else if (a instanceof ErrorCtor) text = `${a.name}: ${a.message}`;
      else if (typeof a === 'function') text = `[Function ${a.name || 'anonymous'}]`;
      else if (typeof a === 'symbol' || typeof a === 'bigint' || a === undefined) text = StringCtor(a);
      else {
        try {
          text = jsonStringify(a);
        } catch (_) {
          text = '[Unserializable]';
        }
        if (text === undefined) text = StringCtor(a);
      }
      apply(arrayPush, parts, [text]);
    }
    return apply(arrayJoin, parts, [' ']);
  }

  const consoleObject = freeze({
    log: (...args) => log(0, format(args)),
    info: (...args) => log(1, format(args)),
    warn: (...args) => log(2, format(args)),
    error: (...args) => log(3, format(args)),
    debug: (...args) => log(4, format(args)),
  });

  function jsonOrUndefined(value) {
    try {
      return jsonStringify(value);
    } catch (_) {
      return undefined;
    }
  }

  // The metadata is optional: omitted, undefined or null, the event has none (the native side
  // takes three arguments then, never an `undefined` for a string).
  function mcpLog(level, message, metadata) {
    const json = metadata === undefined || metadata === null ? undefined : jsonOrUndefined(metadata);
    if (json === undefined) emit(0, StringCtor(level), StringCtor(message));
    else emit(0, StringCtor(level), StringCtor(message), json);
  }

  function mcpNotify(event, payload) {
    const json = jsonOrUndefined(payload);
    emit(1, StringCtor(event), json === undefined ? 'null' : json);
  }

  // ---- __safe_parallel ------------------------------------------------------------------------
  function safeParallel(fns, options) {
    if (!isArray(fns)) return promiseReject(new TypeErrorCtor('__safe_parallel(fns): fns must be an array of functions'));
    const n = fns.length;
    if (n > 100) return promiseReject(new ErrorCtor('Cannot execute more than 100 operations in parallel'));
    let max = options !== null && typeof options === 'object' && typeof options.maxConcurrency === 'number' ? options.maxConcurrency : 10;
    if (!(max >= 1)) max = 1;
    if (max > 20) max = 20;
    max = max | 0;
    if (n === 0) return promiseResolve([]);
    return new PromiseCtor((resolve, reject) => {
      const results = [];
      const failures = [];
      let next = 0;
      let running = 0;
      let done = 0;
      const finish = () => {
        running--;
        done++;
        if (done < n) return launch();
        if (failures.length === 0) return resolve(results);
        apply(arraySort, failures, [(a, b) => a[0] - b[0]]);
        const lines = apply(arrayMap, failures, [
          (f) => `  [${f[0]}]: ${f[1] !== null && typeof f[1] === 'object' && 'message' in f[1] ? f[1].message : StringCtor(f[1])}`,
        ]);
        reject(new ErrorCtor(`${failures.length} of ${n} parallel operations failed:\n${apply(arrayJoin, lines, ['\n'])}`));
      };
      const launch = () => {
        while (running < max && next < n) {
          const i = next++;
          running++;
          let p;
          try {
            const fn = fns[i];
            if (typeof fn !== 'function') throw new TypeErrorCtor(`__safe_parallel: element ${i} is not a function`);
            p = promiseResolve(fn());
          } catch (e) {
            p = promiseReject(e);
          }
          then(
            p,
            (v) => {
              results[i] = v;
              finish();
            },
            (e) => {
              apply(arrayPush, failures, [[i, e]]);
              finish();
            },
          );
        }
      };
      launch();
    });
  }

  // ---- install ----------------------------------------------------------------------------------
  function install(name, value) {
    defineProperty(global, name, { value, writable: false, enumerable: false, configurable: false });
  }

  install('callTool', freeze(callTool));
  install('getTool', freeze(getTool));
  install('mcpLog', freeze(mcpLog));
  install('mcpNotify', freeze(mcpNotify));
  install('__safe_parallel', freeze(safeParallel));
  if (policy.allowConsole) install('console', consoleObject);

  // ---- hardening --------------------------------------------------------------------------------
  // No code can be compiled at run time: the context has no eval intrinsic. The constructors that
  // would try are replaced, so `(() => {}).constructor('...')` fails with a clear message.
  const blocked = freeze(function Function() {
    throw new TypeErrorCtor('Code generation from strings is not allowed in AgentScript');
  });
  const prototypes = [
    getPrototypeOf(function () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
  ];
  for (let i = 0; i < prototypes.length; i++) {
    defineProperty(prototypes[i], 'constructor', { value: blocked, writable: false, enumerable: false, configurable: false });
  }
  delete global.eval;
  delete global.Function;
  for (let i = 0; i < policy.disabledGlobals.length; i++) {
    const name = policy.disabledGlobals[i];
    if (name !== 'globalThis') delete global[name];
  }
  if (policy.removeGlobalThis) delete global.globalThis;

  // ---- per execution ----------------------------------------------------------------------------
  let configured = false;
  function configure(config) {
    if (configured) return;
    configured = true;
    install('codecallContext', deepFreeze(jsonParse(config.contextJson)));
    install('input', config.inputJson === undefined ? undefined : deepFreeze(jsonParse(config.inputJson)));

    // Host functions: `lookup` becomes a global, `mcp.callTool` a frozen `mcp` namespace.
    const namespaces = [];
    for (let i = 0; i < config.functions.length; i++) {
      const fullName = config.functions[i];
      const parts = apply(stringSplit, fullName, ['.']);
      if (parts.length === 1) {
        install(fullName, hostFunction(fullName));
        continue;
      }
      let holder = null;
      let owner = global;
      for (let j = 0; j < parts.length - 1; j++) {
        const key = parts[j];
        let next = owner[key];
        if (next === undefined || next === null) {
          next = {};
          if (owner === global) install(key, next);
          else owner[key] = next;
          apply(arrayPush, namespaces, [next]);
        }
        holder = next;
        owner = next;
      }
      holder[parts[parts.length - 1]] = hostFunction(fullName);
    }
    for (let i = namespaces.length - 1; i >= 0; i--) freeze(namespaces[i]);

    // A run that may be replayed (api.md §12) sees a clock that stands still and a seeded
    // Math.random: the same values every time it runs against its journal.
    if (typeof config.clock === 'number') standingClock(config.clock);
    if (typeof config.seed === 'number') seededRandom(config.seed);
  }

  // `Date.now()`, `new Date()` and `Date()` read `clock`; every other use of Date is as before.
  function standingClock(clock) {
    const RealDate = global.Date;
    if (typeof RealDate !== 'function') return;
    const proto = RealDate.prototype;
    const dateToString = proto.toString;
    const Standing = new ProxyCtor(RealDate, {
      construct: (target, args, newTarget) => construct(target, args.length === 0 ? [clock] : args, newTarget),
      apply: () => apply(dateToString, new RealDate(clock), []),
    });
    defineProperty(RealDate, 'now', { value: freeze(function now() { return clock; }), writable: true, configurable: true });
    defineProperty(proto, 'constructor', { value: Standing, writable: true, configurable: true });
    defineProperty(global, 'Date', { value: Standing, writable: true, configurable: true });
  }

  // xoshiro128** seeded through splitmix32: 32-bit integer steps only (Math.imul), 53-bit doubles.
  function seededRandom(seed) {
    const imul = Math.imul;
    let x = (seed % 4294967296) >>> 0;
    let y = ((seed - x) / 4294967296) >>> 0;
    const mix = () => {
      x = (x + 0x9e3779b9) | 0;
      let z = x ^ y;
      z = imul(z ^ (z >>> 16), 0x85ebca6b);
      z = imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    let a = mix();
    let b = mix();
    let c = mix();
    let d = mix();
    if ((a | b | c | d) === 0) a = 1;
    const next = () => {
      const r = imul(((imul(b, 5) << 7) | (imul(b, 5) >>> 25)), 9) >>> 0;
      const t = b << 9;
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = (d << 11) | (d >>> 21);
      return r;
    };
    const random = function random() {
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    };
    defineProperty(global.Math, 'random', { value: freeze(random), writable: true, configurable: true });
  }

  // What the native side needs back.
  return { configure, isToolError: (e) => e !== null && typeof e === 'object' && apply(weakSetHas, genuine, [e]) };
});
