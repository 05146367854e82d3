#!/usr/bin/env node
// Collects the real `tools/list` output of the MCP servers pinned in
// servers.json into corpus.json (the search-quality benchmark corpus).
//
//   node bench/search/collect.mjs                  # install + collect all
//   node bench/search/collect.mjs --only github,slack
//   node bench/search/collect.mjs --no-install     # reuse .servers/ as is
//   node bench/search/collect.mjs --timeout 45000  # per-server limit (ms)
//   node bench/search/collect.mjs --allow-network  # don't isolate the network
//   node bench/search/collect.mjs --dry-run        # don't write corpus.json
//   node bench/search/collect.mjs --servers bench/search/servers2.json --out bench/search/corpus2.json
//                                                  # another server list / corpus file
//
// Besides the tools, each server's own words are kept on its entry in `servers`: its
// `initialize` result's `serverInfo` (name, version; title, description, websiteUrl where sent)
// and `instructions`.
//
// Each package is installed at its pinned version into its own prefix,
// bench/search/.servers/<appId>/ (gitignored), with install scripts disabled.
// Each server is then started over stdio with the official MCP SDK client,
// one at a time, with dummy credentials only, HOME pointing at a fresh temp
// dir and (on Linux, when `unshare` works) inside an empty network namespace,
// so that nothing can reach the internet. A server that does not answer
// `tools/list` within the timeout is killed (with its whole process tree) and
// reported as failed; with --only, the tools of the other servers already in
// corpus.json are kept.

import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import process from 'node:process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ListToolsResultSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js'

const here = path.dirname(fileURLToPath(import.meta.url))
let serversFile = path.join(here, 'servers.json')
let corpusFile = path.join(here, 'corpus.json')
const installRoot = path.join(here, '.servers')

// ---------------------------------------------------------------- options
function parseArgs(argv) {
  const opts = { only: null, install: true, timeoutMs: 30_000, isolateNetwork: true, dryRun: false }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const value = () => {
      const [, inline] = a.split(/=(.*)/s)
      if (inline !== undefined) return inline
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    if (a === '--only' || a.startsWith('--only=')) {
      opts.only = new Set(value().split(',').map((s) => s.trim()).filter(Boolean))
    } else if (a === '--timeout' || a.startsWith('--timeout=')) {
      opts.timeoutMs = Number(value())
      if (!(opts.timeoutMs > 0)) throw new Error('--timeout must be a positive number of ms')
    } else if (a === '--no-install') opts.install = false
    else if (a === '--allow-network') opts.isolateNetwork = false
    else if (a === '--dry-run') opts.dryRun = true
    else if (a === '--servers' || a.startsWith('--servers=')) serversFile = path.resolve(value())
    else if (a === '--out' || a.startsWith('--out=')) corpusFile = path.resolve(value())
    else if (a === '-h' || a === '--help') {
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 12).join('\n'))
      process.exit(0)
    } else throw new Error(`unknown argument: ${a}`)
  }
  return opts
}

