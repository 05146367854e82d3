// The gateway's configuration: the `mcpServers` JSON that MCP clients already use (Claude Desktop,
// Cursor, VS Code), plus a `codecall` section (api.md §6). Everything is checked here, once, before
// anything starts: a wrong type, an unknown key or a missing `${VAR}` is a `ConfigError` whose one
// line names the key path — a typo must never silently drop a filter or a limit.
//
// This module reads files and the environment only; it starts nothing.
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

export const DEFAULT_CONFIG_PATH = './codecall.json'
export const DEFAULT_CALL_TIMEOUT_MS = 60_000
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000

/** A configuration problem: `path` is the key path (`mcpServers.github.args[1]`). Exit code 2. */
export class ConfigError extends Error {
  /** @param {string} message @param {string} [path] */
  constructor(message, path) {
    super(path ? `${path}: ${message}` : message)
    this.name = 'ConfigError'
    this.code = 'CONFIG_INVALID'
    this.path = path
  }
}

const SERVER_NAME = /^[A-Za-z0-9_.-]{1,64}$/
const MODES = ['codecall_only', 'codecall_opt_in', 'metadata_driven']
const VM_KEYS = [
  'preset', 'timeoutMs', 'memoryLimitBytes', 'maxStackBytes', 'allowLoops', 'maxIterations', 'maxToolCalls',
  'maxConcurrentCalls', 'allowConsole', 'maxConsoleBytes', 'maxResultBytes', 'maxScriptBytes', 'disabledBuiltins',
  'disabledGlobals', 'isolation', 'poolSize', 'maxQueue', 'queueTimeoutMs',
]
/** `type` values MCP clients write beside `command` / `url`. */
const STDIO_TYPES = ['stdio']
const HTTP_TYPES = ['http', 'streamable-http', 'streamableHttp', 'sse']

const kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`)
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k)

function expect(ok, what, value, path) {
  if (!ok) throw new ConfigError(`must be ${what} (got ${kind(value)})`, path)
}

function checkKeys(obj, allowed, path) {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) {
      const near = allowed.find((a) => a.toLowerCase() === key.toLowerCase())
      throw new ConfigError(
        `unknown key${near ? ` (did you mean '${near}'?)` : ''}; allowed: ${allowed.join(', ')}`,
        path ? `${path}.${key}` : key,
      )
    }
  }
}

/**
 * Replaces `${VAR}` (and `${VAR:-default}`) in every string of `value` with the environment's
 * value. A missing variable without a default is a `ConfigError` naming it and the key path.
 */
export function expandEnv(value, env, path) {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name, fallback) => {
      const v = env[name]
      if (v !== undefined && v !== '') return v
      if (fallback !== undefined) return fallback
      throw new ConfigError(`environment variable \${${name}} is not set`, path)
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, `${path}[${i}]`))
  if (isObject(value)) {
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      // defineProperty: a key such as `__proto__` stays a key, never a prototype.
      Object.defineProperty(out, k, { value: expandEnv(v, env, path ? `${path}.${k}` : k), enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  return value
}

function stringList(v, path) {
  expect(Array.isArray(v), 'an array of strings', v, path)
  v.forEach((s, i) => expect(typeof s === 'string', 'a string', s, `${path}[${i}]`))
  return [...v]
}

function stringMap(v, path) {
  expect(isObject(v), 'an object of strings', v, path)
  for (const [k, s] of Object.entries(v)) expect(typeof s === 'string', 'a string', s, `${path}.${k}`)
  return { ...v }
}

/** Whole milliseconds and counts: at most 2^31 - 1, the longest delay a timer can hold. */
function positiveInt(v, path, max = 2 ** 31 - 1) {
  if (!(Number.isInteger(v) && v >= 1 && v <= max)) {
    throw new ConfigError(`must be a whole number from 1 to ${max} (got ${JSON.stringify(v)})`, path)
  }
  return v
}

function nonEmpty(v, path) {
  expect(typeof v === 'string', 'a string', v, path)
  if (v.length === 0) throw new ConfigError('must not be empty', path)
  return v
}

/** Checks one `mcpServers` entry; returns its normalized form. */
function checkServer(name, raw, baseDir, path) {
  expect(isObject(raw), 'an object', raw, path)
  checkKeys(
    raw,
    ['type', 'command', 'args', 'env', 'cwd', 'url', 'headers', 'include', 'exclude', 'disabled', 'callTimeoutMs'],
    path,
  )
  const hasCommand = own(raw, 'command')
  const hasUrl = own(raw, 'url')
  if (hasCommand === hasUrl) {
    throw new ConfigError(hasCommand ? "has both 'command' and 'url': give one" : "needs 'command' (stdio) or 'url' (HTTP)", path)
  }
  /** @type {any} */
  const server = { name, include: null, exclude: [], disabled: false, callTimeoutMs: null }
  if (own(raw, 'type')) {
    const types = hasCommand ? STDIO_TYPES : HTTP_TYPES
    if (!types.includes(raw.type)) {
      throw new ConfigError(`must be ${types.map((t) => `'${t}'`).join(' or ')} for a server with '${hasCommand ? 'command' : 'url'}' (got ${JSON.stringify(raw.type)})`, `${path}.type`)
    }
  }
  if (hasCommand) {
    for (const k of ['url', 'headers']) if (own(raw, k)) throw new ConfigError(`'${k}' is for HTTP servers; this one has 'command'`, `${path}.${k}`)
    server.transport = 'stdio'
    server.command = nonEmpty(raw.command, `${path}.command`)
    server.args = own(raw, 'args') ? stringList(raw.args, `${path}.args`) : []
    server.env = own(raw, 'env') ? stringMap(raw.env, `${path}.env`) : {}
    server.cwd = own(raw, 'cwd') ? resolve(baseDir, nonEmpty(raw.cwd, `${path}.cwd`)) : undefined
  } else {
    for (const k of ['args', 'env', 'cwd']) if (own(raw, k)) throw new ConfigError(`'${k}' is for stdio servers; this one has 'url'`, `${path}.${k}`)
    nonEmpty(raw.url, `${path}.url`)
    let url
    try {
      url = new URL(raw.url)
    } catch {
      throw new ConfigError(`is not a URL (${JSON.stringify(raw.url)})`, `${path}.url`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(`must be an http:// or https:// URL (got ${url.protocol})`, `${path}.url`)
    }
    server.transport = raw.type === 'sse' ? 'sse' : 'http'
    server.url = url.href
    server.headers = own(raw, 'headers') ? stringMap(raw.headers, `${path}.headers`) : {}
  }
  if (own(raw, 'include')) server.include = stringList(raw.include, `${path}.include`)
  if (own(raw, 'exclude')) server.exclude = stringList(raw.exclude, `${path}.exclude`)
  if (own(raw, 'disabled')) {
    expect(typeof raw.disabled === 'boolean', 'a boolean', raw.disabled, `${path}.disabled`)
    server.disabled = raw.disabled
  }
  if (own(raw, 'callTimeoutMs')) server.callTimeoutMs = positiveInt(raw.callTimeoutMs, `${path}.callTimeoutMs`)
  return server
}

/**
 * `codecall.scripts` (api.md §11): where saved scripts live. A relative `store` is relative to the
 * config file's folder, like `audit`; `':memory:'` stays as it is (gone when the gateway stops).
 * Whether the store's folder exists is the engine's to say (at start, naming the path).
 */
