// Types of `@codecall/native/fastmcp` (hand-written; checked by `tsc` in the tests).
import type { CodeCall } from '../../index.js'
import type { CodeModeOptions } from './mcp-sdk.mjs'

export type { CodeModeOptions, ToolMetadata } from './mcp-sdk.mjs'

/**
 * Puts CodeCall in front of a `FastMCP` server (`fastmcp` 4.x): `tools/list` answers the
 * meta-tools (separator `_` unless given), a meta-tool runs the engine, and every tool call goes
 * through FastMCP's own `tools/call` path of the client's session (parameter validation,
 * `canAccess`, timeouts, the `context` of `execute`). Call it before `start()` / `connect()`.
 * Returns the `CodeCall`. Throws `TypeError` (`ERR_INVALID_ARG`) for anything else, or a server
 * already in code mode.
 */
export function codeMode(server: object, options?: CodeModeOptions | null): CodeCall
