// Tool search benchmark: quality on real MCP tools, then latency, scale and memory.
//
//   node bench/search/run.mjs            # everything (needs `npm run build` first)
//   node bench/search/run.mjs --quality  # quality tables only
//   node bench/search/run.mjs --scale    # latency / scale / memory only
//   node bench/search/run.mjs --model    # the sentence model's costs: query latency on/off, time to
//                                        # ready() (cold and cached), search before ready, RSS
//   node bench/search/run.mjs --quality --corpus 2  # the same on the second corpus (corpus2.json,
//                                        # queries2.json): held out, never tuned on
//   node bench/search/run.mjs --quality --large  # with the opt-in large model (all-mpnet-base-v2;
//                                        # its file from @codecall/native-data-large or
//                                        # CODECALL_EMBEDDINGS_LARGE_PATH); also with --model
//
// Quality: every query of queries.json runs against ToolIndex (this package), TF-IDF cosine over
// name + description (FrontMCP's default) and plain BM25 over name + description, all on the same
// corpus (corpus.json: real tools/list answers of MCP servers from npm) with the same appIds
// filters, in one run. A query's `expected` tools are its acceptable answers:
//   recall@k = share of queries with an expected tool in the top k;
//   MRR@10   = mean of 1 / rank of the first expected tool in the top 10 (0 if none).
// Queries alternate tune / test by position (even index: tune, odd: test). Only the tune half was
// looked at while tuning weights, the synonym table and the semantic fusion (w, τ, κ, γ in src/search/score.rs); the test half
// is reported separately.
//
// ToolIndex runs with its defaults (semantic signal on: the all-MiniLM-L6-v2 sentence model, int8,
// run by the addon, fused with BM25F) and with `semantic: false` (the lexical index alone);
// `--semantic` prints only that comparison, by half and query style. Tools are embedded on
// background threads after `upsert` and search is lexical until every tool has its vector, so
// every semantic measurement first awaits `ready()`.
//
// `--corpus 2` reads corpus2.json and queries2.json instead: other MCP servers from npm, collected the
// same way, with queries written before any search ran on them (see README.md). Nothing is tuned on
// it, so it has no tune / test halves: all its queries are reported together, and `--misses` prints
// nothing for it.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { Bm25, TfIdfCosine, tokenize } from './baselines.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const args = new Set(process.argv.slice(2))
const corpusArg = process.argv.slice(2).find((a, i, all) => a.startsWith('--corpus=') || all[i - 1] === '--corpus')
const corpusId = corpusArg ? corpusArg.replace(/^--corpus=/, '') : '1'
if (corpusId !== '1' && corpusId !== '2') throw new Error(`--corpus must be 1 or 2, not ${corpusId}`)
/** The second corpus is held out: no tune / test halves, no misses printed. */
const heldOut = corpusId === '2'
const modelId = args.has('--large') ? 'large' : 'default'
/** The ToolIndex options that choose the sentence model (`--large`). */
const modelOptions = modelId === 'large' ? { model: 'large' } : {}
const modelName = modelId === 'large' ? 'all-mpnet-base-v2' : 'all-MiniLM-L6-v2'
const suffix = heldOut ? '2' : ''
// The ready-child loads the addon itself (it measures RSS before loading it).
const { ToolIndex } = args.has('--ready-child') ? {} : require('../../index.js')

const corpus = JSON.parse(readFileSync(join(here, `corpus${suffix}.json`), 'utf8'))
const queries = JSON.parse(readFileSync(join(here, `queries${suffix}.json`), 'utf8')).queries

/**
 * Corpus tools as indexed: names made unique by their server (`<appId>:<name>`, as the gateway does).
 * `title` (MCP `title`, else `annotations.title`) is read by ToolIndex's semantic signal only (the
 * model embeds `<appId>: <name words>. <title>. <description>. <property names>`); the baselines
 * read name + description. `server` is the server's own words (its `initialize` result's
 * `serverInfo.title` / `serverInfo.description` and `instructions`, kept on its entry in
 * `corpus.servers`), as the gateway passes them.
 */
