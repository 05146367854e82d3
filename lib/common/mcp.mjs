// What the gateway and the framework adapters share on the MCP side: how one meta-tool call's
// events become notifications to its client (`RequestScope`), how a meta-tool's result becomes a
// `CallToolResult`, and how a tool's `CallToolResult` reads to a script. Knows no transport and
// no framework.

/** MCP logging levels, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']
/** MCP logging levels for the sandbox's `mcpLog` levels. */
const SCRIPT_LEVELS = { debug: 'debug', info: 'info', notice: 'notice', warn: 'warning', warning: 'warning', error: 'error' }

/** Seed 004's `call_tool` and the engine share one reading of a `CallToolResult` (api.md §5). */
export function unwrapResult(result) {
  if (result === null || typeof result !== 'object' || !Array.isArray(result.content)) return { ok: true, value: result }
  const texts = result.content.filter((c) => c && c.type === 'text' && typeof c.text === 'string').map((c) => c.text)
  if (result.isError === true) return { ok: false, message: texts.join('\n') || 'The tool reported an error', details: result.structuredContent }
  if (result.structuredContent !== undefined) return { ok: true, value: result.structuredContent }
  if (result.content.length === 1 && texts.length === 1) {
    try {
      return { ok: true, value: JSON.parse(texts[0]) }
    } catch {
      return { ok: true, value: texts[0] }
    }
  }
  return { ok: true, value: result.content }
}

/**
 * What one meta-tool call from the MCP client carries: where its notifications go, its progress
 * token, and the servers it reached. Aborted when the call ends, so nothing it started upstream
 * outlives it (a script that timed out cancels its pending upstream requests).
 */
export class RequestScope {
  /**
   * @param {{ sessionId?: string | null, sendNotification?: (n: any) => Promise<void>,
   *           progressToken?: string | number | (() => string | number | undefined), logLevel?: () => string | null, signal?: AbortSignal,
   *           elicit?: (params: any, options: { signal?: AbortSignal, timeout?: number }) => Promise<any>,
   *           canElicit?: () => boolean,
   *           approve?: (request: any) => Promise<'approve' | 'approve_always' | 'decline'> }} [options]
   *   `elicit`: `elicitation/create` on this request's own client session (§9); `canElicit`: that
   *   client declared the capability; `approve`: asks some other way (`codecall exec`'s terminal).
   */
  constructor(options) {
    options ??= {}
    this.sessionId = options.sessionId ?? null
    this.sendNotification = options.sendNotification
    this.progressToken = options.progressToken
    this.logLevel = options.logLevel ?? (() => 'debug')
    this.controller = new AbortController()
    this.signal = options.signal ? AbortSignal.any([options.signal, this.controller.signal]) : this.controller.signal
    this.servers = new Set()
    this.progress = 0
    this.pending = new Set()
    this.nextCall = 0
    /** §9: people asked about a call, and how many of those did not approve it (audit). */
    this.approvals = 0
    this.declined = 0
    this.elicit = options.elicit
    this.canElicit = options.canElicit ?? (() => false)
    this.approve = options.approve
    /**
     * §12: the execution's host through its run journal (a run that may wait for a person, with
     * a run store), and whether this run was resumed from the store.
     * @type {((host: any) => any) | undefined}
     */
    this.journal = undefined
    this.resumed = false
    /** @type {() => boolean} this run's copy here was let go: another process continues it. */
    this.handedOver = () => false
  }

  notify(notification) {
    const send = this.sendNotification
    if (!send) return
    const sent = Promise.resolve()
      .then(() => send(notification))
      .catch(() => {})
    this.pending.add(sent)
    sent.finally(() => this.pending.delete(sent))
  }

  log(level, logger, data) {
    // §12: a modern request that set no logLevel gets no log messages (null).
    const floor = this.logLevel()
    if (floor === null) return
    const min = LOG_LEVELS.indexOf(floor)
    if (LOG_LEVELS.indexOf(level) < min) return
    this.notify({ method: 'notifications/message', params: { level, logger, data } })
  }

  /** One step of `notifications/progress` (only when the client asked for progress). */
  step(message, total) {
    const token = typeof this.progressToken === 'function' ? this.progressToken() : this.progressToken
    if (token === undefined || token === null) return
    this.progress += 1
    const params = { progressToken: token, progress: this.progress, message }
    if (total !== undefined) params.total = total
    this.notify({ method: 'notifications/progress', params })
  }

