// Vitest globalSetup (runs once, in the main process): builds the test-only worker, whose scripts
// can abort the engine (`__test_abort`) or make a forbidden system call (`__test_open`): the
// launcher executable and a dev-profile build of the library with the `test-hooks` feature (a
// release build with that feature does not compile), which the launcher maps instead of the
// package's `.node` (`CODECALL_WORKER_LIBRARY`). Both copied to their own names so no other build
// overwrites them.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const EXE = process.platform === 'win32' ? '.exe' : ''
export const HOOKS_WORKER = join(root, 'target', 'test-hooks', `codecall-worker${EXE}`)
const LIBRARY = { darwin: 'libcodecall_native.dylib', win32: 'codecall_native.dll' }[process.platform as string] ?? 'libcodecall_native.so'
export const HOOKS_LIBRARY = join(root, 'target', 'test-hooks', LIBRARY)

export default function setup() {
  // Linux (the seccomp tests), macOS (Seatbelt) and Windows (job object, Low integrity):
  // __test__/security/confinement.spec.ts.
  if (!['linux', 'darwin', 'win32'].includes(process.platform)) return
  const built = join(root, 'target', 'debug', `codecall-worker${EXE}`)
  // Shares the dev-profile dependencies `cargo test` builds: only this crate compiles here.
  try {
    execFileSync('cargo', ['build', '--locked', '--quiet', '--lib', '--bin', 'codecall-worker', '--features', 'test-hooks'], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
  } catch (e) {
    // Only a machine without a Rust toolchain (a prebuilt-binary test job) may skip the crash
    // and seccomp tests; a failing build fails the run.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      console.warn('cargo not found: the test-hooks worker is not built, crash and seccomp tests are skipped')
      return
    }
    throw e
  }
  mkdirSync(dirname(HOOKS_WORKER), { recursive: true })
  copyFileSync(built, HOOKS_WORKER)
  copyFileSync(join(root, 'target', 'debug', LIBRARY), HOOKS_LIBRARY)
}
