// Under Jest, without --forceExit: an idle Sandbox must keep nothing alive, and
// --detectOpenHandles must report nothing (the README's test command runs it with that flag).
const { Sandbox } = require('../..')

describe('Sandbox under Jest', () => {
  test('runs a plan that calls a host tool', async () => {
    const sandbox = new Sandbox()
    const events = []
    const result = await sandbox.execute(
      "const users = await callTool('users:list', { limit: 2 }); return users.map((u) => u.name)",
      {
        callTool: async (name, input) => [{ name: 'Ada' }, { name: 'Linus' }].slice(0, input.limit),
        onEvent: (e) => events.push(e.type),
      },
    )
    expect(result).toMatchObject({ status: 'ok', result: ['Ada', 'Linus'] })
    expect(events).toEqual(['tool_call_start', 'tool_call_end'])
  })

  test('a sandbox that is never disposed does not keep the test file alive', async () => {
    const sandbox = new Sandbox({ timeoutMs: 500 })
    const result = await sandbox.execute("await callTool('slow')", { callTool: () => new Promise(() => {}) })
    expect(result.status).toBe('timeout')
  })
})
