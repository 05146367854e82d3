import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'

import { beforeAll, describe, expect, it } from 'vitest'

import { CodeCall, ToolIndex, type IndexedTool, type ToolDefinition } from '../index.js'
import { expectInvalidArg } from './helpers.js'

const root = join(__dirname, '..', 'index.js')

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
/** `indexOf` once every tool has its sentence-model vector (the semantic signal is in use). */
async function readyIndexOf(list: IndexedTool[] = tools, options?: ConstructorParameters<typeof ToolIndex>[0]) {
  const index = indexOf(list, options)
  await index.ready()
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
    // Drops the 10 001 queued embedding jobs: the model's threads are process-wide, and the
    // semantic tests below would wait behind them.
    index.clear()
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


describe('ToolIndex: semantic signal (sentence model)', () => {
  const weather: IndexedTool = { name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }
  // Shares no word (nor synonym) with the tool: found by the model alone.
  const paraphrase = 'will it rain tomorrow'

  it('is on by default: omitted, undefined and null all mean on; false turns it off', async () => {
    const on = [undefined, {}, { semantic: undefined }, { semantic: null as never }, { semantic: true }]
    for (const options of on) expect(names(await readyIndexOf([...tools, weather], options), paraphrase)).toEqual(['weather:get_forecast'])
    expect(names(await readyIndexOf([...tools, weather], { semantic: false }), paraphrase)).toEqual([])
    expectInvalidArg(() => new ToolIndex({ semantic: 'yes' as never }), /options/)
  })

  it('a tool found by the model alone scores below one that shares the words, and passes the same filters', async () => {
    const index = await readyIndexOf([...tools, weather])
    const [hit, ...rest] = index.search(paraphrase)
    expect(rest).toEqual([])
    expect(hit.name).toBe('weather:get_forecast')
    expect(hit.score).toBeGreaterThan(0)
    expect(hit.score).toBeLessThan(index.search('weather forecast')[0].score)
    expect(index.search('weather:get_forecast')[0]).toMatchObject({ name: 'weather:get_forecast', score: 1 })
    expect(names(index, paraphrase, { appIds: ['github'] })).toEqual([])
    expect(names(index, paraphrase, { appIds: ['weather'] })).toEqual(['weather:get_forecast'])
    expect(names(index, paraphrase, { tags: ['write'] })).toEqual([])
    expect(names(index, paraphrase, { sources: ['inline'] })).toEqual([])
    expect(names(index, paraphrase, { minScore: hit.score })).toEqual(['weather:get_forecast'])
    expect(names(index, paraphrase, { minScore: Math.min(1, hit.score + 0.001) })).toEqual([])
    index.remove(['weather:get_forecast'])
    expect(names(index, paraphrase)).toEqual([])
  })

  it('reads the title (or annotations.title); property descriptions no longer count', async () => {
    const bare = { name: 'fc', description: '' }
    const titled = { ...bare, title: 'Weather forecast' } as IndexedTool
    const annotated = { ...bare, annotations: { title: 'Weather forecast' } } as IndexedTool
    expect(names(await readyIndexOf([bare]), paraphrase)).toEqual([])
    for (const t of [titled, annotated]) expect(names(await readyIndexOf([t]), paraphrase)).toEqual(['fc'])
    // `title` wins over `annotations.title`.
    const both = { ...bare, title: 'Weather forecast', annotations: { title: 'Delete a file' } } as IndexedTool
    expect(names(await readyIndexOf([both]), paraphrase)).toEqual(['fc'])
    // Not strings: ignored, not refused.
    for (const t of [{ ...bare, title: 7 }, { ...bare, annotations: { title: ['Weather forecast'] } }, { ...bare, annotations: 'Weather forecast' }]) {
      expect(names(await readyIndexOf([t as unknown as IndexedTool]), paraphrase)).toEqual([])
    }
    // A property's description is not embedded: the same tool without it ranks the same.
    const property = (description?: string): IndexedTool => ({
      ...bare,
      inputSchema: { type: 'object', properties: { city: { type: 'string', ...(description ? { description } : {}) } } },
    })
    const described = await readyIndexOf([property('City to get the weather forecast for')])
    const plain = await readyIndexOf([property()])
    for (const q of [paraphrase, 'weather forecast for a city', 'city']) expect(described.search(q)).toEqual(plain.search(q))
  })

  // On Windows the model file is looked for the same way; the child's environment is what matters.
  it('without its model file (missing, or not a model): lexical search, and one warning per process naming the path', () => {
    // A fresh Node process: the model is read once per process.
    const script = `
      const { ToolIndex, CodeCall } = require(${JSON.stringify(root)})
      const warnings = []
      let step = 'load'
      process.on('warning', (w) => warnings.push({ step, code: w.code, message: w.message }))
      const tick = () => new Promise((resolve) => setImmediate(resolve))
      const tools = [{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' }]
      ;(async () => {
        step = 'construct'
        const a = new ToolIndex()
        await tick()
        step = 'upsert'
        a.upsert(tools)
        await tick()
        step = 'later'
        await a.ready()
        const b = new ToolIndex()
        b.upsert(tools)
        await b.ready()
        const cc = new CodeCall()
        cc.setTools(tools)
        await cc.ready()
        const engine = cc.search({ query: 'will it rain tomorrow' }).tools.map((t) => t.name)
        await cc.dispose()
        new ToolIndex({ semantic: false }).upsert(tools)
        const out = { engine, paraphrase: a.search('will it rain tomorrow').map((h) => h.name), word: b.search('forecast').map((h) => h.name) }
        await tick()
        console.log(JSON.stringify({ ...out, warnings }))
      })()
    `
    // A missing file is known when an index is made; a file that is not a model once it was read
    // (by the first upsert, or already by the background read the constructor starts).
    for (const [path, steps] of [
      [join(__dirname, 'no-such-model.bin'), ['construct']],
      [__filename, ['construct', 'upsert']],
    ] as const) {
      const stdout = execFileSync(process.execPath, ['-e', script], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 30_000,
        env: { ...process.env, CODECALL_EMBEDDINGS_PATH: path },
      })
      const out = JSON.parse(stdout)
      expect(out.paraphrase).toEqual([])
      expect(out.engine).toEqual([])
      expect(out.word).toEqual(['weather:get_forecast'])
      expect(out.warnings).toHaveLength(1)
      expect(out.warnings[0]).toMatchObject({ code: 'CODECALL_NO_EMBEDDINGS' })
      expect(steps).toContain(out.warnings[0].step)
      expect(out.warnings[0].message).toContain(path)
    }
  })

  describe("the opt-in large model (model: 'large')", () => {
    // Fresh Node processes: each model is read once per process. The large model itself (111 MB,
    // the optional package @codecall/native-data-large) is not in this repository; the tiny
    // random MPNet of src/search/model/fixtures/ stands in for it: the same file format and
    // forward pass, so what is checked here is which file an index reads and what it does
    // without it (the rankings of the real one are in BENCHMARKS.md).
    const tiny = join(__dirname, '..', 'src', 'search', 'model', 'fixtures', 'tiny-mpnet.bin')
    const run = (env: Record<string, string>, body: string) => {
      const script = `
        const { ToolIndex, CodeCall } = require(${JSON.stringify(root)})
        const fs = require('node:fs'), os = require('node:os'), path = require('node:path')
        const warnings = []
        process.on('warning', (w) => warnings.push({ code: w.code, message: w.message }))
        const tools = [{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' },
                       { name: 'files:delete_file', description: 'Delete a file from the disk' }]
        const tick = () => new Promise((resolve) => setImmediate(resolve))
        ;(async () => { ${body}; await tick(); console.log(JSON.stringify({ ...out, warnings })) })()
      `
      const { CODECALL_EMBEDDINGS_LARGE_PATH: _, ...rest } = process.env
      return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...rest, ...env } }))
    }

    it('reads its own file, keeps its vectors apart, and ranks with them', () => {
      const out = run({ CODECALL_EMBEDDINGS_LARGE_PATH: tiny }, `
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-large-'))
        const large = new ToolIndex({ model: 'large', cacheDir: dir })
        large.upsert(tools)
        await large.ready()
        const small = new ToolIndex({ model: 'default', cacheDir: dir })
        small.upsert(tools)
        await small.ready()
        const cc = new CodeCall({ search: { model: 'large' } })
        cc.setTools(tools)
        await cc.ready()
        const files = fs.readdirSync(dir).map((f) => fs.statSync(path.join(dir, f)).size).sort((a, b) => a - b)
        var out = { files, large: large.search('forecast'), small: small.search('forecast'),
                    engine: cc.search({ query: 'forecast' }).tools.map((t) => t.name) }
        await cc.dispose()
        fs.rmSync(dir, { recursive: true })
      `)
      expect(out.warnings).toEqual([])
      // One cache file per model: 2 records of a 16-wide vector (the tiny model), 2 of 384.
      const record = (dims: number) => 8 + 4 * dims + 4
      expect(out.files).toEqual([8 + 2 * record(16), 8 + 2 * record(384)])
      expect(out.large.map((h: { name: string }) => h.name)[0]).toBe('weather:get_forecast')
      expect(out.small.map((h: { name: string }) => h.name)[0]).toBe('weather:get_forecast')
      // The same lexical match, fused with another model's cosine.
      expect(out.large[0].score).not.toBe(out.small[0].score)
      expect(out.engine[0]).toBe('weather:get_forecast')
    })

    it('without its file: the default model, and one warning naming where it looked', () => {
      const missing = join(__dirname, 'no-such-large-model.bin')
      const out = run({ CODECALL_EMBEDDINGS_LARGE_PATH: missing }, `
        const a = new ToolIndex({ model: 'large' })
        a.upsert(tools)
        await a.ready()
        const cc = new CodeCall({ search: { model: 'large' } })
        cc.setTools(tools)
        await cc.ready()
        var out = { paraphrase: a.search('will it rain tomorrow').map((h) => h.name),
                    engine: cc.search({ query: 'will it rain tomorrow' }).tools.map((t) => t.name) }
        await cc.dispose()
      `)
      // The default model found the paraphrase: search by meaning still works.
      expect(out.paraphrase[0]).toBe('weather:get_forecast')
      expect(out.engine[0]).toBe('weather:get_forecast')
      expect(out.warnings).toHaveLength(1)
      expect(out.warnings[0].code).toBe('CODECALL_NO_LARGE_MODEL')
      expect(out.warnings[0].message).toContain(missing)
    })

    it("refuses a model it does not know; null or nothing is the default", () => {
      for (const model of ['huge', 'LARGE', '', 3, true, {}]) {
        expectInvalidArg(() => new ToolIndex({ model } as any), /(options|ToolIndexOptions)\.model/)
        expectInvalidArg(() => new CodeCall({ search: { model } } as any), /options\.search\.model/)
      }
      for (const model of [null, undefined, 'default']) {
        const index = new ToolIndex({ model, semantic: false } as any)
        index.upsert(tools)
        expect(index.search('create issue')[0]?.name).toBe('github:create_issue')
      }
    })
  })

  it('unrelated queries still return []', async () => {
    const index = await readyIndexOf([...tools, weather])
    for (const q of ['bake a chocolate cake', 'what is the capital of France', 'tips for growing tomatoes on a balcony', 'xyzzy plugh', 'the of and']) {
      expect(index.search(q)).toEqual([])
    }
  })

  describe('on the benchmark corpus (bench/search)', () => {
    const corpus = JSON.parse(readFileSync(join(__dirname, '..', 'bench', 'search', 'corpus.json'), 'utf8'))
    const queries: { query: string; expected: string[]; appIds?: string[] }[] = JSON.parse(
      readFileSync(join(__dirname, '..', 'bench', 'search', 'queries.json'), 'utf8'),
    ).queries
    const real = corpus.tools.map((t: { appId: string; name: string; title?: string; annotations?: { title?: string } }) => ({
      ...t,
      name: `${t.appId}:${t.name}`,
      title: t.title ?? t.annotations?.title,
    })) as IndexedTool[]
    const lexical = indexOf(real, { semantic: false })
    let semantic: ToolIndex
    // Made here, not when the suite is collected: its 1 138 embedding jobs would queue ahead of
    // every other test's. Cold, embedding the corpus takes tens of seconds on a small machine.
    beforeAll(async () => {
      semantic = await readyIndexOf(real)
    }, 300_000)

    it('semantic: false ranks lexically (a query from the tune half)', () => {
      const q = 'resolve sentry isssue CHECKOUT-1A2'
      expect(lexical.search(q, { topK: 3 }).map((h) => [h.name, h.score])).toEqual([
        ['sentry:analyze_issue_with_seer', 0.262],
        ['sentry:search_issues', 0.2582],
        ['sentry:update_issue', 0.2559],
      ])
    })

    it('a paraphrase from the tune half that the lexical index misses is found with the semantic signal', () => {
      const q = 'convert this local PDF report to markdown'
      expect(names(lexical, q, { topK: 10 })).not.toContain('firecrawl:firecrawl_parse')
      expect(names(semantic, q, { topK: 5 })).toContain('firecrawl:firecrawl_parse')
    })

    it('over all the benchmark queries, the semantic signal ranks at least as well as the lexical index alone (MRR@10)', () => {
      const mrr = (index: ToolIndex) =>
        queries.reduce((sum, q) => {
          const rank = names(index, q.query, { topK: 10, ...(q.appIds ? { appIds: q.appIds } : {}) }).findIndex((n) => q.expected.includes(n)) + 1
          return sum + (rank ? 1 / rank : 0)
        }, 0) / queries.length
      expect(mrr(semantic)).toBeGreaterThanOrEqual(mrr(lexical))
    })

    it('unrelated queries still return []', () => {
      for (const q of ['bake a chocolate cake', 'tips for growing tomatoes on a balcony']) {
        expect(lexical.search(q)).toEqual([])
        expect(semantic.search(q)).toEqual([])
      }
    })
  })
})

