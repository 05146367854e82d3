/**
 * The apps of the example MCP server. Each app is `{ appId, tools }`; tool names are
 * `<appId>:<camelCaseVerbNoun>` and handlers are `async (input, { store, userId? }) => object`.
 */
import analytics from './analytics.mjs'
import billing from './billing.mjs'
import inventory from './inventory.mjs'
import orders from './orders.mjs'
import support from './support.mjs'
import users from './users.mjs'

export const apps = [users, billing, orders, support, analytics, inventory]

/** Every tool of every app, in app order, each with its app's `appId`. */
export function allTools() {
  return apps.flatMap((app) => app.tools.map((tool) => ({ appId: app.appId, ...tool })))
}
