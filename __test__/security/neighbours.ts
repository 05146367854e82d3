// The neighbours of the security specs (spec §2.6: a failure belongs to the execution that caused
// it): two plain executions of the same sandbox, parked on a host tool while an attack runs, that
// must still finish `ok` with their own results.
import { expect } from 'vitest'

import type { ExecuteHost, ExecuteResult, Sandbox } from '../../index.js'

const script = (n: number) => `const r = await callTool('slow:echo', { n: ${n} }); return [r.n, r.input.n]`

/**
 * Runs `attack` beside two executions parked on a host tool that answers after `answerMs` (their
 * own timeout: `timeoutMs`, the sandbox's when absent). With a tool that answers while the attack
 * is past its own deadline, the neighbours need a thread while it would be stuck (issue 32).
 */
export async function withNeighbours(
  sb: Sandbox,
  attack: () => Promise<ExecuteResult>,
  { answerMs = 150, timeoutMs, settleMs = 0 }: { answerMs?: number; timeoutMs?: number; settleMs?: number } = {},
): Promise<ExecuteResult> {
  const host = (n: number): ExecuteHost => ({
    callTool: (name, input) => new Promise((resolve) => setTimeout(() => resolve({ name, n, input }), answerMs)),
  })
  const neighbours = [1, 2].map((n) => sb.execute(script(n), host(n), timeoutMs === undefined ? undefined : { timeoutMs }))
  if (settleMs > 0) await new Promise((r) => setTimeout(r, settleMs))
  const result = await attack()
  const [a, b] = await Promise.all(neighbours)
  expect(a).toMatchObject({ status: 'ok', result: [1, 1] })
  expect(b).toMatchObject({ status: 'ok', result: [2, 2] })
  return result
}