function checkScripts(raw, baseDir, path) {
  expect(isObject(raw), 'an object', raw, path)
  checkKeys(raw, ['store', 'historySize', 'maxDepth'], path)
  if (!own(raw, 'store')) throw new ConfigError("needs 'store': a SQLite file (relative to this config) or ':memory:'", path)
  const store = nonEmpty(raw.store, `${path}.store`)
  /** @type {{ store: string, historySize?: number, maxDepth?: number }} */
  const out = { store: store === ':memory:' ? store : resolve(baseDir, store) }
  // Optional means optional: null stands for the engine's default, as a missing key does.
  // The engine's ranges: 0 remembers no execution (saves by executionId are then refused).
  if (raw.historySize !== undefined && raw.historySize !== null) {
    const n = raw.historySize
    if (!(Number.isInteger(n) && n >= 0 && n <= 10_000)) throw new ConfigError(`must be a whole number from 0 to 10000 (got ${JSON.stringify(n)})`, `${path}.historySize`)
    out.historySize = n
  }
  if (raw.maxDepth !== undefined && raw.maxDepth !== null) out.maxDepth = positiveInt(raw.maxDepth, `${path}.maxDepth`, 64)
  return out
}

/** `codecall.approval` (api.md §9), checked here so that a mistake names its key path. */
function checkApproval(raw, path) {
  expect(isObject(raw), 'an object', raw, path)
  checkKeys(raw, ['require', 'ask', 'allow', 'deny', 'timeoutMs', 'whenUnavailable'], path)
  /** @type {Record<string, unknown>} */
  const out = {}
  if (own(raw, 'require')) {
    const values = ['none', 'destructive', 'writes', 'all']
    if (!values.includes(raw.require)) throw new ConfigError(`must be one of ${values.join(', ')} (got ${JSON.stringify(raw.require)})`, `${path}.require`)
    out.require = raw.require
  }
  for (const key of ['ask', 'allow', 'deny']) if (own(raw, key)) out[key] = stringList(raw[key], `${path}.${key}`)
  if (own(raw, 'timeoutMs')) out.timeoutMs = positiveInt(raw.timeoutMs, `${path}.timeoutMs`, 86_400_000)
  if (own(raw, 'whenUnavailable')) {
    if (raw.whenUnavailable !== 'deny' && raw.whenUnavailable !== 'allow') {
      throw new ConfigError(`must be 'deny' or 'allow' (got ${JSON.stringify(raw.whenUnavailable)})`, `${path}.whenUnavailable`)
    }
    out.whenUnavailable = raw.whenUnavailable
  }
  return out
}

