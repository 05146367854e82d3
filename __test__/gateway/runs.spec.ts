// Runs that outlive a process (api.md §12, "Runs that outlive a process"): `codecall serve` over
// Streamable HTTP, several processes sharing one `codecall.stateKey` and one run store
// (`codecall.runs.store`, a SQLite file). A modern (2026-07-28) execute that reaches a call needing
// approval answers `input_required`; the retry, sent to the same process or to another one (or to
// a fresh process after the first was killed), goes on: the other process replays the script
// against the journal — no tool runs again — then goes on live. A state continues a run once,
// whichever process gets it first. Raw JSON-RPC with the modern `_meta` envelope, as modern.spec's
// sealed-state tests.
//
// The upstream (`fixtures/gateway/counting-server.mjs`) appends every call it gets to one file that
// all its copies share (one per gateway process), so the counts below are across processes.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, isRunning, leftovers, newMark, startCli, tempDir, waitFor, writeConfig } from './helpers'

const MODERN = '2026-07-28'
const TOKEN = 'http-token-for-the-runs-spec'
const COUNTING = join(ROOT, '__test__/fixtures/gateway/counting-server.mjs')

const mark = newMark()
const dir = tempDir()
/** Every tool call any copy of the upstream got, one JSON line each. */
const callsLog = join(dir, 'calls.jsonl')
/** The run store every gateway of this file shares. */
const store = join(dir, 'runs.db')

/**
 * The config of one gateway (all the same but for the audit file, `<name>-audit.jsonl`): the
 * counting upstream, approval asked for `fx:write_x` only, the shared key and run store.
 */
function gatewayConfig(name: string): string {
  return writeConfig(
    dir,
    {
      mcpServers: { fx: { command: process.execPath, args: [COUNTING, '--log', callsLog], env: { CODECALL_TEST_MARK: mark } } },
      codecall: {
        approval: { ask: ['fx:write_x'], timeoutMs: 30_000 },
        stateKey: 'a-state-key-shared-by-the-runs-spec-gateways',
        runs: { store },
        audit: `${name}-audit.jsonl`,
      },
    },
    `${name}.json`,
  )
}

type Gateway = { name: string; url: string; pid: number; kill: (signal?: NodeJS.Signals) => Promise<void> }
const started: ReturnType<typeof startCli>[] = []

/** `codecall serve --http 0` with `gatewayConfig(config)`; resolves once it listens. */
async function startGateway(config: string): Promise<Gateway> {
  const file = join(dir, `${config}.json`)
  if (!existsSync(file)) gatewayConfig(config)
  const cli = startCli(['serve', '--config', file, '--http', '0', '--token', TOKEN], { env: { CODECALL_TEST_MARK: mark }, ready: /listening on (\S+)/ })
  started.push(cli)
  const url = (await cli.ready)[1]
  return {
    name: config,
    url,
    pid: cli.child.pid as number,
    kill: async (signal = 'SIGTERM') => {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill(signal)
      await cli.exited
    },
  }
}

/** The audit lines of the gateways started with config `name`. */
function auditLines(name: string): any[] {
  const file = join(dir, `${name}-audit.jsonl`)
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')

/** The audit lines of `name` for `script` once `ready(lines)` holds (a line is written as its run ends, maybe after the answer). */
function auditOf(name: string, script: string, ready: (lines: any[]) => boolean = (lines) => lines.length > 0): Promise<any[]> {
  const lines = () => auditLines(name).filter((l) => l.codeSha256 === sha256(script))
  return waitFor(() => (ready(lines()) ? lines() : null), 10_000, `the audit line of ${name}`) as Promise<any[]>
}

/** The calls the upstream got for the scripts tagged `tag`: `{ tool, input, pid }` in order. */
function callsOf(tag: string): { tool: string; input: any; pid: number }[] {
  if (!existsSync(callsLog)) return []
  return readFileSync(callsLog, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((c) => c.input?.tag === tag)
}

/** How many calls each tool got for `tag`. */
function counts(tag: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const c of callsOf(tag)) out[c.tool] = (out[c.tool] ?? 0) + 1
  return out
}

/** One raw 2026-07-28 `tools/call` of `codecall_execute` over HTTP; the JSON-RPC answer (JSON or the last SSE event). */
async function execute(gateway: Gateway, script: string, extra: Record<string, unknown> = {}) {
  const body = {
    jsonrpc: '2.0',
    id: Math.floor(Math.random() * 1e9),
    method: 'tools/call',
    params: {
      name: 'codecall_execute',
      arguments: { script },
      ...extra,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        'io.modelcontextprotocol/clientInfo': { name: 'runs-spec', version: '1' },
      },
    },
  }
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': 'codecall_execute',
    },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const events = text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)))
    return events[events.length - 1]
  }
  return JSON.parse(text)
}

