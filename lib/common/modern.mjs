// The stateless era (MCP 2026-07-28, api.md §12), shared by the gateway and the adapters: which
// era a request is in and what it declared, the sealed `requestState`, and approvals across
// requests — an execution that reaches a call needing a person's answer ends its request with
// `input_required`, waits parked in this process, and goes on when the client retries with the
// answers. Knows no transport and no framework: a request comes in as `{ tool, args, principal,
// requestState, inputResponses, ... }` and leaves as a result or an `input_required`.
//
// A run is held in memory by the `ParkedRuns` that started it — the fast path — and, with a run
// store, kept there too as a journal of what its script saw (`journal.mjs`), keyed by the run id
// that the sealed state names: another process with the same key and store resumes it by replay.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { freshStart, JOURNAL_VERSION, MAX_JOURNAL_BYTES, notResumed, parseJournal, Recorder } from './journal.mjs'
import { APPROVAL_SCHEMA, approvalMessage, LOG_LEVELS } from './mcp.mjs'
import { withRunContext } from './otel.mjs'

/** The first protocol revision of the modern era. */
export const MODERN_VERSION = '2026-07-28'
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion'
const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities'
const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel'

/**
 * What a modern request carries about its client (its `_meta` envelope), or null for a legacy
 * request. Reads SDK 2.x's lifted envelope (`ctx.mcpReq.envelope`) or, failing that, the raw
 * `_meta` of the request.
 * @param {any} ctx the handler's context (SDK 2.x `ctx`), may be undefined
 * @param {any} [request] the JSON-RPC request, may be undefined
 * @returns {{ protocolVersion: string, capabilities: Record<string, any>, logLevel: string | null } | null}
 */
export function modernRequest(ctx, request) {
  // SDK 2.x lifts the envelope out of `_meta` keyed as on the wire (`ctx.mcpReq.envelope` has the
  // full `io.modelcontextprotocol/...` names; `ctx.mcpReq._meta` no longer has them).
  const envelope = ctx?.mcpReq?.envelope
  const meta = request?.params?._meta
  const version = envelope?.[PROTOCOL_VERSION_KEY] ?? meta?.[PROTOCOL_VERSION_KEY]
  if (typeof version !== 'string' || version < MODERN_VERSION) return null
  const capabilities = envelope?.[CAPABILITIES_KEY] ?? meta?.[CAPABILITIES_KEY]
  const level = envelope?.[LOG_LEVEL_KEY] ?? meta?.[LOG_LEVEL_KEY]
  return {
    protocolVersion: version,
    capabilities: capabilities !== null && typeof capabilities === 'object' ? capabilities : {},
    logLevel: LOG_LEVELS.includes(level) ? level : null,
  }
}

/** A modern request's client can answer a form elicitation (`elicitation: {}` or `{ form }`). */
export function canElicitForm(capabilities) {
  const e = capabilities?.elicitation
  if (e === null || typeof e !== 'object') return false
  // `{}` means form (the spec's default); `{ url }` alone does not.
  return Object.keys(e).length === 0 || (e.form !== undefined && e.form !== null)
}

/**
 * The principal of an HTTP request, from its validated auth (SDK `AuthInfo`), as an opaque
 * digest: the same client id, or the same token, is the same principal. Null without auth.
 * @param {any} authInfo
 */
export function principalOf(authInfo) {
  if (authInfo === null || typeof authInfo !== 'object') return null
  const who = typeof authInfo.clientId === 'string' && authInfo.clientId ? `client:${authInfo.clientId}` : typeof authInfo.token === 'string' && authInfo.token ? `token:${authInfo.token}` : null
  return who === null ? null : `p-${createHash('sha256').update(who).digest('hex').slice(0, 32)}`
}

/** A `TypeError` with `code: 'ERR_INVALID_ARG'`. */
function invalidArg(message) {
  const e = new TypeError(message)
  // @ts-ignore — a code on a TypeError, as Node's own errors have.
  e.code = 'ERR_INVALID_ARG'
  return e
}

/** The fewest bytes a configured state key may have. */
export const MIN_STATE_KEY_BYTES = 16

/**
 * The key that seals `requestState`: the option (a string or bytes, at least 16 bytes), else
 * `CODECALL_STATE_KEY`, else a random key of this process (only this process can resume then).
 * @param {unknown} option @param {NodeJS.ProcessEnv} [env] @param {string} [name] how to name the option in errors
 * @returns {{ key: Buffer, configured: boolean }}
 */
