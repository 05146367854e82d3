import { ToolError } from '../errors.mjs'
import {
  ANNOTATIONS,
  BASE_DATE,
  PLANS,
  addMonths,
  clone,
  couponProblem,
  createInvoiceRecord,
  defineTools,
  discountFor,
  findCoupon,
  getOrThrow,
  idProp,
  isoDate,
  issueRefund,
  listOutput,
  money,
  nullable,
  paginate,
  paginationProps,
  planPrice,
  record,
  ref,
  settleInvoice,
  sum,
  taxRate,
} from '../data.mjs'

const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void', 'uncollectible']
const PAYMENT_STATUSES = ['succeeded', 'failed', 'refunded', 'partially_refunded']
const METHODS = ['card', 'bank_transfer', 'paypal']
const REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer', 'product_defective', 'order_cancelled', 'other']
const SUB_STATUSES = ['trialing', 'active', 'past_due', 'paused', 'cancelled']
const PAID_PLANS = ['starter', 'pro', 'enterprise']

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const date = { type: 'string', format: 'date' }
const userId = idProp('User', 'usr_001')
const invoiceId = idProp('Invoice', 'inv_001')
const paymentId = idProp('Payment', 'pay_001')
const subscriptionId = idProp('Subscription', 'sub_001')
const currency = { type: 'string', enum: ['USD', 'EUR', 'GBP'] }
const nullableId = nullable({ type: 'string' })

const InvoiceLine = record({
  description: { type: 'string' },
  quantity: { type: 'integer', minimum: 1 },
  unitAmount: ref('Money'),
  amount: ref('Money'),
})
const Invoice = record(
  {
    id: invoiceId,
    number: { type: 'string', description: 'Human-facing invoice number, e.g. INV-2025-0042.' },
    userId,
    orderId: nullableId,
    subscriptionId: nullableId,
    status: { type: 'string', enum: INVOICE_STATUSES },
    currency,
    lines: { type: 'array', items: InvoiceLine, minItems: 1 },
    subtotal: ref('Money'),
    discount: ref('Money'),
    tax: ref('Money'),
    total: ref('Money'),
    amountPaid: ref('Money'),
    amountDue: ref('Money'),
    memo: nullable({ type: 'string' }),
    issuedAt: dateTime,
    dueDate: date,
    paidAt: nullable(dateTime),
    voidedAt: nullable(dateTime),
    sentAt: nullable(dateTime),
    hostedUrl: { type: 'string', format: 'uri', description: 'Customer-facing page of the invoice.' },
    metadata: ref('Metadata'),
  },
  { description: 'An invoice for an order or a subscription period. Amounts are in cents.' },
)
const Payment = record({
  id: paymentId,
  userId,
  invoiceId: nullableId,
  orderId: nullableId,
  amount: ref('Money'),
  amountRefunded: ref('Money'),
  status: { type: 'string', enum: PAYMENT_STATUSES },
  method: record({
    type: { type: 'string', enum: METHODS },
    brand: nullable({ type: 'string', enum: ['visa', 'mastercard', 'amex'] }),
    last4: nullable({ type: 'string', minLength: 4, maxLength: 4 }),
  }),
  failureCode: nullable({ type: 'string' }),
  description: nullable({ type: 'string' }),
  createdAt: dateTime,
})
const Refund = record({
  id: idProp('Refund', 'ref_001'),
  paymentId,
  orderId: nullableId,
  userId,
  amount: ref('Money'),
  reason: { type: 'string', enum: REFUND_REASONS },
  status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
  note: nullable({ type: 'string' }),
  createdAt: dateTime,
})
const Subscription = record({
  id: subscriptionId,
  userId,
  tenantId: { type: 'string' },
  plan: { type: 'string', enum: PAID_PLANS },
  status: { type: 'string', enum: SUB_STATUSES },
  interval: { type: 'string', enum: ['month', 'year'] },
  seats: { type: 'integer', minimum: 1 },
  unitPrice: { ...ref('Money'), description: 'Price per seat per interval.' },
  couponCode: nullable({ type: 'string' }),
  trialEndsAt: nullable(dateTime),
  currentPeriodStart: dateTime,
  currentPeriodEnd: dateTime,
  cancelAtPeriodEnd: { type: 'boolean' },
  cancelledAt: nullable(dateTime),
  pausedAt: nullable(dateTime),
  resumesOn: nullable(date),
  createdAt: dateTime,
  updatedAt: dateTime,
})
const Plan = record({
  id: { type: 'string', enum: ['free', ...PAID_PLANS] },
  name: { type: 'string' },
  monthlyPricePerSeat: ref('Money'),
  yearlyPricePerSeat: ref('Money'),
  maxSeats: { type: 'integer', minimum: 1 },
  features: { type: 'array', items: { type: 'string' } },
})
const Coupon = record({
  id: idProp('Coupon', 'cpn_001'),
  code: { type: 'string' },
  percentOff: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 100 }),
  amountOff: nullable(ref('Money')),
  duration: { type: 'string', enum: ['once', 'repeating', 'forever'] },
  durationInMonths: nullable({ type: 'integer', minimum: 1 }),
  maxRedemptions: nullable({ type: 'integer', minimum: 1 }),
  timesRedeemed: { type: 'integer', minimum: 0 },
  expiresAt: nullable(dateTime),
  active: { type: 'boolean' },
  createdAt: dateTime,
})
const ExportOutput = record({ format: { type: 'string', enum: ['csv', 'jsonl'] }, rowCount: { type: 'integer', minimum: 0 }, content: { type: 'string' }, generatedAt: dateTime })

