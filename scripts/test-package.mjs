// `npm run test:package`: the package a user installs, tested the way they use it.
//
// 1. Assembles this machine's platform package as the release does (`scripts/assemble.mjs`, from
//    a `bindings-<target>/` folder like the build job uploads) into a copy of npm/.
// 2. `npm pack`s it, the data package `@codecall/native-data` and the main package; checks what each
//    tarball holds (no tests, benches, sources; the platform package exactly its `.node`, worker,
//    README and manifest; the data package its data files, README and manifest).
// 3. Installs the three tarballs into a fresh project outside this checkout and there checks: CommonJS
//    and ESM imports, every `exports` subpath, a host tool call with the default isolation (the
//    worker found inside the installed platform package) and with `thread`, the `codecall` bin,
//    `tsc --noEmit` of a TypeScript user file under `moduleResolution` node16 and bundler, one
//    Jest and one Vitest test. Then OpenTelemetry (api.md §10, docs/design/telemetry-plan.md §1):
//    without `@opentelemetry/api` installed nothing loads it (engine and gateway); a decoy API in
//    the app's cwd is never loaded; once `npm pack`ed from this checkout's node_modules and
//    installed, a hand-written TracerProvider receives a `codecall.execute` span. The sentence model
//    must be found in the installed data package (no `CODECALL_EMBEDDINGS_PATH` in the environment).
// 3c. The main package as a release publishes it (`releaseManifest`, this target only), installed
//    with npm's `--install-strategy=nested` and `=linked` (a pnpm-like store of symlinks): in each,
//    search by meaning and a process-isolated execution.
// 4. Prints the tarball sizes (`.package-test/sizes.json`; BENCHMARKS.md records them).
//
// Needs `npm run build` first (the release `.node` and worker), or `npm run build:target -- <this
// machine's triple>`: when artifacts/bindings-<triple>/ holds a newer build, that release build is
// the one packed, and its loader floor (`scripts/platforms/binaries.mjs`: GLIBC_2.17 on Linux gnu) is checked — CI
// packs that one. `--keep` leaves the project.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { DATA_DIR, DATA_FILES, DATA_PACKAGE, MODEL, PLATFORMS, WORKER, assemble, filesNamed, platformFiles, releaseManifest } from './assemble.mjs'
import { checkBinary } from './platforms/binaries.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const keep = process.argv.includes('--keep')
const stage = join(root, '.package-test')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'

let failures = 0
function check(what, fn) {
  try {
    const detail = fn()
    console.log(`ok   ${what}${detail ? ` — ${detail}` : ''}`)
  } catch (e) {
    failures++
    console.log(`FAIL ${what}\n     ${String(e?.stack ?? e).split('\n').join('\n     ')}`)
  }
}
function run(cmd, args, cwd, options = {}) {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32', ...options })
}
function assert(condition, message) {
  if (!condition) throw new Error(message)
}

// ---- 1. this machine's target and its build output ----------------------------------------------

function hostTarget() {
  const { platform, arch } = process
  if (platform === 'linux') {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime
    const cpu = arch === 'x64' ? 'x86_64' : arch === 'arm64' ? 'aarch64' : arch
    return `${cpu}-unknown-linux-${glibc ? 'gnu' : 'musl'}`
  }
  if (platform === 'darwin') return `${arch === 'arm64' ? 'aarch64' : 'x86_64'}-apple-darwin`
  if (platform === 'win32' && arch === 'x64') return 'x86_64-pc-windows-msvc'
  throw new Error(`no platform package for ${platform}-${arch}`)
}

const target = hostTarget()
const platformDir = PLATFORMS[target]
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const platformName = JSON.parse(readFileSync(join(root, 'npm', platformDir, 'package.json'), 'utf8')).name

/** `npm run build:target`'s release build of this target, when it is newer than `npm run build`'s. */
const releaseBuild = join(root, 'artifacts', `bindings-${target}`)
const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : -1)
const addonName = platformFiles(target)[0]
const fromRelease = mtime(join(releaseBuild, addonName)) > mtime(join(root, addonName))

