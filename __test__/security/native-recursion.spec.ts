// Issue 40, item 2, "no unchecked native recursion": a script that makes QuickJS recurse in C
// through a long chain of objects (bound functions, proxies, iterator helpers, nested arrays, …)
// must end with STACK_OVERFLOW (QuickJS's stack check, under `maxStackBytes`) or with its own
// honest outcome — never a signal, which in thread isolation would end the host's process and in
// process isolation the worker with its neighbours (`WORKER_CRASHED`). Every family audited for
// vendor/rquickjs-sys/CODECALL-PATCHES.md ("Native recursion (issue 40)") runs here, fixed or
// already safe, in both isolations, beside two neighbours parked on a host tool of the same
// sandbox, which must still finish `ok`.
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteResult } from '../../index.js'
import { withNeighbours } from './neighbours.js'

const N = 300_000
/** A chain of N bound functions over `base`; `delete f.name` keeps the names from growing ("bound bound …"). */
const bound = (base = 'function () {}') => `let f = ${base}; for (let i = 0; i < ${N}; i++) { f = f.bind(null); delete f.name }\n`
/**
 * 5e5 bound functions, each with a null prototype: no Symbol.hasInstance anywhere, so `instanceof`
 * recursed JS_IsInstanceOf ↔ JS_OrdinaryIsInstanceOf with no JS call (no check) in between
 * (SIGSEGV at 5e5 before the fix; 3e5 still fitted in 16 MiB).
 */
const boundNullProto = `let f = function () {}; const bind = f.bind; Object.setPrototypeOf(f, null)\nfor (let i = 0; i < 5e5; i++) { f = bind.call(f, null); delete f.name; Object.setPrototypeOf(f, null) }\n`
/** A chain of N proxies (handler `handler`) over `base`. */
const proxy = (base = 'function () {}', handler = '{}') => `const h = ${handler}; let p = ${base}; for (let i = 0; i < ${N}; i++) p = new Proxy(p, h)\n`
/** An iterator helper over an iterator helper over … (N deep). */
const helpers = (step = 'it.map((x) => x)') => `let it = [1, 2].values(); for (let i = 0; i < ${N}; i++) it = ${step}\n`
/** Arrays nested n deep. */
const nested = (n = 900_000) => `let a = []; for (let i = 0; i < ${n}; i++) a = [a]\n`

/**
 * What a case must end with: a code of a runtime error, or `ok` (the engine walks the chain in a
 * loop, or the C recursion is a tail call the compiler turned into a jump), or either one where
 * that depends on how QuickJS was compiled (a tail call at -O2, a checked recursion otherwise).
 */
type Expected = 'STACK_OVERFLOW' | 'ok' | 'ok or STACK_OVERFLOW' | 'EXECUTION_ERROR' | 'SERIALIZATION_ERROR'

