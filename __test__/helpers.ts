import { execFileSync } from 'node:child_process'
import { expect } from 'vitest'

/** Asserts that `call` throws the caller-mistake error of the contract: a `TypeError` whose
 *  `code` is `ERR_INVALID_ARG` and whose message names the argument. */
export function expectInvalidArg(call: () => unknown, message?: RegExp) {
  let thrown: unknown
  try {
    call()
  } catch (e) {
    thrown = e
  }
  expect(thrown).toBeInstanceOf(TypeError)
  expect((thrown as { code?: string }).code).toBe('ERR_INVALID_ARG')
  if (message) expect((thrown as Error).message).toMatch(message)
}

/**
 * Runs a churn fixture (`__test__/fixtures/*-churn.mjs`) in a child `node --expose-gc` and parses
 * the JSON it prints last: what its process held before and after.
 */
export function runChurn<T>(fixture: string, ...args: string[]): T {
  const out = execFileSync(process.execPath, ['--expose-gc', fixture, ...args], {
    encoding: 'utf8',
    timeout: 240_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return JSON.parse(out.trim().split('\n').pop() ?? '{}')
}