  /** A sandbox event (api.md §2.5) as MCP notifications. */
  event(event) {
    if (event.type === 'tool_call_start' || event.type === 'tool_call_end') {
      const done = event.type === 'tool_call_end'
      // Every call is a debug line (a client asks for them with logging/setLevel 'debug'); a failed
      // call is a warning. Progress, with the client's token, counts finished calls either way.
      this.log(done && event.status === 'error' ? 'warning' : 'debug', 'codecall', event)
      if (done) this.step(`${event.toolName} ${event.status} in ${Number(event.durationMs).toFixed(1)} ms`)
    } else if (event.type === 'log') {
      this.log(SCRIPT_LEVELS[event.level] ?? 'info', 'script', { message: event.message, metadata: event.metadata })
    } else if (event.type === 'notify') {
      this.log('info', 'script', { event: event.event, payload: event.payload })
    } else if (event.type === 'approval') {
      if (event.decision !== 'unavailable') this.approvals += 1
      if (event.decision === 'decline' || event.decision === 'timeout') this.declined += 1
      this.log(event.decision.startsWith('approve') ? 'info' : 'notice', 'codecall', event)
    }
  }

  /** Resolves once every notification of this call is written, a little before its response. */
  async flushed() {
    await Promise.all(this.pending)
    // The SDK client (1.x) handles a notification a microtask after reading it but a response at
    // once: progress read in the same chunk as the response would be dropped as "unknown token".
    if (this.progress > 0) await new Promise((resolve) => setTimeout(resolve, 5))
  }

  end() {
    this.controller.abort()
  }
}

/** §9: the most of a call's input a person is shown, in UTF-8 bytes. */
export const SHOWN_INPUT_BYTES = 2048

/** A call's input as a person is shown it: JSON, cut at 2 048 UTF-8 bytes and marked `… (cut)`. */
export function shownInput(input) {
  let json
  try {
    json = JSON.stringify(input, null, 2) ?? 'undefined'
  } catch {
    json = String(input)
  }
  const bytes = Buffer.from(json, 'utf8')
  if (bytes.length <= SHOWN_INPUT_BYTES) return json
  // Back off to a character boundary: UTF-8 continuation bytes are 10xxxxxx.
  let end = SHOWN_INPUT_BYTES
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1
  return `${bytes.subarray(0, end).toString('utf8')}… (cut)`
}

/** The one question a person is asked (form mode): an optional `always` box. */
export const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    always: { type: 'boolean', title: 'Always allow', description: 'Allow this tool for the rest of this run', default: false },
  },
}

const REASONS = {
  destructive: 'it may change or delete data (MCP annotations)',
  writes: 'it is not read-only',
  all: 'every tool call needs approval here',
  ask: 'the approval policy asks for this tool',
}

/** How much longer an approval's elicitation request may live than the approval's own timeout. */
const ELICIT_GRACE_MS = 100

/**
 * What a person is asked about one call (§9): the tool (and its server, in the gateway), why, and
 * its input cut at 2 KB.
 * @param {{ toolName: string, input: unknown, reason: string }} request
 * @param {{ server?: string, tool?: string }} [how]
 */
export function approvalMessage(request, how) {
  const what = how?.server ? `the tool '${how.tool}' of the MCP server '${how.server}'` : `the tool '${request.toolName}'`
  return `A code-mode script wants to call ${what}: ${REASONS[request.reason] ?? request.reason}. Allow it?\n\nInput:\n${shownInput(request.input)}`
}

/**
 * `CodeCallHost.approve` over MCP elicitation (§9): asks the person behind the requesting client
 * with `elicitation/create` in form mode. `elicit(params)` sends it on that client's session;
 * `accept` → approve (or approve_always with `always`), `decline` / `cancel` → decline.
 * The request is cancelled (`notifications/cancelled`, by the SDK) when `timeout` (plus
 * `ELICIT_GRACE_MS`) passes or
 * `signal` aborts while it is open — once: a settled ask no longer listens to `signal`.
 * @param {(params: any, options: { signal: AbortSignal, timeout: number }) => Promise<{ action: string, content?: Record<string, unknown> }>} elicit
 * @param {{ toolName: string, input: unknown, reason: string }} request
 * @param {{ signal?: AbortSignal, timeout: number, server?: string, tool?: string }} how `server` / `tool`: how to name the tool (the gateway)
 * @returns {Promise<'approve' | 'approve_always' | 'decline'>}
 */