// --- helpers --------------------------------------------------------------------------------

const userCountry = (store, id) => store.users.find((u) => u.id === id)?.address?.country ?? 'US'
const newestFirst = (key) => (a, b) => b[key].localeCompare(a[key])
const planView = (p) => ({ id: p.id, name: p.name, monthlyPricePerSeat: money(p.monthlyPerSeat), yearlyPricePerSeat: money(planPrice(p.id, 'year')), maxSeats: p.maxSeats, features: [...p.features] })

function assertSeats(planId, seats) {
  const plan = PLANS.find((p) => p.id === planId)
  if (seats > plan.maxSeats) throw new ToolError('INVALID_INPUT', `The ${plan.name} plan allows at most ${plan.maxSeats} seats`, { plan: planId, seats, maxSeats: plan.maxSeats })
}

function subscriptionLines(sub, periodStartIso) {
  const plan = PLANS.find((p) => p.id === sub.plan)
  return [{ description: `${plan.name} plan, ${sub.seats} seat(s), ${sub.interval}ly from ${periodStartIso.slice(0, 10)}`, quantity: sub.seats, unitAmount: money(sub.unitPrice.amount), amount: money(sub.unitPrice.amount * sub.seats) }]
}

function couponDiscount(store, code, subtotal) {
  if (!code) return 0
  const coupon = store.coupons.find((c) => c.code === code)
  return coupon && !couponProblem(coupon, BASE_DATE) ? discountFor(coupon, subtotal) : 0
}

