// Issue 44: the gateway gives the engine each upstream's own words — its `serverInfo.title` /
// `.description` and `instructions` from the initialize result — as `ToolDefinition.server` of
// every tool of that upstream. They are search metadata only: listTools and describe show nothing
// of them, and an upstream that says nothing about itself gets no `server` at all.
import { afterAll, describe, expect, it } from 'vitest'
import { Gateway, parseConfig, RequestScope } from '../../lib/gateway/index.mjs'
import { leftovers, newMark, servers } from './helpers'

const mark = newMark()
afterAll(async () => {
  expect(await leftovers(mark)).toEqual([])
})

const WORDS = {
  title: 'Fixture Weather Desk',
  description: 'Forecasts for sailors and harbour masters',
  instructions: 'Ask it about tides and swell before leaving port.',
}

describe("the upstream's own words reach the engine", () => {
  it('as ToolDefinition.server on each of its tools, and only there', async () => {
    const config = parseConfig({
      mcpServers: {
        words: servers.fixture(mark, '--name', 'words', '--title', WORDS.title, '--description', WORDS.description, '--instructions', WORDS.instructions),
        quiet: servers.fixture(mark, '--name', 'quiet'),
      },
      codecall: { cacheDir: false, search: { semantic: false } },
    })
    const gateway: any = new Gateway(config, { log: () => {}, audit: null })
    const given: any[][] = []
    const engine = gateway.codecall
    const setTools = engine.setTools.bind(engine)
    engine.setTools = (defs: any[]) => (given.push(defs), setTools(defs))
    try {
      await gateway.start()
      const defs = given.at(-1) ?? []
      const words = defs.filter((d) => d.appId === 'words')
      const quiet = defs.filter((d) => d.appId === 'quiet')
      expect(words.length).toBeGreaterThan(3)
      for (const d of words) expect(d.server).toEqual(WORDS)
      expect(quiet.length).toBe(words.length)
      for (const d of quiet) expect(d).not.toHaveProperty('server')
      // Nothing of them is listed or described.
      const described = await gateway.handle('codecall_describe', { toolNames: ['words:echo'] }, new RequestScope())
      expect(JSON.stringify(described)).toContain('words:echo')
      expect(JSON.stringify(described)).not.toContain('harbour')
      expect(JSON.stringify(gateway.listTools())).not.toContain('harbour')
      // The tools stay searchable by their own words.
      const hits: any = await gateway.handle('codecall_search', { query: 'echo the given text back' }, new RequestScope())
      expect(JSON.stringify(hits)).toContain('words:echo')
    } finally {
      await gateway.close()
    }
  })
})
