// The loader checks of `npm run test:platforms` (scripts/platforms/binaries.mjs): each format read
// right, each floor enforced — shown by binaries that pass and by copies patched to break exactly one
// rule — and damaged files reported, never crashing the checker. The binaries of the formats CI does
// not build are small zig-built fixtures (fixtures/binaries/README.md); this machine's own builds
// are checked too when they are there.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

import { checkBinary, inspect, type Target } from '../scripts/platforms/binaries.mjs'

const here = fileURLToPath(new URL('.', import.meta.url))
const root = join(here, '..')
const fixture = (name: string) => join(here, 'fixtures', 'binaries', name)
const scratch = mkdtempSync(join(tmpdir(), 'codecall-binaries-'))

/** A copy of `name` with `from` replaced by `to` (same length) at its first occurrence. */
function patched(name: string, from: string | Buffer, to: string | Buffer): string {
  const buf = readFileSync(fixture(name))
  const a = Buffer.isBuffer(from) ? from : Buffer.from(from, 'latin1')
  const b = Buffer.isBuffer(to) ? to : Buffer.from(to, 'latin1')
  expect(a.length).toBe(b.length)
  const at = buf.indexOf(a)
  expect(at, `${String(from)} not in ${name}`).toBeGreaterThanOrEqual(0)
  b.copy(buf, at)
  const out = join(scratch, `${name}-${Math.random().toString(36).slice(2)}`)
  writeFileSync(out, buf)
  return out
}

/** Offset of the first Mach-O load command `cmd` (64-bit, little-endian). */
function loadCommand(buf: Buffer, cmd: number): number {
  let o = 32
  for (let i = 0; i < buf.readUInt32LE(16); i++) {
    if (buf.readUInt32LE(o) === cmd) return o
    o += buf.readUInt32LE(o + 4)
  }
  throw new Error(`no load command ${cmd}`)
}
function machoWith(name: string, edit: (buf: Buffer) => void): string {
  const buf = readFileSync(fixture(name))
  edit(buf)
  const out = join(scratch, `${name}-${Math.random().toString(36).slice(2)}`)
  writeFileSync(out, buf)
  return out
}

const problems = (target: Target, path: string, kind: 'addon' | 'worker' = 'addon') => checkBinary(target, kind, path).problems

describe('ELF (Linux gnu and musl)', () => {
  it('reads an arm64 glibc library: machine, libraries, symbol versions', () => {
    const facts = inspect(fixture('tiny-arm64.so'))
    expect(facts).toMatchObject({ format: 'elf', machine: 'aarch64', type: 'shared', needed: ['libc.so.6'] })
    expect(facts.versions).toEqual([{ file: 'libc.so.6', name: 'GLIBC_2.17' }])
    expect(facts.undefinedSymbols).toEqual([{ name: 'strlen', weak: false, version: { file: 'libc.so.6', name: 'GLIBC_2.17' } }])
    expect(problems('aarch64-unknown-linux-gnu', fixture('tiny-arm64.so'))).toEqual([])
  })

  it('refuses a glibc symbol version above 2.17, naming the symbol', () => {
    const path = patched('tiny-arm64.so', 'GLIBC_2.17', 'GLIBC_2.34')
    expect(problems('aarch64-unknown-linux-gnu', path)).toEqual(['needs GLIBC_2.34 (floor 2.17): strlen@GLIBC_2.34'])
  })

  it('refuses a library a plain glibc system lacks', () => {
    const path = patched('tiny-arm64.so', 'libc.so.6\0', 'libz.so.6\0')
    expect(problems('aarch64-unknown-linux-gnu', path)).toContain('needs libraries a plain glibc system lacks: libz.so.6')
  })

  it('refuses the wrong architecture', () => {
    expect(problems('x86_64-unknown-linux-gnu', fixture('tiny-arm64.so'))).toContain('machine aarch64, expected x86_64')
  })

  it('takes a musl library as musl and refuses it as glibc', () => {
    expect(inspect(fixture('tiny-musl.so'))).toMatchObject({ machine: 'x86_64', needed: ['libc.so'], versions: [] })
    expect(problems('x86_64-unknown-linux-musl', fixture('tiny-musl.so'))).toEqual([])
    expect(problems('x86_64-unknown-linux-gnu', fixture('tiny-musl.so'))).toEqual([
      'needs libraries a plain glibc system lacks: libc.so',
      'undefined symbols no library version provides: strlen',
    ])
  })

  it('refuses glibc symbol versions in a musl build', () => {
    expect(problems('aarch64-unknown-linux-musl', fixture('tiny-arm64.so'))).toEqual([
      'glibc symbol versions in a musl build: GLIBC_2.17',
      'needs libraries Alpine lacks: libc.so.6',
    ])
  })
})

