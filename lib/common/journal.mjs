// Runs that outlive a process (api.md §12): the journal of everything a script saw, and its replay.
//
// A run that may wait for a person, with a run store, runs behind a `Recorder`: it wraps the
// execution's host so that every input the script sees passes through it — tool results and
// errors (`callTool`, whichever path: a plan's own calls, `__safe_parallel`, nested saved scripts,
// and every host function such as the gateway's `mcp.*` and `call_tool`), approval answers — and
// it gives the run a clock that stands still (`host.clock`) and a seeded `Math.random`
// (`host.randomSeed`), so the same script against the same inputs does the same thing.
//
// Another process resumes the run by running the script again behind a Recorder in replay mode:
// calls are answered from the journal (checked: the same tool or function, the same input),
// approvals already given are not asked again, events are not sent again; when the journal is used
// up it goes on live. A call that differs from the journal ends the run ("could not be resumed")
// before anything runs twice.
import { createHash, randomBytes } from 'node:crypto'

/** The journal's format. */
export const JOURNAL_VERSION = 1
/**
 * The most JSON a journal holds. A run whose journal passes it is not kept in the run store: it
 * waits in the memory of its process only (as without a store), and says so (log, warning).
 */
export const MAX_JOURNAL_BYTES = 8 * 1024 * 1024

/** An `Error` with `code: 'EXECUTION_ERROR'`: the run could not be resumed. */
export function notResumed(why) {
  const e = new Error(`the run could not be resumed: ${why}`)
  // @ts-ignore — a code on an Error, as the engine's.
  e.code = 'EXECUTION_ERROR'
  return e
}

/**
 * A call's identity in the journal: its name and input as JSON, kept as they are when short, else
 * 128 bits of their SHA-256. The same script against the same journal builds the same input with
 * its keys in the same order, so JSON as written is enough (no sorting).
 */
function callDigest(name, input) {
  const json = `${name}\0${JSON.stringify(input ?? null) ?? 'null'}`
  return json.length <= 48 ? json : createHash('sha256').update(json).digest('base64url').slice(0, 22)
}

/** What of a thrown error is kept, and thrown again on replay. */
function errorRecord(e) {
  /** @type {{ message: string, code?: string, details?: unknown }} */
  const out = { message: typeof e?.message === 'string' ? e.message : String(e) }
  if (typeof e?.code === 'string') out.code = e.code
  if (e?.details !== undefined) {
    try {
      out.details = JSON.parse(JSON.stringify(e.details))
    } catch {
      // Details that are not JSON are not kept.
    }
  }
  return out
}

function errorOf(record) {
  const e = new Error(record.message)
  // @ts-ignore
  if (record.code !== undefined) e.code = record.code
  // @ts-ignore
  if (record.details !== undefined) e.details = record.details
  return e
}

/**
 * A run's journal as stored: what it is bound to, its clock and seed, its entries in the order the
 * script saw them, and the approvals it waits for.
 * @typedef {{ v: number, run: string, round: number, tool: string, digest: string, principal: string | null,
 *             clock: number, seed: number, startedAt: number, trace?: string,
 *             entries: any[], asks: { callId: string, tool: string | null }[] }} JournalData
 */

/** Reads a stored journal; throws `notResumed` for one this code cannot read. */
export function parseJournal(text) {
  let data
  try {
    data = JSON.parse(text)
  } catch {
    throw notResumed('its journal in the run store is not readable')
  }
  if (data === null || typeof data !== 'object' || data.v !== JOURNAL_VERSION || !Array.isArray(data.entries) || !Array.isArray(data.asks)) {
    throw notResumed('its journal in the run store was written by another version, or is damaged')
  }
  return /** @type {JournalData} */ (data)
}

/**
 * Wraps an execution's host: records (live) or answers from a journal (replay).
 */
