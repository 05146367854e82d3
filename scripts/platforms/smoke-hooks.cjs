// The worker's hard cases on a foreign platform, with the test-hooks build of the library (a dev
// build whose scripts can spin in native code past the interrupt, abort the process, or say their
// pid): run by `test-platforms.mjs` for Windows under Wine, inside the project where the packed
// package is installed, with CODECALL_WORKER_LIBRARY naming the test-hooks library — the installed
// launcher `codecall-worker.exe` maps it instead of the package's `.node`.
//
//   node smoke-hooks.cjs <report.json>
//
// Checks: a worker stuck in a builtin past its deadline — the execution is TIMEOUT on time, the
// worker is killed (its pid is gone), the sandbox goes on; a worker that crashes — its execution
// ends WORKER_CRASHED, the host lives, a neighbour on another worker finishes, the dead pid is gone.
// Writes one JSON report like smoke.cjs.
'use strict'
const fs = require('node:fs')

const reportPath = process.argv[2]
const report = { platform: process.platform, arch: process.arch, node: process.version, checks: [] }
const write = () => fs.writeFileSync(reportPath, JSON.stringify(report, null, 2))

async function check(name, fn) {
  const started = Date.now()
  try {
    const detail = await fn()
    report.checks.push({ name, ok: true, detail: String(detail ?? ''), ms: Date.now() - started })
  } catch (e) {
    report.checks.push({ name, ok: false, detail: String(e?.stack ?? e), ms: Date.now() - started })
  }
  write()
}

function expect(ok, message) {
  if (!ok) throw new Error(message)
}

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function gone(pid, ms = 5000) {
  const until = Date.now() + ms
  while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  return !alive(pid)
}

;(async () => {
  const { Sandbox } = require('@codecall/native')

  await check('a worker stuck in native code past its deadline: TIMEOUT on time, the worker killed, the sandbox goes on', async () => {
    const sb = new Sandbox({ timeoutMs: 400, poolSize: 1 })
    try {
      const first = await sb.execute('return __test_pid()')
      expect(first.status === 'ok' && first.result > 0, `no pid: ${JSON.stringify(first)} ${sb.warnings}`)
      expect(sb.isolation === 'process', `isolation ${sb.isolation}`)
      const pid = first.result
      const started = Date.now()
      const r = await sb.execute('__test_spin(20000); return 1')
      const took = Date.now() - started
      expect(r.status === 'timeout' && r.error.code === 'TIMEOUT', JSON.stringify(r))
      expect(took < 3000, `TIMEOUT after ${took} ms (limit 400)`)
      expect(await gone(pid), `the stuck worker (pid ${pid}) is still alive`)
      const next = await sb.execute('return __test_pid()')
      expect(next.status === 'ok' && next.result !== pid, `after the kill: ${JSON.stringify(next)}`)
      return `TIMEOUT after ${took} ms, worker ${pid} killed, next result from worker ${next.result}`
    } finally {
      await sb.dispose()
    }
  })

  await check('a crashing worker: WORKER_CRASHED for its execution only, the host and a neighbour live', async () => {
    const sb = new Sandbox({ timeoutMs: 10_000, poolSize: 2 })
    try {
      // A neighbour that waits on a tool (it has called one: never retried) on some worker.
      let answer
      const waiting = new Promise((resolve) => (answer = resolve))
      const neighbour = sb.execute("const v = await callTool('wait', {}); return v + 1", { callTool: () => waiting })
      const crash = await sb.execute('__test_pid(); __test_abort()')
      expect(crash.status !== 'ok' && ['WORKER_CRASHED', 'SANDBOX_ERROR'].includes(crash.error.code), JSON.stringify(crash))
      answer(41)
      const n = await neighbour
      const after = await sb.execute('return __test_pid()')
      expect(after.status === 'ok', `after the crash: ${JSON.stringify(after)}`)
      return `${crash.error.code}: ${crash.error.message}; neighbour ${n.status === 'ok' ? n.result : JSON.stringify(n.error)}; next from worker ${after.result}`
    } finally {
      await sb.dispose()
    }
  })

  await check('the job holds one process: starting a program from the worker', async () => {
    const sb = new Sandbox({ timeoutMs: 10_000 })
    try {
      const r = await sb.execute(`return __test_spawn(${JSON.stringify(process.env.ComSpec || 'C:\\Windows\\System32\\cmd.exe')})`)
      // Windows refuses (-1); Wine enforces neither the job's limit nor the child-process policy.
      const wine = sb.warnings.some((w) => /Wine/.test(w))
      if (!wine) expect(r.status === 'ok' && r.result === -1, JSON.stringify(r))
      return `${JSON.stringify(r.status === 'ok' ? r.result : r.error)}${wine ? ' (Wine: not enforced, not asserted)' : ''}`
    } finally {
      await sb.dispose()
    }
  })
  write()
})().catch((e) => {
  report.checks.push({ name: 'smoke-hooks.cjs', ok: false, detail: String(e?.stack ?? e), ms: 0 })
  write()
})
