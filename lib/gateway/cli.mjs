#!/usr/bin/env node
// `codecall`: code mode in front of the MCP servers you already run (api.md §6).
//
//   codecall serve  [--config f] [--http <port>] [--host h] [--token t] [--audit file|-]
//   codecall exec   (--code s | --file f) [--input json | --input-file f] [...]
//   codecall search <query> [--config f] [--top-k n] [--json]
//   codecall scripts list|show <name>|remove <name> [--config f]
//
// Exit codes: 0 success; 1 the script failed (exec) or no such saved script (scripts); 2 bad
// arguments or configuration, with one line on stderr. Standard output carries only the MCP protocol (serve) or the JSON result (exec).
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig, parseConfig } from './config.mjs'
import { createRequire } from 'node:module'
import { describeError } from './errors.mjs'

const HELP = {
  main: `codecall — code mode in front of the MCP servers you already run

Usage:
  codecall serve  [--config codecall.json] [--http <port>] [--host 127.0.0.1] [--token t] [--audit file|-]
  codecall exec   (--code <js> | --file <path>) [--input <json> | --input-file <path>] [options]
  codecall search <query> [--config codecall.json] [--top-k 8] [--json]
  codecall scripts list [--config codecall.json] [--json]
  codecall scripts show <name> [--version n] [--config codecall.json] [--json]
  codecall scripts remove <name> [--config codecall.json]
  codecall --version

The config is the "mcpServers" JSON your MCP client already uses, plus an optional "codecall"
section (mode, topK, vm, allowedServers, directCalls, callTimeoutMs, audit, scripts, ...).
Run "codecall <command> --help" for a command's options.`,
  serve: `codecall serve — an MCP server that lists the meta-tools (codecall_search, codecall_describe,
codecall_execute; codecall_invoke with directCalls, codecall_save with scripts) in front of every
server of the config.

Options:
  --config <file>    the mcpServers JSON (default ./codecall.json)
  --http <port>      serve Streamable HTTP at http://<host>:<port>/mcp instead of stdio (0: any free port)
  --host <host>      HTTP bind address (default 127.0.0.1); a non-loopback host needs a token
  --token <token>    require "Authorization: Bearer <token>" on every HTTP request
                     (default: the CODECALL_TOKEN environment variable)
  --audit <file|->   append one JSON line per execute/invoke (code SHA-256, never code or data);
                     "-" writes them to stderr
  --quiet            only warnings on stderr
  -h, --help         this text`,
  exec: `codecall exec — run one script against the configured servers, without an MCP client.
Prints {"ok":true,"value":...} or {"ok":false,"error":{"code","message","stack"?}} on stdout.
Exit code 0 on success, 1 when the script failed, 2 for bad arguments or configuration.

Options:
  --code <js>              the script (JavaScript, or TypeScript with --language typescript)
  --file <path>            read the script from a file
  --input <json>           the global \`input\` (default {})
  --input-file <path>      read \`input\` from a JSON file
  --language <lang>        javascript (default) or typescript
  --timeout <ms>           execution timeout, 1 to 600000 (default: the vm preset's)
  --max-tool-calls <n>     tool calls allowed, 0 = no limit (default: the vm preset's)
  --allowed-servers <a,b>  servers the script may call (default: the config's allowedServers, or all)
  --config <file>          the mcpServers JSON (default ./codecall.json if it exists)
  --verbose                upstream start-up and stderr lines on stderr
  -h, --help               this text

In the script: callTool('<server>:<tool>', args), call_tool(server, tool, args) (never throws:
{ ok, result } or { ok, error }), mcp.listServers(), mcp.listTools(server?), mcp.callTool(server,
tool, args), mcp.listResources(server?), mcp.readResource(server, uri), mcp.listResourceTemplates(),
mcp.listPrompts(server?), mcp.getPrompt(server, name, args). All of them return promises: await them.

Calls the config's codecall.approval says a person must approve are asked on this terminal when
stdin is one (y / n / a = always for that tool in this run); otherwise approval.whenUnavailable
decides (default: deny, ACCESS_DENIED).`,
  search: `codecall search — the tools a model would find for a query, best first.

Options:
  --config <file>    the mcpServers JSON (default ./codecall.json if it exists)
  --top-k <n>        how many tools (default: the config's topK, else 8)
  --json             print the search result as JSON
  --verbose          upstream start-up and stderr lines on stderr
  -h, --help         this text`,
  scripts: `codecall scripts — see and prune the scripts models saved (codecall_save) in the store
of the config's codecall.scripts. Starts no MCP server.

Usage:
  codecall scripts list [--config codecall.json] [--json]
      the latest version of each saved script: saved:<name>  v<version>  <created>  <description>
  codecall scripts show <name> [--version n] [--config codecall.json] [--json]
      one saved script (the latest version unless --version): its metadata, then its code
  codecall scripts remove <name> [--config codecall.json]
      every version of one saved script

<name> is the script's name, with or without "saved:".
Exit code 0 on success, 1 when there is no such script, 2 for bad arguments or configuration
(a config without codecall.scripts included).`,
  'scripts list': `codecall scripts list — the latest version of each saved script, by name:
  saved:<name>  v<version>  <created>  <first line of the description>

Options:
  --config <file>    the config whose codecall.scripts.store is read (default ./codecall.json)
  --json             print the scripts (every field, the code included) as a JSON array
  -h, --help         this text`,
  'scripts show': `codecall scripts show <name> — one saved script: its metadata, a blank line, then its code.
Exit code 1 when there is no such script (or version).

Options:
  --version <n>      that version (default: the latest)
  --config <file>    the config whose codecall.scripts.store is read (default ./codecall.json)
  --json             print the saved script as JSON
  -h, --help         this text`,
  'scripts remove': `codecall scripts remove <name> — deletes every version of one saved script; models
no longer find or run it. Exit code 1 when there is no such script.

Options:
  --config <file>    the config whose codecall.scripts.store is read (default ./codecall.json)
  -h, --help         this text`,
}

