// Attacks through the engine: what a hostile script, a hostile tool answer or a hostile tool
// definition can do to CodeCall and its host — nothing beyond a clear result.
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, type ToolDefinition } from '../../index.js'
import { expectInvalidArg } from '../helpers.js'

const tools: ToolDefinition[] = [
  { name: 'users:list', appId: 'users', description: 'List users' },
  { name: 'users:_purge', appId: 'users', description: 'Purge', internal: true },
  { name: 'billing:charge', appId: 'billing', description: 'Charge', codecall: { enabledInCodeCall: false } },
]
const cc = new CodeCall({ directCalls: { enabled: true } })
cc.setTools(tools)
afterAll(() => cc.dispose())

describe('CodeCall under attack', () => {
  it('never reaches a tool outside the index, by any spelling', async () => {
    const called: string[] = []
    const host = { callTool: (name: string) => (called.push(name), { ok: true }) }
    for (const name of ['users:_purge', 'USERS:_PURGE', 'users:_purge ', 'users:_purge\u0000', 'billing:charge', 'users:\u200b_purge', '__proto__', 'constructor', 'toString']) {
      const r = await cc.execute({ script: `return await callTool(${JSON.stringify(name)}, {})` }, host)
      expect(r, name).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_NOT_FOUND' } })
      const info = await cc.execute({ script: `return getTool(${JSON.stringify(name)})` }, host)
      expect(info).toMatchObject({ status: 'ok', result: null })
    }
    expect(called).toEqual([])
  })

  it('blocks the meta-tools however the name is built', async () => {
    const host = { callTool: () => ({}) }
    for (const script of [
      "return await callTool('codecall:execute', { script: 'return 1' })",
      "return await callTool(['codecall', 'execute'].join(':'), {})",
      "return await callTool('codecall_invoke', { tool: 'users:list' })",
      "return await callTool(`codecall:${'search'}`, { query: 'x' })",
    ]) {
      const r = await cc.execute({ script }, host)
      expect(['illegal_access', 'tool_error']).toContain(r.status)
      expect((r as { error: { code: string } }).error.code, script).toBe('SELF_REFERENCE_BLOCKED')
    }
  })

  it('keeps hostile tool answers inside the result', async () => {
    const answers: Record<string, unknown> = {
      proto: { content: [], structuredContent: JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') },
      deep: { content: [{ type: 'text', text: '['.repeat(100_000) + ']'.repeat(100_000) }] },
      huge: { isError: true, content: [{ type: 'text', text: 'x'.repeat(1_000_000) }] },
      lie: { content: [{ type: 'text', text: 'a' }, { type: 'not-a-real-type' }], isError: 'yes' },
    }
    const host = { callTool: (_: string, input: unknown) => answers[(input as { k: string }).k] }
    cc.upsertTools([{ name: 'any:tool' }])
    const proto = await cc.execute({ script: "const r = await callTool('any:tool', { k: 'proto' })\nreturn [Object.keys(r), ({}).polluted, r.polluted]" }, host)
    expect(proto).toMatchObject({ status: 'ok', result: [['__proto__', 'a'], null, null] })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    const deep = await cc.execute({ script: "const r = await callTool('any:tool', { k: 'deep' })\nreturn typeof r" }, host)
    expect(['ok', 'runtime_error', 'tool_error']).toContain(deep.status)
    const huge = await cc.execute({ script: "return await callTool('any:tool', { k: 'huge' })" }, host)
    expect(huge).toMatchObject({ status: 'tool_error', error: { code: 'TOOL_EXECUTION_ERROR' } })
    expect((huge as { error: { message: string } }).error.message.length).toBeLessThan(5000)
    const lie = await cc.execute({ script: "return await callTool('any:tool', { k: 'lie' })" }, host)
    expect(lie).toMatchObject({ status: 'ok', result: answers.lie as object }) // not an envelope: passed through as is
  })

  it('refuses hostile tool definitions with ERR_INVALID_ARG and stays usable', () => {
    let deep: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < 5000; i++) deep = { type: 'object', properties: { x: deep } }
    expectInvalidArg(() => cc.upsertTools([{ name: 'deep:tool', inputSchema: deep }]), /tools\[0\]/)
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`p${i}`, { type: 'string', enum: ['a*/b', "c'd"] }])) }
    cc.upsertTools([{ name: 'wide:tool', inputSchema: wide, description: '*/ declare const x: 1; /*' }])
    const d = cc.describe({ toolNames: ['wide:tool'] }).tools[0]
    expect(d.typescript.length).toBeLessThan(64 * 1024)
    expect(d.typescript).not.toMatch(/\*\/ declare const x/) // the comment cannot be closed from a description
    expect(cc.search({ query: 'users' }).tools[0].name).toBe('users:list')
  })
})