export class Recorder {
  /**
   * @param {{ clock: number, seed: number, entries?: any[], abort: (e: Error) => void }} options
   *   `entries`: the journal to replay (absent: a new run); `abort` ends the execution (divergence).
   */
  constructor(options) {
    this.clock = options.clock
    this.seed = options.seed
    /** Everything the script saw, in order (replayed entries first). */
    this.entries = options.entries ? [...options.entries] : []
    this.bytes = JSON.stringify(this.entries).length
    /** The journal passed MAX_JOURNAL_BYTES: nothing more is kept, the run is not stored. */
    this.overflow = this.bytes > MAX_JOURNAL_BYTES
    this.abort = options.abort
    /** @type {Error | null} why the replay could not go on */
    this.diverged = null
    // Replay: the journal's calls, results (delivery order) and approvals, consumed in order.
    // A call is known by its place in the script (`<execution>#<n>`: the n-th call of the run's
    // first, second … execution — a saved script it runs is the next), not by when the host saw it:
    // approvals answered at once on replay change when calls reach the host, not their place.
    const old = options.entries ?? []
    /** @type {Map<string, any>} */
    this.oldCalls = new Map(old.filter((e) => e.k === 'call').map((e) => [e.i, e]))
    this.oldResults = old.filter((e) => e.k === 'result')
    /** @type {Map<string, any>} */
    this.oldApprovals = new Map(old.filter((e) => e.k === 'approval').map((e) => [e.i, e]))
    this.callsLeft = this.oldCalls.size
    this.approvalsLeft = this.oldApprovals.size
    this.resultsGiven = 0
    /** @type {Map<string, { resolve: (v: any) => void, reject: (e: any) => void }>} replayed calls waiting for their turn */
    this.waiting = new Map()
    /** @type {Map<string, number>} execution id → its place in the run */
    this.executions = new Map()
    this.unkeyed = 0
    /** Live host calls not answered yet. */
    this.inFlight = 0
    /** @type {(() => void)[]} */
    this.idleWaiters = []
  }

  /** Still answering from the journal. */
  get replaying() {
    return this.callsLeft > 0 || this.approvalsLeft > 0 || this.resultsGiven < this.oldResults.length
  }

  /**
   * A call's place in the run, from the engine's ids (`callId` is `<executionId>#<n>`).
   * @param {any} meta `{ callId, executionId }`
   */
  key(meta) {
    const callId = typeof meta?.callId === 'string' ? meta.callId : ''
    const executionId = typeof meta?.executionId === 'string' ? meta.executionId : ''
    const hash = callId.lastIndexOf('#')
    if (hash < 0 || executionId === '') return `?${(this.unkeyed += 1)}`
    let place = this.executions.get(executionId)
    if (place === undefined) {
      place = this.executions.size
      this.executions.set(executionId, place)
    }
    return `${place}${callId.slice(hash)}`
  }

  /** The journal's entries were all used (a replay that ended before would have diverged). */
  get caughtUp() {
    return !this.replaying
  }

