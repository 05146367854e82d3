// What the meta-tools answer, seen by a second MCP client implementation: the official Python SDK
// (PyPI `mcp`, pinned in __test__/python/requirements.txt) drives `codecall serve` and the example
// server (the mcp-sdk adapter) over stdio, and `codecall serve --http` over Streamable HTTP, in
// each era the client can pick (§12): legacy (initialize), auto (server/discover first) and pinned
// to 2026-07-28 — approvals included, which a modern request gets as `input_required` and the client
// answers by retrying. __test__/python/meta_answers.py only reports what it saw; the expectations
// are here, the same as the JavaScript client's (serve-stdio, serve-http, approval, adapters).
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { CLI, leftovers, newMark, ROOT, servers, startCli, tempDir, writeConfig } from './gateway/helpers'

const REQUIREMENTS = join(__dirname, 'python', 'requirements.txt')
const CLIENT = join(__dirname, 'python', 'meta_answers.py')
const VENV = join(ROOT, 'node_modules', '.cache', 'python-mcp')
const PYTHON = join(VENV, 'bin', 'python')

/** The venv with the pinned SDK, made once per change of requirements.txt. */
function venv() {
  const stamp = join(VENV, 'requirements.sha256')
  const want = createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex')
  if (existsSync(PYTHON) && existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return
  rmSync(VENV, { recursive: true, force: true })
  mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true })
  const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 })
  run('python3', ['-m', 'venv', VENV])
  run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS])
  writeFileSync(stamp, want)
}

type Outcome =
  | { result: { isError: boolean; structuredContent: any; text: string[] } }
  | { error: { code: number; message: string; str: string } }
  /** Anything else the SDK raised: a result it could not validate, say. */
  | { exception: { type: string; str: string } }

type Mode = 'legacy' | 'auto' | '2026-07-28'

type Plan = {
  /** The server over stdio, or `url`: a Streamable HTTP endpoint already listening. */
  command?: string
  args?: string[]
  env?: Record<string, string>
  url?: string
  /** How the client picks the era; legacy (initialize) unless said. */
  mode?: Mode
  /** How the person answers an elicitation; without it the client declares no elicitation capability. */
  elicit?: 'accept' | 'accept_always' | 'decline'
  calls: { name: string; arguments?: unknown }[]
}

type Seen = {
  protocolVersion: string
  tools: string[]
  /** `id`: the elicitation/create request's JSON-RPC id (legacy), or the input request's key (modern). */
  elicited: { id: number | string; mode?: string; message: string; requestedSchema?: any }[]
  outcomes: Outcome[]
}

/** Runs the Python client against the plan's server; what it saw, call by call. */
function python(plan: Plan) {
  return new Promise<Seen>((resolve, reject) => {
    const child = spawn(PYTHON, [CLIENT], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code !== 0) return reject(new Error(`the Python client exited ${code}:\n${stderr}`))
      resolve(JSON.parse(stdout))
    })
    child.stdin.end(JSON.stringify(plan))
  })
}

const EXECUTE_KEYS = 'script, context, allowedTools, language, input'
const SEARCH_KEYS = 'query, queries, topK, filter'
const FILTER_KEYS = 'appIds, tags, includeOpenApi, includeInline'

/** An argument error as a meta-tool result: `structuredContent` and its JSON text. */
function refused(message: string) {
  const structuredContent = { status: 'error', error: { code: 'ERR_INVALID_ARG', message } }
  return { result: { isError: true, structuredContent, text: [JSON.stringify(structuredContent)] } }
}

/** Python 3 with venv and pip: without it (a machine with Node alone) these tests are skipped, said once. */
const HAS_PYTHON = (() => {
  try {
    execFileSync('python3', ['-c', 'import venv, ensurepip'], { stdio: 'ignore', timeout: 30_000 })
    return true
  } catch {
    console.warn('python-interop: no python3 with venv/ensurepip on this machine: the Python MCP SDK tests are skipped')
    return false
  }
})()

