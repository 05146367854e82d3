// Types of `@codecall/native/mcp-sdk` (hand-written; checked by `tsc` in the tests).
import type { CodeCall, CodeCallOptions, ToolDefinition } from '../../index.js'

/** CodeCall metadata of one tool (api.md §8); wins over the tool's `_meta.codecall`. */
export type ToolMetadata = Pick<ToolDefinition, 'appId' | 'tags' | 'examples' | 'codecall' | 'internal' | 'source' | 'approval'>

/** What the adapter itself takes, with or without a shared engine. */
interface AdapterOptions {
  /** Per-tool CodeCall metadata by tool name. */
  tools?: Record<string, ToolMetadata>
}

/** `codeMode(server, options)` with an engine of the server's own, made from these options. */
export interface CodeModeOptions extends CodeCallOptions, AdapterOptions {
  engine?: undefined
}

/**
 * `codeMode(server, { engine })`: a `CodeCall` made once by the application and shared by servers
 * built per request or per connection (SDK 2.x `createMcpHandler`, `serveStdio`). Engine options
 * (mode, vm, approval, scripts, metaToolSeparator — give it `'_'`…) belong to the engine; next to
 * `engine`, any of them is `ERR_INVALID_ARG`.
 */
export interface SharedEngineOptions extends AdapterOptions {
  engine: CodeCall
  /**
   * §12: the key that seals `requestState` on modern requests (at least 16 bytes); else the
   * engine's own `stateKey`; else `CODECALL_STATE_KEY`; else a random key of this process (only it
   * can resume). Without `engine`, the `stateKey` of `CodeCallOptions` is it.
   */
  stateKey?: string | Uint8Array | null
  /**
   * The engine's `approval.timeoutMs`, when it is not the default 120 000 (the adapter cannot read
   * it from the engine): bounds a legacy `elicitation/create` and a `requestState`'s lifetime.
   */
  approvalTimeoutMs?: number
}

/**
 * Puts CodeCall in front of an `McpServer` or low-level `Server` of `@modelcontextprotocol/sdk`
 * 1.x, or an `McpServer` of `@modelcontextprotocol/server` 2.x: `tools/list` answers the
 * meta-tools (separator `_` unless given), a meta-tool runs the engine, and every tool call — from
 * a script or a direct call of a listed tool — goes through the server's own `tools/call` path.
 * Call it after registering tools; later changes are re-indexed. Returns the `CodeCall`: the
 * server's own (disposed when the server closes, once no run of it waits for an approval across
 * requests), or `options.engine` (never disposed here; re-indexed only when this server's tools
 * differ from what it holds). Modern (2026-07-28) requests get api.md §12: capabilities per
 * request, logs only at the request's `logLevel`, approvals by `input_required`.
 * Throws `TypeError` (`ERR_INVALID_ARG`) for anything else, or a server already in code mode.
 */
export function codeMode(server: object, options?: CodeModeOptions | SharedEngineOptions | null): CodeCall