describe('Mach-O (macOS)', () => {
  it('reads an arm64 dylib: minimum macOS, dylibs, signature, where each undefined symbol comes from', () => {
    const facts = inspect(fixture('tiny-arm64.dylib'))
    expect(facts).toMatchObject({ format: 'macho', machine: 'arm64', type: 'shared', minos: '11.0', signed: true, needed: ['/usr/lib/libSystem.B.dylib'] })
    expect(facts.undefinedSymbols).toContainEqual({ name: '_strlen', weak: false, library: '/usr/lib/libSystem.B.dylib' })
    expect(problems('aarch64-apple-darwin', fixture('tiny-arm64.dylib'))).toEqual([])
  })

  it('reads an x64 dylib for macOS 10.13', () => {
    expect(inspect(fixture('tiny-x64.dylib'))).toMatchObject({ machine: 'x86_64', minos: '10.13' })
    expect(problems('x86_64-apple-darwin', fixture('tiny-x64.dylib'))).toEqual([])
  })

  it('refuses a minimum macOS above the floor', () => {
    // zig writes the pre-11 form for 10.13: LC_VERSION_MIN_MACOSX, its version right after the header.
    const path = machoWith('tiny-x64.dylib', (buf) => buf.writeUInt32LE(0x000a0f00, loadCommand(buf, 0x24) + 8))
    expect(problems('x86_64-apple-darwin', path)).toEqual(['minimum macOS 10.15, floor 10.13'])
  })

  it('refuses an unsigned arm64 binary', () => {
    const path = machoWith('tiny-arm64.dylib', (buf) => buf.writeUInt32LE(0x7fff, loadCommand(buf, 0x1d)))
    expect(problems('aarch64-apple-darwin', path)).toEqual(['unsigned: macOS on arm64 runs only signed code (an ad-hoc signature will do)'])
  })

  it('refuses a dylib outside the OS and a symbol left to dynamic lookup', () => {
    const outside = patched('tiny-arm64.dylib', '/usr/lib/libSystem.B.dylib', '/opt/lib/libSystem.B.dylib')
    expect(problems('aarch64-apple-darwin', outside)).toEqual(['links dylibs outside the OS: /opt/lib/libSystem.B.dylib'])
    // The symbol table entry of _strlen with its library ordinal set to "dynamic lookup" (0xff).
    const lookup = machoWith('tiny-arm64.dylib', (buf) => {
      const symtab = loadCommand(buf, 0x2)
      const [symoff, nsyms, stroff] = [buf.readUInt32LE(symtab + 8), buf.readUInt32LE(symtab + 12), buf.readUInt32LE(symtab + 16)]
      for (let i = 0; i < nsyms; i++) {
        const s = symoff + i * 16
        const name = buf.toString('latin1', stroff + buf.readUInt32LE(s), buf.indexOf(0, stroff + buf.readUInt32LE(s)))
        if (name === '_strlen') buf.writeUInt16LE((buf.readUInt16LE(s + 6) & 0xff) | 0xff00, s + 6)
      }
    })
    expect(problems('aarch64-apple-darwin', lookup)).toEqual(['undefined symbols no OS library provides: _strlen'])
  })

  it("refuses an addon that exports the crate's internals, or carries the build machine's path", () => {
    expect(inspect(fixture('many-arm64.dylib')).exported).toHaveLength(40 + 2) // + __mh_dylib_header, ___dso_handle
    // many-arm64.dylib was linked with an absolute output path, which became its install name.
    expect(problems('aarch64-apple-darwin', fixture('many-arm64.dylib'))).toEqual([
      "exports 42 symbols (_f0, _f1, _f10, …): an addon exports Node's entry point, not the crate's internals",
      'install name /work/main/__test__/fixtures/binaries/many-arm64.dylib (the build machine\'s path)',
    ])
    expect(problems('aarch64-apple-darwin', fixture('many-arm64.dylib'), 'worker')).toEqual([])
  })

  it('refuses the wrong format for the target', () => {
    expect(problems('aarch64-apple-darwin', fixture('tiny-arm64.so'))).toEqual(['format elf, expected macho'])
  })
})

