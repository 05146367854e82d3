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
