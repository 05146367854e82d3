// `codecall exec` / `codecall search` / `--help` / `--version` as a child process (as a user runs
// them): stdout JSON, stderr one line, exit codes 0 / 1 / 2. And the config's checks, each a
// one-line error naming the key path.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError, globToRegExp, loadConfig, parseConfig } from '../../lib/gateway/index.mjs'
import { callMeta, connectStdio, leftovers, newMark, ROOT, runCli, servers, tempDir, writeConfig } from './helpers'

const mark = newMark()
const dir = tempDir()
const config = writeConfig(dir, {
  mcpServers: {
    fx: { ...servers.fixture(mark), exclude: ['admin_*'] },
    other: servers.fixture(mark, '--name', 'other'),
  },
  codecall: { callTimeoutMs: 3000 },
})

afterAll(async () => {
  expect(await leftovers(mark)).toEqual([])
})

const exec = (...args: string[]) => runCli(['exec', '--config', config, ...args])
const json = (out: string) => JSON.parse(out.trim())

describe('codecall exec', () => {
  it("runs seed 004's first example: input in, the last expression's value out", async () => {
    const r = await runCli(['exec', '--code', '({ result: input.value * 2 })', '--input', '{"value": 21}'], { cwd: dir })
    expect(r.code).toBe(0)
    expect(json(r.stdout)).toEqual({ ok: true, value: { result: 42 } })
  })

  it('runs TypeScript from a file with input from a file', async () => {
    writeFileSync(join(dir, 'plan.ts'), `const x: number = input.n; const msg: string = 'hello'; ({ result: x + 1, message: msg })`)
    writeFileSync(join(dir, 'input.json'), '{"n": 41}')
    const r = await exec('--file', join(dir, 'plan.ts'), '--language', 'typescript', '--input-file', join(dir, 'input.json'))
    expect(r.code).toBe(0)
    expect(json(r.stdout)).toEqual({ ok: true, value: { result: 42, message: 'hello' } })
  })

  it('calls upstream tools with callTool, call_tool and mcp.callTool', async () => {
    const r = await exec('--code', `
      const a = await callTool('fx:echo', { text: 'a' })
      const b = await call_tool('other', 'echo', { text: 'b' })
      const c = await mcp.callTool('fx', 'echo', { text: 'c' })
      return [a.echoed, b.result.echoed, c.content[0].text]`)
    expect(r.code).toBe(0)
    expect(json(r.stdout).value).toEqual(['a', 'b', '{"echoed":"c","server":"fixture"}'])
  })

  it('prints undefined as null', async () => {
    const r = await exec('--code', 'const x = 1')
    expect(json(r.stdout)).toEqual({ ok: true, value: null })
  })

  it.each([
    ['syntax error', ['--code', 'var x = { missing bracket'], 'SYNTAX_ERROR'],
    ['runtime error', ['--code', 'var x = null; x.property'], 'EXECUTION_ERROR'],
    ['validation', ['--code', 'eval("1")'], 'VALIDATION_ERROR'],
    ['timeout', ['--code', "await callTool('fx:hang')", '--timeout', '300'], 'TIMEOUT'],
    ['tool error', ['--code', "await callTool('fx:fail')"], 'TOOL_EXECUTION_ERROR'],
    ['tool calls', ['--code', "await callTool('fx:echo', {text:'1'}); await callTool('fx:echo', {text:'2'})", '--max-tool-calls', '1'], 'MAX_TOOL_CALLS_EXCEEDED'],
    ['server not allowed', ['--code', "await callTool('other:echo', {text:'1'})", '--allowed-servers', 'fx'], 'ACCESS_DENIED'],
    ['not JSON', ['--code', 'return { f() {} }'], 'SERIALIZATION_ERROR'],
  ])('exits 1 with the error on stdout: %s', async (_, args, code) => {
    const r = await exec(...args)
    expect(r.code).toBe(1)
    const out = json(r.stdout)
    expect(out.ok).toBe(false)
    expect(out.error.code).toBe(code)
    expect(typeof out.error.message).toBe('string')
  })

  it('gives a runtime error its stack, naming only the script', async () => {
    const r = await exec('--code', 'const a = 1\nnull.x;\nconst b = 2')
    const out = json(r.stdout)
    expect(out.error.stack).toMatch(/^TypeError: .*\n +at script\.js:2:\d+/)
    expect(out.error.stack).not.toMatch(/lib\/gateway|node_modules|\.rs/)
  })

  it('lets call_tool report a server outside --allowed-servers without throwing', async () => {
    const r = await exec('--allowed-servers', 'fx', '--code', "return await call_tool('other', 'echo', { text: 'x' })")
    expect(json(r.stdout)).toEqual({ ok: true, value: { ok: false, error: { code: 'ACCESS_DENIED', message: "MCP server 'other' is not in allowedServers" } } })
  })

  it('exits 130 on SIGINT mid-run, leaving no upstream behind', async () => {
    const { spawn } = await import('node:child_process')
    const child = spawn(process.execPath, [join(ROOT, 'lib/gateway/cli.mjs'), 'exec', '--config', config, '--timeout', '30000', '--code', "await callTool('fx:hang')"], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CODECALL_TEST_MARK: mark },
    })
    await new Promise((r) => setTimeout(r, 1500))
    child.kill('SIGINT')
    const code = await new Promise((r) => child.on('exit', (c) => r(c)))
    expect(code).toBe(130)
  })

  it('--max-tool-calls 0 means no limit', async () => {
    const script = "return await Array.from({ length: 120 }, (_, i) => i).reduce(async (n, i) => (await n) + ((await callTool('fx:echo', { text: String(i) })).echoed === String(i) ? 1 : 0), 0)"
    const r = await exec('--max-tool-calls', '0', '--code', script, '--timeout', '30000')
    expect(json(r.stdout)).toEqual({ ok: true, value: 120 })
  })

  it.each([
    ['no script', []],
    ['both --code and --file', ['--code', '1', '--file', 'x.js']],
    ['an unknown option', ['--code', '1', '--nope']],
    ['input that is not JSON', ['--code', '1', '--input', '{value: 1}']],
    ['a bad timeout', ['--code', '1', '--timeout', 'soon']],
    ['a timeout out of range', ['--code', '1', '--timeout', '600001']],
    ['a bad language', ['--code', '1', '--language', 'python']],
    ['an unknown allowed server', ['--code', '1', '--allowed-servers', 'fx,ghost']],
    ['a missing script file', ['--file', join(dir, 'nope.js')]],
    ['an option without its value', ['--code']],
    ['an empty --allowed-servers', ['--code', '1', '--allowed-servers', ',']],
  ])('exits 2 with one line on stderr for %s', async (_, args) => {
    const r = await exec(...args)
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/^codecall: /)
  })
})

