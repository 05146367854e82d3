// The two baselines the quality benchmark compares ToolIndex with, implemented here so that all
// three run on the same corpus, queries and filters in one process:
//  - TfIdfCosine: TF-IDF vectors over name + description, cosine similarity (FrontMCP's default
//    strategy, `tfidf`).
//  - Bm25: Okapi BM25 (k1 = 1.2, b = 0.75) over name + description as one field; no stemming,
//    synonyms or typo tolerance ("plain keyword matching", done well).
// Both tokenize alike: split on anything not a letter or digit and at camelCase boundaries,
// lowercase, drop English stop words.

const STOP = new Set(
  ('a about after all also am an and any are as at be been being but by can could did do does doing each etc for from ' +
    'had has have having he her here hers him his how i if in into is it its itself just let lets me might must my need ' +
    'needs of on or our ours please shall she should so some such than that the their theirs them then there these they ' +
    'this those to tool tools us via want was we were what when where which while who whom whose why will with would you your yours').split(' '),
)

export function tokenize(text) {
  return (text ?? '')
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w && !STOP.has(w))
}

function filterOk(tool, options) {
  return !options?.appIds?.length || options.appIds.includes(tool.appId)
}

function rank(scored, topK) {
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, topK)
}

export class TfIdfCosine {
  constructor(tools) {
    this.tools = tools
    const df = new Map()
    const docs = tools.map((t) => {
      const tf = new Map()
      for (const w of tokenize(`${t.name} ${t.description ?? ''}`)) tf.set(w, (tf.get(w) ?? 0) + 1)
      for (const w of tf.keys()) df.set(w, (df.get(w) ?? 0) + 1)
      return tf
    })
    this.idf = new Map([...df].map(([w, n]) => [w, Math.log(tools.length / n) + 1]))
    this.vectors = docs.map((tf) => {
      const v = new Map()
      let norm = 0
      for (const [w, n] of tf) {
        const x = n * this.idf.get(w)
        v.set(w, x)
        norm += x * x
      }
      return { v, norm: Math.sqrt(norm) }
    })
  }

  search(query, options = {}) {
    const tf = new Map()
    for (const w of tokenize(query)) if (this.idf.has(w)) tf.set(w, (tf.get(w) ?? 0) + 1)
    let qnorm = 0
    const q = new Map()
    for (const [w, n] of tf) {
      const x = n * this.idf.get(w)
      q.set(w, x)
      qnorm += x * x
    }
    qnorm = Math.sqrt(qnorm)
    if (!qnorm) return []
    const scored = []
    this.tools.forEach((t, i) => {
      if (!filterOk(t, options)) return
      const { v, norm } = this.vectors[i]
      let dot = 0
      for (const [w, x] of q) dot += x * (v.get(w) ?? 0)
      if (dot > 0) scored.push({ name: t.name, score: dot / (qnorm * norm) })
    })
    return rank(scored, options.topK ?? 10)
  }
}

export class Bm25 {
  constructor(tools, { k1 = 1.2, b = 0.75 } = {}) {
    this.tools = tools
    this.k1 = k1
    this.b = b
    this.postings = new Map() // word -> [docIndex, tf][]
    this.lengths = []
    tools.forEach((t, i) => {
      const words = tokenize(`${t.name} ${t.description ?? ''}`)
      this.lengths.push(words.length)
      const tf = new Map()
      for (const w of words) tf.set(w, (tf.get(w) ?? 0) + 1)
      for (const [w, n] of tf) {
        if (!this.postings.has(w)) this.postings.set(w, [])
        this.postings.get(w).push([i, n])
      }
    })
    this.avg = this.lengths.reduce((a, b) => a + b, 0) / Math.max(1, tools.length)
  }

  search(query, options = {}) {
    const n = this.tools.length
    const scores = new Map()
    for (const w of new Set(tokenize(query))) {
      const list = this.postings.get(w)
      if (!list) continue
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5))
      for (const [i, tf] of list) {
        const norm = tf + this.k1 * (1 - this.b + (this.b * this.lengths[i]) / this.avg)
        scores.set(i, (scores.get(i) ?? 0) + (idf * tf * (this.k1 + 1)) / norm)
      }
    }
    const scored = []
    for (const [i, score] of scores) if (filterOk(this.tools[i], options)) scored.push({ name: this.tools[i].name, score })
    return rank(scored, options.topK ?? 10)
  }
}
