// Adds lock entries for platform-specific optional packages that the registry mirror in this
// workplace does not serve (e.g. `@napi-rs/lzma-darwin-arm64`). A full registry records them;
// without them `npm ci` reports the lock as out of sync. Each entry carries the `os` / `cpu` /
// `libc` its name implies, so npm skips it on every other platform exactly as it would with the
// real metadata. Run after `npm install`: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from 'node:fs'

const path = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(path, 'utf8'))
const packages = lock.packages

const OS = { android: 'android', darwin: 'darwin', freebsd: 'freebsd', linux: 'linux', win32: 'win32', openharmony: 'openharmony', wasm32: null }
const CPU = { arm: 'arm', 'arm-eabi': 'arm', arm64: 'arm64', x64: 'x64', ia32: 'ia32', ppc64: 'ppc64', riscv64: 'riscv64', s390x: 's390x', loong64: 'loong64' }

function platformOf(name) {
  const tail = name.split('/').pop()
  const m = tail.match(/-(android|darwin|freebsd|linux|win32|openharmony|wasm32)-([a-z0-9]+(?:-eabi)?)(?:-(gnu|musl|msvc|gnueabihf|musleabihf|wasi))?$/)
  if (!m) return null
  const [, os, cpu, abi] = m
  if (os === 'wasm32') return { cpu: ['wasm32'] }
  const out = { os: [OS[os]], cpu: [CPU[cpu] ?? cpu] }
  if (abi === 'gnu' || abi === 'gnueabihf') out.libc = ['glibc']
  if (abi === 'musl' || abi === 'musleabihf') out.libc = ['musl']
  if (abi === 'gnueabihf' || abi === 'musleabihf') out.cpu = ['arm']
  return out
}

let added = 0
for (const [key, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const target = `node_modules/${dep}`
    const nested = `${key}/node_modules/${dep}`
    if (packages[target] || packages[nested]) continue
    const platform = platformOf(dep)
    if (!platform) continue
    packages[target] = { version, dev: entry.dev, optional: true, ...platform }
    if (entry.dev === undefined) delete packages[target].dev
    added++
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))))
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n')
console.log(`added ${added} platform-specific optional entries`)
