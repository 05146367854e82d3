/**
 * Adds CodeCall's per-tool metadata to your tool options (seed 000, "Tool metadata extension"):
 *
 *     import '@codecall/native/tool-options'
 *     const options: ToolOptions = { name: 'users:list', codecall: { enabledInCodeCall: true } }
 *
 * It augments the global `ToolOptions` interface (FrontMCP's `@Tool` options) with
 * `codecall?: CodeCallToolMetadata`. Frameworks with another name can extend
 * `CodeCallToolOptions` instead.
 */
import type { CodeCallToolMetadata } from './index'

declare global {
  interface ToolOptions {
    codecall?: CodeCallToolMetadata
  }
}

/** Mix into your own tool-options type: `interface MyToolOptions extends CodeCallToolOptions { ... }`. */
export interface CodeCallToolOptions {
  codecall?: CodeCallToolMetadata
}

export type { CodeCallToolMetadata }

/** The CodeCall metadata of one tool, as the framework adapters read it from `_meta.codecall` (api.md §8). */
export interface CodeCallMeta {
  /** @default the tool name's prefix before its first `_ . : /`, else the server's name */
  appId?: string
  tags?: string[]
  /** Shown first in describe's usage examples. */
  examples?: { description: string; input: unknown; output?: unknown }[]
  codecall?: CodeCallToolMetadata
  /** Never listed, indexed, described or callable. @default false */
  internal?: boolean
  /** @default 'inline' */
  source?: string
}

/**
 * `_meta` for a tool config — the SDK's `registerTool(name, { _meta })` (1.x and 2.x) and
 * FastMCP's `addTool({ _meta })` — typed: `_meta: codecallMeta({ appId: 'billing', tags: ['money'] })`.
 * Other `_meta` keys of the tool go in `meta`.
 */
export function codecallMeta<M extends Record<string, unknown> = {}>(metadata: CodeCallMeta, meta?: M | null): M & { codecall: CodeCallMeta }