export function stateKey(option, env = process.env, name = 'stateKey') {
  let source = option
  let what = name
  if (source === undefined || source === null) {
    source = env.CODECALL_STATE_KEY
    what = 'CODECALL_STATE_KEY'
    if (source === undefined || source === '') return { key: randomBytes(32), configured: false }
  }
  let key
  if (typeof source === 'string') key = Buffer.from(source, 'utf8')
  else if (source instanceof Uint8Array) key = Buffer.from(source)
  else throw invalidArg(`${what} must be a string or bytes (got ${typeof source})`)
  if (key.length < MIN_STATE_KEY_BYTES) throw invalidArg(`${what} must be at least ${MIN_STATE_KEY_BYTES} bytes (got ${key.length}); use e.g. 32 random bytes, hex`)
  return { key, configured: true }
}

/** JSON with sorted keys: the same arguments give the same digest whatever their key order. */
function canonical(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  return `{${Object.keys(value)
    .sort()
    .filter((k) => value[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
    .join(',')}}`
}

/** SHA-256 (base64url, 22 chars: 128 bits) of a call's arguments. */
export function argsDigest(args) {
  return createHash('sha256').update(canonical(args ?? {})).digest('base64url').slice(0, 22)
}

const STATE_PREFIX = 'cc1.'
const STATE_DOMAIN = 'codecall.requestState.v1:'
/** The longest `requestState` read (a sealed one is ~250 bytes). */
const MAX_STATE_CHARS = 4096

/**
 * `requestState` sealed with HMAC-SHA256: `cc1.<payload, base64url JSON>.<tag>`. The payload
 * holds a run handle and what it is bound to — never anything a tool returned.
 */
export class StateSeal {
  /** @param {Buffer} key */
  constructor(key) {
    this.key = key
  }

  #tag(body) {
    return createHmac('sha256', this.key).update(STATE_DOMAIN).update(body).digest('base64url')
  }

  /** @param {Record<string, unknown>} payload */
  seal(payload) {
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')
    return `${STATE_PREFIX}${body}.${this.#tag(body)}`
  }

  /**
   * The payload of a state this key sealed; throws `ERR_INVALID_ARG` for anything else.
   * @param {unknown} state @returns {any}
   */
  open(state) {
    if (typeof state !== 'string' || state.length > MAX_STATE_CHARS || !state.startsWith(STATE_PREFIX)) {
      throw invalidArg('requestState refused: not a state this server issued')
    }
    const rest = state.slice(STATE_PREFIX.length)
    const dot = rest.indexOf('.')
    const body = dot < 0 ? '' : rest.slice(0, dot)
    const given = Buffer.from(dot < 0 ? '' : rest.slice(dot + 1), 'base64url')
    const want = Buffer.from(this.#tag(body), 'base64url')
    if (body === '' || given.length !== want.length || !timingSafeEqual(given, want)) {
      throw invalidArg('requestState refused: forged or altered (its seal does not match)')
    }
    try {
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
      if (payload !== null && typeof payload === 'object') return payload
    } catch {
      // Below.
    }
    throw invalidArg('requestState refused: unreadable')
  }
}

/** A run's answers are read this much after the wait's own bound (network, a slow client). */
const EXPIRY_GRACE_MS = 30_000
/** The most runs parked at once; more runs that need a person get `whenUnavailable`'s answer. */
const MAX_PARKED = 1000

/** A settled-once promise with its resolve. */
function deferred() {
  /** @type {(v: any) => void} */
  let resolve = () => {}
  const promise = new Promise((r) => (resolve = r))
  return { promise, resolve }
}

/** What an elicitation answer means for an approval (§9): accept → approve (always), else decline. */
function decisionOf(response) {
  if (response === null || typeof response !== 'object') return null
  if (response.action === 'accept') return response.content?.always === true ? 'approve_always' : 'approve'
  if (response.action === 'decline' || response.action === 'cancel') return 'decline'
  return null
}

/**
 * One execution that may wait across requests. While a request is attached, its notifications go
 * to that request and its signal aborts the run; parked, nothing is sent and nothing aborts it
 * but its expiry.
 */
