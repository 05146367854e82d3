// The smoke test a foreign platform's Node runs inside a fresh project where `@codecall/native` and
// its platform package were installed from their tarballs (`test-platforms.mjs` sets it up): Node
// for arm64 under qemu-user, Node for Windows under Wine, or this machine's Node.
//
//   node smoke.cjs <report.json>
//
// Writes one JSON report (under Wine, Node's stdout may be unusable) with a line per check, and
// exits 0 either way; the runner reads the report. CODECALL_SMOKE_SECCOMP says what the worker's
// filter should be here: 'on' (a Linux kernel), 'off' (qemu-user, which has no seccomp), 'wine'
// (Windows under Wine: confined worker processes, but Wine keeps no integrity levels and applies no
// mitigation policy — those, and only those, may be warned about), or 'none' (no process isolation).
//
// CODECALL_SMOKE_HOOKS=1 runs, instead, the worker's hard cases with the test-hooks build of the
// library (whose scripts can spin in native code past the interrupt, abort the process, or say their
// pid; CODECALL_WORKER_LIBRARY names it and the installed launcher maps it instead of the `.node`):
// a worker stuck past its deadline is TIMEOUT on time and killed (its pid gone), a crashing worker
// ends only its own execution and the host goes on. `test-platforms.mjs` runs it for Windows under Wine.
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const reportPath = process.argv[2]
const report = { platform: process.platform, arch: process.arch, node: process.version, checks: [] }
const write = () => fs.writeFileSync(reportPath, JSON.stringify(report, null, 2))

async function check(name, fn) {
  const started = Date.now()
  try {
    const detail = await fn()
    report.checks.push({ name, ok: true, detail: detail ?? '', ms: Date.now() - started })
  } catch (e) {
    report.checks.push({ name, ok: false, detail: String((e && e.stack) || e), ms: Date.now() - started })
  }
  write()
}
function expect(condition, message) {
  if (!condition) throw new Error(message)
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)
/** The installed platform package's folder name suffix (`linux-arm64-gnu`, ...). */
function platformDir() {
  const dir = path.join(path.dirname(require.resolve('@codecall/native/package.json')), '..')
  const found = fs.readdirSync(dir).find((d) => d.startsWith('native-') && d !== 'native-data')
  if (!found) throw new Error('no platform package installed')
  return found.slice('native-'.length)
}

const slowHost = {
  // Answers later, from Node's event loop, as a real tool pipeline would.
  callTool: (name, input) => new Promise((resolve) => setTimeout(() => resolve({ name, doubled: input.n * 2 }), 20)),
}
const plan = `const [a, b] = await Promise.all([callTool('math:double', { n: 2 }), callTool('math:double', { n: 5 })])
return [a.name, a.doubled + b.doubled]`

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

async function hooks() {
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
}