beforeAll(() => {
  if (HAS_PYTHON) venv()
}, 600_000)

describe.skipIf(!HAS_PYTHON)('the Python MCP SDK against codecall serve (stdio, legacy)', () => {
  it('unknown keys are refused naming the allowed ones; errors carry structuredContent; "MCP error -32602" never doubled', async () => {
    const mark = newMark()
    const dir = tempDir()
    const config = writeConfig(dir, { mcpServers: { fx: servers.fixture(mark) }, codecall: { vm: { preset: 'secure' } } })
    const { protocolVersion, tools, outcomes } = await python({
      command: process.execPath,
      args: [CLI, 'serve', '--config', config],
      env: { CODECALL_TEST_MARK: mark },
      mode: 'legacy',
      calls: [
        { name: 'codecall_execute', arguments: { script: 'return 1', timeoutMs: 5000 } },
        { name: 'codecall_search', arguments: { query: 'echo', limit: 3 } },
        { name: 'codecall_search', arguments: { query: 'echo', filter: { appId: ['fx'] } } },
        { name: 'codecall_describe', arguments: { toolNames: ['fx:echo'], verbose: true } },
        // Every optional key may be null (absent); seed 000's describe keys are still read.
        { name: 'codecall_execute', arguments: { script: 'return input ?? 7', context: null, allowedTools: null, language: null, input: null } },
        { name: 'codecall_search', arguments: { query: 'echo the text', queries: null, topK: null, filter: null } },
        { name: 'codecall_describe', arguments: { tools: ['fx:echo'], max: null } },
        { name: 'codecall_execute', arguments: { script: 'return (' } },
        { name: 'fx:echo', arguments: { text: 'hi' } },
      ],
    })
    expect(protocolVersion).toBe('2025-11-25')
    expect(tools).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
    expect(outcomes.slice(0, 4)).toEqual([
      refused(`codecall_execute: unknown key 'timeoutMs' (allowed: ${EXECUTE_KEYS})`),
      refused(`codecall_search: unknown key 'limit' (allowed: ${SEARCH_KEYS})`),
      refused(`codecall_search: unknown key 'filter.appId' (allowed in filter: ${FILTER_KEYS})`),
      refused(`codecall_describe: unknown key 'verbose' (allowed: toolNames)`),
    ])
    const [execute, search, describe_, syntax, unknown] = outcomes.slice(4) as any[]
    expect(execute.result).toMatchObject({ isError: false, structuredContent: { status: 'ok', result: 7 } })
    expect(search.result.structuredContent.tools[0].name).toBe('fx:echo')
    expect(describe_.result.structuredContent.tools.map((t: any) => t.name)).toEqual(['fx:echo'])
    // An error of the script is a result with structuredContent too (as it always was).
    expect(syntax.result).toMatchObject({ isError: true, structuredContent: { status: 'syntax_error', error: { code: 'SYNTAX_ERROR' } } })
    // The wire message has no "MCP error" prefix of its own: this client shows it as it came.
    const message = 'Unknown tool: fx:echo (this server lists codecall_search, codecall_describe, codecall_execute)'
    expect(unknown).toEqual({ error: { code: -32602, message, str: message } })
    expect(await leftovers(mark)).toEqual([])
  })
})

