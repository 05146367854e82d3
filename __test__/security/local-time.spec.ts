// Issue 40: local time works in a confined worker. QuickJS asks the C library for the local zone
// (`localtime_r`); the first such call opens the zone file, which the worker's seccomp filter
// forbids — `new Date(2020, 0, 1).getHours()` ended its worker with SIGSYS. The worker now loads
// the zone before the filter goes in, and gets the host's `TZ` (the rest of its environment is
// cleared), so a plan sees the same local time as the Node process that runs it. Each zone runs in
// a child Node process started with that `TZ`: the probe in Node itself and in the sandbox, in both
// isolations, must agree.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

const FIXTURE = join(__dirname, '..', 'fixtures', 'local-time.mjs')

function run(tz: string | undefined): Record<string, any> {
  const env: Record<string, string | undefined> = { ...process.env, TZ: tz }
  if (tz === undefined) delete env.TZ
  const out = execFileSync(process.execPath, [FIXTURE], { env: env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 60_000 })
  return JSON.parse(out.trim().split('\n').pop() ?? '{}')
}

// The C library and Node's ICU read the same zone only where the zone's file exists (the C library
// falls back to UTC without it); Windows' C runtime reads another `TZ` syntax.
const zoneFile = (tz: string) => process.platform !== 'win32' && existsSync(join('/usr/share/zoneinfo', tz))

describe('local time in both isolations is the host\'s', () => {
  it("with the host's own zone (no TZ)", () => {
    const out = run(undefined)
    expect(out.host.fields).toHaveLength(5)
    expect(out.thread).toEqual(out.host)
    expect(out.process).toEqual(out.host)
    expect(out.threadAgain).toBe(0)
    expect(out.processAgain).toBe(0)
  })

  // Eastern US (DST), India (+05:30, no DST), Lord Howe (a 30-minute DST), Chatham (+12:45).
  for (const tz of ['America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham']) {
    it.runIf(zoneFile(tz))(`TZ=${tz}`, () => {
      const out = run(tz)
      expect(out.host.fields.map((f: number[]) => f[7])).not.toEqual([0, 0, 0, 0, 0])
      expect(out.thread).toEqual(out.host)
      expect(out.process).toEqual(out.host)
      expect(out.threadAgain).toBe(0)
      expect(out.processAgain).toBe(0)
    })
  }

  it.runIf(zoneFile('America/New_York'))('a plan formats local dates the way Node does (TZ=America/New_York)', () => {
    const out = run('America/New_York')
    expect(out.process.toString).toBe('Wed Jul 15 2020 12:30:00')
    expect(out.process.offsetText).toBe('GMT-0400')
    // Winter and summer offsets differ: the zone's rules were loaded, not just one offset.
    expect(out.process.fields[0][7]).toBe(300)
    expect(out.process.fields[1][7]).toBe(240)
  })
})
