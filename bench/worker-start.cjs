// Worker start per OS (BENCHMARKS "Worker processes per OS"), for a machine where only an installed
// package runs (Windows, or Windows under Wine): run from a project where @codecall/native and its
// platform package are installed, e.g. .platforms-test/user-win32-x64-msvc after npm run test:platforms:
//   wine <node.exe> worker-start.cjs out.json
// Writes the first sandbox's isolation and warnings, then medians of 10: new Sandbox -> first result, next result.
const { Sandbox } = require('@codecall/native')
const fs = require('node:fs')
const out = process.argv[2]
;(async () => {
  const first = [], next = [], lines = []
  for (let i = 0; i < 10; i++) {
    const sb = new Sandbox({ poolSize: 1 })
    let t = process.hrtime.bigint()
    const r = await sb.execute('return 1 + 1')
    first.push(Number(process.hrtime.bigint() - t) / 1e6)
    t = process.hrtime.bigint()
    await sb.execute('return 2')
    next.push(Number(process.hrtime.bigint() - t) / 1e6)
    if (i === 0) lines.push(JSON.stringify({ isolation: sb.isolation, status: r.status, warnings: sb.warnings }))
    await sb.dispose()
  }
  const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1]
  // A stuck tool and a timeout, then results again on the same sandbox.
  const sb = new Sandbox({ timeoutMs: 300 })
  const t = await sb.execute("await callTool('x', {}); return 1", { callTool: () => new Promise(() => {}) })
  const again = await sb.execute("return await callTool('echo', { n: 7 })", { callTool: (_n, input) => input.n })
  const big = await sb.execute("return 'x'.repeat(3 << 20).length")
  await sb.dispose()
  lines.push(JSON.stringify({ firstMs: med(first), nextMs: med(next), min: Math.min(...first), max: Math.max(...first), timeout: t.status, again: again.result, big: big.result }))
  fs.writeFileSync(out, lines.join('\n'))
})().catch((e) => fs.writeFileSync(out, String(e.stack)))