describe('ToolIndex: ready()', () => {
  const weather: IndexedTool = { name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }
  const paraphrase = 'will it rain tomorrow'
  /** `n` tools whose texts no other test (or run) embedded: nothing of them is cached. */
  const fresh = (n: number) => {
    const salt = randomUUID()
    return Array.from({ length: n }, (_, i): IndexedTool => ({
      name: `svc${i % 40}:manage_record_${i}`,
      appId: `svc${i % 40}`,
      description: `Manage record ${i} of kind ${salt} in the tracker`,
    }))
  }
  /** Whether `promise` settles within `ms`. */
  const settlesWithin = (promise: Promise<unknown>, ms: number) => {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
    return Promise.race([promise.then(() => true), late]).finally(() => clearTimeout(timer))
  }

  it('takes no arguments and resolves to undefined', async () => {
    const index = new ToolIndex()
    expect(index.ready.length).toBe(0)
    const p = index.ready()
    expect(p).toBeInstanceOf(Promise)
    expect(await p).toBeUndefined()
  })

  it('resolves at once with semantic: false (however many tools) and on an empty index', async () => {
    const off = indexOf(fresh(1000), { semantic: false })
    expect(await settlesWithin(off.ready(), 1_000)).toBe(true)
    expect(await settlesWithin(new ToolIndex().ready(), 1_000)).toBe(true)
    const cleared = indexOf([weather])
    cleared.clear()
    expect(await settlesWithin(cleared.ready(), 1_000)).toBe(true)
  })

  it('called several times at once, every call resolves', async () => {
    const index = indexOf([...fresh(30), weather])
    const calls = Array.from({ length: 10 }, () => index.ready())
    await Promise.all(calls)
    expect(names(index, paraphrase)).toEqual(['weather:get_forecast'])
    // And again, once ready.
    await Promise.all(Array.from({ length: 5 }, () => index.ready()))
  })

  it('search right after upsert of many tools answers at once, lexically; after ready() the model ranks too', async () => {
    const list = [...tools, weather, ...fresh(1000)]
    const index = indexOf([...tools, weather])
    const lexical = indexOf(list, { semantic: false })
    await index.ready()
    expect(names(index, paraphrase)).toEqual(['weather:get_forecast'])
    index.upsert(list)
    // Not every tool has its vector yet: scores are exactly those of semantic: false.
    for (const q of [paraphrase, 'manage record 17', 'create an issue', 'weather forecast']) {
      expect(index.search(q, { topK: 20 })).toEqual(lexical.search(q, { topK: 20 }))
    }
    // Its 1 000 queued jobs are dropped: nothing else waits behind them.
    index.clear()
    await index.ready()
  })

  it('after ready(), a paraphrase that shares no word with the tool is found', async () => {
    const index = indexOf([...tools, weather, ...fresh(20)])
    await index.ready()
    expect(names(index, paraphrase)).toEqual(['weather:get_forecast'])
    expect(names(indexOf([...tools, weather, ...fresh(20)], { semantic: false }), paraphrase)).toEqual([])
  })

  it('remove or clear while vectors are pending still lets ready() resolve, and the index keeps working', async () => {
    const removed = fresh(300)
    const index = indexOf(removed)
    const before = index.ready()
    index.remove(removed.map((t) => t.name))
    expect(index.size).toBe(0)
    await Promise.all([before, index.ready()])

    const cleared = indexOf(fresh(300))
    const pending = cleared.ready()
    cleared.clear()
    await Promise.all([pending, cleared.ready()])
    expect(cleared.size).toBe(0)
    cleared.upsert([...tools, weather])
    await cleared.ready()
    expect(names(cleared, paraphrase)).toEqual(['weather:get_forecast'])
  })

  it('a process that upserts 20 000 tools and exits without awaiting ready() exits without embedding them', () => {
    // Embedding 20 000 tools takes minutes (about 8 s per 1 000 on two cores); the process must
    // leave as soon as its own work is done: the background threads do not keep it alive.
    const script = `
      const { ToolIndex } = require(${JSON.stringify(root)})
      const corpus = require(${JSON.stringify(join(__dirname, '..', 'bench', 'search', 'corpus.json'))})
      const index = new ToolIndex()
      const tools = []
      for (let copy = 0; copy < 18; copy++) for (const t of corpus.tools) tools.push({ ...t, appId: t.appId + copy, name: t.appId + copy + ':' + t.name, description: (t.description ?? '') + ' (copy ' + copy + ')' })
      index.upsert(tools)
      console.log(JSON.stringify({ size: index.size, top: index.search('create an issue on github', { appIds: ['github0'] })[0]?.name }))
    `
    // The timeout is the hang guard, far below what embedding them all would take.
    const stdout = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 90_000 })
    expect(JSON.parse(stdout)).toEqual({ size: 18 * 1138, top: 'github0:create_issue' })
  })

  it('works in a worker thread: upsert, await ready(), search; the worker then ends on its own, or when terminated', async () => {
    const code = `
      const { parentPort, workerData } = require('node:worker_threads')
      const { ToolIndex } = require(workerData.root)
      const index = new ToolIndex()
      index.upsert(workerData.tools)
      if (workerData.wait) index.ready().then(() => parentPort.postMessage(index.search(workerData.query).map((h) => h.name)))
      else parentPort.postMessage('upserted'), setInterval(() => {}, 1_000) // busy until terminated
    `
    const done = new Worker(code, { eval: true, workerData: { root, tools: [...tools, weather, ...fresh(20)], query: paraphrase, wait: true } })
    const exited = once(done, 'exit')
    const [found] = await once(done, 'message')
    expect(found).toEqual(['weather:get_forecast'])
    expect((await exited)[0]).toBe(0)
    // Terminated while its tools are still being embedded (twice at once).
    const busy = [0, 1].map(() => new Worker(code, { eval: true, workerData: { root, tools: fresh(100), wait: false } }))
    await Promise.all(busy.map((w) => once(w, 'message')))
    expect(await Promise.all(busy.map((w) => w.terminate()))).toEqual([1, 1])
    // The model's threads carry on for this thread's indexes.
    expect(names(await readyIndexOf([...tools, weather, ...fresh(5)]), paraphrase)).toEqual(['weather:get_forecast'])
  })

  it('CodeCall.ready(): once it resolves, codecall:search finds a paraphrase; semantic: false resolves at once', async () => {
    const cc = new CodeCall()
    const off = new CodeCall({ search: { semantic: false } })
    try {
      // These IndexedTools have no `examples`: valid ToolDefinitions as they are.
      cc.setTools([weather, ...fresh(20)] as ToolDefinition[])
      off.setTools([weather, ...fresh(20)] as ToolDefinition[])
      expect(cc.ready.length).toBe(0)
      expect(await cc.ready()).toBeUndefined()
      expect(cc.search({ query: paraphrase }).tools.map((t) => t.name)).toEqual(['weather:get_forecast'])
      expect(await settlesWithin(off.ready(), 1_000)).toBe(true)
      expect(off.search({ query: paraphrase }).tools).toEqual([])
    } finally {
      await Promise.all([cc.dispose(), off.dispose()])
    }
  })
})

