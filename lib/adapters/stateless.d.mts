// Types of `@codecall/native/stateless` (hand-written; checked by `tsc` in the tests).
import type { CodeCall, CodeCallHost } from '../../index.js'

/** The first protocol revision of the stateless era. */
export declare const MODERN_VERSION: '2026-07-28'

/** One form elicitation a client answers before it retries (`inputRequests[callId]`). */
export interface ApprovalInputRequest {
  method: 'elicitation/create'
  params: { mode: 'form'; message: string; requestedSchema: { type: 'object'; properties: Record<string, unknown> } }
}

export type RoundResult =
  | { resultType: 'complete'; result: unknown }
  | { resultType: 'input_required'; inputRequests: Record<string, ApprovalInputRequest>; requestState: string }

export interface RoundRequest {
  /** The `requestState` the client echoed (absent on a first request). */
  requestState?: unknown
  /** The client's answers, keyed as `inputRequests` were (`{ action, content? }` each). */
  inputResponses?: Record<string, unknown> | null
  /** Who asks (e.g. a digest of the HTTP auth); a state issued to one is refused to another. */
  principal?: string | null
  /** The client of this request can answer a form elicitation; else `approval.whenUnavailable`. */
  canElicit?: boolean | null
  /** Aborting it (the request's stream closed) ends the execution while this request carries it. */
  signal?: AbortSignal | null
}

/**
 * Approvals across requests (api.md §12) for hosts with their own wiring: `handle` runs one
 * meta-tool call like `codecall.handle(name, args, host)`; a call that needs a person ends it with
 * `input_required` and a sealed `requestState`, and the retry continues the same execution.
 */
export declare class ApprovalRounds {
  /**
   * `stateKey`: seals `requestState` (at least 16 bytes; else the engine's own `stateKey`; else `CODECALL_STATE_KEY`; else random
   * per process). `approvalTimeoutMs`: the engine's `approval.timeoutMs` when not 120 000.
   */
  constructor(codecall: CodeCall, options?: { stateKey?: string | Uint8Array | null; approvalTimeoutMs?: number | null } | null)
  readonly waiting: number
  /** Rejects with `ERR_INVALID_ARG` for a forged, altered, expired, foreign or used state (nothing runs). */
  handle(name: string, args: unknown, host: CodeCallHost, request?: RoundRequest | null): Promise<RoundResult>
  close(): void
}

/** The era, capabilities and log level a request declared, or null for a 2025-era request. */
export declare function modernRequest(
  ctx: unknown,
  request?: unknown,
): { protocolVersion: string; capabilities: Record<string, any>; logLevel: string | null } | null
/** The capabilities declare form elicitation (`elicitation: {}` or `{ form }`). */
export declare function canElicitForm(capabilities: unknown): boolean
/** An opaque principal from SDK `AuthInfo` (client id, else token), or null. */
export declare function principalOf(authInfo: unknown): string | null
