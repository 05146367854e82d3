// What a loader needs from each built binary, read from the file itself: format, architecture,
// the libraries it asks for, the glibc versions it needs, the minimum macOS, the DLLs it imports,
// and the symbols nothing on the target will provide. `npm run test:platforms` runs
// `checkBinaries` over every target found under artifacts/; nothing here executes the binary, so
// every target is checked on this Linux x86_64 machine, including the ones that cannot run here.
//
// Parsers for ELF (64-bit little-endian), Mach-O (64-bit, thin) and PE32+ — the three formats the
// seven targets produce — written against the formats' own definitions (elf.h, mach-o/loader.h,
// the PE/COFF specification). They read only headers and tables, bounds-checked: a damaged file is
// reported as such, never a crash.
import { readFileSync } from 'node:fs'

/** The floor each target must meet: spec §1 "Platforms". */
export const FLOORS = {
  'x86_64-unknown-linux-gnu': { format: 'elf', machine: 'x86_64', glibc: '2.17' },
  'aarch64-unknown-linux-gnu': { format: 'elf', machine: 'aarch64', glibc: '2.17' },
  'x86_64-unknown-linux-musl': { format: 'elf', machine: 'x86_64', musl: true },
  'aarch64-unknown-linux-musl': { format: 'elf', machine: 'aarch64', musl: true },
  'x86_64-apple-darwin': { format: 'macho', machine: 'x86_64', macos: '10.13' },
  'aarch64-apple-darwin': { format: 'macho', machine: 'arm64', macos: '11.0' },
  'x86_64-pc-windows-msvc': { format: 'pe', machine: 'x86_64', windows: true },
}

/** Libraries every glibc system has (the ones Rust's std and QuickJS link). */
const GLIBC_LIBS = new Set(['libc.so.6', 'libm.so.6', 'libpthread.so.0', 'libdl.so.2', 'librt.so.1', 'libgcc_s.so.1', 'ld-linux-x86-64.so.2', 'ld-linux-aarch64.so.1'])
/** musl's one shared object; its soname is plain `libc.so`. */
const MUSL_LIBS = new Set(['libc.so'])
/** Windows 10's own DLLs (the UCRT ships with Windows 10 as `api-ms-win-crt-*` API sets). */
const WINDOWS_DLL = /^(kernel32|ntdll|ws2_32|userenv|bcrypt|bcryptprimitives|advapi32|ucrtbase|msvcrt|shell32|ole32|oleaut32|secur32|user32|crypt32|synchronization|api-ms-win-[a-z0-9-]+)\.dll$/i
/** How many symbols an addon may export (napi_register_module_v1 and a few runtime ones). */
const MAX_ADDON_EXPORTS = 32
/** Node's own C API, resolved by the process that loads the addon. */
const NODE_API = /^_?(napi|node_api|uv)_/