describe('configuration errors', () => {
  const cases: [string, unknown, RegExp][] = [
    ['a wrong type', { mcpServers: { a: { command: 'x', args: 'not-a-list' } } }, /mcpServers\.a\.args: must be an array of strings \(got a string\)/],
    ['an unknown key', { mcpServers: { a: { command: 'x', exclued: ['y'] } } }, /mcpServers\.a\.exclued: unknown key/],
    ['an unknown codecall key', { mcpServers: {}, codecall: { callTimeoutMS: 5 } }, /codecall\.callTimeoutMS: unknown key \(did you mean 'callTimeoutMs'\?\)/],
    ['an unknown vm key', { mcpServers: {}, codecall: { vm: { timeout: 5 } } }, /codecall\.vm\.timeout: unknown key/],
    ['a missing variable', { mcpServers: { a: { url: 'https://h/mcp', headers: { Authorization: 'Bearer ${CODECALL_TEST_UNSET_VAR}' } } } }, /mcpServers\.a\.headers\.Authorization: environment variable \$\{CODECALL_TEST_UNSET_VAR\} is not set/],
    ['both command and url', { mcpServers: { a: { command: 'x', url: 'http://h' } } }, /mcpServers\.a: has both 'command' and 'url'/],
    ['neither command nor url', { mcpServers: { a: {} } }, /mcpServers\.a: needs 'command'/],
    ['a bad mode', { mcpServers: {}, codecall: { mode: 'everything' } }, /codecall\.mode: must be one of/],
    ['an unknown allowed server', { mcpServers: { a: { command: 'x' } }, codecall: { allowedServers: ['b'] } }, /codecall\.allowedServers\[0\]: 'b' is not a server/],
    ['a bad server name', { mcpServers: { 'my server': { command: 'x' } } }, /mcpServers\.my server: server names may use only/],
    ['a non-http url', { mcpServers: { a: { url: 'ftp://h/x' } } }, /mcpServers\.a\.url: must be an http/],
    ['a bad top-level key', { mcpServer: {} }, /mcpServer: unknown key/],
    ['a timeout a timer cannot hold', { mcpServers: {}, codecall: { callTimeoutMs: 2 ** 31 } }, /codecall\.callTimeoutMs: must be a whole number from 1 to 2147483647/],
    ['a server named __proto__', { mcpServers: { ['__proto__']: { command: 'x' } } }, /mcpServers\.__proto__: server names/],
  ]

  it.each(cases)('exec exits 2 naming the key path for %s', async (_, raw, message) => {
    const file = writeConfig(dir, raw, `bad-${Math.random().toString(36).slice(2)}.json`)
    const r = await runCli(['exec', '--config', file, '--code', '1'])
    expect(r.code).toBe(2)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(message)
  })

  it('serve exits 2 on a config error too, and without a config at all', async () => {
    const file = writeConfig(dir, { mcpServers: { a: { command: 1 } } }, 'bad-serve.json')
    const bad = await runCli(['serve', '--config', file])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/mcpServers\.a\.command: must be a string \(got a number\)/)
    const none = await runCli(['serve'], { cwd: tempDir() })
    expect(none.code).toBe(2)
    expect(none.stderr).toMatch(/cannot read \.\/codecall\.json: no such file/)
  })

  it('reads ${VAR} and ${VAR:-default} from the environment', () => {
    const c = parseConfig(
      { mcpServers: { a: { command: '${CMD}', args: ['--x=${MISSING:-fallback}'], env: { K: '${KEY}' } } } },
      { env: { CMD: 'node', KEY: 'k1' } },
    )
    expect(c.servers[0]).toMatchObject({ name: 'a', transport: 'stdio', command: 'node', args: ['--x=fallback'], env: { K: 'k1' } })
  })

  it('fills the defaults of the codecall section (separator _ here)', () => {
    const c = parseConfig({ mcpServers: {} })
    expect(c.codecall).toMatchObject({ mode: 'codecall_only', metaToolSeparator: '_', metaToolPrefix: 'codecall', allowedServers: [], callTimeoutMs: 60_000, audit: null, directCalls: { enabled: false } })
  })

  it('codecall.cacheDir: a folder relative to the config file, false for none, the user cache folder when absent', async () => {
    const base = { mcpServers: {} }
    expect(parseConfig(base).codecall.cacheDir).toBeUndefined()
    expect(parseConfig({ ...base, codecall: { cacheDir: null } }).codecall.cacheDir).toBeUndefined()
    expect(parseConfig({ ...base, codecall: { cacheDir: false } }).codecall.cacheDir).toBe(false)
    expect(parseConfig({ ...base, codecall: { cacheDir: 'vec' } }, { baseDir: '/etc/cc' }).codecall.cacheDir).toBe('/etc/cc/vec')
    expect(() => parseConfig({ ...base, codecall: { cacheDir: 7 } })).toThrow(/codecall\.cacheDir/)
    expect(() => parseConfig({ ...base, codecall: { cacheDir: '' } })).toThrow(/codecall\.cacheDir/)
    const { userCacheDir } = await import('../../lib/gateway/index.mjs')
    if (process.platform === 'linux') {
      expect(userCacheDir({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' })).toBe('/x/cache/codecall')
      expect(userCacheDir({ HOME: '/home/u' })).toBe('/home/u/.cache/codecall')
    }
  })

  it("accepts VS Code's `servers`, `type`, `disabled` and JSON comments", () => {
    const file = join(dir, 'vscode.json')
    writeFileSync(file, `{
      // VS Code's .vscode/mcp.json
      "servers": {
        "a": { "type": "stdio", "command": "node", "args": ["a // not a comment"] },
        "b": { "type": "http", "url": "http://127.0.0.1:1/mcp" },
        "c": { "command": "node", "disabled": true } /* skipped */
      }
    }`)
    const c = loadConfig(file)
    expect(c.servers.map((s) => [s.name, s.transport])).toEqual([['a', 'stdio'], ['b', 'http']])
    expect(c.servers[0]).toMatchObject({ args: ['a // not a comment'] })
  })

  it('throws ConfigError with a code and a path', () => {
    try {
      parseConfig({ mcpServers: { a: { command: 'x', include: [1] } } })
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError)
      expect(e).toMatchObject({ code: 'CONFIG_INVALID', path: 'mcpServers.a.include[0]' })
    }
  })

  it('matches include/exclude globs on whole names', () => {
    expect(globToRegExp('get-*').test('get-sum')).toBe(true)
    expect(globToRegExp('get-*').test('forget-sum')).toBe(false)
    expect(globToRegExp('*_admin').test('users_admin')).toBe(true)
    expect(globToRegExp('a.b?').test('a.bc')).toBe(true)
    expect(globToRegExp('a.b?').test('axbc')).toBe(false)
  })
})

describe('codecall search, --help, --version', () => {
  it('prints the ranked tools a model would find', async () => {
    const r = await runCli(['search', 'echo the text back', '--config', config])
    expect(r.code).toBe(0)
    const first = r.stdout.split('\n')[0]
    expect(first).toMatch(/^\d\.\d{4} {2}(fx|other):echo +Echo the given text back$/)
    expect(r.stdout).toMatch(/of 19 tools\n$/)
    expect(r.stdout).not.toMatch(/internal_secrets_get|config_set|workspace_root|fx:admin_reset/)
    const asJson = await runCli(['search', 'echo', '--config', config, '--json', '--top-k', '2'])
    const parsed = JSON.parse(asJson.stdout)
    expect(parsed.tools).toHaveLength(2)
    expect(parsed.totalIndexed).toBe(19)
  })

  it('finds what a person means in front of the memory and everything servers from npm (issue 33)', async () => {
    // The issue's first report: "store a fact about a person" found nothing and "store information
    // in memory" found no memory tool. The vectors go to a cache folder of this test.
    const d = tempDir()
    const cfg = writeConfig(d, {
      mcpServers: { memory: servers.memory(mark, join(d, 'memory.jsonl')), everything: servers.everything(mark) },
      codecall: { cacheDir: join(d, 'vectors') },
    })
    const top = async (query: string) => {
      const r = await runCli(['search', query, '--config', cfg, '--json', '--top-k', '5'])
      expect(r.code).toBe(0)
      return (JSON.parse(r.stdout).tools as { name: string }[]).map((t) => t.name)
    }
    expect((await top('store a fact about a person')).some((n) => n.startsWith('memory:'))).toBe(true)
    expect((await top('store information in memory'))[0]).toMatch(/^memory:/)
    // Unrelated to every tool: the model brings nothing in.
    expect(await top('bake a chocolate cake')).toEqual([])
  }, 120_000)

  it.each([[[]], [['--help']], [['serve', '--help']], [['exec', '--help']], [['search', '--help']], [['help', 'exec']]])('prints help: %j', async (args) => {
    const r = await runCli(args)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/codecall/)
    expect(r.stdout).toMatch(/--/)
  })

  it('prints the version', async () => {
    const r = await runCli(['--version'])
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version)
  })

  it('exits 2 for an unknown command', async () => {
    const r = await runCli(['serve-all'])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/unknown command 'serve-all'/)
  })
})

