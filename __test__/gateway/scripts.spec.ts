// Spec §11 through the gateway: `codecall serve` (stdio, a real SDK Client) in front of two real
// upstream MCP servers (the fixture server, twice), with a SQLite store beside the config. A plan
// that ran is saved by its executionId, another by its code; models find them with
// codecall_search / codecall_describe and run them by name, from a plan, with invoke, after a
// restart and from a second gateway process on the same store. The gateway's policy
// (allowedServers, approvals) holds inside a saved script; the audit line names
// `saved:<name>@<version>`. And `codecall scripts list|show|remove` against that store.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { loadConfig, parseConfig } from '../../lib/gateway/index.mjs'
import { callMeta, connectStdio, leftovers, newMark, runCli, servers, startCli, tempDir, waitFor, writeConfig } from './helpers'

const mark = newMark()
const dir = tempDir()
const env = { CODECALL_TEST_MARK: mark }
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
afterAll(async () => {
  expect(await leftovers(mark)).toEqual([])
})

const upstreams = { fx: servers.fixture(mark, '--approval-tools', '--name', 'fx'), gh: servers.fixture(mark, '--name', 'gh') }
const codecall = {
  // Relative to the config file's folder, as `audit` is.
  scripts: { store: './scripts.db' },
  audit: './audit.jsonl',
  directCalls: { enabled: true },
  approval: { ask: ['fx:repo_delete'], timeoutMs: 5000 },
}
const config = writeConfig(dir, { mcpServers: upstreams, codecall })
// The same store and servers, but scripts may call only `fx`.
const narrow = writeConfig(dir, { mcpServers: upstreams, codecall: { ...codecall, allowedServers: ['fx'], audit: null } }, 'narrow.json')
const store = join(dir, 'scripts.db')
const audit = join(dir, 'audit.jsonl')

const PLAN = `const a = await callTool('fx:echo', { text: input.who })
const b = await callTool('gh:echo', { text: input.who })
return [a.server, b.server, a.echoed]`
const GREET_V2 = `const a = await callTool('fx:echo', { text: input.who })
const b = await callTool('gh:echo', { text: input.who })
return { v: 2, servers: [a.server, b.server], who: a.echoed }`
const DELETE = `return await callTool('fx:repo_delete', { repo: input.repo })`
const WHO = { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] }

/** Approves a deletion of 'gone', declines anything else (the fixture counts what arrived). */
const asked: string[] = []
const elicit = async (r: { params: { message: string } }) => {
  asked.push(r.params.message)
  return r.params.message.includes('"gone"') ? { action: 'accept', content: {} } : { action: 'decline' }
}

type Connection = Awaited<ReturnType<typeof connectStdio>>

function auditLines(): any[] {
  if (!existsSync(audit)) return []
  try {
    return readFileSync(audit, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))
  } catch {
    return [] // a line half written
  }
}

