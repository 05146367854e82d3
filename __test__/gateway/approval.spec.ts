// Spec §9 through the gateway: `codecall serve` asks the requesting MCP client with
// `elicitation/create` (the real SDK Client with an elicitation handler), in both isolations. The
// fixture upstream counts its calls, proving a declined call never reached it. And `codecall exec`
// without a terminal falls back to whenUnavailable.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { callMeta, CLI, connectStdio, leftovers, newMark, runCli, servers, startCli, tempDir, writeConfig } from './helpers'

const mark = newMark()
const dir = tempDir()
afterAll(async () => {
  expect(await leftovers(mark)).toEqual([])
})

type Elicited = { message: string; requestedSchema?: any }

for (const isolation of ['process', 'thread']) {
  describe(`codecall serve asks the client (${isolation} isolation)`, () => {
    const audit = join(dir, `audit-${isolation}.jsonl`)
    const config = writeConfig(
      dir,
      {
        mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') },
        codecall: { approval: { require: 'destructive', timeoutMs: 5000 }, vm: { isolation, timeoutMs: 800 }, directCalls: { enabled: true }, audit },
      },
      `approval-${isolation}.json`,
    )
    const calls = async (client: any) => (await callMeta(client, 'codecall_execute', { script: "return await callTool('gh:calls', {})" })).result

    it('accept runs the call; decline never reaches the upstream; the script goes on', async () => {
      const asked: Elicited[] = []
      const { client } = await connectStdio(config, [], { CODECALL_TEST_MARK: mark }, async (r) => {
        asked.push(r.params)
        return r.params.message.includes("'repo_delete'") && r.params.message.includes('"keep"') ? { action: 'decline' } : { action: 'accept', content: {} }
      })
      try {
        const r = await callMeta(client, 'codecall_execute', {
          script: `
            const a = await callTool('gh:repo_get', { repo: 'x' })
            const b = await callTool('gh:repo_delete', { repo: 'gone' })
            const c = await callTool('gh:repo_delete', { repo: 'keep' }, { throwOnError: false })
            const d = await call_tool('gh', 'repo_delete', { repo: 'keep' })
            return [a.done, b.done, c.error.code, d.ok, d.error.code]`,
        })
        expect(r, JSON.stringify(r)).toMatchObject({ status: 'ok', result: ['repo_get', 'repo_delete', 'ACCESS_DENIED', false, 'ACCESS_DENIED'] })
        // What the person saw: tool and server named, the input shown, one optional boolean.
        expect(asked).toHaveLength(3)
        expect(asked[0].message).toMatch(/the tool 'repo_delete' of the MCP server 'gh'/)
        expect(asked[0].message).toContain('"repo": "gone"')
        expect(asked[0].requestedSchema).toEqual({ type: 'object', properties: { always: expect.objectContaining({ type: 'boolean' }) } })
        const counts = await calls(client)
        expect(counts).toEqual({ repo_get: 1, repo_delete: 1, calls: 1 })
        const line = readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l))[0]
        expect(line).toMatchObject({ status: 'ok', approvals: 3, declined: 2 })
      } finally {
        await client.close()
      }
    })

    it("the person answers after the script's own timeout would have fired: the script still finishes", async () => {
      const { client } = await connectStdio(config, [], { CODECALL_TEST_MARK: mark }, async () => {
        await new Promise((r) => setTimeout(r, 1500))
        return { action: 'accept', content: { always: true } }
      })
      try {
        const r = await callMeta(client, 'codecall_execute', {
          script: "const a = await callTool('gh:repo_touch', {}); const b = await callTool('gh:repo_touch', {}); return [a.done, b.done]",
        })
        // timeoutMs is 800: the wait (1.5 s, asked once thanks to `always`) did not count.
        expect(r).toMatchObject({ status: 'ok', result: ['repo_touch', 'repo_touch'] })
      } finally {
        await client.close()
      }
    })

    it("an upstream's own 'allow' does not loosen the policy; its 'ask' is honoured", async () => {
      const asked: string[] = []
      const { client } = await connectStdio(config, [], { CODECALL_TEST_MARK: mark }, async (r) => {
        asked.push(/the tool '(\w+)'/.exec(r.params.message)?.[1] ?? '?')
        return { action: 'decline' }
      })
      try {
        const r = await callMeta(client, 'codecall_execute', {
          script: "const a = await callTool('gh:repo_sneaky', {}, { throwOnError: false }); const b = await callTool('gh:repo_peek', {}, { throwOnError: false }); return [a.error.code, b.error.code]",
        })
        expect(r.result).toEqual(['ACCESS_DENIED', 'ACCESS_DENIED'])
        expect(asked).toEqual(['repo_sneaky', 'repo_peek'])
      } finally {
        await client.close()
      }
    })

    it('a person who never answers: approval timed out, and the elicitation is cancelled', async () => {
      const quick = writeConfig(
        dir,
        { mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') }, codecall: { approval: { require: 'destructive', timeoutMs: 400 }, vm: { isolation } } },
        `approval-quick-${isolation}.json`,
      )
      const { client, transport } = await connectStdio(quick, [], { CODECALL_TEST_MARK: mark }, () => new Promise(() => {}))
      // What reaches the client: the SDK client itself ignores a cancellation of request id 0
      // (`if (!requestId) return`), so the test reads the wire.
      const cancelled: unknown[] = []
      const deliver = transport.onmessage!
      transport.onmessage = (message: any, extra?: any) => {
        if (message.method === 'notifications/cancelled') cancelled.push(message.params)
        ;(deliver as any)(message, extra)
      }
      try {
        const r = await callMeta(client, 'codecall_execute', { script: "return (await callTool('gh:repo_delete', {}, { throwOnError: false })).error" })
        expect(r.result).toEqual({ code: 'ACCESS_DENIED', message: "Tool 'gh:repo_delete' was not approved: approval timed out" })
        await new Promise((r) => setTimeout(r, 300))
        expect(cancelled).toEqual([expect.objectContaining({ requestId: 0 })])
        expect(await calls(client)).toEqual({ calls: 1 })
      } finally {
        await client.close()
      }
    })

    it('a client without the elicitation capability: whenUnavailable (deny); invoke too', async () => {
      const { client } = await connectStdio(config, [], { CODECALL_TEST_MARK: mark })
      try {
        const r = await callMeta(client, 'codecall_execute', { script: "return (await callTool('gh:repo_delete', {}, { throwOnError: false })).error" })
        expect(r.result).toEqual({ code: 'ACCESS_DENIED', message: "Tool 'gh:repo_delete' was not approved: the client cannot ask for approval" })
        const invoked = await callMeta(client, 'codecall_invoke', { tool: 'gh:repo_delete', input: {} })
        expect(invoked).toMatchObject({ status: 'error', error: { code: 'ACCESS_DENIED', message: "Tool 'gh:repo_delete' was not approved: the client cannot ask for approval" } })
        expect(await calls(client)).toEqual({ calls: 1 })
      } finally {
        await client.close()
      }
    })
  })
}

