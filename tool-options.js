'use strict'
// Types: tool-options.d.ts. At run time, one helper that builds a tool's `_meta` for the
// framework adapters (`@codecall/native/mcp-sdk`, `@codecall/native/fastmcp`).

/** `_meta` for a tool config (SDK `registerTool`, FastMCP `addTool`): `{ codecall: metadata }`. */
function codecallMeta(metadata, meta) {
  return Object.assign({}, meta, { codecall: Object.assign({}, metadata) })
}

module.exports = { codecallMeta }
