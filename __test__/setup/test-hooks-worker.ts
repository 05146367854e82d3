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
  // Windows: a debug cdylib exports every Rust symbol, past PE's 65 535, so there the library is
  // the release profile with debug assertions on (which the feature requires), in its own target
  // dir, as test-platforms builds it for Wine.
  const windows = process.platform === 'win32'
  const out = windows ? join(root, 'target', 'test-hooks-build', 'release') : join(root, 'target', 'debug')
  const built = join(out, `codecall-worker${EXE}`)
  // Elsewhere it shares the dev-profile dependencies `cargo test` builds: only this crate compiles.
  try {
    if (windows) {
      const env = { ...process.env, CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS: 'true' }
      const dir = ['--target-dir', join(root, 'target', 'test-hooks-build')]
      // The launcher first: building it builds the library too, without the hooks; the hooks build
      // then replaces that DLL.
      execFileSync('cargo', ['build', '--locked', '--quiet', '--release', '--bin', 'codecall-worker', ...dir], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] })
      execFileSync('cargo', ['rustc', '--locked', '--quiet', '--release', '--lib', '--crate-type', 'cdylib', '--features', 'test-hooks', ...dir], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] })
    } else {
      execFileSync('cargo', ['build', '--locked', '--quiet', '--lib', '--bin', 'codecall-worker', '--features', 'test-hooks'], {
        cwd: root,
        stdio: ['ignore', 'inherit', 'inherit'],
      })
    }
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
  copyFileSync(join(out, LIBRARY), HOOKS_LIBRARY)
}