/** Where the build left each file: all from the release build, or `npm run build`'s (the newest). */
function built(file) {
  if (fromRelease) return join(releaseBuild, file)
  const candidates = file === WORKER ? [join(root, 'target', target, 'release', file), join(root, file)] : [join(root, file)]
  const found = candidates.filter((p) => existsSync(p)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  if (!found.length) throw new Error(`${file} not found (looked in ${candidates.join(', ')}): run \`npm run build\` first`)
  return found[0]
}

rmSync(stage, { recursive: true, force: true })
const artifacts = join(stage, 'artifacts', `bindings-${target}`)
mkdirSync(artifacts, { recursive: true })
for (const file of platformFiles(target)) cpSync(built(file), join(artifacts, file))
cpSync(join(root, 'npm', platformDir), join(stage, 'npm', platformDir), { recursive: true })
// The data package's files come from the source tree, not from the build (assemble copies them).
cpSync(join(root, 'npm', DATA_DIR), join(stage, 'npm', DATA_DIR), { recursive: true })
const problems = assemble({ artifacts: join(stage, 'artifacts'), npmDir: join(stage, 'npm'), targets: [target] })
if (problems.length) {
  for (const p of problems) console.error(p)
  process.exit(1)
}

console.log(`packing ${fromRelease ? `the release build in ${releaseBuild}` : "`npm run build`'s build"}`)
for (const file of platformFiles(target)) {
  check(`loader check of ${file}${fromRelease ? '' : ' (informational: not a release build)'}`, () => {
    const { problems: found, summary } = checkBinary(target, file === WORKER ? 'worker' : 'addon', built(file))
    if (found.length && fromRelease) throw new Error(`${summary}\n${found.join('\n')}`)
    return found.length ? `${summary}; would fail as a release: ${found.join('; ')}` : summary
  })
}

// ---- 2. pack and look inside ---------------------------------------------------------------------

const packs = join(stage, 'packs')
mkdirSync(packs, { recursive: true })
function pack(dir) {
  const [info] = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', packs], dir))
  return { ...info, tarball: join(packs, info.filename), paths: info.files.map((f) => f.path) }
}
const main = pack(root)
const platform = pack(join(stage, 'npm', platformDir))
const data = pack(join(stage, 'npm', DATA_DIR))

check('main tarball: no tests, benches, sources, binaries or build files', () => {
  const forbidden = main.paths.filter(
    (p) =>
      /^(__test__|bench|src|examples|fuzz|scripts|target|npm|docs|\.github|\.ci|\.package-test|\.readme-test)\//.test(p) ||
      /\.(rs|node|log|tgz)$/.test(p) ||
      /(\.spec\.|\.test\.|tsconfig\.json$|Cargo\.(toml|lock)$|^codecall-worker$)/.test(p),
  )
  assert(forbidden.length === 0, `unexpected files: ${forbidden.join(', ')}`)
  const required = ['package.json', 'index.js', 'index.d.ts', 'README.md', 'LICENSE', 'THIRD_PARTY_NOTICES.md', 'tool-options.js', 'tool-options.d.ts', 'lib/gateway/cli.mjs']
  const missing = required.filter((p) => !main.paths.includes(p))
  assert(missing.length === 0, `missing: ${missing.join(', ')}`)
  return `${main.paths.length} files`
})
check(`platform tarball: exactly its manifest, README, .node${target.includes('windows') ? '' : ' and worker'} (no model); depends on ${DATA_PACKAGE}`, () => {
  const expected = ['README.md', 'package.json', ...platformFiles(target)].sort()
  assert(JSON.stringify([...platform.paths].sort()) === JSON.stringify(expected), `has ${platform.paths.join(', ')}; expected ${expected.join(', ')}`)
  const manifest = JSON.parse(readFileSync(join(stage, 'npm', platformDir, 'package.json'), 'utf8'))
  assert(manifest.dependencies?.[DATA_PACKAGE] === pkg.version, `dependencies: ${JSON.stringify(manifest.dependencies)}`)
})
check(`data tarball: exactly its manifest, README and ${DATA_FILES.join(', ')}`, () => {
  const expected = ['README.md', 'package.json', ...DATA_FILES].sort()
  assert(JSON.stringify([...data.paths].sort()) === JSON.stringify(expected), `has ${data.paths.join(', ')}; expected ${expected.join(', ')}`)
  assert(data.name === DATA_PACKAGE && data.version === pkg.version, `${data.name}@${data.version}`)
})

// ---- 3. a fresh project --------------------------------------------------------------------------

const project = mkdtempSync(join(tmpdir(), 'codecall-package-test-'))
const devVersion = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'codecall-user', version: '1.0.0', private: true }, null, 2))
const tools = ['typescript', 'vitest', 'jest', '@types/node'].map((name) => `${name}@${devVersion(name)}`)
console.log(`installing into ${project}`)
run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', main.tarball, platform.tarball, data.tarball, ...tools], project, {
  stdio: ['ignore', 'inherit', 'inherit'],
})