const serverWords = new Map(
  corpus.servers.map((s) => {
    const words = { title: s.serverInfo?.title, description: s.serverInfo?.description, instructions: s.instructions }
    for (const k of Object.keys(words)) if (typeof words[k] !== 'string') delete words[k]
    return [s.appId, Object.keys(words).length ? words : undefined]
  }),
)
const tools = corpus.tools.map((t) => ({
  name: `${t.appId}:${t.name}`,
  appId: t.appId,
  ...((t.title ?? t.annotations?.title) ? { title: t.title ?? t.annotations?.title } : {}),
  description: t.description ?? '',
  inputSchema: t.inputSchema,
  ...(serverWords.get(t.appId) ? { server: serverWords.get(t.appId) } : {}),
}))
const byName = new Map(tools.map((t) => [t.name, t]))

function checkQueries() {
  const problems = []
  for (const [i, q] of queries.entries()) {
    if (!q.query || !Array.isArray(q.expected) || q.expected.length < 1 || q.expected.length > 3) problems.push(`#${i}: needs a query and 1-3 expected tools`)
    for (const e of q.expected ?? []) if (!byName.has(e)) problems.push(`#${i}: unknown tool ${e}`)
    for (const a of q.appIds ?? []) if (!corpus.servers.some((s) => s.appId === a)) problems.push(`#${i}: unknown appId ${a}`)
  }
  if (problems.length) throw new Error(`queries${suffix}.json:\n${problems.join('\n')}`)
}

/** Does the query share a word (same tokenizer as the baselines) with an expected tool's own name? */
function sharesNameWord(q) {
  const words = new Set(tokenize(q.query))
  return q.expected.some((e) => tokenize(e.slice(e.indexOf(':') + 1)).some((w) => words.has(w)))
}

function evaluate(system, list) {
  let r1 = 0
  let r5 = 0
  let mrr = 0
  const misses = []
  for (const q of list) {
    const hits = system.search(q.query, { topK: 10, ...(q.appIds ? { appIds: q.appIds } : {}) })
    const rank = hits.findIndex((h) => q.expected.includes(h.name)) + 1
    if (rank === 1) r1++
    if (rank >= 1 && rank <= 5) r5++
    if (rank >= 1) mrr += 1 / rank
    if (rank !== 1) misses.push({ query: q.query, expected: q.expected, rank, got: hits.slice(0, 3).map((h) => h.name) })
  }
  const n = list.length || 1
  return { n: list.length, recall1: r1 / n, recall5: r5 / n, mrr10: mrr / n, misses }
}

/** A ToolIndex of the corpus once every tool has its vector (at once with `semantic: false`). */
async function ours(options, list = tools) {
  const index = new ToolIndex({ ...modelOptions, ...options })
  index.upsert(list)
  await index.ready()
  return index
}

async function quality() {
  checkQueries()
  const systems = [
    [modelId === 'large' ? 'ToolIndex (this package, model: large)' : 'ToolIndex (this package)', await ours()],
    ['ToolIndex, semantic off', await ours({ semantic: false })],
    ['ToolIndex, synonyms off', await ours({ synonyms: false })],
    ['ToolIndex, fuzzy off', await ours({ fuzzy: false })],
    ['TF-IDF cosine (name + description)', new TfIdfCosine(tools)],
    ['BM25 (name + description)', new Bm25(tools)],
  ]
  const tune = queries.filter((_, i) => i % 2 === 0)
  const test = queries.filter((_, i) => i % 2 === 1)
  const kinds = [
    ...(heldOut
      ? [['all (held out: never tuned on)', queries]]
      : [
          ['test half', test],
          ['tune half', tune],
          ['all', queries],
        ]),
    ['no word shared with the name', queries.filter((q) => !sharesNameWord(q))],
    ['with a typo', queries.filter((q) => q.tags?.includes('typo'))],
    ['with an appIds filter', queries.filter((q) => q.appIds)],
  ]
  const servers = new Set(tools.map((t) => t.appId)).size
  const n = kinds.length
  console.log(`## Quality: ${tools.length} tools from ${servers} MCP servers, ${queries.length} queries (corpus${suffix}.json, queries${suffix}.json)`)
  console.log(
    `(${kinds[n - 3][1].length} share no word with the right tool's name, ${kinds[n - 2][1].length} have typos, ${kinds[n - 1][1].length} use appIds)\n`,
  )
  const results = {}
  for (const [label, list] of kinds) {
    console.log(`### ${label} (${list.length} queries)\n`)
    console.log('| system | recall@1 | recall@5 | MRR@10 |')
    console.log('|---|---:|---:|---:|')
    for (const [name, system] of systems) {
      const r = evaluate(system, list)
      results[`${label}/${name}`] = r
      console.log(`| ${name} | ${r.recall1.toFixed(3)} | ${r.recall5.toFixed(3)} | ${r.mrr10.toFixed(3)} |`)
    }
    console.log()
  }
  semanticByStyle(systems.slice(0, 2), halves(tune, test))
  if (args.has('--misses') && !heldOut) {
    // Tuning looks at the tune half only.
    for (const m of results[`tune half/${systems[0][0]}`].misses) console.log(JSON.stringify(m))
  }
  return results
}