class Reader {
  constructor(buf, path) {
    this.buf = buf
    this.path = path
  }
  check(offset, length) {
    if (!Number.isInteger(offset) || offset < 0 || offset + length > this.buf.length) {
      throw new Error(`${this.path}: damaged (a table points outside the file, at ${offset})`)
    }
  }
  u8(o) {
    this.check(o, 1)
    return this.buf[o]
  }
  u16(o) {
    this.check(o, 2)
    return this.buf.readUInt16LE(o)
  }
  u32(o) {
    this.check(o, 4)
    return this.buf.readUInt32LE(o)
  }
  u64(o) {
    this.check(o, 8)
    const v = this.buf.readBigUInt64LE(o)
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${this.path}: damaged (offset ${v} at ${o})`)
    return Number(v)
  }
  cstr(o, max = 4096) {
    this.check(o, 1)
    const end = this.buf.indexOf(0, o)
    if (end < 0 || end - o > max) throw new Error(`${this.path}: damaged (unterminated string at ${o})`)
    return this.buf.toString('latin1', o, end)
  }
}

/** Reads a binary's loader-relevant facts; throws on a file of no known format. */
export function inspect(path) {
  const buf = readFileSync(path)
  const r = new Reader(buf, path)
  if (buf.length >= 4 && buf.readUInt32BE(0) === 0x7f454c46) return inspectElf(r)
  if (buf.length >= 4 && buf.readUInt32LE(0) === 0xfeedfacf) return inspectMachO(r)
  if (buf.length >= 4 && (buf.readUInt32BE(0) === 0xcafebabe || buf.readUInt32LE(0) === 0xfeedface)) {
    throw new Error(`${path}: a fat or 32-bit Mach-O; a thin 64-bit one is expected`)
  }
  if (buf.length >= 2 && buf.toString('latin1', 0, 2) === 'MZ') return inspectPe(r)
  throw new Error(`${path}: not an ELF, Mach-O or PE file`)
}

function inspectElf(r) {
  if (r.u8(4) !== 2 || r.u8(5) !== 1) throw new Error(`${r.path}: not a 64-bit little-endian ELF`)
  const machine = { 0x3e: 'x86_64', 0xb7: 'aarch64' }[r.u16(0x12)] ?? `e_machine ${r.u16(0x12)}`
  const type = { 2: 'executable', 3: 'shared' }[r.u16(0x10)] ?? `e_type ${r.u16(0x10)}`
  const phoff = r.u64(0x20)
  const shoff = r.u64(0x28)
  const phnum = r.u16(0x38)
  const shnum = r.u16(0x3c)
  const sections = []
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * 64
    sections.push({ type: r.u32(o + 4), offset: r.u64(o + 24), size: r.u64(o + 32), link: r.u32(o + 40), info: r.u32(o + 44), entsize: r.u64(o + 56) })
  }
  let interpreter = null
  let dynamicSegment = false
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * 56
    const kind = r.u32(o)
    if (kind === 3) interpreter = r.cstr(r.u64(o + 8))
    if (kind === 2) dynamicSegment = true
  }
  const needed = []
  const versions = [] // { file, name }
  const undefinedSymbols = [] // { name, weak, version }
  const exported = []
  const linked = (s) => {
    const target = sections[s.link]
    if (!target) throw new Error(`${r.path}: damaged (a section links to section ${s.link} of ${sections.length})`)
    return target
  }
  const dynamic = sections.find((s) => s.type === 6)
  if (dynamic) {
    const strtab = linked(dynamic)
    for (let o = dynamic.offset; o + 16 <= dynamic.offset + dynamic.size; o += 16) {
      const tag = r.u64(o)
      if (tag === 0) break
      if (tag === 1) needed.push(r.cstr(strtab.offset + r.u64(o + 8)))
    }
  }
  const verneed = sections.find((s) => s.type === 0x6ffffffe)
  const versionNames = new Map() // version index -> { file, name }
  if (verneed) {
    const strtab = linked(verneed)
    let o = verneed.offset
    for (let n = 0; n < verneed.info; n++) {
      const file = r.cstr(strtab.offset + r.u32(o + 4))
      let aux = o + r.u32(o + 8)
      for (let k = 0; k < r.u16(o + 2); k++) {
        const entry = { file, name: r.cstr(strtab.offset + r.u32(aux + 8)) }
        versions.push(entry)
        versionNames.set(r.u16(aux + 6) & 0x7fff, entry)
        aux += r.u32(aux + 12)
      }
      const next = r.u32(o + 12)
      if (!next) break
      o += next
    }
  }
  const dynsym = sections.find((s) => s.type === 11)
  const versym = sections.find((s) => s.type === 0x6fffffff)
  if (dynsym) {
    const strtab = linked(dynsym)
    const count = Math.floor(dynsym.size / 24)
    for (let i = 1; i < count; i++) {
      const o = dynsym.offset + i * 24
      const bind = r.u8(o + 4) >> 4
      if (r.u16(o + 6) !== 0) {
        if (bind === 1 || bind === 2) exported.push(r.cstr(strtab.offset + r.u32(o))) // defined here, global or weak
        continue
      }
      const name = r.cstr(strtab.offset + r.u32(o))
      if (!name) continue
      const version = versym ? versionNames.get(r.u16(versym.offset + i * 2) & 0x7fff) ?? null : null
      undefinedSymbols.push({ name, weak: bind === 2, version })
    }
  }
  return { format: 'elf', machine, type, interpreter, dynamic: dynamicSegment, needed, versions, undefinedSymbols, exported }
}

function inspectMachO(r) {
  const cpu = r.u32(4)
  const machine = { 0x01000007: 'x86_64', 0x0100000c: 'arm64' }[cpu] ?? `cputype ${cpu.toString(16)}`
  const type = { 2: 'executable', 6: 'shared', 8: 'bundle' }[r.u32(12)] ?? `filetype ${r.u32(12)}`
  const ncmds = r.u32(16)
  const version = (v) => `${v >>> 16}.${(v >>> 8) & 0xff}${v & 0xff ? `.${v & 0xff}` : ''}`
  let minos = null
  let installName = null
  let signed = false
  const dylibs = []
  let symtab = null
  let o = 32
  for (let i = 0; i < ncmds; i++) {
    const cmd = r.u32(o)
    const size = r.u32(o + 4)
    if (size < 8) throw new Error(`${r.path}: damaged load command ${i}`)
    if (cmd === 0x32 && r.u32(o + 8) === 1) minos = version(r.u32(o + 12)) // LC_BUILD_VERSION, macOS
    if (cmd === 0x24) minos = version(r.u32(o + 8)) // LC_VERSION_MIN_MACOSX
    if ([0xc, 0x80000018, 0x8000001f, 0x20, 0x80000023].includes(cmd)) dylibs.push(r.cstr(o + r.u32(o + 8)))
    if (cmd === 0xd) installName = r.cstr(o + r.u32(o + 8))
    if (cmd === 0x1d) signed = true
    if (cmd === 0x2) symtab = { symoff: r.u32(o + 8), nsyms: r.u32(o + 12), stroff: r.u32(o + 16) }
    o += size
  }
  const undefinedSymbols = []
  const exported = []
  let symbols = 0
  if (symtab) {
    for (let i = 0; i < symtab.nsyms; i++) {
      const s = symtab.symoff + i * 16
      const type = r.u8(s + 4)
      if (type & 0xe0) continue // debugging (stab) entries
      symbols++
      if ((type & 0x0e) === 0x0e && (type & 0x11) === 0x01) exported.push(r.cstr(symtab.stroff + r.u32(s))) // defined, external, not private
      if ((type & 0x0e) !== 0 || !(type & 0x01)) continue // defined, or not external
      const ordinal = r.u16(s + 6) >> 8
      const name = r.cstr(symtab.stroff + r.u32(s))
      const library = ordinal >= 1 && ordinal <= dylibs.length ? dylibs[ordinal - 1] : ordinal === 0xff ? 'dynamic lookup' : ordinal === 0 ? 'self' : `ordinal ${ordinal}`
      undefinedSymbols.push({ name, weak: (r.u16(s + 6) & 0x40) !== 0, library })
    }
  }
  return { format: 'macho', machine, type, minos, installName, signed, needed: dylibs, symbols, undefinedSymbols, exported }
}

function inspectPe(r) {
  const pe = r.u32(0x3c)
  if (r.u32(pe) !== 0x00004550) throw new Error(`${r.path}: MZ header without a PE signature`)
  const coff = pe + 4
  const machine = { 0x8664: 'x86_64', 0xaa64: 'arm64', 0x14c: 'x86' }[r.u16(coff)] ?? `machine ${r.u16(coff).toString(16)}`
  const nsections = r.u16(coff + 2)
  const optSize = r.u16(coff + 16)
  const characteristics = r.u16(coff + 18)
  const opt = coff + 20
  const magic = r.u16(opt)
  if (magic !== 0x20b) throw new Error(`${r.path}: not PE32+ (optional header magic ${magic.toString(16)})`)
  const sections = []
  for (let i = 0; i < nsections; i++) {
    const s = opt + optSize + i * 40
    sections.push({ vsize: r.u32(s + 8), rva: r.u32(s + 12), rawSize: r.u32(s + 16), raw: r.u32(s + 20) })
  }
  const toOffset = (rva) => {
    const s = sections.find((x) => rva >= x.rva && rva < x.rva + Math.max(x.vsize, x.rawSize))
    if (!s) throw new Error(`${r.path}: damaged (RVA ${rva} in no section)`)
    return rva - s.rva + s.raw
  }
  const directory = (index) => ({ rva: r.u32(opt + 112 + index * 8), size: r.u32(opt + 116 + index * 8) })
  const imports = [] // { dll, functions }
  const readImports = (dir, entrySize, nameAt, thunkAt) => {
    if (!dir.rva) return
    for (let d = toOffset(dir.rva); ; d += entrySize) {
      const nameRva = r.u32(d + nameAt)
      if (!nameRva) break
      const functions = []
      let thunkRva = r.u32(d + thunkAt[0]) || r.u32(d + thunkAt[1])
      for (let t = toOffset(thunkRva); ; t += 8) {
        const lo = r.u32(t)
        const hi = r.u32(t + 4)
        if (!lo && !hi) break
        functions.push(hi & 0x80000000 ? `#${lo & 0xffff}` : r.cstr(toOffset(lo) + 2))
      }
      imports.push({ dll: r.cstr(toOffset(nameRva)), functions })
    }
  }
  readImports(directory(1), 20, 12, [0, 16]) // IMAGE_IMPORT_DESCRIPTOR: Name, OriginalFirstThunk/FirstThunk
  readImports(directory(13), 32, 4, [16, 12]) // delay-load: DllNameRVA, ImportNameTableRVA/IAT
  const exported = []
  const exportDir = directory(0)
  if (exportDir.rva) {
    const e = toOffset(exportDir.rva)
    const names = r.u32(e + 24)
    const nameTable = toOffset(r.u32(e + 32))
    for (let i = 0; i < names; i++) exported.push(r.cstr(toOffset(r.u32(nameTable + i * 4))))
  }
  return { format: 'pe', machine, type: characteristics & 0x2000 ? 'shared' : 'executable', needed: imports.map((i) => i.dll), imports, exported }
}

