// A host's callbacks run in the async context of the execute() that started them: with two
// executions in flight, each one's callTool, functions, getTool, approve and onEvent see the
// AsyncLocalStorage store of its own caller — a request's user, its trace — never the other's
// (before, every callback of a busy period ran in the context of the execution that began it: a
// host pipeline reading the current request from AsyncLocalStorage would have authorised B's
// calls as A's). Both isolations.
import { AsyncLocalStorage } from 'node:async_hooks'
import { afterAll, describe, expect, it } from 'vitest'
import { CodeCall, Sandbox, type ExecuteHost } from '../index.js'

const als = new AsyncLocalStorage<string>()
const later = (ms: number) => new Promise((r) => setTimeout(r, ms))

for (const isolation of ['thread', 'process'] as const) {
  describe(`host callbacks run in their caller's async context (${isolation} isolation)`, () => {
    const sandbox = new Sandbox({ isolation })
    const cc = new CodeCall({ vm: { isolation }, approval: { ask: ['a:risky'] }, directCalls: { enabled: true } })
    cc.setTools([
      { name: 'a:wait', description: 'wait' },
      { name: 'a:who', description: 'who' },
      { name: 'a:risky', description: 'asks first' },
    ])
    afterAll(async () => {
      await sandbox.dispose()
      await cc.dispose()
    })

    it('Sandbox.execute: callTool, functions, getTool and onEvent', async () => {
      const seen: string[] = []
      const host = (): ExecuteHost => ({
        callTool: (name) => {
          seen.push(`${als.getStore()}:${name}`)
          return name === 'wait' ? later(200).then(() => ({})) : {}
        },
        getTool: (name) => (seen.push(`${als.getStore()}:getTool ${name}`), { name }),
        functions: { who: () => (seen.push(`${als.getStore()}:fn`), 1) },
        onEvent: (e) => {
          if (e.type === 'log') seen.push(`${als.getStore()}:log`)
        },
      })
      const a = als.run('A', () => sandbox.execute("await callTool('wait'); console.log('x'); mcpLog('info', 'a'); return 1", host()))
      await later(50)
      const b = als.run('B', () => sandbox.execute("getTool('t'); await callTool('who'); await who(); mcpLog('info', 'b'); return 2", host()))
      expect((await Promise.all([a, b])).map((r) => r.status)).toEqual(['ok', 'ok'])
      expect(seen.filter((s) => s.startsWith('B'))).toEqual(['B:getTool t', 'B:getTool who', 'B:who', 'B:fn', 'B:log'])
      expect(seen.filter((s) => s.startsWith('A'))).toEqual(['A:getTool wait', 'A:wait', 'A:log'])
    })

    it('CodeCall.execute, approve and invoke', async () => {
      const seen: string[] = []
      const host = () => ({
        callTool: (name: string) => {
          seen.push(`${als.getStore()}:${name}`)
          return name === 'a:wait' ? later(200).then(() => ({})) : {}
        },
        approve: () => (seen.push(`${als.getStore()}:approve`), 'approve' as const),
      })
      const a = als.run('A', () => cc.execute({ script: "await callTool('a:wait', {}); return 1" }, host()))
      await later(50)
      const b = als.run('B', () => cc.execute({ script: "await callTool('a:who', {}); await callTool('a:risky', {}); return 2" }, host()))
      const c = als.run('C', () => cc.invoke({ tool: 'a:risky', input: {} }, host()))
      await Promise.all([a, b, c])
      expect(seen.filter((s) => s.startsWith('B')).sort()).toEqual(['B:a:risky', 'B:a:who', 'B:approve'])
      expect(seen.filter((s) => s.startsWith('C')).sort()).toEqual(['C:a:risky', 'C:approve'])
      expect(seen.filter((s) => s.startsWith('A'))).toEqual(['A:a:wait'])
    })
  })
}