/** The halves reported by query style: test and tune, or all the queries of the held-out corpus. */
function halves(tune, test) {
  return heldOut
    ? [['held out', queries]]
    : [
        ['test', test],
        ['tune', tune],
      ]
}

/** ToolIndex with and without the semantic signal, per half and query style. */
function semanticByStyle(systems, halfLists) {
  const styles = [
    ['all', () => true],
    ['paraphrase (tag)', (q) => q.tags?.includes('paraphrase')],
    ['no word shared with the name', (q) => !sharesNameWord(q)],
    ['typo (tag)', (q) => q.tags?.includes('typo')],
    ['exact (tag)', (q) => q.tags?.includes('exact')],
    ['appIds filter', (q) => Boolean(q.appIds)],
  ]
  console.log('### ToolIndex: semantic signal on (default) vs off, by half and query style\n')
  console.log('| half | style | n | on: recall@1 | on: recall@5 | on: MRR@10 | off: recall@1 | off: recall@5 | off: MRR@10 |')
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const [half, list] of halfLists) {
    for (const [style, keep] of styles) {
      const qs = list.filter(keep)
      const [on, off] = systems.map(([, system]) => evaluate(system, qs))
      const f = (r) => `${r.recall1.toFixed(3)} | ${r.recall5.toFixed(3)} | ${r.mrr10.toFixed(3)}`
      console.log(`| ${half} | ${style} | ${qs.length} | ${f(on)} | ${f(off)} |`)
    }
  }
  console.log()
}

/** `n` tools made from the corpus: copy k of tool t is `<appId>k:<name>` in app `<appId>k`. */
function scaled(n) {
  return Array.from({ length: n }, (_, i) => {
    const t = tools[i % tools.length]
    const copy = Math.floor(i / tools.length)
    const appId = copy ? `${t.appId}${copy}` : t.appId
    return { ...t, appId, name: `${appId}:${t.name.slice(t.name.indexOf(':') + 1)}` }
  })
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]
const ms = (ns) => Number(ns) / 1e6

function timeQueries(system, rounds) {
  const times = []
  for (let r = 0; r < rounds; r++) {
    for (const q of queries) {
      const t0 = process.hrtime.bigint()
      system.search(q.query, { topK: 8, ...(q.appIds ? { appIds: q.appIds } : {}) })
      times.push(Number(process.hrtime.bigint() - t0) / 1e3)
    }
  }
  return times
}

