// A saver fixture process (`__test__/fixtures/scripts/saver.mjs`) driven by lines: what the
// multi-process store specs share. `next()` resolves to its next output line, parsed.
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'

const SAVER = resolve(__dirname, '../fixtures/scripts/saver.mjs')

/** A saver on `store` (`-`: no engine until its `open <store>` command). */
export function saverProcess(store: string, who: string, answerWithinMs = 30_000) {
  const child: ChildProcess = spawn(process.execPath, ['--no-warnings', SAVER, store, who], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (c) => (stderr += c))
  const waiting: ((line: unknown) => void)[] = []
  const early: unknown[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const value = JSON.parse(line)
    const next = waiting.shift()
    if (next) next(value)
    else early.push(value)
  })
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  return {
    next: () =>
      new Promise<any>((resolvePromise, reject) => {
        if (early.length) return resolvePromise(early.shift())
        const timer = setTimeout(() => reject(new Error(`${who} did not answer:\n${stderr}`)), answerWithinMs)
        waiting.push((v) => {
          clearTimeout(timer)
          resolvePromise(v)
        })
      }),
    send: (text: string) => child.stdin!.write(text),
    end: (text: string) => child.stdin!.end(text),
    exited,
    kill: () => child.kill('SIGKILL'),
  }
}