describe('ToolIndex: cacheDir', () => {
  it('keeps vectors on disk: a second process has them at once (its first search already uses the model)', () => {
    const dir = join(require('node:os').tmpdir(), `codecall-cache-${randomUUID()}`, 'nested')
    const script = `
      const { ToolIndex } = require(${JSON.stringify(root)})
      const index = new ToolIndex({ cacheDir: ${JSON.stringify(dir)} })
      // 400 other tools: cold, embedding them takes far longer than the synchronous first search.
      const fillers = Array.from({ length: 400 }, (_, i) => ({ name: 'inventory:item_' + i, appId: 'inventory', description: 'Count the stock of warehouse item number ' + i + ' and report its shelf' }))
      index.upsert([{ name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' },
                    { name: 'github:create_issue', appId: 'github', description: 'Create a new issue in a GitHub repository' }, ...fillers])
      const before = index.search('will it rain tomorrow').map((h) => h.name)
      index.ready().then(() => console.log(JSON.stringify({ before, after: index.search('will it rain tomorrow').map((h) => h.name) })))
    `
    const run = () => JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 }))
    // Cold: the first search is lexical (the paraphrase shares no word), the model finds it once ready.
    expect(run()).toEqual({ before: [], after: ['weather:get_forecast'] })
    // Warm: the vectors come from the folder, so the index is ready before its first search.
    expect(run()).toEqual({ before: ['weather:get_forecast'], after: ['weather:get_forecast'] })
    const { readdirSync, statSync, rmSync } = require('node:fs')
    const files = readdirSync(dir)
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^embeddings-[0-9a-f]{16}\.vec$/)
    if (process.platform !== 'win32') {
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      expect(statSync(join(dir, files[0])).mode & 0o777).toBe(0o600)
    }
    rmSync(join(dir, '..'), { recursive: true, force: true })
  })

  it('an unusable cacheDir only means vectors are computed again; a bad value is refused', async () => {
    const file = join(require('node:os').tmpdir(), `codecall-cache-file-${randomUUID()}`)
    require('node:fs').writeFileSync(file, 'not a folder')
    const index = new ToolIndex({ cacheDir: join(file, 'sub') })
    index.upsert([{ name: 'weather:get_forecast', appId: 'weather', description: 'Get the weather forecast for a city' }])
    await index.ready()
    expect(names(index, 'will it rain tomorrow')).toEqual(['weather:get_forecast'])
    require('node:fs').rmSync(file)
    for (const cacheDir of [undefined, null]) expect(new ToolIndex({ cacheDir: cacheDir as never }).size).toBe(0)
    expectInvalidArg(() => new ToolIndex({ cacheDir: '' }), /cacheDir/)
    expectInvalidArg(() => new ToolIndex({ cacheDir: 7 as never }), /cacheDir/)
  })
})

