// Validation time, @codecall/native (oxc) side by side with acorn + acorn-walk applying the same
// rules. Run: `npm run bench:validate` (after `npm run build`). Prints a Markdown table of medians.
import { createRequire } from 'node:module'

import { acornValidate } from './acorn-validator.mjs'
import { realisticScript } from './scripts.mjs'

const require = createRequire(import.meta.url)
const { validate } = require('..')

function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** Median µs per call over `rounds` rounds of `batch` calls, after a warm-up. */
function measure(fn, script, { rounds = 31, batch } = {}) {
  for (let i = 0; i < batch * 3; i++) fn(script)
  const samples = []
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < batch; i++) fn(script)
    samples.push(Number(process.hrtime.bigint() - t0) / 1e3 / batch)
  }
  return median(samples)
}

const sizes = [
  ['1 KB', 1_024, 2_000],
  ['10 KB', 10_240, 300],
  ['100 KB', 100_000, 30],
]

const rows = []
for (const [label, bytes, batch] of sizes) {
  const script = realisticScript(bytes)
  const ours = validate(script, { maxScriptBytes: 1_000_000 })
  const theirs = acornValidate(script)
  if (!ours.ok || !theirs.ok || JSON.stringify(ours.toolNames) !== JSON.stringify(theirs.toolNames)) {
    throw new Error(`validators disagree on the ${label} script: ${JSON.stringify(ours)} vs ${JSON.stringify(theirs)}`)
  }
  const native = measure((s) => validate(s, { maxScriptBytes: 1_000_000 }), script, { batch })
  const acorn = measure(acornValidate, script, { batch })
  rows.push({ label, bytes: script.length, native, acorn, ratio: acorn / native })
}

console.log(`node ${process.version}, ${process.platform}-${process.arch}; median µs per validation (lower is better)\n`)
console.log('| script | bytes | @codecall/native (oxc) | acorn + acorn-walk | speed-up |')
console.log('|---|---:|---:|---:|---:|')
for (const r of rows) {
  console.log(`| ${r.label} | ${r.bytes} | ${r.native.toFixed(1)} µs | ${r.acorn.toFixed(1)} µs | ${r.ratio.toFixed(1)}× |`)
}
