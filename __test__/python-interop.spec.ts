// What the meta-tools answer, seen by a second MCP client implementation: the official Python SDK
// (PyPI `mcp`, pinned in __test__/python/requirements.txt) drives `codecall serve` and the example
// server (the mcp-sdk adapter) over stdio. __test__/python/meta_answers.py only reports what it
// saw; the expectations are here, the same as the JavaScript client's (serve-stdio, adapters).
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { CLI, leftovers, newMark, ROOT, servers, tempDir, writeConfig } from './gateway/helpers'

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

/** Runs the Python client against `command args`; what it saw, call by call. */
function python(plan: { command: string; args: string[]; env?: Record<string, string>; calls: { name: string; arguments?: unknown }[] }) {
  return new Promise<{ tools: string[]; outcomes: Outcome[] }>((resolve, reject) => {
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

describe.skipIf(!HAS_PYTHON)('the Python MCP SDK against codecall serve (stdio)', () => {
  it('unknown keys are refused naming the allowed ones; errors carry structuredContent; "MCP error -32602" never doubled', async () => {
    const mark = newMark()
    const dir = tempDir()
    const config = writeConfig(dir, { mcpServers: { fx: servers.fixture(mark) }, codecall: { vm: { preset: 'secure' } } })
    const { tools, outcomes } = await python({
      command: process.execPath,
      args: [CLI, 'serve', '--config', config],
      env: { CODECALL_TEST_MARK: mark },
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