async function scale() {
  console.log('## Latency and scale\n')
  console.log('(index build: upsert + the first search, which commits the batch; with the semantic signal on, the')
  console.log('tools are embedded afterwards on background threads: see --model for the time to ready())\n')
  console.log('| tools | system | index build (median of 5) | query p50 | query p99 |')
  console.log('|---:|---|---:|---:|---:|')
  for (const n of [1000, 10000]) {
    const list = scaled(n)
    const builds = { ours: [], lexical: [], tfidf: [], bm25: [] }
    let index
    let lexical
    for (let i = 0; i < 5; i++) {
      index?.clear() // drops the previous round's queued embedding jobs
      let t0 = process.hrtime.bigint()
      index = new ToolIndex()
      index.upsert(list)
      index.search('warm up the commit') // the first search commits the batch: part of indexing
      builds.ours.push(ms(process.hrtime.bigint() - t0))
      t0 = process.hrtime.bigint()
      lexical = new ToolIndex({ semantic: false })
      lexical.upsert(list)
      lexical.search('warm up the commit')
      builds.lexical.push(ms(process.hrtime.bigint() - t0))
      t0 = process.hrtime.bigint()
      new TfIdfCosine(list)
      builds.tfidf.push(ms(process.hrtime.bigint() - t0))
      t0 = process.hrtime.bigint()
      new Bm25(list)
      builds.bm25.push(ms(process.hrtime.bigint() - t0))
    }
    // Queries are timed with the semantic signal in use: every tool has its vector.
    await index.ready()
    const rounds = n >= 10000 ? 10 : 40
    const rows = [
      ['ToolIndex', index, builds.ours],
      ['ToolIndex, semantic off', lexical, builds.lexical],
      ['TF-IDF cosine (JS)', new TfIdfCosine(list), builds.tfidf],
      ['BM25 (JS)', new Bm25(list), builds.bm25],
    ]
    for (const [name, system, b] of rows) {
      timeQueries(system, 2) // warm up
      const t = timeQueries(system, rounds)
      console.log(`| ${n} | ${name} | ${median(b).toFixed(1)} ms | ${median(t).toFixed(0)} µs | ${pct(t, 99).toFixed(0)} µs |`)
    }
  }
  const mem = child('--memory-child', '10000')
  const memOff = child('--memory-child', '10000', '--semantic-off')
  console.log(
    `\nMemory of a 10 000-tool ToolIndex (RSS growth in a fresh process, after ready() and GC; includes the model, ~23 MB): ${mem.rssMiB.toFixed(1)} MiB (semantic off: ${memOff.rssMiB.toFixed(1)} MiB)`,
  )
  // The model file is read and parsed once per process (on a background thread from the first
  // `new ToolIndex`; the first upsert waits for it).
  const first = Array.from({ length: 5 }, () => child('--first-use-child'))
  const f = (k) => median(first.map((r) => r[k])).toFixed(2)
  console.log(
    `First use in a fresh process (median of 5): new ToolIndex + upsert(1 tool) + search: ${f('on')} ms (semantic off: ${f('off')} ms); model read + parse ≈ the difference`,
  )
}

const child = (...a) =>
  JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...a, '--corpus', corpusId, ...(modelId === 'large' ? ['--large'] : [])], { encoding: 'utf8', maxBuffer: 64 << 20 }),
  )

/** The sentence model's costs: query latency with it on and off, time to `ready()`, search before it, memory. */
async function model() {
  console.log(`## The sentence model (${modelName}, int8): ${tools.length} corpus tools, ${queries.length} queries\n`)
  const threads = process.env.CODECALL_EMBED_THREADS ? ` (CODECALL_EMBED_THREADS=${process.env.CODECALL_EMBED_THREADS})` : ''
  console.log(`Machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}${threads}\n`)

  // Time to ready(), cold: a fresh process, nothing cached (the model itself is read there too).
  const cold = child('--ready-child')
  console.log('| measure | value |')
  console.log('|---|---:|')
  console.log(`| upsert(${tools.length}) → ready(), cold (fresh process, nothing cached) | ${(cold.readyMs / 1000).toFixed(2)} s (upsert itself ${cold.upsertMs.toFixed(0)} ms) |`)
  console.log(`| same tools, a second index in that process (memory cache) | ${cold.secondMs.toFixed(1)} ms |`)
  console.log(`| RSS of that process after ready() | ${cold.rssMiB.toFixed(0)} MiB (before loading the addon: ${cold.rssStartMiB.toFixed(0)} MiB) |`)

  // The first search right after upsert of 1 000 tools: lexical, while the vectors are computed.
  const firsts = Array.from({ length: 5 }, () => child('--first-search-child', '1000'))
  const fs = (k) => median(firsts.map((r) => r[k]))
  console.log(
    `| first search right after upsert(1 000), while embedding (median of 5 fresh processes) | ${fs('searchMs').toFixed(1)} ms (upsert ${fs('upsertMs').toFixed(0)} ms; semantic off: ${fs('offSearchMs').toFixed(1)} ms) |`,
  )
  console.log(`| … later searches while embedding (median of 20, same processes) | ${fs('laterMs').toFixed(2)} ms |`)

  // Query latency after ready(): all queries × 5 rounds, semantic on vs off (this process).
  const on = await ours()
  const off = await ours({ semantic: false })
  timeQueries(on, 1) // warm up
  timeQueries(off, 1)
  const tOn = timeQueries(on, 5)
  const tOff = timeQueries(off, 5)
  const row = (label, t) => `| query latency, ${label} (${t.length} searches, after ready()) | p50 ${(median(t) / 1000).toFixed(2)} ms, p95 ${(pct(t, 95) / 1000).toFixed(2)} ms |`
  console.log(row('semantic on', tOn))
  console.log(row('semantic off', tOff))
  // The same queries never seen before (a query's vector is cached per process): each with a
  // word of its own, so every search embeds its query.
  const fresh = []
  for (const [i, q] of queries.entries()) {
    const t0 = process.hrtime.bigint()
    on.search(`${q.query} ${['please', 'now', 'quickly', 'today'][i % 4]} ${i}`, { topK: 10 })
    fresh.push(Number(process.hrtime.bigint() - t0) / 1000)
  }
  console.log(row('semantic on, each query new (its embedding included)', fresh))
  console.log()
}

