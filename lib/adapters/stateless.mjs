// `@codecall/native/stateless`: approvals across requests (MCP 2026-07-28, api.md §12) for hosts
// with their own wiring — a server of their own, or no MCP SDK at all. The gateway and the SDK
// adapter do the same with the same parts (lib/common/modern.mjs).
//
//   const rounds = new ApprovalRounds(codecall, { stateKey })
//   const out = await rounds.handle(name, args, host, { requestState, inputResponses, principal, canElicit })
//   if (out.resultType === 'input_required') return out   // { resultType, inputRequests, requestState }
//   return out.result                                     // what codecall.handle() answered
//
// A call that reaches a tool needing approval ends with `input_required` (one form elicitation per
// waiting call, keyed by its callId) and a sealed `requestState`; the retry — the same name and
// arguments, the client's `inputResponses` and that state — continues the same execution, which
// waited in this process meanwhile. Each request brings its own `host`: a resumed run's tool calls
// and events go to the host of the request that carries it now. With a run store (the engine's
// `runs` option), the wait outlives the process: another one with the same key and store resumes
// it by replay.
import { ParkedRuns, stateKey as resolveKey } from '../common/modern.mjs'
import { ENGINE_RUNS, ENGINE_STATE_KEY, invalidArg } from './core.mjs'

export { modernRequest, canElicitForm, principalOf, MODERN_VERSION } from '../common/modern.mjs'

export class ApprovalRounds {
  /**
   * @param {any} codecall a `CodeCall`
   * @param {{ stateKey?: string | Uint8Array | null, approvalTimeoutMs?: number | null }} [options]
   *   `approvalTimeoutMs`: the engine's `approval.timeoutMs` when it is not the default (120 000);
   *   a state lives that long plus 30 s.
   */
  constructor(codecall, options) {
    if (codecall === null || typeof codecall !== 'object' || typeof codecall.handle !== 'function') {
      throw invalidArg('new ApprovalRounds(codecall): codecall must be a CodeCall')
    }
    options ??= {}
    if (typeof options !== 'object') throw invalidArg('new ApprovalRounds(codecall, options): options must be an object')
    const timeoutMs = options.approvalTimeoutMs ?? 120_000
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 86_400_000) {
      throw invalidArg(`options.approvalTimeoutMs must be a whole number of milliseconds from 1 to 86400000 (got ${timeoutMs})`)
    }
    this.codecall = codecall
    // A tool is shown by its own name (no '<server>:' reading, as the gateway's).
    // The option, else the engine's own `stateKey`, else CODECALL_STATE_KEY, else random.
    const key = options.stateKey ?? codecall[ENGINE_STATE_KEY]
    // §12: the engine's run store (CodeCallOptions.runs), if it has one.
    const store = codecall[ENGINE_RUNS] ?? null
    this.runs = new ParkedRuns({ key: resolveKey(key, process.env, 'options.stateKey').key, timeoutMs, names: () => ({}), store })
  }

  /** Executions waiting for a person now. */
  get waiting() {
    return this.runs.size
  }

  /**
   * One meta-tool call (as `codecall.handle(name, args, host)`), which may wait across requests.
   * `request.canElicit`: the client of this request can answer a form elicitation (else approvals
   * get `whenUnavailable`); `principal`: who is asking (a state issued to one is refused to
   * another; null: anyone of this process). Rejects with `ERR_INVALID_ARG` for a refused state
   * (nothing runs), and with what `codecall.handle` rejects with.
   * @param {string} name @param {unknown} args @param {any} host
   * @param {{ requestState?: unknown, inputResponses?: Record<string, unknown> | null, principal?: string | null,
   *           canElicit?: boolean | null, signal?: AbortSignal | null }} [request]
   * @returns {Promise<{ resultType: 'complete', result: any } | { resultType: 'input_required', inputRequests: Record<string, any>, requestState: string }>}
   */
  async handle(name, args, host, request) {
    request ??= {}
    if (host === null || typeof host !== 'object' || typeof host.callTool !== 'function') {
      throw invalidArg('ApprovalRounds.handle(name, args, host): host must have a callTool function')
    }
    const canElicit = request.canElicit === true
    const out = await this.runs.call({
      tool: name,
      args: args ?? {},
      principal: request.principal ?? null,
      requestState: request.requestState,
      inputResponses: request.inputResponses ?? undefined,
      attach: { host, logLevel: null, signal: request.signal ?? undefined },
      start: (run) => {
        const now = () => run.attached().host
        /** @type {any} */
        const proxy = {
          ...host,
          sessionId: host.sessionId ?? request.principal ?? null,
          signal: run.signal,
          callTool: (/** @type {any[]} */ ...a) => now().callTool(...a),
          onEvent: (/** @type {any} */ e) => now().onEvent?.(e),
        }
        if (canElicit) proxy.approve = run.approve
        else delete proxy.approve
        return this.codecall.handle(name, args ?? {}, run.journal(proxy))
      },
    })
    if ('inputRequired' in out) return { resultType: 'input_required', ...out.inputRequired }
    return { resultType: 'complete', result: out.result }
  }

  /** Ends every waiting execution (aborted); states issued before are refused from now on. */
  close() {
    this.runs.close()
  }
}
