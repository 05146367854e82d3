import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import { ToolIndex, type IndexedTool } from '../index.js'
import { expectInvalidArg } from './helpers.js'

const tools: IndexedTool[] = [
  {
    name: 'github:create_issue',
    appId: 'github',
    source: 'inline',
    tags: ['write'],
    description: 'Create a new issue in a GitHub repository',
    inputSchema: {
      type: 'object',
      properties: { owner: { type: 'string' }, repo: { type: 'string' }, title: { type: 'string' }, labels: { type: 'array' } },
      required: ['owner', 'repo', 'title'],
    },
    examples: [{ description: 'File a bug report', input: { owner: 'o', repo: 'r', title: 't' } }],
  },
  { name: 'github:list_issues', appId: 'github', source: 'inline', description: 'List issues in a repository' },
  { name: 'github:add_issue_comment', appId: 'github', source: 'inline', description: 'Add a comment to an issue' },
  { name: 'slack:send_message', appId: 'slack', source: 'openapi', tags: ['write', 'chat'], description: 'Post a message to a channel' },
  { name: 'slack:list_channels', appId: 'slack', source: 'openapi', description: 'List public channels' },
  {
    name: 'maps:geocode',
    appId: 'maps',
    description: 'Turn a street address into coordinates',
    inputSchema: { type: 'object', properties: { streetAddress: { type: 'string' }, countryCode: { type: 'string' } } },
  },
  { name: 'notes:search', appId: 'notes', description: 'Search notes; notes can mention an issue or a message' },
]

function indexOf(list: IndexedTool[] = tools, options?: ConstructorParameters<typeof ToolIndex>[0]) {
  const index = new ToolIndex(options)
  index.upsert(list)
  return index
}
const names = (index: ToolIndex, query: string, options?: Parameters<ToolIndex['search']>[1]) =>
  index.search(query, options).map((h) => h.name)

describe('ToolIndex: shape', () => {
  it('returns hits with name, appId, description, source and a score in [0, 1]', () => {
    const index = indexOf()
    expect(index.size).toBe(tools.length)
    const hits = index.search('create an issue')
    expect(hits[0]).toEqual({
      name: 'github:create_issue',
      appId: 'github',
      description: 'Create a new issue in a GitHub repository',
      source: 'inline',
      score: expect.any(Number),
    })
    for (const h of hits) expect(h.score).toBeGreaterThan(0), expect(h.score).toBeLessThanOrEqual(1)
    const scores = hits.map((h) => h.score)
    expect([...scores].sort((a, b) => b - a)).toEqual(scores)
  })

  it('gives description "" and no appId/source when a tool has none', () => {
    const index = indexOf([{ name: 'bare_tool' }])
    const [hit] = index.search('bare_tool')
    expect(hit).toStrictEqual({ name: 'bare_tool', description: '', score: 1 })
  })

  it('defaults topK to 8 and honours it', () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ name: `list_things_${i}`, description: 'List things' }))
    const index = indexOf(many)
    expect(index.search('list things')).toHaveLength(8)
    expect(index.search('list things', { topK: 3 })).toHaveLength(3)
    expect(index.search('list things', { topK: 0 })).toEqual([])
    expect(index.search('list things', { topK: 100 })).toHaveLength(20)
  })
})

