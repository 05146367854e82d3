// The host bridge's cost per execution (A) and per tool call (B), as wall time and as this
// process's CPU time (steadier on a noisy machine; in process isolation the workers' CPU is not
// counted). `npm run build && node bench/bridge-cpu.mjs` — numbers in BENCHMARKS.md.
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const { Sandbox } = require('..')
const now = () => performance.now()
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system }
const out = {}
for (const isolation of ['thread', 'process']) {
  const sb = new Sandbox({ preset: 'experimental', isolation })
  for (let i = 0; i < 100; i++) await sb.execute('return 1 + 1')
  let c = cpu(); const s = []
  for (let i = 0; i < 1000; i++) { const t = now(); await sb.execute('return 1 + 1'); s.push(now() - t) }
  const aCpu = (cpu() - c) / 1000
  s.sort((a, b) => a - b)
  const host = { callTool: (_n, i) => i }
  c = cpu(); const t0 = now()
  for (let r = 0; r < 5; r++) await sb.execute("let s = 0; for (let i = 0; i < 1000; i++) { const r = await callTool('add', { i }); s += r.i } return s", host)
  const bWall = (now() - t0) * 1000 / 5000, bCpu = (cpu() - c) / 5000
  out[isolation] = { A_p50_us: +(s[500] * 1000).toFixed(0), A_cpu_us: +aCpu.toFixed(0), B_wall_us: +bWall.toFixed(1), B_cpu_us: +bCpu.toFixed(1) }
  await sb.dispose()
}
console.log(JSON.stringify(out))
