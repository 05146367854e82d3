import Ajv, { type ValidateFunction } from 'ajv'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { describe, expect, it } from 'vitest'

import { allTools, apps, type ToolDefinition } from '../examples/mcp-server/apps/index.mjs'
// @ts-ignore -- plain ESM module without type declarations
import { createStore } from '../examples/mcp-server/data.mjs'
// @ts-ignore -- plain ESM module without type declarations
import { ToolError } from '../examples/mcp-server/errors.mjs'

type Json = Record<string, unknown>

const tools = allTools()
const byName = new Map(tools.map((t) => [t.name, t]))
const tool = (name: string): ToolDefinition => {
  const found = byName.get(name)
  if (!found) throw new Error(`no tool ${name}`)
  return found
}
const call = (name: string, input: Json, store = createStore(), userId?: string) => tool(name).handler(input, { store, userId })

function makeAjv(Klass: typeof Ajv) {
  // Strict, except strictRequired: `oneOf: [{ required: ['userId'] }, { required: ['email'] }]` is intended.
  const ajv = new Klass({ strict: true, strictRequired: false, allowUnionTypes: true, allErrors: true })
  addFormats(ajv)
  return ajv
}
const ajv = makeAjv(Ajv)
const ajv2020 = makeAjv(Ajv2020 as unknown as typeof Ajv)

const compiled = new Map<object, ValidateFunction>()
function validator(schema: object): ValidateFunction {
  let fn = compiled.get(schema)
  if (!fn) compiled.set(schema, (fn = ajv.compile(schema)))
  return fn
}
function expectValid(schema: object, value: unknown, what: string) {
  const validate = validator(schema)
  const ok = validate(value)
  expect(ok, `${what}: ${ajv.errorsText(validate.errors, { separator: '\n' })}`).toBe(true)
}

