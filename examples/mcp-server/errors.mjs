/**
 * The one error type tool handlers throw. `code` is a stable, machine-readable string a script
 * can branch on (`if (e.code === 'NOT_FOUND') ...`); `details` carries structured context.
 *
 * Codes used by the example apps:
 * - NOT_FOUND         an id (or email, code, sku) does not exist in the store
 * - INVALID_INPUT     the input is well-formed but makes no sense (bad cursor, empty patch, from > to)
 * - CONFLICT          the record is in a state that forbids the operation (cancel a shipped order)
 * - PAYMENT_DECLINED  the payment network refused (over-refund, declined card)
 * - OUT_OF_STOCK      not enough units available to fulfil an order
 */
export class ToolError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [details]
   */
  constructor(code, message, details) {
    super(message)
    this.name = 'ToolError'
    this.code = code
    if (details !== undefined) this.details = details
  }

  toJSON() {
    return { name: this.name, code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) }
  }
}

/** `ToolError('NOT_FOUND', 'Order ord_999 not found')` */
export function notFound(kind, id) {
  return new ToolError('NOT_FOUND', `${kind} ${id} not found`, { kind, id })
}