/** An `input_required` answer asking about one call of `fx:write_x`: its key and state. */
function waiting(r: any): { key: string; state: string } {
  expect(r.error).toBeUndefined()
  expect(r.result?.resultType, JSON.stringify(r)).toBe('input_required')
  const keys = Object.keys(r.result.inputRequests)
  expect(keys).toHaveLength(1)
  const ask = r.result.inputRequests[keys[0]]
  expect(ask).toMatchObject({ method: 'elicitation/create', params: { mode: 'form' } })
  expect(ask.params.message).toContain("the tool 'write_x' of the MCP server 'fx'")
  expect(typeof r.result.requestState).toBe('string')
  return { key: keys[0], state: r.result.requestState }
}

/** The retry's extra params: `accept` (not always) for the call `key`, with its state. */
function accept(w: { key: string; state: string }) {
  return { inputResponses: { [w.key]: { action: 'accept', content: { always: false } } }, requestState: w.state }
}

/** A completed execute: its structured result (the engine's answer). */
function completed(r: any): any {
  expect(r.error).toBeUndefined()
  expect(r.result?.resultType, JSON.stringify(r)).toBe('complete')
  expect(r.result.structuredContent?.status, JSON.stringify(r.result.structuredContent)).toBe('ok')
  return r.result.structuredContent
}

/** A retry refused before anything ran: ERR_INVALID_ARG; its message. */
function refused(r: any): string {
  expect(r.result?.isError, JSON.stringify(r)).toBe(true)
  expect(r.result.structuredContent.error.code).toBe('ERR_INVALID_ARG')
  return r.result.structuredContent.error.message as string
}

/** Instances 1, 2 and 3: running for the whole file. */
let one: Gateway
let two: Gateway
let three: Gateway

beforeAll(async () => {
  ;[one, two, three] = await Promise.all([startGateway('one'), startGateway('two'), startGateway('three')])
})

afterAll(async () => {
  await Promise.all(
    started.map(async (cli) => {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGTERM')
      await cli.exited
    }),
  )
  const left = await leftovers(mark)
  rmSync(dir, { recursive: true, force: true })
  expect(left).toEqual([])
})