/** Inputs for tools that need ids (or other required values) and have no example. */
const INPUTS: Record<string, Json> = {
  'users:search': { query: 'berlin' },
  'users:update': { userId: 'usr_002', plan: 'pro', address: { line1: '88 Harbor Way', city: 'Seattle', region: 'WA', postalCode: '98101', country: 'US' } },
  'users:delete': { userId: 'usr_040', reason: 'Invitation never accepted' },
  'users:suspend': { userId: 'usr_002', reason: 'security' },
  'users:reactivate': { userId: 'usr_007' },
  'users:invite': { email: 'new.hire@acme.example.com', tenantId: 't_acme', role: 'viewer' },
  'users:changeRole': { userId: 'usr_002', role: 'member' },
  'users:merge': { sourceUserId: 'usr_005', targetUserId: 'usr_002' },
  'users:getTeam': { teamId: 'team_01' },
  'users:createTeam': { tenantId: 't_acme', name: 'Design', memberIds: ['usr_002', 'usr_004'] },
  'users:addTeamMember': { teamId: 'team_01', userId: 'usr_013' },
  'users:removeTeamMember': { teamId: 'team_01', userId: 'usr_002' },
  'users:getPreferences': { userId: 'usr_003' },
  'users:updatePreferences': { userId: 'usr_003', theme: 'dark', notifications: { digest: 'weekly' } },
  'users:resetPassword': { userId: 'usr_002' },
  'billing:getInvoice': { invoiceId: 'inv_010' },
  'billing:sendInvoice': { invoiceId: 'inv_023', cc: ['finance@acme.example.com'] },
  'billing:voidInvoice': { invoiceId: 'inv_023', reason: 'Issued in error' },
  'billing:payInvoice': { invoiceId: 'inv_023' },
  'billing:getPayment': { paymentId: 'pay_010' },
  'billing:getRefund': { refundId: 'ref_001' },
  'billing:getSubscription': { subscriptionId: 'sub_001' },
  'billing:createSubscription': { userId: 'usr_038', plan: 'pro', seats: 5, trialDays: 14 },
  'billing:cancelSubscription': { subscriptionId: 'sub_001', atPeriodEnd: false, reason: 'too_expensive' },
  'billing:changePlan': { subscriptionId: 'sub_001', plan: 'enterprise', seats: 12 },
  'billing:pauseSubscription': { subscriptionId: 'sub_001', resumeOn: '2026-03-01' },
  'billing:resumeSubscription': { subscriptionId: 'sub_008' },
  'billing:applyCoupon': { subscriptionId: 'sub_001', code: 'WELCOME10' },
  'billing:deleteCoupon': { couponId: 'cpn_007' },
  'billing:getBalance': { userId: 'usr_001' },
  'billing:previewInvoice': { subscriptionId: 'sub_002', seats: 20 },
  'billing:chargeCard': { userId: 'usr_001', amount: { amount: 2500, currency: 'USD' }, card: { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' } },
  'billing:exportInvoices': { from: '2025-12-01', to: '2025-12-31', status: 'paid' },
  'orders:get': { orderId: 'ord_006' },
  'orders:search': { query: 'standing desk' },
  'orders:update': { orderId: 'ord_120', metadata: { gift: 'true' } },
  'orders:cancel': { orderId: 'ord_114', reason: 'duplicate' },
  'orders:addItem': { orderId: 'ord_114', productId: 'prd_013' },
  'orders:removeItem': { orderId: 'ord_022', productId: 'prd_012' },
  'orders:updateItemQuantity': { orderId: 'ord_022', productId: 'prd_003', quantity: 1 },
  'orders:ship': { orderId: 'ord_120', carrier: 'fedex' },
  'orders:markDelivered': { orderId: 'ord_119' },
  'orders:getTracking': { orderId: 'ord_115' },
  'orders:addNote': { orderId: 'ord_006', body: 'Customer called about the invoice.' },
  'orders:listNotes': { orderId: 'ord_006' },
  'orders:approveReturn': { returnId: 'ret_010', warehouseId: 'wh_west' },
  'orders:rejectReturn': { returnId: 'ret_011', reason: 'Outside the 30-day window' },
  'orders:export': { from: '2025-10-01', to: '2025-12-31', status: ['delivered'], format: 'jsonl' },
  'orders:duplicate': { orderId: 'ord_120' },
  'support:getTicket': { ticketId: 'tkt_011' },
  'support:searchTickets': { query: '502' },
  'support:updateTicket': { ticketId: 'tkt_055', priority: 'high', status: 'pending' },
  'support:assignTicket': { ticketId: 'tkt_056', agentId: 'agt_02' },
  'support:escalateTicket': { ticketId: 'tkt_059', level: 2, reason: 'Customer blocked in production' },
  'support:closeTicket': { ticketId: 'tkt_058', comment: 'Closing as resolved.' },
  'support:reopenTicket': { ticketId: 'tkt_058', reason: 'The problem came back' },
  'support:listComments': { ticketId: 'tkt_011', limit: 2 },
  'support:mergeTickets': { targetTicketId: 'tkt_053', sourceTicketIds: ['tkt_051'] },
  'support:getAgent': { agentId: 'agt_01' },
  'support:setAgentStatus': { agentId: 'agt_04', status: 'online' },
  'support:applyMacro': { ticketId: 'tkt_060', macroId: 'mac_01' },
  'support:rateTicket': { ticketId: 'tkt_058', score: 5 },
  'support:bulkUpdateTickets': { ticketIds: ['tkt_051', 'tkt_053', 'tkt_999'], set: { priority: 'high' } },
  'support:deleteTicket': { ticketId: 'tkt_001', reason: 'spam' },
  'analytics:customerLifetimeValue': { userId: 'usr_001' },
  'analytics:exportReport': { report: 'top_customers' },
  'analytics:scheduleReport': { report: 'ticket_volume', frequency: 'weekly', recipients: ['lead@support.example.com'] },
  'inventory:getProduct': { productId: 'prd_004' },
  'inventory:updateProduct': { productId: 'prd_005', price: { amount: 39900, currency: 'USD' } },
  'inventory:archiveProduct': { productId: 'prd_015' },
  'inventory:transferStock': { productId: 'prd_002', fromWarehouseId: 'wh_east', toWarehouseId: 'wh_eu', quantity: 5 },
}

const SPECIAL_INTERNAL = ['billing:_rotateKeys', 'users:_purgeAll']
const SLOW = 'analytics:slowReport'
const runnable = tools.filter((t) => !t.internal && t.name !== SLOW)

const needsInput = (t: ToolDefinition) => Boolean((t.inputSchema.required as string[] | undefined)?.length || t.inputSchema.oneOf || t.inputSchema.anyOf)
function inputFor(t: ToolDefinition): Json {
  const input = t.examples?.[0]?.input ?? INPUTS[t.name] ?? (needsInput(t) ? undefined : {})
  if (!input) throw new Error(`${t.name} needs input: give it an example or add it to INPUTS`)
  return input
}

/** Every subschema of a schema, with its JSON pointer. */
function* walk(node: unknown, path = '#'): Generator<[Json, string]> {
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) yield* walk(v, `${path}/${i}`)
  } else if (node && typeof node === 'object') {
    yield [node as Json, path]
    for (const [k, v] of Object.entries(node)) {
      if (k === 'examples' || k === 'default' || k === 'const' || k === 'enum') continue
      yield* walk(v, `${path}/${k}`)
    }
  }
}
const schemasOf = (t: ToolDefinition) => [t.inputSchema, ...(t.outputSchema ? [t.outputSchema] : [])]

