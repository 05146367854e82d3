// The addon loads from CommonJS, from ESM and inside worker_threads.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('loading', () => {
  it('works from require()', () => {
    const require = createRequire(import.meta.url)
    const native = require('..') as typeof import('../index.js')
    expect(native.validate('return 1')).toEqual({ ok: true, toolNames: [], dynamicToolCalls: false })
  })

  it('works from import()', async () => {
    const native = await import('../index.js')
    expect(native.validate('return 1').ok).toBe(true)
  })

  it('works from the package name (exports map)', async () => {
    const require = createRequire(import.meta.url)
    expect(require.resolve('@codecall/native')).toBe(require.resolve('../index.js'))
  })

  it('works inside a worker thread, twice at once', async () => {
    const run = () =>
      new Promise<unknown>((resolve, reject) => {
        const worker = new Worker(
          `const { parentPort, workerData } = require('node:worker_threads');
           const { validate, Sandbox } = require(workerData.root);
           const sandbox = new Sandbox();
           sandbox.execute("return await callTool('t', { x: 2 })", { callTool: async (n, i) => i.x * 21 }).then(async (r) => {
             await sandbox.dispose();
             parentPort.postMessage([validate("await callTool('a:b')"), validate('eval(1)').ok, r.result]);
           });`,
          { eval: true, workerData: { root } },
        )
        worker.once('message', resolve)
        worker.once('error', reject)
      })
    const results = await Promise.all([run(), run()])
    for (const r of results) {
      expect(r).toEqual([{ ok: true, toolNames: ['a:b'], dynamicToolCalls: false }, false, 42])
    }
  })
})

describe('idle keeps nothing alive', () => {
  it('a script that runs an execution and returns lets Node exit on its own', async () => {
    const { spawnSync } = await import('node:child_process')
    const script = `
      const { Sandbox } = require(${JSON.stringify(root)});
      const sb = new Sandbox();
      sb.execute("return await callTool('t', { a: 1 })", { callTool: async (n, i) => i }).then((r) => console.log(JSON.stringify(r.result)));
    `
    const started = Date.now()
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
    expect(child.status).toBe(0)
    expect(child.stdout.trim()).toBe('{"a":1}')
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  for (const isolation of ['thread', 'process'] as const) {
    it(`a live execution keeps Node alive until its result, then nothing does (${isolation})`, async () => {
      const { spawnSync } = await import('node:child_process')
      // Nothing but the executions is pending in Node: one waits on a host promise that never
      // settles (its TIMEOUT must still arrive), others run at once and in between; then Node
      // exits without dispose().
      const script = `
        const { Sandbox } = require(${JSON.stringify(root)});
        const sb = new Sandbox({ isolation: '${isolation}', timeoutMs: 400 });
        const out = [];
        sb.execute("return await callTool('never')", { callTool: () => new Promise(() => {}) }).then((r) => {
          out.push(r.status);
          sb.execute('return 3').then((r) => { out.push(r.result); console.log(JSON.stringify(out)); });
        });
        Promise.all([1, 2].map((n) => sb.execute('return ' + n))).then((rs) => out.push(...rs.map((r) => r.result)));
      `
      const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
      expect(child.stderr).toBe('')
      expect(child.status).toBe(0)
      expect(JSON.parse(child.stdout)).toEqual([1, 2, 'timeout', 3])
    })
  }
})
