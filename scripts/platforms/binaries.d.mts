// Types of binaries.mjs, for the tests that import it (`__test__/platforms.spec.ts`).
export type Target =
  | 'x86_64-unknown-linux-gnu'
  | 'aarch64-unknown-linux-gnu'
  | 'x86_64-unknown-linux-musl'
  | 'aarch64-unknown-linux-musl'
  | 'x86_64-apple-darwin'
  | 'aarch64-apple-darwin'
  | 'x86_64-pc-windows-msvc'
export interface Floor {
  format: 'elf' | 'macho' | 'pe'
  machine: string
  glibc?: string
  musl?: boolean
  macos?: string
  windows?: boolean
}
export const FLOORS: Record<Target, Floor>
export interface UndefinedSymbol {
  name: string
  weak: boolean
  version?: { file: string; name: string } | null
  library?: string
}
export interface Facts {
  format: 'elf' | 'macho' | 'pe'
  machine: string
  type: string
  needed: string[]
  interpreter?: string | null
  dynamic?: boolean
  versions?: { file: string; name: string }[]
  undefinedSymbols?: UndefinedSymbol[]
  minos?: string | null
  installName?: string | null
  signed?: boolean
  symbols?: number
  imports?: { dll: string; functions: string[] }[]
  /** Symbols defined and exported (ELF dynamic, Mach-O external, PE export names). */
  exported: string[]
}
export function inspect(path: string): Facts
export function checkBinary(target: Target, kind: 'addon' | 'worker', path: string): { facts: Facts; problems: string[]; summary: string }