describe('PE (Windows)', () => {
  it('reads a DLL: PE32+, x64, its imports by DLL and function', () => {
    const facts = inspect(fixture('tiny.dll'))
    expect(facts).toMatchObject({ format: 'pe', machine: 'x86_64', type: 'shared' })
    expect(facts.needed).toContain('KERNEL32.dll')
    expect(facts.imports?.find((i) => i.dll === 'api-ms-win-crt-string-l1-1-0.dll')?.functions).toContain('strlen')
    expect(problems('x86_64-pc-windows-msvc', fixture('tiny.dll'))).toEqual([])
  })

  it('refuses a DLL Windows does not ship, and Node API imported at link time', () => {
    const mingw = patched('tiny.dll', 'KERNEL32.dll', 'libgcc_s.dll')
    expect(problems('x86_64-pc-windows-msvc', mingw)).toEqual(['imports DLLs Windows does not ship: libgcc_s.dll'])
    const node = patched('tiny.dll', 'strlen\0', 'napi_x\0')
    expect(problems('x86_64-pc-windows-msvc', node)).toEqual([
      "imports Node's API at link time (napi_x): it must be resolved at load time (napi's dyn-symbols)",
    ])
  })
})

describe('damaged files', () => {
  const names = ['tiny-arm64.so', 'tiny-musl.so', 'tiny-arm64.dylib', 'tiny-x64.dylib', 'tiny.dll']

  it('a file of no known format is named as such', () => {
    const path = join(scratch, 'text')
    writeFileSync(path, 'not a binary')
    expect(() => inspect(path)).toThrow(/not an ELF, Mach-O or PE file/)
  })

  it('truncated and corrupted copies are reported as errors, never a crash or a hang', () => {
    // A fixed-seed generator: the same corruptions every run.
    let seed = 0x2545f491
    const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0), seed)
    let reported = 0
    for (const name of names) {
      const original = readFileSync(fixture(name))
      const variants: Buffer[] = []
      for (const length of [4, 16, 64, 200, 1024, original.length >> 1]) variants.push(original.subarray(0, Math.min(length, original.length)))
      for (let k = 0; k < 60; k++) {
        const copy = Buffer.from(original)
        // Corrupt the headers and tables (the first 4 KiB), where the reader's offsets come from.
        for (let j = 0; j < 4; j++) copy[next() % Math.min(copy.length, 4096)] = next() & 0xff
        variants.push(copy)
      }
      for (const [i, bytes] of variants.entries()) {
        const path = join(scratch, `${name}.${i}`)
        writeFileSync(path, bytes)
        try {
          inspect(path)
        } catch (e) {
          expect(e).toBeInstanceOf(Error)
          expect((e as Error).constructor).toBe(Error) // not a TypeError or RangeError from a bad read
          expect((e as Error).message.startsWith(path)).toBe(true)
          reported++
        }
      }
    }
    expect(reported).toBeGreaterThan(names.length * 6 - 1) // every truncation at least
  })
})

describe("this machine's builds", () => {
  const release = join(root, 'artifacts', 'bindings-x86_64-unknown-linux-gnu')
  const linuxX64 = process.platform === 'linux' && process.arch === 'x64'

  it.skipIf(!linuxX64 || !existsSync(join(root, 'codecall.linux-x64-gnu.node')))('npm run build: the addon is read as what it is', () => {
    const facts = inspect(join(root, 'codecall.linux-x64-gnu.node'))
    expect(facts).toMatchObject({ format: 'elf', machine: 'x86_64', type: 'shared' })
    expect(facts.needed).toContain('libc.so.6')
    expect(facts.undefinedSymbols?.filter((s) => /^napi_/.test(s.name))).toEqual([]) // dyn-symbols
  })

  it.skipIf(!linuxX64 || !existsSync(join(release, 'codecall.linux-x64-gnu.node')))('npm run build:target: the release build meets the glibc 2.17 floor', () => {
    expect(checkBinary('x86_64-unknown-linux-gnu', 'addon', join(release, 'codecall.linux-x64-gnu.node')).problems).toEqual([])
    expect(checkBinary('x86_64-unknown-linux-gnu', 'worker', join(release, 'codecall-worker')).problems).toEqual([])
  })
})