const toCsv = (rows, fields) => [fields.join(','), ...rows.map((r) => fields.map((f) => JSON.stringify(r[f] ?? '')).join(','))].join('\n')

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'billing:listInvoices',
    title: 'List invoices',
    description: 'List invoices newest first, filtered by user, status, order, subscription or due date. Returns full invoices (lines and totals in cents) with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        status: { type: 'string', enum: INVOICE_STATUSES },
        orderId: idProp('Order', 'ord_001'),
        subscriptionId,
        dueBefore: { ...date, description: 'Only invoices due strictly before this date (useful with status "open" to find overdue ones).' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(Invoice),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination'],
    examples: [
      { description: 'Overdue open invoices', input: { status: 'open', dueBefore: '2026-01-01' } },
      { description: 'Invoices of one customer', input: { userId: 'usr_001', limit: 5 } },
    ],
    handler: async ({ userId, status, orderId, subscriptionId, dueBefore, limit, cursor }, { store }) => {
      const invoices = store.invoices
        .filter((i) => (!userId || i.userId === userId) && (!status || i.status === status) && (!orderId || i.orderId === orderId) && (!subscriptionId || i.subscriptionId === subscriptionId) && (!dueBefore || i.dueDate < dueBefore))
        .sort(newestFirst('issuedAt'))
      return paginate(invoices, { limit, cursor })
    },
  },
  {
    name: 'billing:getInvoice',
    title: 'Get an invoice',
    description: 'Fetch one invoice by id or by its number (at least one of invoiceId / number). Returns the invoice with lines, totals and payment state.',
    inputSchema: {
      type: 'object',
      properties: {
        invoiceId,
        number: { type: 'string', minLength: 3, description: 'Invoice number such as INV-2025-0042.' },
      },
      anyOf: [{ required: ['invoiceId'] }, { required: ['number'] }],
      additionalProperties: false,
    },
    outputSchema: Invoice,
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    handler: async ({ invoiceId, number }, { store }) => {
      if (invoiceId) return clone(getOrThrow(store.invoices, invoiceId, 'Invoice'))
      const invoice = store.invoices.find((i) => i.number === number)
      if (!invoice) throw new ToolError('NOT_FOUND', `Invoice ${number} not found`, { kind: 'Invoice', id: number })
      return clone(invoice)
    },
  },
  {
    name: 'billing:createInvoice',
    title: 'Create an invoice',
    description: 'Create an open invoice for a user from free-form lines (unit amounts in cents, one currency). Tax is added from the user\'s country. Returns the invoice.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        lines: {
          type: 'array',
          minItems: 1,
          maxItems: 50,
          items: {
            type: 'object',
            properties: {
              description: { type: 'string', minLength: 1, maxLength: 200 },
              quantity: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
              unitAmount: ref('Money'),
            },
            required: ['description', 'unitAmount'],
            additionalProperties: false,
          },
        },
        dueDate: { ...date, description: 'Defaults to 14 days after issue.' },
        orderId: idProp('Order', 'ord_001'),
        memo: { type: 'string', maxLength: 1000 },
        metadata: ref('Metadata'),
      },
      required: ['userId', 'lines'],
      additionalProperties: false,
    },
    outputSchema: Invoice,
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    examples: [
      {
        description: 'Invoice a consulting day',
        input: { userId: 'usr_004', lines: [{ description: 'On-site consulting day', quantity: 1, unitAmount: { amount: 120000, currency: 'USD' } }], dueDate: '2026-01-31', metadata: { po: 'PO-7781' } },
      },
    ],
    handler: async ({ userId, lines, dueDate, orderId = null, memo = null, metadata = {} }, { store }) => {
      getOrThrow(store.users, userId, 'User')
      if (orderId) getOrThrow(store.orders, orderId, 'Order')
      const currencies = new Set(lines.map((l) => l.unitAmount.currency))
      if (currencies.size > 1) throw new ToolError('INVALID_INPUT', `All lines must use one currency, got ${[...currencies].join(', ')}`)
      if (!currencies.has('USD')) throw new ToolError('INVALID_INPUT', 'This account bills in USD only')
      const invoiceLines = lines.map(({ description, quantity = 1, unitAmount }) => ({ description, quantity, unitAmount: money(unitAmount.amount), amount: money(unitAmount.amount * quantity) }))
      const invoice = createInvoiceRecord(store, { userId, orderId, lines: invoiceLines, country: userCountry(store, userId), memo, metadata, dueDate })
      return clone(invoice)
    },
  },
  {
    name: 'billing:sendInvoice',
    title: 'Email an invoice',
    description: 'Email an invoice to the customer (or another address) with optional CCs; a draft becomes open. CONFLICT for void invoices. Returns the recipients and send time.',
    inputSchema: {
      type: 'object',
      properties: {
        invoiceId,
        to: { type: 'string', format: 'email', description: 'Defaults to the customer\'s email.' },
        cc: { type: 'array', items: { type: 'string', format: 'email' }, maxItems: 5, uniqueItems: true },
      },
      required: ['invoiceId'],
      additionalProperties: false,
    },
    outputSchema: record({ invoiceId, sentTo: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 1 }, sentAt: dateTime }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'email'],
    handler: async ({ invoiceId, to, cc = [] }, { store }) => {
      const invoice = getOrThrow(store.invoices, invoiceId, 'Invoice')
      if (invoice.status === 'void') throw new ToolError('CONFLICT', `Invoice ${invoiceId} is void and cannot be sent`)
      const recipient = to ?? store.users.find((u) => u.id === invoice.userId)?.email
      if (!recipient) throw new ToolError('INVALID_INPUT', `The customer of ${invoiceId} no longer exists; pass "to"`)
      if (invoice.status === 'draft') invoice.status = 'open'
      invoice.sentAt = store.now()
      return { invoiceId, sentTo: [recipient, ...cc], sentAt: invoice.sentAt }
    },
  },
  {
    name: 'billing:voidInvoice',
    title: 'Void an invoice',
    description: 'Void an open or draft invoice so it is no longer collectable; CONFLICT when it is already paid or void. Returns the invoice.',
    inputSchema: { type: 'object', properties: { invoiceId, reason: { type: 'string', maxLength: 500 } }, required: ['invoiceId'], additionalProperties: false },
    outputSchema: Invoice,
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ invoiceId, reason }, { store }) => {
      const invoice = getOrThrow(store.invoices, invoiceId, 'Invoice')
      if (['paid', 'void'].includes(invoice.status)) throw new ToolError('CONFLICT', `Invoice ${invoiceId} is ${invoice.status} and cannot be voided`, { status: invoice.status })
      Object.assign(invoice, { status: 'void', voidedAt: store.now(), amountDue: money(0, invoice.currency), ...(reason ? { memo: reason } : {}) })
      return clone(invoice)
    },
  },
  {
    name: 'billing:payInvoice',
    title: 'Pay an invoice',
    description: 'Collect the amount due on an open invoice with the customer\'s saved payment method; a pending order linked to it becomes paid. Returns the paid invoice and the new payment.',
    inputSchema: {
      type: 'object',
      properties: { invoiceId, method: { type: 'string', enum: METHODS, default: 'card', description: 'Saved payment method to charge.' } },
      required: ['invoiceId'],
      additionalProperties: false,
    },
    outputSchema: record({ invoice: Invoice, payment: Payment }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'payments'],
    handler: async ({ invoiceId, method = 'card' }, { store }) => {
      const invoice = getOrThrow(store.invoices, invoiceId, 'Invoice')
      const payment = settleInvoice(store, invoice, method)
      return { invoice: clone(invoice), payment: clone(payment) }
    },
  },
  {
    name: 'billing:listPayments',
    title: 'List payments',
    description: 'List payments newest first, filtered by user, order, status, method, creation time range or minimum amount (cents). Returns payments with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        orderId: idProp('Order', 'ord_001'),
        status: { type: 'string', enum: PAYMENT_STATUSES },
        method: { type: 'string', enum: METHODS },
        from: { ...dateTime, description: 'Created at or after.' },
        to: { ...dateTime, description: 'Created at or before.' },
        minAmount: { type: 'integer', minimum: 0, description: 'Minimum amount in cents.' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(Payment),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'payments'],
    handler: async ({ userId, orderId, status, method, from, to, minAmount, limit, cursor }, { store }) => {
      const payments = store.payments
        .filter((p) =>
          (!userId || p.userId === userId) && (!orderId || p.orderId === orderId) && (!status || p.status === status) && (!method || p.method.type === method) &&
          (!from || Date.parse(p.createdAt) >= Date.parse(from)) && (!to || Date.parse(p.createdAt) <= Date.parse(to)) && (minAmount == null || p.amount.amount >= minAmount))
        .sort(newestFirst('createdAt'))
      return paginate(payments, { limit, cursor })
    },
  },
  {
    name: 'billing:getPayment',
    title: 'Get a payment',
    description: 'Fetch one payment with its amount, refunded amount, status and payment method (brand and last 4 digits).',
    inputSchema: { type: 'object', properties: { paymentId }, required: ['paymentId'], additionalProperties: false },
    outputSchema: Payment,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'payments'],
    handler: async ({ paymentId }, { store }) => clone(getOrThrow(store.payments, paymentId, 'Payment')),
  },
  {
    name: 'billing:refundPayment',
    title: 'Refund a payment',
    description: 'Refund all or part of a payment; amount is in cents and defaults to everything not yet refunded. Throws PAYMENT_DECLINED when the amount exceeds the refundable remainder. Returns the refund and the updated payment.',
    inputSchema: {
      type: 'object',
      properties: {
        paymentId,
        amount: { type: 'integer', minimum: 1, description: 'Amount to refund in cents; omit for a full refund of the remainder.' },
        reason: { type: 'string', enum: REFUND_REASONS, default: 'requested_by_customer' },
        note: { type: 'string', maxLength: 500 },
      },
      required: ['paymentId'],
      additionalProperties: false,
    },
    outputSchema: record({ refund: Refund, payment: Payment }),
    annotations: { ...ANNOTATIONS.destructive, openWorldHint: true },
    tags: ['write', 'payments', 'refunds'],
    examples: [{ description: 'Refund $10 of a payment', input: { paymentId: 'pay_010', amount: 1000, reason: 'product_defective', note: 'Scratched lamp shade' } }],
    handler: async ({ paymentId, amount, reason = 'requested_by_customer', note = null }, { store }) => {
      const payment = getOrThrow(store.payments, paymentId, 'Payment')
      const refund = issueRefund(store, payment, { amount, reason, note })
      return { refund: clone(refund), payment: clone(payment) }
    },
  },
  {
    name: 'billing:listRefunds',
    title: 'List refunds',
    description: 'List refunds newest first, filtered by payment, order, user or reason. Returns refunds with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: { paymentId, orderId: idProp('Order', 'ord_001'), userId, reason: { type: 'string', enum: REFUND_REASONS }, ...paginationProps },
      additionalProperties: false,
    },
    outputSchema: listOutput(Refund),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'refunds'],
    handler: async ({ paymentId, orderId, userId, reason, limit, cursor }, { store }) => {
      const refunds = store.refunds
        .filter((r) => (!paymentId || r.paymentId === paymentId) && (!orderId || r.orderId === orderId) && (!userId || r.userId === userId) && (!reason || r.reason === reason))
        .sort(newestFirst('createdAt'))
      return paginate(refunds, { limit, cursor })
    },
  },
  {
    name: 'billing:getRefund',
    title: 'Get a refund',
    description: 'Fetch one refund with its payment, order, amount (cents) and reason.',
    inputSchema: { type: 'object', properties: { refundId: idProp('Refund', 'ref_001') }, required: ['refundId'], additionalProperties: false },
    outputSchema: Refund,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'refunds'],
    handler: async ({ refundId }, { store }) => clone(getOrThrow(store.refunds, refundId, 'Refund')),
  },
  {
    name: 'billing:listSubscriptions',
    title: 'List subscriptions',
    description: 'List subscriptions filtered by user, tenant, status or plan. Returns subscriptions with plan, seats, per-seat price and current period, plus total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        tenantId: { type: 'string', enum: ['t_acme', 't_globex'] },
        status: { type: 'string', enum: SUB_STATUSES },
        plan: { type: 'string', enum: PAID_PLANS },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(Subscription),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'subscriptions'],
    handler: async ({ userId, tenantId, status, plan, limit, cursor }, { store }) =>
      paginate(store.subscriptions.filter((s) => (!userId || s.userId === userId) && (!tenantId || s.tenantId === tenantId) && (!status || s.status === status) && (!plan || s.plan === plan)), { limit, cursor }),
  },
  {
    name: 'billing:getSubscription',
    title: 'Get a subscription',
    description: 'Fetch one subscription with its plan, status, seats, price per seat and billing period.',
    inputSchema: { type: 'object', properties: { subscriptionId }, required: ['subscriptionId'], additionalProperties: false },
    outputSchema: Subscription,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'subscriptions'],
    handler: async ({ subscriptionId }, { store }) => clone(getOrThrow(store.subscriptions, subscriptionId, 'Subscription')),
  },
  {
    name: 'billing:createSubscription',
    title: 'Start a subscription',
    description: 'Subscribe a user to a paid plan with a seat count, optional trial and coupon; CONFLICT if the user already has a live subscription. Returns the subscription and its first open invoice (null during a trial).',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        plan: { type: 'string', enum: PAID_PLANS },
        interval: { type: 'string', enum: ['month', 'year'], default: 'month', description: 'Yearly billing costs ten months.' },
        seats: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
        couponCode: { type: 'string', minLength: 3, maxLength: 20 },
        trialDays: { type: 'integer', minimum: 0, maximum: 30, default: 0 },
      },
      required: ['userId', 'plan'],
      additionalProperties: false,
    },
    outputSchema: record({ subscription: Subscription, invoice: nullable(Invoice) }),
    annotations: ANNOTATIONS.create,
    tags: ['write', 'subscriptions'],
    handler: async ({ userId, plan, interval = 'month', seats = 1, couponCode, trialDays = 0 }, { store }) => {
      const user = getOrThrow(store.users, userId, 'User')
      const live = store.subscriptions.find((s) => s.userId === userId && s.status !== 'cancelled')
      if (live) throw new ToolError('CONFLICT', `User ${userId} already has subscription ${live.id} (${live.status}); change its plan instead`, { subscriptionId: live.id })
      assertSeats(plan, seats)
      let code = null
      if (couponCode) {
        const coupon = findCoupon(store, couponCode)
        const problem = couponProblem(coupon, BASE_DATE)
        if (problem) throw new ToolError('INVALID_INPUT', `${problem}: ${coupon.code}`)
        coupon.timesRedeemed++
        code = coupon.code
      }
      const now = store.now()
      const start = Date.parse(now)
      const periodStart = trialDays ? start + trialDays * 86_400_000 : start
      const sub = {
        id: store.nextId('sub'),
        userId,
        tenantId: user.tenantId,
        plan,
        status: trialDays ? 'trialing' : 'active',
        interval,
        seats,
        unitPrice: money(planPrice(plan, interval)),
        couponCode: code,
        trialEndsAt: trialDays ? new Date(periodStart).toISOString() : null,
        currentPeriodStart: now,
        currentPeriodEnd: new Date(trialDays ? periodStart : addMonths(start, interval === 'year' ? 12 : 1)).toISOString(),
        cancelAtPeriodEnd: false,
        cancelledAt: null,
        pausedAt: null,
        resumesOn: null,
        createdAt: now,
        updatedAt: now,
      }
      store.subscriptions.push(sub)
      user.plan = plan
      let invoice = null
      if (!trialDays) {
        const lines = subscriptionLines(sub, now)
        invoice = createInvoiceRecord(store, { userId, subscriptionId: sub.id, lines, discount: couponDiscount(store, code, lines[0].amount.amount), country: userCountry(store, userId) })
      }
      return { subscription: clone(sub), invoice: invoice && clone(invoice) }
    },
  },
  {
    name: 'billing:cancelSubscription',
    title: 'Cancel a subscription',
    description: 'Cancel a subscription at the end of the current period (default) or immediately; CONFLICT if already cancelled. Returns the updated subscription.',
    inputSchema: {
      type: 'object',
      properties: {
        subscriptionId,
        atPeriodEnd: { type: 'boolean', default: true, description: 'Keep access until currentPeriodEnd instead of cancelling now.' },
        reason: { type: 'string', enum: ['too_expensive', 'missing_features', 'switched_service', 'unused', 'other'] },
        feedback: { type: 'string', maxLength: 1000 },
      },
      required: ['subscriptionId'],
      additionalProperties: false,
    },
    outputSchema: Subscription,
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'subscriptions', 'destructive'],
    handler: async ({ subscriptionId, atPeriodEnd = true }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status === 'cancelled') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is already cancelled`)
      const now = store.now()
      if (atPeriodEnd) sub.cancelAtPeriodEnd = true
      else Object.assign(sub, { status: 'cancelled', cancelledAt: now, cancelAtPeriodEnd: false })
      sub.updatedAt = now
      return clone(sub)
    },
  },
  {
    name: 'billing:changePlan',
    title: 'Change subscription plan',
    description: 'Move a subscription to another plan and/or seat count. With prorate, returns the prorated difference in cents for the rest of the period (negative means a credit). Returns the subscription, previous plan and proration.',
    inputSchema: {
      type: 'object',
      properties: {
        subscriptionId,
        plan: { type: 'string', enum: PAID_PLANS },
        seats: { type: 'integer', minimum: 1, maximum: 1000 },
        prorate: { type: 'boolean', default: true },
      },
      required: ['subscriptionId'],
      anyOf: [{ required: ['plan'] }, { required: ['seats'] }],
      additionalProperties: false,
    },
    outputSchema: record({
      subscription: Subscription,
      previousPlan: { type: 'string', enum: PAID_PLANS },
      previousSeats: { type: 'integer', minimum: 1 },
      prorationAmount: { type: 'integer', description: 'Cents charged (positive) or credited (negative) now.' },
    }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'subscriptions'],
    handler: async ({ subscriptionId, plan, seats, prorate = true }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status === 'cancelled') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is cancelled`)
      const nextPlan = plan ?? sub.plan
      const nextSeats = seats ?? sub.seats
      assertSeats(nextPlan, nextSeats)
      const previous = { previousPlan: sub.plan, previousSeats: sub.seats }
      const now = store.now()
      const start = Date.parse(sub.currentPeriodStart)
      const end = Date.parse(sub.currentPeriodEnd)
      const remaining = Math.min(1, Math.max(0, (end - Date.parse(now)) / (end - start)))
      const nextUnit = planPrice(nextPlan, sub.interval)
      const prorationAmount = prorate ? Math.round((nextUnit * nextSeats - sub.unitPrice.amount * sub.seats) * remaining) : 0
      Object.assign(sub, { plan: nextPlan, seats: nextSeats, unitPrice: money(nextUnit), updatedAt: now })
      const user = store.users.find((u) => u.id === sub.userId)
      if (user) user.plan = nextPlan
      return { subscription: clone(sub), ...previous, prorationAmount }
    },
  },
  {
    name: 'billing:pauseSubscription',
    title: 'Pause a subscription',
    description: 'Pause billing of an active subscription, optionally until a date; CONFLICT unless active. Returns the subscription.',
    inputSchema: {
      type: 'object',
      properties: { subscriptionId, resumeOn: { ...date, description: 'Resume automatically on this date.' } },
      required: ['subscriptionId'],
      additionalProperties: false,
    },
    outputSchema: Subscription,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'subscriptions'],
    handler: async ({ subscriptionId, resumeOn = null }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status !== 'active') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is ${sub.status}; only active subscriptions can be paused`)
      const now = store.now()
      if (resumeOn && resumeOn <= now.slice(0, 10)) throw new ToolError('INVALID_INPUT', 'resumeOn must be in the future')
      Object.assign(sub, { status: 'paused', pausedAt: now, resumesOn: resumeOn, updatedAt: now })
      return clone(sub)
    },
  },
  {
    name: 'billing:resumeSubscription',
    title: 'Resume a subscription',
    description: 'Resume a paused subscription now, starting a new billing period; CONFLICT unless paused. Returns the subscription.',
    inputSchema: { type: 'object', properties: { subscriptionId }, required: ['subscriptionId'], additionalProperties: false },
    outputSchema: Subscription,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'subscriptions'],
    handler: async ({ subscriptionId }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status !== 'paused') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is ${sub.status}, not paused`)
      const now = store.now()
      Object.assign(sub, { status: 'active', pausedAt: null, resumesOn: null, currentPeriodStart: now, currentPeriodEnd: new Date(addMonths(Date.parse(now), sub.interval === 'year' ? 12 : 1)).toISOString(), updatedAt: now })
      return clone(sub)
    },
  },
  {
    name: 'billing:listPlans',
    title: 'List plans',
    description: 'List the subscription plans with monthly and yearly per-seat prices (cents), seat limits and features.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputSchema: listOutput(Plan),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'catalog'],
    handler: async (_input, { store }) => ({ items: store.plans.map(planView), total: store.plans.length }),
  },
  {
    name: 'billing:listCoupons',
    title: 'List coupons',
    description: 'List coupons, optionally only active ones, optionally hiding expired ones. Returns coupons with discount, duration and redemption counts.',
    inputSchema: {
      type: 'object',
      properties: {
        active: { type: 'boolean', description: 'Filter on the active flag.' },
        includeExpired: { type: 'boolean', default: true },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(Coupon),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'coupons'],
    handler: async ({ active, includeExpired = true, limit, cursor }, { store }) =>
      paginate(store.coupons.filter((c) => (active == null || c.active === active) && (includeExpired || !c.expiresAt || c.expiresAt >= BASE_DATE)), { limit, cursor }),
  },
  {
    name: 'billing:createCoupon',
    title: 'Create a coupon',
    description: 'Create a coupon giving either a percentage or a fixed amount off, used once, for some months (durationInMonths required) or forever. CONFLICT if the code exists. Returns the coupon.',
    inputSchema: {
      type: 'object',
      properties: {
        code: { type: 'string', minLength: 3, maxLength: 20, description: 'Upper-cased on save, e.g. SUMMER20.' },
        discount: {
          description: 'Either { percentOff } or { amountOff }.',
          oneOf: [
            { type: 'object', properties: { percentOff: { type: 'number', exclusiveMinimum: 0, maximum: 100 } }, required: ['percentOff'], additionalProperties: false },
            { type: 'object', properties: { amountOff: ref('Money') }, required: ['amountOff'], additionalProperties: false },
          ],
        },
        duration: { type: 'string', enum: ['once', 'repeating', 'forever'], default: 'once' },
        durationInMonths: { type: 'integer', minimum: 1, maximum: 36 },
        maxRedemptions: { type: 'integer', minimum: 1 },
        expiresAt: { type: 'string', format: 'date-time' },
      },
      required: ['code', 'discount'],
      if: { properties: { duration: { const: 'repeating' } }, required: ['duration'] },
      then: { required: ['durationInMonths'] },
      additionalProperties: false,
    },
    outputSchema: Coupon,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'coupons'],
    examples: [
      { description: '20% off for three months', input: { code: 'SUMMER20', discount: { percentOff: 20 }, duration: 'repeating', durationInMonths: 3, maxRedemptions: 100 } },
      { description: '$15 off once', input: { code: 'SORRY15', discount: { amountOff: { amount: 1500, currency: 'USD' } } } },
    ],
    handler: async ({ code, discount, duration = 'once', durationInMonths, maxRedemptions = null, expiresAt = null }, { store }) => {
      const normalized = code.toUpperCase()
      if (store.coupons.some((c) => c.code === normalized)) throw new ToolError('CONFLICT', `Coupon ${normalized} already exists`)
      if (duration === 'repeating' && !durationInMonths) throw new ToolError('INVALID_INPUT', 'durationInMonths is required for repeating coupons')
      const coupon = {
        id: store.nextId('cpn'),
        code: normalized,
        percentOff: discount.percentOff ?? null,
        amountOff: discount.amountOff ? money(discount.amountOff.amount, discount.amountOff.currency) : null,
        duration,
        durationInMonths: duration === 'repeating' ? durationInMonths : null,
        maxRedemptions,
        timesRedeemed: 0,
        expiresAt,
        active: true,
        createdAt: store.now(),
      }
      store.coupons.push(coupon)
      return clone(coupon)
    },
  },
  {
    name: 'billing:validateCoupon',
    title: 'Check a coupon',
    description: 'Check whether a coupon code can be used today and, given a subtotal in cents, how much it would take off. Never throws for unknown codes: returns valid=false with a reason.',
    inputSchema: {
      type: 'object',
      properties: {
        code: { type: 'string', pattern: '^[A-Za-z0-9]{3,20}$', examples: ['WELCOME10'], description: 'Coupon code, letters and digits.' },
        subtotal: { type: 'integer', minimum: 0, description: 'Order or invoice subtotal in cents to compute the discount for.' },
      },
      required: ['code'],
      additionalProperties: false,
    },
    outputSchema: record({
      code: { type: 'string' },
      valid: { type: 'boolean' },
      reason: nullable({ type: 'string' }),
      percentOff: nullable({ type: 'number' }),
      amountOff: nullable(ref('Money')),
      estimatedDiscount: nullable(ref('Money')),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'coupons'],
    examples: [
      {
        description: '10% off a $50 basket',
        input: { code: 'WELCOME10', subtotal: 5000 },
        output: { code: 'WELCOME10', valid: true, reason: null, percentOff: 10, amountOff: null, estimatedDiscount: { amount: 500, currency: 'USD' } },
      },
      {
        description: 'An expired code',
        input: { code: 'spring25' },
        output: { code: 'SPRING25', valid: false, reason: 'Coupon expired on 2025-06-30', percentOff: null, amountOff: { amount: 2500, currency: 'USD' }, estimatedDiscount: null },
      },
    ],
    handler: async ({ code, subtotal }, { store }) => {
      const coupon = store.coupons.find((c) => c.code === code.toUpperCase())
      if (!coupon) return { code: code.toUpperCase(), valid: false, reason: 'Coupon not found', percentOff: null, amountOff: null, estimatedDiscount: null }
      const problem = couponProblem(coupon, BASE_DATE)
      return {
        code: coupon.code,
        valid: !problem,
        reason: problem,
        percentOff: coupon.percentOff,
        amountOff: coupon.amountOff && clone(coupon.amountOff),
        estimatedDiscount: !problem && subtotal != null ? money(discountFor(coupon, subtotal)) : null,
      }
    },
  },
  {
    name: 'billing:applyCoupon',
    title: 'Apply a coupon to a subscription',
    description: 'Attach a valid coupon to a subscription for its upcoming invoices; INVALID_INPUT if the coupon is expired, inactive or used up, CONFLICT if the subscription is cancelled. Returns the subscription.',
    inputSchema: {
      type: 'object',
      properties: { subscriptionId, code: { type: 'string', minLength: 3, maxLength: 20 } },
      required: ['subscriptionId', 'code'],
      additionalProperties: false,
    },
    outputSchema: Subscription,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'coupons', 'subscriptions'],
    handler: async ({ subscriptionId, code }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status === 'cancelled') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is cancelled`)
      const coupon = findCoupon(store, code)
      if (sub.couponCode === coupon.code) return clone(sub)
      const problem = couponProblem(coupon, BASE_DATE)
      if (problem) throw new ToolError('INVALID_INPUT', `${problem}: ${coupon.code}`)
      coupon.timesRedeemed++
      Object.assign(sub, { couponCode: coupon.code, updatedAt: store.now() })
      return clone(sub)
    },
  },
  {
    name: 'billing:deleteCoupon',
    title: 'Delete a coupon',
    description: 'Delete a coupon so it can no longer be redeemed; subscriptions that already use it keep their discount. Returns the deleted id and code.',
    inputSchema: { type: 'object', properties: { couponId: idProp('Coupon', 'cpn_001') }, required: ['couponId'], additionalProperties: false },
    outputSchema: record({ deleted: { type: 'boolean', const: true }, couponId: { type: 'string' }, code: { type: 'string' } }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'coupons', 'destructive'],
    handler: async ({ couponId }, { store }) => {
      const coupon = getOrThrow(store.coupons, couponId, 'Coupon')
      store.coupons.splice(store.coupons.indexOf(coupon), 1)
      return { deleted: true, couponId, code: coupon.code }
    },
  },
  {
    name: 'billing:getBalance',
    title: 'Get a customer balance',
    description: 'Summarise what a user owes and has paid: outstanding amount on open invoices, overdue count, next due date, and lifetime paid and refunded (all cents).',
    inputSchema: { type: 'object', properties: { userId }, required: ['userId'], additionalProperties: false },
    outputSchema: record({
      userId,
      outstanding: ref('Money'),
      openInvoices: { type: 'integer', minimum: 0 },
      overdueInvoices: { type: 'integer', minimum: 0 },
      nextDueDate: nullable(date),
      lifetimePaid: ref('Money'),
      lifetimeRefunded: ref('Money'),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    handler: async ({ userId }, { store }) => {
      getOrThrow(store.users, userId, 'User')
      const today = BASE_DATE.slice(0, 10)
      const open = store.invoices.filter((i) => i.userId === userId && i.status === 'open')
      const paid = store.payments.filter((p) => p.userId === userId && p.status !== 'failed')
      return {
        userId,
        outstanding: money(sum(open.map((i) => i.amountDue.amount))),
        openInvoices: open.length,
        overdueInvoices: open.filter((i) => i.dueDate < today).length,
        nextDueDate: open.map((i) => i.dueDate).filter((d) => d >= today).sort()[0] ?? null,
        lifetimePaid: money(sum(paid.map((p) => p.amount.amount))),
        lifetimeRefunded: money(sum(paid.map((p) => p.amountRefunded.amount))),
      }
    },
  },
  {
    name: 'billing:previewInvoice',
    title: 'Preview the next invoice',
    description: 'Preview the next invoice of a subscription, optionally as if it had another plan or seat count; applies its coupon and tax. CONFLICT for cancelled subscriptions. Returns the period, lines and totals in cents.',
    inputSchema: {
      type: 'object',
      properties: { subscriptionId, plan: { type: 'string', enum: PAID_PLANS }, seats: { type: 'integer', minimum: 1, maximum: 1000 } },
      required: ['subscriptionId'],
      additionalProperties: false,
    },
    outputSchema: record({
      subscriptionId,
      periodStart: dateTime,
      periodEnd: dateTime,
      lines: { type: 'array', items: InvoiceLine, minItems: 1 },
      subtotal: ref('Money'),
      discount: ref('Money'),
      tax: ref('Money'),
      total: ref('Money'),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'subscriptions'],
    handler: async ({ subscriptionId, plan, seats }, { store }) => {
      const sub = getOrThrow(store.subscriptions, subscriptionId, 'Subscription')
      if (sub.status === 'cancelled') throw new ToolError('CONFLICT', `Subscription ${subscriptionId} is cancelled; there is no next invoice`)
      const what = { ...sub, plan: plan ?? sub.plan, seats: seats ?? sub.seats, unitPrice: money(planPrice(plan ?? sub.plan, sub.interval)) }
      const periodStart = sub.currentPeriodEnd
      const periodEnd = new Date(addMonths(Date.parse(periodStart), sub.interval === 'year' ? 12 : 1)).toISOString()
      const lines = subscriptionLines(what, periodStart)
      const subtotal = lines[0].amount.amount
      const discount = couponDiscount(store, sub.couponCode, subtotal)
      const tax = Math.round((subtotal - discount) * taxRate(userCountry(store, sub.userId)))
      return { subscriptionId, periodStart, periodEnd, lines, subtotal: money(subtotal), discount: money(discount), tax: money(tax), total: money(subtotal - discount + tax) }
    },
  },
  {
    name: 'billing:chargeCard',
    title: 'Charge a card',
    description: 'Charge raw card details for a user immediately, optionally settling an open invoice. Moves real money: not available to scripts. Throws PAYMENT_DECLINED when the issuer declines. Returns the payment.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        amount: ref('Money'),
        card: {
          type: 'object',
          properties: {
            number: { type: 'string', minLength: 12, maxLength: 19, description: 'Card number, digits only.' },
            expMonth: { type: 'integer', minimum: 1, maximum: 12 },
            expYear: { type: 'integer', minimum: 2026, maximum: 2045 },
            cvc: { type: 'string', minLength: 3, maxLength: 4 },
          },
          required: ['number', 'expMonth', 'expYear', 'cvc'],
          additionalProperties: false,
        },
        invoiceId,
        description: { type: 'string', maxLength: 200 },
      },
      required: ['userId', 'amount', 'card'],
      additionalProperties: false,
    },
    outputSchema: Payment,
    annotations: ANNOTATIONS.external,
    tags: ['write', 'payments', 'dangerous'],
    codecall: { enabledInCodeCall: false },
    handler: async ({ userId, amount, card, invoiceId, description = null }, { store }) => {
      getOrThrow(store.users, userId, 'User')
      const invoice = invoiceId ? getOrThrow(store.invoices, invoiceId, 'Invoice') : null
      if (invoice && invoice.status !== 'open') throw new ToolError('CONFLICT', `Invoice ${invoiceId} is ${invoice.status}`)
      if (invoice && invoice.amountDue.amount !== amount.amount) throw new ToolError('INVALID_INPUT', `Amount must equal the ${invoice.amountDue.amount} due on ${invoiceId}`)
      const brand = card.number.startsWith('4') ? 'visa' : card.number.startsWith('3') ? 'amex' : 'mastercard'
      if (card.number.endsWith('0002')) throw new ToolError('PAYMENT_DECLINED', 'The card was declined by the issuer', { declineCode: 'generic_decline' })
      if (invoice) return clone(settleInvoice(store, invoice, 'card'))
      const payment = { id: store.nextId('pay'), userId, invoiceId: null, orderId: null, amount: money(amount.amount, amount.currency), amountRefunded: money(0, amount.currency), status: 'succeeded', method: { type: 'card', brand, last4: card.number.slice(-4) }, failureCode: null, description, createdAt: store.now() }
      store.payments.push(payment)
      return clone(payment)
    },
  },
  {
    name: 'billing:_rotateKeys',
    title: 'Rotate payment API keys (internal)',
    description: 'Internal: revoke the payment provider API keys of an environment and issue a new one. Returns the new key id and the revoked ones.',
    inputSchema: { type: 'object', properties: { environment: { type: 'string', enum: ['live', 'test'], default: 'live' } }, additionalProperties: false },
    outputSchema: record({ environment: { type: 'string', enum: ['live', 'test'] }, rotatedAt: dateTime, newKeyId: { type: 'string' }, revokedKeyIds: { type: 'array', items: { type: 'string' } } }),
    annotations: ANNOTATIONS.destructive,
    tags: ['internal', 'security'],
    internal: true,
    handler: async ({ environment = 'live' }, { store }) => {
      const revoked = store.apiKeys.filter((k) => k.environment === environment)
      const rotatedAt = store.now()
      const key = { id: store.nextId('key'), environment, last4: rotatedAt.slice(-8, -4).replace(/\D/g, '0'), createdAt: rotatedAt }
      store.apiKeys = [...store.apiKeys.filter((k) => k.environment !== environment), key]
      return { environment, rotatedAt, newKeyId: key.id, revokedKeyIds: revoked.map((k) => k.id) }
    },
  },
  {
    name: 'billing:exportInvoices',
    title: 'Export invoices',
    description: 'Export invoices issued between two dates (inclusive) as CSV or JSON Lines, optionally of one status. Returns the file content and row count.',
    inputSchema: {
      type: 'object',
      properties: {
        from: date,
        to: date,
        status: { type: 'string', enum: INVOICE_STATUSES },
        format: { type: 'string', enum: ['csv', 'jsonl'], default: 'csv' },
      },
      required: ['from', 'to'],
      additionalProperties: false,
    },
    outputSchema: ExportOutput,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'export'],
    handler: async ({ from, to, status, format = 'csv' }, { store }) => {
      if (from > to) throw new ToolError('INVALID_INPUT', '"from" must not be after "to"')
      const fields = ['number', 'id', 'userId', 'orderId', 'status', 'total', 'amountDue', 'issuedAt', 'dueDate']
      const rows = store.invoices
        .filter((i) => isoDate(Date.parse(i.issuedAt)) >= from && isoDate(Date.parse(i.issuedAt)) <= to && (!status || i.status === status))
        .map((i) => ({ ...Object.fromEntries(fields.map((f) => [f, i[f]])), total: i.total.amount, amountDue: i.amountDue.amount }))
      const content = format === 'csv' ? toCsv(rows, fields) : rows.map((r) => JSON.stringify(r)).join('\n')
      return { format, rowCount: rows.length, content, generatedAt: store.now() }
    },
  },
]

export default { appId: 'billing', tools: defineTools(tools) }
