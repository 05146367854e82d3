// The approach today's JS validators take (FrontMCP's ast-guard, enclave-vm): parse with acorn,
// walk with acorn-walk, apply the same AgentScript rules as @codecall/native's `secure` preset.
// Kept rule-for-rule equivalent so the comparison is of engines, not of rule sets.
import * as acorn from 'acorn'
import * as walk from 'acorn-walk'

const BUILTINS = new Set(['eval', 'Function'])
const GLOBALS = new Set([
  'require', 'process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval',
  'clearImmediate', 'module', 'exports', '__dirname', '__filename', 'Buffer', 'XMLHttpRequest', 'WebSocket',
  'importScripts', 'Worker', 'Deno', 'Bun', 'global', 'WebAssembly', 'SharedArrayBuffer', 'Atomics',
])
const GLOBAL_ALIASES = new Set(['globalThis', 'self', 'window', 'global'])
const FORBIDDEN = new Set(['constructor', '__proto__', 'prototype', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__'])

function staticName(node, computed) {
  if (!computed && node.type === 'Identifier') return node.name
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked
  return null
}

export function acornValidate(script) {
  let ast
  try {
    ast = acorn.parse(script, { ecmaVersion: 'latest', sourceType: 'module', allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true, locations: true })
  } catch (e) {
    return { ok: false, status: 'syntax_error', error: { message: e.message } }
  }
  let violation = null
  const report = (kind, node) => { if (!violation || node.start < violation.start) violation = { kind, start: node.start } }
  const toolNames = []
  let dynamic = false
  // acorn-walk's `full` is post-order: count references to callTool, and subtract the ones that
  // are direct callees with a literal name.
  let callToolRefs = 0
  let literalCalls = 0
  walk.full(ast, (node) => {
    switch (node.type) {
      case 'Identifier':
        if (BUILTINS.has(node.name)) report('IllegalBuiltinAccess', node)
        else if (GLOBALS.has(node.name)) report('DisallowedGlobal', node)
        if (node.name.startsWith('__cc_')) report('ReservedIdentifier', node)
        if (node.name === 'callTool') callToolRefs++
        break
      case 'ForStatement': case 'ForInStatement': case 'ForOfStatement': case 'WhileStatement': case 'DoWhileStatement':
        report('LoopNotAllowed', node)
        break
      case 'ImportExpression': report('DynamicImport', node); break
      case 'MetaProperty': if (node.meta.name === 'import') report('ImportMeta', node); break
      case 'ImportDeclaration': case 'ExportNamedDeclaration': case 'ExportDefaultDeclaration': case 'ExportAllDeclaration':
        report('ModuleSyntax', node); break
      case 'WithStatement': report('WithStatement', node); break
      case 'MemberExpression': {
        const name = staticName(node.property, node.computed)
        if (name !== null) {
          if (FORBIDDEN.has(name)) report('ForbiddenMember', node)
          if (name.startsWith('__cc_')) report('ReservedIdentifier', node)
          if (node.object.type === 'Identifier' && GLOBAL_ALIASES.has(node.object.name)) {
            if (BUILTINS.has(name)) report('IllegalBuiltinAccess', node)
            else if (GLOBALS.has(name)) report('DisallowedGlobal', node)
          }
        }
        break
      }
      case 'ObjectPattern':
        for (const p of node.properties) {
          const name = p.type === 'Property' ? staticName(p.key, p.computed) : null
          if (name !== null && FORBIDDEN.has(name)) report('ForbiddenMember', p)
        }
        break
      case 'ObjectExpression':
        for (const p of node.properties) {
          if (p.type === 'Property' && !p.computed && !p.shorthand && staticName(p.key, false) === '__proto__') report('ForbiddenMember', p)
        }
        break
      case 'CallExpression': {
        if (node.callee.type === 'Identifier' && node.callee.name === 'callTool') {
          const first = node.arguments[0]
          const name = first ? staticName(first, true) : null
          if (name === null) dynamic = true
          else {
            literalCalls++
            if (name.startsWith('codecall:')) report('SelfReference', node)
            if (!toolNames.includes(name)) toolNames.push(name)
          }
        }
        break
      }
    }
  })
  if (callToolRefs > literalCalls) dynamic = true
  if (violation) return { ok: false, status: 'illegal_access', error: { kind: violation.kind } }
  return { ok: true, toolNames, dynamicToolCalls: dynamic }
}
