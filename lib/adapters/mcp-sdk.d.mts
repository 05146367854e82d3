// Types of `@codecall/native/mcp-sdk` (hand-written; checked by `tsc` in the tests).
import type { CodeCall, CodeCallOptions, ToolDefinition } from '../../index.js'

/** CodeCall metadata of one tool (api.md §8); wins over the tool's `_meta.codecall`. */
export type ToolMetadata = Pick<ToolDefinition, 'appId' | 'tags' | 'examples' | 'codecall' | 'internal' | 'source'>

export interface CodeModeOptions extends CodeCallOptions {
  /** Per-tool CodeCall metadata by tool name. */
  tools?: Record<string, ToolMetadata>
}

/**
 * Puts CodeCall in front of an `McpServer` or low-level `Server` of `@modelcontextprotocol/sdk`
 * 1.x, or an `McpServer` of `@modelcontextprotocol/server` 2.x: `tools/list` answers the
 * meta-tools (separator `_` unless given), a meta-tool runs the engine, and every tool call — from
 * a script or a direct call of a listed tool — goes through the server's own `tools/call` path.
 * Call it after registering tools; later changes are re-indexed. Returns the `CodeCall`.
 * Throws `TypeError` (`ERR_INVALID_ARG`) for anything else, or a server already in code mode.
 */
export function codeMode(server: object, options?: CodeModeOptions | null): CodeCall
