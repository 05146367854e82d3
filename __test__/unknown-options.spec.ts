// Spec §1: every options object of the public API refuses keys it does not know — a typo must not
// silently drop a setting (a user who configured `approval` before it existed got no approvals and
// no error). The error is ERR_INVALID_ARG naming the key and the key it most likely meant. Data
// objects (tool definitions, inputs) keep their extra keys. The key lists in the Rust readers are
// checked against the TypeScript interfaces napi generates, so the two cannot drift apart.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { CodeCall, Sandbox, ToolIndex, validate } from '../index.js'
import { codeMode } from '../lib/adapters/mcp-sdk.mjs'
import { ConfigError, parseConfig } from '../lib/gateway/index.mjs'
import { expectInvalidArg } from './helpers'

const sandbox = new Sandbox({ isolation: 'thread' })
afterAll(() => sandbox.dispose())

/** The property names of `export interface <name> { ... }` in index.d.ts (one level). */
function interfaceKeys(name: string): string[] {
  const dts = readFileSync(join(__dirname, '..', 'index.d.ts'), 'utf8')
  const start = dts.indexOf(`export interface ${name} {`)
  expect(start, `interface ${name} in index.d.ts`).toBeGreaterThanOrEqual(0)
  const keys: string[] = []
  let depth = 0
  for (const line of dts.slice(dts.indexOf('{', start) + 1).split('\n')) {
    if (depth === 0) {
      const m = /^ {2}([A-Za-z]+)\??:/.exec(line)
      if (m) keys.push(m[1])
      if (/^}/.test(line)) break
    }
    depth += (line.match(/{/g) ?? []).length - (line.match(/}/g) ?? []).length
  }
  return keys
}

