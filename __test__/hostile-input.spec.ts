// No input may crash or hang the validator: deep nesting is refused before parsing, huge and odd
// inputs come back as results.
import { describe, expect, it } from 'vitest'

import { validate } from '../index.js'

const N = 30_000

describe('deep nesting is refused before parsing', () => {
  const inputs: [string, string][] = [
    ['arrays', `${'['.repeat(N)}1${']'.repeat(N)}`],
    ['parens', `${'('.repeat(N)}1${')'.repeat(N)}`],
    ['objects', `${'({a:'.repeat(N)}1${'})'.repeat(N)}`],
    ['arrows', `${'a=>'.repeat(N)}a`],
    ['templates', `${'`${'.repeat(N)}${'}`'.repeat(N)}`],
    ['calls', `${'f('.repeat(N)}${')'.repeat(N)}`],
  ]
  for (const [name, script] of inputs) {
    it(name, () => {
      expect(validate(script, { maxScriptBytes: 10_000_000 })).toMatchObject({
        ok: false,
        status: 'illegal_access',
        error: { code: 'VALIDATION_ERROR', kind: 'NestingTooDeep' },
      })
    })
  }

  it('honours maxNestingDepth', () => {
    const nested = (depth: number) => `return ${'['.repeat(depth)}1${']'.repeat(depth)}`
    expect(validate(nested(64)).ok).toBe(true)
    expect(validate(nested(65)).ok).toBe(false)
    expect(validate(nested(10), { maxNestingDepth: 5 }).ok).toBe(false)
  })
})

describe('unbracketed depth never overflows the stack', () => {
  // Nothing here nests brackets, so the pre-check lets it through to the parser.
  const inputs: [string, string][] = [
    ['unary chain', `${'!'.repeat(N)}x`],
    ['binary chain', `${'1+'.repeat(N)}1`],
    ['conditional chain', `${'a?b:'.repeat(N)}c`],
    ['assignment chain', `${'x='.repeat(N)}1`],
    ['else-if chain', `if(a){}${'else if(a){}'.repeat(N)}`],
    ['if chain', `${'if(a)'.repeat(N)};`],
    ['member chain', `x${'.a'.repeat(N)}`],
    ['await chain', `${'await '.repeat(N)}x`],
  ]
  for (const [name, script] of inputs) {
    it(name, () => {
      const result = validate(script, { maxScriptBytes: 10_000_000, preset: 'experimental' })
      expect(typeof result.ok).toBe('boolean')
    })
  }
})

describe('size and encoding', () => {
  it('validates a 1 MB script when allowed', () => {
    const line = "const v = await callTool('users:list', { limit: 10, filter: { active: true } });\n"
    const script = line.repeat(Math.ceil(1_000_000 / line.length))
    expect(validate(script, { maxScriptBytes: 2_000_000 })).toEqual({ ok: true, toolNames: ['users:list'], dynamicToolCalls: false })
  })

  it('refuses a 1 MB script under the default limit', () => {
    expect(validate('x'.repeat(1_000_000))).toMatchObject({ ok: false, error: { kind: 'ScriptTooLarge' } })
  })

  it('survives invalid UTF-16 (lone surrogates)', () => {
    for (const script of ["return '\ud800'", 'return \udc00x', '\ud800', "const s = 'a\udfffb'; return s"]) {
      const result = validate(script)
      expect(typeof result.ok).toBe('boolean')
    }
  })

  it('survives NUL bytes, BOMs and odd line terminators', () => {
    for (const script of ['\0', '\ufeffreturn 1', 'return 1\u2028+ 1', 'return 1\r\n\r+1', '\u0000'.repeat(1000)]) {
      expect(typeof validate(script).ok).toBe('boolean')
    }
  })

  it('answers random garbage with results', () => {
    let seed = 42
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
    const alphabet = '()[]{}`$/\\\'"=>.:;,+-*!?abc 01\n\u2028'
    for (let i = 0; i < 300; i++) {
      const length = Math.floor(rand() * 400)
      let script = ''
      for (let j = 0; j < length; j++) script += alphabet[Math.floor(rand() * alphabet.length)]
      expect(typeof validate(script).ok).toBe('boolean')
      expect(typeof validate(script, { language: 'typescript' }).ok).toBe('boolean')
    }
  })
})