function checkCodecall(raw, serverNames, baseDir) {
  const path = 'codecall'
  /** @type {import('./index.mjs').GatewayOptions} */
  const out = {
    mode: 'codecall_only',
    topK: undefined,
    maxDefinitions: undefined,
    metaToolPrefix: 'codecall',
    metaToolSeparator: '_',
    vm: {},
    search: undefined,
    allowedServers: [],
    directCalls: { enabled: false },
    callTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
    audit: null,
    approval: undefined,
    cacheDir: undefined,
    scripts: undefined,
    stateKey: undefined,
    runs: undefined,
  }
  if (raw === undefined) return out
  expect(isObject(raw), 'an object', raw, path)
  checkKeys(
    raw,
    ['mode', 'topK', 'maxDefinitions', 'metaToolPrefix', 'metaToolSeparator', 'vm', 'search', 'allowedServers',
      'directCalls', 'callTimeoutMs', 'startupTimeoutMs', 'audit', 'approval', 'cacheDir', 'scripts', 'stateKey', 'runs'],
    path,
  )
  if (own(raw, 'mode')) {
    if (!MODES.includes(raw.mode)) throw new ConfigError(`must be one of ${MODES.join(', ')} (got ${JSON.stringify(raw.mode)})`, `${path}.mode`)
    out.mode = /** @type {any} */ (raw.mode)
  }
  if (own(raw, 'topK')) out.topK = positiveInt(raw.topK, `${path}.topK`, 1000)
  if (own(raw, 'maxDefinitions')) out.maxDefinitions = positiveInt(raw.maxDefinitions, `${path}.maxDefinitions`, 1000)
  if (own(raw, 'metaToolPrefix')) out.metaToolPrefix = nonEmpty(raw.metaToolPrefix, `${path}.metaToolPrefix`)
  if (own(raw, 'metaToolSeparator')) out.metaToolSeparator = nonEmpty(raw.metaToolSeparator, `${path}.metaToolSeparator`)
  if (own(raw, 'vm')) {
    expect(isObject(raw.vm), 'an object', raw.vm, `${path}.vm`)
    checkKeys(raw.vm, VM_KEYS, `${path}.vm`)
    out.vm = { ...raw.vm }
  }
  if (own(raw, 'search')) {
    expect(isObject(raw.search), 'an object', raw.search, `${path}.search`)
    checkKeys(raw.search, ['synonyms', 'fuzzy', 'semantic', 'model', 'similarityThreshold'], `${path}.search`)
    const model = raw.search.model
    if (model !== undefined && model !== null) expect(model === 'default' || model === 'large', "'default' or 'large'", model, `${path}.search.model`)
    out.search = { ...raw.search }
  }
  if (own(raw, 'allowedServers')) {
    out.allowedServers = stringList(raw.allowedServers, `${path}.allowedServers`)
    out.allowedServers.forEach((s, i) => {
      if (!serverNames.includes(s)) {
        throw new ConfigError(`'${s}' is not a server in mcpServers (${serverNames.join(', ') || 'none'})`, `${path}.allowedServers[${i}]`)
      }
    })
  }
  if (own(raw, 'directCalls')) {
    const d = raw.directCalls
    expect(isObject(d), 'an object', d, `${path}.directCalls`)
    checkKeys(d, ['enabled', 'allowedTools'], `${path}.directCalls`)
    if (own(d, 'enabled')) {
      expect(typeof d.enabled === 'boolean', 'a boolean', d.enabled, `${path}.directCalls.enabled`)
      out.directCalls.enabled = d.enabled
    }
    if (own(d, 'allowedTools')) out.directCalls.allowedTools = stringList(d.allowedTools, `${path}.directCalls.allowedTools`)
  }
  if (own(raw, 'approval')) out.approval = checkApproval(raw.approval, `${path}.approval`)
  if (own(raw, 'scripts') && raw.scripts !== null && raw.scripts !== undefined) out.scripts = checkScripts(raw.scripts, baseDir, `${path}.scripts`)
  // §12: the key that seals requestState (instances sharing it resume each other's approvals).
  if (own(raw, 'stateKey') && raw.stateKey !== null && raw.stateKey !== undefined) {
    const key = nonEmpty(raw.stateKey, `${path}.stateKey`)
    if (Buffer.byteLength(key, 'utf8') < 16) throw new ConfigError(`must be at least 16 bytes (e.g. 32 random bytes, hex; use \${VAR} to keep it out of the file)`, `${path}.stateKey`)
    out.stateKey = key
  }
  // §12: where executions waiting for a person are kept, so another instance (or this one after a
  // restart) resumes them.
  if (own(raw, 'runs') && raw.runs !== null && raw.runs !== undefined) {
    const runs = raw.runs
    expect(isObject(runs), 'an object', runs, `${path}.runs`)
    checkKeys(runs, ['store'], `${path}.runs`)
    if (!own(runs, 'store')) throw new ConfigError("needs 'store': a SQLite file (relative to this config; it may be the scripts' file) or ':memory:'", `${path}.runs`)
    const store = nonEmpty(runs.store, `${path}.runs.store`)
    out.runs = { store: store === ':memory:' ? store : resolve(baseDir, store) }
  }
  if (own(raw, 'callTimeoutMs')) out.callTimeoutMs = positiveInt(raw.callTimeoutMs, `${path}.callTimeoutMs`)
  if (own(raw, 'startupTimeoutMs')) out.startupTimeoutMs = positiveInt(raw.startupTimeoutMs, `${path}.startupTimeoutMs`)
  if (own(raw, 'cacheDir')) {
    if (raw.cacheDir === false) out.cacheDir = false
    else if (raw.cacheDir !== null && raw.cacheDir !== undefined) out.cacheDir = resolve(baseDir, nonEmpty(raw.cacheDir, `${path}.cacheDir`))
  }
  if (own(raw, 'audit')) {
    if (raw.audit !== null && raw.audit !== false) {
      const a = nonEmpty(raw.audit, `${path}.audit`)
      out.audit = a === '-' ? '-' : resolve(baseDir, a)
    }
  }
  return out
}

