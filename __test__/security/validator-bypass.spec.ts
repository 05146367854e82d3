// Attempts to get a forbidden construct past the validator under the default `secure` preset.
// Each must be refused; the lookalikes at the bottom must stay allowed.
import { describe, expect, it } from 'vitest'

import { validate } from '../../index.js'

const refused: [string, string, string][] = [
  // [attempt, script, expected kind]
  ['unicode escape in identifier', "\\u0065val('1')", 'IllegalBuiltinAccess'],
  ['unicode code point escape', "\\u{65}val('1')", 'IllegalBuiltinAccess'],
  ['escaped Function', "new \\u0046unction('return 1')", 'IllegalBuiltinAccess'],
  ['shorthand property', 'const o = { eval }', 'IllegalBuiltinAccess'],
  ['shorthand of a global', 'const o = { process }', 'DisallowedGlobal'],
  ['destructuring default', 'const { a = eval } = {}', 'IllegalBuiltinAccess'],
  ['parameter default', 'const f = (x = process) => x', 'DisallowedGlobal'],
  ['computed key', 'const o = { [Function]: 1 }', 'IllegalBuiltinAccess'],
  ["computed ['constructor']", "const F = (() => 1)['constructor']", 'ForbiddenMember'],
  ['template constructor', 'const F = (() => 1)[`constructor`]', 'ForbiddenMember'],
  ['static constructor', 'const F = (async () => 1).constructor', 'ForbiddenMember'],
  ['optional constructor', 'const F = (() => 1)?.constructor', 'ForbiddenMember'],
  ['destructured constructor', 'const { constructor: F } = () => 1', 'ForbiddenMember'],
  ['__proto__ read', 'const p = ({}).__proto__', 'ForbiddenMember'],
  ['__proto__ literal', 'const o = { __proto__: Array.prototype }', 'ForbiddenMember'],
  ['prototype access', 'Array.prototype.map = null', 'ForbiddenMember'],
  ['optional chain on globalThis', 'return globalThis?.process', 'DisallowedGlobal'],
  ['computed on globalThis', "return globalThis['process']", 'DisallowedGlobal'],
  ['nested globalThis', 'return globalThis.globalThis.fetch', 'DisallowedGlobal'],
  ['destructuring globalThis', 'const { setTimeout: st } = globalThis', 'DisallowedGlobal'],
  ['parenthesised eval', "(0, eval)('1')", 'IllegalBuiltinAccess'],
  ['dynamic import', "const fs = await import('node:fs')", 'DynamicImport'],
  ['import.meta', 'return import.meta', 'ImportMeta'],
  ['static import', "import fs from 'node:fs'", 'ModuleSyntax'],
  ['with statement', 'with ({}) { x }', 'WithStatement'],
  ['loop in arrow body', 'const f = () => { for (;;) {} }', 'LoopNotAllowed'],
  ['loop in expression arrow', 'const f = async () => { while (true) await 1 }', 'LoopNotAllowed'],
  ['labelled loop', 'a: b: for (;;) break a', 'LoopNotAllowed'],
  ['for await', 'for await (const x of []) {}', 'LoopNotAllowed'],
  ['do-while in class method', 'class A { m() { do {} while (false) } }', 'LoopNotAllowed'],
  ['reserved name reference', '__cc_tick = () => {}', 'ReservedIdentifier'],
  ['reserved name binding', 'function __cc_main() {}', 'ReservedIdentifier'],
  ['reserved property', "const o = {}; o['__cc_tick']", 'ReservedIdentifier'],
  ['reserved label', '__cc_l: {}', 'ReservedIdentifier'],
]

describe('secure refuses bypass attempts', () => {
  for (const [name, script, kind] of refused) {
    it(name, () => {
      const result = validate(script)
      expect(result.ok, script).toBe(false)
      if (!result.ok) {
        expect(result.status, script).toBe('illegal_access')
        expect(result.error.code).toBe('VALIDATION_ERROR')
        expect((result.error as { kind: string }).kind).toBe(kind)
      }
    })
  }

  for (const script of [
    "await callTool('codecall:execute', { script: 'return 1' })",
    'await callTool(`codecall:invoke`, {})',
    "await callTool('codecall_describe', {})",
  ]) {
    it(`self reference: ${script}`, () => {
      expect(validate(script)).toMatchObject({
        ok: false,
        status: 'illegal_access',
        error: { code: 'SELF_REFERENCE_BLOCKED', kind: 'SelfReference' },
      })
    })
  }
})

describe('lookalikes stay allowed', () => {
  for (const script of [
    'const obj = { process: 1 }; return obj.process',
    "return 'eval is a string'",
    'const o = { eval: 1, Function: 2 }; return o.eval + o.Function',
    "return { fetch: 'not the global' }.fetch",
    "const s = `process ${'and'} eval`; return s",
    "return callTool('users:list', { process: true, eval: 'x' })",
    'class A { constructor() { this.x = 1 } } return new A().x',
    '// eval(1) in a comment\nreturn 1',
    "return /eval\\(/.test('eval(')",
  ]) {
    it(script, () => {
      expect(validate(script)).toMatchObject({ ok: true })
    })
  }
})