const installedPlatform = join(project, 'node_modules', ...platformName.split('/'))
const installedWorker = join(installedPlatform, WORKER)
const processIsolation = process.platform !== 'win32'

check('the worker is installed executable inside the platform package', () => {
  if (!processIsolation) return 'not on Windows (thread isolation only)'
  assert(existsSync(installedWorker), `${installedWorker} is missing`)
  assert((statSync(installedWorker).mode & 0o111) !== 0, `${installedWorker} is not executable`)
})

const host = `{ callTool: (name, input) => ({ name, sum: input.a + input.b }) }`
const script = `const r = await callTool('math:add', { a: 2, b: 3 }); return [r.name, r.sum * 2]`
const workersScan = `
function workerPids(path) {
  if (process.platform !== 'linux') return null
  const fs = require('node:fs')
  const want = fs.realpathSync(path)
  return fs.readdirSync('/proc').filter((d) => /^\\d+$/.test(d)).filter((d) => { try { return fs.readlinkSync('/proc/' + d + '/exe') === want } catch { return false } })
}`

writeFileSync(
  join(project, 'cjs.cjs'),
  `const assert = require('node:assert/strict')
const { Sandbox, CodeCall, validate } = require('@codecall/native')
${workersScan}
;(async () => {
  for (const isolation of [undefined, 'thread']) {
    const sb = new Sandbox(isolation === undefined ? undefined : { isolation })
    assert.equal(sb.isolation, isolation ?? (${processIsolation} ? 'process' : 'thread'))
    assert.deepEqual(sb.warnings, [])
    const r = await sb.execute(${JSON.stringify(script)}, ${host})
    assert.deepEqual({ status: r.status, result: r.result }, { status: 'ok', result: ['math:add', 10] })
    if (sb.isolation === 'process') {
      const pids = workerPids(${JSON.stringify(installedWorker)})
      if (pids !== null) assert.ok(pids.length >= 1, 'no process runs the installed worker')
    }
    await sb.dispose()
  }
  assert.equal(validate('return 1').ok, true)
  // The sentence model is found in the installed data package: no warning, and once the tools are
  // embedded a query that shares no word with the tool finds it by meaning alone.
  const warnings = []
  process.on('warning', (w) => warnings.push(w))
  const { ToolIndex } = require('@codecall/native')
  const index = new ToolIndex()
  index.upsert([{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' }, { name: 'math:add', description: 'Add two numbers' }])
  await index.ready()
  assert.deepEqual(index.search('will it rain tomorrow').map((h) => h.name), ['weather:get_forecast'])
  await new Promise((r) => setImmediate(r))
  assert.deepEqual(warnings.filter((w) => w.code === 'CODECALL_NO_EMBEDDINGS').map(String), [])
  const cc = new CodeCall({ metaToolSeparator: '_' })
  cc.setTools([{ name: 'math:add', description: 'Add two numbers', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } }])
  assert.equal(cc.search({ query: 'add numbers' }).tools[0].name, 'math:add')
  await cc.dispose()
  assert.equal(require('@codecall/native/package.json').version, ${JSON.stringify(pkg.version)})
  assert.equal(typeof require('@codecall/native/tool-options').codecallMeta, 'function')
  if (process.features.require_module) {
    assert.equal(typeof require('@codecall/native/gateway').Gateway, 'function')
    assert.equal(typeof require('@codecall/native/mcp-sdk').codeMode, 'function')
    assert.equal(typeof require('@codecall/native/fastmcp').codeMode, 'function')
  } else {
    assert.throws(() => require('@codecall/native/gateway'), { code: 'ERR_REQUIRE_ESM' })
  }
  console.log('cjs ok')
})().catch((e) => { console.error(e); process.exit(1) })
`,
)
check(`one copy of ${MODEL} in the project, in the installed ${DATA_PACKAGE}`, () => {
  const copies = filesNamed(join(project, 'node_modules'), MODEL)
  const want = join(project, 'node_modules', ...DATA_PACKAGE.split('/'), MODEL)
  assert(copies.length === 1 && copies[0] === want, `copies: ${copies.join(', ') || 'none'}`)
})
check('CommonJS: require, both isolations with a host tool call, CodeCall, every subpath', () => {
  // The installed package must find its own table: no override from the caller's environment.
  const { CODECALL_EMBEDDINGS_PATH: _, ...env } = process.env
  const out = run(process.execPath, ['cjs.cjs'], project, { env })
  assert(out.includes('cjs ok'), out)
  return process.features.require_module ? 'ESM subpaths through require()' : 'ESM subpaths need Node >= 20.19 for require()'
})

