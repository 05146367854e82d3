// Spec §11's default store across processes: two real Node processes save to ONE SQLite file at
// the same moment; every version from 1 to 50 is handed out exactly once, none is lost, and each
// process reads the other's saves. A store whose folder does not exist is refused at construction.
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CodeCall } from '../../index.js'
import { saverProcess } from './saver-process.js'

const dir = mkdtempSync(join(tmpdir(), 'codecall-scripts-'))
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** One saver process: `ask(command)` sends a line and resolves to its answer. */
function saver(store: string, who: string) {
  const p = saverProcess(store, who)
  return {
    ready: p.next(),
    async ask(command: string) {
      p.send(`${command}\n`)
      const answer = await p.next()
      if (answer?.error) throw Object.assign(new Error(`${who}: ${answer.error.message}`), answer.error)
      return answer.ok
    },
    async quit() {
      p.end('quit\n')
      return p.exited
    },
    kill: p.kill,
  }
}

describe('two processes on one SQLite store', () => {
  const store = join(dir, 'shared.db')
  const a = saver(store, 'a')
  const b = saver(store, 'b')
  afterAll(() => {
    a.kill()
    b.kill()
  })

  it('hand out versions 1..50 of one name exactly once between them, saving at the same moment', async () => {
    expect(await a.ready).toBe('ready')
    expect(await b.ready).toBe('ready')
    const [fromA, fromB] = await Promise.all([a.ask('save report 25'), b.ask('save report 25')])
    expect(fromA.versions).toHaveLength(25)
    expect(fromB.versions).toHaveLength(25)
    const all = [...fromA.versions, ...fromB.versions].sort((x: number, y: number) => x - y)
    expect(all).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
  })

  it("each process reads the other's saves: the latest, any version, and the list", async () => {
    await a.ask('save only-a 1')
    await b.ask('save only-b 1')
    for (const [self, other] of [[a, 'b'], [b, 'a']] as const) {
      const latest = await self.ask('get report')
      expect(latest).toMatchObject({ name: 'report', version: 50, language: 'javascript' })
      expect(latest.codeSha256).toBe(sha256(latest.script))
      // Every version is there, whichever process saved it.
      for (const v of [1, 17, 33, 50]) {
        const saved = await self.ask(`get report ${v}`)
        expect(saved).toMatchObject({ name: 'report', version: v })
        expect(saved.script).toMatch(/^return '[ab]-\d+'$/)
        expect(new Date(saved.createdAt).toISOString()).toBe(saved.createdAt)
      }
      const list = await self.ask('list')
      expect(list.map((s: any) => [s.name, s.version])).toEqual([
        ['only-a', 1],
        ['only-b', 1],
        ['report', 50],
      ])
      const theirs = await self.ask(`get only-${other}`)
      expect(theirs).toMatchObject({ name: `only-${other}`, version: 1, script: `return '${other}-0'`, description: `Saved by ${other}, number 0` })
    }
    // Scripts of both processes are among the 50 versions (they really did race).
    const scripts = await Promise.all(Array.from({ length: 50 }, (_, i) => a.ask(`get report ${i + 1}`)))
    const owners = new Set(scripts.map((s: any) => s.script.slice(8, 9)))
    expect([...owners].sort()).toEqual(['a', 'b'])
    expect(new Set(scripts.map((s: any) => s.script)).size).toBe(50)
  })

  it('a third engine opening the file later sees everything, and a removal reaches the others', async () => {
    const codecall = new CodeCall({ scripts: { store } })
    try {
      expect((await codecall.scripts!.list()).map((s) => s.name)).toEqual(['only-a', 'only-b', 'report'])
      expect(await codecall.scripts!.remove('only-a')).toBe(true)
      expect(await codecall.scripts!.remove('only-a')).toBe(false)
    } finally {
      await codecall.dispose()
    }
    expect(await b.ask('get only-a')).toBeNull()
    expect((await b.ask('list')).map((s: any) => s.name)).toEqual(['only-b', 'report'])
    expect(await a.quit()).toBe(0)
    expect(await b.quit()).toBe(0)
  })
})

describe('a store that cannot be opened', () => {
  it('is refused at construction, naming the path, when its folder does not exist', () => {
    const store = join(dir, 'no-such-folder', 'scripts.db')
    let error: any
    try {
      new CodeCall({ scripts: { store } })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(TypeError)
    expect(error.code).toBe('ERR_INVALID_ARG')
    expect(error.message).toContain(store)
  })

  it("':memory:' needs no file, and historySize / maxDepth may be left out, undefined or null", async () => {
    for (const extra of [{}, { historySize: undefined, maxDepth: undefined }, { historySize: null, maxDepth: null }]) {
      const codecall = new CodeCall({ scripts: { store: ':memory:', ...(extra as object) } })
      try {
        expect(await codecall.scripts!.save({ name: 'one', description: 'One', script: 'return 1' })).toEqual({ name: 'saved:one', version: 1 })
        expect(await codecall.scripts!.list()).toHaveLength(1)
      } finally {
        await codecall.dispose()
      }
    }
  })
})
