// Runtime errors point at the user's own line (issue 15, bug 2): across function bodies, blank
// lines, nested blocks, awaits and both languages, in both isolation modes. QuickJS records a
// position only at some constructs (identifiers, calls, operators, expression statements); the
// validator marks every other statement so that an error never reports an earlier line.
import { afterAll, describe, expect, it } from 'vitest'

import { Sandbox, type ExecuteResult } from '../index.js'

type Case = {
  name: string
  js: string
  /** The TypeScript version (types added); the same lines. */
  ts?: string
  line: number
  column?: number
  /** Lines the stack's frames point at, innermost first. */
  frames?: number[]
}

const cases: Case[] = [
  {
    name: 'the issue: a literal null member in a function body after blank lines',
    js: 'const a = 1;\n\nfunction f() {\n  return null.boom;\n}\nf();',
    ts: 'const a: number = 1;\n\nfunction f(): number {\n  return (null as any).boom;\n}\nf();',
    line: 4,
    column: 3,
    frames: [4, 6],
  },
  {
    name: 'a declaration on the second line',
    js: 'const a = 1\nconst b = null.x',
    ts: 'const a: number = 1\nconst b: unknown = (null as any).x',
    line: 2,
  },
  {
    name: 'after many blank lines and comments',
    js: '// head\n\n\n/* block\n comment */\n\nconst v = undefined.y\nreturn v',
    ts: '// head\n\n\ntype T = { y: number }\n/* comment */\n\nconst v: T = (undefined as any).y\nreturn v',
    line: 7,
  },
  {
    name: 'deep in nested blocks and an arrow function',
    js: 'const run = (o) => {\n  if (o) {\n    for (const k of [1]) {\n      const x = k\n      const y = [][0].z\n    }\n  }\n}\nrun(true)',
    ts: 'const run = (o: boolean): void => {\n  if (o) {\n    for (const k of [1]) {\n      const x: number = k\n      const y: number = ([] as any[])[0].z\n    }\n  }\n}\nrun(true)',
    line: 5,
    frames: [5, 9],
  },
  {
    name: 'after an await',
    js: 'const r = await Promise.resolve(null)\n\nconst z = (await Promise.resolve(null)).q\nreturn z',
    ts: 'const r: null = await Promise.resolve(null)\n\nconst z: number = ((await Promise.resolve(null)) as any).q\nreturn z',
    line: 3,
  },
  {
    name: 'a throw statement (the Error is made where its constructor is named)',
    js: 'const a = 1\n\nif (a) {\n  throw new RangeError("nope")\n}',
    ts: 'const a: number = 1\n\nif (a) {\n  throw new RangeError("nope")\n}',
    line: 4,
    column: 13,
  },
  {
    name: 'a call of an undefined function keeps its exact column',
    js: 'let n = 0\nn += 1\n  missing(n)',
    ts: 'let n: number = 0\nn += 1\n  ;(globalThis as any).missing(n)',
    line: 3,
  },
  {
    name: 'an error inside a switch case',
    js: "const k = 'b'\nswitch (k) {\n  case 'a':\n    break\n  case 'b':\n    return null[k]\n}",
    ts: "const k: string = 'b'\nswitch (k) {\n  case 'a':\n    break\n  case 'b':\n    return (null as any)[k]\n}",
    line: 6,
  },
  {
    name: 'a method of a class',
    js: 'class A {\n  get() {\n    return null.v\n  }\n}\n\nreturn new A().get()',
    ts: 'class A {\n  get(): number {\n    return (null as any).v\n  }\n}\n\nreturn new A().get()',
    line: 3,
  },
  {
    name: 'a last expression (the result) on its own line',
    js: 'const a = 1\n\nnull.last',
    ts: 'const a: number = 1\n\n;(null as any).last',
    line: 3,
  },
]

const sandboxes: Sandbox[] = []
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.dispose()))
})

function errorOf(r: ExecuteResult) {
  if (r.status !== 'runtime_error') throw new Error(`expected a runtime error, got ${JSON.stringify(r)}`)
  return r.error as { location?: { line: number; column: number }; stack?: string }
}

for (const isolation of ['thread', 'process'] as const) {
  describe(`runtime error positions (${isolation})`, () => {
    const sb = new Sandbox({ isolation, preset: 'balanced' })
    sandboxes.push(sb)

    for (const c of cases) {
      for (const language of ['javascript', 'typescript'] as const) {
        const script = language === 'typescript' ? c.ts : c.js
        if (script === undefined) continue
        it(`${c.name} (${language})`, async () => {
          const e = errorOf(await sb.execute(script, undefined, { language }))
          expect(e.location?.line).toBe(c.line)
          if (c.column !== undefined && language === 'javascript') expect(e.location?.column).toBe(c.column)
          const frames = [...(e.stack ?? '').matchAll(/script\.js:(\d+):\d+/g)].map((m) => Number(m[1]))
          expect(frames[0]).toBe(c.line)
          if (c.frames) expect(frames).toEqual(c.frames)
        })
      }
    }

    it('marking statements changes no result (loops, labels, ASI, directives, the last expression)', async () => {
      const scripts: [string, unknown][] = [
        ['const a = 1\nconst b = 2\na + b', 3],
        ['let s = 0\nouter: for (let i = 0; i < 3; i++) {\n  for (let j = 0; j < 3; j++) {\n    if (j === 1) continue outer\n    s += 10\n  }\n}\ns', 30],
        ['let i = 0\ndo i++\nwhile (i < 3)\nreturn i', 3],
        ["function f() {\n  'use strict'\n  return typeof this\n}\nreturn f()", 'undefined'],
        ['const o = { a: 1 }\nlet r\nswitch (o.a) {\n  case 1:\n    r = "one"\n    break\n  default:\n    r = "other"\n}\nr', 'one'],
        ['var x = 1\n{\n  var x = 2\n}\nx', 2],
        ['const f = () => ({ v: 5 })\nconst { v } = f()\nv', 5],
        ['if (true) return "early"\nreturn "late"', 'early'],
      ]
      for (const [script, expected] of scripts) {
        const r = await sb.execute(script)
        expect(r, script).toMatchObject({ status: 'ok', result: expected })
      }
    })
  })
}