writeFileSync(
  join(project, 'esm.mjs'),
  `import assert from 'node:assert/strict'
import native, { Sandbox, CodeCall } from '@codecall/native'
import { codecallMeta } from '@codecall/native/tool-options'
import { Gateway, parseConfig, VERSION } from '@codecall/native/gateway'
import { codeMode } from '@codecall/native/mcp-sdk'
import { codeMode as fastCodeMode } from '@codecall/native/fastmcp'
import manifest from '@codecall/native/package.json' with { type: 'json' }

assert.equal(native.Sandbox, Sandbox)
assert.equal(manifest.version, ${JSON.stringify(pkg.version)})
assert.equal(VERSION, manifest.version)
assert.deepEqual(codecallMeta({ tags: ['x'] }), { codecall: { tags: ['x'] } })
assert.equal(typeof Gateway, 'function')
assert.deepEqual(parseConfig({ mcpServers: {} }).servers, [])
assert.equal(typeof codeMode, 'function')
assert.equal(typeof fastCodeMode, 'function')
const sb = new Sandbox()
const r = await sb.execute(${JSON.stringify(script)}, ${host})
assert.deepEqual(r.result, ['math:add', 10])
await sb.dispose()
const cc = new CodeCall()
assert.ok(cc.listTools().length >= 3)
await cc.dispose()
console.log('esm ok')
`,
)
check('ES modules: default and named imports, every subpath, a host tool call', () => {
  const out = run(process.execPath, ['esm.mjs'], project)
  assert(out.includes('esm ok'), out)
})

check('the codecall bin: --version and exec', () => {
  const version = run(npx, ['--no-install', 'codecall', '--version'], project).trim()
  assert(version.includes(pkg.version), `--version said ${version}`)
  const out = run(npx, ['--no-install', 'codecall', 'exec', '--code', 'return [1, 2].map((x) => x * 21)'], project)
  assert(JSON.stringify(JSON.parse(out)) === JSON.stringify({ ok: true, value: [21, 42] }), out)
  return version
})