async function rejection(promise: Promise<unknown>): Promise<{ name?: string; code?: string; message: string }> {
  try {
    await promise
  } catch (e) {
    return e as { name?: string; code?: string; message: string }
  }
  throw new Error('expected the call to throw')
}

describe('example MCP tool set: shape', () => {
  it('has at least 100 uniquely named tools over at least 4 apps', () => {
    expect(tools.length).toBeGreaterThanOrEqual(100)
    expect(apps.length).toBeGreaterThanOrEqual(4)
    expect(apps.map((a) => a.appId)).toEqual(expect.arrayContaining(['users', 'billing', 'orders', 'support', 'analytics']))
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length)
    for (const app of apps) {
      expect(app.tools.length, app.appId).toBeGreaterThanOrEqual(10)
      for (const t of app.tools) expect(t.name).toMatch(new RegExp(`^${app.appId}:_?[a-z][A-Za-z0-9]*$`))
    }
  })

  it('describes every tool for a model and marks its behaviour', () => {
    for (const t of tools) {
      expect(t.description.length, t.name).toBeGreaterThanOrEqual(40)
      expect(t.description.length, t.name).toBeLessThanOrEqual(400)
      expect(t.description, t.name).toMatch(/\.$/)
      expect(typeof t.handler, t.name).toBe('function')
      expect(t.inputSchema.type, t.name).toBe('object')
      if (t.outputSchema) expect(t.outputSchema.type, t.name).toBe('object')
      const a = t.annotations
      expect(a, t.name).toBeDefined()
      if (a!.readOnlyHint) expect(a!.destructiveHint, t.name).not.toBe(true)
      const verb = t.name.split(':')[1]
      if (/^(get|list|search|whoami|validate|preview|quote)/.test(verb)) expect(a!.readOnlyHint, t.name).toBe(true)
      const writes = /^_?(create|update|delete|cancel|merge|purge|refund|pay|charge|ship|void|adjust|transfer|assign|escalate|invite|suspend)/
      if (!t.name.startsWith('analytics:') && writes.test(verb)) expect(a!.readOnlyHint, t.name).not.toBe(true)
      if (/^_?(delete|purge|merge|void)/.test(verb)) expect(a!.destructiveHint, t.name).toBe(true)
    }
    expect(tools.filter((t) => t.outputSchema).length).toBeGreaterThanOrEqual(tools.length * 0.8)
    const withExamples = tools.filter((t) => t.examples?.length).length
    expect(withExamples).toBeGreaterThanOrEqual(15)
    expect(withExamples).toBeLessThanOrEqual(40)
  })

  it('flags exactly the special tools', () => {
    const flagged = (pred: (t: ToolDefinition) => boolean) => tools.filter(pred).map((t) => t.name).sort()
    expect(flagged((t) => t.codecall?.visibleInListTools === true)).toEqual(['support:getStatus', 'users:whoami'])
    expect(flagged((t) => t.codecall?.enabledInCodeCall === false)).toEqual(['billing:chargeCard'])
    expect(flagged((t) => t.internal === true)).toEqual(SPECIAL_INTERNAL)
    expect(flagged((t) => t.codecall !== undefined)).toEqual(['billing:chargeCard', 'support:getStatus', 'users:whoami'])
  })

  it('uses varied, real JSON Schema features', () => {
    const formats = new Set<unknown>()
    const keywords = new Set<string>()
    let freeFormMaps = 0
    const patterns: string[] = []
    for (const t of tools) {
      for (const schema of schemasOf(t)) {
        for (const [node, path] of walk(schema)) {
          for (const k of Object.keys(node)) keywords.add(k)
          if (node.format) formats.add(node.format)
          if (node.additionalProperties && typeof node.additionalProperties === 'object') freeFormMaps++
          if (node.$ref) expect(String(node.$ref), `${t.name} ${path}`).toMatch(/^#\/\$defs\//)
          if (node.pattern !== undefined) {
            patterns.push(`${t.name} ${path}`)
            const examples = node.examples as string[] | undefined
            expect(examples?.length, `${t.name} ${path} needs examples`).toBeGreaterThan(0)
            for (const ex of examples!) expect(ex).toMatch(new RegExp(String(node.pattern)))
          }
        }
      }
      // Most object schemas are closed.
      expect(t.inputSchema.additionalProperties, t.name).toBe(false)
    }
    expect([...formats]).toEqual(expect.arrayContaining(['email', 'date-time', 'date', 'uri']))
    for (const k of ['oneOf', 'anyOf', '$ref', '$defs', 'enum', 'const', 'minimum', 'maximum', 'minItems', 'maxItems', 'uniqueItems', 'default', 'description', 'minLength', 'maxLength', 'minProperties']) {
      expect(keywords.has(k), k).toBe(true)
    }
    expect(freeFormMaps).toBeGreaterThan(0)
    expect(patterns.length).toBeGreaterThan(0)
    expect(patterns.length, patterns.join('\n')).toBeLessThanOrEqual(3)
  })

  it('compiles every input and output schema (draft-07 and 2020-12)', () => {
    for (const t of tools) {
      for (const [kind, schema] of [['input', t.inputSchema], ['output', t.outputSchema]] as const) {
        if (!schema) continue
        expect(() => validator(schema), `${t.name} ${kind}`).not.toThrow()
        expect(() => ajv2020.compile(schema), `${t.name} ${kind} (2020-12)`).not.toThrow()
      }
    }
  })

  it('has example inputs (and outputs) that match the schemas', () => {
    for (const t of tools) {
      for (const ex of t.examples ?? []) {
        expect(ex.description, t.name).toBeTruthy()
        expectValid(t.inputSchema, ex.input, `${t.name} example "${ex.description}"`)
        if (ex.output) expectValid(t.outputSchema!, ex.output, `${t.name} example output "${ex.description}"`)
      }
    }
  })

  it('keeps the hand-written inputs in sync with the tools', () => {
    for (const [name, input] of Object.entries(INPUTS)) {
      const t = tool(name)
      expect(t.examples?.length ?? 0, `${name} has an example; drop it from INPUTS`).toBe(0)
      expectValid(t.inputSchema, input, `INPUTS["${name}"]`)
    }
  })
})