describe('ToolIndex: ranking', () => {
  it('an exact name scores 1, with or without the app prefix, in any case and separator style', () => {
    const index = indexOf()
    for (const q of ['github:create_issue', 'create_issue', 'CreateIssue', 'create-issue']) {
      const [top] = index.search(q)
      expect(top).toMatchObject({ name: 'github:create_issue', score: 1 })
    }
    expect(index.search('create issue')[0].score).toBeLessThan(1)
  })

  it('name words beat the same words in another tool description', () => {
    const found = names(indexOf(), 'issue message')
    expect(found.indexOf('notes:search')).toBeGreaterThan(0)
    expect(names(indexOf(), 'send message')[0]).toBe('slack:send_message')
  })

  it('finds by synonym ("open a ticket"), ranked below the exact word', () => {
    const index = indexOf([...tools, { name: 'desk:create_ticket', appId: 'desk', description: 'Create a support ticket' }])
    expect(names(index, 'open a ticket')[0]).toBe('desk:create_ticket')
    const hits = index.search('create ticket', { topK: 20 })
    const exact = hits.find((h) => h.name === 'desk:create_ticket')!
    const synonym = hits.find((h) => h.name === 'github:create_issue')!
    expect(synonym).toBeDefined()
    expect(exact.score).toBeGreaterThan(synonym.score)
    expect(names(indexOf(tools, { synonyms: false }), 'open a ticket')).not.toContain('github:create_issue')
  })

  it('finds through a typo, ranked below the exact word; fuzzy: false turns it off', () => {
    const index = indexOf()
    expect(names(index, 'geocod an adress')[0]).toBe('maps:geocode')
    const typo = index.search('chanels', { topK: 20 }).find((h) => h.name === 'slack:list_channels')!
    const exact = index.search('channels', { topK: 20 }).find((h) => h.name === 'slack:list_channels')!
    expect(typo.score).toBeLessThan(exact.score)
    expect(names(indexOf(tools, { fuzzy: false }), 'chanels')).toEqual([])
  })

  it('searches input property names (camelCase split) and example text', () => {
    expect(names(indexOf(), 'country code')[0]).toBe('maps:geocode')
    expect(names(indexOf(), 'bug report')[0]).toBe('github:create_issue')
  })

  it('orders equal scores by name', () => {
    // Lexically tied (the semantic signal, on by default, would tell these names apart).
    const index = indexOf(
      ['zeta', 'alpha', 'mid'].map((name) => ({ name, description: 'archive a record' })),
      { semantic: false },
    )
    const hits = index.search('archive')
    expect(hits.map((h) => h.name)).toEqual(['alpha', 'mid', 'zeta'])
    expect(new Set(hits.map((h) => h.score)).size).toBe(1)
  })

  it('minScore drops weaker hits', () => {
    const index = indexOf()
    const all = index.search('issue', { topK: 50 })
    const cut = all[Math.floor(all.length / 2)].score
    const kept = index.search('issue', { topK: 50, minScore: cut })
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.every((h) => h.score >= cut)).toBe(true)
    expect(kept.length).toBeLessThan(all.length)
    expect(index.search('issue', { minScore: 1 })).toEqual([])
  })
})

describe('ToolIndex: filters', () => {
  it('filters by appIds, tags and sources; an empty list does not filter', () => {
    const index = indexOf()
    expect(names(index, 'list', { appIds: ['slack'] })).toEqual(['slack:list_channels'])
    expect(names(index, 'list', { appIds: ['slack', 'github'] }).sort()).toEqual(['github:list_issues', 'slack:list_channels'])
    expect(names(index, 'issue message', { tags: ['write'] }).sort()).toEqual(['github:create_issue', 'slack:send_message'])
    expect(names(index, 'list', { sources: ['openapi'] })).toEqual(['slack:list_channels'])
    expect(names(index, 'list', { appIds: ['nope'] })).toEqual([])
    expect(names(index, 'list', { appIds: [] }).length).toBe(names(index, 'list').length)
  })
})

describe('ToolIndex: updates', () => {
  it('upsert replaces by name; remove removes; clear empties', () => {
    const index = indexOf()
    index.upsert([{ name: 'slack:list_channels', appId: 'slack', description: 'Show the weather forecast' }])
    expect(index.size).toBe(tools.length)
    expect(names(index, 'weather forecast')).toEqual(['slack:list_channels'])
    expect(names(index, 'public')).toEqual([])
    index.remove(['slack:list_channels', 'unknown'])
    expect(index.size).toBe(tools.length - 1)
    expect(names(index, 'weather forecast')).toEqual([])
    index.clear()
    expect(index.size).toBe(0)
    expect(index.search('issue')).toEqual([])
    index.upsert(tools)
    expect(names(index, 'create issue')[0]).toBe('github:create_issue')
  })

  it('10 000 upserts, one at a time, then search works', () => {
    const index = new ToolIndex()
    for (let i = 0; i < 10_000; i++) index.upsert([{ name: `svc${i}:get_item_${i}`, appId: `app${i % 25}`, description: 'Get one item by id' }])
    index.upsert([{ name: 'billing:refund_payment', appId: 'billing', description: 'Refund a card payment' }])
    expect(index.size).toBe(10_001)
    expect(names(index, 'refund a payment')[0]).toBe('billing:refund_payment')
    expect(names(index, 'get item', { appIds: ['app7'], topK: 1000 })).toHaveLength(400)
  })
})

