// Code mode on the SDK 2.x modern pattern (MCP 2026-07-28): one engine for the process, a server
// per HTTP request (`createMcpHandler`) or per stdio connection (`serveStdio`). Serves clients of
// both eras; `__test__/adapters/modern.spec.ts` runs this file as written.
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { CodeCall } from '@codecall/native'
import { codeMode } from '@codecall/native/mcp-sdk'
import { z } from 'zod'

export const users = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
]

// Built once: its index, workers and policy serve every request. Destructive calls ask a person.
export const engine = new CodeCall({
  metaToolSeparator: '_',
  directCalls: { enabled: true },
  approval: { require: 'destructive' },
})

// The factory: a fresh server per request / connection, with the engine attached (not rebuilt).
export function shop() {
  const server = new McpServer({ name: 'shop', version: '1.0.0' })
  server.registerTool(
    'users_list',
    { description: 'List the users', inputSchema: z.object({ limit: z.number().int().optional() }), annotations: { readOnlyHint: true } },
    async ({ limit }) => ({ content: [{ type: 'text', text: JSON.stringify(users.slice(0, limit ?? 10)) }] }),
  )
  server.registerTool(
    'users_delete',
    { description: 'Delete a user', inputSchema: z.object({ id: z.number().int() }), annotations: { destructiveHint: true } },
    async ({ id }) => {
      const at = users.findIndex((u) => u.id === id)
      if (at >= 0) users.splice(at, 1)
      return { content: [{ type: 'text', text: JSON.stringify({ deleted: at >= 0 }) }] }
    },
  )
  codeMode(server, { engine })
  return server
}

// HTTP: `handler.fetch(request)` (Workers, Deno, Bun, Hono); Node: `toNodeHandler(handler)` from
// `@modelcontextprotocol/node`.
export const handler = createMcpHandler(shop)

// stdio: `node modern-server.mjs --stdio`.
if (process.argv.includes('--stdio')) serveStdio(shop)