const versionAtMost = (have, floor) => {
  const a = have.split('.').map(Number)
  const b = floor.split('.').map(Number)
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0)
  }
  return true
}

/**
 * Checks one binary against its target's floor. `kind` is 'addon' (the `.node`) or 'worker'.
 * Returns { facts, problems, summary }: problems empty when a loader on the target will take it.
 */
export function checkBinary(target, kind, path) {
  const floor = FLOORS[target]
  if (!floor) throw new Error(`unknown target ${target}`)
  const problems = []
  const facts = inspect(path)
  if (facts.format !== floor.format) {
    return { facts, problems: [`format ${facts.format}, expected ${floor.format}`], summary: `${facts.format} ${facts.machine}` }
  }
  if (facts.machine !== floor.machine) problems.push(`machine ${facts.machine}, expected ${floor.machine}`)
  const wantType = kind === 'addon' ? ['shared', 'bundle'] : ['executable', 'shared'] // a PIE is ET_DYN
  if (!wantType.includes(facts.type)) problems.push(`a ${facts.type} file, expected ${wantType.join(' or ')}`)
  const strong = facts.undefinedSymbols?.filter((s) => !s.weak) ?? []
  // An addon exports Node's entry point and little else; thousands of exports are the crate's own
  // internals kept alive (and shipped) because the linker did not apply the export list.
  if (kind === 'addon' && facts.exported.length > MAX_ADDON_EXPORTS) {
    problems.push(`exports ${facts.exported.length} symbols (${facts.exported.slice(0, 3).join(', ')}, …): an addon exports Node's entry point, not the crate's internals`)
  }
  let summary = `${facts.format} ${facts.machine}`
  if (floor.glibc) {
    const glibc = facts.versions.filter((v) => v.name.startsWith('GLIBC_')).map((v) => v.name.slice(6))
    const max = glibc.reduce((m, v) => (versionAtMost(v, m) ? m : v), '0')
    if (!versionAtMost(max, floor.glibc)) {
      const over = facts.versions.filter((v) => v.name.startsWith('GLIBC_') && !versionAtMost(v.name.slice(6), floor.glibc))
      const symbols = strong.filter((s) => over.includes(s.version)).map((s) => `${s.name}@${s.version.name}`)
      problems.push(`needs GLIBC_${max} (floor ${floor.glibc}): ${symbols.slice(0, 8).join(', ')}`)
    }
    const foreign = facts.needed.filter((l) => !GLIBC_LIBS.has(l))
    if (foreign.length) problems.push(`needs libraries a plain glibc system lacks: ${foreign.join(', ')}`)
    const unversioned = strong.filter((s) => !s.version && !NODE_API.test(s.name))
    if (unversioned.length) problems.push(`undefined symbols no library version provides: ${unversioned.slice(0, 8).map((s) => s.name).join(', ')}`)
    summary += `, GLIBC_${max}, needs ${facts.needed.join(' ')}`
  }
  if (floor.musl) {
    const glibc = facts.versions.filter((v) => v.name.startsWith('GLIBC'))
    if (glibc.length) problems.push(`glibc symbol versions in a musl build: ${glibc.map((v) => v.name).join(', ')}`)
    const foreign = facts.needed.filter((l) => !MUSL_LIBS.has(l))
    if (foreign.length) problems.push(`needs libraries Alpine lacks: ${foreign.join(', ')}`)
    if (facts.interpreter && !/^\/lib\/ld-musl-(x86_64|aarch64)\.so\.1$/.test(facts.interpreter)) problems.push(`interpreter ${facts.interpreter}`)
    summary += facts.needed.length ? `, needs ${facts.needed.join(' ')}` : ', static'
  }
  if (floor.macos) {
    if (!facts.minos) problems.push('no minimum macOS version (LC_BUILD_VERSION)')
    else if (!versionAtMost(facts.minos, floor.macos)) problems.push(`minimum macOS ${facts.minos}, floor ${floor.macos}`)
    const foreign = facts.needed.filter((l) => !l.startsWith('/usr/lib/') && !l.startsWith('/System/Library/'))
    if (foreign.length) problems.push(`links dylibs outside the OS: ${foreign.join(', ')}`)
    const unresolved = strong.filter((s) => (s.library === 'dynamic lookup' || s.library.startsWith('ordinal')) && !NODE_API.test(s.name))
    if (unresolved.length) problems.push(`undefined symbols no OS library provides: ${unresolved.slice(0, 8).map((s) => s.name).join(', ')}`)
    if (facts.machine === 'arm64' && !facts.signed) problems.push('unsigned: macOS on arm64 runs only signed code (an ad-hoc signature will do)')
    if (kind === 'addon' && facts.installName?.startsWith('/')) problems.push(`install name ${facts.installName} (the build machine's path)`)
    summary += `, macOS >= ${facts.minos}, ${facts.symbols} symbols, links ${facts.needed.join(' ')}`
  }
  if (floor.windows) {
    const foreign = facts.needed.filter((d) => !WINDOWS_DLL.test(d))
    if (foreign.length) problems.push(`imports DLLs Windows does not ship: ${foreign.join(', ')}`)
    const node = facts.imports.flatMap((i) => i.functions).filter((f) => NODE_API.test(f))
    if (node.length) problems.push(`imports Node's API at link time (${node.slice(0, 3).join(', ')}): it must be resolved at load time (napi's dyn-symbols)`)
    summary += `, PE32+ ${facts.type === 'shared' ? 'DLL' : 'EXE'}, imports ${facts.needed.join(' ')}`
  }
  return { facts, problems, summary }
}
