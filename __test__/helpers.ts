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