describe('saved scripts through codecall serve', () => {
  let a: Connection
  beforeAll(async () => {
    a = await connectStdio(config, [], env, elicit)
  })
  afterAll(async () => {
    await a?.client.close()
  })

  it('lists codecall_save beside the other meta-tools, all of them under 8 KB of JSON', async () => {
    const { tools } = await a.client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(['codecall_describe', 'codecall_execute', 'codecall_invoke', 'codecall_save', 'codecall_search'])
    expect(JSON.stringify(tools).length).toBeLessThan(8 * 1024)
  })

  it('saves a plan that ran by its executionId, and another by its code; a second save is the next version', async () => {
    const ran = await callMeta(a.client, 'codecall_execute', { script: PLAN, input: { who: 'ada' } })
    expect(ran).toMatchObject({ status: 'ok', result: ['fx', 'gh', 'ada'] })
    const executionId = ran.stats.executionId
    expect(typeof executionId).toBe('string')
    const first = await callMeta(a.client, 'codecall_save', {
      name: 'greet-both',
      description: 'Greet someone on both servers, fx and gh',
      executionId,
      inputSchema: WHO,
      tags: ['greeting'],
    })
    expect(first).toEqual({ name: 'saved:greet-both', version: 1 })
    const second = await callMeta(a.client, 'codecall_save', { name: 'greet-both', description: 'Greet someone on both servers, fx and gh', script: GREET_V2, inputSchema: WHO })
    expect(second).toEqual({ name: 'saved:greet-both', version: 2 })
    const del = await callMeta(a.client, 'codecall_save', { name: 'delete-repo', description: 'Delete one repository by its name', script: DELETE })
    expect(del).toEqual({ name: 'saved:delete-repo', version: 1 })
  })

  it('refuses a bad save as a result the model can read, and stores nothing', async () => {
    const r = await a.client.callTool({ name: 'codecall_save', arguments: { name: 'Bad Name', description: 'x', script: 'return 1' } })
    expect(r.isError).toBe(true)
    expect(r.structuredContent).toMatchObject({ status: 'error', error: { code: 'ERR_INVALID_ARG' } })
    const unknown = await callMeta(a.client, 'codecall_save', { name: 'ghost', description: 'x', executionId: 'no-such-execution' })
    expect(unknown).toMatchObject({ status: 'error', error: { code: 'ERR_INVALID_ARG' } })
    const syntax = await callMeta(a.client, 'codecall_save', { name: 'broken', description: 'x', script: 'return (' })
    expect(syntax).toMatchObject({ status: 'error', error: { code: 'SYNTAX_ERROR', location: { line: expect.any(Number) } } })
    const found = await callMeta(a.client, 'codecall_describe', { toolNames: ['saved:ghost', 'saved:broken', 'saved:bad-name'] })
    expect(found.tools).toEqual([])
  })

  it('search finds saved:<name>; describe gives its version, script, schema and TypeScript', async () => {
    const search = await callMeta(a.client, 'codecall_search', { query: 'greet someone on both servers' })
    const hit = search.tools.find((t: any) => t.name === 'saved:greet-both')
    expect(hit).toMatchObject({ appId: 'saved', source: 'saved', description: 'Greet someone on both servers, fx and gh' })
    const described = await callMeta(a.client, 'codecall_describe', { toolNames: ['saved:greet-both', 'saved:delete-repo'] })
    expect(described.tools.map((t: any) => t.name)).toEqual(['saved:greet-both', 'saved:delete-repo'])
    const [greet, del] = described.tools
    expect(greet).toMatchObject({ name: 'saved:greet-both', appId: 'saved', version: 2, script: GREET_V2, inputSchema: WHO })
    expect(greet.typescript).toContain("'saved:greet-both'")
    expect(greet.typescript).toMatch(/who: string/)
    expect(del).toMatchObject({ version: 1, script: DELETE })
  })

  it('runs a saved script by name (latest or name@version), with invoke, and from a plan', async () => {
    const latest = await callMeta(a.client, 'codecall_execute', { scriptName: 'greet-both', input: { who: 'grace' } })
    expect(latest).toMatchObject({ status: 'ok', result: { v: 2, servers: ['fx', 'gh'], who: 'grace' } })
    const v1 = await callMeta(a.client, 'codecall_execute', { scriptName: 'greet-both@1', input: { who: 'ada' } })
    expect(v1).toMatchObject({ status: 'ok', result: ['fx', 'gh', 'ada'] })
    const invoked = await callMeta(a.client, 'codecall_invoke', { tool: 'saved:greet-both', input: { who: 'alan' } })
    expect(invoked).toMatchObject({ status: 'ok', result: { v: 2, who: 'alan' } })
    const nested = await callMeta(a.client, 'codecall_execute', {
      script: `const r = await callTool('saved:greet-both', { who: 'nested' }); return r.who + ' ' + r.v`,
    })
    expect(nested).toMatchObject({ status: 'ok', result: 'nested 2' })
    // The saved inputSchema holds: a number where a string belongs is the caller's mistake.
    const wrong = await callMeta(a.client, 'codecall_execute', { scriptName: 'greet-both', input: { who: 5 } })
    expect(wrong.status).not.toBe('ok')
    expect(wrong.error.code).toBe('ERR_INVALID_ARG')
    const missing = await callMeta(a.client, 'codecall_execute', { scriptName: 'no-such-script' })
    expect(missing.status).not.toBe('ok')
  })

  it("writes audit lines naming saved:<name>@<version> with the saved code's hash and length", async () => {
    await waitFor(() => auditLines().filter((l) => l.tool === 'saved:greet-both@2').length >= 2, 10_000, 'the audit lines of the saved runs')
    const lines = auditLines()
    const byName = lines.filter((l) => l.tool === 'saved:greet-both@2')
    // execute({ scriptName }) and invoke of saved:greet-both, both of version 2.
    for (const line of byName) {
      expect(line).toMatchObject({ codeSha256: sha256(GREET_V2), codeLength: GREET_V2.length, status: 'ok', servers: ['fx', 'gh'] })
    }
    expect(lines.find((l) => l.tool === 'saved:greet-both@1')).toMatchObject({ codeSha256: sha256(PLAN), codeLength: PLAN.length, toolCalls: 2 })
    // A plan that calls a saved script is that plan's line (its own code), the calls inside counted.
    const planLine = lines.find((l) => l.tool === 'codecall_execute' && l.codeSha256 === sha256(`const r = await callTool('saved:greet-both', { who: 'nested' }); return r.who + ' ' + r.v`))
    expect(planLine).toMatchObject({ status: 'ok', servers: ['fx', 'gh'] })
    const text = readFileSync(audit, 'utf8')
    expect(text).not.toContain('grace')
    expect(text).not.toContain(GREET_V2)
  })

  it('asks the person before a call inside a saved script; a declined call never reaches the upstream', async () => {
    asked.length = 0
    const ok = await callMeta(a.client, 'codecall_execute', { scriptName: 'delete-repo', input: { repo: 'gone' } })
    expect(ok).toMatchObject({ status: 'ok', result: { done: 'repo_delete', input: { repo: 'gone' } } })
    const declined = await callMeta(a.client, 'codecall_execute', { scriptName: 'delete-repo', input: { repo: 'keep' } })
    expect(declined.status).not.toBe('ok')
    expect(JSON.stringify(declined.error)).toContain('ACCESS_DENIED')
    expect(declined.error.message).toMatch(/declined by the user/)
    // From a plan: the nested run's call is asked too; the saved script's failure is the call's.
    const nested = await callMeta(a.client, 'codecall_execute', {
      script: `const r = await callTool('saved:delete-repo', { repo: 'keep' }, { throwOnError: false }); return r.error`,
    })
    expect(nested.status).toBe('ok')
    expect(nested.result).toMatchObject({ code: 'TOOL_EXECUTION_ERROR', details: { code: 'ACCESS_DENIED' } })
    expect(asked).toHaveLength(3)
    expect(asked[0]).toMatch(/'repo_delete' of the MCP server 'fx'/)
    const counts = (await callMeta(a.client, 'codecall_execute', { script: "return await callTool('fx:calls', {})" })).result
    expect(counts.repo_delete).toBe(1)
  })

  it('a second gateway process on the same store finds and runs what the first saved, under its own allowedServers', async () => {
    const b = await connectStdio(narrow, [], env)
    try {
      // Saved by the first process while this one was already running.
      const saved = await callMeta(a.client, 'codecall_save', { name: 'fx-only', description: 'Echo a word on the fx server only', script: "return (await callTool('fx:echo', { text: input.word })).echoed" })
      expect(saved).toEqual({ name: 'saved:fx-only', version: 1 })
      const search = await callMeta(b.client, 'codecall_search', { query: 'echo a word on the fx server only' })
      expect(search.tools.map((t: any) => t.name)).toContain('saved:fx-only')
      expect(await callMeta(b.client, 'codecall_execute', { scriptName: 'fx-only', input: { word: 'hi' } })).toMatchObject({ status: 'ok', result: 'hi' })
      const described = await callMeta(b.client, 'codecall_describe', { toolNames: ['saved:greet-both'] })
      expect(described.tools[0]).toMatchObject({ name: 'saved:greet-both', version: 2 })
      // gh is outside this gateway's allowedServers: inside the saved script too.
      const denied = await callMeta(b.client, 'codecall_execute', { scriptName: 'greet-both', input: { who: 'x' } })
      expect(denied.status).not.toBe('ok')
      expect(denied.error.code).toBe('ACCESS_DENIED')
      expect(denied.error.message).toMatch(/allowedServers/)
      // This client cannot be asked: the approval policy's whenUnavailable (deny) decides.
      const unasked = await callMeta(b.client, 'codecall_execute', { scriptName: 'delete-repo', input: { repo: 'gone' } })
      expect(unasked.status).not.toBe('ok')
      expect(unasked.error.message).toMatch(/cannot ask for approval/)
    } finally {
      await b.client.close()
    }
  })

  it('a restarted gateway (a new process, same config and store) runs the saved scripts by name', async () => {
    await a.client.close()
    a = await connectStdio(config, [], env, elicit)
    expect(await callMeta(a.client, 'codecall_execute', { scriptName: 'greet-both', input: { who: 'again' } })).toMatchObject({
      status: 'ok',
      result: { v: 2, who: 'again' },
    })
    const described = await callMeta(a.client, 'codecall_describe', { toolNames: ['saved:fx-only'] })
    expect(described.tools[0]).toMatchObject({ name: 'saved:fx-only', version: 1 })
    // Its history is its own: an executionId of the previous process is unknown here.
    const ran = await callMeta(a.client, 'codecall_execute', { script: 'return 42' })
    const kept = await callMeta(a.client, 'codecall_save', { name: 'forty-two', description: 'The answer', executionId: ran.stats.executionId })
    expect(kept).toEqual({ name: 'saved:forty-two', version: 1 })
  })
})