describe('example MCP tool set: handlers', () => {
  it.each(runnable.map((t) => [t.name, t] as const))('%s returns a plain object matching its output schema', async (_name, t) => {
    const input = inputFor(t)
    expectValid(t.inputSchema, input, `${t.name} input`)
    const result = await t.handler(structuredClone(input), { store: createStore() })
    expect(result !== null && typeof result === 'object' && !Array.isArray(result), 'an object').toBe(true)
    expect(JSON.parse(JSON.stringify(result))).toEqual(result)
    if (t.outputSchema) expectValid(t.outputSchema, result, `${t.name} output`)
    if (/:list[A-Z]?/.test(t.name)) {
      expect(Array.isArray(result.items), `${t.name} items`).toBe(true)
      expect(Number.isInteger(result.total), `${t.name} total`).toBe(true)
    }
  })

  it('runs every example against a fresh store and reproduces documented outputs', async () => {
    for (const t of runnable) {
      for (const ex of t.examples ?? []) {
        const result = await t.handler(structuredClone(ex.input), { store: createStore() })
        if (t.outputSchema) expectValid(t.outputSchema, result, `${t.name} example "${ex.description}"`)
        if (ex.output) expect(result, `${t.name} example "${ex.description}"`).toEqual(ex.output)
      }
    }
  })

  it('throws ToolError NOT_FOUND when a required id does not exist', async () => {
    const err = await rejection(call('orders:get', { orderId: 'ord_999' }))
    expect(err).toBeInstanceOf(ToolError)
    expect(err).toBeInstanceOf(Error)
    expect(err).toMatchObject({ name: 'ToolError', code: 'NOT_FOUND', message: 'Order ord_999 not found' })

    // Every tool with a required free-form *Id string reports a bogus id the same way.
    let checked = 0
    for (const t of runnable) {
      const props = (t.inputSchema.properties ?? {}) as Record<string, Json>
      const input = inputFor(t)
      const key = ((t.inputSchema.required ?? []) as string[]).find((k) => /Id$/.test(k) && props[k]?.type === 'string' && !props[k]?.enum && typeof input[k] === 'string')
      if (!key) continue
      const e = await rejection(t.handler({ ...structuredClone(input), [key]: 'zz_404' }, { store: createStore() }))
      expect(e, `${t.name} with a bogus ${key}`).toBeInstanceOf(ToolError)
      expect(e.code, `${t.name}: ${e.message}`).toBe('NOT_FOUND')
      expect(e.message, t.name).toContain('zz_404')
      checked++
    }
    expect(checked).toBeGreaterThanOrEqual(50)
  })

  it('declines an over-refund with PAYMENT_DECLINED and leaves the payment untouched', async () => {
    const store = createStore()
    const payment = store.payments.find((p: { status: string }) => p.status === 'succeeded')
    const refundsBefore = store.refunds.length
    const partial = await call('billing:refundPayment', { paymentId: payment.id, amount: 1000 }, store)
    expect(partial.payment).toMatchObject({ status: 'partially_refunded', amountRefunded: { amount: 1000 } })
    const remaining = payment.amount.amount - 1000

    const err = await rejection(call('billing:refundPayment', { paymentId: payment.id, amount: remaining + 1 }, store))
    expect(err).toBeInstanceOf(ToolError)
    expect(err.code).toBe('PAYMENT_DECLINED')
    expect(store.refunds.length).toBe(refundsBefore + 1)
    expect(payment.amountRefunded.amount).toBe(1000)

    const rest = await call('billing:refundPayment', { paymentId: payment.id }, store)
    expect(rest.refund).toMatchObject({ amount: { amount: remaining } })
    expect(rest.payment).toMatchObject({ status: 'refunded' })
    expect((await rejection(call('billing:refundPayment', { paymentId: payment.id, amount: 1 }, store))).code).toBe('PAYMENT_DECLINED')
  })

  it('sees created records through get, list and search', async () => {
    const store = createStore()
    const user = await call('users:create', { name: 'Grace Hopper', email: 'Grace.Hopper@acme.example.com', tenantId: 't_acme', phone: '+1 415 555 0199' }, store)
    expect(user).toMatchObject({ id: 'usr_041', status: 'active', email: 'grace.hopper@acme.example.com' })
    expect(await call('users:get', { userId: user.id }, store)).toEqual(user)
    expect(await call('users:get', { email: 'grace.hopper@acme.example.com' }, store)).toEqual(user)
    expect((await call('users:list', { limit: 100 }, store)).total).toBe(41)
    expect((await call('users:search', { query: 'hopper' }, store)).items).toMatchObject([{ id: user.id, matchedFields: ['name', 'email'] }])
    expect((await rejection(call('users:create', { name: 'Dup', email: 'grace.hopper@acme.example.com', tenantId: 't_acme' }, store))).code).toBe('CONFLICT')

    const ticket = await call('support:createTicket', { requester: { userId: user.id }, subject: 'Cannot find invoices', description: 'Where are they?' }, store)
    expect(await call('support:getTicket', { ticketId: ticket.id as string }, store)).toMatchObject({ id: ticket.id, requesterEmail: user.email, status: 'open' })
  })

  it('joins orders, invoices, payments and fulfilment across apps', async () => {
    const store = createStore()
    const order = await call('orders:create', { userId: 'usr_002', items: [{ productId: 'prd_001', quantity: 2 }, { productId: 'prd_001' }], couponCode: 'WELCOME10' }, store)
    expect(order).toMatchObject({ status: 'pending', items: [{ productId: 'prd_001', quantity: 3 }], discount: { amount: 1470 }, customerEmail: 'liam.moreau@acme.example.com' })
    expect(await call('orders:get', { orderId: order.id as string }, store)).toEqual(order)

    const invoices = await call('billing:listInvoices', { orderId: order.id as string }, store)
    expect(invoices.total).toBe(1)
    const [invoice] = invoices.items as Json[]
    expect(invoice).toMatchObject({ id: order.invoiceId, status: 'open', total: order.total, userId: 'usr_002' })

    const paid = await call('billing:payInvoice', { invoiceId: invoice.id as string }, store)
    expect(paid.invoice).toMatchObject({ status: 'paid', amountDue: { amount: 0 } })
    expect(await call('orders:get', { orderId: order.id as string }, store)).toMatchObject({ status: 'paid', paymentId: (paid.payment as Json).id })

    const onHand = (await call('inventory:getProduct', { productId: 'prd_001' }, store)).available as number
    await call('orders:ship', { orderId: order.id as string, carrier: 'dhl' }, store)
    expect((await call('inventory:getProduct', { productId: 'prd_001' }, store)).available).toBe(onHand - 3)
    expect(await call('orders:getTracking', { orderId: order.id as string }, store)).toMatchObject({ status: 'in_transit', carrier: 'dhl' })
    expect((await rejection(call('orders:cancel', { orderId: order.id as string }, store))).code).toBe('CONFLICT')

    const tickets = await call('support:listTickets', { requesterId: 'usr_001' }, store)
    for (const t of tickets.items as Json[]) expect(t.requesterEmail).toBe('ava.tanaka@acme.example.com')
  })

  it('refunds a paid order when it is cancelled', async () => {
    const store = createStore()
    const { order, refundId } = await call('orders:cancel', { orderId: 'ord_120' }, store)
    expect(order).toMatchObject({ status: 'cancelled', cancelReason: 'customer_request' })
    expect(refundId).toEqual(expect.any(String))
    expect(await call('billing:getPayment', { paymentId: (order as Json).paymentId as string }, store)).toMatchObject({ status: 'refunded' })
  })

  it('returns PII for the server to mask', async () => {
    const user = await call('users:get', { userId: 'usr_001' })
    expect(user).toMatchObject({ email: expect.stringContaining('@'), phone: expect.stringMatching(/^\+/), dateOfBirth: expect.any(String), address: { city: expect.any(String) } })
    const order = await call('orders:get', { orderId: 'ord_006' })
    expect(order).toMatchObject({ customerEmail: expect.stringContaining('@'), shippingAddress: { line1: expect.any(String) } })
  })

  it('acts as ctx.userId in users:whoami (usr_001 by default)', async () => {
    expect(await call('users:whoami', {})).toMatchObject({ user: { id: 'usr_001', role: 'admin' }, tenant: { id: 't_acme' } })
    const other = await call('users:whoami', {}, createStore(), 'usr_003')
    expect(other).toMatchObject({ user: { id: 'usr_003' }, tenant: { id: 't_globex' } })
    expect(other.permissions).not.toContain('users:write')
  })

  it('paginates with opaque cursors and rejects bad ones', async () => {
    const store = createStore()
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await call('users:list', { limit: 15, ...(cursor ? { cursor } : {}) }, store)
      expect(page.total).toBe(40)
      seen.push(...(page.items as Json[]).map((u) => u.id as string))
      cursor = page.nextCursor as string | undefined
    } while (cursor)
    expect(seen).toHaveLength(40)
    expect(new Set(seen).size).toBe(40)
    expect((await rejection(call('users:list', { cursor: 'not-a-cursor' }, store))).code).toBe('INVALID_INPUT')
  })

  it('builds a deterministic, independent store', async () => {
    const a = createStore()
    const b = createStore()
    expect(JSON.stringify(a)).toBe(JSON.stringify(b))
    expect({ users: a.users.length, products: a.products.length, orders: a.orders.length, tickets: a.tickets.length }).toEqual({ users: 40, products: 25, orders: 120, tickets: 60 })
    await call('users:_purgeAll', { confirm: true }, a)
    expect(a.users).toHaveLength(0)
    expect(b.users).toHaveLength(40)
    const mean = a.orders.reduce((n: number, o: { total: { amount: number } }) => n + o.total.amount, 0) / a.orders.length
    expect(mean).toBeGreaterThan(5_000)
  })

  it('waits delayMs in analytics:slowReport', async () => {
    const t = tool(SLOW)
    const started = performance.now()
    const result = await t.handler({ delayMs: 60 }, { store: createStore() })
    expect(performance.now() - started).toBeGreaterThanOrEqual(55)
    expectValid(t.outputSchema!, result, SLOW)
    expect(result).toMatchObject({ delayMs: 60, report: 'daily_digest' })
  })

  it('runs the internal tools', async () => {
    const keys = await call('billing:_rotateKeys', {})
    expectValid(tool('billing:_rotateKeys').outputSchema!, keys, 'billing:_rotateKeys')
    expect(keys).toMatchObject({ environment: 'live', revokedKeyIds: ['key_01'], newKeyId: 'key_03' })
  })
})
