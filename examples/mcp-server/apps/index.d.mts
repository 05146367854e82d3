/** Types for the example MCP server's tool set (apps/index.mjs). */

export type JsonSchema = Record<string, unknown>

export interface ToolAnnotations {
  title?: string
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

export interface ToolExample {
  description: string
  input: Record<string, unknown>
  output?: Record<string, unknown>
}

export interface ToolContext {
  /** The in-memory store from `createStore()` in ../data.mjs. */
  store: any
  /** The acting user; defaults to usr_001. */
  userId?: string
}

export interface ToolDefinition {
  name: string
  title?: string
  description: string
  inputSchema: JsonSchema
  outputSchema?: JsonSchema
  annotations?: ToolAnnotations
  tags?: string[]
  examples?: ToolExample[]
  codecall?: { visibleInListTools?: boolean; enabledInCodeCall?: boolean }
  internal?: boolean
  handler: (input: Record<string, unknown>, ctx: ToolContext) => Promise<Record<string, unknown>>
}

export interface App {
  appId: string
  tools: ToolDefinition[]
}

export declare const apps: App[]
export declare function allTools(): ToolDefinition[]
