const { validate } = require('../..')

describe('validate under Jest', () => {
  test('valid script lists its tools', () => {
    expect(validate("const u = await callTool('users:list', {}); return u")).toEqual({
      ok: true,
      toolNames: ['users:list'],
      dynamicToolCalls: false,
    })
  })

  test('eval is refused', () => {
    expect(validate("eval('1')")).toMatchObject({
      ok: false,
      status: 'illegal_access',
      error: { code: 'VALIDATION_ERROR', kind: 'IllegalBuiltinAccess' },
    })
  })

  // Jest runs tests in their own realm while native addons live in Node's main one, so the error is
  // the main realm's TypeError: `instanceof` against the test realm's TypeError cannot hold
  // (jestjs/jest#2549). Its name, message and code are what a caller can rely on everywhere.
  test('bad arguments throw TypeError ERR_INVALID_ARG', () => {
    expect(() => validate(1)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG' }))
    expect(() => validate('1', { preset: 'nope' })).toThrow(/options.preset must be one of/)
  })
})