  /** Adds an entry; `size`: its JSON's length when known without writing it. */
  #push(entry, size) {
    if (this.overflow) return
    this.bytes += (size ?? JSON.stringify(entry)?.length ?? 4) + 1
    if (this.bytes > MAX_JOURNAL_BYTES) {
      this.overflow = true
      this.entries = []
      return
    }
    this.entries.push(entry)
  }

  #diverge(why) {
    if (!this.diverged) {
      this.diverged = notResumed(why)
      this.abort(this.diverged)
    }
    return new Promise(() => {})
  }

  /** Resolves when no live host call is unanswered. */
  idle() {
    if (this.inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(() => resolve(undefined)))
  }

  /**
   * One host call (a tool or a host function), through the journal.
   * @param {string} i its key (`key(meta)`) @param {string} name what the journal names it by
   * @param {unknown} input @param {() => unknown} live @param {(() => void) | null} [replayed] told when answered from the journal
   */
  call(i, name, input, live, replayed) {
    if (this.diverged) return new Promise(() => {})
    const d = callDigest(name, input)
    const old = this.oldCalls.get(i)
    if (old !== undefined) {
      this.oldCalls.delete(i)
      this.callsLeft -= 1
      if (old.n !== name || old.d !== d) {
        const what = old.n !== name ? `call ${i} is ${name}, the journal holds ${old.n}` : `call ${i} (${name}) has another input than the journal holds`
        return this.#diverge(what)
      }
      try {
        replayed?.()
      } catch {
        // The host's bookkeeping never breaks a replay.
      }
      return new Promise((resolve, reject) => {
        this.waiting.set(i, { resolve, reject })
        this.#pump()
      })
    }
    // Live.
    this.#push({ k: 'call', i, n: name, d }, 24 + i.length + name.length + d.length)
    this.inFlight += 1
    const settled = () => {
      this.inFlight -= 1
      if (this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w()
    }
    return Promise.resolve()
      .then(live)
      .then(
        (v) => {
          this.#push(v === undefined ? { k: 'result', i, ok: true } : { k: 'result', i, ok: true, v })
          settled()
          return v
        },
        (e) => {
          this.#push({ k: 'result', i, ok: false, e: errorRecord(e) })
          settled()
          throw e
        },
      )
  }

  /** Gives replayed calls their results in the order the script first saw them. */
  #pump() {
    while (this.resultsGiven < this.oldResults.length) {
      const next = this.oldResults[this.resultsGiven]
      const waiter = this.waiting.get(next.i)
      if (!waiter) return
      this.waiting.delete(next.i)
      this.resultsGiven += 1
      if (next.ok) waiter.resolve(next.v)
      else waiter.reject(errorOf(next.e))
    }
    // A call the journal started but never answered (it cannot: results are journaled before a
    // run is stored) would wait here; the deadline ends it.
  }

  /**
   * One approval, through the journal.
   * @param {any} request @param {(r: any) => Promise<string>} live
   */
  approve(request, live) {
    if (this.diverged) return new Promise(() => {})
    const tool = typeof request?.toolName === 'string' ? request.toolName : null
    const i = this.key(request)
    const old = this.oldApprovals.get(i)
    if (old !== undefined) {
      this.oldApprovals.delete(i)
      this.approvalsLeft -= 1
      if (old.t !== tool) return this.#diverge(`approval ${i} is asked for ${tool}, the journal holds ${old.t}`)
      return Promise.resolve(old.x)
    }
    return Promise.resolve(live(request)).then((decision) => {
      this.#push({ k: 'approval', i, t: tool, x: decision })
      return decision
    })
  }

  /**
   * The host the execution runs with: every input through this recorder, events held back while
   * replaying, the standing clock and the seed.
   * @param {any} host
   */
  wrap(host) {
    const recorder = this
    /** @type {any} */
    const out = { ...host, clock: this.clock, randomSeed: this.seed }
    // Read by the engine per call: a call answered from the journal gets no tool_call span.
    Object.defineProperty(out, 'replaying', { get: () => recorder.replaying, enumerable: false })
    // `host.replayed(name, input)`, if the host has it: told of each call answered from the journal
    // (the gateway counts its server for the audit line, as a live call would).
    const replayed = typeof host.replayed === 'function' ? host.replayed.bind(host) : null
    if (typeof host.callTool === 'function') {
      out.callTool = function (/** @type {string} */ name, /** @type {unknown} */ input, /** @type {any} */ meta) {
        return recorder.call(recorder.key(meta), `tool:${name}`, input, () => host.callTool(name, input, meta), replayed && (() => replayed('callTool', [name, input])))
      }
    }
    if (host.functions !== null && typeof host.functions === 'object') {
      /** @type {Record<string, any>} */
      const functions = {}
      for (const [key, fn] of Object.entries(host.functions)) {
        functions[key] =
          typeof fn !== 'function'
            ? fn
            : function (/** @type {any[]} */ ...args) {
                // @ts-ignore — `this` is the call's { callId, executionId }, as the engine gives it.
                const self = this
                return recorder.call(recorder.key(self), `fn:${key}`, args, () => fn.apply(self, args), replayed && (() => replayed(key, args)))
              }
      }
      out.functions = functions
    }
    if (typeof host.approve === 'function') {
      out.approve = (/** @type {any} */ request) => recorder.approve(request, (r) => host.approve(r))
    }
    if (typeof host.onEvent === 'function') {
      out.onEvent = (/** @type {any} */ event) => {
        if (!recorder.replaying) host.onEvent(event)
      }
    }
    return out
  }
}

/** A new run's clock (now) and seed (48 random bits). */
export function freshStart(now = Date.now()) {
  return { clock: Math.floor(now), seed: randomBytes(6).readUIntBE(0, 6) }
}