// ---------------------------------------------------------------- helpers
function sdkVersion() {
  const require = createRequire(import.meta.url)
  let dir = path.dirname(require.resolve('@modelcontextprotocol/sdk/client/index.js'))
  for (;;) {
    const pj = path.join(dir, 'package.json')
    if (fs.existsSync(pj)) {
      const json = JSON.parse(fs.readFileSync(pj, 'utf8'))
      if (json.name === '@modelcontextprotocol/sdk') return json.version
    }
    const up = path.dirname(dir)
    if (up === dir) return 'unknown'
    dir = up
  }
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

function log(...args) {
  console.log(...args)
}

/** Can we run servers inside an empty network namespace? */
function probeUnshare() {
  if (process.platform !== 'linux') return null
  for (const args of [['--net'], ['--net', '--map-root-user']]) {
    const r = spawnSync('unshare', [...args, 'true'], { stdio: 'ignore' })
    if (r.status === 0) return args
  }
  return null
}

// ---------------------------------------------------------------- install
function prefixFor(server) {
  return path.join(installRoot, server.appId)
}

function packageDir(server) {
  return path.join(prefixFor(server), 'node_modules', ...server.package.split('/'))
}

function installedVersion(server) {
  try {
    return readJson(path.join(packageDir(server), 'package.json')).version
  } catch {
    return null
  }
}

function install(server) {
  if (installedVersion(server) === server.version) return
  const prefix = prefixFor(server)
  fs.rmSync(prefix, { recursive: true, force: true })
  fs.mkdirSync(prefix, { recursive: true })
  fs.writeFileSync(
    path.join(prefix, 'package.json'),
    JSON.stringify(
      {
        name: `bench-search-server-${server.appId}`,
        private: true,
        dependencies: { [server.package]: server.version },
      },
      null,
      2,
    ) + '\n',
  )
  const args = ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--save-exact', '--loglevel=error']
  if (!server.installScripts) args.push('--ignore-scripts')
  log(`  npm ${args.join(' ')}`)
  const r = spawnSync('npm', args, { cwd: prefix, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  fs.writeFileSync(path.join(prefix, 'install.log'), `${r.stdout ?? ''}\n${r.stderr ?? ''}`)
  if (r.status !== 0) {
    throw new Error(`npm install failed (exit ${r.status}); see ${path.relative(process.cwd(), prefix)}/install.log`)
  }
  const v = installedVersion(server)
  if (v !== server.version) throw new Error(`installed ${server.package}@${v}, expected ${server.version}`)
}

// ---------------------------------------------------------------- launch
/** Resolves `command` (a bin name of the package, or a path inside it) to a file. */
function resolveEntry(server) {
  const dir = packageDir(server)
  const pj = readJson(path.join(dir, 'package.json'))
  let bin = pj.bin
  if (typeof bin === 'string') bin = { [pj.name.split('/').pop()]: bin }
  bin ??= {}
  const cmd = server.command
  let rel
  if (cmd && bin[cmd]) rel = bin[cmd]
  else if (cmd && fs.existsSync(path.join(dir, cmd))) rel = cmd
  else if (!cmd && Object.keys(bin).length === 1) rel = Object.values(bin)[0]
  else throw new Error(`cannot resolve command ${JSON.stringify(cmd)}; package bins: ${JSON.stringify(bin)}`)
  return path.join(dir, rel)
}

/** JS entry points run under this node; anything else (native binaries) is executed directly. */
function launcherFor(file) {
  const fd = fs.openSync(file, 'r')
  const head = Buffer.alloc(128)
  fs.readSync(fd, head, 0, 128, 0)
  fs.closeSync(fd)
  const text = head.toString('latin1')
  const firstLine = text.split('\n')[0]
  const native = text.startsWith('\x7fELF') || (firstLine.startsWith('#!') && !/\bnode\b/.test(firstLine))
  return native ? { command: file, args: [] } : { command: process.execPath, args: [file] }
}

function substitute(value, vars) {
  return value.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? vars[k] : m))
}

// ---------------------------------------------------------------- process tree
function childrenMap() {
  const map = new Map()
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (!map.has(ppid)) map.set(ppid, [])
      map.get(ppid).push(Number(name))
    } catch {
      // the process went away meanwhile
    }
  }
  return map
}