const families: [string, [string, string, Expected][]][] = [
  [
    // Fixed: JS_IteratorNext2 called a builtin `next` directly, without js_call_c_function's stack
    // check (SIGSEGV at 1e5 helpers before).
    'iterator helpers (fixed)',
    [
      ['map, next()', helpers() + 'return it.next().value', 'STACK_OVERFLOW'],
      ['filter, next()', helpers('it.filter(() => true)') + 'return it.next().value', 'STACK_OVERFLOW'],
      ['take, next()', helpers('it.take(5)') + 'return it.next().value', 'STACK_OVERFLOW'],
      ['drop, next()', helpers('it.drop(0)') + 'return it.next().value', 'STACK_OVERFLOW'],
      ['flatMap, next()', helpers('it.flatMap((x) => [x])') + 'return it.next().value', 'STACK_OVERFLOW'],
      ['toArray', helpers() + 'return it.toArray()', 'STACK_OVERFLOW'],
      ['for…of', helpers() + 'for (const x of it) {}\nreturn 1', 'STACK_OVERFLOW'],
      ['spread', helpers() + 'return [...it]', 'STACK_OVERFLOW'],
      ['Iterator.concat between helpers', helpers('i & 1 ? Iterator.concat(it) : it.map((x) => x)') + 'return it.next().value', 'STACK_OVERFLOW'],
      ['Iterator.zip chain', `let it = [1, 2].values(); for (let i = 0; i < 1e5; i++) it = Iterator.zip([it])\nreturn it.next()`, 'STACK_OVERFLOW'],
      ['return()', helpers() + 'it.return()\nreturn 1', 'STACK_OVERFLOW'],
      ['freeing the chain', helpers() + 'it = null\nreturn 1', 'ok'],
    ],
  ],
  [
    'bound functions',
    [
      // Fixed: JS_OrdinaryIsInstanceOf ↔ JS_IsInstanceOf without a JS call in between.
      ['instanceof, null prototypes (fixed)', boundNullProto + '({}) instanceof f\nreturn 1', 'STACK_OVERFLOW'],
      // Fixed: JS_GetFunctionRealm is a loop now (a tail call at -O2 before, unchecked).
      ['as newTarget of Reflect.construct (fixed)', bound() + 'Reflect.construct(function () {}, [], f)\nreturn 1', 'ok'],
      ['as newTarget of Array, Error, Map (fixed)', bound() + 'Reflect.construct(Array, [], f); Reflect.construct(Error, [], f); Reflect.construct(Map, [], f)\nreturn 1', 'ok'],
      ['as species constructor (fixed)', bound('Array') + 'const a = [1]; a.constructor = f; a.map((x) => x)\nreturn 1', 'ok'],
      ['call', bound() + 'f()\nreturn 1', 'STACK_OVERFLOW'],
      ['new', bound() + 'new f()\nreturn 1', 'STACK_OVERFLOW'],
      ['instanceof', bound() + '({}) instanceof f\nreturn 1', 'STACK_OVERFLOW'],
      ['class extends, super()', bound() + 'f.prototype = {}\nclass C extends f {}\nnew C()\nreturn 1', 'STACK_OVERFLOW'],
      ['name, length, toString', bound() + 'return [f.name, f.length, String(f).length > 0]', 'ok'],
      ['freeing the chain', bound() + 'f = null\nreturn 1', 'ok'],
    ],
  ],
  [
    'proxies without traps (get_proxy_method checks the stack)',
    [
      ['get', proxy('{}') + 'return p.x', 'STACK_OVERFLOW'],
      ['set', proxy('{}') + 'p.x = 1\nreturn 1', 'STACK_OVERFLOW'],
      ['has', proxy('{}') + "return 'x' in p", 'STACK_OVERFLOW'],
      ['deleteProperty', proxy('{}') + 'delete p.x\nreturn 1', 'STACK_OVERFLOW'],
      ['ownKeys', proxy('{}') + 'return Object.keys(p)', 'STACK_OVERFLOW'],
      ['for…in', proxy('{}') + 'for (const k in p) {}\nreturn 1', 'STACK_OVERFLOW'],
      ['getPrototypeOf', proxy('{}') + 'return Object.getPrototypeOf(p) === null', 'STACK_OVERFLOW'],
      ['setPrototypeOf', proxy('{}') + 'Object.setPrototypeOf(p, {})\nreturn 1', 'ok or STACK_OVERFLOW'],
      ['isExtensible', proxy('{}') + 'return Object.isExtensible(p)', 'ok or STACK_OVERFLOW'],
      ['preventExtensions', proxy('{}') + 'Object.preventExtensions(p)\nreturn 1', 'ok or STACK_OVERFLOW'],
      ['defineProperty', proxy('{}') + "Object.defineProperty(p, 'x', { value: 1 })\nreturn 1", 'STACK_OVERFLOW'],
      ['getOwnPropertyDescriptor', proxy('{}') + "return Object.getOwnPropertyDescriptor(p, 'x') ?? null", 'ok or STACK_OVERFLOW'],
      ['apply', proxy() + 'p()\nreturn 1', 'STACK_OVERFLOW'],
      ['construct', proxy() + 'new p()\nreturn 1', 'STACK_OVERFLOW'],
      ['Array.isArray', proxy('[]') + 'return Array.isArray(p)', 'ok or STACK_OVERFLOW'],
      ['typeof (IsCallable)', proxy() + 'return typeof p', 'ok'],
      ['Object.prototype.toString', proxy('[]') + 'return Object.prototype.toString.call(p)', 'STACK_OVERFLOW'],
      ['instanceof', proxy('{}') + 'return p instanceof Object', 'STACK_OVERFLOW'],
      ['Object.freeze', proxy('{}') + 'Object.freeze(p)\nreturn 1', 'STACK_OVERFLOW'],
      ['Object.isFrozen', proxy('{}') + 'return Object.isFrozen(p)', 'STACK_OVERFLOW'],
      ['JSON.stringify', proxy('{}') + 'return JSON.stringify(p)', 'STACK_OVERFLOW'],
      ['with traps that forward', proxy('{}', '{ get: (t, k, r) => Reflect.get(t, k, r) }') + 'return p.x', 'STACK_OVERFLOW'],
      ['in a prototype chain', `let o = {}; for (let i = 0; i < ${N}; i++) o = Object.create(new Proxy(o, {}))\nreturn o.x`, 'STACK_OVERFLOW'],
      // Fixed with JS_GetFunctionRealm: the outer trap answers `prototype`, the realm is looked up down the chain.
      [
        'as newTarget, the outer one trapping `prototype` (fixed)',
        `let p = function () {}; for (let i = 0; i < ${N}; i++) p = new Proxy(p, {})\np = new Proxy(p, { get: (t, k) => (k === 'prototype' ? undefined : Reflect.get(t, k)) })\nReflect.construct(function () {}, [], p)\nreturn 1`,
        'ok',
      ],
      ['freeing the chain', proxy('{}') + 'p = null\nreturn 1', 'ok'],
    ],
  ],
  [
    'JSON, regexps, arrays, conversions',
    [
      ['JSON.parse of deep nesting', "return JSON.parse('['.repeat(1e6) + ']'.repeat(1e6))", 'STACK_OVERFLOW'],
      ['JSON.parse with a reviver', "return JSON.parse('['.repeat(1e5) + ']'.repeat(1e5), (k, v) => v)", 'STACK_OVERFLOW'],
      ['JSON.stringify of deep nesting', nested() + 'return JSON.stringify(a).length', 'STACK_OVERFLOW'],
      ['a toJSON chain', 'let o = { toJSON() { return 1 } }; for (let i = 0; i < 1e5; i++) { const n = o; o = { toJSON() { return n } } }\nreturn JSON.stringify(o)', 'ok'],
      ['a regexp of nested groups', "return new RegExp('(?:'.repeat(1e5) + ')'.repeat(1e5)).test('')", 'STACK_OVERFLOW'],
      ['a regexp of nested lookaheads', "return new RegExp('(?='.repeat(1e5) + ')'.repeat(1e5)).test('')", 'STACK_OVERFLOW'],
      ['a regexp of nested lookbehinds', "return new RegExp('(?<='.repeat(1e5) + ')'.repeat(1e5)).test('')", 'STACK_OVERFLOW'],
      ['a regexp of nested classes (v flag)', "return new RegExp('['.repeat(1e5) + ']'.repeat(1e5), 'v').test('')", 'STACK_OVERFLOW'],
      ['a regexp of nested quantified groups', "return new RegExp('(?:a*'.repeat(1e5) + ')'.repeat(1e5)).test('aaaa')", 'STACK_OVERFLOW'],
      ['flat(Infinity)', nested() + 'return a.flat(Infinity).length', 'STACK_OVERFLOW'],
      ['flatMap', nested() + 'return a.flatMap((x) => x).length', 'ok'],
      ['String() of nested arrays', nested() + 'return String(a).length', 'STACK_OVERFLOW'],
      ['join of nested arrays', nested() + 'return a.join().length', 'STACK_OVERFLOW'],
      ['toLocaleString of nested arrays', nested() + 'return a.toLocaleString().length', 'STACK_OVERFLOW'],
      ['concat of nested arrays', nested() + 'return [].concat(a).length', 'ok'],
      ['a Symbol.toPrimitive chain', "let o = { [Symbol.toPrimitive]() { return 'x' } }; for (let i = 0; i < 9e5; i++) { const n = o; o = { [Symbol.toPrimitive]() { return String(n) } } }\nreturn String(o)", 'STACK_OVERFLOW'],
      ['a Symbol.hasInstance chain', 'let C = { [Symbol.hasInstance]() { return true } }; for (let i = 0; i < 9e5; i++) { const n = C; C = { [Symbol.hasInstance](v) { return v instanceof n } } }\nreturn ({}) instanceof C', 'STACK_OVERFLOW'],
      ['Array.from of nested iterables', 'let it = [1]; for (let i = 0; i < 9e5; i++) { const n = it; it = { [Symbol.iterator]() { return Array.from(n)[Symbol.iterator]() } } }\nreturn Array.from(it).length', 'STACK_OVERFLOW'],
      ['a long prototype chain (a loop)', 'let o = {}; for (let i = 0; i < 9e5; i++) o = Object.create(o)\nreturn [o.x ?? null, o instanceof Object]', 'ok'],
      ['a deep result (the serializer stops at 1000 levels)', nested() + 'return a', 'SERIALIZATION_ERROR'],
      ['a deep tool input', nested(1e5) + "await callTool('t:x', { a })\nreturn 1", 'STACK_OVERFLOW'],
    ],
  ],
  [
    'errors, promises, generators, closures',
    [
      ['an Error.cause chain, thrown', "let e = new Error('x'); for (let i = 0; i < 9e5; i++) e = new Error('x', { cause: e })\nthrow e", 'EXECUTION_ERROR'],
      ['nested AggregateErrors, thrown', "let e = new Error('x'); for (let i = 0; i < 5e5; i++) e = new AggregateError([e], 'x')\nthrow e", 'EXECUTION_ERROR'],
      ['a thenable chain', 'let t = 1; for (let i = 0; i < 1e5; i++) { const n = t; t = { then(r) { r(n) } } }\nreturn await t', 'ok'],
      ['a promise chain', 'let p = Promise.resolve(1); for (let i = 0; i < 2e5; i++) p = p.then((x) => x)\nreturn await p', 'ok'],
      ['promises resolved with promises', 'let p = Promise.resolve(1); for (let i = 0; i < 2e5; i++) { const n = p; p = new Promise((r) => r(n)) }\nreturn await p', 'ok'],
      ['a yield* chain of generators', 'function* g0() { yield 1 } let g = g0(); for (let i = 0; i < 2e5; i++) { const n = g; g = (function* () { yield* n })() }\nreturn g.next().value', 'STACK_OVERFLOW'],
      ['a yield* chain of async generators', 'async function* g0() { yield 1 } let g = g0(); for (let i = 0; i < 1e5; i++) { const n = g; g = (async function* () { yield* n })() }\nreturn (await g.next()).value', 'STACK_OVERFLOW'],
      ['a chain of closures, called', 'let f = () => 0; for (let i = 0; i < 9e5; i++) { const g = f; f = () => g() }\nreturn f()', 'STACK_OVERFLOW'],
      ['Error.prepareStackTrace that makes an Error', "Error.prepareStackTrace = () => new Error('x').stack\nreturn typeof new Error('y').stack", 'ok'],
    ],
  ],
  [
    "the GC's marking and freeing",
    [
      ['a linked list of 9e5 objects, freed', 'let l = null; for (let i = 0; i < 9e5; i++) l = { next: l }\nl = null\nreturn 1', 'ok'],
      ['9e5 nested arrays, freed', nested() + 'a = null\nreturn 1', 'ok'],
      ['a cycle through 9e5 objects, collected', 'let l = { next: null }; const h = l; for (let i = 0; i < 9e5; i++) l = { next: l }\nh.next = l; l = null\nreturn 1', 'ok'],
      ['nested Maps, freed', 'let m = new Map(); for (let i = 0; i < 5e5; i++) m = new Map([[1, m]])\nm = null\nreturn 1', 'ok'],
      ['a rope from s = s + x', "let s = ''; for (let i = 0; i < 9e5; i++) s = s + 'x'\nreturn s.length", 'ok'],
      ['a rope from s = x + s', "let s = ''; for (let i = 0; i < 9e5; i++) s = 'x' + s\nreturn s.length", 'ok'],
      ['a chain of closures, freed', 'let f = () => 0; for (let i = 0; i < 9e5; i++) { const g = f; f = () => g() }\nf = null\nreturn 1', 'ok'],
      ['a WeakMap ephemeron chain', 'const wm = new WeakMap(); let k = {}; for (let i = 0; i < 5e5; i++) { const n = {}; wm.set(k, n); k = n }\nk = null\nreturn 1', 'ok'],
      ['a WeakRef chain', 'let r = {}; for (let i = 0; i < 5e5; i++) r = { r: new WeakRef(r), s: r }\nr = null\nreturn 1', 'ok'],
      ['a FinalizationRegistry chain', 'const fr = new FinalizationRegistry(() => {}); let o = {}; for (let i = 0; i < 5e5; i++) { const n = { o }; fr.register(o, n, n); o = n }\no = null\nreturn 1', 'ok'],
      ['suspended generators holding each other', 'let g = null; for (let i = 0; i < 3e5; i++) { const n = g; g = (function* () { const k = n; yield 1 })(); g.next() }\ng = null\nreturn 1', 'ok'],
      ['suspended async functions holding each other', 'let p = null; for (let i = 0; i < 3e5; i++) { const n = p; p = (async () => { const k = n; await new Promise(() => {}) })() }\np = null\nreturn 1', 'ok'],
      ['pending promise reactions, freed', 'let p = new Promise(() => {}); for (let i = 0; i < 3e5; i++) p = p.then((x) => x)\np = null\nreturn 1', 'ok'],
    ],
  ],
]

function outcome(r: ExecuteResult): string {
  return r.status === 'ok' ? 'ok' : r.status === 'runtime_error' ? r.error.code : `${r.status} ${'error' in r ? JSON.stringify(r.error) : ''}`
}

for (const isolation of ['thread', 'process'] as const) {
  describe(`${isolation} isolation`, () => {
    const sb = new Sandbox({ isolation, poolSize: 1, preset: 'experimental', memoryLimitBytes: 512 * 1024 * 1024 })
    afterAll(() => sb.dispose())

    for (const [family, cases] of families) {
      describe(family, () => {
        for (const [what, script, expected] of cases) {
          it(what, async () => {
            const r = await withNeighbours(sb, () => sb.execute(script))
            const got = outcome(r)
            expect(got).not.toBe('WORKER_CRASHED')
            if (expected === 'ok or STACK_OVERFLOW') expect(['ok', 'STACK_OVERFLOW']).toContain(got)
            else expect(got).toBe(expected)
            if (got === 'STACK_OVERFLOW') expect(r).toMatchObject({ status: 'runtime_error', error: { code: 'STACK_OVERFLOW' } })
            expect(await sb.execute('return 1')).toMatchObject({ status: 'ok', result: 1 })
          })
        }
      })
    }
  })
}