describe('ToolIndex: hostile and odd input', () => {
  it('empty, stop-word-only and nonsense queries return []', () => {
    const index = indexOf()
    for (const q of ['', '   ', 'the of and', 'xyzzy plugh', '!!!', '\u0000\uffff']) expect(index.search(q)).toEqual([])
  })

  it('unicode and very long queries do not fail', () => {
    const index = indexOf([...tools, { name: 'créer_tâche', description: 'Créer une tâche 📝 dans le projet' }])
    expect(names(index, 'créer une tâche')[0]).toBe('créer_tâche')
    expect(index.search('🐛💥 \u{10FFFF} ' + 'ß'.repeat(10_000))).toEqual([])
    expect(names(index, 'list channels '.repeat(200_000))[0]).toBe('slack:list_channels')
    expect(index.search(Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' '))).toEqual([])
  })

  it('huge and deeply nested tools are indexed without failing', () => {
    let schema: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < 500; i++) schema = { type: 'object', properties: { [`level${i}`]: schema } }
    const index = indexOf([{ name: 'deep', description: 'x '.repeat(200_000) + 'needle', inputSchema: schema, tags: Array(1000).fill('t') }])
    expect(index.size).toBe(1)
    expect(index.search('level499')[0]?.name).toBe('deep')
  })

  it('throws ERR_INVALID_ARG for bad arguments and indexes nothing from a bad batch', () => {
    const index = new ToolIndex()
    expectInvalidArg(() => new ToolIndex(42 as never), /options/)
    expectInvalidArg(() => index.upsert('x' as never), /tools must be an array/)
    expectInvalidArg(() => index.upsert([{ name: 'ok' }, { name: '' }]), /tools\[1\]\.name/)
    expectInvalidArg(() => index.upsert([{ name: 'ok' }, { description: 'no name' } as never]), /tools\[1\]/)
    expectInvalidArg(() => index.upsert([{ name: 'ok', tags: 'x' as never }]), /tools\[0\]/)
    expectInvalidArg(() => index.upsert([{ name: 'ok', examples: [['nested'] as never] }]), /tools\[0\]\.examples\[0\] must be an object/)
    expectInvalidArg(() => index.upsert([{ name: 'ok', inputSchema: 'x' as never }]), /tools\[0\]\.inputSchema must be an object/)
    expectInvalidArg(() => index.upsert([{ name: 'ok', description: 7 as never }]), /tools\[0\]\.description must be a string/)
    expect(index.size).toBe(0)
    expectInvalidArg(() => index.remove([1 as never]), /names\[0\]/)
    expectInvalidArg(() => index.search(5 as never), /query must be a string/)
    expectInvalidArg(() => index.search('x', { topK: -1 }), /topK/)
    expectInvalidArg(() => index.search('x', { topK: 1.5 }), /topK/)
    expectInvalidArg(() => index.search('x', { minScore: 2 }), /minScore/)
    expectInvalidArg(() => index.search('x', { minScore: Number.NaN }), /minScore/)
  })
})