// api.md §6: the config's allowedServers. The other servers' tools are not indexed, yet a script
// that names one gets ACCESS_DENIED naming the policy — every way a script calls a tool, and
// invoke — in both isolations.
describe.each(['process', 'thread'])('config allowedServers (%s isolation)', (isolation) => {
  const cfg = writeConfig(
    dir,
    {
      mcpServers: { fx: servers.fixture(mark), other: servers.fixture(mark, '--name', 'other') },
      codecall: { allowedServers: ['fx'], directCalls: { enabled: true }, vm: { isolation }, callTimeoutMs: 3000 },
    },
    `allowed-${isolation}.json`,
  )
  const script = `
    const a = await callTool('other:echo', { text: 'x' }, { throwOnError: false })
    const b = await call_tool('other', 'echo', { text: 'x' })
    let c
    try { await mcp.callTool('other', 'echo', { text: 'x' }) } catch (e) { c = e.code }
    const mine = await callTool('fx:echo', { text: 'mine' })
    return { a: a.error, b: b.error.code, c, described: getTool('other:echo'), unknown: (await callTool('nope:echo', {}, { throwOnError: false })).error.code, mine: mine.echoed }`

  it('refuses a script naming another server with ACCESS_DENIED, not TOOL_NOT_FOUND', async () => {
    const r = await runCli(['exec', '--config', cfg, '--code', script])
    expect(r.stderr).toBe('')
    expect(json(r.stdout)).toEqual({
      ok: true,
      value: {
        a: { code: 'ACCESS_DENIED', message: "Tool 'other:echo' is not allowed: MCP server 'other' is not in allowedServers" },
        b: 'ACCESS_DENIED',
        c: 'ACCESS_DENIED',
        described: null,
        unknown: 'TOOL_NOT_FOUND',
        mine: 'mine',
      },
    })
  })

  it('refuses invoke of another server the same way, and search does not find it', async () => {
    const { client } = await connectStdio(cfg, [], { CODECALL_TEST_MARK: mark })
    try {
      const invoked = await callMeta(client, 'codecall_invoke', { tool: 'other:echo', input: { text: 'x' } })
      expect(invoked).toMatchObject({ status: 'error', error: { code: 'ACCESS_DENIED', message: "Tool 'other:echo' is not allowed: MCP server 'other' is not in allowedServers" } })
      const found = await callMeta(client, 'codecall_search', { query: 'echo the text back' })
      const names: string[] = found.tools.map((t: { name: string }) => t.name)
      expect(names).toContain('fx:echo')
      expect(names.filter((n) => !n.startsWith('fx:'))).toEqual([])
      const pids = await callMeta(client, 'codecall_execute', { script: "return (await mcp.listServers()).map((s) => s.name)" })
      expect(pids).toMatchObject({ status: 'ok', result: ['fx'] })
    } finally {
      await client.close()
    }
  })
})