class UsageError extends Error {}

/** `--name value`, `--name=value`, boolean flags; the rest are positionals. */
function parseArgs(argv, spec) {
  const flags = {}
  const positionals = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '-h') {
      flags.help = true
      continue
    }
    if (!arg.startsWith('--') || arg === '--') {
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq < 0 ? undefined : eq)
    const kind = spec[name]
    if (!kind) throw new UsageError(`unknown option --${name} (see --help)`)
    if (kind === 'boolean') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`)
      flags[name] = true
      continue
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i]
    if (value === undefined) throw new UsageError(`--${name} needs a value`)
    if (flags[name] !== undefined) throw new UsageError(`--${name} given twice`)
    flags[name] = value
  }
  return { flags, positionals }
}

function wholeNumber(value, name, min, max) {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max} (got '${value}')`)
  }
  return Number(value)
}

function readText(path, what) {
  try {
    return readFileSync(path, 'utf8')
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`)
  }
}

/** The config of --config, else ./codecall.json when it exists (required for serve). */
function configFrom(flags, required) {
  if (flags.config !== undefined) return loadConfig(flags.config)
  if (existsSync(DEFAULT_CONFIG_PATH) || required) return loadConfig(DEFAULT_CONFIG_PATH)
  return parseConfig({ mcpServers: {} })
}

/**
 * A Gateway, or a UsageError: the engine checks what the config parser leaves to it at
 * construction (vm limits; a scripts store it cannot open, named by its path). Nothing has
 * started yet when it throws.
 * @param {typeof import('./gateway.mjs').Gateway} Gateway
 * @param {ConstructorParameters<typeof import('./gateway.mjs').Gateway>} args
 */
function openGateway(Gateway, ...args) {
  try {
    return new Gateway(...args)
  } catch (e) {
    throw new UsageError(`config: ${e?.message ?? e}`)
  }
}

/** stderr lines; `quiet` keeps warnings only (start-up chatter and upstream stderr dropped). */
function logger(quiet) {
  return (line, level = 'warn') => {
    if (quiet && level !== 'warn') return
    process.stderr.write(`codecall: ${line}\n`)
  }
}

let shuttingDown = null
/** Ends the process once: everything closed, no upstream process left; forced after 10 s. */
function shutdown(code, closers) {
  if (shuttingDown) return shuttingDown
  const force = setTimeout(() => process.exit(code), 10_000)
  force.unref()
  shuttingDown = (async () => {
    for (const close of closers) await close().catch(() => {})
    // §10: what the application's OpenTelemetry SDK still holds goes out before the exit.
    await import('../common/otel.mjs').then((m) => m.flushTelemetry()).catch(() => {})
    process.exit(code)
  })()
  return shuttingDown
}

/**
 * SIGINT / SIGTERM / SIGHUP close everything, then exit with `code(signal)` (serve: 0, a clean
 * stop; exec: 128 + the signal number, unless the result was already written). A second signal
 * exits at once.
 * @param {(() => Promise<unknown>)[]} closers
 * @param {(signal: string) => number} [code]
 */
function onSignals(closers, code = () => 0) {
  let signalled = 0
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      signalled += 1
      if (signalled > 1) process.exit(130)
      shutdown(code(signal), closers)
    })
  }
}

const SIGNAL_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 }

async function serve(argv) {
  const { flags, positionals } = parseArgs(argv, { config: 'string', http: 'string', host: 'string', token: 'string', audit: 'string', help: 'boolean', quiet: 'boolean' })
  if (flags.help) return void process.stdout.write(`${HELP.serve}\n`)
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (see --help)`)
  const config = configFrom(flags, true)
  const { Gateway } = await import('./gateway.mjs')
  const { Sessions, isLoopback, serveHttp, serveStdio } = await import('./server.mjs')
  const token = flags.token ?? process.env.CODECALL_TOKEN ?? null
  const host = flags.host ?? '127.0.0.1'
  if (flags.http === undefined && (flags.host !== undefined || flags.token !== undefined)) {
    throw new UsageError('--host and --token are for --http')
  }
  const port = flags.http === undefined ? null : wholeNumber(flags.http, 'http', 0, 65535)
  if (port !== null && !isLoopback(host) && !token) {
    throw new UsageError(`refusing to serve on non-loopback host ${host} without a token: pass --token or set CODECALL_TOKEN`)
  }
  const log = logger(Boolean(flags.quiet))
  let sessions = null
  const gateway = openGateway(Gateway, config, {
    log,
    audit: flags.audit,
    onToolsChanged: () => sessions?.toolsChanged(),
    onUpstreamLog: (server, params) => sessions?.log(server, params),
  })
  sessions = new Sessions(gateway)
  const closers = [() => sessions.close(), () => gateway.close()]
  onSignals(closers)
  // §12: nothing starts until a client's first request needs the tools (a client's probe process,
  // `server/discover` or `initialize` start no upstream and open no store).
  gateway.onStarted = () => {
    const up = [...gateway.upstreams.values()].filter((u) => u.status === 'connected').length
    const tools = [...gateway.upstreams.values()].reduce((n, u) => n + u.tools.size, 0)
    log(`${up} of ${gateway.upstreams.size} MCP servers connected; ${tools} tools indexed`, 'info')
  }
  if (port === null) {
    const close = await serveStdio(gateway, sessions, () => shutdown(0, closers))
    closers.unshift(close)
    return
  }
  let http
  try {
    http = await serveHttp(gateway, sessions, { port, host, token, log })
  } catch (e) {
    // Nothing may outlive a failed start: the upstreams are already starting.
    await gateway.close().catch(() => {})
    throw new UsageError(`cannot serve on ${host}:${port}: ${e?.code === 'EADDRINUSE' ? 'the port is in use' : describeError(e)}`)
  }
  closers.unshift(() => http.close())
  log(`listening on ${http.url}${token ? ' (bearer token required)' : ''}`, 'warn')
}

