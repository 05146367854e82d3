// Dumps the current lexical (ToolIndex / BM25F) ranking of every benchmark query, for the fusion
// experiments of evaluate.py. Same corpus, tool ids (`<appId>:<name>`) and appIds filters as
// bench/search/run.mjs. Needs the built addon (`npm run build`).
//
//   node scripts/embeddings/lexical-ranks.mjs [out.json] [--queries extra.json]
//
// Output: { queries: [{ query, appIds, hits: [{ name, score }] }] }, top 50 hits per query, in the
// order of queries.json followed by the extra queries (a JSON array of strings, run unfiltered).
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const bench = join(here, '..', '..', 'bench', 'search')
const require = createRequire(import.meta.url)
const { ToolIndex } = require(join(here, '..', '..', 'index.js'))

const args = process.argv.slice(2)
const extraAt = args.indexOf('--queries')
const extra = extraAt >= 0 ? JSON.parse(readFileSync(args[extraAt + 1], 'utf8')) : []
const out = args.find((a, i) => !a.startsWith('--') && (extraAt < 0 || i !== extraAt + 1)) ?? '/tmp/emb/lexical.json'

const corpus = JSON.parse(readFileSync(join(bench, 'corpus.json'), 'utf8'))
const queries = JSON.parse(readFileSync(join(bench, 'queries.json'), 'utf8')).queries
const tools = corpus.tools.map((t) => ({
  name: `${t.appId}:${t.name}`,
  appId: t.appId,
  description: t.description ?? '',
  inputSchema: t.inputSchema,
}))
const index = new ToolIndex()
index.upsert(tools)

const all = [...queries.map((q) => ({ query: q.query, appIds: q.appIds ?? null })), ...extra.map((q) => ({ query: q, appIds: null }))]
const result = all.map(({ query, appIds }) => ({
  query,
  appIds,
  hits: index.search(query, { topK: 50, ...(appIds ? { appIds } : {}) }).map((h) => ({ name: h.name, score: h.score })),
}))
writeFileSync(out, JSON.stringify({ queries: result }, null, 1))
console.log(`${result.length} queries -> ${out}`)