describe('over HTTP, each MCP session saves from its own executions', () => {
  it("an executionId of another session is unknown; the store is everyone's", async () => {
    const file = writeConfig(dir, { mcpServers: { fx: upstreams.fx }, codecall: { scripts: { store: './http.db' } } }, 'http.json')
    const gateway = startCli(['serve', '--config', file, '--http', '0'], { env, ready: /listening on (http:\/\/\S+)/ })
    const url = (await gateway.ready)[1]
    const session = async () => {
      const client = new Client({ name: 'http-scripts', version: '1.0.0' })
      await client.connect(new StreamableHTTPClientTransport(new URL(url)))
      return client
    }
    const [one, two] = [await session(), await session()]
    try {
      const ran = await callMeta(one, 'codecall_execute', { script: "return (await callTool('fx:echo', { text: 'mine' })).echoed" })
      expect(ran).toMatchObject({ status: 'ok', result: 'mine' })
      const stolen = await callMeta(two, 'codecall_save', { name: 'stolen', description: 'Not this session', executionId: ran.stats.executionId })
      expect(stolen).toMatchObject({ status: 'error', error: { code: 'ERR_INVALID_ARG' } })
      const kept = await callMeta(one, 'codecall_save', { name: 'mine', description: 'Echo mine', executionId: ran.stats.executionId })
      expect(kept).toEqual({ name: 'saved:mine', version: 1 })
      expect(await callMeta(two, 'codecall_execute', { scriptName: 'mine' })).toMatchObject({ status: 'ok', result: 'mine' })
    } finally {
      await one.close()
      await two.close()
      gateway.child.kill('SIGTERM')
      await gateway.exited
    }
  })
})

