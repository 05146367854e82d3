// The host's own tool pipeline: what every tool call of the example server passes through, whether
// a client calls a visible tool directly or a CodeCall script calls it with `callTool`.
//
//   resolve → validate input (JSON Schema) → handler → mask PII in the output → audit
//
// It answers with MCP `CallToolResult`s, as a real MCP server's pipeline does; CodeCall unwraps them
// for scripts. Nothing here knows about CodeCall.
import AjvModule from 'ajv'
import addFormatsModule from 'ajv-formats'
import { ToolError } from './errors.mjs'

const Ajv = AjvModule.default ?? AjvModule
const addFormats = addFormatsModule.default ?? addFormatsModule

/**
 * Fields whose values are personal data, by key, and how they are masked. Masked values keep their
 * type and format (an email is still an email, an address still an address object, a birth date
 * still a date), so results still match the tools' output schemas.
 */
const maskAddress = (v) =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
    ? { ...v, line1: '[redacted]', ...(v.line2 !== undefined ? { line2: '[redacted]' } : {}), ...(typeof v.postalCode === 'string' ? { postalCode: `${v.postalCode.slice(0, 2)}***` } : {}) }
    : '[redacted address]'
const PII = {
  email: (v) => (typeof v === 'string' && v.includes('@') ? `${v[0]}***@${v.split('@').pop()}` : '[redacted]'),
  requesterEmail: (v) => PII.email(v),
  customerEmail: (v) => PII.email(v),
  phone: (v) => (typeof v === 'string' ? `***-***-${v.replace(/\D/g, '').slice(-4)}` : '[redacted]'),
  address: maskAddress,
  shippingAddress: maskAddress,
  billingAddress: maskAddress,
  // the year stays (age bands), the day does not
  dateOfBirth: (v) => (typeof v === 'string' && /^\d{4}-/.test(v) ? `${v.slice(0, 4)}-01-01` : null),
  cardNumber: (v) => (typeof v === 'string' ? `**** ${v.slice(-4)}` : '[redacted]'),
}

/** Masks personal data anywhere in a JSON value (a copy; the store is never touched). */
export function maskPii(value, depth = 0) {
  if (depth > 32 || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => maskPii(v, depth + 1))
  const out = {}
  for (const [k, v] of Object.entries(value)) {
    out[k] = Object.hasOwn(PII, k) && v !== null && v !== undefined ? PII[k](v) : maskPii(v, depth + 1)
  }
  return out
}

/**
 * @param {{ tools: any[], store: any, onAudit?: (entry: any) => void, userId?: string }} options
 */
export function createPipeline({ tools, store, onAudit, userId = 'usr_001' }) {
  const ajv = new Ajv({ strict: false, allErrors: false })
  addFormats(ajv)
  const byName = new Map(tools.map((t) => [t.name, t]))
  const validators = new Map()
  const audit = []

  function validator(tool) {
    let v = validators.get(tool.name)
    if (!v) {
      v = ajv.compile(tool.inputSchema ?? { type: 'object' })
      validators.set(tool.name, v)
    }
    return v
  }

  function record(entry) {
    audit.push(entry)
    if (audit.length > 10_000) audit.shift()
    onAudit?.(entry)
  }

  /**
   * Runs one tool call. `meta` says who asked: `{ via: 'mcp' | 'direct' | 'codecall', sessionId?, callId?, executionId? }`.
   * @returns {Promise<import('@modelcontextprotocol/sdk/types.js').CallToolResult>}
   */
  async function callTool(name, input, meta = {}) {
    const started = performance.now()
    const tool = byName.get(name)
    let status = 'ok'
    let code
    try {
      if (!tool) throw new ToolError('NOT_FOUND', `Unknown tool ${name}`)
      const args = input ?? {}
      const validate = validator(tool)
      if (!validate(args)) {
        const e = validate.errors?.[0]
        throw new ToolError('INVALID_INPUT', `Invalid input for ${name}: ${e ? `${e.instancePath || '/'} ${e.message}` : 'invalid'}`, {
          errors: validate.errors?.slice(0, 5),
        })
      }
      const result = await tool.handler(structuredClone(args), { store, userId })
      const masked = maskPii(result)
      return { content: [{ type: 'text', text: JSON.stringify(masked) }], structuredContent: masked }
    } catch (e) {
      status = 'error'
      code = e instanceof ToolError ? e.code : 'INTERNAL'
      const message = e instanceof ToolError ? e.message : `Internal error in ${name}`
      return { isError: true, content: [{ type: 'text', text: message }], structuredContent: { error: { code, message } } }
    } finally {
      record({
        at: new Date().toISOString(),
        tool: name,
        via: meta.via ?? 'direct',
        executionId: meta.executionId,
        callId: meta.callId,
        status,
        code,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      })
    }
  }

  return { callTool, audit, tool: (name) => byName.get(name) }
}