describe('codecall serve --http: each session asks its own client', () => {
  it('two sessions, two people: each is asked about its own call only', async () => {
    const config = writeConfig(dir, { mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') }, codecall: { approval: { require: 'destructive' } } }, 'approval-http.json')
    const g = startCli(['serve', '--config', config, '--http', '0'], { env: { CODECALL_TEST_MARK: mark }, ready: /listening on (http:\/\/\S+)/ })
    const [, url] = await g.ready
    const person = (answer: string, asked: string[]) => {
      const client = new Client({ name: `person-${answer}`, version: '1' }, { capabilities: { elicitation: {} } })
      client.setRequestHandler(ElicitRequestSchema, async (r) => {
        asked.push(r.params.message)
        return { action: answer }
      })
      return client
    }
    const askedA: string[] = []
    const askedB: string[] = []
    const a = person('accept', askedA)
    const b = person('decline', askedB)
    try {
      await a.connect(new StreamableHTTPClientTransport(new URL(url)))
      await b.connect(new StreamableHTTPClientTransport(new URL(url)))
      const run = (c: Client, repo: string) =>
        callMeta(c, 'codecall_execute', { script: `const r = await callTool('gh:repo_delete', { repo: '${repo}' }, { throwOnError: false }); return r.success ? r.data.done : r.error.code` })
      const [ra, rb] = await Promise.all([run(a, 'from-a'), run(b, 'from-b')])
      expect([ra.result, rb.result], JSON.stringify([ra, rb])).toEqual(['repo_delete', 'ACCESS_DENIED'])
      expect(askedA).toHaveLength(1)
      expect(askedA[0]).toContain('from-a')
      expect(askedB).toHaveLength(1)
      expect(askedB[0]).toContain('from-b')
    } finally {
      await a.close()
      await b.close()
      g.child.kill('SIGTERM')
      await g.exited
    }
  })
})

describe('codecall exec and approvals', () => {
  it('without a terminal, whenUnavailable decides', async () => {
    const config = writeConfig(dir, { mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') }, codecall: { approval: { require: 'destructive' } } }, 'exec-approval.json')
    const r = await runCli(['exec', '--config', config, '--code', "const a = await callTool('gh:repo_delete', {}, { throwOnError: false }); const b = await callTool('gh:repo_get', {}); return [a.error.code, b.done]"])
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, value: ['ACCESS_DENIED', 'repo_get'] })
    const allowed = writeConfig(dir, { mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') }, codecall: { approval: { require: 'destructive', whenUnavailable: 'allow' } } }, 'exec-approval-allow.json')
    const r2 = await runCli(['exec', '--config', allowed, '--code', "return (await callTool('gh:repo_delete', {})).done"])
    expect(JSON.parse(r2.stdout)).toEqual({ ok: true, value: 'repo_delete' })
  })

  it.runIf(existsSync('/usr/bin/script'))('asks on the terminal when stdin is one: y / n / a', async () => {
    const config = writeConfig(dir, { mcpServers: { gh: servers.fixture(mark, '--approval-tools', '--name', 'gh') }, codecall: { approval: { require: 'destructive' } } }, 'exec-tty.json')
    const plan = join(dir, 'tty-plan.js')
    writeFileSync(plan, "const a = await callTool('gh:repo_delete', { repo: 'a' }); const b = await callTool('gh:repo_delete', { repo: 'b' }); const c = await callTool('gh:repo_touch', {}, { throwOnError: false }); return [a.done, b.done, c.error && c.error.code]")
    // util-linux `script` gives the CLI a pseudo-terminal as stdin; we type the answers.
    const child = spawn('/usr/bin/script', ['-qec', `'${process.execPath}' '${CLI}' exec --config '${config}' --file '${plan}'`, '/dev/null'], {
      env: { ...process.env, CODECALL_TEST_MARK: mark },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let out = ''
    let prompts = 0
    const answers = ['a', 'n']
    child.stdout.on('data', (c) => {
      out += c
      const seen = out.split('Allow it?').length - 1
      while (prompts < seen) child.stdin.write(`${answers[prompts++] ?? 'n'}\n`)
    })
    await new Promise((r) => child.on('exit', r))
    expect(prompts).toBe(2) // 'a' covered the second repo_delete
    const line = out.split(/\r?\n/).find((l) => l.startsWith('{"ok"'))
    expect(JSON.parse(line ?? 'null')).toEqual({ ok: true, value: ['repo_delete', 'repo_delete', 'ACCESS_DENIED'] })
  })
})