class Run {
  /** @param {string} id @param {{ tool: string, digest: string, principal: string | null }} binding */
  constructor(id, binding) {
    this.id = id
    this.binding = binding
    /** The state round a retry must present; each retry spends it. */
    this.round = 0
    this.controller = new AbortController()
    this.signal = this.controller.signal
    /** @type {{ callId: string, request: any, answer: (d: string) => void }[]} asks waiting for the client */
    this.asks = []
    /** @type {{ send?: (n: any) => unknown, progressToken?: string | number, logLevel: string | null, signal?: AbortSignal } | null} */
    this.current = null
    /** The request attached last (kept while parked), as the caller gave it. */
    this.last = null
    this.stopListening = () => {}
    this.wake = deferred()
    /** @type {{ ok: boolean, value: any } | null} */
    this.outcome = null
    this.expiry = null
    this.nextKey = 0
    /** @type {Recorder | null} the journal, with a run store */
    this.recorder = null
    /** A journal of this run is in the store now (its row must go when the run ends). */
    this.stored = false
    /** Resumed from the store: the approvals it waited for, answered by the retry that resumed it. */
    /** @type {{ tool: string | null, decision: string | null }[]} */
    this.pending = []
    /** The first execution's span context (OpenTelemetry), linked from a resumed one. */
    this.trace = undefined
    this.startedAt = 0
    /** Dropped here because another process continues it (or will: its journal stays in the store). */
    this.handedOver = false
  }

  attach(request) {
    this.current = request
    this.last = request
    if (this.expiry) clearTimeout(this.expiry)
    this.expiry = null
    const signal = request.signal
    if (signal) {
      const abort = () => this.controller.abort(signal.reason)
      if (signal.aborted) abort()
      else {
        signal.addEventListener('abort', abort, { once: true })
        this.stopListening = () => signal.removeEventListener('abort', abort)
      }
    }
  }

  detach() {
    this.stopListening()
    this.stopListening = () => {}
    this.current = null
  }

  /**
   * Sends a notification to the attached request (dropped while parked).
   * @returns {Promise<void>}
   */
  send(notification) {
    const send = this.current?.send
    return send ? Promise.resolve(send(notification)).then(() => {}) : Promise.resolve()
  }

  /** The wait until the run ends or asks a person. */
  next() {
    return this.outcome || this.asks.length ? Promise.resolve() : this.wake.promise
  }

  poke() {
    const wake = this.wake
    this.wake = deferred()
    wake.resolve(undefined)
  }
}

/**
 * Approvals across requests (§12): runs parked in this process, keyed by unguessable ids that
 * only a sealed `requestState` names.
 */
export class ParkedRuns {
  /**
   * @param {{ key: Buffer, timeoutMs?: number, graceMs?: number, log?: (line: string) => void, now?: () => number,
   *           names?: (toolName: string) => { server?: string, tool?: string }, store?: any, warn?: (line: string) => void }} options
   *   `timeoutMs`: the approval wait's bound (§9 `approval.timeoutMs`), which a state outlives by
   *   `graceMs` (default 30 s).
   */
  constructor(options) {
    this.seal = new StateSeal(options.key)
    this.timeoutMs = options.timeoutMs ?? 120_000
    this.graceMs = options.graceMs ?? EXPIRY_GRACE_MS
    this.log = options.log ?? (() => {})
    /** How a person is shown a tool's name: `<server>:<tool>` as the gateway's (default). */
    this.names = options.names ?? nameParts
    this.now = options.now ?? Date.now
    /** @type {Map<string, Run>} */
    this.runs = new Map()
    this.closed = false
    /** §12: where waiting runs are kept for other processes (a `RunStore`), or null; a function: opened on first use. */
    this.storeOption = options.store ?? null
    this.warn = options.warn ?? this.log
  }

  /** The run store, opened on first use; null without one. */
  get store() {
    if (typeof this.storeOption === 'function') {
      try {
        this.storeOption = this.storeOption()
      } catch (e) {
        // Tried again by the next request; this one fails cleanly, before anything runs.
        throw storeFailed('open', e)
      }
    }
    return this.storeOption
  }

  /** Runs parked now. */
  get size() {
    return this.runs.size
  }

