import { setTimeout as sleep } from 'node:timers/promises'

import { ToolError } from '../errors.mjs'
import { ANNOTATIONS, BASE_DATE, clone, defineTools, getOrThrow, idProp, isoDate, listOutput, nullable, paginateOffset, paginationProps, record, ref, sum } from '../data.mjs'

const NOW = Date.parse(BASE_DATE)
const DAY = 86_400_000
const EVENT_NAMES = ['signup', 'login', 'product_viewed', 'cart_add', 'checkout_started', 'order_placed']
const REVENUE_STATUSES = ['paid', 'shipped', 'delivered']
const REPORTS = ['revenue_by_month', 'top_customers', 'ticket_volume', 'product_performance']
const TENANT_METRICS = ['revenue', 'orders', 'users', 'activeSubscriptions', 'mrr', 'openTickets', 'csat']
const METRICS = [
  { id: 'revenue', name: 'Net revenue', unit: 'cents', category: 'revenue', description: 'Order revenue (paid, shipped, delivered) minus refunds, by order date.' },
  { id: 'orders', name: 'Orders', unit: 'count', category: 'revenue', description: 'Orders placed, excluding cancelled ones.' },
  { id: 'aov', name: 'Average order value', unit: 'cents', category: 'revenue', description: 'Average total of revenue-generating orders.' },
  { id: 'refund_rate', name: 'Refund rate', unit: 'ratio', category: 'revenue', description: 'Refunded amount divided by paid amount.' },
  { id: 'mrr', name: 'Monthly recurring revenue', unit: 'cents', category: 'revenue', description: 'Monthly-normalised price of active and past-due subscriptions (period ignored).' },
  { id: 'arr', name: 'Annual recurring revenue', unit: 'cents', category: 'revenue', description: 'MRR × 12 (period ignored).' },
  { id: 'new_users', name: 'New users', unit: 'count', category: 'customers', description: 'Users created in the period.' },
  { id: 'active_users', name: 'Active users', unit: 'count', category: 'customers', description: 'Distinct users with a login or order event in the period.' },
  { id: 'churned_subscriptions', name: 'Churned subscriptions', unit: 'count', category: 'customers', description: 'Subscriptions cancelled in the period.' },
  { id: 'open_tickets', name: 'Open tickets', unit: 'count', category: 'support', description: 'Tickets not solved or closed right now (period ignored).' },
  { id: 'csat', name: 'Customer satisfaction', unit: 'score', category: 'support', description: 'Average 1–5 rating of tickets rated in the period.' },
  { id: 'first_response_minutes', name: 'Median first response', unit: 'minutes', category: 'support', description: 'Median minutes to first agent reply for tickets created in the period.' },
]

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const tenantId = { type: 'string', enum: ['t_acme', 't_globex'] }
const cents = (description) => ({ type: 'integer', description: `${description} in cents.` })
const ratio = { type: 'number', minimum: 0, maximum: 1 }
const PeriodOut = record({ from: { type: 'string', format: 'date' }, to: { type: 'string', format: 'date' } }, { description: 'The resolved window, inclusive.' })
const period = (preset) => ({ ...ref('Period'), description: `Time window; defaults to { "preset": "${preset}" }.` })
const EventSchema = record({
  id: idProp('Event', 'evt_00001'),
  userId: { type: 'string' },
  tenantId: { type: 'string' },
  name: { type: 'string' },
  properties: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
  occurredAt: dateTime,
})
const ExportSchema = record({
  exportId: { type: 'string' },
  report: { type: 'string', enum: REPORTS },
  format: { type: 'string', enum: ['csv', 'json'] },
  rowCount: { type: 'integer', minimum: 0 },
  url: { type: 'string', format: 'uri' },
  expiresAt: dateTime,
  createdAt: dateTime,
})

// --- helpers --------------------------------------------------------------------------------

const PRESET_DAYS = { last_7_days: 7, last_30_days: 30, last_90_days: 90, last_365_days: 365 }

/** Resolves a Period input to a half-open [from, to) window in ms. "Now" is 2026-01-01. */
function resolvePeriod(input, fallback) {
  const p = input ?? { preset: fallback }
  let from
  let to
  if (p.preset === 'all_time') [from, to] = [Date.UTC(2023, 0, 1), NOW]
  else if (p.preset) [from, to] = [NOW - PRESET_DAYS[p.preset] * DAY, NOW]
  else [from, to] = [Date.parse(p.from), Date.parse(p.to) + DAY]
  if (!(from < to)) throw new ToolError('INVALID_INPUT', `Empty period: "from" (${p.from}) must not be after "to" (${p.to})`)
  return { from, to, has: (iso) => iso != null && Date.parse(iso) >= from && Date.parse(iso) < to, out: { from: isoDate(from), to: isoDate(to - 1) } }
}