describe('runs that outlive a process (codecall.runs.store)', () => {
  it('(a) the same process: the retry completes the run; each tool ran once', async () => {
    const script =
      "const a = await callTool('fx:read_a', { tag: 'a' }); const b = await callTool('fx:read_b', { tag: 'a' }); " +
      "const w = await callTool('fx:write_x', { tag: 'a', n: 1 }); return [a.done, b.done, w.done, w.input.n]"
    const w = waiting(await execute(one, script))
    // The calls before the one waiting for approval ran; that one did not.
    expect(counts('a')).toEqual({ read_a: 1, read_b: 1 })
    const done = completed(await execute(one, script, accept(w)))
    expect(done.result).toEqual(['read_a', 'read_b', 'write_x', 1])
    expect(counts('a')).toEqual({ read_a: 1, read_b: 1, write_x: 1 })
    // All in one upstream process; continued in memory, not resumed from the store.
    expect(new Set(callsOf('a').map((c) => c.pid)).size).toBe(1)
    const [line, ...more] = await auditOf('one', script)
    expect(more).toEqual([])
    expect(line).toMatchObject({ tool: 'codecall_execute', status: 'ok', approvals: 1, declined: 0 })
    expect(line.resumed).toBeUndefined()
  })

  it('(b) another instance on the same store and key continues the run (replay: nothing runs twice); the state is then spent on the first', async () => {
    // The clock and Math.random the script saw are part of the run: the replay must see the same
    // ones, or its first call (whose input holds them) would differ from the journal. (`r` as text:
    // the exact double is what counts, not how a tool's JSON answer is parsed.)
    const script =
      "const r = String(Math.random()); const t = Date.now(); const a = await callTool('fx:read_a', { tag: 'b', r, t }); " +
      "const w = await callTool('fx:write_x', { tag: 'b', n: 7 }); const b = await callTool('fx:read_b', { tag: 'b' }); " +
      'return { a: a.done, w: w.done, n: w.input.n, b: b.done, r, t, same: a.input.r === r && a.input.t === t }'
    const w = waiting(await execute(one, script))
    expect(counts('b')).toEqual({ read_a: 1 })
    const done = completed(await execute(two, script, accept(w)))
    const first = callsOf('b')[0]
    expect(done.result).toEqual({ a: 'read_a', w: 'write_x', n: 7, b: 'read_b', r: first.input.r, t: first.input.t, same: true })
    expect(counts('b')).toEqual({ read_a: 1, write_x: 1, read_b: 1 })
    // read_a ran behind instance 1; the approved call and what followed it behind instance 2.
    const [a, x, b] = callsOf('b')
    expect(x.pid).not.toBe(a.pid)
    expect(b.pid).toBe(x.pid)
    expect(await auditOf('two', script)).toMatchObject([{ status: 'ok', resumed: true }])
    // The same state again, to the instance that issued it (and still holds the run): refused.
    expect(refused(await execute(one, script, accept(w)))).toMatch(/already used/)
    expect(counts('b')).toEqual({ read_a: 1, write_x: 1, read_b: 1 })
    // The copy instance 1 let go (another instance continued the run) writes no audit line of its
    // own: the run's one line is instance 2's. (Its execution ends at once: give it a moment.)
    await new Promise((r) => setTimeout(r, 300))
    expect(auditLines('one').filter((l) => l.codeSha256 === sha256(script))).toEqual([])
  })

  it('(c) the first process killed (SIGKILL) while the run waits: a fresh process with the same config resumes it', async () => {
    const doomed = await startGateway('killed')
    const script =
      "const a = await callTool('fx:read_a', { tag: 'c' }); const b = await callTool('fx:read_b', { tag: 'c' }); " +
      "const w = await callTool('fx:write_x', { tag: 'c', n: 3 }); return a.done + '+' + b.done + '+' + w.done + ':' + w.input.n"
    const w = waiting(await execute(doomed, script))
    expect(counts('c')).toEqual({ read_a: 1, read_b: 1 })
    await doomed.kill('SIGKILL')
    expect(isRunning(doomed.pid)).toBe(false)
    const fresh = await startGateway('killed')
    try {
      const done = completed(await execute(fresh, script, accept(w)))
      expect(done.result).toBe('read_a+read_b+write_x:3')
      expect(counts('c')).toEqual({ read_a: 1, read_b: 1, write_x: 1 })
      // The killed process wrote no line for it; the fresh one wrote the resumed run's.
      expect(await auditOf('killed', script)).toMatchObject([{ tool: 'codecall_execute', status: 'ok', resumed: true }])
      // Spent: the same state again is refused, here too.
      expect(refused(await execute(fresh, script, accept(w)))).toMatch(/already used|no such run/)
      expect(counts('c')).toEqual({ read_a: 1, read_b: 1, write_x: 1 })
    } finally {
      await fresh.kill()
    }
  })

  for (const [tag, label, pick] of [
    ['d1', 'the instance that holds the run and another one', () => [one, two]],
    ['d2', 'two instances that resume it from the store', () => [two, three]],
  ] as [string, string, () => [Gateway, Gateway]][]) {
    it(`(d) the same state given to ${label} at the same moment: exactly one continues it`, async () => {
      const script =
        `const a = await callTool('fx:read_a', { tag: '${tag}' }); const w = await callTool('fx:write_x', { tag: '${tag}', n: 4 }); ` +
        `const b = await callTool('fx:read_b', { tag: '${tag}' }); return [a.done, w.done, b.done]`
      const w = waiting(await execute(one, script))
      const [x, y] = pick()
      const answers = await Promise.all([execute(x, script, accept(w)), execute(y, script, accept(w))])
      const ok = answers.filter((r) => r.result?.structuredContent?.status === 'ok')
      const no = answers.filter((r) => r.result?.structuredContent?.status !== 'ok')
      expect(ok, JSON.stringify(answers)).toHaveLength(1)
      expect(no).toHaveLength(1)
      expect(completed(ok[0]).result).toEqual(['read_a', 'write_x', 'read_b'])
      expect(refused(no[0])).toMatch(/already used|no such run/)
      expect(counts(tag)).toEqual({ read_a: 1, write_x: 1, read_b: 1 })
    })
  }

  it('(e) two approval rounds across instances: round 1 answered on instance 2, round 2 on instance 1', async () => {
    const script =
      "const a = await callTool('fx:read_a', { tag: 'e' }); const w1 = await callTool('fx:write_x', { tag: 'e', n: 1 }); " +
      "const b = await callTool('fx:read_b', { tag: 'e' }); const w2 = await callTool('fx:write_x', { tag: 'e', n: 2 }); " +
      'return [a.done, w1.input.n, b.done, w2.input.n]'
    const round1 = waiting(await execute(one, script))
    expect(counts('e')).toEqual({ read_a: 1 })
    const round2 = waiting(await execute(two, script, accept(round1)))
    expect(round2.state).not.toBe(round1.state)
    // Round 1's approval let write_x (n: 1) and read_b run behind instance 2; n: 2 waits.
    expect(callsOf('e').map((c) => [c.tool, c.input.n ?? null])).toEqual([
      ['read_a', null],
      ['write_x', 1],
      ['read_b', null],
    ])
    const done = completed(await execute(one, script, accept(round2)))
    expect(done.result).toEqual(['read_a', 1, 'read_b', 2])
    expect(callsOf('e').map((c) => [c.tool, c.input.n ?? null])).toEqual([
      ['read_a', null],
      ['write_x', 1],
      ['read_b', null],
      ['write_x', 2],
    ])
    // Instance 1 wrote the line of the run it resumed (not of a copy it held from round 1).
    const resumed = await auditOf('one', script, (lines) => lines.some((l) => l.resumed === true))
    expect(resumed.filter((l) => l.resumed === true)).toMatchObject([{ status: 'ok' }])
  })

  it('(e) two approval rounds across three instances: 1 → 2 → 3', async () => {
    const script =
      "const a = await callTool('fx:read_a', { tag: 'e3' }); const w1 = await callTool('fx:write_x', { tag: 'e3', n: 1 }); " +
      "const b = await callTool('fx:read_b', { tag: 'e3' }); const w2 = await callTool('fx:write_x', { tag: 'e3', n: 2 }); " +
      'return [a.done, w1.input.n, b.done, w2.input.n]'
    const round1 = waiting(await execute(one, script))
    const round2 = waiting(await execute(two, script, accept(round1)))
    const done = completed(await execute(three, script, accept(round2)))
    expect(done.result).toEqual(['read_a', 1, 'read_b', 2])
    expect(counts('e3')).toEqual({ read_a: 1, write_x: 2, read_b: 1 })
    // Round 1's state is spent everywhere.
    expect(refused(await execute(three, script, accept(round1)))).toMatch(/already used|no such run/)
    expect(counts('e3')).toEqual({ read_a: 1, write_x: 2, read_b: 1 })
  })
})