/** An ExecuteResult as seed 004's `{ ok, value } | { ok, error }`. */
function execOutput(result) {
  if (result.status === 'ok') return { ok: true, value: result.result === undefined ? null : result.result }
  const e = result.error ?? {}
  const error = { code: e.code ?? 'EXECUTION_ERROR', message: e.message ?? result.status }
  if (e.stack) error.stack = e.stack
  if (e.location) error.location = e.location
  if (e.toolName) error.toolName = e.toolName
  return { ok: false, error }
}

async function exec(argv) {
  const { flags, positionals } = parseArgs(argv, {
    code: 'string', file: 'string', input: 'string', 'input-file': 'string', language: 'string', timeout: 'string',
    'max-tool-calls': 'string', 'allowed-servers': 'string', config: 'string', help: 'boolean', verbose: 'boolean',
  })
  if (flags.help) return void process.stdout.write(`${HELP.exec}\n`)
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (see --help)`)
  if ((flags.code === undefined) === (flags.file === undefined)) throw new UsageError('give the script with --code or --file (one of them)')
  if (flags.input !== undefined && flags['input-file'] !== undefined) throw new UsageError('give --input or --input-file, not both')
  const script = flags.code ?? readText(flags.file, 'script')
  let input = {}
  const inputText = flags.input ?? (flags['input-file'] !== undefined ? readText(flags['input-file'], 'input file') : undefined)
  if (inputText !== undefined) {
    try {
      input = JSON.parse(inputText)
    } catch (e) {
      throw new UsageError(`--input${flags.input === undefined ? '-file' : ''} is not valid JSON: ${e.message}`)
    }
  }
  const language = flags.language ?? 'javascript'
  if (language !== 'javascript' && language !== 'typescript') throw new UsageError(`--language must be javascript or typescript (got '${language}')`)
  const config = configFrom(flags, false)
  const vm = { ...config.codecall.vm }
  if (flags.timeout !== undefined) vm.timeoutMs = wholeNumber(flags.timeout, 'timeout', 1, 600_000)
  if (flags['max-tool-calls'] !== undefined) {
    const n = wholeNumber(flags['max-tool-calls'], 'max-tool-calls', 0, 1_000_000)
    vm.maxToolCalls = n === 0 ? 1_000_000 : n
  }
  let allowedServers = null
  if (flags['allowed-servers'] !== undefined) {
    allowedServers = flags['allowed-servers'].split(',').map((s) => s.trim()).filter(Boolean)
    if (allowedServers.length === 0) throw new UsageError('--allowed-servers needs at least one server name (leave it out to allow all)')
    const names = config.servers.map((s) => s.name)
    for (const s of allowedServers) if (!names.includes(s)) throw new UsageError(`--allowed-servers: '${s}' is not a server of the config (${names.join(', ') || 'none'})`)
  }
  const { Gateway, RequestScope } = await import('./gateway.mjs')
  const gateway = openGateway(Gateway, { ...config, codecall: { ...config.codecall, vm } }, { log: logger(!flags.verbose) })
  const closers = [() => gateway.close()]
  let output
  let code
  onSignals(closers, (signal) => code ?? SIGNAL_CODES[signal] ?? 130)
  try {
    // §9: a person at a terminal is asked there (stderr; stdout is the JSON result); else the
    // policy's whenUnavailable decides.
    const scope = new RequestScope(process.stdin.isTTY ? { approve: askOnTerminal } : {})
    const result = await gateway.handle(gateway.metaByKind.execute, { script, language, input }, scope, { allowedServers })
    output = execOutput(result)
    code = output.ok ? 0 : 1
  } catch (e) {
    output = { ok: false, error: { code: e?.code ?? 'ERR_INVALID_ARG', message: e?.message ?? String(e) } }
    code = 2
  }
  process.stdout.write(`${JSON.stringify(output)}\n`)
  await shutdown(code, closers)
}

/**
 * `codecall exec`'s approval prompt (§9): y / n / a (always, for this tool in this run).
 * @param {{ toolName: string, input: unknown, reason: string }} request
 * @returns {Promise<'approve' | 'approve_always' | 'decline'>}
 */
async function askOnTerminal(request) {
  const { shownInput } = await import('../common/mcp.mjs')
  const { createInterface } = await import('node:readline/promises')
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true })
  try {
    process.stderr.write(`\ncodecall: the script wants to call '${request.toolName}' (${request.reason}). Input:\n${shownInput(request.input)}\n`)
    for (;;) {
      const answer = (await rl.question('Allow it? [y]es / [n]o / [a]lways for this tool: ')).trim().toLowerCase()
      if (answer === 'y' || answer === 'yes') return 'approve'
      if (answer === 'a' || answer === 'always') return 'approve_always'
      if (answer === 'n' || answer === 'no' || answer === '') return 'decline'
    }
  } finally {
    rl.close()
    process.stdin.unref?.()
  }
}

async function search(argv) {
  const { flags, positionals } = parseArgs(argv, { config: 'string', 'top-k': 'string', json: 'boolean', help: 'boolean', verbose: 'boolean' })
  if (flags.help) return void process.stdout.write(`${HELP.search}\n`)
  if (positionals.length === 0) throw new UsageError('give a query: codecall search "<what the tool does>"')
  const query = positionals.join(' ')
  const config = configFrom(flags, false)
  const topK = flags['top-k'] !== undefined ? wholeNumber(flags['top-k'], 'top-k', 1, 1000) : config.codecall.topK ?? 8
  const { Gateway } = await import('./gateway.mjs')
  const gateway = openGateway(Gateway, config, { log: logger(!flags.verbose), audit: null })
  const closers = [() => gateway.close()]
  onSignals(closers)
  const result = await gateway.search(query, topK)
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } else {
    const width = Math.max(4, ...result.tools.map((t) => t.name.length))
    for (const t of result.tools) {
      const description = String(t.description ?? '').split('\n')[0].slice(0, 100)
      process.stdout.write(`${t.score.toFixed(4)}  ${t.name.padEnd(width)}  ${description}\n`)
    }
    const failed = [...gateway.upstreams.values()].filter((u) => u.status !== 'connected')
    process.stdout.write(`${result.tools.length} of ${result.totalIndexed} tools${failed.length ? ` (not connected: ${failed.map((u) => u.name).join(', ')})` : ''}\n`)
  }
  await shutdown(0, closers)
}

/** A command's answer that is not a success: one line on stderr, exit code 1 (`scripts`). */
class NotFound extends Error {}

/** A saved script's name as a person types it: `report` or `saved:report`. */
function scriptName(positionals, command) {
  if (positionals.length === 0) throw new UsageError(`give a script name: codecall scripts ${command} <name>`)
  if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}' (see codecall scripts ${command} --help)`)
  const name = positionals[0].startsWith('saved:') ? positionals[0].slice('saved:'.length) : positionals[0]
  if (name === '') throw new UsageError('the script name is empty')
  return name
}