/** Fresh process: upsert the corpus, time to ready(); then a second index of the same tools. */
async function readyChild() {
  const rssStart = process.memoryUsage().rss
  const { ToolIndex: Index } = require('../../index.js')
  let t0 = process.hrtime.bigint()
  const index = new Index(modelOptions)
  index.upsert(tools)
  const upsertMs = ms(process.hrtime.bigint() - t0)
  await index.ready()
  const readyMs = ms(process.hrtime.bigint() - t0)
  t0 = process.hrtime.bigint()
  const second = new Index(modelOptions)
  second.upsert(tools)
  await second.ready()
  const secondMs = ms(process.hrtime.bigint() - t0)
  second.search('create an issue')
  globalThis.gc()
  process.stdout.write(
    JSON.stringify({ upsertMs, readyMs, secondMs, rssMiB: process.memoryUsage().rss / 2 ** 20, rssStartMiB: rssStart / 2 ** 20 }),
  )
}

/** Fresh process: upsert `n` tools, then search at once (lexical: vectors are still being computed). */
function firstSearchChild(n) {
  const list = scaled(n)
  const off = new ToolIndex({ semantic: false })
  off.upsert(list)
  let t0 = process.hrtime.bigint()
  off.search('create an issue')
  const offSearchMs = ms(process.hrtime.bigint() - t0)
  t0 = process.hrtime.bigint()
  const index = new ToolIndex(modelOptions)
  index.upsert(list)
  const upsertMs = ms(process.hrtime.bigint() - t0)
  t0 = process.hrtime.bigint()
  index.search('create an issue')
  const searchMs = ms(process.hrtime.bigint() - t0)
  const later = []
  for (const q of queries.slice(0, 20)) {
    t0 = process.hrtime.bigint()
    index.search(q.query)
    later.push(ms(process.hrtime.bigint() - t0))
  }
  // Exits without waiting for the vectors.
  process.stdout.write(JSON.stringify({ upsertMs, searchMs, offSearchMs, laterMs: median(later) }))
}

function firstUseChild() {
  const run = (options) => {
    const t0 = process.hrtime.bigint()
    const index = new ToolIndex(options)
    index.upsert([tools[0]])
    index.search('list issues')
    return ms(process.hrtime.bigint() - t0)
  }
  const off = run({ semantic: false }) // pays the addon's own first-use costs
  const on = run()
  process.stdout.write(JSON.stringify({ off: run({ semantic: false }), on, offFirst: off }))
}

async function memoryChild(n, options) {
  const list = scaled(n)
  globalThis.gc()
  const before = process.memoryUsage().rss
  const index = new ToolIndex(options)
  index.upsert(list)
  await index.ready()
  index.search('list issues')
  globalThis.gc()
  const after = process.memoryUsage().rss
  process.stdout.write(JSON.stringify({ rssMiB: (after - before) / 2 ** 20, size: index.size }))
}

if (args.has('--memory-child')) {
  await memoryChild(Number(process.argv[process.argv.indexOf('--memory-child') + 1]), args.has('--semantic-off') ? { semantic: false } : undefined)
} else if (args.has('--first-use-child')) {
  firstUseChild()
} else if (args.has('--ready-child')) {
  await readyChild()
} else if (args.has('--first-search-child')) {
  firstSearchChild(Number(process.argv[process.argv.indexOf('--first-search-child') + 1]))
} else if (args.has('--semantic')) {
  checkQueries()
  semanticByStyle(
    [
      ['on', await ours()],
      ['off', await ours({ semantic: false })],
    ],
    halves(
      queries.filter((_, i) => i % 2 === 0),
      queries.filter((_, i) => i % 2 === 1),
    ),
  )
} else {
  const all = !args.has('--quality') && !args.has('--scale') && !args.has('--model')
  if (all || args.has('--quality')) await quality()
  if (all || args.has('--model')) await model()
  if (all || args.has('--scale')) await scale()
}