describe('CodeCall: the meta-tool search ranks by meaning from the first query', () => {
  it('handle(search) right after setTools waits for the vectors (bounded); search() itself answers at once', async () => {
    const cc = new CodeCall()
    try {
      // Texts no other test embedded (nothing cached): 40 tools take the model a fraction of a
      // second on an idle machine, well inside the 5 s wait even on a loaded one (150 once took
      // longer than 5 s beside two compilers); without the wait the answer is lexical, and this
      // query shares no word with the tool.
      const salt = randomUUID()
      const filler = Array.from({ length: 40 }, (_, i): ToolDefinition => ({
        name: `svc${i % 15}:manage_record_${i}`,
        description: `Manage record ${i} of kind ${salt} in the tracker`,
        inputSchema: { type: 'object' },
      }))
      cc.setTools([{ name: 'weather:get_forecast', description: `Get the weather forecast for a city (${salt})`, inputSchema: { type: 'object' } }, ...filler])
      const now = cc.search({ query: 'will it rain tomorrow' })
      expect(now).not.toBeInstanceOf(Promise)
      const out: any = await cc.handle('codecall:search', { query: 'will it rain tomorrow' }, { callTool: () => null })
      expect(out.tools[0]?.name).toBe('weather:get_forecast')
      // Malformed input is still refused (after the wait, as search() would refuse it).
      await expect(cc.handle('codecall:search', { query: 5 }, { callTool: () => null })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG' })
    } finally {
      await cc.dispose()
    }
  })
})
