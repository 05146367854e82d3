import { describe, expect, it } from 'vitest'

import { validate, type ValidateResult } from '../index.js'
import { expectInvalidArg } from './helpers.js'

function illegal(result: ValidateResult) {
  if (result.ok || result.status !== 'illegal_access') {
    throw new Error(`expected illegal_access, got ${JSON.stringify(result)}`)
  }
  return result.error
}

describe('validate: valid scripts', () => {
  it('returns the statically known tool names, in order, once each', () => {
    const result = validate(
      "const a = await callTool('users:list', {});\nconst b = await callTool(\"billing:invoices\", { id: a[0].id });\nawait callTool('users:list');\nreturn b",
    )
    expect(result).toEqual({ ok: true, toolNames: ['users:list', 'billing:invoices'], dynamicToolCalls: false })
  })

  it('flags computed tool names as dynamic', () => {
    expect(validate("const name = 'users:' + 'list'; return callTool(name, {})")).toEqual({
      ok: true,
      toolNames: [],
      dynamicToolCalls: true,
    })
    expect(validate("await callTool('a:b'); const f = callTool; return f('c:d')")).toEqual({
      ok: true,
      toolNames: ['a:b'],
      dynamicToolCalls: true,
    })
  })

  it('accepts the empty script', () => {
    expect(validate('')).toEqual({ ok: true, toolNames: [], dynamicToolCalls: false })
  })

  it('accepts top-level await and return', () => {
    expect(validate('const x = await Promise.resolve(1);\nreturn x + 1').ok).toBe(true)
  })
})

describe('validate: syntax errors', () => {
  it('reports 1-based line and column in the user script', () => {
    expect(validate('const a = 1;\nconst b = ;')).toEqual({
      ok: false,
      status: 'syntax_error',
      error: { code: 'SYNTAX_ERROR', message: expect.any(String), location: { line: 2, column: 11 } },
    })
  })

  it('counts columns in UTF-16 code units', () => {
    const result = validate("const s = '😀'; const = 1")
    expect(result.ok).toBe(false)
    // The unexpected '=' is the 22nd code point but the 23rd UTF-16 unit: the emoji counts twice.
    if (!result.ok) expect(result.error.location).toEqual({ line: 1, column: 23 })
  })
})

describe('validate: rules', () => {
  it('refuses disabled builtins with kind IllegalBuiltinAccess', () => {
    expect(validate("eval('1 + 1')")).toEqual({
      ok: false,
      status: 'illegal_access',
      error: {
        code: 'VALIDATION_ERROR',
        kind: 'IllegalBuiltinAccess',
        message: "Identifier 'eval' is not allowed in AgentScript",
        location: { line: 1, column: 1 },
      },
    })
    expect(illegal(validate("const f = new Function('return 1')")).kind).toBe('IllegalBuiltinAccess')
  })

  it('refuses disabled globals with kind DisallowedGlobal', () => {
    for (const script of ['process.exit(1)', "require('fs')", "fetch('http://x')", 'setTimeout(() => 1, 10)', 'setInterval(() => 1, 10)']) {
      expect(illegal(validate(script)).kind, script).toBe('DisallowedGlobal')
    }
  })

  it('refuses loops when loops are off, and allows them when on', () => {
    const error = illegal(validate('let n = 0;\nfor (let i = 0; i < 3; i++) { n++ }\nreturn n'))
    expect(error.kind).toBe('LoopNotAllowed')
    expect(error.location).toEqual({ line: 2, column: 1 })
    expect(validate('for (const x of [1]) {}', { allowLoops: true }).ok).toBe(true)
    expect(validate('for (const x of [1]) {}', { preset: 'balanced' }).ok).toBe(true)
  })

  it('refuses console without allowConsole', () => {
    expect(validate("console.log('x')").ok).toBe(true)
    expect(illegal(validate("console.log('x')", { preset: 'locked_down' })).kind).toBe('DisallowedGlobal')
    expect(illegal(validate("console.log('x')", { allowConsole: false })).kind).toBe('DisallowedGlobal')
  })

  it('blocks calls to the meta-tools with SELF_REFERENCE_BLOCKED', () => {
    const result = validate("await callTool('codecall:execute', { script: 'return 1' })")
    expect(result).toMatchObject({ ok: false, status: 'illegal_access', error: { code: 'SELF_REFERENCE_BLOCKED' } })
  })

  it('presets differ where the contract says', () => {
    expect(validate('return (() => 1).constructor', { preset: 'secure' }).ok).toBe(false)
    expect(validate('return (() => 1).constructor', { preset: 'locked_down' }).ok).toBe(false)
    expect(validate('return (() => 1).constructor', { preset: 'balanced' }).ok).toBe(true)
    expect(illegal(validate('return new Proxy({}, {})', { preset: 'locked_down' })).kind).toBe('DisallowedGlobal')
    expect(validate('return new Proxy({}, {})', { preset: 'secure' }).ok).toBe(true)
    expect(illegal(validate('return globalThis', { preset: 'locked_down' })).kind).toBe('DisallowedGlobal')
  })

  it('lets explicit options override the preset', () => {
    expect(validate("fetch('x')", { disabledGlobals: [] }).ok).toBe(true)
    expect(illegal(validate('Math.max(1, 2)', { disabledGlobals: ['Math'] })).kind).toBe('DisallowedGlobal')
    expect(illegal(validate('JSON.parse("1")', { disabledBuiltins: ['JSON'] })).kind).toBe('IllegalBuiltinAccess')
    // eval and Function stay disabled whatever is passed.
    expect(illegal(validate("eval('1')", { disabledBuiltins: [] })).kind).toBe('IllegalBuiltinAccess')
    expect(illegal(validate('const __x_a = 1', { reservedPrefixes: ['__x_'] })).kind).toBe('ReservedIdentifier')
  })

  it('refuses scripts over maxScriptBytes before parsing', () => {
    expect(illegal(validate('return 1 + 1 + 1', { maxScriptBytes: 8 }))).toEqual({
      code: 'VALIDATION_ERROR',
      kind: 'ScriptTooLarge',
      message: 'Script is 16 bytes; the limit is 8 bytes (maxScriptBytes)',
    })
  })
})