function descendants(pid) {
  if (!pid || process.platform !== 'linux') return []
  const map = childrenMap()
  const out = []
  const queue = [pid]
  while (queue.length) {
    for (const c of map.get(queue.shift()) ?? []) {
      out.push(c)
      queue.push(c)
    }
  }
  return out
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function killAll(pids) {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

// ---------------------------------------------------------------- collect one
class TrackedStdioTransport extends StdioClientTransport {
  async start() {
    await super.start()
    this.rootPid = this.pid
  }
}

async function collect(server, opts, netns) {
  const entry = resolveEntry(server)
  const launch = launcherFor(entry)

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `mcp-bench-${server.appId}-`))
  const vars = { tmp, home: tmp }
  fs.mkdirSync(path.join(tmp, 'workspace'), { recursive: true })
  const args = [...launch.args, ...(server.args ?? []).map((a) => substitute(a, vars))]
  const env = {
    HOME: tmp,
    TMPDIR: tmp,
    XDG_CONFIG_HOME: path.join(tmp, '.config'),
    XDG_CACHE_HOME: path.join(tmp, '.cache'),
    XDG_DATA_HOME: path.join(tmp, '.local', 'share'),
    NO_COLOR: '1',
    DO_NOT_TRACK: '1',
    ...Object.fromEntries(Object.entries(server.env ?? {}).map(([k, v]) => [k, substitute(String(v), vars)])),
  }
  let command = launch.command
  let argv = args
  if (netns) {
    argv = [...netns, '--', command, ...args]
    command = 'unshare'
  }

  const transport = new TrackedStdioTransport({ command, args: argv, env, cwd: tmp, stderr: 'pipe' })
  let stderrTail = ''
  transport.stderr?.on('data', (chunk) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-4000)
  })
  const client = new Client({ name: 'codecall-bench-search-collector', version: '1.0.0' }, { capabilities: {} })
  client.onerror = () => {} // non-JSON lines on stdout etc.: ignored, as a host would

  const timeoutMs = server.timeoutMs ?? opts.timeoutMs
  let timer
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs)
  })
  const warnings = []
  const work = (async () => {
    await client.connect(transport)
    const serverInfo = client.getServerVersion()
    const instructions = client.getInstructions()
    const tools = []
    let cursor
    for (let page = 0; ; page++) {
      if (page > 1000) throw new Error('too many tools/list pages')
      // ResultSchema passes `tools` through untouched, so descriptions and
      // schemas are kept exactly as the server sent them.
      const result = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ResultSchema)
      if (!Array.isArray(result.tools)) throw new Error('tools/list result has no tools array')
      const check = ListToolsResultSchema.safeParse(result)
      if (!check.success) warnings.push(`tools/list page ${page} does not match the spec schema: ${check.error.message.slice(0, 300)}`)
      tools.push(...result.tools)
      cursor = result.nextCursor
      if (!cursor) break
    }
    return { serverInfo, instructions, tools }
  })()

  let outcome
  try {
    outcome = await Promise.race([work, deadline])
  } catch (err) {
    outcome = { error: err instanceof Error ? err.message : String(err) }
  } finally {
    clearTimeout(timer)
    work.catch(() => {})
    const root = transport.rootPid
    const tree = root ? [root, ...descendants(root)] : []
    await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))])
    killAll(tree.filter(alive))
    for (let i = 0; i < 50 && tree.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
    const left = tree.filter(alive)
    if (left.length) warnings.push(`processes still alive after kill: ${left.join(',')}`)
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  if (outcome.error) outcome.stderrTail = stderrTail
  outcome.warnings = warnings
  return outcome
}

// ---------------------------------------------------------------- corpus
// Kept per tool: what a tool search indexes. `description`, `inputSchema` and
// the rest are copied exactly as the server sent them; `outputSchema`,
// `execution`, `icons` and `_meta` are left out (they are not searched and
// would only make the file bigger).
const KEPT_FIELDS = ['name', 'title', 'description', 'inputSchema', 'annotations']

// Kept per server: how it describes itself in its `initialize` result — `serverInfo` (`name`,
// `version`, and `title`, `description`, `websiteUrl` where it sends them) and `instructions`,
// exactly as sent. Stored on the server's entry in `servers`, so readers of `tools` see no change.
const SERVER_INFO_FIELDS = ['name', 'title', 'version', 'description', 'websiteUrl']

function serverAbout(serverInfo, instructions) {
  const about = {}
  if (serverInfo && typeof serverInfo === 'object') {
    const info = {}
    for (const k of SERVER_INFO_FIELDS) if (serverInfo[k] !== undefined) info[k] = serverInfo[k]
    about.serverInfo = info
  }
  if (typeof instructions === 'string') about.instructions = instructions
  return about
}

function corpusTool(appId, tool) {
  const out = { appId }
  for (const k of KEPT_FIELDS) if (tool[k] !== undefined) out[k] = tool[k]
  return out
}

