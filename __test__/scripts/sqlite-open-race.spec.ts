// Issue 45: processes that open ONE new SQLite store at the same instant all start. PROCESSES real
// Node processes (the saver fixture, started without an engine) get, each round, the same command
// lines in the same tick — a barrier — and construct a `CodeCall` on a new file: they race to
// create it, switch it to WAL and create the schema, and each saves at once (while the others may
// still be opening). Then they all dispose and open the same file again at once: the last one to
// close checkpoints the file while the others open it. Two busy loops beside them keep both cores
// loaded. Every open and save must succeed, and versions 1..2×PROCESSES be handed out once each.
//
// SQLite answers a connection that must upgrade its read lock to a write lock (switching a new
// file to WAL, which every opener of a new file tries) with SQLITE_BUSY at once, without its busy
// handler: before the fix, an opener that read the file while another was switching it failed
// with 'database is locked'. How often the windows meet depends on the machine (disk sync times,
// scheduling); the Rust test `sqlite_open_waits_for_a_lock_the_busy_handler_does_not_cover` holds
// that lock on purpose.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CodeCall } from '../../index.js'
import { saverProcess } from './saver-process.js'

const dir = mkdtempSync(join(tmpdir(), 'codecall-open-race-'))
const ROUNDS = 80
const PROCESSES = 4

/** A saver with no engine yet. */
const saver = (who: string) => saverProcess('-', who, 60_000)

describe(`${PROCESSES} processes opening one new SQLite store at the same instant, on loaded cores`, () => {
  const load: ChildProcess[] = []
  const savers = Array.from({ length: PROCESSES }, (_, i) => saver(`p${i}`))
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) load.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
    expect(await Promise.all(savers.map((s) => s.next()))).toEqual(Array(PROCESSES).fill('ready'))
  }, 60_000)
  afterAll(() => {
    for (const child of [...load, ...savers]) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it(`${ROUNDS} rounds: every process opens the new store, saves, reopens it, saves; versions 1..${2 * PROCESSES} once each`, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const store = join(dir, `race-${round}.db`)
      // The barrier: every process gets its lines in one tick.
      for (const s of savers) s.send(`open ${store}\nsave race 1\nopen ${store}\nsave race 1\n`)
      const answers = await Promise.all(savers.map(async (s) => [await s.next(), await s.next(), await s.next(), await s.next()]))
      for (const [opened, saved, reopened, savedAgain] of answers) {
        expect({ round, opened, reopened }).toEqual({ round, opened: { ok: 'opened' }, reopened: { ok: 'opened' } })
        expect({ round, saved, savedAgain }).toMatchObject({ round, saved: { ok: { versions: [expect.any(Number)] } }, savedAgain: { ok: { versions: [expect.any(Number)] } } })
      }
      const versions = answers.flatMap(([, saved, , savedAgain]) => [saved.ok.versions[0], savedAgain.ok.versions[0]])
      expect({ round, versions: versions.sort((x, y) => x - y) }).toEqual({ round, versions: Array.from({ length: 2 * PROCESSES }, (_, i) => i + 1) })
    }
    for (const s of savers) s.end('quit\n')
    expect(await Promise.all(savers.map((s) => s.exited))).toEqual(Array(PROCESSES).fill(0))
    // Everything is in the last file for a later process too.
    const codecall = new CodeCall({ scripts: { store: join(dir, `race-${ROUNDS}.db`) } })
    try {
      expect(await codecall.scripts!.get('race')).toMatchObject({ name: 'race', version: 2 * PROCESSES })
    } finally {
      await codecall.dispose()
    }
  }, 300_000)
})
