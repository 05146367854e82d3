// What `describe` tells a model must be true for every tool we have: the example server's and the
// 1 138 real tools of the search benchmark corpus. Its TypeScript declarations compile together
// under `tsc --strict`, and every usage example runs in the sandbox and calls its tool with an
// input that validates against the tool's input schema.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import Ajv from 'ajv'
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'

import { CodeCall, type ToolDefinition } from '../index.js'
// @ts-ignore -- plain ESM example without declarations
import { allTools } from '../examples/mcp-server/apps/index.mjs'

type Corpus = { tools: { appId: string; name: string; description?: string; inputSchema?: Record<string, unknown> }[] }
const corpus = JSON.parse(readFileSync(join(__dirname, '..', 'bench', 'search', 'corpus.json'), 'utf8')) as Corpus

const sets: [string, ToolDefinition[]][] = [
  ['the example server', (allTools() as ToolDefinition[]).filter((t) => !t.internal).map(({ handler, ...t }) => ({ ...t, codecall: undefined }))],
  ['the search corpus', corpus.tools.map((t) => ({ ...t, name: `${t.appId}:${t.name}` }))],
]

function validator(schema: Record<string, unknown>) {
  const draft2020 = String(schema.$schema ?? '').includes('2020-12')
  const ajv = draft2020 ? new Ajv2020({ strict: false, validateSchema: false }) : new Ajv({ strict: false, validateSchema: false })
  ;(addFormats as unknown as (a: unknown) => void)(ajv)
  const { $schema, ...rest } = schema
  return ajv.compile(draft2020 ? schema : rest)
}

const engines: CodeCall[] = []
afterAll(async () => {
  await Promise.all(engines.map((e) => e.dispose()))
})

for (const [label, tools] of sets) {
  describe(`describe() for ${label} (${tools.length} tools)`, () => {
    const cc = new CodeCall({ maxDefinitions: 5000, vm: { preset: 'balanced' } })
    engines.push(cc)
    cc.setTools(tools)
    // describe takes at most 256 names per call
    const described = { tools: [] as ReturnType<CodeCall['describe']>['tools'], notFound: undefined as string[] | undefined }
    for (let i = 0; i < tools.length; i += 256) {
      const part = cc.describe({ toolNames: tools.slice(i, i + 256).map((t) => t.name) })
      described.tools.push(...part.tools)
      if (part.notFound) described.notFound = [...(described.notFound ?? []), ...part.notFound]
    }

    it('describes every tool', () => {
      expect(described.tools).toHaveLength(tools.length)
      expect(described.notFound).toBeUndefined()
    })

    it('has TypeScript declarations that compile together with tsc --strict', () => {
      const file = '/virtual/tools.d.ts'
      const source = described.tools.map((t) => t.typescript).join('\n')
      const options: ts.CompilerOptions = {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        lib: ['lib.es2022.d.ts'],
        types: [],
      }
      const host = ts.createCompilerHost(options)
      const read = host.getSourceFile.bind(host)
      const exists = host.fileExists.bind(host)
      host.getSourceFile = (name, version) => (name === file ? ts.createSourceFile(file, source, version) : read(name, version))
      host.fileExists = (name) => name === file || exists(name)
      const program = ts.createProgram([file], options, host)
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      expect(diagnostics.slice(0, 5)).toEqual([])
    })

    it('has usage examples that run and call their tool with a schema-valid input', async () => {
      const bad: string[] = []
      let checked = 0
      for (const tool of described.tools) {
        expect(tool.usageExamples.length, tool.name).toBeGreaterThan(0)
        expect(tool.usageExamples.length).toBeLessThanOrEqual(5)
        const validate = validator(tool.inputSchema)
        for (const example of tool.usageExamples) {
          const inputs: unknown[] = []
          const r = await cc.execute({ script: example.code }, {
            callTool: (name, input) => {
              expect(name).toBe(tool.name)
              inputs.push(input)
              return { ok: true }
            },
          })
          if (r.status !== 'ok' || inputs.length !== 1 || !validate(inputs[0])) {
            bad.push(`${tool.name} «${example.description}»: ${r.status} ${JSON.stringify(inputs[0])} ${JSON.stringify(validate.errors?.[0] ?? ('error' in r ? r.error : ''))}`)
          }
          checked++
        }
      }
      expect(bad.slice(0, 10)).toEqual([])
      expect(checked).toBeGreaterThanOrEqual(tools.length)
    })
  })
}