describe('unknown option keys are ERR_INVALID_ARG naming the key and the near miss', () => {
  it.each([
    ['new Sandbox', () => new Sandbox({ timeout: 5 } as any), /options: unknown option 'timeout' \(did you mean 'timeoutMs'\?\)/],
    ['sandbox.execute', () => sandbox.execute('1', {}, { timeOutMs: 5 } as any), /options: unknown option 'timeOutMs' \(did you mean 'timeoutMs'\?\)/],
    ['new CodeCall', () => new CodeCall({ bogusOption: 1 } as any), /options: unknown option 'bogusOption' \(known: mode, topK/],
    ['new CodeCall, a near miss', () => new CodeCall({ topk: 3 } as any), /did you mean 'topK'/],
    ['new CodeCall, vm', () => new CodeCall({ vm: { presets: 'secure' } } as any), /options\.vm: unknown option 'presets' \(did you mean 'preset'\?\)/],
    ['new CodeCall, search', () => new CodeCall({ search: { fuzz: true } } as any), /options\.search: unknown option 'fuzz' \(did you mean 'fuzzy'\?\)/],
    ['new CodeCall, directCalls', () => new CodeCall({ directCalls: { enabled: true, allowed: [] } } as any), /options\.directCalls: unknown option 'allowed'/],
    ['new CodeCall, approval', () => new CodeCall({ approval: { required: 'all' } } as any), /options\.approval: unknown option 'required' \(did you mean 'require'\?\)/],
    ['new ToolIndex', () => new ToolIndex({ synonym: true } as any), /did you mean 'synonyms'/],
    ['toolIndex.search', () => new ToolIndex().search('x', { top_k: 3 } as any), /options: unknown option 'top_k' \(did you mean 'topK'\?\)/],
    ['validate', () => validate('1', { allowLoop: true } as any), /did you mean 'allowLoops'/],
    ['codeMode', () => codeMode(new McpServer({ name: 's', version: '1' }), { separator: '_' } as any), /unknown option 'separator'/],
  ])('%s', (_, call, message) => {
    expectInvalidArg(call, message)
  })

  it('approval values are checked too', () => {
    expectInvalidArg(() => new CodeCall({ approval: { require: 'some' } } as any), /options\.approval\.require must be 'none', 'destructive', 'writes' or 'all'/)
    expectInvalidArg(() => new CodeCall({ approval: { deny: 'x' } } as any), /options\.approval\.deny must be an array/)
    expectInvalidArg(() => new CodeCall({ approval: { whenUnavailable: 'ask' } } as any), /options\.approval\.whenUnavailable/)
    expect(() => new CodeCall({ approval: { require: 'destructive', ask: ['a:*'], timeoutMs: 1000, whenUnavailable: 'allow' } }).dispose()).not.toThrow()
  })

  it('data objects keep their keys: tool definitions and inputs', async () => {
    const cc = new CodeCall()
    try {
      cc.setTools([{ name: 'a:b', description: 'x', vendorField: 1 } as any])
      expect(cc.search({ query: 'x' }).tools.map((t) => t.name)).toEqual(['a:b'])
    } finally {
      await cc.dispose()
    }
    expect(await sandbox.execute('return input.extra', {}, { input: { extra: 1 } })).toMatchObject({ status: 'ok', result: 1 })
  })

  it('the gateway config checks codecall.approval with the key path', () => {
    const base = { mcpServers: { a: { command: 'x' } } }
    const error = (approval: unknown) => {
      try {
        parseConfig({ ...base, codecall: { approval } }, { env: {} })
      } catch (e) {
        return e as ConfigError
      }
      throw new Error('no error')
    }
    expect(error({ requre: 'all' }).message).toMatch(/codecall\.approval\.requre: unknown key/)
    expect(error({ require: 'some' }).message).toMatch(/codecall\.approval\.require: must be one of none, destructive, writes, all/)
    expect(error({ ask: 'a:*' }).message).toMatch(/codecall\.approval\.ask/)
    expect(error({ timeoutMs: 0 }).message).toMatch(/codecall\.approval\.timeoutMs/)
    expect(error({ whenUnavailable: 'maybe' }).message).toMatch(/codecall\.approval\.whenUnavailable/)
    const ok = parseConfig({ ...base, codecall: { approval: { require: 'writes', deny: ['a:drop_*'] } } }, { env: {} })
    expect(ok.codecall.approval).toEqual({ require: 'writes', deny: ['a:drop_*'] })
  })
})

describe('the gateway config checks codecall.search.model', () => {
  it("accepts 'default', 'large' or null and refuses anything else with the key path", () => {
    const base = { mcpServers: { a: { command: 'x' } } }
    for (const model of ['default', 'large', null]) {
      expect(parseConfig({ ...base, codecall: { search: { model } } }, { env: {} }).codecall.search).toEqual({ model })
    }
    for (const model of ['huge', 1, true]) {
      expect(() => parseConfig({ ...base, codecall: { search: { model } } }, { env: {} })).toThrow(/codecall\.search\.model: must be 'default' or 'large'/)
    }
  })
})

describe('the key lists the readers check are the TypeScript interfaces', () => {
  // The Rust readers' lists, as their errors print them (`known: …`), against index.d.ts.
  const known = (call: () => unknown) => {
    try {
      call()
    } catch (e) {
      const m = /\(known: ([^)]*)\)/.exec((e as Error).message)
      if (m) return m[1].split(', ').sort()
      throw e
    }
    throw new Error('no error')
  }
  it.each([
    ['SandboxOptions', () => new Sandbox({ zzzzzzzzzzzzzzzz: 1 } as any)],
    ['ExecuteOptions', () => sandbox.execute('1', {}, { zzzzzzzzzzzzzzzz: 1 } as any)],
    ['CodeCallOptions', () => new CodeCall({ zzzzzzzzzzzzzzzz: 1 } as any)],
    ['ApprovalOptions', () => new CodeCall({ approval: { zzzzzzzzzzzzzzzz: 1 } } as any)],
    ['ToolIndexOptions', () => new ToolIndex({ zzzzzzzzzzzzzzzz: 1 } as any)],
    ['ToolSearchOptions', () => new ToolIndex().search('x', { zzzzzzzzzzzzzzzz: 1 } as any)],
    ['ValidateOptions', () => validate('1', { zzzzzzzzzzzzzzzz: 1 } as any)],
  ])('%s', (name, call) => {
    expect(known(call)).toEqual(interfaceKeys(name).sort())
  })
})