describe.skipIf(!HAS_PYTHON)('the Python MCP SDK against the example server (mcp-sdk adapter, stdio)', () => {
  it('the same answers from codeMode(server), invoke included', async () => {
    const { tools, outcomes } = await python({
      command: process.execPath,
      args: [join(ROOT, 'examples', 'mcp-server', 'server.mjs')],
      mode: 'legacy',
      calls: [
        { name: 'codecall:invoke', arguments: { tool: 'users:get', input: { userId: 'usr_001' }, timeoutMs: 100 } },
        { name: 'codecall:execute', arguments: { script: 'return 1', timeoutMs: 5000 } },
        { name: 'codecall:invoke', arguments: { tool: 'users:get', input: null } },
        { name: 'users:get', arguments: { userId: 'usr_001' } },
      ],
    })
    expect(tools.slice(0, 4)).toEqual(['codecall:search', 'codecall:describe', 'codecall:execute', 'codecall:invoke'])
    const [invokeKey, executeKey, invokeNull, unknown] = outcomes as any[]
    expect(invokeKey).toEqual(refused("codecall:invoke: unknown key 'timeoutMs' (allowed: tool, input)"))
    expect(executeKey).toEqual(refused(`codecall:execute: unknown key 'timeoutMs' (allowed: ${EXECUTE_KEYS})`))
    // input: null is {} — the tool's own validation answers, as a result with structuredContent.
    expect(invokeNull.result.isError).toBe(true)
    expect(invokeNull.result.structuredContent).toMatchObject({ status: 'error', error: { toolName: 'users:get' } })
    expect(unknown).toEqual({ error: { code: -32602, message: 'Unknown tool: users:get', str: 'Unknown tool: users:get' } })
  })
})

/** How the Python client reaches `codecall serve --config <config>`: it starts it over stdio, or a
 *  gateway started here with `--http 0` serves it (its URL read from the "listening on" line). */
type Era = { mode: Mode; transport: 'stdio' | 'http' }
const ERAS: Era[] = [
  { mode: '2026-07-28', transport: 'stdio' },
  { mode: 'auto', transport: 'stdio' },
  { mode: '2026-07-28', transport: 'http' },
  { mode: 'auto', transport: 'http' },
]

async function viaGateway(era: Era, config: string, mark: string, plan: Omit<Plan, 'command' | 'args' | 'env' | 'url' | 'mode'>) {
  if (era.transport === 'stdio') {
    return python({ ...plan, mode: era.mode, command: process.execPath, args: [CLI, 'serve', '--config', config], env: { CODECALL_TEST_MARK: mark } })
  }
  const gateway = startCli(['serve', '--config', config, '--http', '0'], { env: { CODECALL_TEST_MARK: mark }, ready: /listening on (http:\/\/\S+)/ })
  try {
    const [, url] = await gateway.ready
    return await python({ ...plan, mode: era.mode, url })
  } finally {
    gateway.child.kill('SIGTERM')
    await gateway.exited
  }
}

/** The entities of the memory server's file (one JSON line each; absent before its first write). */
function entities(file: string): string[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === 'entity')
    .map((e) => e.name)
}

const exceptions = (outcomes: Outcome[]) => outcomes.filter((o) => 'exception' in o)