export async function approveByElicitation(elicit, request, how) {
  const message = approvalMessage(request, how)
  const ask = new AbortController()
  const stop = () => ask.abort(how.signal?.reason)
  how.signal?.addEventListener('abort', stop, { once: true })
  let result
  try {
    // The engine's own approval timer (the same timeoutMs) decides "approval timed out"; the request
    // outlives it by a moment, then the SDK cancels it at the client. With equal timers, a busy
    // event loop could let the request's timeout win and the answer read "approve() threw".
    result = await elicit({ mode: 'form', message, requestedSchema: APPROVAL_SCHEMA }, { signal: ask.signal, timeout: how.timeout + ELICIT_GRACE_MS })
  } finally {
    how.signal?.removeEventListener('abort', stop)
  }
  if (result?.action === 'accept') return result.content?.always === true ? 'approve_always' : 'approve'
  return 'decline'
}

/**
 * `fn`, one run at a time: a call while a run is under way asks for one more run after it (one,
 * however many calls), so the last run starts after the last call and reads the newest state.
 * Returns the run in flight; `run.pending()` is it too (null when idle).
 * @param {() => Promise<void>} fn
 */
export function coalesced(fn) {
  /** @type {Promise<void> | null} */
  let running = null
  let again = false
  const run = () => {
    if (running) {
      again = true
      return running
    }
    running = (async () => {
      do {
        again = false
        await fn()
      } while (again)
    })().finally(() => {
      running = null
    })
    return running
  }
  run.pending = () => running
  return run
}

/**
 * Replaces a CodeCall's tools; if the batch is refused (one malformed tool makes `setTools` change
 * nothing), indexes the tools one by one and reports each one refused — one bad tool must not
 * hide the others. Runs `hold(fn)` around the one-by-one pass so its changes can be told once.
 * @param {any} codecall @param {any[]} defs @param {(name: string, message: string) => void} report
 * @param {(fn: () => void) => void} [hold]
 */
export function indexTools(codecall, defs, report, hold = (fn) => fn()) {
  try {
    codecall.setTools(defs)
    return
  } catch {
    // One by one, below.
  }
  hold(() => {
    codecall.setTools([])
    for (const def of defs) {
      try {
        codecall.upsertTools([def])
      } catch (e) {
        report(def.name, e?.message ?? String(e))
      }
    }
  })
}

/** A meta-tool's answer (search, describe, an ExecuteResult, ...) as an MCP `CallToolResult`. */
export function metaToolResult(result) {
  const failed = result !== null && typeof result === 'object' && result.status !== undefined && result.status !== 'ok'
  /** @type {{ content: { type: 'text', text: string }[], isError: boolean, structuredContent?: Record<string, unknown> }} */
  const out = { content: [{ type: 'text', text: JSON.stringify(result) ?? 'null' }], isError: failed }
  if (result !== null && typeof result === 'object' && !Array.isArray(result)) out.structuredContent = result
  return out
}

/**
 * Malformed meta-tool arguments (ERR_INVALID_ARG) as a result the model can read and fix: shaped
 * as a failed result of the meta-tools is (`{ status, error: { code, message } }`, invoke's error
 * form), in `structuredContent` and as its JSON text, so a client that reads either gets it.
 */
export function invalidArgumentsResult(e) {
  const code = typeof e?.code === 'string' && e.code !== '' ? e.code : 'ERROR'
  const message = typeof e?.message === 'string' ? e.message : String(e)
  /** @type {{ code: string, message: string, location?: unknown }} */
  const error = { code, message }
  // §11: a save the validator refuses rejects with its code and where in the script (line, column).
  if (e?.location !== undefined && e.location !== null) error.location = e.location
  return metaToolResult({ status: 'error', error })
}

/**
 * A `tools/call` of a tool this server does not have: a JSON-RPC error, code -32602 (invalid
 * params), that the SDK sends as it is. Not an SDK `McpError`: that one puts "MCP error -32602: "
 * into its own message, and the client's SDK adds it again on reading the reply.
 * @param {string} name @param {string} [more] said after the name
 */
export function unknownTool(name, more = '') {
  const e = new Error(`Unknown tool: ${name}${more}`)
  // @ts-ignore — the SDK reads a numeric `code` off any thrown error.
  e.code = -32602
  return e
}
