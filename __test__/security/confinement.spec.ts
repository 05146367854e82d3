// What a hostile script's worker process can reach of the OS (api.md §2.6, issue 43), tried from
// inside the worker with the test-hooks build: opening a file, creating one, connecting a socket
// to a listener this test runs, starting a program. Linux: the seccomp filter kills the worker at
// the first such call (the execution ends, its neighbours and the host live on). macOS: the
// worker's Seatbelt profile refuses each call (-1) and the worker goes on. Either way nothing is
// read, nothing is written, the listener sees no connection and no program runs. Windows: a Low
// integrity token in a one-process job refuses the file write and the program (-1), but reads and
// connects are allowed there (no AppContainer; README's isolation table) — asserted as they are,
// so a change either way is seen. Wine keeps no integrity levels: this runs on real Windows only.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { HOOKS_LIBRARY, HOOKS_WORKER } from '../setup/test-hooks-worker.js'

const FIXTURE = join(__dirname, '..', 'fixtures', 'confinement.mjs')
const os = process.platform
const built = (os === 'linux' || os === 'darwin' || os === 'win32') && existsSync(HOOKS_WORKER)

describe.runIf(built)(`a worker process's reach (${os})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'codecall-confinement-'))
  let server: Server
  let port = 0
  let connections = 0
  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1
      socket.destroy()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => {
    server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('cannot open or create a file, connect a socket or start a program', () => {
    const created = join(dir, 'written-by-a-script')
    const out = JSON.parse(
      execFileSync(process.execPath, [FIXTURE, String(port), created, os === 'win32' ? join(process.env.SystemRoot ?? 'C:\\Windows', 'win.ini') : '/etc/passwd'], {
        env: { ...process.env, CODECALL_WORKER_PATH: HOOKS_WORKER, CODECALL_WORKER_LIBRARY: HOOKS_LIBRARY },
        encoding: 'utf8',
        timeout: 120_000,
      })
        .trim()
        .split('\n')
        .pop() ?? '{}',
    )
    expect(out.isolation).toBe('process')
    for (const name of ['open', 'create', 'connect', 'spawn']) {
      const attempt = out.attempts[name]
      if (os === 'win32') {
        // Write and spawn refused by Low integrity and the job; read and connect are not blocked.
        if (name === 'open' || name === 'connect') expect(attempt, name).toEqual({ value: 0 })
        else expect(attempt, name).toEqual({ value: -1 })
      } else if (os === 'darwin') {
        // Refused by Seatbelt: the call fails, the worker lives.
        expect(attempt, name).toEqual({ value: -1 })
      } else {
        // Killed by the filter at the call: the execution ends as a crashed worker's does.
        expect(attempt.error, `${name}: ${JSON.stringify(attempt)}`).toMatch(/^(WORKER_CRASHED|EXECUTION_ERROR|SANDBOX_ERROR)$/)
        expect(attempt.message, name).toMatch(/SIGSYS|system call/)
      }
    }
    expect(out.after).toBe(7)
    expect(existsSync(created)).toBe(false)
    expect(connections).toBe(os === 'win32' ? 1 : 0)
    if (os === 'darwin') expect(out.warnings.join('\n')).not.toMatch(/seccomp/)
  })
})
