// Errors of the gateway, in a module of their own so the CLI can report them without loading the
// MCP SDK (`codecall --help` stays fast).

/** A failure with a stable `code` (api.md §7) that the engine keeps on the script's ToolError. */
export class GatewayError extends Error {
  /** @param {string} code @param {string} message @param {unknown} [details] */
  constructor(code, message, details) {
    super(message)
    this.name = 'GatewayError'
    this.code = code
    if (details !== undefined) this.details = details
  }
}

/** One line for a start or call failure. */
export function describeError(e) {
  if (e === null || e === undefined) return 'unknown error'
  if (typeof e !== 'object') return String(e)
  const base = e.message || String(e)
  if (e.code === 'ENOENT' && e.path) return `command not found: ${e.path}`
  if (e.code && typeof e.code === 'string' && !base.includes(e.code)) return `${base} (${e.code})`
  return base
}
