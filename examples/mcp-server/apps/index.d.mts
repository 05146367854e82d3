/** Types for the example MCP server's tool set (apps/index.mjs). */
import type { ToolDefinition as CodeCallToolDefinition } from '../../../index.js'

export type JsonSchema = Record<string, unknown>

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

/** A CodeCall tool definition (see the package's `ToolDefinition`) plus the host's handler. */
export interface ToolDefinition extends CodeCallToolDefinition {
  description: string
  inputSchema: JsonSchema
  examples?: ToolExample[]
  handler: (input: Record<string, unknown>, ctx: ToolContext) => Promise<Record<string, unknown>>
}

export interface App {
  appId: string
  tools: ToolDefinition[]
}

export declare const apps: App[]
export declare function allTools(): ToolDefinition[]