/** `saved:<name>`, whether the store gives the name bare or as the tool's. */
function toolName(name) {
  return String(name).startsWith('saved:') ? String(name) : `saved:${name}`
}

/** The first line of a description, for one-line listings. */
function firstLine(text) {
  return String(text ?? '').split('\n')[0]
}

/** `codecall scripts show`'s text: metadata lines, a blank line, the code. */
function showText(s) {
  const lines = [`${toolName(s.name)}  v${s.version}`]
  const field = (label, value) => lines.push(`${`${label}:`.padEnd(13)}${value}`)
  const [first, ...more] = String(s.description ?? '').split('\n')
  field('description', first)
  for (const line of more) lines.push(`${' '.repeat(13)}${line}`)
  field('language', s.language ?? 'javascript')
  if (Array.isArray(s.tags) && s.tags.length) field('tags', s.tags.join(', '))
  field('created', s.createdAt)
  field('sha256', s.codeSha256)
  if (s.inputSchema !== undefined && s.inputSchema !== null) field('input', JSON.stringify(s.inputSchema))
  return `${lines.join('\n')}\n\n${String(s.script ?? '').replace(/\n?$/, '\n')}`
}

/**
 * `codecall scripts list|show|remove`: a person's view of the store models save to (§11). It
 * needs no upstream — an engine with just the config's store answers — and it never creates a
 * store that is not there (a typo in a path must not leave an empty database behind).
 */