describe.skipIf(!HAS_PYTHON)('the Python MCP SDK against codecall serve, modern (2026-07-28) and auto', () => {
  for (const era of ERAS) {
    it(`${era.mode} over ${era.transport}: lists, search, describe, execute (a write happens once and is reported ok), the same refusals`, async () => {
      const mark = newMark()
      const dir = tempDir()
      const memory = join(dir, 'memory.jsonl')
      const config = writeConfig(dir, {
        mcpServers: { fx: servers.fixture(mark, '--approval-tools'), memory: servers.memory(mark, memory) },
        codecall: { vm: { preset: 'secure' } },
      })
      const write = "return await callTool('memory:create_entities', { entities: [{ name: 'ada', entityType: 'person', observations: ['wrote once'] }] })"
      const seen = await viaGateway(era, config, mark, {
        calls: [
          { name: 'codecall_search', arguments: { query: 'echo the text' } },
          { name: 'codecall_describe', arguments: { toolNames: ['fx:echo'] } },
          { name: 'codecall_execute', arguments: { script: "return await callTool('fx:echo', { text: 'hi' })" } },
          { name: 'codecall_execute', arguments: { script: write } },
          { name: 'codecall_execute', arguments: { script: 'return 1', timeoutMs: 5000 } },
          { name: 'codecall_search', arguments: { query: 'echo', limit: 3 } },
          { name: 'codecall_describe', arguments: { toolNames: ['fx:echo'], verbose: true } },
          { name: 'codecall_execute', arguments: { script: 'return (' } },
          { name: 'fx:echo', arguments: { text: 'hi' } },
          { name: 'codecall_execute', arguments: { script: "return [await callTool('fx:calls', {}), (await callTool('memory:read_graph', {})).entities.map((e) => e.name)]" } },
        ],
      })
      // Both auto and pinned settle on the modern era: the gateway answers server/discover.
      expect(seen.protocolVersion).toBe('2026-07-28')
      expect(seen.tools).toEqual(['codecall_search', 'codecall_describe', 'codecall_execute'])
      // Every answer is one the SDK accepts as a 2026-07-28 result: nothing raised but MCP errors.
      expect(exceptions(seen.outcomes), JSON.stringify(seen.outcomes)).toEqual([])
      const [search, describe_, echo, written, ...rest] = seen.outcomes as any[]
      expect(search.result.structuredContent.tools[0].name).toBe('fx:echo')
      expect(describe_.result.structuredContent.tools.map((t: any) => t.name)).toEqual(['fx:echo'])
      expect(echo.result).toMatchObject({ isError: false, structuredContent: { status: 'ok', result: { echoed: 'hi' } } })
      // The bug: a pinned client over stdio saw this answer as a validation error although the
      // write had happened. The client reports success, and the write happened once.
      expect(written.result).toMatchObject({ isError: false, structuredContent: { status: 'ok', result: { entities: [{ name: 'ada', entityType: 'person' }] } } })
      expect(entities(memory)).toEqual(['ada'])
      const [executeKey, searchKey, describeKey, syntax, unknown, after] = rest
      expect([executeKey, searchKey, describeKey]).toEqual([
        refused(`codecall_execute: unknown key 'timeoutMs' (allowed: ${EXECUTE_KEYS})`),
        refused(`codecall_search: unknown key 'limit' (allowed: ${SEARCH_KEYS})`),
        refused(`codecall_describe: unknown key 'verbose' (allowed: toolNames)`),
      ])
      expect(syntax.result).toMatchObject({ isError: true, structuredContent: { status: 'syntax_error', error: { code: 'SYNTAX_ERROR' } } })
      const message = 'Unknown tool: fx:echo (this server lists codecall_search, codecall_describe, codecall_execute)'
      expect(unknown).toEqual({ error: { code: -32602, message, str: message } })
      // Each upstream call ran once: the echo, and nothing was repeated behind the client's back.
      expect(after.result.structuredContent).toMatchObject({ status: 'ok', result: [{ echo: 1, calls: 1 }, ['ada']] })
      expect(seen.elicited).toEqual([])
      expect(await leftovers(mark)).toEqual([])
    }, 180_000)
  }
})

