// Issue 40: no builtin reaches a system call the worker's filter forbids. QuickJS and the C library
// set some state up lazily, on a builtin's first use (the local time zone was one: its first use
// opened the zone file under the seccomp filter and killed the worker). This calls every function
// and getter of every global and prototype a plan can reach, with a few argument lists, in a
// confined worker — a forbidden call anywhere ends the worker (WORKER_CRASHED), not the plan.
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox } from '../../index.js'

export const TOUR = `
const samples = [
  [Object.prototype, () => ({ a: 1, b: [2] })], [Array.prototype, () => [3, 1, 2, 'x']],
  [String.prototype, () => 'Héllo wörld ǅ ß 𝒜'], [Number.prototype, () => 1234.5678],
  [Boolean.prototype, () => true], [BigInt.prototype, () => 12345678901234567890n],
  [Symbol.prototype, () => Symbol('s')], [Date.prototype, () => new Date(2020, 6, 15, 12, 30)],
  [RegExp.prototype, () => /a(b)?c/giu], [Error.prototype, () => new TypeError('e', { cause: 1 })],
  [Map.prototype, () => new Map([[1, 2]])], [Set.prototype, () => new Set([1, 2])],
  [WeakMap.prototype, () => new WeakMap()], [WeakSet.prototype, () => new WeakSet()],
  [Promise.prototype, () => Promise.resolve(1)], [ArrayBuffer.prototype, () => new ArrayBuffer(16)],
  [DataView.prototype, () => new DataView(new ArrayBuffer(16))],
  [Object.getPrototypeOf(Uint8Array.prototype), () => new Float64Array([3, 1.5, -2])],
  [Uint8Array.prototype, () => new Uint8Array([1, 2, 3])],
  [Object.getPrototypeOf(function* () {}).prototype, () => (function* () { yield 1 })()],
  [Object.getPrototypeOf([][Symbol.iterator]()), () => [1, 2][Symbol.iterator]()],
  [Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())), () => [1, 2][Symbol.iterator]()],
]
if (typeof WeakRef !== 'undefined') samples.push([WeakRef.prototype, () => new WeakRef({})])
const statics = [Object, Array, String, Number, Boolean, BigInt, Symbol, Date, RegExp, Error, Map, Set, Promise,
  ArrayBuffer, Uint8Array, Float64Array, Math, JSON, Reflect,
  typeof Atomics === 'object' ? Atomics : {}, typeof Iterator === 'function' ? Iterator : {},
  { parseInt, parseFloat, isNaN, isFinite, encodeURI, encodeURIComponent, decodeURI, decodeURIComponent, escape, unescape }]
const args = [[], [1], [0, 2], ['a', 'b'], ['en-US', { timeZone: 'UTC' }], [{}], [-1.5, 'x', [1]]]
const skip = new Set(['constructor', 'caller', 'callee', 'arguments'])
let calls = 0, threw = 0
const call = (fn, self) => {
  for (const a of args) {
    calls++
    try { const r = Reflect.apply(fn, self, a); if (r instanceof Promise) r.catch(() => {}) } catch { threw++ }
  }
}
const visit = (holder, self) => {
  for (const key of Object.getOwnPropertyNames(holder)) {
    if (skip.has(key)) continue
    const d = Object.getOwnPropertyDescriptor(holder, key)
    if (d.get) { calls++; try { d.get.call(self()) } catch { threw++ } }
    if (typeof d.value === 'function') call(d.value, self())
  }
}
for (const [proto, self] of samples) visit(proto, self)
for (const s of statics) visit(s, () => s)
// Local time, and parsing a local time (no zone), directly.
const local = [new Date(2020, 0, 1).getHours(), new Date().toLocaleString().length > 0, Date.parse('2020-01-01T00:00:00') > 0]
return { calls, threw, local }
`

for (const isolation of ['process', 'thread'] as const) {
  describe(`${isolation} isolation`, () => {
    const sb = new Sandbox({ isolation, poolSize: 1, preset: 'experimental' })
    afterAll(() => sb.dispose())

    it('every builtin function and getter runs without ending its worker or thread', async () => {
      const r = await sb.execute(TOUR)
      expect(r).toMatchObject({ status: 'ok', result: { local: [0, true, true] } })
      if (r.status === 'ok') expect((r.result as { calls: number }).calls).toBeGreaterThan(2000)
      // The same worker or thread goes on.
      expect(await sb.execute('return new Date(2020, 0, 1).getMinutes()')).toMatchObject({ status: 'ok', result: 0 })
    })

    it('in every preset', async () => {
      for (const preset of ['locked_down', 'secure', 'balanced', 'experimental'] as const) {
        const p = new Sandbox({ isolation, poolSize: 1, preset })
        try {
          const r = await p.execute('const d = new Date(2020, 0, 1, 12); return [d.getHours(), d.toLocaleString().length > 0, d.toString().slice(0, 15)]')
          expect(r).toMatchObject({ status: 'ok', result: [12, true, 'Wed Jan 01 2020'] })
        } finally {
          await p.dispose()
        }
      }
    })
  })
}
