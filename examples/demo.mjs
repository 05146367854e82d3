// The demo, for now: what the validator says about plans a model might send.
// (The end-to-end demo over real MCP arrives with the CodeCall engine.)
// Run: npm run demo
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { validate } = require('..')

const plans = [
  ['a good plan', `const users = await callTool('users:list', { status: 'active' })
const admins = users.items.filter((u) => u.role === 'admin')
return admins.map((a) => a.email)`],
  ['a TypeScript plan', `interface User { id: string; role: 'admin' | 'user' }
const users = await callTool<User[]>('users:list', {})
return users.filter((u): u is User => u.role === 'admin').length`, { language: 'typescript' }],
  ['an escape through the constructor', `const F = (() => {})['constructor']
return F('return process')()`],
  ['a hidden eval', 'const run = { \\u0065val }.eval\nreturn run("1 + 1")'],
  ['a loop under `secure`', `let n = 0
while (true) n++`],
  ['calling the engine itself', `await callTool('codecall:execute', { script: 'return 1' })`],
  ['a syntax error', `const total = items.reduce((a, b) => a + b, 0\nreturn total`],
]

for (const [title, script, options] of plans) {
  const result = validate(script, options)
  console.log(`\n■ ${title}`)
  console.log(script.split('\n').map((l) => `    ${l}`).join('\n'))
  if (result.ok) {
    console.log(`  → ok; tools: ${JSON.stringify(result.toolNames)}${result.dynamicToolCalls ? ' (and dynamic ones)' : ''}`)
  } else {
    const { code, kind, message, location } = result.error
    const where = location ? ` at ${location.line}:${location.column}` : ''
    console.log(`  → ${result.status} ${code}${kind ? ` (${kind})` : ''}${where}: ${message}`)
  }
}