describe('codecall scripts list | show | remove', () => {
  it('lists the latest version of each saved script, one line each', async () => {
    const r = await runCli(['scripts', 'list', '--config', config])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(['saved:delete-repo', 'saved:forty-two', 'saved:fx-only', 'saved:greet-both'])
    expect(r.stdout).toMatch(/^saved:greet-both\s+v2\s+\d{4}-\d\d-\d\dT\S+\s+Greet someone on both servers, fx and gh$/m)
    const json = await runCli(['scripts', 'list', '--config', config, '--json'])
    expect(json.code).toBe(0)
    const list = JSON.parse(json.stdout)
    expect(list.find((s: any) => s.name === 'greet-both')).toMatchObject({ version: 2, script: GREET_V2, codeSha256: sha256(GREET_V2) })
  })

  it('shows one script: its metadata, then its code; --version picks one', async () => {
    const r = await runCli(['scripts', 'show', 'greet-both', '--config', config])
    expect(r.code).toBe(0)
    expect(r.stdout.startsWith('saved:greet-both  v2\n')).toBe(true)
    expect(r.stdout).toContain('Greet someone on both servers, fx and gh')
    expect(r.stdout).toContain(sha256(GREET_V2))
    expect(r.stdout.endsWith(`\n\n${GREET_V2}\n`)).toBe(true)
    const v1 = await runCli(['scripts', 'show', 'saved:greet-both', '--version', '1', '--json', '--config', config])
    expect(v1.code).toBe(0)
    expect(JSON.parse(v1.stdout)).toMatchObject({ name: 'greet-both', version: 1, script: PLAN, inputSchema: WHO, tags: ['greeting'] })
  })

  it('removes every version of one script; the gateway no longer runs it', async () => {
    const r = await runCli(['scripts', 'remove', 'greet-both', '--config', config])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('saved:greet-both')
    const c = await connectStdio(config, [], env)
    try {
      const run = await callMeta(c.client, 'codecall_execute', { scriptName: 'greet-both', input: { who: 'x' } })
      expect(run.status).not.toBe('ok')
      expect((await callMeta(c.client, 'codecall_describe', { toolNames: ['saved:greet-both'] })).tools).toEqual([])
    } finally {
      await c.client.close()
    }
  })

  it('exits 1 for a script (or version) that is not there', async () => {
    for (const args of [['show', 'greet-both'], ['show', 'fx-only', '--version', '9'], ['remove', 'greet-both'], ['show', 'never-saved']]) {
      const r = await runCli(['scripts', ...args, '--config', config])
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stdout).toBe('')
    }
  })

  it('exits 2 for bad arguments and for a config without codecall.scripts', async () => {
    const plain = writeConfig(dir, { mcpServers: {} }, 'plain.json')
    const cases = [
      [['scripts', 'list', '--config', plain], /has no codecall\.scripts/],
      [['scripts', 'show', '--config', config], /give a script name/],
      [['scripts', 'show', 'a', 'b', '--config', config], /unexpected argument 'b'/],
      [['scripts', 'show', 'fx-only', '--version', 'two', '--config', config], /--version must be a whole number/],
      [['scripts', 'list', '--nope', '--config', config], /unknown option --nope/],
      [['scripts', 'rename', 'x', '--config', config], /unknown command 'scripts rename'/],
      [['scripts', 'list', '--config', join(dir, 'missing.json')], /cannot read/],
    ] as const
    for (const [args, reason] of cases) {
      const r = await runCli([...args])
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2)
      expect(r.stderr).toMatch(reason)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
    }
    for (const command of [[], ['list'], ['show'], ['remove']]) {
      const r = await runCli(['scripts', ...command, '--help'])
      expect(r.code).toBe(0)
      expect(r.stdout).toMatch(/^codecall scripts/)
    }
  })
})