  /**
   * One meta-tool call of a modern request. Without `requestState` it starts the call with
   * `start(run)`, where `run.approve` asks through this request and `run.send` / `run.signal`
   * follow whichever request is attached; with one, it continues the run the state names. Resolves
   * to the call's result, or to `{ inputRequired: { inputRequests, requestState } }` when the run
   * waits for a person. Rejects with `ERR_INVALID_ARG` for a state it refuses (nothing runs then).
   * @param {{ tool: string, args: unknown, principal: string | null, requestState?: unknown,
   *           inputResponses?: Record<string, unknown>, attach: { send?: (n: any) => unknown, [more: string]: any,
   *           progressToken?: string | number, logLevel: string | null, signal?: AbortSignal },
   *           start: (run: { approve: (r: any) => Promise<'approve' | 'approve_always' | 'decline'>, send: (n: any) => Promise<void>,
   *                          signal: AbortSignal, progressToken: () => string | number | undefined,
   *                          logLevel: () => string | null, attached: () => any, journal: (host: any) => any, resumed: boolean,
   *                          handedOver: () => boolean }) => Promise<any> }} call
   *   `attached()`: the `attach` object of the request attached now (else of the last one);
   *   `journal(host)`: the host to run with (through the run's journal with a run store);
   *   `resumed`: the run was resumed from the run store (replayed, then live); `handedOver()`: this
   *   copy was let go because another process continues the run (its end is not the run's: no audit).
   * @returns {Promise<{ result: any } | { inputRequired: { inputRequests: Record<string, any>, requestState: string } }>}
   */
  async call(call) {
    if (this.closed) throw invalidArg('the server is closing: requestState can no longer be resumed')
    const digest = argsDigest(call.args)
    let run
    if (call.requestState !== undefined && call.requestState !== null) {
      run = await this.#resume(call, digest)
      if (!run.recorder || run.pending.length === 0) this.#answer(run, call.inputResponses)
      if (!this.runs.has(run.id)) {
        // Resumed from the store: the script runs again against its journal.
        this.runs.set(run.id, run)
        run.attach(call.attach)
        this.#launch(run, call, true)
      } else {
        run.attach(call.attach)
      }
    } else {
      run = new Run(`run-${randomBytes(16).toString('hex')}`, { tool: call.tool, digest, principal: call.principal })
      if (this.store) {
        const start = freshStart(this.now())
        run.recorder = new Recorder({ ...start, abort: (e) => run.controller.abort(e) })
      }
      run.startedAt = this.now()
      run.attach(call.attach)
      this.runs.set(run.id, run)
      this.#launch(run, call, false)
    }
    try {
      await run.next()
      // A journal is stored only once no live call is unanswered: a resumed run never calls a
      // tool the first process had called.
      while (run.recorder && !run.outcome && run.recorder.inFlight > 0) {
        await Promise.race([run.recorder.idle(), run.wake.promise])
      }
    } finally {
      run.detach()
    }
    if (run.outcome) {
      this.#end(run)
      if (!run.outcome.ok) throw run.outcome.value
      return { result: run.outcome.value }
    }
    return { inputRequired: await this.#park(run) }
  }

  /** Starts (or, resumed, starts again) a run's execution; its outcome ends the run. */
  #launch(run, call, resumed) {
    const recorder = run.recorder
    const view = {
      approve: (/** @type {any} */ request) => this.#ask(run, request),
      send: (/** @type {any} */ n) => (recorder?.replaying ? Promise.resolve() : run.send(n)),
      signal: run.signal,
      progressToken: () => run.current?.progressToken,
      logLevel: () => run.current?.logLevel ?? null,
      // The request attached now, else the one attached last: a host reaches tools through the
      // request that carries the run now (its context, its server), not the one that started it.
      attached: () => run.current ?? run.last,
      // §12: the execution's host, through the run's journal when there is a run store.
      journal: (/** @type {any} */ host) => (recorder ? recorder.wrap(host) : host),
      resumed,
      // This copy was let go because another process continues the run: its end is not the run's.
      handedOver: () => run.handedOver,
    }
    let started
    try {
      const trace = { link: resumed ? run.trace : undefined, sink: (/** @type {any} */ sc) => (run.trace ??= sc) }
      started = Promise.resolve(recorder ? withRunContext(trace, () => call.start(view)) : call.start(view))
    } catch (e) {
      started = Promise.reject(e)
    }
    const settle = (/** @type {{ ok: boolean, value: any }} */ outcome) => {
      // A replay that asked for something else than its journal holds, or ended before it used it
      // all: the run could not be resumed (nothing ran twice: replayed calls reach no tool).
      if (recorder?.diverged) outcome = { ok: false, value: recorder.diverged }
      else if (recorder && resumed && !recorder.caughtUp) outcome = { ok: false, value: notResumed('the script ended before it reached the point where it waited') }
      run.outcome = outcome
      // An ask still open when the run ended was given up by the engine (approval timed out).
      for (const ask of run.asks) ask.answer('decline')
      run.asks = []
      run.poke()
    }
    started.then(
      (value) => settle({ ok: true, value }),
      (error) => settle({ ok: false, value: error }),
    )
  }

