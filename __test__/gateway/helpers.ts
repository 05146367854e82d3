// Helpers for the gateway's tests: configs of real MCP servers from npm and of the fixture server,
// the `codecall` CLI as a child process (as users run it), the SDK client connected to it, and
// the check that no process a test started outlives it.
//
// Every upstream a test configures carries CODECALL_TEST_MARK=<mark> in its environment, so
// `markedProcesses(mark)` finds it (and anything it spawned) by reading /proc, even after it was
// re-parented — an orphan cannot hide.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export const ROOT = resolve(__dirname, '../..')
export const CLI = join(ROOT, 'lib/gateway/cli.mjs')
export const FIXTURE = join(ROOT, '__test__/fixtures/gateway/fixture-server.mjs')
const pkg = (name: string, file = 'dist/index.js') => join(ROOT, 'node_modules/@modelcontextprotocol', name, file)

/** A fresh marker for one test file's processes. */
export function newMark(): string {
  return `gw-${randomUUID()}`
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'codecall-gw-'))
}

export const servers = {
  everything: (mark: string) => ({ command: process.execPath, args: [pkg('server-everything')], env: { CODECALL_TEST_MARK: mark } }),
  memory: (mark: string, file: string) => ({
    command: process.execPath,
    args: [pkg('server-memory')],
    env: { CODECALL_TEST_MARK: mark, MEMORY_FILE_PATH: file },
  }),
  filesystem: (mark: string, dir: string) => ({ command: process.execPath, args: [pkg('server-filesystem'), dir], env: { CODECALL_TEST_MARK: mark } }),
  fixture: (mark: string, ...args: string[]) => ({ command: process.execPath, args: [FIXTURE, ...args], env: { CODECALL_TEST_MARK: mark } }),
}

export function writeConfig(dir: string, config: unknown, name = 'codecall.json'): string {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(config, null, 2))
  return file
}

/** Pids of live processes whose environment holds CODECALL_TEST_MARK=<mark>. */
export function markedProcesses(mark: string): number[] {
  const needle = `CODECALL_TEST_MARK=${mark}`
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${name}/status`, 'utf8'))) continue
      const env = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0')
      if (env.includes(needle)) out.push(Number(name))
    } catch {
      // gone, or not readable
    }
  }
  return out
}

export function isRunning(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Waits until no process of `mark` is left; returns those still running after `timeoutMs`. */
export async function leftovers(mark: string, timeoutMs = 8000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs
  let left = markedProcesses(mark)
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    left = markedProcesses(mark)
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
  return left
}

/** `codecall <args>` to completion: exit code, stdout, stderr. */
export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolvePromise) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolvePromise({ code, signal, stdout, stderr })
    })
  })
}

/** `codecall serve` as a long-running child; resolves once `ready` matches a stderr line. */
export function startCli(args: string[], options: { cwd?: string; env?: Record<string, string>; ready?: RegExp; nodeArgs?: string[] } = {}) {
  const child: ChildProcess = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  const ready = new Promise<RegExpExecArray>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`codecall did not get ready:\n${stderr}`)), 30_000)
    child.stderr!.on('data', (c) => {
      stderr += c
      const m = options.ready?.exec(stderr)
      if (m) {
        clearTimeout(timer)
        resolvePromise(m)
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`codecall exited (${code}):\n${stderr}`))
    })
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })))
  return { child, ready, exited, stderr: () => stderr }
}

/** The SDK client over stdio to `codecall serve --config <file>`. */
export async function connectStdio(
  configFile: string,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
  /** §9: a client that declares `elicitation` and answers with this handler. */
  elicit?: (request: { params: { message: string; requestedSchema?: unknown } }) => Promise<{ action: string; content?: Record<string, unknown> }>,
  /** Node's own flags before the CLI (e.g. `--import=<otel setup>`). */
  nodeArgs: string[] = [],
) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgs, CLI, 'serve', '--config', configFile, ...extraArgs],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (c) => (stderr += c))
  const client = new Client({ name: 'gateway-test', version: '1.0.0' }, elicit ? { capabilities: { elicitation: {} } } : undefined)
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request as any) as any)
  await client.connect(transport)
  return { client, transport, pid: transport.pid as number, stderr: () => stderr }
}

/** `tools/call` of a meta-tool; the structured result (what the engine answered). */
export async function callMeta(client: Client, name: string, args: Record<string, unknown>, options: Parameters<Client['callTool']>[2] = {}) {
  const r = await client.callTool({ name, arguments: args }, undefined, options)
  return r.structuredContent as any
}