describe('codecall.scripts in the config', () => {
  it("resolves a relative store against the config file's folder and keeps ':memory:'", () => {
    expect(loadConfig(config).codecall.scripts).toEqual({ store })
    const memory = (scripts: unknown) => parseConfig({ mcpServers: {}, codecall: { scripts } }, { baseDir: '/elsewhere' }).codecall.scripts
    expect(memory({ store: ':memory:' })).toEqual({ store: ':memory:' })
    expect(memory({ store: 'a/b.db', historySize: 5, maxDepth: 2 })).toEqual({ store: '/elsewhere/a/b.db', historySize: 5, maxDepth: 2 })
    expect(memory({ store: '/abs.db', historySize: null, maxDepth: undefined })).toEqual({ store: '/abs.db' })
    expect(memory({ store: '/abs.db', historySize: 0, maxDepth: 64 })).toEqual({ store: '/abs.db', historySize: 0, maxDepth: 64 })
    expect(() => memory({ store: '/abs.db', historySize: 10_001 })).toThrow(/codecall\.scripts\.historySize: must be a whole number from 0 to 10000/)
    expect(() => memory({ store: '/abs.db', maxDepth: 65 })).toThrow(/codecall\.scripts\.maxDepth: must be a whole number from 1 to 64/)
    // Off when left out or null.
    expect(memory(null)).toBeUndefined()
    expect(parseConfig({ mcpServers: {} }).codecall.scripts).toBeUndefined()
    expect(() => memory('./s.db')).toThrow(/codecall\.scripts: must be an object/)
    expect(() => memory({ store: 5 })).toThrow(/codecall\.scripts\.store: must be a string/)
  })

  it("'saved' is a reserved server name", async () => {
    const bad = writeConfig(dir, { mcpServers: { saved: servers.fixture(mark) }, codecall: { scripts: { store: ':memory:' } } }, 'reserved.json')
    const r = await runCli(['serve', '--config', bad])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/mcpServers\.saved: 'saved' is a reserved server name/)
  })

  it('an unknown key, a missing store or a store whose folder does not exist is a config error naming it', async () => {
    const cases = [
      [{ store: './s.db', histroySize: 3 }, /codecall\.scripts\.histroySize: unknown key/],
      [{ historySize: 3 }, /codecall\.scripts: needs 'store'/],
      [{ store: '' }, /codecall\.scripts\.store: must not be empty/],
      [{ store: './s.db', maxDepth: 0 }, /codecall\.scripts\.maxDepth: must be a whole number/],
      [{ store: './no-such-folder/s.db' }, /no-such-folder/],
    ] as const
    for (const [scripts, reason] of cases) {
      const file = writeConfig(dir, { mcpServers: {}, codecall: { scripts } }, 'bad-scripts.json')
      const r = await runCli(['serve', '--config', file])
      expect(r.code, r.stderr).toBe(2)
      expect(r.stderr).toMatch(reason)
    }
    expect(existsSync(join(dir, 'no-such-folder'))).toBe(false)
  })

  it("':memory:' needs no file; historySize and maxDepth may be null", async () => {
    const file = writeConfig(dir, { mcpServers: {}, codecall: { scripts: { store: ':memory:', historySize: null, maxDepth: null } } }, 'memory.json')
    const c = await connectStdio(file, [], env)
    try {
      expect(await callMeta(c.client, 'codecall_save', { name: 'one', description: 'One', script: 'return 1' })).toEqual({ name: 'saved:one', version: 1 })
      expect(await callMeta(c.client, 'codecall_execute', { scriptName: 'one' })).toMatchObject({ status: 'ok', result: 1 })
    } finally {
      await c.client.close()
    }
    expect(existsSync(join(dir, ':memory:'))).toBe(false)
    expect(existsSync(store)).toBe(true)
  })
})