  /** The run a retry's state names, checked against the retry; the state is spent. */
  async #resume(call, digest) {
    const payload = this.seal.open(call.requestState)
    if (typeof payload.x !== 'number' || payload.x <= this.now()) throw invalidArg('requestState refused: expired')
    if (payload.t !== call.tool || payload.d !== digest) {
      throw invalidArg('requestState refused: it was issued for another tool or other arguments (retry with the same arguments)')
    }
    if ((payload.p ?? null) !== (call.principal ?? null)) throw invalidArg('requestState refused: it was issued to another principal')
    let run = this.runs.get(payload.r)
    if (run && run.round < payload.n && this.store) {
      // Another instance continued this run since it waited here: this copy is stale.
      run.handedOver = true
      run.controller.abort(new Error('another instance continued this run'))
      this.#end(run)
      run = undefined
    }
    if (run) {
      if (run.round !== payload.n) throw invalidArg('requestState refused: already used (each requestState continues a run once)')
      if (run.stored) {
        // The store decides who continues: another instance may have claimed this state already.
        run.stored = false
        if (!(await this.#claim(rowId(run.id, run.round)))) {
          run.handedOver = true
          run.controller.abort(new Error('another instance resumed this run'))
          this.#end(run)
          throw invalidArg('requestState refused: already used (another instance continued this run)')
        }
      }
      run.round += 1
      return run
    }
    if (!this.store) throw invalidArg('requestState refused: no such run here (it ended, expired, or another process started it)')
    let text
    try {
      text = await this.store.get(rowId(payload.r, payload.n))
    } catch (e) {
      throw storeFailed('get', e)
    }
    if (typeof text !== 'string') throw invalidArg('requestState refused: no such run (it ended, expired, or another instance continued it)')
    const journal = parseJournal(text)
    if (journal.run !== payload.r || journal.round !== payload.n || journal.tool !== call.tool || journal.digest !== digest) {
      throw invalidArg('requestState refused: already used (each requestState continues a run once)')
    }
    if (!(await this.#claim(rowId(payload.r, payload.n)))) throw invalidArg('requestState refused: already used (another instance continued this run)')
    const resumed = new Run(payload.r, { tool: call.tool, digest, principal: call.principal ?? null })
    resumed.round = payload.n + 1
    resumed.trace = journal.trace
    resumed.startedAt = journal.startedAt
    resumed.recorder = new Recorder({ clock: journal.clock, seed: journal.seed, entries: journal.entries, abort: (e) => resumed.controller.abort(e) })
    // The approvals it waited for, in the order they were asked: the retry's answers.
    resumed.pending = journal.asks.map((a) => ({ tool: a.tool ?? null, decision: decisionOf(call.inputResponses?.[a.callId]) }))
    this.log(`resuming an execution from the run store (${call.tool}, round ${resumed.round})`)
    return resumed
  }

  /** Takes a run's row out of the store: true when this process is the one that continues it. */
  async #claim(id) {
    try {
      return (await this.store.delete(id)) === true
    } catch (e) {
      throw storeFailed('delete', e)
    }
  }

  /** The client's answers to the run's open asks; an ask left unanswered is asked again. */
  #answer(run, responses) {
    const open = []
    for (const ask of run.asks) {
      const decision = decisionOf(responses?.[ask.callId])
      if (decision) ask.answer(decision)
      else open.push(ask)
    }
    run.asks = open
  }