describe('validate: TypeScript', () => {
  it('strips types and keeps line numbers', () => {
    const script = [
      'interface User { id: string; name?: string }',
      "const users = await callTool<User[]>('users:list', {}) as User[];",
      'const first: User = users[0]!;',
      'eval(first.id);',
    ].join('\n')
    const error = illegal(validate(script, { language: 'typescript' }))
    expect(error.kind).toBe('IllegalBuiltinAccess')
    expect(error.location).toEqual({ line: 4, column: 1 })
  })

  it('reports tool names from TypeScript', () => {
    expect(validate("const r: { ok: boolean } = await callTool('a:b', {} satisfies object); return r", { language: 'typescript' })).toEqual({
      ok: true,
      toolNames: ['a:b'],
      dynamicToolCalls: false,
    })
  })

  it('does not treat type positions as references', () => {
    expect(validate('const f: Function | null = null; return f', { language: 'typescript' }).ok).toBe(true)
  })

  it('is a syntax error in JavaScript mode', () => {
    expect(validate('const a: number = 1').ok).toBe(false)
  })
})

describe('validate: caller mistakes throw TypeError ERR_INVALID_ARG', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['non-string script', () => validate(42 as unknown as string), /script/],
    ['missing script', () => (validate as unknown as () => unknown)(), /script/],
    ['unknown preset', () => validate('1', { preset: 'paranoid' as never }), /preset/],
    ['unknown language', () => validate('1', { language: 'python' as never }), /language/],
    ['negative maxScriptBytes', () => validate('1', { maxScriptBytes: -1 }), /maxScriptBytes/],
    ['fractional maxNestingDepth', () => validate('1', { maxNestingDepth: 1.5 }), /maxNestingDepth/],
    ['NaN maxScriptBytes', () => validate('1', { maxScriptBytes: Number.NaN }), /maxScriptBytes/],
    ['non-object options', () => validate('1', 'secure' as never), /options/],
    ['wrong-typed field', () => validate('1', { allowLoops: 'yes' as never }), /allowLoops|options/],
    ['non-array list', () => validate('1', { disabledGlobals: 'fetch' as never }), /disabledGlobals|options/],
  ]
  for (const [name, call, pattern] of cases) {
    it(name, () => expectInvalidArg(call, pattern))
  }

  it('accepts null and undefined options', () => {
    expect(validate('return 1', undefined).ok).toBe(true)
    expect(validate('return 1', null as never).ok).toBe(true)
  })
})
