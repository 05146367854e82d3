// Runs that outlive a process (issue 42, api.md §12): what the journal costs, and how long a resume
// takes against the number of calls it replays.
//
//   node bench/runs.mjs            # both parts, both isolations (about a minute)
//   node bench/runs.mjs cost       # journaling cost on bench/sandbox.mjs's A and B
//   node bench/runs.mjs resume     # resume time against journaled calls
//
// cost:   workloads A (`return 1 + 1`, p50 ms) and B (1000 sequential `await callTool`, µs per
//         call) of bench/sandbox.mjs, with the host as given (every run that cannot wait for a
//         person: no journal at all) and through a journal (a run that may wait, with a run store:
//         every result recorded, a standing clock, a seeded Math.random).
// resume: a plan makes N tool calls, then one that needs approval; instance 1 answers
//         input_required and keeps the journal in an SQLite run store; instance 2 (its own engine
//         and workers, as another process) resumes it by replaying the N calls. Times the retry on
//         instance 2 (claim + replay + the approved call + the result), p50 of several runs, and
//         the journal's size.
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const require = createRequire(import.meta.url)
const { Sandbox, CodeCall, SqliteRunStore } = require('..')
const { Recorder, freshStart } = await import('../lib/common/journal.mjs')
const { ApprovalRounds } = await import('../lib/adapters/stateless.mjs')

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const now = () => Number(process.hrtime.bigint()) / 1e6
const parts = process.argv.slice(2)
const want = (p) => parts.length === 0 || parts.includes(p)
const isolations = process.platform === 'linux' ? ['process', 'thread'] : ['thread']

/** The host as the engine is given it: through a fresh journal, or not. */
function hostFor(journaled, callTool) {
  const host = { callTool }
  if (!journaled) return host
  const recorder = new Recorder({ ...freshStart(), abort: () => {} })
  return recorder.wrap(host)
}

async function cost() {
  console.log('\n### Journaling cost (A, B of bench/sandbox.mjs)\n')
  console.log('| isolation | A plain p50 ms | A journaled p50 ms | B plain µs/call | B journaled µs/call | B ratio |')
  console.log('|---|---:|---:|---:|---:|---:|')
  for (const isolation of isolations) {
    const sandbox = new Sandbox({ preset: 'experimental', maxIterations: 1e9, maxToolCalls: 1e6, timeoutMs: 60_000, isolation })
    const callTool = (_name, input) => input.i
    const row = {}
    for (const journaled of [false, true]) {
      // A: a fresh context each time.
      for (let i = 0; i < 50; i++) await sandbox.execute('return 1 + 1', hostFor(journaled, callTool))
      const a = []
      for (let i = 0; i < 400; i++) {
        const t = now()
        await sandbox.execute('return 1 + 1', hostFor(journaled, callTool))
        a.push(now() - t)
      }
      // B: 1000 sequential calls in one execution.
      const script = "let s = 0; for (let i = 0; i < 1000; i++) s += await callTool('t', { i }); return s"
      await sandbox.execute(script, hostFor(journaled, callTool))
      const b = []
      for (let i = 0; i < 15; i++) {
        const t = now()
        const r = await sandbox.execute(script, hostFor(journaled, callTool))
        if (r.status !== 'ok') throw new Error(JSON.stringify(r.error))
        b.push(((now() - t) * 1000) / 1000)
      }
      row[journaled ? 'j' : 'p'] = { a: median(a), b: median(b) }
    }
    console.log(`| ${isolation} | ${row.p.a.toFixed(3)} | ${row.j.a.toFixed(3)} | ${row.p.b.toFixed(2)} | ${row.j.b.toFixed(2)} | ${(row.j.b / row.p.b).toFixed(2)}× |`)
    await sandbox.dispose()
  }
}

async function resume() {
  console.log('\n### Resume time against journaled calls\n')
  console.log('| isolation | journaled calls | journal bytes | first request p50 ms | resume on instance 2 p50 ms | µs per replayed call |')
  console.log('|---|---:|---:|---:|---:|---:|')
  const dir = mkdtempSync(join(tmpdir(), 'codecall-bench-runs-'))
  const tools = [
    { name: 'crm:get', description: 'Get a record', annotations: { readOnlyHint: true } },
    { name: 'crm:delete', description: 'Delete a record' },
  ]
  try {
    for (const isolation of isolations) {
      let zero = 0
      for (const n of [0, 10, 100, 1000]) {
        const path = join(dir, `runs-${isolation}-${n}.db`)
        const file = new SqliteRunStore(path)
        let bytes = 0
        const store = { put: (id, j, x) => ((bytes = j.length), file.put(id, j, x)), get: (id) => file.get(id), delete: (id) => file.delete(id) }
        const make = () => {
          const engine = new CodeCall({ approval: { ask: ['crm:delete'] }, runs: { store }, vm: { isolation, maxToolCalls: 10_000, preset: 'experimental', maxIterations: 1e9 } })
          engine.setTools(tools)
          return { engine, rounds: new ApprovalRounds(engine, { stateKey: 'bench-runs-state-key-0123456789' }) }
        }
        const [one, two] = [make(), make()]
        const host = { callTool: (name, input) => (name === 'crm:get' ? { id: input.id, name: `record ${input.id}`, tags: ['a', 'b'] } : { deleted: input.id }) }
        const args = { script: `let last; for (let i = 0; i < ${n}; i++) last = await callTool('crm:get', { id: i }); return await callTool('crm:delete', { id: 1 })` }
        const first = []
        const again = []
        for (let k = 0; k < 7; k++) {
          let t = now()
          const out = await one.rounds.handle('codecall:execute', args, host, { canElicit: true })
          first.push(now() - t)
          if (out.resultType !== 'input_required') throw new Error(JSON.stringify(out))
          const inputResponses = Object.fromEntries(Object.keys(out.inputRequests).map((key) => [key, { action: 'accept' }]))
          t = now()
          const done = await two.rounds.handle('codecall:execute', args, host, { canElicit: true, requestState: out.requestState, inputResponses })
          again.push(now() - t)
          if (done.result?.status !== 'ok') throw new Error(JSON.stringify(done))
        }
        // Instance 1 still holds its (stale) copies of the runs in memory: let go of them.
        one.rounds.close()
        two.rounds.close()
        await one.engine.dispose()
        await two.engine.dispose()
        file.close()
        if (n === 0) zero = median(again)
        // What each replayed call adds to a resume (over the resume of a run with none).
        const perCall = n === 0 ? '—' : (((median(again) - zero) * 1000) / n).toFixed(1)
        console.log(`| ${isolation} | ${n} | ${bytes} | ${median(first).toFixed(2)} | ${median(again).toFixed(2)} | ${perCall} |`)
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (want('cost')) await cost()
if (want('resume')) await resume()
process.exit(0)
