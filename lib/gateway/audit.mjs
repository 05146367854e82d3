// The audit trail of seed 003: one JSON line per execute / invoke — who, which code (its SHA-256,
// never the code), how long, how many calls to which servers, how it ended. Never the code, the
// inputs or the results: they may hold personal data.
import { createWriteStream } from 'node:fs'

export class Audit {
  /** @param {string} target a file (appended to) or '-' for standard error */
  constructor(target, log) {
    this.log = log
    this.closed = false
    if (target === '-') {
      this.stream = null
    } else {
      this.stream = createWriteStream(target, { flags: 'a', mode: 0o600 })
      this.stream.on('error', (e) => this.log(`audit file ${target}: ${e.message}`))
    }
  }

  write(line) {
    if (this.closed) return
    const text = `${JSON.stringify(line)}\n`
    if (this.stream) this.stream.write(text)
    else process.stderr.write(text)
  }

  close() {
    this.closed = true
    const stream = this.stream
    if (!stream) return Promise.resolve()
    this.stream = null
    return new Promise((resolve) => stream.end(resolve))
  }
}
