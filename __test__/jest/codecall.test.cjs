// CodeCall from CommonJS under Jest (run with --detectOpenHandles): an engine that ran a plan and
// was not disposed must not keep Jest alive.
const { CodeCall } = require('../..')

describe('CodeCall under Jest', () => {
  const tools = [
    { name: 'users:list', appId: 'users', description: 'List users', handler: () => {} },
    { name: 'users:secret', appId: 'users', description: 'Internal', internal: true },
  ]
  const host = {
    callTool: async (name) => ({ content: [{ type: 'text', text: JSON.stringify({ name, items: [1, 2] }) }] }),
  }

  test('lists, searches and executes through the host', async () => {
    const cc = new CodeCall({ directCalls: { enabled: true } })
    cc.setTools(tools)
    expect(cc.listTools().map((t) => t.name)).toEqual(['codecall:search', 'codecall:describe', 'codecall:execute', 'codecall:invoke'])
    expect(cc.search({ query: 'list users' }).tools[0].name).toBe('users:list')
    const r = await cc.handle('codecall:execute', { script: "const r = await callTool('users:list', {})\nreturn r.items.length" }, host)
    expect(r).toMatchObject({ status: 'ok', result: 2 })
    expect(await cc.invoke({ tool: 'users:secret', input: {} }, host)).toMatchObject({ status: 'error', error: { code: 'TOOL_NOT_FOUND' } })
  })

  test('bad arguments: sync methods throw, async ones reject, with ERR_INVALID_ARG', async () => {
    const cc = new CodeCall()
    expect(() => cc.setTools([{}])).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG' }))
    await expect(cc.execute({}, host)).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG' })
    await cc.dispose()
  })
})
