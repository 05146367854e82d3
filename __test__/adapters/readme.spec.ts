// The README's quick start, run as written: each block marked `<!-- readme-test: NAME -->` is
// written out as a module inside this package (so `@codecall/native/...` resolves to it, as it
// would for a user), started as an MCP server over stdio, and driven by the real SDK Client.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

const ROOT = resolve(__dirname, '../..')
const DIR = join(ROOT, '.readme-test')
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const blocks = [...readme.matchAll(/<!-- readme-test: (\w+) -->\n```js\n([\s\S]*?)```/g)].map((m) => ({ name: m[1], code: m[2] }))

mkdirSync(DIR, { recursive: true })
afterAll(() => rmSync(DIR, { recursive: true, force: true }))

describe('README quick start', () => {
  it('quotes examples/modern-server.mjs (run by modern.spec.ts) as it is', () => {
    expect(readme).toContain(`\`\`\`js\n${readFileSync(join(ROOT, 'examples', 'modern-server.mjs'), 'utf8')}\`\`\``)
  })

  it('has the three framework blocks', () => {
    expect(blocks.map((b) => b.name)).toEqual(['sdk1', 'sdk2', 'fastmcp'])
  })

  it.each(blocks.map((b) => [b.name, b.code]))('%s: runs as written and serves code mode over stdio', async (name, code) => {
    const file = join(DIR, `${name}.mjs`)
    writeFileSync(file, code)
    const transport = new StdioClientTransport({ command: process.execPath, args: [file], cwd: ROOT, stderr: 'pipe' })
    let stderr = ''
    transport.stderr?.on('data', (c) => (stderr += c))
    const client = new Client({ name: 'readme', version: '1' })
    try {
      await client.connect(transport)
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
      const found = await client.callTool({ name: 'codecall_search', arguments: { query: 'list users' } })
      expect((found.structuredContent as any).tools[0].name).toBe('users_list')
      const r = await client.callTool({ name: 'codecall_execute', arguments: { script: `return await callTool('users_list', { limit: 1 })` } })
      expect(r.structuredContent).toMatchObject({ status: 'ok', result: [{ id: 1, name: 'Ada' }] })
      if (name === 'sdk1') {
        const joined = await client.callTool({
          name: 'codecall_execute',
          arguments: { script: `const u = await callTool('users_list', {}); return await Promise.all(u.map((x) => callTool('orders_by_user', { userId: x.id })))` },
        })
        expect((joined.structuredContent as any).result).toEqual([[{ userId: 1, total: 30 }], [{ userId: 2, total: 30 }]])
      }
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- server stderr ---\n${stderr}`)
    } finally {
      await client.close()
    }
  })
})