describe('ToolIndex: semantic signal (static embeddings)', () => {
  const weather: IndexedTool = { name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }
  // Shares no word (nor synonym) with the tool: found by the embedding alone.
  const paraphrase = 'will it rain tomorrow'

  it('is on by default: omitted, undefined and null all mean on; false turns it off', () => {
    const on = [undefined, {}, { semantic: undefined }, { semantic: null as never }, { semantic: true }]
    for (const options of on) expect(names(indexOf([...tools, weather], options), paraphrase)).toEqual(['weather:get_forecast'])
    expect(names(indexOf([...tools, weather], { semantic: false }), paraphrase)).toEqual([])
    expectInvalidArg(() => new ToolIndex({ semantic: 'yes' as never }), /options/)
  })

  it('a tool found by the embedding alone scores low, and passes the same filters', () => {
    const index = indexOf([...tools, weather])
    const [hit] = index.search(paraphrase)
    expect(hit.score).toBeGreaterThan(0)
    expect(hit.score).toBeLessThanOrEqual(0.035)
    expect(names(index, paraphrase, { appIds: ['github'] })).toEqual([])
    expect(names(index, paraphrase, { appIds: ['weather'] })).toEqual(['weather:get_forecast'])
    expect(names(index, paraphrase, { tags: ['write'] })).toEqual([])
    expect(names(index, paraphrase, { sources: ['inline'] })).toEqual([])
    expect(names(index, paraphrase, { minScore: 0.04 })).toEqual([])
    index.remove(['weather:get_forecast'])
    expect(names(index, paraphrase)).toEqual([])
  })

  it('reads the title (or annotations.title) and the input properties\' descriptions', () => {
    const bare = { name: 'fc', description: '' }
    const titled = { ...bare, title: 'Weather forecast' } as IndexedTool
    const annotated = { ...bare, annotations: { title: 'Weather forecast' } } as IndexedTool
    const described: IndexedTool = {
      ...bare,
      inputSchema: { type: 'object', properties: { city: { type: 'string', description: 'City to get the weather forecast for' } } },
    }
    expect(names(indexOf([bare]), paraphrase)).toEqual([])
    for (const t of [titled, annotated, described]) expect(names(indexOf([t]), paraphrase)).toEqual(['fc'])
    // Not strings: ignored, not refused.
    expect(names(indexOf([{ ...bare, title: 7 } as unknown as IndexedTool]), paraphrase)).toEqual([])
  })

  // On Windows the table is compiled in.
  it.skipIf(process.platform === 'win32')('without its table (a .node copied away from it): lexical search, and one warning per process', () => {
    // A fresh Node process: the table is read once per process.
    const script = `
      const { ToolIndex, CodeCall } = require(${JSON.stringify(join(__dirname, '..', 'index.js'))})
      const warnings = []
      process.on('warning', (w) => warnings.push({ code: w.code, message: w.message }))
      const tools = [{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' }]
      const a = new ToolIndex(); a.upsert(tools)
      const b = new ToolIndex(); b.upsert(tools)
      new CodeCall().dispose()
      new ToolIndex({ semantic: false })
      const out = { paraphrase: a.search('will it rain tomorrow').map((h) => h.name), word: b.search('forecast').map((h) => h.name) }
      setImmediate(() => console.log(JSON.stringify({ ...out, warnings })))
    `
    for (const path of [join(__dirname, 'no-such-table.bin'), __filename]) {
      const stdout = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CODECALL_EMBEDDINGS_PATH: path } })
      const out = JSON.parse(stdout)
      expect(out.paraphrase).toEqual([])
      expect(out.word).toEqual(['weather:get_forecast'])
      expect(out.warnings).toHaveLength(1)
      expect(out.warnings[0].code).toBe('CODECALL_NO_EMBEDDINGS')
      expect(out.warnings[0].message).toContain(path)
    }
  })

  it('unrelated queries still return []', () => {
    const index = indexOf([...tools, weather])
    for (const q of ['bake a chocolate cake', 'what is the capital of France', 'tips for growing tomatoes on a balcony']) {
      expect(index.search(q)).toEqual([])
    }
  })

  describe('on the benchmark corpus (bench/search)', () => {
    const corpus = JSON.parse(readFileSync(join(__dirname, '..', 'bench', 'search', 'corpus.json'), 'utf8'))
    const real = corpus.tools.map((t: { appId: string; name: string; title?: string; annotations?: { title?: string } }) => ({
      ...t,
      name: `${t.appId}:${t.name}`,
      title: t.title ?? t.annotations?.title,
    })) as IndexedTool[]
    const lexical = indexOf(real, { semantic: false })
    const semantic = indexOf(real)

    it('a paraphrase from the tune half: rank 3 lexically (the old ranking), 1 with the semantic signal', () => {
      const q = 'resolve sentry isssue CHECKOUT-1A2'
      expect(lexical.search(q, { topK: 3 }).map((h) => [h.name, h.score])).toEqual([
        ['sentry:analyze_issue_with_seer', 0.262],
        ['sentry:search_issues', 0.2582],
        ['sentry:update_issue', 0.2559],
      ])
      expect(names(semantic, q)[0]).toBe('sentry:update_issue')
    })

    it('unrelated queries still return []', () => {
      for (const q of ['bake a chocolate cake', 'tips for growing tomatoes on a balcony']) {
        expect(lexical.search(q)).toEqual([])
        expect(semantic.search(q)).toEqual([])
      }
    })
  })
})
