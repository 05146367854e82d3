const { ToolIndex } = require('../..')

describe('ToolIndex under Jest', () => {
  const tools = [
    { name: 'github:create_issue', appId: 'github', description: 'Create a new issue' },
    { name: 'slack:send_message', appId: 'slack', description: 'Post a message to a channel' },
  ]

  test('search ranks by name, synonym and typo', () => {
    const index = new ToolIndex()
    index.upsert(tools)
    expect(index.size).toBe(2)
    expect(index.search('github:create_issue')[0]).toEqual({
      name: 'github:create_issue',
      appId: 'github',
      description: 'Create a new issue',
      score: 1,
    })
    expect(index.search('open a ticket')[0].name).toBe('github:create_issue')
    expect(index.search('post a mesage')[0].name).toBe('slack:send_message')
    expect(index.search('nothing matches this')).toEqual([])
  })

  test('ready() resolves under Jest, and then a paraphrase finds its tool', async () => {
    const index = new ToolIndex()
    index.upsert([...tools, { name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }])
    await index.ready()
    expect(index.search('will it rain tomorrow').map((h) => h.name)).toEqual(['weather:get_forecast'])
  })

  test('bad arguments throw TypeError ERR_INVALID_ARG', () => {
    const index = new ToolIndex()
    expect(() => index.upsert([{}])).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG' }))
    expect(() => index.search('x', { minScore: -1 })).toThrow(/minScore/)
  })
})