// ---------------------------------------------------------------- main
async function main() {
  const opts = parseArgs(process.argv.slice(2))
  const servers = readJson(serversFile)
  const seen = new Set()
  for (const s of servers) {
    if (!s.appId || !s.package || !s.version) throw new Error(`servers.json entry missing appId/package/version: ${JSON.stringify(s)}`)
    if (seen.has(s.appId)) throw new Error(`duplicate appId ${s.appId}`)
    seen.add(s.appId)
  }
  if (opts.only) {
    for (const id of opts.only) if (!seen.has(id)) throw new Error(`--only: unknown appId ${id}`)
  }
  const selected = servers.filter((s) => !opts.only || opts.only.has(s.appId))

  const netns = opts.isolateNetwork ? probeUnshare() : null
  if (opts.isolateNetwork && !netns) log('note: `unshare --net` is not available; servers run with the normal network')

  fs.mkdirSync(installRoot, { recursive: true })
  const results = new Map()
  for (const server of selected) {
    log(`• ${server.appId} (${server.package}@${server.version})`)
    try {
      if (opts.install) install(server)
      else if (installedVersion(server) !== server.version) throw new Error('not installed (run without --no-install)')
      const t0 = Date.now()
      const r = await collect(server, opts, netns)
      for (const w of r.warnings) log(`  warning: ${w}`)
      if (r.error) {
        log(`  FAILED: ${r.error}`)
        if (r.stderrTail) log(r.stderrTail.trim().split('\n').slice(-8).map((l) => `    | ${l.slice(0, 300)}`).join('\n'))
        results.set(server.appId, { error: r.error })
      } else {
        log(`  ${r.tools.length} tools in ${Date.now() - t0} ms (${r.serverInfo?.name ?? '?'} ${r.serverInfo?.version ?? ''})`)
        results.set(server.appId, { tools: r.tools, about: serverAbout(r.serverInfo, r.instructions) })
      }
    } catch (err) {
      log(`  FAILED: ${err instanceof Error ? err.message : err}`)
      results.set(server.appId, { error: String(err) })
    }
  }

  // Merge with the previous corpus so that --only keeps the other servers.
  let previous = { servers: [], tools: [] }
  if (fs.existsSync(corpusFile)) previous = readJson(corpusFile)
  const corpusServers = []
  const corpusTools = []
  for (const server of servers) {
    const r = results.get(server.appId)
    let tools
    let about
    if (r?.tools) {
      tools = r.tools
      about = r.about
    } else {
      const prev = previous.servers.find((s) => s.appId === server.appId)
      if (!prev || prev.package !== server.package || prev.version !== server.version) continue
      tools = previous.tools.filter((t) => t.appId === server.appId).map(({ appId, ...t }) => t)
      about = serverAbout(prev.serverInfo, prev.instructions)
      if (r?.error) log(`note: ${server.appId} failed now; keeping its ${tools.length} tools from the previous corpus`)
    }
    corpusServers.push({ appId: server.appId, package: server.package, version: server.version, toolCount: tools.length, ...about })
    for (const t of tools) corpusTools.push(corpusTool(server.appId, t))
  }
  const corpus = {
    collectedAt: new Date().toISOString(),
    sdkVersion: sdkVersion(),
    servers: corpusServers,
    tools: corpusTools,
  }

  const failed = [...results].filter(([, r]) => r.error)
  log('')
  log(`servers in corpus: ${corpusServers.length}/${servers.length}, tools: ${corpusTools.length}`)
  if (failed.length) log(`failed this run: ${failed.map(([id, r]) => `${id} (${r.error.split('\n')[0]})`).join('; ')}`)
  const keys = new Set()
  for (const t of corpusTools) {
    const k = `${t.appId}:${t.name}`
    if (keys.has(k)) log(`warning: duplicate key ${k}`)
    keys.add(k)
  }
  if (!opts.dryRun) {
    fs.writeFileSync(corpusFile, JSON.stringify(corpus, null, 2) + '\n')
    log(`wrote ${path.relative(process.cwd(), corpusFile)}`)
  }
  process.exitCode = failed.length ? 1 : 0
}

main().catch((err) => {
  console.error(err)
  process.exit(2)
})