  /**
   * `host.approve` of a run: resolves when a retry brings the answer.
   * @returns {Promise<'approve' | 'approve_always' | 'decline'>}
   */
  #ask(run, request) {
    if (this.closed || (this.runs.size > MAX_PARKED && run.asks.length === 0)) return Promise.resolve(/** @type {const} */ ('decline'))
    // Resumed from the store: the first asks after the journal are the ones the retry answers.
    const answered = run.pending.shift()
    if (answered && answered.decision && answered.tool === (typeof request?.toolName === 'string' ? request.toolName : null)) {
      return Promise.resolve(/** @type {'approve' | 'approve_always' | 'decline'} */ (answered.decision))
    }
    const { promise, resolve } = deferred()
    const callId = typeof request?.callId === 'string' && request.callId ? request.callId : `ask-${(run.nextKey += 1)}`
    run.asks.push({ callId, request, answer: resolve })
    run.poke()
    return /** @type {Promise<'approve' | 'approve_always' | 'decline'>} */ (promise)
  }

  /** Parks the run: its input requests and a fresh state; with a store, its journal is kept there. */
  async #park(run) {
    const expiresAt = this.now() + this.timeoutMs + this.graceMs
    if (run.recorder && this.store) await this.#keep(run, expiresAt)
    if (run.expiry) clearTimeout(run.expiry)
    run.expiry = setTimeout(() => {
      this.log(`an execution waiting for approval expired (${run.binding.tool})`)
      run.controller.abort(new Error('approval expired'))
      this.#end(run)
      this.#forget(run)
    }, expiresAt - this.now())
    run.expiry.unref?.()
    /** @type {Record<string, any>} */
    const inputRequests = {}
    for (const ask of run.asks) {
      inputRequests[ask.callId] = {
        method: 'elicitation/create',
        params: { mode: 'form', message: approvalMessage(ask.request, ask.request?.names ?? this.names(ask.request?.toolName)), requestedSchema: APPROVAL_SCHEMA },
      }
    }
    const { tool, digest, principal } = run.binding
    const requestState = this.seal.seal({ r: run.id, n: run.round, t: tool, d: digest, p: principal, x: expiresAt })
    return { inputRequests, requestState }
  }

  /**
   * Writes the run's journal (round `run.round`) to the store. A journal over its bound is not
   * kept (the run waits in this process only); a store that fails ends the run.
   */
  async #keep(run, expiresAt) {
    const recorder = /** @type {Recorder} */ (run.recorder)
    if (recorder.overflow) {
      this.warn(`an execution waiting for approval is not kept in the run store: its journal passed ${MAX_JOURNAL_BYTES} bytes; only this process can resume it`)
      return
    }
    const { tool, digest, principal } = run.binding
    /** @type {import('./journal.mjs').JournalData} */
    const journal = {
      v: JOURNAL_VERSION,
      run: run.id,
      round: run.round,
      tool,
      digest,
      principal,
      clock: recorder.clock,
      seed: recorder.seed,
      startedAt: run.startedAt,
      entries: recorder.entries,
      asks: run.asks.map((a) => ({ callId: a.callId, tool: typeof a.request?.toolName === 'string' ? a.request.toolName : null })),
    }
    if (run.trace !== undefined) journal.trace = run.trace
    try {
      await this.store.put(rowId(run.id, run.round), JSON.stringify(journal), expiresAt)
      run.stored = true
    } catch (e) {
      const failure = storeFailed('put', e)
      run.controller.abort(failure)
      this.#end(run)
      throw failure
    }
  }

  /** Drops a run's journal from the store (it ended or expired), quietly. */
  #forget(run) {
    if (!run.stored || !this.store) return
    run.stored = false
    Promise.resolve()
      .then(() => this.store.delete(rowId(run.id, run.round)))
      .catch((e) => this.log(`run store: could not delete an ended run's journal: ${e?.message ?? e}`))
  }

  #end(run) {
    if (run.expiry) clearTimeout(run.expiry)
    run.expiry = null
    this.runs.delete(run.id)
    for (const ask of run.asks) ask.answer('decline')
    run.asks = []
  }

  /** Ends every parked run (their executions are aborted). */
  close() {
    this.closed = true
    // With a run store, a parked run's journal stays there: another process resumes it.
    for (const run of [...this.runs.values()]) {
      if (run.stored) run.handedOver = true
      run.controller.abort(new Error('the server closed'))
      this.#end(run)
    }
  }
}

/**
 * A run's row in the store: one per round, so a claim takes exactly the round its state names — a
 * late claim of a spent state never takes the row the winner wrote for the next round.
 */
function rowId(runId, round) {
  return `${runId}.${round}`
}

/** A run store that failed: an `EXECUTION_ERROR` naming the operation. */
function storeFailed(op, e) {
  const failure = new Error(`the run store failed (${op}): ${e?.message ?? e}`)
  // @ts-ignore
  failure.code = 'EXECUTION_ERROR'
  return failure
}

/** `<server>:<tool>` as the names a person is shown (the gateway's tools); else the tool alone. */
function nameParts(toolName) {
  const at = typeof toolName === 'string' ? toolName.indexOf(':') : -1
  return at > 0 ? { server: toolName.slice(0, at), tool: toolName.slice(at + 1) } : {}
}

/** Notifications a run sends while attached: logs only at or above the request's `logLevel`. */
export function levelAllows(logLevel, level) {
  if (logLevel === null) return false
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(logLevel)
}
