// Types of `@codecall/native/gateway` (hand-written; checked by `tsc` in the tests).
import type { ApprovalOptions, CodeCall, CodeCallHost, ExecuteResult, SandboxOptions } from '../../index.js'

/** One upstream of `mcpServers`, checked and normalized. */
export type ServerConfig = {
  name: string
  include: string[] | null
  exclude: string[]
  disabled: boolean
  /** Overrides `codecall.callTimeoutMs` for this server. */
  callTimeoutMs: number | null
} & (
  | { transport: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { transport: 'http' | 'sse'; url: string; headers: Record<string, string> }
)

/** The `codecall` section, with its defaults filled in. */
export interface GatewayOptions {
  /** @default 'codecall_only' */
  mode: 'codecall_only' | 'codecall_opt_in' | 'metadata_driven'
  topK?: number
  maxDefinitions?: number
  /** @default 'codecall' */
  metaToolPrefix: string
  /** @default '_' (clients that accept only `^[a-zA-Z0-9_-]{1,64}$`) */
  metaToolSeparator: string
  vm: SandboxOptions
  search?: { synonyms?: boolean; fuzzy?: boolean; semantic?: boolean; model?: 'default' | 'large' | null; similarityThreshold?: number }
  /** Servers scripts may call; `[]` means all. @default [] */
  allowedServers: string[]
  /** @default { enabled: false } */
  directCalls: { enabled: boolean; allowedTools?: string[] }
  /** @default 60000 */
  callTimeoutMs: number
  /** How long one upstream may take to start. @default 30000 */
  startupTimeoutMs: number
  /** An audit file (absolute), `'-'` for stderr, or null. @default null */
  audit: string | null
  /** §9: which calls a person approves through the requesting MCP client. @default undefined (none) */
  approval?: ApprovalOptions
  /**
   * Where the search keeps tool vectors, so a restart with the same tools embeds nothing again:
   * a folder (relative to the config file), or `false` for none. `undefined`: the user's cache
   * folder (`$XDG_CACHE_HOME/codecall`, `~/.cache/codecall`, `~/Library/Caches/codecall`,
   * `%LOCALAPPDATA%\codecall`).
   */
  cacheDir?: string | false
  /**
   * §11: saved scripts — `store` is a SQLite file (absolute: resolved against the config file's
   * folder) or `':memory:'`. `undefined`: no saved scripts (no `codecall_save`).
   */
  scripts?: { store: string; historySize?: number; maxDepth?: number }
  /**
   * §12: the key (at least 16 bytes) that seals `requestState` for approvals across modern
   * requests; gateways sharing it resume each other's states. `undefined`: `CODECALL_STATE_KEY`,
   * else a random key of the process (only it can resume).
   */
  stateKey?: string
  /**
   * §12: where executions waiting for a person are kept — a SQLite file (absolute: resolved
   * against the config file's folder; it may be the scripts' file) or `':memory:'` — so a restarted
   * gateway, or another instance with the same `stateKey` and file, resumes them by replay.
   * `undefined`: a waiting run lives in the memory of the process that started it.
   */
  runs?: { store: string }
}

export interface GatewayConfig {
  servers: ServerConfig[]
  codecall: GatewayOptions
}

/** A configuration problem; `path` names the key (`mcpServers.github.args[1]`). */
export class ConfigError extends Error {
  readonly code: 'CONFIG_INVALID'
  readonly path?: string
}

export const DEFAULT_CONFIG_PATH: string
export function parseConfig(raw: unknown, options?: { env?: Record<string, string | undefined>; baseDir?: string; source?: string } | null): GatewayConfig
export function loadConfig(file?: string | null, options?: { env?: Record<string, string | undefined> } | null): GatewayConfig
export function expandEnv<T>(value: T, env: Record<string, string | undefined>, path: string): T
export function globToRegExp(glob: string): RegExp
/** The user's cache folder for the gateway's tool vectors (`codecall.cacheDir`'s default); `undefined` without a home. */
export function userCacheDir(env: Record<string, string | undefined>): string | undefined

/** A failure with a stable error code (api.md §7), naming the server. */
export class GatewayError extends Error {
  constructor(code: string, message: string, details?: unknown)
  readonly code: string
  readonly details?: unknown
}

/** Seed 002's internal tools: `_internal: true`, `_meta.internal: true`, or a name starting `internal_`. */
export function isInternalTool(tool: { name: string; _internal?: unknown; _meta?: { internal?: unknown } }): boolean

/** How a `CallToolResult` reads to a script (api.md §5). */
export function unwrapResult(result: unknown): { ok: true; value: unknown } | { ok: false; message: string; details?: unknown }

export const VERSION: string

/** What `mcp.listServers()` shows of one upstream. */
export interface ServerInfo {
  name: string
  status: 'starting' | 'connected' | 'failed' | 'closed'
  transport: 'stdio' | 'http' | 'sse'
  /** The protocol era spoken with it (§12), once connected. */
  era?: 'legacy' | 'modern'
  tools: number
  capabilities: { tools: boolean; resources: boolean; prompts: boolean }
  serverInfo?: { name: string; version: string }
  reason?: string
}

/** One meta-tool call from a client: where its notifications go, the servers it reached. */
export class RequestScope {
  constructor(options?: {
    sessionId?: string | null
    sendNotification?: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>
    /** A function: the token of whichever request carries the call now (§12). */
    progressToken?: string | number | (() => string | number | undefined)
    /** `null`: no log messages (a 2026-07-28 request that set no `logLevel`). */
    logLevel?: () => string | null
    signal?: AbortSignal
    /** §9: asks a person some other way than elicitation (takes precedence). */
    approve?: (request: unknown) => Promise<'approve' | 'approve_always' | 'decline'>
  } | null)
  readonly sessionId: string | null
  readonly servers: Set<string>
  readonly signal: AbortSignal
  flushed(): Promise<void>
  end(): void
}

export class Gateway {
  constructor(
    config: GatewayConfig,
    options?: {
      log?: (line: string, level?: 'info' | 'warn') => void
      /** Overrides `codecall.audit`. */
      audit?: string | null
      onToolsChanged?: () => void
      onUpstreamLog?: (server: string, params: unknown) => void
    } | null,
  )
  /** The engine (with a scripts store, made on first use: starting opens no store, §12). */
  readonly codecall: CodeCall
  /** Told once every upstream has started or failed. */
  onStarted: (() => void) | null
  readonly metaNames: Set<string>
  readonly metaByKind: { search: string; describe: string; execute: string; invoke?: string; save?: string }
  /** Starts every upstream in parallel; resolves when each has connected or failed. */
  start(): Promise<void>
  listTools(): ReturnType<CodeCall['listTools']>
  /** `tools/list` for a client: starts the upstreams (waits for them when the mode lists tools). */
  listToolsReady(): Promise<ReturnType<CodeCall['listTools']>>
  isMetaTool(name: string): boolean
  search(query: string, topK?: number): Promise<ReturnType<CodeCall['search']>>
  /**
   * One meta-tool call; rejects (ERR_INVALID_ARG) for malformed arguments. Writes the audit line
   * of execute and invoke (a saved script's run names `saved:<name>@<version>`).
   */
  handle(name: string, args: unknown, scope: RequestScope, overrides?: { allowedServers?: string[] | null } | null): Promise<ExecuteResult | unknown>
  /** The engine's host for one call; its `sessionId` is the scope's (§11: whose history a save reads). */
  hostFor(scope: RequestScope, overrides?: { allowedServers?: string[] | null; allowedTools?: string[] | null } | null): CodeCallHost & { sessionId: string | null }
  /** Closes every upstream (no process left behind), the audit file and the engine. */
  close(): Promise<void>
}

/**
 * The live MCP servers of one Gateway (2025-era sessions, stdio connections of either era, the
 * 2026-07-28 HTTP handler) and the executions waiting for a person across modern requests (§12).
 * `stateKey` seals their `requestState` (else `gateway.config.codecall.stateKey`, else
 * `CODECALL_STATE_KEY`, else random per process).
 */
export class Sessions {
  constructor(gateway: Gateway, options?: { stateKey?: string | Uint8Array | null; log?: (line: string) => void } | null)
  toolsChanged(): void
  close(): Promise<void>
}

export function isLoopback(host: string): boolean
export function serveStdio(gateway: Gateway, sessions: Sessions, onClosed: () => void): Promise<() => Promise<void>>
export function serveHttp(
  gateway: Gateway,
  sessions: Sessions,
  options: { port: number; host: string; token?: string | null; log: (line: string, level?: 'info' | 'warn') => void },
): Promise<{ url: string; close(): Promise<void> }>