async function scripts(argv) {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    return void process.stdout.write(`${HELP.scripts}\n`)
  }
  const specs = {
    list: { config: 'string', json: 'boolean', help: 'boolean' },
    show: { config: 'string', version: 'string', json: 'boolean', help: 'boolean' },
    remove: { config: 'string', help: 'boolean' },
  }
  if (!Object.hasOwn(specs, command)) throw new UsageError(`unknown command 'scripts ${command}' (commands: list, show, remove; see codecall scripts --help)`)
  const { flags, positionals } = parseArgs(rest, specs[command])
  if (flags.help) return void process.stdout.write(`${HELP[`scripts ${command}`]}\n`)
  if (command === 'list' && positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (see codecall scripts list --help)`)
  const name = command === 'list' ? null : scriptName(positionals, command)
  const version = flags.version === undefined ? undefined : wholeNumber(flags.version, 'version', 1, 2 ** 31 - 1)
  const config = configFrom(flags, true)
  const options = config.codecall.scripts
  if (!options) throw new UsageError(`${flags.config ?? DEFAULT_CONFIG_PATH} has no codecall.scripts: add "codecall": { "scripts": { "store": "./codecall-scripts.db" } }`)
  const store = options.store
  if (store !== ':memory:' && !existsSync(store)) {
    let folder = false
    try {
      folder = statSync(dirname(store)).isDirectory()
    } catch {
      // missing: the config names a folder that is not there
    }
    if (!folder) throw new UsageError(`config: codecall.scripts.store: the folder of ${store} does not exist`)
    // No store yet: nothing was ever saved there.
    if (command === 'list') {
      if (flags.json) process.stdout.write('[]\n')
      else process.stderr.write(`codecall: no saved scripts (${store} does not exist yet)\n`)
      return
    }
    throw new NotFound(`no saved script '${name}' (${store} does not exist yet)`)
  }
  const { CodeCall } = createRequire(import.meta.url)('../../index.js')
  let codecall
  try {
    codecall = new CodeCall({ scripts: options })
  } catch (e) {
    throw new UsageError(`config: codecall.scripts: ${e?.message ?? e}`)
  }
  try {
    if (command === 'list') {
      const list = await codecall.scripts.list()
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`)
      } else if (list.length === 0) {
        process.stderr.write(`codecall: no saved scripts in ${store}\n`)
      } else {
        const width = Math.max(...list.map((s) => toolName(s.name).length))
        const vWidth = Math.max(...list.map((s) => String(s.version).length)) + 1
        for (const s of list) {
          process.stdout.write(`${toolName(s.name).padEnd(width)}  ${`v${s.version}`.padEnd(vWidth)}  ${s.createdAt}  ${firstLine(s.description)}\n`)
        }
      }
    } else if (command === 'show') {
      const saved = await codecall.scripts.get(name, version)
      if (!saved) throw new NotFound(`no saved script '${name}'${version === undefined ? '' : ` with version ${version}`}`)
      process.stdout.write(flags.json ? `${JSON.stringify(saved, null, 2)}\n` : showText(saved))
    } else {
      if (!(await codecall.scripts.remove(name))) throw new NotFound(`no saved script '${name}'`)
      process.stdout.write(`removed saved:${name} (every version)\n`)
    }
  } catch (e) {
    if (e instanceof NotFound) throw e
    // The engine refuses a malformed name (ERR_INVALID_ARG): a bad argument, exit 2.
    throw new UsageError(e?.code === 'ERR_INVALID_ARG' ? e.message : `the store ${store}: ${describeError(e)}`)
  } finally {
    await codecall.dispose().catch(() => {})
  }
}

async function main(argv) {
  const [command, ...rest] = argv
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${createRequire(import.meta.url)('../../package.json').version}\n`)
    return
  }
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' && rest[0] && HELP[rest[0]] ? rest[0] : 'main'
    process.stdout.write(`${HELP[topic]}\n`)
    return
  }
  if (command === 'serve') return serve(rest)
  if (command === 'exec') return exec(rest)
  if (command === 'search') return search(rest)
  if (command === 'scripts') return scripts(rest)
  throw new UsageError(`unknown command '${command}' (commands: serve, exec, search, scripts; see --help)`)
}

main(process.argv.slice(2)).catch((e) => {
  if (e instanceof NotFound) {
    process.stderr.write(`codecall: ${e.message}\n`)
    process.exit(1)
  }
  if (e instanceof UsageError || e instanceof ConfigError) {
    process.stderr.write(`codecall: ${e.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`codecall: ${describeError(e)}\n${e?.stack ?? ''}\n`)
  process.exit(2)
})
