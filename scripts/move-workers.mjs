// Release step: puts each platform's worker executable (`codecall-worker`, process isolation) next
// to its `.node` in npm/<platform>/, where the addon looks for it at run time.
//
//   node scripts/move-workers.mjs <artifacts dir>     (after `napi artifacts`)
import { chmodSync, copyFileSync, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const dirs = {
  'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
  'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
  'x86_64-unknown-linux-musl': 'linux-x64-musl',
  'aarch64-unknown-linux-musl': 'linux-arm64-musl',
  'x86_64-apple-darwin': 'darwin-x64',
  'aarch64-apple-darwin': 'darwin-arm64',
}

const artifacts = process.argv[2] ?? 'artifacts'
let missing = 0
for (const [target, dir] of Object.entries(dirs)) {
  const from = join(artifacts, `bindings-${target}`, 'codecall-worker')
  const to = join('npm', dir, 'codecall-worker')
  if (!existsSync(from)) {
    console.error(`missing ${from}`)
    missing++
    continue
  }
  copyFileSync(from, to)
  chmodSync(to, 0o755)
  console.log(`${from} -> ${to}`)
}
if (missing) process.exit(1)
if (!readdirSync('npm').length) process.exit(1)