const userTs = `import { Sandbox, CodeCall, type ExecuteResult, type ToolDefinition } from '@codecall/native'
import { codecallMeta, type CodeCallMeta } from '@codecall/native/tool-options'
import { Gateway, loadConfig, type GatewayConfig } from '@codecall/native/gateway'
import { codeMode, type CodeModeOptions } from '@codecall/native/mcp-sdk'
import { codeMode as fastCodeMode } from '@codecall/native/fastmcp'

const tools: ToolDefinition[] = [{ name: 'math:add', inputSchema: { type: 'object' } }]
const meta: CodeCallMeta = { tags: ['math'] }
const options: CodeModeOptions = { metaToolSeparator: '_' }
export async function main(): Promise<number> {
  const sb = new Sandbox({ isolation: 'thread', timeoutMs: 1000 })
  const r: ExecuteResult = await sb.execute('return 1', { callTool: (name: string, input: unknown) => ({ name, input }) })
  await sb.dispose()
  const cc = new CodeCall(options)
  cc.setTools(tools)
  const config: GatewayConfig | null = null
  void [codecallMeta(meta), Gateway, loadConfig, codeMode, fastCodeMode, config]
  await cc.dispose()
  return r.status === 'ok' ? 1 : 0
}
`
writeFileSync(join(project, 'user.mts'), userTs)
writeFileSync(join(project, 'user.ts'), userTs)
const strict = { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', types: ['node'] }
writeFileSync(join(project, 'tsconfig.node16.json'), JSON.stringify({ compilerOptions: { ...strict, module: 'node16', moduleResolution: 'node16' }, files: ['user.mts'] }))
writeFileSync(join(project, 'tsconfig.bundler.json'), JSON.stringify({ compilerOptions: { ...strict, module: 'esnext', moduleResolution: 'bundler' }, files: ['user.ts'] }))
for (const resolution of ['node16', 'bundler']) {
  check(`tsc --noEmit of a user file, moduleResolution ${resolution} (strict, skipLibCheck off)`, () => {
    try {
      run(npx, ['--no-install', 'tsc', '-p', `tsconfig.${resolution}.json`], project)
    } catch (e) {
      throw new Error(`${e.stdout ?? ''}${e.stderr ?? ''}`)
    }
  })
}

const testBody = (kind) => `
  const sb = new Sandbox()
  try {
    const r = await sb.execute(${JSON.stringify(script)}, ${host})
    expect(r).toMatchObject({ status: 'ok', result: ['math:add', 10] })
    expect(sb.isolation).toBe(${JSON.stringify(processIsolation ? 'process' : 'thread')})
    const bad = await sb.execute('return (')
    expect(bad.status).toBe('syntax_error')
  } finally {
    await sb.dispose()
  }
  void ${JSON.stringify(kind)}`
mkdirSync(join(project, 'jest-tests'))
writeFileSync(
  join(project, 'jest-tests', 'sandbox.test.js'),
  `const { Sandbox } = require('@codecall/native')\n\ntest('a sandboxed script calls a host tool (Jest)', async () => {${testBody('jest')}\n})\n`,
)
mkdirSync(join(project, 'vitest-tests'))
writeFileSync(
  join(project, 'vitest-tests', 'sandbox.test.mjs'),
  `import { expect, test } from 'vitest'\nimport { Sandbox } from '@codecall/native'\n\ntest('a sandboxed script calls a host tool (Vitest)', async () => {${testBody('vitest')}\n})\n`,
)
check('one Jest test', () => {
  const out = run(npx, ['--no-install', 'jest', '--roots', '<rootDir>/jest-tests', '--ci'], project, { env: { ...process.env, CI: 'true' } })
  return out.trim().split('\n').pop()
})
check('one Vitest test', () => {
  const out = run(npx, ['--no-install', 'vitest', 'run', '--dir', 'vitest-tests'], project, { env: { ...process.env, CI: 'true' } })
  const line = out.split('\n').find((l) => /Tests\s/.test(l))
  assert(line && /1 passed/.test(line), out)
  return line.replace(/\u001b\[[0-9;]*m/g, '').trim()
})

// ---- 3b. OpenTelemetry: absent, never from the app's cwd, then installed (api.md §10) ------------
//
// The project has no `@opentelemetry/api` yet: it is an optional peer dependency, which npm never
// installs. The engine and the gateway resolve it from the package's own location (never the
// app's cwd), and only once a CodeCall or a Gateway exists.

/** The user's environment: the installed package finds its own sentence model. */
const userEnv = (() => {
  const { CODECALL_EMBEDDINGS_PATH: _, ...env } = process.env
  return env
})()
const installedMain = join(project, 'node_modules', ...pkg.name.split('/'))
const tool = `{ name: 'math:add', description: 'Add two numbers', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } }`

// An upstream MCP server for the gateway (the package's own dependency, the official SDK).
writeFileSync(
  join(project, 'fx-server.mjs'),
  `import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const server = new Server({ name: 'fx', version: '1.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [${tool.replace("'math:add'", "'add'")}] }))
server.setRequestHandler(CallToolRequestSchema, (r) => ({ content: [{ type: 'text', text: JSON.stringify(r.params.arguments.a + r.params.arguments.b) }] }))
await server.connect(new StdioServerTransport())
`,
)
// The package by name, or (CODECALL_PACKAGE_DIR) by absolute path from another cwd.
writeFileSync(
  join(project, 'otel-absent.cjs'),
  `const assert = require('node:assert/strict')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const dir = process.env.CODECALL_PACKAGE_DIR
;(async () => {
  const { CodeCall } = require(dir ?? '@codecall/native')
  const cc = new CodeCall()
  cc.setTools([${tool}])
  const r = await cc.execute({ script: ${JSON.stringify(script)} }, ${host})
  assert.deepEqual({ status: r.status, result: r.result }, { status: 'ok', result: ['math:add', 10] })
  assert.equal(cc.search({ query: 'add numbers' }).tools[0].name, 'math:add')
  assert.equal(cc.describe({ toolNames: ['math:add'] }).tools.length, 1)
  await cc.dispose()

  const gatewayModule = dir ? pathToFileURL(path.join(dir, 'lib', 'gateway', 'index.mjs')).href : '@codecall/native/gateway'
  const { Gateway, RequestScope, parseConfig } = await import(gatewayModule)
  const logs = []
  const config = parseConfig({ mcpServers: { fx: { command: process.execPath, args: [path.join(__dirname, 'fx-server.mjs')] } } })
  const gateway = new Gateway(config, { log: (line) => logs.push(line), audit: null })
  try {
    assert.deepEqual((await gateway.search('add numbers')).tools.map((t) => t.name), ['fx:add'], logs.join('\\n'))
    assert.equal(typeof gateway.hostFor(new RequestScope()).callTool, 'function')
    const plan = "const a = await callTool('fx:add', { a: 2, b: 3 }); const b = await call_tool('fx', 'add', { a: 1, b: 1 }); await mcp.callTool('fx', 'add', { a: 0, b: 1 }); return [a, b]"
    const g = await gateway.handle(gateway.metaByKind.execute, { script: plan }, new RequestScope())
    assert.deepEqual({ status: g.status, result: g.result }, { status: 'ok', result: [5, { ok: true, result: 2 }] }, JSON.stringify(g) + logs.join('\\n'))
  } finally {
    await gateway.close()
  }

  const loaded = Object.keys(require.cache).filter((k) => k.includes('@opentelemetry'))
  assert.deepEqual(loaded, [], 'loaded though not installed: ' + loaded.join(', '))
  assert.equal(globalThis[Symbol.for('opentelemetry.js.api.1')], undefined, 'an OpenTelemetry API global was registered')
  console.log('otel-absent ok')
})().catch((e) => { console.error(e); process.exit(1) })
`,
)
check('@opentelemetry/api not installed: CodeCall execute/search/describe and a Gateway with an upstream load nothing of it', () => {
  assert(!existsSync(join(project, 'node_modules', '@opentelemetry', 'api')), 'the project has @opentelemetry/api installed: the check needs it absent')
  const out = run(process.execPath, ['otel-absent.cjs'], project, { env: userEnv })
  assert(out.includes('otel-absent ok'), out)
  return 'no require.cache key, no global'
})

// A decoy API in the app's cwd, which leaves a marker file if anything loads it.
const decoy = join(project, 'decoy')
const decoyApi = join(decoy, 'node_modules', '@opentelemetry', 'api')
const decoyMarker = join(decoy, 'decoy-api-was-loaded')
mkdirSync(decoyApi, { recursive: true })
writeFileSync(join(decoy, 'package.json'), JSON.stringify({ name: 'decoy-app', version: '1.0.0', private: true, dependencies: { '@opentelemetry/api': '1.9.1' } }))
writeFileSync(join(decoyApi, 'package.json'), JSON.stringify({ name: '@opentelemetry/api', version: '1.9.1', main: 'index.js' }))
writeFileSync(join(decoyApi, 'index.js'), `require('node:fs').writeFileSync(${JSON.stringify(decoyMarker)}, __filename)\nmodule.exports = {}\n`)
check("@opentelemetry/api is never resolved from the app's cwd (a decoy there, the package required by path)", () => {
  let failed = null
  let out = ''
  try {
    out = run(process.execPath, [join(project, 'otel-absent.cjs')], decoy, { env: { ...userEnv, CODECALL_PACKAGE_DIR: installedMain } })
  } catch (e) {
    failed = new Error(`${e.stdout ?? ''}${e.stderr ?? ''}` || String(e))
  }
  assert(!existsSync(decoyMarker), `the decoy ${decoyApi} (in the cwd, not beside the package) was loaded`)
  if (failed) throw failed
  assert(out.includes('otel-absent ok'), out)
  return `cwd ${decoy}`
})

// Installed as a user installs it: a tarball of this checkout's copy (no registry), after the
// checks above. A minimal hand-written TracerProvider: tracers whose spans record their name.
writeFileSync(
  join(project, 'otel-present.cjs'),
  `const assert = require('node:assert/strict')
const api = require('@opentelemetry/api')
const ended = []
let ids = 0
class Span {
  constructor(name, options) { this.name = name; this.attributes = { ...options?.attributes }; this.status = { code: 0 }; this.context = { traceId: '1'.padStart(32, '0'), spanId: (++ids).toString(16).padStart(16, '0'), traceFlags: 1 } }
  spanContext() { return this.context }
  setAttribute(key, value) { this.attributes[key] = value; return this }
  setAttributes(attributes) { Object.assign(this.attributes, attributes); return this }
  addEvent() { return this }
  addLink() { return this }
  addLinks() { return this }
  setStatus(status) { this.status = status; return this }
  updateName(name) { this.name = name; return this }
  end() { ended.push(this) }
  isRecording() { return true }
  recordException() {}
}
const tracer = {
  startSpan: (name, options) => new Span(name, options),
  startActiveSpan(name, ...rest) { const fn = rest.pop(); const span = this.startSpan(name, rest[0]); return api.context.with(api.trace.setSpan(rest[1] ?? api.context.active(), span), fn, undefined, span) },
}
assert.equal(api.trace.setGlobalTracerProvider({ getTracer: () => tracer }), true)
;(async () => {
  const { CodeCall } = require('@codecall/native')
  const cc = new CodeCall()
  cc.setTools([${tool}])
  const r = await cc.execute({ script: ${JSON.stringify(script)} }, ${host})
  assert.deepEqual({ status: r.status, result: r.result }, { status: 'ok', result: ['math:add', 10] })
  await cc.dispose()
  await new Promise((resolve) => setImmediate(resolve))
  const names = ended.map((s) => s.name)
  if (!names.includes('codecall.execute')) {
    console.error('NO_EXECUTE_SPAN ' + JSON.stringify(names))
    process.exit(2)
  }
  const copies = Object.keys(require.cache).filter((k) => k.replace(/\\\\/g, '/').endsWith('/@opentelemetry/api/build/src/index.js'))
  assert.equal(copies.length, 1, 'copies of @opentelemetry/api loaded: ' + copies.join(', '))
  console.log('otel-present ok ' + JSON.stringify(names))
})().catch((e) => { console.error(e); process.exit(1) })
`,
)
check("@opentelemetry/api installed (npm pack of this checkout's copy): a codecall.execute span reaches the app's TracerProvider", () => {
  const apiSource = join(root, 'node_modules', '@opentelemetry', 'api')
  const [info] = JSON.parse(run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', packs], apiSource))
  run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', join(packs, info.filename)], project)
  let out
  try {
    out = run(process.execPath, ['otel-present.cjs'], project, { env: userEnv })
  } catch (e) {
    const seen = /NO_EXECUTE_SPAN (.*)/.exec(e.stderr ?? '')
    if (seen) {
      throw new Error(
        `no 'codecall.execute' span reached the app's TracerProvider (spans ended: ${seen[1]}). Either the engine did not ` +
          `find ${join(project, 'node_modules', '@opentelemetry', 'api')} (it resolves it from the platform package's .node ` +
          `through @codecall/native/package.json, never from the cwd), or the packed build records no spans ` +
          `(a build without issue 27's engine part: run \`npm run build\` first)`,
      )
    }
    throw new Error(`${e.stdout ?? ''}${e.stderr ?? ''}` || String(e))
  }
  assert(out.includes('otel-present ok'), out)
  return `@opentelemetry/api ${info.version}; spans ${out.trim().split('otel-present ok ').pop()}`
})

// ---- 3c. the install layouts of npm: nested, linked -------------------------------------------------
//
// The main package as a release publishes it, depending on this target's platform package (optional)
// and on the data package, both served from their tarballs through `overrides`. Nested: every
// package in its dependent's node_modules; linked: a store under node_modules/.store with symlinks,
// each package's own dependencies linked beside it, as pnpm does. The addon walks up from its
// `.node`'s real directory (`model_places`), so the data package must be beside the platform package.

const releaseStage = join(stage, 'release-main')
mkdirSync(releaseStage, { recursive: true })
run('tar', ['xzf', main.tarball, '-C', releaseStage])
const releasePkg = releaseManifest({ ...pkg, napi: { ...pkg.napi, targets: [target] } })
writeFileSync(join(releaseStage, 'package', 'package.json'), `${JSON.stringify(releasePkg, null, 2)}\n`)
const releaseMain = pack(join(releaseStage, 'package'))
writeFileSync(
  join(stage, 'layout.cjs'),
  `const assert = require('node:assert/strict')
const { Sandbox, ToolIndex } = require('@codecall/native')
;(async () => {
  const warnings = []
  process.on('warning', (w) => warnings.push(w))
  const index = new ToolIndex()
  index.upsert([{ name: 'weather:get_forecast', description: 'Get the weather forecast for a city' }, { name: 'math:add', description: 'Add two numbers' }])
  await index.ready()
  assert.deepEqual(index.search('will it rain tomorrow').map((h) => h.name), ['weather:get_forecast'])
  await new Promise((r) => setImmediate(r))
  assert.deepEqual(warnings.filter((w) => w.code === 'CODECALL_NO_EMBEDDINGS').map(String), [])
  const sb = new Sandbox()
  assert.equal(sb.isolation, ${JSON.stringify(processIsolation ? 'process' : 'thread')})
  assert.deepEqual(sb.warnings, [])
  const r = await sb.execute(${JSON.stringify(script)}, ${host})
  assert.deepEqual({ status: r.status, result: r.result }, { status: 'ok', result: ['math:add', 10] })
  await sb.dispose()
  console.log('layout ok ' + sb.isolation)
})().catch((e) => { console.error(e); process.exit(1) })
`,
)
for (const strategy of ['nested', 'linked']) {
  check(`npm --install-strategy=${strategy}: search by meaning and a ${processIsolation ? 'process-isolated' : 'thread'} execution`, () => {
    const dir = mkdtempSync(join(tmpdir(), `codecall-package-${strategy}-`))
    try {
      const overrides = { [platform.name]: `file:${platform.tarball}`, [data.name]: `file:${data.tarball}` }
      const manifest = { name: 'codecall-user', version: '1.0.0', private: true, dependencies: { [pkg.name]: `file:${releaseMain.tarball}` }, overrides }
      writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
      run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', `--install-strategy=${strategy}`], dir)
      cpSync(join(stage, 'layout.cjs'), join(dir, 'layout.cjs'))
      let out
      try {
        out = run(process.execPath, ['layout.cjs'], dir, { env: userEnv })
      } catch (e) {
        throw new Error(`${e.stdout ?? ''}${e.stderr ?? ''}` || String(e))
      }
      assert(out.includes('layout ok'), out)
      // From the project, as the app resolves it (not from this script: that is the package itself).
      const fromMain = createRequire(createRequire(join(dir, 'layout.cjs')).resolve(`${pkg.name}/package.json`))
      const addon = realpathSync(dirname(fromMain.resolve(`${platform.name}/package.json`)))
      const models = filesNamed(join(dir, 'node_modules'), MODEL).map((p) => relative(dir, p))
      return `.node in ${relative(dir, addon)}; model at ${models.join(', ')}`
    } finally {
      if (!keep) rmSync(dir, { recursive: true, force: true })
    }
  })
}

// ---- 4. sizes ------------------------------------------------------------------------------------

const mb = (n) => `${(n / 1e6).toFixed(2)} MB`
const sizes = {
  target,
  main: { name: main.name, packed: main.size, unpacked: main.unpackedSize, files: main.entryCount },
  data: { name: data.name, packed: data.size, unpacked: data.unpackedSize, files: Object.fromEntries(data.files.map((f) => [f.path, f.size])) },
  platform: {
    name: platform.name,
    packed: platform.size,
    unpacked: platform.unpackedSize,
    files: Object.fromEntries(platform.files.map((f) => [f.path, f.size])),
  },
}
writeFileSync(join(stage, 'sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`)
console.log(`\n| tarball | packed | unpacked |\n|---|---|---|`)
console.log(`| ${main.name} | ${mb(main.size)} | ${mb(main.unpackedSize)} |`)
console.log(`| ${platform.name} | ${mb(platform.size)} | ${mb(platform.unpackedSize)} |`)
for (const f of platform.files) console.log(`|   ${f.path} | | ${mb(f.size)} |`)
console.log(`| ${data.name} | ${mb(data.size)} | ${mb(data.unpackedSize)} |`)

if (keep) console.log(`\nproject kept at ${realpathSync(project)}`)
else rmSync(project, { recursive: true, force: true })
if (failures) {
  console.log(`\n${failures} check(s) failed`)
  process.exit(1)
}
console.log('\npackage checks passed')