describe.skipIf(!HAS_PYTHON)('the Python MCP SDK answers approvals (§9, §12: input_required on modern requests)', () => {
  for (const era of [{ mode: 'legacy', transport: 'stdio' } as Era, ...ERAS]) {
    it(`${era.mode} over ${era.transport}: accepted, each write runs once and nothing before it runs again, round after round; declined, ACCESS_DENIED; no capability, whenUnavailable`, async () => {
      const mark = newMark()
      const dir = tempDir()
      const memory = join(dir, 'memory.jsonl')
      const config = writeConfig(dir, {
        mcpServers: { fx: servers.fixture(mark, '--approval-tools'), memory: servers.memory(mark, memory) },
        codecall: { vm: { preset: 'secure' }, approval: { require: 'writes', timeoutMs: 30_000 } },
      })
      // A read-only call (never asked) before the write (asked): on a modern request the first
      // request ends with input_required after repo_get ran; the retry must not run it again.
      const plan = (name: string) => ({
        name: 'codecall_execute',
        arguments: {
          script: `
            const read = await callTool('fx:repo_get', { repo: 'x' })
            const made = await callTool('memory:create_entities', { entities: [{ name: '${name}', entityType: 'person', observations: [] }] })
            return [read.done, made.entities.map((e) => e.name)]`,
        },
      })
      const counts = { name: 'codecall_execute', arguments: { script: "return await callTool('fx:calls', {})" } }

      // Two writes in a row: a second round, and still nothing before it runs again.
      const rounds = {
        name: 'codecall_execute',
        arguments: { script: "const a = await callTool('fx:repo_touch', {}); const b = await callTool('fx:repo_delete', { repo: 'x' }); return [a.done, b.done]" },
      }
      const accepted = await viaGateway(era, config, mark, { elicit: 'accept', calls: [plan('ada'), rounds, counts] })
      expect(accepted.protocolVersion).toBe(era.mode === 'legacy' ? '2025-11-25' : '2026-07-28')
      expect(exceptions(accepted.outcomes), JSON.stringify(accepted.outcomes)).toEqual([])
      const [ran, twice, countsAfter] = accepted.outcomes as any[]
      expect(ran.result, JSON.stringify(ran)).toMatchObject({ isError: false, structuredContent: { status: 'ok', result: ['repo_get', ['ada']] } })
      expect(twice.result, JSON.stringify(twice)).toMatchObject({ isError: false, structuredContent: { status: 'ok', result: ['repo_touch', 'repo_delete'] } })
      // The person was asked once per write, with §9's message and schema: on a modern request by
      // the input_required result (keyed by callId, a string), on legacy by elicitation/create (a JSON-RPC id).
      expect(accepted.elicited.map((e) => /the tool '(\w+)' of the MCP server '(\w+)'/.exec(e.message)?.slice(1).join(':'))).toEqual([
        'create_entities:memory',
        'repo_touch:fx',
        'repo_delete:fx',
      ])
      for (const e of accepted.elicited) {
        expect(typeof e.id).toBe(era.mode === 'legacy' ? 'number' : 'string')
        expect(e.requestedSchema).toEqual({ type: 'object', properties: { always: expect.objectContaining({ type: 'boolean' }) } })
      }
      expect(accepted.elicited[0].message).toContain('"name": "ada"')
      expect(countsAfter.result.structuredContent).toMatchObject({ status: 'ok', result: { repo_get: 1, repo_touch: 1, repo_delete: 1, calls: 1 } })
      expect(entities(memory)).toEqual(['ada'])

      const declined = await viaGateway(era, config, mark, { elicit: 'decline', calls: [plan('bob'), counts] })
      expect(exceptions(declined.outcomes), JSON.stringify(declined.outcomes)).toEqual([])
      const [denied, countsDenied] = declined.outcomes as any[]
      expect(denied.result, JSON.stringify(denied)).toMatchObject({
        isError: true,
        structuredContent: {
          status: 'tool_error',
          error: { code: 'ACCESS_DENIED', toolName: 'memory:create_entities', message: "Tool 'memory:create_entities' was not approved: declined by the user" },
        },
      })
      expect(declined.elicited).toHaveLength(1)
      expect(countsDenied.result.structuredContent).toMatchObject({ status: 'ok', result: { repo_get: 1, calls: 1 } })
      expect(entities(memory)).toEqual(['ada'])

      // A client that declared no elicitation capability is not asked: whenUnavailable (deny).
      const unasked = await viaGateway(era, config, mark, { calls: [plan('eve')] })
      expect(exceptions(unasked.outcomes), JSON.stringify(unasked.outcomes)).toEqual([])
      expect((unasked.outcomes[0] as any).result.structuredContent).toMatchObject({
        status: 'tool_error',
        error: { code: 'ACCESS_DENIED', message: "Tool 'memory:create_entities' was not approved: the client cannot ask for approval" },
      })
      expect(unasked.elicited).toEqual([])
      expect(entities(memory)).toEqual(['ada'])
      expect(await leftovers(mark)).toEqual([])
    }, 180_000)
  }
})