;(async () => {
  write()
  if (process.env.CODECALL_SMOKE_HOOKS === '1') {
    await hooks()
    write()
    return
  }
  let native
  const warnings = []
  process.on('warning', (w) => warnings.push(w))

  await check('the addon loads from the installed platform package', () => {
    native = require('@codecall/native')
    const pkg = require('@codecall/native/package.json')
    const binding = Object.keys(require.cache).find((p) => p.endsWith('.node'))
    expect(binding, 'no .node in the require cache')
    return `${path.basename(path.dirname(binding))}/${path.basename(binding)}, ${pkg.name}@${pkg.version}`
  })
  if (!native) return

  await check('validate: a plan is ok, an escape is refused with its position', () => {
    expect(native.validate('return 1').ok === true, 'return 1 not ok')
    const bad = native.validate("const x = 1\nconst f = x.constructor.constructor('return process')")
    const where = bad.error && bad.error.location
    expect(bad.ok === false && where && where.line === 2, JSON.stringify(bad))
    return `${bad.status} (${bad.error.kind}) at ${where.line}:${where.column}`
  })

  await check('search by meaning: the sentence model is found in @codecall/native-data', async () => {
    const index = new native.ToolIndex()
    index.upsert([
      { name: 'weather:get_forecast', description: 'Get the weather forecast for a city' },
      { name: 'math:add', description: 'Add two numbers' },
    ])
    await index.ready()
    const names = index.search('will it rain tomorrow').map((h) => h.name)
    await new Promise((r) => setImmediate(r))
    const missing = warnings.filter((w) => w.code === 'CODECALL_NO_EMBEDDINGS')
    expect(missing.length === 0, `warning: ${missing.map(String).join('; ')}`)
    expect(same(names, ['weather:get_forecast']), `found ${JSON.stringify(names)}`)
    return names.join(', ')
  })

  await check("Sandbox, isolation 'thread': a plan awaits two host calls", async () => {
    const sb = new native.Sandbox({ isolation: 'thread' })
    try {
      const r = await sb.execute(plan, slowHost)
      expect(r.status === 'ok' && same(r.result, ['math:double', 14]), JSON.stringify(r))
      return `${Math.round(r.stats.durationMs)} ms`
    } finally {
      await sb.dispose()
    }
  })

  await check('CodeCall: execute through the engine with a host pipeline', async () => {
    const cc = new native.CodeCall({ metaToolSeparator: '_' })
    try {
      cc.setTools([{ name: 'math:double', description: 'Double a number', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } }])
      expect(cc.search({ query: 'double a number' }).tools[0].name === 'math:double', 'search did not find the tool')
      const r = await cc.execute({ script: plan }, { callTool: (name, input) => slowHost.callTool(name, input) })
      expect(r.status === 'ok' && same(r.result, ['math:double', 14]), JSON.stringify(r))
      return 'ok'
    } finally {
      await cc.dispose()
    }
  })

  await check('saved scripts: the compiled-in SQLite store saves to a file and runs a plan by name', async () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'codecall-smoke-'))
    const store = path.join(dir, 'scripts.db')
    const host = { callTool: (name, input) => slowHost.callTool(name, input) }
    try {
      const a = new native.CodeCall({ scripts: { store } })
      a.setTools([{ name: 'math:double', description: 'Double a number' }])
      const saved = await a.scripts.save({ name: 'double-seven', description: 'Double seven', script: plan })
      expect(saved.name === 'saved:double-seven' && saved.version === 1, JSON.stringify(saved))
      await a.dispose()
      // A second engine on the same file (as a second process would) finds and runs it.
      const b = new native.CodeCall({ scripts: { store } })
      b.setTools([{ name: 'math:double', description: 'Double a number' }])
      const r = await b.execute({ scriptName: 'double-seven' }, host)
      expect(r.status === 'ok' && same(r.result, ['math:double', 14]), JSON.stringify(r))
      const nested = await b.execute({ script: "return await callTool('saved:double-seven', {})" }, host)
      expect(nested.status === 'ok', JSON.stringify(nested))
      await b.dispose()
      return `${(fs.statSync(store).size / 1024).toFixed(0)} KiB file, v${saved.version}`
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  const seccomp = process.env.CODECALL_SMOKE_SECCOMP || 'on'
  await check('Sandbox, default isolation: a plan awaits host calls; the fences are as expected', async () => {
    const sb = new native.Sandbox()
    const events = []
    try {
      const r = await sb.execute(plan, { ...slowHost, onEvent: (e) => events.push(e) })
      expect(r.status === 'ok' && same(r.result, ['math:double', 14]), JSON.stringify(r))
      const expected = seccomp === 'none' ? 'thread' : 'process'
      expect(sb.isolation === expected, `isolation ${sb.isolation}, expected ${expected}`)
      const filterWarnings = sb.warnings.filter((w) => /seccomp/.test(w))
      if (seccomp === 'on') expect(sb.warnings.length === 0, `warnings: ${sb.warnings.join('; ')}`)
      if (seccomp === 'wine') {
        const other = sb.warnings.filter((w) => !/Wine keeps no integrity levels|MitigationPolicy|mitigation policies/.test(w))
        expect(other.length === 0, `warnings besides Wine's missing integrity levels and mitigations: ${other.join('; ')}`)
      }
      if (seccomp === 'off') {
        expect(filterWarnings.length === 1, `expected one warning about the filter, got: ${JSON.stringify(sb.warnings)}`)
        const logged = events.filter((e) => e.type === 'log' && e.level === 'warning' && /seccomp/.test(e.message))
        expect(logged.length === 1, `the warning did not reach onEvent: ${JSON.stringify(events)}`)
      }
      let runs = ''
      if (sb.isolation === 'process' && process.platform === 'linux') {
        // Which executable the worker process is: the one installed next to the addon, or the one
        // CODECALL_WORKER_PATH names. Under qemu-user /proc/<pid>/exe is qemu, so the command line
        // is read as well.
        const want = fs.realpathSync(process.env.CODECALL_WORKER_PATH || path.join(path.dirname(require.resolve(`@codecall/native-${platformDir()}/package.json`)), 'codecall-worker'))
        const pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d) && d !== String(process.pid)).filter((d) => {
          try {
            return fs.readlinkSync(`/proc/${d}/exe`) === want || fs.readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0').includes(want)
          } catch {
            return false
          }
        })
        expect(pids.length >= 1, `no process runs ${want}`)
        runs = `, worker ${want.split('/').slice(-2).join('/')} (pid ${pids.join(', ')})`
      }
      return `${sb.isolation}${runs}; ${sb.warnings.length ? `warnings: ${sb.warnings.join('; ')}` : 'no warnings'}`
    } finally {
      await sb.dispose()
    }
  })

  await check('Sandbox, default isolation: a plan whose tool never answers ends TIMEOUT on time', async () => {
    const sb = new native.Sandbox({ timeoutMs: 500 })
    try {
      const started = Date.now()
      const r = await sb.execute("await callTool('slow:never', {}); return 1", { callTool: () => new Promise(() => {}) })
      const took = Date.now() - started
      expect(r.status === 'timeout' && r.error.code === 'TIMEOUT', JSON.stringify(r))
      return `TIMEOUT after ${Math.round(r.stats.durationMs)} ms of script time (limit 500), ${took} ms with the worker start`
    } finally {
      await sb.dispose()
    }
  })
  write()
})().catch((e) => {
  report.checks.push({ name: 'the smoke test itself', ok: false, detail: String((e && e.stack) || e) })
  write()
})