/**
 * Checks a parsed configuration object. `baseDir` resolves relative `cwd` and `audit` paths (the
 * config file's folder); `env` fills `${VAR}`.
 * @returns {import('./index.mjs').GatewayConfig}
 */
export function parseConfig(raw, options) {
  const env = options?.env ?? process.env
  const baseDir = options?.baseDir ?? process.cwd()
  const source = options?.source ?? 'config'
  try {
    expect(isObject(raw), 'a JSON object', raw, '')
    checkKeys(raw, ['$schema', 'mcpServers', 'servers', 'codecall'], '')
    if (own(raw, 'mcpServers') && own(raw, 'servers')) throw new ConfigError("has both 'mcpServers' and 'servers': give one", '')
    const key = own(raw, 'servers') ? 'servers' : 'mcpServers'
    const rawServers = raw[key] ?? {}
    expect(isObject(rawServers), 'an object of servers', rawServers, key)
    const expanded = expandEnv(rawServers, env, key)
    const servers = []
    for (const [name, spec] of Object.entries(expanded)) {
      if (!SERVER_NAME.test(name) || name === '__proto__' || name === 'constructor' || name === 'prototype') {
        throw new ConfigError('server names may use only letters, digits, _ . - (1 to 64 of them): they become tool-name prefixes', `${key}.${name}`)
      }
      // §11: saved scripts are the tools `saved:<name>`; a server of that name would shadow them.
      if (name === 'saved') throw new ConfigError("'saved' is a reserved server name (saved scripts are the tools saved:<name>): rename this server", `${key}.${name}`)
      servers.push(checkServer(name, spec, baseDir, `${key}.${name}`))
    }
    const codecall = checkCodecall(expandEnv(raw.codecall, env, 'codecall'), servers.map((s) => s.name), baseDir)
    return { servers: servers.filter((s) => !s.disabled), codecall }
  } catch (e) {
    if (e instanceof ConfigError) {
      e.message = `${source}: ${e.message}`
    }
    throw e
  }
}

/** Reads and checks a config file (JSON; `//` and `/* *\/` comments allowed, as in VS Code's). */
export function loadConfig(file, options) {
  file ??= DEFAULT_CONFIG_PATH
  const env = options?.env ?? process.env
  const path = resolve(file)
  let text
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`)
  }
  let raw
  try {
    raw = JSON.parse(stripJsonComments(text))
  } catch (e) {
    throw new ConfigError(`${file} is not valid JSON: ${e.message}`)
  }
  return parseConfig(raw, { env, baseDir: dirname(path), source: file })
}

/** Removes `//` and `/* *\/` comments outside strings (JSONC, as VS Code writes it). */
export function stripJsonComments(text) {
  let out = ''
  let i = 0
  let inString = false
  while (i < text.length) {
    const c = text[i]
    if (inString) {
      out += c
      if (c === '\\') {
        out += text[i + 1] ?? ''
        i += 2
        continue
      }
      if (c === '"') inString = false
      i++
    } else if (c === '"') {
      inString = true
      out += c
      i++
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2)
      i = end < 0 ? text.length : end + 2
    } else {
      out += c
      i++
    }
  }
  return out
}

/** `*` any run of characters, `?` one; anchored; everything else literal. */
export function globToRegExp(glob) {
  let re = '^'
  for (const c of glob) {
    if (c === '*') re += '.*'
    else if (c === '?') re += '.'
    else re += c.replace(/[\\^$.+()[\]{}|/]/g, '\\$&')
  }
  return new RegExp(`${re}$`, 's')
}