const round = (n, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits
const median = (values) => {
  if (!values.length) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const average = (values) => (values.length ? sum(values) / values.length : null)
const monthKey = (iso) => iso.slice(0, 7)

function tenantOf(store, userId) {
  return store.users.find((u) => u.id === userId)?.tenantId ?? store.orders.find((o) => o.userId === userId)?.tenantId ?? null
}
function refundedOn(store, order) {
  return order.paymentId ? sum(store.refunds.filter((r) => r.paymentId === order.paymentId).map((r) => r.amount.amount)) : 0
}
function revenueOrders(store, p, tenant) {
  return store.orders.filter((o) => [...REVENUE_STATUSES, 'refunded'].includes(o.status) && p.has(o.createdAt) && (!tenant || o.tenantId === tenant))
}
const netOf = (store, orders) => sum(orders.map((o) => o.total.amount - refundedOn(store, o)))

function mrrOf(store, tenant) {
  return Math.round(sum(store.subscriptions
    .filter((s) => ['active', 'past_due'].includes(s.status) && (!tenant || s.tenantId === tenant))
    .map((s) => (s.unitPrice.amount * s.seats) / (s.interval === 'year' ? 12 : 1))))
}
function csatOf(tickets) {
  const scores = tickets.filter((t) => t.satisfaction).map((t) => t.satisfaction.score)
  return scores.length ? round(average(scores)) : null
}
const openTicketsOf = (store, tenant) => store.tickets.filter((t) => !['solved', 'closed'].includes(t.status) && (!tenant || t.tenantId === tenant)).length

function metricValue(store, metric, p, tenant) {
  const orders = revenueOrders(store, p, tenant)
  const tickets = store.tickets.filter((t) => !tenant || t.tenantId === tenant)
  switch (metric) {
    case 'revenue': return netOf(store, orders)
    case 'orders': return store.orders.filter((o) => o.status !== 'cancelled' && p.has(o.createdAt) && (!tenant || o.tenantId === tenant)).length
    case 'aov': return orders.length ? Math.round(sum(orders.map((o) => o.total.amount)) / orders.length) : 0
    case 'refund_rate': {
      const paid = sum(orders.map((o) => o.total.amount))
      return paid ? round(sum(orders.map((o) => refundedOn(store, o))) / paid, 4) : 0
    }
    case 'mrr': return mrrOf(store, tenant)
    case 'arr': return mrrOf(store, tenant) * 12
    case 'new_users': return store.users.filter((u) => p.has(u.createdAt) && (!tenant || u.tenantId === tenant)).length
    case 'active_users': return new Set(store.events.filter((e) => ['login', 'order_placed'].includes(e.name) && p.has(e.occurredAt) && (!tenant || e.tenantId === tenant)).map((e) => e.userId)).size
    case 'churned_subscriptions': return store.subscriptions.filter((s) => p.has(s.cancelledAt) && (!tenant || s.tenantId === tenant)).length
    case 'open_tickets': return openTicketsOf(store, tenant)
    case 'csat': return csatOf(tickets.filter((t) => p.has(t.satisfaction?.ratedAt))) ?? 0
    case 'first_response_minutes': return median(tickets.filter((t) => p.has(t.createdAt) && t.firstResponseAt).map((t) => Math.round((Date.parse(t.firstResponseAt) - Date.parse(t.createdAt)) / 60_000))) ?? 0
    default: throw new ToolError('INVALID_INPUT', `Unknown metric ${metric}`)
  }
}

function revenueByMonth(store, { year = 2025, tenantId, source = 'all' }) {
  const fromSource = (p) => source === 'all' || (source === 'orders' ? p.orderId !== null : p.orderId === null)
  const payments = store.payments.filter((p) => p.status !== 'failed' && fromSource(p) && (!tenantId || tenantOf(store, p.userId) === tenantId))
  const ids = new Set(payments.map((p) => p.id))
  const refunds = store.refunds.filter((r) => ids.has(r.paymentId))
  const months = Array.from({ length: 12 }, (_, m) => {
    const key = `${year}-${String(m + 1).padStart(2, '0')}`
    const inMonth = payments.filter((p) => monthKey(p.createdAt) === key)
    const gross = sum(inMonth.map((p) => p.amount.amount))
    const refunded = sum(refunds.filter((r) => monthKey(r.createdAt) === key).map((r) => r.amount.amount))
    return { month: key, payments: inMonth.length, gross, refunds: refunded, net: gross - refunded }
  })
  const totals = { gross: sum(months.map((m) => m.gross)), refunds: sum(months.map((m) => m.refunds)), net: sum(months.map((m) => m.net)) }
  return { year, currency: 'USD', months, totals }
}

function topCustomers(store, { limit = 10, by = 'revenue', period: periodInput, tenantId }) {
  const p = resolvePeriod(periodInput, 'last_365_days')
  const byUser = new Map()
  for (const order of revenueOrders(store, p, tenantId)) {
    const row = byUser.get(order.userId) ?? { userId: order.userId, orders: 0, revenue: 0 }
    row.orders++
    row.revenue += order.total.amount - refundedOn(store, order)
    byUser.set(order.userId, row)
  }
  const ranked = [...byUser.values()].sort((a, b) => b[by] - a[by] || b.revenue - a.revenue || a.userId.localeCompare(b.userId))
  const items = ranked.slice(0, limit).map((row, i) => {
    const user = store.users.find((u) => u.id === row.userId)
    return { rank: i + 1, userId: row.userId, name: user?.name ?? null, email: user?.email ?? null, tenantId: user?.tenantId ?? tenantOf(store, row.userId), orders: row.orders, revenue: row.revenue }
  })
  return { period: p.out, by, items, total: ranked.length }
}

function weekStart(ms) {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
}
function bucketStart(ms, groupBy) {
  const d = new Date(ms)
  if (groupBy === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
  if (groupBy === 'week') return weekStart(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}
function nextBucket(ms, groupBy) {
  const d = new Date(ms)
  if (groupBy === 'day') return ms + DAY
  if (groupBy === 'week') return ms + 7 * DAY
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

function ticketVolume(store, { groupBy = 'week', period: periodInput, priority, channel, tenantId }) {
  const p = resolvePeriod(periodInput, 'last_90_days')
  const tickets = store.tickets.filter((t) => (!priority || t.priority === priority) && (!channel || t.channel === channel) && (!tenantId || t.tenantId === tenantId))
  const start = bucketStart(Math.max(p.from, Math.min(p.to - 1, ...tickets.map((t) => Date.parse(t.createdAt)))), groupBy)
  const buckets = []
  for (let b = start; b < p.to; b = nextBucket(b, groupBy)) {
    const end = nextBucket(b, groupBy)
    const within = (iso) => iso != null && Date.parse(iso) >= Math.max(b, p.from) && Date.parse(iso) < Math.min(end, p.to)
    buckets.push({ start: isoDate(b), opened: tickets.filter((t) => within(t.createdAt)).length, solved: tickets.filter((t) => within(t.solvedAt)).length })
  }
  return { groupBy, period: p.out, buckets, totals: { opened: sum(buckets.map((b) => b.opened)), solved: sum(buckets.map((b) => b.solved)) } }
}

function productPerformance(store, { category, sort = 'revenue', limit = 10, period: periodInput }) {
  const p = resolvePeriod(periodInput, 'last_365_days')
  const orders = revenueOrders(store, p)
  const rows = store.products
    .filter((prod) => !category || prod.category === category)
    .map((prod) => {
      const lines = orders.flatMap((o) => o.items.filter((i) => i.productId === prod.id))
      const unitsSold = sum(lines.map((l) => l.quantity))
      const returnedUnits = sum(store.returns.filter((r) => r.status === 'approved').flatMap((r) => r.items).filter((i) => i.productId === prod.id).map((i) => i.quantity))
      return { productId: prod.id, sku: prod.sku, name: prod.name, category: prod.category, unitsSold, orders: lines.length, revenue: sum(lines.map((l) => l.total.amount)), returnedUnits, returnRate: unitsSold ? round(Math.min(1, returnedUnits / unitsSold), 4) : 0 }
    })
  const key = { revenue: 'revenue', units: 'unitsSold', returnRate: 'returnRate' }[sort]
  rows.sort((a, b) => b[key] - a[key] || a.productId.localeCompare(b.productId))
  return { period: p.out, items: rows.slice(0, limit), total: rows.length }
}

function toCsv(rows) {
  if (!rows.length) return ''
  const fields = Object.keys(rows[0])
  return [fields.join(','), ...rows.map((r) => fields.map((f) => JSON.stringify(r[f] ?? '')).join(','))].join('\n')
}

function reportRows(store, report, periodInput) {
  switch (report) {
    case 'revenue_by_month': return revenueByMonth(store, {}).months
    case 'top_customers': return topCustomers(store, { period: periodInput, limit: 50 }).items
    case 'ticket_volume': return ticketVolume(store, { period: periodInput }).buckets
    default: return productPerformance(store, { period: periodInput, limit: 100 }).items
  }
}

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'analytics:revenueByMonth',
    title: 'Revenue by month',
    description: 'Monthly cash revenue for a calendar year from payments (orders and/or subscriptions), with refunds netted out by refund month; amounts in cents. Returns 12 months plus year totals.',
    inputSchema: {
      type: 'object',
      properties: {
        year: { type: 'integer', minimum: 2023, maximum: 2026, default: 2025 },
        tenantId,
        source: { type: 'string', enum: ['all', 'orders', 'subscriptions'], default: 'all' },
      },
      additionalProperties: false,
    },
    outputSchema: record({
      year: { type: 'integer' },
      currency: { type: 'string', const: 'USD' },
      months: {
        type: 'array',
        minItems: 12,
        maxItems: 12,
        items: record({ month: { type: 'string', description: 'YYYY-MM' }, payments: { type: 'integer', minimum: 0 }, gross: cents('Payments collected'), refunds: cents('Refunds issued'), net: cents('Gross minus refunds') }),
      },
      totals: record({ gross: cents('Year gross'), refunds: cents('Year refunds'), net: cents('Year net') }),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'revenue', 'aggregate'],
    examples: [
      { description: 'Order revenue of 2025 for Acme', input: { year: 2025, tenantId: 't_acme', source: 'orders' } },
      { description: 'Everything in 2025', input: {} },
    ],
    handler: async (input, { store }) => revenueByMonth(store, input),
  },
  {
    name: 'analytics:topCustomers',
    title: 'Top customers',
    description: 'Rank customers by net order revenue (cents, refunds deducted) or order count within a period. Returns ranked rows with user name and email.',
    inputSchema: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
        by: { type: 'string', enum: ['revenue', 'orders'], default: 'revenue' },
        period: period('last_365_days'),
        tenantId,
      },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      by: { type: 'string', enum: ['revenue', 'orders'] },
      items: {
        type: 'array',
        items: record({
          rank: { type: 'integer', minimum: 1 },
          userId: { type: 'string' },
          name: nullable({ type: 'string' }),
          email: nullable({ type: 'string', format: 'email' }),
          tenantId: nullable({ type: 'string' }),
          orders: { type: 'integer', minimum: 1 },
          revenue: cents('Net revenue'),
        }),
      },
      total: { type: 'integer', minimum: 0, description: 'Customers with at least one order in the period.' },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'customers', 'aggregate'],
    examples: [
      { description: 'Top 5 by revenue in Q4 2025', input: { limit: 5, period: { from: '2025-10-01', to: '2025-12-31' } } },
      { description: 'Most frequent Globex buyers', input: { by: 'orders', tenantId: 't_globex', period: { preset: 'all_time' } } },
    ],
    handler: async (input, { store }) => topCustomers(store, input),
  },
  {
    name: 'analytics:churnRisk',
    title: 'Churn risk',
    description: 'Score users from 0 to 1 on churn risk from inactivity, order recency, subscription state, open tickets, poor ratings and refunds. Returns users at or above minScore, riskiest first, with the reasons.',
    inputSchema: {
      type: 'object',
      properties: {
        tenantId,
        minScore: { type: 'number', minimum: 0, maximum: 1, default: 0.5 },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(
      record({
        userId: { type: 'string' },
        name: { type: 'string' },
        email: { type: 'string', format: 'email' },
        plan: { type: 'string' },
        score: ratio,
        reasons: { type: 'array', items: { type: 'string' }, minItems: 1 },
        lastOrderAt: nullable(dateTime),
        lastLoginAt: nullable(dateTime),
        openTickets: { type: 'integer', minimum: 0 },
      }),
    ),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'customers', 'aggregate'],
    handler: async ({ tenantId, minScore = 0.5, limit = 20 }, { store }) => {
      const rows = []
      for (const user of store.users.filter((u) => u.status !== 'invited' && (!tenantId || u.tenantId === tenantId))) {
        const reasons = []
        let score = 0
        const bump = (points, reason) => {
          score += points
          reasons.push(reason)
        }
        const idleDays = user.lastLoginAt ? Math.floor((NOW - Date.parse(user.lastLoginAt)) / DAY) : null
        if (idleDays === null || idleDays > 30) bump(idleDays > 60 || idleDays === null ? 0.3 : 0.15, idleDays === null ? 'Never logged in' : `No login for ${idleDays} days`)
        const orders = store.orders.filter((o) => o.userId === user.id)
        const lastOrderAt = orders.map((o) => o.createdAt).sort().at(-1) ?? null
        if (!lastOrderAt || NOW - Date.parse(lastOrderAt) > 90 * DAY) bump(0.2, lastOrderAt ? 'No order in the last 90 days' : 'Never ordered')
        const sub = store.subscriptions.find((s) => s.userId === user.id && s.status !== 'cancelled') ?? store.subscriptions.find((s) => s.userId === user.id)
        if (sub?.status === 'past_due') bump(0.3, 'Subscription past due')
        if (sub?.status === 'cancelled') bump(0.2, 'Subscription cancelled')
        if (sub?.cancelAtPeriodEnd) bump(0.4, 'Subscription set to cancel at period end')
        const tickets = store.tickets.filter((t) => t.requesterId === user.id)
        const open = tickets.filter((t) => !['solved', 'closed'].includes(t.status)).length
        if (open >= 2) bump(0.15, `${open} open support tickets`)
        if (tickets.some((t) => t.satisfaction && t.satisfaction.score <= 2)) bump(0.2, 'Gave a poor support rating')
        if (store.refunds.some((r) => r.userId === user.id && NOW - Date.parse(r.createdAt) < 90 * DAY)) bump(0.1, 'Refund in the last 90 days')
        if (user.status === 'suspended') bump(0.2, 'Account suspended')
        score = round(Math.min(1, score))
        if (reasons.length && score >= minScore) rows.push({ userId: user.id, name: user.name, email: user.email, plan: user.plan, score, reasons, lastOrderAt, lastLoginAt: user.lastLoginAt, openTickets: open })
      }
      rows.sort((a, b) => b.score - a.score || a.userId.localeCompare(b.userId))
      return { items: rows.slice(0, limit), total: rows.length }
    },
  },
  {
    name: 'analytics:ticketVolume',
    title: 'Ticket volume',
    description: 'Count support tickets opened and solved per day, week (Monday start) or month over a period, optionally for one priority, channel or tenant. Returns contiguous buckets and totals.',
    inputSchema: {
      type: 'object',
      properties: {
        groupBy: { type: 'string', enum: ['day', 'week', 'month'], default: 'week' },
        period: period('last_90_days'),
        priority: { type: 'string', enum: ['low', 'normal', 'high', 'urgent'] },
        channel: { type: 'string', enum: ['email', 'web', 'chat', 'phone'] },
        tenantId,
      },
      additionalProperties: false,
    },
    outputSchema: record({
      groupBy: { type: 'string', enum: ['day', 'week', 'month'] },
      period: PeriodOut,
      buckets: { type: 'array', items: record({ start: { type: 'string', format: 'date' }, opened: { type: 'integer', minimum: 0 }, solved: { type: 'integer', minimum: 0 } }) },
      totals: record({ opened: { type: 'integer', minimum: 0 }, solved: { type: 'integer', minimum: 0 } }),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'support', 'aggregate'],
    handler: async (input, { store }) => ticketVolume(store, input),
  },
  {
    name: 'analytics:funnel',
    title: 'Conversion funnel',
    description: 'Count the shopping sessions (default) or distinct users that completed each event step in order, each step after the previous one, within a period. Returns per-step counts and conversion ratios.',
    inputSchema: {
      type: 'object',
      properties: {
        steps: { type: 'array', items: { type: 'string', enum: EVENT_NAMES }, minItems: 2, maxItems: 6, default: ['product_viewed', 'cart_add', 'checkout_started', 'order_placed'] },
        unit: { type: 'string', enum: ['sessions', 'users'], default: 'sessions', description: 'Count journeys by the events\' sessionId property, or by user.' },
        period: period('last_365_days'),
        tenantId,
      },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      unit: { type: 'string', enum: ['sessions', 'users'] },
      steps: { type: 'array', minItems: 2, items: record({ event: { type: 'string', enum: EVENT_NAMES }, count: { type: 'integer', minimum: 0 }, conversionFromPrevious: ratio, conversionFromStart: ratio }) },
      overallConversion: ratio,
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'events', 'aggregate'],
    examples: [{ description: 'Checkout funnel for 2025', input: { steps: ['product_viewed', 'cart_add', 'checkout_started', 'order_placed'], period: { from: '2025-01-01', to: '2025-12-31' } } }],
    handler: async ({ steps = ['product_viewed', 'cart_add', 'checkout_started', 'order_placed'], unit = 'sessions', period: periodInput, tenantId }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_365_days')
      const journeys = new Map()
      for (const e of store.events) {
        if (!p.has(e.occurredAt) || (tenantId && e.tenantId !== tenantId)) continue
        const key = unit === 'users' ? e.userId : (e.properties.sessionId ?? `user:${e.userId}`)
        if (!journeys.has(key)) journeys.set(key, [])
        journeys.get(key).push(e)
      }
      const reached = steps.map(() => 0)
      for (const events of journeys.values()) {
        let after = ''
        for (let i = 0; i < steps.length; i++) {
          const hit = events.find((e) => e.name === steps[i] && e.occurredAt >= after)
          if (!hit) break
          reached[i]++
          after = hit.occurredAt
        }
      }
      const ratioOf = (a, b) => (b ? round(a / b, 4) : 0)
      return {
        period: p.out,
        unit,
        steps: steps.map((event, i) => ({ event, count: reached[i], conversionFromPrevious: i ? ratioOf(reached[i], reached[i - 1]) : 1, conversionFromStart: ratioOf(reached[i], reached[0]) })),
        overallConversion: ratioOf(reached.at(-1), reached[0]),
      }
    },
  },
  {
    name: 'analytics:slowReport',
    title: 'Slow report',
    description: 'Build an expensive report that takes delayMs milliseconds (0–5000, default 1000) to compute. Returns a few headline counts once done.',
    inputSchema: {
      type: 'object',
      properties: {
        delayMs: { type: 'integer', minimum: 0, maximum: 5000, default: 1000, description: 'Simulated computation time.' },
        report: { type: 'string', enum: ['daily_digest', 'reconciliation'], default: 'daily_digest' },
      },
      additionalProperties: false,
    },
    outputSchema: record({
      report: { type: 'string', enum: ['daily_digest', 'reconciliation'] },
      delayMs: { type: 'integer', minimum: 0 },
      generatedAt: dateTime,
      rows: { type: 'array', items: record({ metric: { type: 'string' }, value: { type: 'number' } }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'slow'],
    handler: async ({ delayMs = 1000, report = 'daily_digest' }, { store }) => {
      await sleep(delayMs)
      const rows = report === 'daily_digest'
        ? [
            { metric: 'users', value: store.users.length },
            { metric: 'orders', value: store.orders.length },
            { metric: 'open_tickets', value: openTicketsOf(store) },
            { metric: 'mrr_cents', value: mrrOf(store) },
          ]
        : [
            { metric: 'invoices_paid', value: store.invoices.filter((i) => i.status === 'paid').length },
            { metric: 'payments_succeeded', value: store.payments.filter((p) => p.status !== 'failed').length },
            { metric: 'unpaid_invoice_cents', value: sum(store.invoices.filter((i) => i.status === 'open').map((i) => i.amountDue.amount)) },
            { metric: 'refunded_cents', value: sum(store.refunds.map((r) => r.amount.amount)) },
          ]
      return { report, delayMs, generatedAt: store.now(), rows }
    },
  },
  {
    name: 'analytics:listMetrics',
    title: 'List metrics',
    description: 'List the metric catalog (id, name, unit and definition) usable with analytics:getMetric, optionally one category.',
    inputSchema: { type: 'object', properties: { category: { type: 'string', enum: ['revenue', 'customers', 'support'] } }, additionalProperties: false },
    outputSchema: listOutput(
      record({
        id: { type: 'string' },
        name: { type: 'string' },
        unit: { type: 'string', enum: ['cents', 'count', 'ratio', 'score', 'minutes'] },
        category: { type: 'string', enum: ['revenue', 'customers', 'support'] },
        description: { type: 'string' },
      }),
    ),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'catalog'],
    handler: async ({ category }) => {
      const items = METRICS.filter((m) => !category || m.category === category)
      return { items: clone(items), total: items.length }
    },
  },
  {
    name: 'analytics:getMetric',
    title: 'Get a metric',
    description: 'Compute one metric from the catalog over a period, optionally for one tenant. Returns the value with its unit (cents, count, ratio, score or minutes).',
    inputSchema: {
      type: 'object',
      properties: {
        metric: { type: 'string', enum: METRICS.map((m) => m.id) },
        period: period('last_30_days'),
        tenantId,
      },
      required: ['metric'],
      additionalProperties: false,
    },
    outputSchema: record({ metric: { type: 'string' }, value: { type: 'number' }, unit: { type: 'string', enum: ['cents', 'count', 'ratio', 'score', 'minutes'] }, period: PeriodOut, tenantId: nullable({ type: 'string' }) }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'aggregate'],
    examples: [
      { description: 'MRR right now', input: { metric: 'mrr' } },
      { description: 'Globex revenue in 2025', input: { metric: 'revenue', tenantId: 't_globex', period: { from: '2025-01-01', to: '2025-12-31' } } },
    ],
    handler: async ({ metric, period: periodInput, tenantId = null }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_30_days')
      return { metric, value: metricValue(store, metric, p, tenantId), unit: METRICS.find((m) => m.id === metric).unit, period: p.out, tenantId }
    },
  },
  {
    name: 'analytics:trackEvent',
    title: 'Track an event',
    description: 'Record a product analytics event for a user with flat string/number/boolean properties (occurredAt defaults to now). Returns the stored event.',
    inputSchema: {
      type: 'object',
      properties: {
        userId: idProp('User', 'usr_001'),
        name: { type: 'string', minLength: 1, maxLength: 64, description: `Event name; the funnel understands ${EVENT_NAMES.join(', ')}.` },
        properties: {
          type: 'object',
          maxProperties: 20,
          additionalProperties: { anyOf: [{ type: 'string', maxLength: 500 }, { type: 'number' }, { type: 'boolean' }] },
          default: {},
        },
        occurredAt: dateTime,
      },
      required: ['userId', 'name'],
      additionalProperties: false,
    },
    outputSchema: EventSchema,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'events'],
    examples: [{ description: 'A product view from the mobile app', input: { userId: 'usr_005', name: 'product_viewed', properties: { productId: 'prd_004', device: 'mobile', fromSearch: true } } }],
    handler: async ({ userId, name, properties = {}, occurredAt }, { store }) => {
      const user = getOrThrow(store.users, userId, 'User')
      const event = { id: store.nextId('evt'), userId, tenantId: user.tenantId, name, properties: clone(properties), occurredAt: occurredAt ? new Date(occurredAt).toISOString() : store.now() }
      store.events.push(event)
      return clone(event)
    },
  },
  {
    name: 'analytics:listEvents',
    title: 'List events',
    description: 'List analytics events newest first with offset pagination, filtered by user, event name and time range. Returns events, total and nextOffset.',
    inputSchema: {
      type: 'object',
      properties: {
        userId: idProp('User', 'usr_001'),
        name: { type: 'string', minLength: 1 },
        from: dateTime,
        to: dateTime,
        limit: paginationProps.limit,
        offset: { type: 'integer', minimum: 0, default: 0 },
      },
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { items: { type: 'array', items: EventSchema }, total: { type: 'integer', minimum: 0 }, nextOffset: { type: 'integer', minimum: 1 } },
      required: ['items', 'total'],
      additionalProperties: false,
    },
    annotations: ANNOTATIONS.read,
    tags: ['read', 'events', 'pagination'],
    handler: async ({ userId, name, from, to, limit, offset }, { store }) => {
      const events = store.events
        .filter((e) => (!userId || e.userId === userId) && (!name || e.name === name) && (!from || Date.parse(e.occurredAt) >= Date.parse(from)) && (!to || Date.parse(e.occurredAt) <= Date.parse(to)))
        .sort((a, b) => b.occurredAt.localeCompare(a.occurredAt) || b.id.localeCompare(a.id))
      return paginateOffset(events, { limit, offset })
    },
  },
  {
    name: 'analytics:cohortRetention',
    title: 'Cohort activity',
    description: 'Group users into signup cohorts (month or quarter) and report, for each of the last N calendar months, the share of each cohort that was active (logged in and/or ordered). Returns the months and one row per cohort.',
    inputSchema: {
      type: 'object',
      properties: {
        cohortBy: { type: 'string', enum: ['month', 'quarter'], default: 'quarter' },
        months: { type: 'integer', minimum: 1, maximum: 12, default: 6, description: 'How many calendar months back from December 2025.' },
        activity: { type: 'string', enum: ['any', 'login', 'order_placed'], default: 'any' },
        tenantId,
      },
      additionalProperties: false,
    },
    outputSchema: record({
      months: { type: 'array', items: { type: 'string', description: 'YYYY-MM' } },
      cohorts: { type: 'array', items: record({ cohort: { type: 'string', description: 'YYYY-MM or YYYY-Qn' }, size: { type: 'integer', minimum: 1 }, activeShare: { type: 'array', items: ratio } }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'customers', 'aggregate'],
    handler: async ({ cohortBy = 'quarter', months = 6, activity = 'any', tenantId }, { store }) => {
      const monthKeys = Array.from({ length: months }, (_, i) => isoDate(Date.UTC(2025, 12 - months + i, 1)).slice(0, 7))
      const cohortOf = (iso) => (cohortBy === 'month' ? iso.slice(0, 7) : `${iso.slice(0, 4)}-Q${Math.ceil(Number(iso.slice(5, 7)) / 3)}`)
      const names = activity === 'any' ? ['login', 'order_placed'] : [activity]
      const active = new Map(monthKeys.map((m) => [m, new Set()]))
      for (const e of store.events) if (names.includes(e.name)) active.get(monthKey(e.occurredAt))?.add(e.userId)
      const cohorts = new Map()
      for (const user of store.users.filter((u) => u.status !== 'invited' && (!tenantId || u.tenantId === tenantId))) {
        const key = cohortOf(user.createdAt)
        if (!cohorts.has(key)) cohorts.set(key, [])
        cohorts.get(key).push(user.id)
      }
      return {
        months: monthKeys,
        cohorts: [...cohorts.keys()].sort().map((cohort) => {
          const members = cohorts.get(cohort)
          return { cohort, size: members.length, activeShare: monthKeys.map((m) => round(members.filter((id) => active.get(m).has(id)).length / members.length)) }
        }),
      }
    },
  },
  {
    name: 'analytics:productPerformance',
    title: 'Product performance',
    description: 'Per-product units sold, orders, revenue (cents) and return rate over a period, optionally one category, sorted by revenue, units or return rate. Returns the top `limit` products.',
    inputSchema: {
      type: 'object',
      properties: {
        category: { type: 'string', enum: ['hardware', 'accessories', 'software', 'services'] },
        sort: { type: 'string', enum: ['revenue', 'units', 'returnRate'], default: 'revenue' },
        limit: { type: 'integer', minimum: 1, maximum: 25, default: 10 },
        period: period('last_365_days'),
      },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      items: {
        type: 'array',
        items: record({
          productId: { type: 'string' },
          sku: { type: 'string' },
          name: { type: 'string' },
          category: { type: 'string' },
          unitsSold: { type: 'integer', minimum: 0 },
          orders: { type: 'integer', minimum: 0 },
          revenue: cents('Gross line revenue'),
          returnedUnits: { type: 'integer', minimum: 0 },
          returnRate: ratio,
        }),
      },
      total: { type: 'integer', minimum: 0 },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'products', 'aggregate'],
    handler: async (input, { store }) => productPerformance(store, input),
  },
  {
    name: 'analytics:averageOrderValue',
    title: 'Average order value',
    description: 'Average order value (cents) of revenue-generating orders over a period, overall and grouped by month, tenant, customer plan or shipping country.',
    inputSchema: {
      type: 'object',
      properties: {
        groupBy: { type: 'string', enum: ['month', 'tenant', 'plan', 'country'], default: 'month' },
        period: period('last_365_days'),
      },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      overall: cents('Average order value'),
      orders: { type: 'integer', minimum: 0 },
      groups: { type: 'array', items: record({ key: { type: 'string' }, orders: { type: 'integer', minimum: 1 }, aov: cents('Average order value') }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'revenue', 'aggregate'],
    handler: async ({ groupBy = 'month', period: periodInput }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_365_days')
      const orders = store.orders.filter((o) => REVENUE_STATUSES.includes(o.status) && p.has(o.createdAt))
      const keyOf = {
        month: (o) => monthKey(o.createdAt),
        tenant: (o) => o.tenantId,
        plan: (o) => store.users.find((u) => u.id === o.userId)?.plan ?? 'unknown',
        country: (o) => o.shippingAddress.country,
      }[groupBy]
      const groups = new Map()
      for (const o of orders) groups.set(keyOf(o), [...(groups.get(keyOf(o)) ?? []), o.total.amount])
      const aov = (totals) => (totals.length ? Math.round(sum(totals) / totals.length) : 0)
      return {
        period: p.out,
        overall: aov(orders.map((o) => o.total.amount)),
        orders: orders.length,
        groups: [...groups.keys()].sort().map((key) => ({ key, orders: groups.get(key).length, aov: aov(groups.get(key)) })),
      }
    },
  },
  {
    name: 'analytics:refundRate',
    title: 'Refund rate',
    description: 'Share of order revenue refunded over a period (by order date), with refund counts and amounts (cents) per reason.',
    inputSchema: { type: 'object', properties: { period: period('last_365_days'), tenantId }, additionalProperties: false },
    outputSchema: record({
      period: PeriodOut,
      orders: { type: 'integer', minimum: 0 },
      refundedOrders: { type: 'integer', minimum: 0 },
      paidAmount: cents('Order revenue before refunds'),
      refundedAmount: cents('Refunded'),
      rate: ratio,
      byReason: { type: 'array', items: record({ reason: { type: 'string' }, count: { type: 'integer', minimum: 1 }, amount: cents('Refunded') }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'revenue', 'aggregate'],
    handler: async ({ period: periodInput, tenantId }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_365_days')
      const orders = revenueOrders(store, p, tenantId)
      const payments = new Set(orders.map((o) => o.paymentId))
      const refunds = store.refunds.filter((r) => payments.has(r.paymentId))
      const paidAmount = sum(orders.map((o) => o.total.amount))
      const refundedAmount = sum(refunds.map((r) => r.amount.amount))
      const reasons = [...new Set(refunds.map((r) => r.reason))].sort()
      return {
        period: p.out,
        orders: orders.length,
        refundedOrders: new Set(refunds.map((r) => r.paymentId)).size,
        paidAmount,
        refundedAmount,
        rate: paidAmount ? round(refundedAmount / paidAmount, 4) : 0,
        byReason: reasons.map((reason) => {
          const of = refunds.filter((r) => r.reason === reason)
          return { reason, count: of.length, amount: sum(of.map((r) => r.amount.amount)) }
        }),
      }
    },
  },
  {
    name: 'analytics:agentPerformance',
    title: 'Agent performance',
    description: 'Per-agent support stats for tickets created in a period: assigned, solved, still open, median first response (minutes), average CSAT and SLA breaches.',
    inputSchema: {
      type: 'object',
      properties: { period: period('last_90_days'), team: { type: 'string', enum: ['tier1', 'tier2', 'billing'] } },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      items: {
        type: 'array',
        items: record({
          agentId: { type: 'string' },
          name: { type: 'string' },
          team: { type: 'string' },
          assigned: { type: 'integer', minimum: 0 },
          solved: { type: 'integer', minimum: 0 },
          open: { type: 'integer', minimum: 0 },
          medianFirstResponseMinutes: nullable({ type: 'number', minimum: 0 }),
          csat: nullable({ type: 'number', minimum: 1, maximum: 5 }),
          slaBreaches: { type: 'integer', minimum: 0 },
        }),
      },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'support', 'aggregate'],
    handler: async ({ period: periodInput, team }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_90_days')
      const SLA = { urgent: 60, high: 240, normal: 480, low: 1440 }
      const items = store.agents
        .filter((a) => !team || a.team === team)
        .map((agent) => {
          const tickets = store.tickets.filter((t) => t.assigneeId === agent.id && p.has(t.createdAt))
          const responses = tickets.filter((t) => t.firstResponseAt).map((t) => (Date.parse(t.firstResponseAt) - Date.parse(t.createdAt)) / 60_000)
          const breaches = tickets.filter((t) => t.firstResponseAt && (Date.parse(t.firstResponseAt) - Date.parse(t.createdAt)) / 60_000 > SLA[t.priority]).length
          return {
            agentId: agent.id,
            name: agent.name,
            team: agent.team,
            assigned: tickets.length,
            solved: tickets.filter((t) => ['solved', 'closed'].includes(t.status)).length,
            open: tickets.filter((t) => !['solved', 'closed'].includes(t.status)).length,
            medianFirstResponseMinutes: responses.length ? Math.round(median(responses)) : null,
            csat: csatOf(tickets),
            slaBreaches: breaches,
          }
        })
      return { period: p.out, items }
    },
  },
  {
    name: 'analytics:kpiSummary',
    title: 'KPI summary',
    description: 'One-call dashboard for a period: net revenue, orders, AOV, new and active users, active subscriptions, MRR, open tickets, CSAT and refund rate (money in cents).',
    inputSchema: { type: 'object', properties: { period: period('last_30_days'), tenantId }, additionalProperties: false },
    outputSchema: record({
      period: PeriodOut,
      tenantId: nullable({ type: 'string' }),
      revenue: cents('Net order revenue'),
      orders: { type: 'integer', minimum: 0 },
      aov: cents('Average order value'),
      newUsers: { type: 'integer', minimum: 0 },
      activeUsers: { type: 'integer', minimum: 0 },
      activeSubscriptions: { type: 'integer', minimum: 0 },
      mrr: cents('Monthly recurring revenue'),
      openTickets: { type: 'integer', minimum: 0 },
      csat: nullable({ type: 'number', minimum: 1, maximum: 5 }),
      refundRate: ratio,
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'aggregate', 'dashboard'],
    handler: async ({ period: periodInput, tenantId = null }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_30_days')
      const value = (metric) => metricValue(store, metric, p, tenantId)
      const rated = store.tickets.filter((t) => (!tenantId || t.tenantId === tenantId) && p.has(t.satisfaction?.ratedAt))
      return {
        period: p.out,
        tenantId,
        revenue: value('revenue'),
        orders: value('orders'),
        aov: value('aov'),
        newUsers: value('new_users'),
        activeUsers: value('active_users'),
        activeSubscriptions: store.subscriptions.filter((s) => ['active', 'trialing', 'past_due'].includes(s.status) && (!tenantId || s.tenantId === tenantId)).length,
        mrr: value('mrr'),
        openTickets: value('open_tickets'),
        csat: csatOf(rated),
        refundRate: value('refund_rate'),
      }
    },
  },
  {
    name: 'analytics:compareTenants',
    title: 'Compare tenants',
    description: 'Compare tenants side by side on chosen metrics over a period (revenue and MRR in cents; csat null when unrated). Returns one row per tenant with a metric → value map.',
    inputSchema: {
      type: 'object',
      properties: {
        metrics: { type: 'array', items: { type: 'string', enum: TENANT_METRICS }, minItems: 1, maxItems: TENANT_METRICS.length, uniqueItems: true, default: ['revenue', 'orders', 'users'] },
        period: period('last_365_days'),
      },
      additionalProperties: false,
    },
    outputSchema: record({
      period: PeriodOut,
      metrics: { type: 'array', items: { type: 'string', enum: TENANT_METRICS } },
      rows: {
        type: 'array',
        items: record({
          tenantId: { type: 'string' },
          tenantName: { type: 'string' },
          values: { type: 'object', additionalProperties: { type: ['number', 'null'] }, description: 'metric id → value' },
        }),
      },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'aggregate'],
    handler: async ({ metrics = ['revenue', 'orders', 'users'], period: periodInput }, { store }) => {
      const p = resolvePeriod(periodInput, 'last_365_days')
      const compute = {
        revenue: (t) => metricValue(store, 'revenue', p, t),
        orders: (t) => metricValue(store, 'orders', p, t),
        users: (t) => store.users.filter((u) => u.tenantId === t && u.status !== 'invited').length,
        activeSubscriptions: (t) => store.subscriptions.filter((s) => s.tenantId === t && ['active', 'trialing', 'past_due'].includes(s.status)).length,
        mrr: (t) => mrrOf(store, t),
        openTickets: (t) => openTicketsOf(store, t),
        csat: (t) => csatOf(store.tickets.filter((x) => x.tenantId === t && p.has(x.satisfaction?.ratedAt))),
      }
      return {
        period: p.out,
        metrics: [...metrics],
        rows: store.tenants.map((t) => ({ tenantId: t.id, tenantName: t.name, values: Object.fromEntries(metrics.map((m) => [m, compute[m](t.id)])) })),
      }
    },
  },
  {
    name: 'analytics:customerLifetimeValue',
    title: 'Customer lifetime value',
    description: 'Lifetime value of one customer: order count, gross and net revenue, refunds, average order value (cents), order cadence, current subscription MRR and a simple 12-month projection.',
    inputSchema: { type: 'object', properties: { userId: idProp('User', 'usr_001') }, required: ['userId'], additionalProperties: false },
    outputSchema: record({
      userId: { type: 'string' },
      name: { type: 'string' },
      email: { type: 'string', format: 'email' },
      orders: { type: 'integer', minimum: 0 },
      firstOrderAt: nullable(dateTime),
      lastOrderAt: nullable(dateTime),
      grossRevenue: cents('Order totals'),
      refunds: cents('Refunded'),
      netRevenue: cents('Gross minus refunds'),
      averageOrderValue: cents('Average order value'),
      avgDaysBetweenOrders: nullable({ type: 'number', minimum: 0 }),
      subscriptionMrr: cents('Current subscription MRR'),
      predictedAnnualValue: cents('Projected next-12-month value'),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'customers'],
    handler: async ({ userId }, { store }) => {
      const user = getOrThrow(store.users, userId, 'User')
      const orders = store.orders.filter((o) => o.userId === userId && [...REVENUE_STATUSES, 'refunded'].includes(o.status)).sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      const gross = sum(orders.map((o) => o.total.amount))
      const refunds = sum(orders.map((o) => refundedOn(store, o)))
      const gaps = orders.slice(1).map((o, i) => (Date.parse(o.createdAt) - Date.parse(orders[i].createdAt)) / DAY)
      const cadence = gaps.length ? round(average(gaps), 1) : null
      const subscriptionMrr = Math.round(sum(store.subscriptions.filter((s) => s.userId === userId && ['active', 'past_due'].includes(s.status)).map((s) => (s.unitPrice.amount * s.seats) / (s.interval === 'year' ? 12 : 1))))
      const aov = orders.length ? Math.round(gross / orders.length) : 0
      const ordersPerYear = cadence ? 365 / Math.max(cadence, 1) : orders.length ? 1 : 0
      return {
        userId,
        name: user.name,
        email: user.email,
        orders: orders.length,
        firstOrderAt: orders[0]?.createdAt ?? null,
        lastOrderAt: orders.at(-1)?.createdAt ?? null,
        grossRevenue: gross,
        refunds,
        netRevenue: gross - refunds,
        averageOrderValue: aov,
        avgDaysBetweenOrders: cadence,
        subscriptionMrr,
        predictedAnnualValue: Math.round(aov * ordersPerYear * (gross ? (gross - refunds) / gross : 1) + subscriptionMrr * 12),
      }
    },
  },
  {
    name: 'analytics:planDistribution',
    title: 'Plan distribution',
    description: 'How many users are on each plan (free, starter, pro, enterprise) and their share, optionally for one tenant and including invited users.',
    inputSchema: { type: 'object', properties: { tenantId, includeInvited: { type: 'boolean', default: false } }, additionalProperties: false },
    outputSchema: record({
      total: { type: 'integer', minimum: 0 },
      plans: { type: 'array', minItems: 4, maxItems: 4, items: record({ plan: { type: 'string', enum: ['free', 'starter', 'pro', 'enterprise'] }, users: { type: 'integer', minimum: 0 }, share: ratio }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'customers', 'aggregate'],
    handler: async ({ tenantId, includeInvited = false }, { store }) => {
      const users = store.users.filter((u) => (!tenantId || u.tenantId === tenantId) && (includeInvited || u.status !== 'invited'))
      return {
        total: users.length,
        plans: ['free', 'starter', 'pro', 'enterprise'].map((plan) => {
          const count = users.filter((u) => u.plan === plan).length
          return { plan, users: count, share: users.length ? round(count / users.length, 4) : 0 }
        }),
      }
    },
  },
  {
    name: 'analytics:exportReport',
    title: 'Export a report',
    description: 'Render a report (revenue by month, top customers, ticket volume or product performance) for a period to CSV or JSON and return a download link valid for 24 hours, with the row count.',
    inputSchema: {
      type: 'object',
      properties: {
        report: { type: 'string', enum: REPORTS },
        format: { type: 'string', enum: ['csv', 'json'], default: 'csv' },
        period: { ...ref('Period'), description: 'Time window; defaults per report (last 365 days, or last 90 days for ticket volume). Ignored by revenue_by_month, which covers 2025.' },
      },
      required: ['report'],
      additionalProperties: false,
    },
    outputSchema: ExportSchema,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'export'],
    handler: async ({ report, format = 'csv', period: periodInput }, { store }) => {
      const rows = reportRows(store, report, periodInput)
      const createdAt = store.now()
      const exportId = store.nextId('rpt')
      const content = format === 'csv' ? toCsv(rows) : JSON.stringify(rows)
      const result = { exportId, report, format, rowCount: rows.length, url: `https://reports.example.com/exports/${exportId}.${format}`, expiresAt: new Date(Date.parse(createdAt) + DAY).toISOString(), createdAt }
      store.reportExports.push({ ...result, content })
      return result
    },
  },
  {
    name: 'analytics:scheduleReport',
    title: 'Schedule a report',
    description: 'Email a report to up to 10 recipients daily, weekly (Mondays) or monthly (1st), starting on a date, in a time zone. Returns the schedule with its next run time.',
    inputSchema: {
      type: 'object',
      properties: {
        report: { type: 'string', enum: REPORTS },
        frequency: { type: 'string', enum: ['daily', 'weekly', 'monthly'] },
        recipients: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 1, maxItems: 10, uniqueItems: true },
        startDate: { type: 'string', format: 'date', description: 'First day the report may run; defaults to tomorrow.' },
        timezone: { type: 'string', default: 'UTC', description: 'IANA time zone, e.g. Europe/Berlin.' },
        format: { type: 'string', enum: ['csv', 'json'], default: 'csv' },
      },
      required: ['report', 'frequency', 'recipients'],
      additionalProperties: false,
    },
    outputSchema: record({
      id: { type: 'string' },
      report: { type: 'string', enum: REPORTS },
      frequency: { type: 'string', enum: ['daily', 'weekly', 'monthly'] },
      recipients: { type: 'array', items: { type: 'string', format: 'email' } },
      format: { type: 'string', enum: ['csv', 'json'] },
      timezone: { type: 'string' },
      nextRunAt: dateTime,
      createdAt: dateTime,
    }),
    annotations: ANNOTATIONS.create,
    tags: ['write', 'schedule'],
    handler: async ({ report, frequency, recipients, startDate, timezone = 'UTC', format = 'csv' }, { store }) => {
      const createdAt = store.now()
      let next = startDate ? Date.parse(startDate) : Date.parse(createdAt.slice(0, 10)) + DAY
      if (next < Date.parse(createdAt)) throw new ToolError('INVALID_INPUT', 'startDate must not be in the past')
      if (frequency === 'weekly') while (new Date(next).getUTCDay() !== 1) next += DAY
      if (frequency === 'monthly' && new Date(next).getUTCDate() !== 1) next = Date.UTC(new Date(next).getUTCFullYear(), new Date(next).getUTCMonth() + 1, 1)
      const schedule = { id: store.nextId('sch'), report, frequency, recipients: [...recipients], format, timezone, nextRunAt: new Date(next + 7 * 3_600_000).toISOString(), createdAt }
      store.reportSchedules.push(schedule)
      return clone(schedule)
    },
  },
]

export default { appId: 'analytics', tools: defineTools(tools) }
