/**
 * In-memory data for the example MCP server.
 *
 * `createStore()` builds a fresh, fully deterministic dataset (seeded PRNG, fixed base date
 * 2026-01-01): two tenants, users, teams, products and stock, orders with invoices, payments and
 * refunds, subscriptions, coupons, support tickets, and the analytics events derived from them.
 *
 * The second half of the module is the small toolkit the app modules share: JSON Schema
 * fragments (`$defs`), pagination, money, pricing and refund rules.
 */
import { ToolError, notFound } from './errors.mjs'

export const BASE_DATE = '2026-01-01T00:00:00.000Z'
const BASE = Date.parse(BASE_DATE)
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

// ---------------------------------------------------------------------------------------------
// Seeded randomness and date helpers
// ---------------------------------------------------------------------------------------------

/** mulberry32: tiny, fast, good enough for fixtures. */
function seededRandom(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const int = (rng, min, max) => min + Math.floor(rng() * (max - min + 1))
const pick = (rng, list) => list[Math.floor(rng() * list.length)]
const weighted = (rng, entries) => {
  const total = entries.reduce((sum, [, w]) => sum + w, 0)
  let roll = rng() * total
  for (const [value, w] of entries) if ((roll -= w) < 0) return value
  return entries.at(-1)[0]
}
const sample = (rng, list, count) => {
  const pool = [...list]
  const out = []
  while (out.length < count && pool.length) out.push(pool.splice(Math.floor(rng() * pool.length), 1)[0])
  return out
}

export const iso = (ms) => new Date(ms).toISOString()
export const isoDate = (ms) => iso(ms).slice(0, 10)
const pad = (n, width) => String(n).padStart(width, '0')
export const sum = (values) => values.reduce((a, b) => a + b, 0)
export const money = (amount, currency = 'USD') => ({ amount: Math.round(amount), currency })

/** UTC month arithmetic that clamps the day (Jan 31 + 1 month = Feb 28). */
export function addMonths(ms, months) {
  const d = new Date(ms)
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1, d.getUTCHours(), d.getUTCMinutes()))
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate()
  target.setUTCDate(Math.min(d.getUTCDate(), lastDay))
  return target.getTime()
}

// ---------------------------------------------------------------------------------------------
// Reference data
// ---------------------------------------------------------------------------------------------

const TENANTS = [
  { id: 't_acme', name: 'Acme Corp', region: 'us', domain: 'acme.example.com' },
  { id: 't_globex', name: 'Globex GmbH', region: 'eu', domain: 'globex.example.com' },
]

const FIRST_NAMES = [
  'Ava', 'Liam', 'Mia', 'Noah', 'Zoe', 'Ethan', 'Ivy', 'Lucas', 'Nora', 'Mason',
  'Chloe', 'Leo', 'Maya', 'Owen', 'Ruby', 'Elias', 'Hana', 'Felix', 'Sofia', 'Jonas',
  'Clara', 'Mateo', 'Lena', 'Omar', 'Priya', 'Theo', 'Aisha', 'Kai', 'Emma', 'Ravi',
  'Greta', 'Diego', 'Yuki', 'Samuel', 'Ines', 'Marco', 'Freya', 'Tomas', 'Leila', 'Hugo',
]
const LAST_NAMES = [
  'Martin', 'Nguyen', 'Schmidt', 'Garcia', 'Okafor', 'Rossi', 'Kowalski', 'Tanaka', 'Dubois', 'Silva',
  'Jensen', 'Patel', 'Becker', 'Lopez', 'Moreau', 'Novak', 'Sato', 'Walsh', 'Hansen', 'Costa',
  'Fischer', 'Khan', 'Larsen', 'Romero', 'Weber', 'Ito', 'Murphy', 'Berg', 'Ahmed', 'Keller',
  'Reyes', 'Vogel', 'Chen', 'Brooks', 'Meyer', 'Park', 'Santos', 'Lindqvist', 'Haddad', 'Wagner',
]
const STREETS = ['Market St', 'Oak Avenue', 'Pine Street', 'Elm Road', 'Maple Drive', 'Cedar Lane', 'Harbor Way', 'Mill Road']
// [city, region, postalCode, country, timezone]
const US_CITIES = [
  ['San Francisco', 'CA', '94107', 'US', 'America/Los_Angeles'],
  ['Austin', 'TX', '78701', 'US', 'America/Chicago'],
  ['Seattle', 'WA', '98101', 'US', 'America/Los_Angeles'],
  ['Denver', 'CO', '80202', 'US', 'America/Denver'],
  ['Boston', 'MA', '02110', 'US', 'America/New_York'],
  ['Chicago', 'IL', '60601', 'US', 'America/Chicago'],
]
const EU_CITIES = [
  ['Berlin', 'BE', '10115', 'DE', 'Europe/Berlin'],
  ['London', 'LND', 'EC1A 1BB', 'GB', 'Europe/London'],
  ['Paris', 'IDF', '75002', 'FR', 'Europe/Paris'],
  ['Amsterdam', 'NH', '1012 AB', 'NL', 'Europe/Amsterdam'],
  ['Munich', 'BY', '80331', 'DE', 'Europe/Berlin'],
]
const PHONE_PREFIX = { US: '+1 415 555 ', DE: '+49 30 555 ', GB: '+44 20 7946 ', FR: '+33 1 7036 ', NL: '+31 20 555 ' }
const LOCALE = { US: 'en-US', DE: 'de-DE', GB: 'en-GB', FR: 'fr-FR', NL: 'nl-NL' }

export const PLANS = [
  { id: 'free', name: 'Free', monthlyPerSeat: 0, maxSeats: 3, features: ['1 project', 'Community support'] },
  { id: 'starter', name: 'Starter', monthlyPerSeat: 1200, maxSeats: 10, features: ['10 projects', 'Email support', 'CSV export'] },
  { id: 'pro', name: 'Pro', monthlyPerSeat: 2900, maxSeats: 100, features: ['Unlimited projects', 'Priority support', 'SSO', 'Audit log'] },
  { id: 'enterprise', name: 'Enterprise', monthlyPerSeat: 7900, maxSeats: 1000, features: ['Everything in Pro', 'Dedicated manager', 'SLA 99.95%', 'Custom contracts'] },
]
/** Yearly billing is ten months' price. */
export const planPrice = (planId, interval) => {
  const plan = PLANS.find((p) => p.id === planId)
  return interval === 'year' ? plan.monthlyPerSeat * 10 : plan.monthlyPerSeat
}

// [name, category, priceCents, reorderPoint]
const PRODUCTS = [
  ['Aurora Desk Lamp', 'hardware', 4900, 20],
  ['Nimbus Wireless Mouse', 'hardware', 3900, 30],
  ['Vertex Mechanical Keyboard', 'hardware', 12900, 15],
  ['Halo 27" 4K Monitor', 'hardware', 38900, 8],
  ['Drift Ergonomic Chair', 'hardware', 45900, 5],
  ['Pulse USB-C Hub', 'hardware', 5900, 25],
  ['Echo Noise-Cancelling Headset', 'hardware', 19900, 12],
  ['Orbit 4K Webcam', 'hardware', 11900, 12],
  ['Atlas Standing Desk', 'hardware', 64900, 4],
  ['Cable Organizer Kit', 'accessories', 1900, 40],
  ['Laptop Sleeve 14"', 'accessories', 3400, 25],
  ['Flex Monitor Arm', 'accessories', 8900, 10],
  ['Desk Mat XL', 'accessories', 2900, 30],
  ['Gel Wrist Rest', 'accessories', 1500, 30],
  ['Screen Cleaning Kit', 'accessories', 1200, 40],
  ['Focus Pro License (1 year)', 'software', 9900, 0],
  ['CloudSync Backup 1 TB', 'software', 6000, 0],
  ['SecureVault Password Manager', 'software', 3600, 0],
  ['PixelForge Design Suite', 'software', 24900, 0],
  ['DevBox IDE Seat', 'software', 14900, 0],
  ['Priority Support Add-on', 'services', 29900, 0],
  ['Onboarding Workshop', 'services', 75000, 0],
  ['Data Migration Service', 'services', 120000, 0],
  ['Extended Warranty (2 years)', 'services', 7900, 0],
  ['Laptop Sleeve 13" (discontinued)', 'accessories', 2900, 0],
]
const PHYSICAL = new Set(['hardware', 'accessories'])
export const isPhysical = (product) => PHYSICAL.has(product.category)

const WAREHOUSES = [
  { id: 'wh_east', name: 'Newark fulfilment center', address: { line1: '400 Port St', city: 'Newark', region: 'NJ', postalCode: '07114', country: 'US' } },
  { id: 'wh_west', name: 'Reno fulfilment center', address: { line1: '2100 Logistics Way', city: 'Reno', region: 'NV', postalCode: '89502', country: 'US' } },
  { id: 'wh_eu', name: 'Rotterdam hub', address: { line1: 'Maasvlakte 12', city: 'Rotterdam', region: 'ZH', postalCode: '3199 LK', country: 'NL' } },
]
export const WAREHOUSE_IDS = WAREHOUSES.map((w) => w.id)

const AGENTS = [
  ['Dana Whitfield', 'tier1', 'online'],
  ['Marcus Lee', 'tier1', 'online'],
  ['Sara Lindgren', 'tier1', 'away'],
  ['Tobias Grant', 'tier1', 'offline'],
  ['Nadia Ferreira', 'tier2', 'online'],
  ['Kenji Mori', 'tier2', 'online'],
  ['Rachel Adeyemi', 'billing', 'online'],
  ['Paul Varga', 'billing', 'away'],
]

const TICKET_TOPICS = [
  {
    team: 'tier1', tags: ['shipping'], withOrder: true,
    subjects: ['Where is my order {order}?', 'Package for {order} arrived damaged', 'Wrong item received in {order}'],
    body: 'Hi, my order {order} placed on {date} has not arrived as expected. Can you check what is going on? You can call me at {phone}.',
    reply: 'Thanks for reaching out! I checked {order} with the carrier and it is moving again; you should have it within two business days.',
  },
  {
    team: 'billing', tags: ['billing'], withOrder: true,
    subjects: ['Charged twice for {order}', 'Need a VAT invoice for {order}', 'Refund for {order} not received yet'],
    body: 'Hello, I have a billing question about {order}. My card statement does not match the invoice. Please reply to {email}.',
    reply: 'I looked at the payment for {order}: the second charge was an authorisation hold and has been released. The invoice is attached.',
  },
  {
    team: 'tier1', tags: ['account'], withOrder: false,
    subjects: ['Cannot log in after password reset', 'Please add a new admin to our workspace', 'Two-factor codes not arriving'],
    body: 'I cannot access my account since yesterday. My login email is {email}. This is blocking my team.',
    reply: 'I reset your session and re-sent the verification email. Could you try again and let me know?',
  },
  {
    team: 'tier2', tags: ['bug'], withOrder: false,
    subjects: ['Sync keeps failing with error 502', 'Webhooks delivered twice', 'API rate limit lower than documented'],
    body: 'Since the last release our integration fails intermittently. Request ids attached. Happy to jump on a call at {phone}.',
    reply: 'Engineering confirmed a regression in the edge proxy; a fix is rolling out today. I will update you once it is live.',
  },
  {
    team: 'tier1', tags: ['feature-request'], withOrder: false,
    subjects: ['Feature request: export dashboards to CSV', 'Feature request: dark mode for the mobile app'],
    body: 'It would help us a lot to have this. We are on the {plan} plan and would use it daily.',
    reply: 'Thanks for the suggestion! I have logged it with the product team and linked your account to the request.',
  },
]

const MACROS = [
  { id: 'mac_01', title: 'Ask for order number', description: 'Asks the requester for their order number and sets the ticket to pending.', actions: { status: 'pending', comment: 'Could you share the order number (it looks like ord_123) so I can look into this?' } },
  { id: 'mac_02', title: 'Refund processed', description: 'Confirms the refund, tags the ticket and marks it solved.', actions: { status: 'solved', addTags: ['refund'], comment: 'Your refund has been processed; it can take 5–10 business days to appear on your statement.' } },
  { id: 'mac_03', title: 'Escalate to tier 2', description: 'Raises priority to high and tags the ticket for tier 2.', actions: { priority: 'high', addTags: ['tier2'], comment: 'I have escalated this to our technical team, who will follow up shortly.' } },
  { id: 'mac_04', title: 'Password reset instructions', description: 'Sends password reset instructions and sets the ticket to pending.', actions: { status: 'pending', addTags: ['account'], comment: 'You can reset your password from the sign-in page via "Forgot password". Let me know if the email does not arrive.' } },
]

const COUPONS = [
  { code: 'WELCOME10', percentOff: 10, amountOff: null, duration: 'once', durationInMonths: null, maxRedemptions: null, expiresAt: null, active: true },
  { code: 'TEAM15', percentOff: 15, amountOff: null, duration: 'repeating', durationInMonths: 3, maxRedemptions: 200, expiresAt: null, active: true },
  { code: 'FREESHIP', percentOff: null, amountOff: 999, duration: 'once', durationInMonths: null, maxRedemptions: null, expiresAt: null, active: true },
  { code: 'SPRING25', percentOff: null, amountOff: 2500, duration: 'once', durationInMonths: null, maxRedemptions: 500, expiresAt: '2025-06-30T23:59:59.000Z', active: true },
  { code: 'BLACKFRIDAY30', percentOff: 30, amountOff: null, duration: 'once', durationInMonths: null, maxRedemptions: 1000, expiresAt: '2025-12-01T23:59:59.000Z', active: true },
  { code: 'VIP20', percentOff: 20, amountOff: null, duration: 'forever', durationInMonths: null, maxRedemptions: 25, expiresAt: null, active: true },
  { code: 'LEGACY50', percentOff: 50, amountOff: null, duration: 'once', durationInMonths: null, maxRedemptions: null, expiresAt: null, active: false },
]

const STATUS_COMPONENTS = [
  { id: 'api', name: 'Public API', status: 'operational' },
  { id: 'dashboard', name: 'Web dashboard', status: 'operational' },
  { id: 'checkout', name: 'Checkout & payments', status: 'operational' },
  { id: 'email', name: 'Email delivery', status: 'degraded_performance' },
  { id: 'webhooks', name: 'Webhooks', status: 'operational' },
  { id: 'search', name: 'Search', status: 'operational' },
]

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const ID_WIDTH = { usr: 3, team: 2, aud: 4, prd: 3, mov: 4, ord: 3, note: 4, ret: 3, inv: 3, pay: 3, ref: 3, sub: 3, cpn: 3, tkt: 3, cmt: 4, agt: 2, evt: 5, rpt: 3, sch: 3, key: 2 }

function generateUsers(rng) {
  const users = []
  const preferences = {}
  for (let i = 1; i <= 40; i++) {
    const tenant = i % 3 === 0 ? TENANTS[1] : TENANTS[0]
    const first = FIRST_NAMES[i - 1]
    const last = LAST_NAMES[(i * 7) % LAST_NAMES.length]
    const invited = i > 36
    const european = tenant.id === 't_globex' && rng() < 0.6
    const [city, region, postalCode, country, timezone] = pick(rng, european ? EU_CITIES : US_CITIES)
    const createdMs = invited
      ? BASE - int(rng, 2, 20) * DAY - int(rng, 0, 86_399) * 1000
      : Date.UTC(2023, 5, 1) + int(rng, 0, 640) * DAY + int(rng, 0, 86_399) * 1000
    const status = invited ? 'invited' : [7, 18, 29].includes(i) ? 'suspended' : 'active'
    const id = `usr_${pad(i, 3)}`
    users.push({
      id,
      tenantId: tenant.id,
      name: `${first} ${last}`,
      email: `${first}.${last}@${tenant.domain}`.toLowerCase(),
      phone: PHONE_PREFIX[country] + pad(100 + i, 4),
      dateOfBirth: `${int(rng, 1962, 2003)}-${pad(int(rng, 1, 12), 2)}-${pad(int(rng, 1, 28), 2)}`,
      address: { line1: `${int(rng, 1, 980)} ${pick(rng, STREETS)}`, ...(rng() < 0.3 ? { line2: `Suite ${int(rng, 100, 900)}` } : {}), city, region, postalCode, country },
      role: i % 8 === 1 ? 'admin' : rng() < 0.7 ? 'member' : 'viewer',
      status,
      plan: invited ? 'free' : weighted(rng, [['free', 35], ['starter', 25], ['pro', 30], ['enterprise', 10]]),
      createdAt: iso(createdMs),
      updatedAt: iso(createdMs),
      lastLoginAt: invited ? null : iso(BASE - (status === 'suspended' ? int(rng, 60, 200) : int(rng, 1, 45)) * DAY - int(rng, 0, 86_399) * 1000),
      tags: sample(rng, ['beta', 'vip', 'partner', 'early-adopter'], weighted(rng, [[0, 6], [1, 3], [2, 1]])).sort(),
      metadata: { source: pick(rng, ['organic', 'referral', 'ads', 'sales']), ...(i % 5 === 0 ? { crmId: `CRM-${1000 + i}` } : {}) },
    })
    preferences[id] = {
      locale: LOCALE[country],
      timezone,
      theme: pick(rng, ['light', 'dark', 'system']),
      notifications: { email: rng() < 0.9, sms: rng() < 0.3, digest: pick(rng, ['daily', 'weekly', 'never']) },
    }
  }
  return { users, preferences }
}

function generateTeams(users) {
  const ofTenant = (tenantId, from, count) => users.filter((u) => u.tenantId === tenantId && u.status !== 'invited').slice(from, from + count).map((u) => u.id)
  return [
    { id: 'team_01', tenantId: 't_acme', name: 'Engineering', description: 'Product engineering and platform', memberIds: ofTenant('t_acme', 0, 8) },
    { id: 'team_02', tenantId: 't_acme', name: 'Sales', description: 'Account executives and SDRs', memberIds: ofTenant('t_acme', 8, 6) },
    { id: 'team_03', tenantId: 't_acme', name: 'Customer Success', description: 'Onboarding and renewals', memberIds: ofTenant('t_acme', 14, 5) },
    { id: 'team_04', tenantId: 't_globex', name: 'Operations', description: 'Logistics and vendor management', memberIds: ofTenant('t_globex', 0, 6) },
    { id: 'team_05', tenantId: 't_globex', name: 'Finance', description: 'Accounting, invoicing and payroll', memberIds: ofTenant('t_globex', 6, 4) },
  ].map((team) => ({ ...team, createdAt: '2024-02-01T09:00:00.000Z' }))
}

function generateAuditLog(users) {
  const entries = []
  for (const user of users) {
    const admin = users.find((u) => u.tenantId === user.tenantId && u.role === 'admin' && u.id !== user.id) ?? users[0]
    entries.push({ at: user.createdAt, actorId: admin.id, action: user.status === 'invited' ? 'user.invited' : 'user.created', targetType: 'user', targetId: user.id, details: { email: user.email, role: user.role } })
    if (user.status === 'suspended') {
      entries.push({ at: iso(Date.parse(user.lastLoginAt) + 3 * DAY), actorId: admin.id, action: 'user.suspended', targetType: 'user', targetId: user.id, details: { reason: 'payment_overdue' } })
    }
  }
  entries.sort((a, b) => a.at.localeCompare(b.at))
  return entries.map((e, i) => ({ id: `aud_${pad(i + 1, 4)}`, ...e }))
}

function generateProducts(rng) {
  return PRODUCTS.map(([name, category, price, reorderPoint], i) => {
    const created = Date.UTC(2023, 0, 15) + i * 9 * DAY
    return {
      id: `prd_${pad(i + 1, 3)}`,
      sku: `SKU-${1001 + i}`,
      name,
      description: `${name} — ${category === 'services' ? 'delivered by our professional services team' : category === 'software' ? 'license key delivered by email' : 'ships from our US and EU warehouses'}.`,
      category,
      price: money(price),
      status: i === PRODUCTS.length - 1 ? 'archived' : 'active',
      tracked: PHYSICAL.has(category),
      reorderPoint,
      tags: sample(rng, ['bestseller', 'new', 'eco', 'bundle-eligible', 'b2b'], int(rng, 0, 2)).sort(),
      createdAt: iso(created),
      updatedAt: iso(created + 30 * DAY),
    }
  })
}

function generateStock(rng, products) {
  const stock = []
  const movements = []
  for (const product of products.filter((p) => p.tracked && p.status === 'active')) {
    for (const warehouse of WAREHOUSES) {
      const low = rng() < 0.12
      const onHand = low ? int(rng, 0, Math.max(1, product.reorderPoint - 1)) : int(rng, product.reorderPoint, product.reorderPoint * 6 + 20)
      stock.push({ productId: product.id, warehouseId: warehouse.id, onHand, reserved: Math.min(onHand, int(rng, 0, 4)) })
      movements.push({ productId: product.id, warehouseId: warehouse.id, delta: onHand, reason: 'receipt', reference: `PO-${4000 + movements.length}`, at: iso(Date.UTC(2025, 10, 3) + movements.length * 37 * MINUTE) })
    }
  }
  return { stock, movements: movements.map((m, i) => ({ id: `mov_${pad(i + 1, 4)}`, ...m })) }
}

/** Orders with their invoices, payments and refunds (refs resolved to ids at the end). */
function generateCommerce(rng, store) {
  const { users, products, coupons } = store
  const buyers = users.filter((u) => u.status !== 'invited')
  const sellable = products.filter((p) => p.status === 'active')
  const orders = []
  for (let n = 0; n < 120; n++) {
    // Skewed towards the first buyers so "top customers" is meaningful.
    const user = buyers[Math.floor(rng() ** 1.3 * buyers.length)]
    const earliest = Math.max(Date.UTC(2025, 0, 1), Date.parse(user.createdAt) + DAY)
    // Growth: more orders towards the end of the year. Whole seconds keep timestamps tidy.
    const created = earliest + Math.floor((rng() ** 0.7 * (BASE - 6 * HOUR - earliest)) / 1000) * 1000
    const picks = sample(rng, sellable, 1 + Math.floor(rng() ** 2 * 4))
    const requested = picks.map((p) => ({ productId: p.id, quantity: p.category === 'services' ? int(rng, 1, 3) : weighted(rng, [[1, 7], [2, 2], [3, 1]]) }))
    const couponCode = rng() < 0.15 ? pick(rng, ['WELCOME10', 'TEAM15', 'FREESHIP']) : null
    const priced = priceOrder(store, requested, { couponCode, country: user.address.country, at: iso(created) })
    if (couponCode) coupons.find((c) => c.code === couponCode).timesRedeemed++
    orders.push({ user, created, priced, roll: rng(), timings: [int(rng, 2, 90) * MINUTE, int(rng, 4, 72) * HOUR, int(rng, 2, 7) * DAY, int(rng, 1, 10) * DAY] })
  }
  orders.sort((a, b) => a.created - b.created)

  const invoices = []
  const payments = []
  const refunds = []
  const records = orders.map((draft, i) => {
    const { user, created, priced, roll, timings } = draft
    const paidAt = created + timings[0]
    const shippedAt = paidAt + timings[1]
    const deliveredAt = shippedAt + timings[2]
    let status
    if (roll < 0.03) status = 'cancelled_unpaid'
    else if (roll < 0.06) status = 'cancelled_paid'
    else if (roll < 0.11 && deliveredAt + timings[3] < BASE) status = 'refunded'
    else if (roll < 0.14) status = 'pending'
    else status = deliveredAt <= BASE ? 'delivered' : shippedAt <= BASE ? 'shipped' : paidAt <= BASE ? 'paid' : 'pending'

    const order = {
      id: `ord_${pad(i + 1, 3)}`,
      tenantId: user.tenantId,
      userId: user.id,
      customerEmail: user.email,
      status: status.startsWith('cancelled') ? 'cancelled' : status,
      ...priced,
      shippingAddress: { ...user.address },
      invoiceId: null,
      paymentId: null,
      tracking: null,
      notes: [],
      metadata: { channel: pick(rng, ['web', 'web', 'mobile', 'sales']) },
      createdAt: iso(created),
      updatedAt: iso(created),
      paidAt: null,
      shippedAt: null,
      deliveredAt: null,
      cancelledAt: null,
      cancelReason: null,
    }
    const invoice = invoiceForOrder(order, user)
    invoices.push(invoice)
    order._invoice = invoice

    if (status === 'pending' && rng() < 0.4) {
      payments.push({ _invoice: invoice, _order: order, userId: user.id, amount: money(order.total.amount), amountRefunded: money(0), status: 'failed', method: { type: 'card', brand: 'visa', last4: pad(int(rng, 1, 9999), 4) }, failureCode: pick(rng, ['card_declined', 'insufficient_funds', 'expired_card']), description: `Order ${order.id}`, createdAt: iso(created + 3 * MINUTE) })
    }
    const paid = !['pending', 'cancelled_unpaid'].includes(status)
    if (paid) {
      order.paidAt = iso(paidAt)
      invoice.status = 'paid'
      invoice.paidAt = order.paidAt
      invoice.amountPaid = money(invoice.total.amount)
      invoice.amountDue = money(0)
      const payment = { _invoice: invoice, _order: order, userId: user.id, amount: money(order.total.amount), amountRefunded: money(0), status: 'succeeded', method: paymentMethod(rng), failureCode: null, description: `Order ${order.id}`, createdAt: order.paidAt }
      payments.push(payment)
      order._payment = payment
      if (['shipped', 'delivered', 'refunded'].includes(status)) {
        order.shippedAt = iso(shippedAt)
        order.tracking = trackingFor(rng, order.id)
      }
      if (['delivered', 'refunded'].includes(status)) order.deliveredAt = iso(deliveredAt)
      const refundAt = status === 'refunded' ? deliveredAt + timings[3] : status === 'cancelled_paid' ? paidAt + 2 * HOUR : null
      if (refundAt) {
        refunds.push({ _payment: payment, _order: order, userId: user.id, amount: money(payment.amount.amount), reason: status === 'refunded' ? 'requested_by_customer' : 'order_cancelled', status: 'succeeded', note: null, createdAt: iso(refundAt) })
        payment.amountRefunded = money(payment.amount.amount)
        payment.status = 'refunded'
      } else if (status === 'delivered' && rng() < 0.08) {
        const partial = order.items[0].unitPrice.amount
        refunds.push({ _payment: payment, _order: order, userId: user.id, amount: money(partial), reason: pick(rng, ['product_defective', 'requested_by_customer']), status: 'succeeded', note: `One ${order.items[0].name} returned`, createdAt: iso(Math.min(deliveredAt + int(rng, 2, 8) * DAY, BASE - HOUR)) })
        payment.amountRefunded = money(partial)
        payment.status = 'partially_refunded'
      }
    }
    if (status.startsWith('cancelled')) {
      const customerCancelled = created + int(rng, 1, 30) * HOUR
      order.cancelledAt = iso(status === 'cancelled_paid' ? paidAt + 2 * HOUR : customerCancelled)
      order.cancelReason = pick(rng, status === 'cancelled_paid' ? ['customer_request', 'duplicate'] : ['customer_request', 'duplicate', 'payment_failed'])
      if (status === 'cancelled_unpaid') {
        invoice.status = 'void'
        invoice.voidedAt = order.cancelledAt
        invoice.amountDue = money(0)
      }
    }
    order.updatedAt = [order.createdAt, order.paidAt, order.shippedAt, order.deliveredAt, order.cancelledAt].filter(Boolean).sort().at(-1)
    return order
  })

  for (const sub of store.subscriptions) {
    const user = users.find((u) => u.id === sub.userId)
    for (const start of subscriptionBillingDates(sub)) {
      const invoice = invoiceForSubscription(sub, user, start)
      invoices.push(invoice)
      const unpaid = sub.status === 'past_due' && start === subscriptionBillingDates(sub).at(-1)
      if (unpaid || invoice.total.amount === 0) continue
      invoice.status = 'paid'
      invoice.paidAt = iso(start + 5 * MINUTE)
      invoice.amountPaid = money(invoice.total.amount)
      invoice.amountDue = money(0)
      payments.push({ _invoice: invoice, _order: null, userId: user.id, amount: money(invoice.total.amount), amountRefunded: money(0), status: 'succeeded', method: paymentMethod(rng), failureCode: null, description: `Subscription ${sub.id}`, createdAt: invoice.paidAt })
    }
  }

  // Assign chronological ids, then resolve object references into ids.
  const byTime = (key) => (a, b) => a[key].localeCompare(b[key])
  invoices.sort(byTime('issuedAt')).forEach((inv, i) => {
    inv.id = `inv_${pad(i + 1, 3)}`
    inv.number = `INV-${inv.issuedAt.slice(0, 4)}-${pad(i + 1, 4)}`
    inv.hostedUrl = `https://billing.example.com/invoices/${inv.id}`
  })
  payments.sort(byTime('createdAt')).forEach((p, i) => (p.id = `pay_${pad(i + 1, 3)}`))
  refunds.sort(byTime('createdAt')).forEach((r, i) => (r.id = `ref_${pad(i + 1, 3)}`))
  for (const order of records) {
    order.invoiceId = order._invoice.id
    order.paymentId = order._payment?.id ?? null
    delete order._invoice
    delete order._payment
  }
  const finalPayments = payments.map(({ _invoice, _order, ...p }) => ({ id: p.id, userId: p.userId, invoiceId: _invoice?.id ?? null, orderId: _order?.id ?? null, ...p }))
  const finalRefunds = refunds.map(({ _payment, _order, ...r }) => ({ id: r.id, paymentId: _payment.id, orderId: _order?.id ?? null, ...r }))
  return { orders: records, invoices, payments: finalPayments, refunds: finalRefunds }
}

/** Approved returns behind the partial refunds, plus a few that still await a decision. */
function generateReturns(rng, store) {
  const returns = []
  const add = (order, status, items, refund, createdAt) =>
    returns.push({ id: `ret_${pad(returns.length + 1, 3)}`, orderId: order.id, userId: order.userId, status, items, refundAmount: money(sum(items.map((i) => order.items.find((l) => l.productId === i.productId).unitPrice.amount * i.quantity))), refundId: refund?.id ?? null, comment: null, createdAt, updatedAt: refund?.createdAt ?? createdAt })
  for (const refund of store.refunds.filter((r) => r.note)) {
    const order = store.orders.find((o) => o.id === refund.orderId)
    add(order, 'approved', [{ productId: order.items[0].productId, quantity: 1, reason: refund.reason === 'product_defective' ? 'damaged' : 'no_longer_needed' }], refund, iso(Date.parse(refund.createdAt) - DAY))
  }
  const refunded = new Set(store.refunds.map((r) => r.orderId))
  for (const order of store.orders.filter((o) => o.status === 'delivered' && !refunded.has(o.id)).slice(-3)) {
    add(order, 'requested', [{ productId: order.items[0].productId, quantity: 1, reason: pick(rng, ['damaged', 'wrong_item', 'not_as_described']) }], null, iso(Math.min(Date.parse(order.deliveredAt) + DAY, BASE - HOUR)))
  }
  return returns.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((r, i) => ({ ...r, id: `ret_${pad(i + 1, 3)}` }))
}

function paymentMethod(rng) {
  const type = weighted(rng, [['card', 7], ['paypal', 2], ['bank_transfer', 1]])
  return type === 'card'
    ? { type, brand: pick(rng, ['visa', 'visa', 'mastercard', 'amex']), last4: pad(int(rng, 1, 9999), 4) }
    : { type, brand: null, last4: type === 'bank_transfer' ? pad(int(rng, 1, 9999), 4) : null }
}

export function trackingFor(rng, orderId, carrier = pick(rng, ['ups', 'fedex', 'usps', 'dhl'])) {
  const number = `${carrier.toUpperCase()}${pad(Number.parseInt(orderId.slice(4), 10) * 7919 % 1_000_000, 6)}${pad(int(rng, 0, 9999), 4)}`
  return { carrier, trackingNumber: number, url: `https://track.example.com/${carrier}/${number}` }
}

const taxRate = (country) => (country === 'US' ? 0.08 : 0.2)

/** Invoice shell; id, number and hostedUrl are assigned once all invoices exist. */
function baseInvoice({ userId, orderId = null, subscriptionId = null, lines, discount = 0, tax: fixedTax, country, issuedMs, memo = null }) {
  const subtotal = sum(lines.map((l) => l.amount.amount))
  // Orders carry their own tax (shipping is not taxed); other invoices tax the whole subtotal.
  const tax = fixedTax ?? Math.round((subtotal - discount) * taxRate(country))
  const total = subtotal - discount + tax
  return {
    id: null,
    number: null,
    userId,
    orderId,
    subscriptionId,
    status: 'open',
    currency: 'USD',
    lines,
    subtotal: money(subtotal),
    discount: money(discount),
    tax: money(tax),
    total: money(total),
    amountPaid: money(0),
    amountDue: money(total),
    memo,
    issuedAt: iso(issuedMs),
    dueDate: isoDate(issuedMs + 14 * DAY),
    paidAt: null,
    voidedAt: null,
    sentAt: iso(issuedMs + MINUTE),
    hostedUrl: null,
    metadata: {},
  }
}

export function invoiceLinesForOrder(order) {
  const lines = order.items.map((item) => ({ description: `${item.name} (${item.sku})`, quantity: item.quantity, unitAmount: money(item.unitPrice.amount), amount: money(item.total.amount) }))
  if (order.shipping.amount > 0) lines.push({ description: 'Shipping', quantity: 1, unitAmount: money(order.shipping.amount), amount: money(order.shipping.amount) })
  return lines
}

function invoiceForOrder(order, user) {
  return baseInvoice({ userId: user.id, orderId: order.id, lines: invoiceLinesForOrder(order), discount: order.discount.amount, tax: order.tax.amount, issuedMs: Date.parse(order.createdAt) })
}

function invoiceForSubscription(sub, user, startMs) {
  const plan = PLANS.find((p) => p.id === sub.plan)
  const label = new Date(startMs).toLocaleString('en-US', { month: 'short', year: 'numeric', timeZone: 'UTC' })
  const lines = [{ description: `${plan.name} plan, ${sub.seats} seat(s), ${sub.interval === 'year' ? 'yearly' : 'monthly'} from ${label}`, quantity: sub.seats, unitAmount: money(sub.unitPrice.amount), amount: money(sub.unitPrice.amount * sub.seats) }]
  return baseInvoice({ userId: user.id, subscriptionId: sub.id, lines, country: user.address.country, issuedMs: startMs })
}

/** Period starts (ms) that produced an invoice in the seed data. */
function subscriptionBillingDates(sub) {
  const start = Date.parse(sub.currentPeriodStart)
  if (sub.status === 'trialing') return []
  if (sub.interval === 'year') return [start]
  if (sub.status === 'cancelled') {
    const cancelled = Date.parse(sub.cancelledAt)
    return [addMonths(cancelled, -2), addMonths(cancelled, -1)]
  }
  return [addMonths(start, -2), addMonths(start, -1), start]
}

function generateSubscriptions(rng, users) {
  const subs = []
  for (const user of users.filter((u) => u.plan !== 'free' && u.status !== 'invited')) {
    const created = new Date(user.createdAt)
    const anchor = Math.min(created.getUTCDate(), 28)
    const interval = rng() < 0.2 ? 'year' : 'month'
    const seats = user.plan === 'enterprise' ? int(rng, 10, 50) : user.plan === 'pro' ? int(rng, 2, 15) : int(rng, 1, 5)
    const n = subs.length + 1
    let status = user.status === 'suspended' ? 'past_due' : 'active'
    if (n === 3) status = 'trialing'
    if (n === 5 || n === 11) status = 'cancelled'
    if (n === 8) status = 'paused'
    if (n === 13) status = 'past_due'
    const periodStart = interval === 'year' ? Date.UTC(2025, created.getUTCMonth(), anchor, 9) : Date.UTC(2025, 11, anchor, 9)
    const cancelledAt = status === 'cancelled' ? iso(Date.UTC(2025, 9, anchor, 15)) : null
    subs.push({
      id: `sub_${pad(n, 3)}`,
      userId: user.id,
      tenantId: user.tenantId,
      plan: user.plan,
      status,
      interval,
      seats,
      unitPrice: money(planPrice(user.plan, interval)),
      couponCode: n % 6 === 0 ? 'TEAM15' : null,
      trialEndsAt: status === 'trialing' ? iso(BASE + 9 * DAY) : null,
      currentPeriodStart: iso(periodStart),
      currentPeriodEnd: iso(interval === 'year' ? addMonths(periodStart, 12) : addMonths(periodStart, 1)),
      cancelAtPeriodEnd: n === 4 || n === 9,
      cancelledAt,
      pausedAt: status === 'paused' ? iso(Date.UTC(2025, 11, 2, 10)) : null,
      resumesOn: status === 'paused' ? '2026-02-01' : null,
      createdAt: iso(Date.parse(user.createdAt) + HOUR),
      updatedAt: cancelledAt ?? iso(periodStart),
    })
  }
  return subs
}

function generateTickets(rng, store) {
  const { users, orders, agents } = store
  const buyers = users.filter((u) => u.status !== 'invited')
  const drafts = []
  for (let n = 0; n < 60; n++) {
    const topic = weighted(rng, TICKET_TOPICS.map((t, i) => [t, [30, 25, 20, 15, 10][i]]))
    const created = Date.UTC(2025, 6, 1) + Math.floor((rng() ** 0.5 * (BASE - 3 * HOUR - Date.UTC(2025, 6, 1))) / 1000) * 1000
    const order = topic.withOrder ? pick(rng, orders.filter((o) => Date.parse(o.createdAt) < created)) : null
    const requester = order ? users.find((u) => u.id === order.userId) : pick(rng, buyers)
    drafts.push({ topic, created, order, requester, subject: pick(rng, topic.subjects), rolls: Array.from({ length: 10 }, () => rng()) })
  }
  drafts.sort((a, b) => a.created - b.created)

  let commentSeq = 0
  return drafts.map(({ topic, created, order, requester, subject, rolls }, i) => {
    const fill = (text) => text
      .replaceAll('{order}', order?.id ?? '')
      .replaceAll('{date}', order ? order.createdAt.slice(0, 10) : '')
      .replaceAll('{email}', requester.email)
      .replaceAll('{phone}', requester.phone)
      .replaceAll('{plan}', requester.plan)
    const ageDays = (BASE - created) / DAY
    const status = ageDays > 21
      ? (rolls[0] < 0.55 ? 'closed' : rolls[0] < 0.9 ? 'solved' : 'on_hold')
      : weighted(() => rolls[0], [['open', 4], ['pending', 3], ['on_hold', 1], ['solved', 2]])
    const priority = weighted(() => rolls[1], [['low', 20], ['normal', 50], ['high', 22], ['urgent', 8]])
    const teamAgents = agents.filter((a) => a.team === topic.team)
    const assignee = status === 'open' && rolls[2] < 0.45 ? null : teamAgents[Math.floor(rolls[3] * teamAgents.length)]
    const firstResponse = assignee ? created + Math.floor(5 + rolls[4] * 900) * MINUTE : null
    const solved = ['solved', 'closed'].includes(status) ? (firstResponse ?? created) + Math.floor(2 + rolls[5] * 96) * HOUR : null
    const id = `tkt_${pad(i + 1, 3)}`
    const comments = []
    const comment = (authorType, authorId, body, at, isPublic = true) =>
      comments.push({ id: `cmt_${pad(++commentSeq, 4)}`, ticketId: id, authorType, authorId, body, public: isPublic, attachments: [], createdAt: iso(at) })
    if (firstResponse) comment('agent', assignee.id, `Hi ${requester.name.split(' ')[0]}, ${fill(topic.reply)}`, firstResponse)
    if (firstResponse && rolls[6] < 0.6) comment('requester', requester.id, rolls[7] < 0.5 ? 'Thanks, that helps. I will confirm once it works.' : `Still seeing the problem, here is a screenshot. Reach me on ${requester.phone}.`, firstResponse + Math.floor(1 + rolls[7] * 20) * HOUR)
    if (assignee && rolls[8] < 0.3) comment('agent', assignee.id, `Internal: checked account ${requester.id}${order ? ` and payment for ${order.id}` : ''}, nothing unusual.`, (firstResponse ?? created) + 30 * MINUTE, false)
    if (solved) comment('agent', assignee?.id ?? null, 'Glad we could sort this out — I am marking the ticket as solved. Reply to reopen it.', solved)
    if (topic.team === 'billing' && order && comments.length) {
      comments[0].attachments.push({ filename: `${order.id}-invoice.pdf`, url: `https://billing.example.com/invoices/${order.invoiceId}.pdf`, sizeBytes: 48_213 })
    }
    const rated = solved && rolls[9] < 0.55
    const score = rated ? [1, 2, 3, 4, 4, 5, 5, 5][Math.floor(rolls[9] * 1000) % 8] : null
    return {
      id,
      tenantId: requester.tenantId,
      requesterId: requester.id,
      requesterName: requester.name,
      requesterEmail: requester.email,
      orderId: order?.id ?? null,
      subject: fill(subject),
      description: fill(topic.body),
      status,
      priority,
      channel: ['email', 'web', 'chat', 'phone'][Math.floor(rolls[6] * 4)],
      assigneeId: assignee?.id ?? null,
      tags: [...topic.tags, ...(priority === 'urgent' ? ['vip-watch'] : [])],
      escalationLevel: topic.team === 'tier2' && priority === 'urgent' ? 1 : 0,
      mergedInto: null,
      satisfaction: rated ? { score, comment: score >= 4 ? 'Quick and helpful, thank you!' : score === 3 ? 'Okay, took a while.' : 'Slow response and the issue came back.', ratedAt: iso(solved + 6 * HOUR) } : null,
      comments,
      createdAt: iso(created),
      updatedAt: iso(Math.max(created, ...comments.map((c) => Date.parse(c.createdAt)))),
      firstResponseAt: firstResponse ? iso(firstResponse) : null,
      solvedAt: solved ? iso(solved) : null,
    }
  })
}

function generateEvents(rng, store) {
  const events = []
  const push = (user, name, at, properties = {}) => events.push({ userId: user.id, tenantId: user.tenantId, name, properties, occurredAt: iso(at) })
  const active = store.users.filter((u) => u.status !== 'invited')
  for (const user of active) {
    push(user, 'signup', Date.parse(user.createdAt), { source: user.metadata.source })
    const lastLogin = Date.parse(user.lastLoginAt)
    for (let month = 0; month < 12; month++) {
      const monthStart = Date.UTC(2025, month, 1)
      if (monthStart < Date.parse(user.createdAt) || monthStart > lastLogin || rng() < 0.3) continue
      for (let k = int(rng, 1, 4); k > 0; k--) {
        const at = monthStart + Math.floor(rng() * 28 * DAY)
        if (at <= lastLogin) push(user, 'login', at, { device: pick(rng, ['desktop', 'desktop', 'mobile']) })
      }
    }
  }
  // Shopping journeys carry a sessionId so funnels can count sessions as well as users.
  let sessions = 0
  const byId = new Map(store.users.map((u) => [u.id, u]))
  for (const order of store.orders) {
    const user = byId.get(order.userId)
    const at = Date.parse(order.createdAt)
    const sessionId = `ses_${pad(++sessions, 4)}`
    push(user, 'product_viewed', at - int(rng, 30, 120) * MINUTE, { sessionId, productId: order.items[0].productId })
    push(user, 'cart_add', at - int(rng, 10, 29) * MINUTE, { sessionId, productId: order.items[0].productId, quantity: order.items[0].quantity })
    push(user, 'checkout_started', at - int(rng, 2, 9) * MINUTE, { sessionId, items: order.items.length })
    push(user, 'order_placed', at, { sessionId, orderId: order.id, total: order.total.amount, currency: 'USD' })
  }
  const sellable = store.products.filter((p) => p.status === 'active')
  for (let n = 0; n < 160; n++) {
    const user = pick(rng, active)
    const at = Math.max(Date.parse(user.createdAt), Date.UTC(2025, 0, 1)) + Math.floor(rng() * 300 * DAY)
    if (at >= BASE) continue
    const product = pick(rng, sellable)
    const sessionId = `ses_${pad(++sessions, 4)}`
    push(user, 'product_viewed', at, { sessionId, productId: product.id })
    if (rng() < 0.35) {
      push(user, 'cart_add', at + int(rng, 1, 15) * MINUTE, { sessionId, productId: product.id, quantity: 1 })
      if (rng() < 0.35) push(user, 'checkout_started', at + int(rng, 16, 30) * MINUTE, { sessionId, items: 1 })
    }
  }
  events.sort((a, b) => a.occurredAt.localeCompare(b.occurredAt) || a.userId.localeCompare(b.userId))
  return events.map((e, i) => ({ id: `evt_${pad(i + 1, 5)}`, ...e }))
}

// ---------------------------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------------------------

/**
 * A fresh, deterministic dataset. Every call returns independent data; tools mutate it in place.
 * `store.now()` is a deterministic clock: each call advances one second past 2026-01-01.
 */
export function createStore() {
  const rng = seededRandom(20260101)
  const { users, preferences } = generateUsers(rng)
  const products = generateProducts(rng)
  const { stock, movements } = generateStock(rng, products)
  const store = {
    tenants: TENANTS.map(({ domain, ...t }) => ({ ...t })),
    users,
    preferences,
    teams: generateTeams(users),
    auditLog: generateAuditLog(users),
    products,
    warehouses: WAREHOUSES.map((w) => ({ ...w, address: { ...w.address }, active: true })),
    stock,
    stockMovements: movements,
    plans: clone(PLANS),
    coupons: COUPONS.map((c, i) => ({ id: `cpn_${pad(i + 1, 3)}`, ...c, amountOff: c.amountOff == null ? null : money(c.amountOff), timesRedeemed: c.code === 'SPRING25' ? 41 : 0, createdAt: iso(Date.UTC(2024, 10, 1) + i * 20 * DAY) })),
    agents: AGENTS.map(([name, team, status], i) => ({ id: `agt_${pad(i + 1, 2)}`, name, email: `${name.split(' ')[0].toLowerCase()}@support.example.com`, team, status, maxOpenTickets: team === 'tier2' ? 10 : 15 })),
    macros: clone(MACROS),
    orders: [],
    returns: [],
    invoices: [],
    payments: [],
    refunds: [],
    subscriptions: [],
    tickets: [],
    events: [],
    reportExports: [],
    reportSchedules: [],
    apiKeys: [
      { id: 'key_01', environment: 'live', last4: '9f3a', createdAt: '2025-03-01T10:00:00.000Z' },
      { id: 'key_02', environment: 'test', last4: '41c7', createdAt: '2025-03-01T10:00:00.000Z' },
    ],
    statusComponents: STATUS_COMPONENTS.map((c) => ({ ...c })),
  }
  store.subscriptions = generateSubscriptions(rng, users)
  Object.assign(store, generateCommerce(rng, store))
  store.returns = generateReturns(rng, store)
  store.tickets = generateTickets(rng, store)
  store.events = generateEvents(rng, store)

  let ticks = 0
  const counters = {}
  const collections = { ret: store.returns, usr: users, aud: store.auditLog, mov: store.stockMovements, ord: store.orders, inv: store.invoices, pay: store.payments, ref: store.refunds, sub: store.subscriptions, cpn: store.coupons, tkt: store.tickets, evt: store.events, team: store.teams, prd: products }
  for (const [prefix, list] of Object.entries(collections)) counters[prefix] = list.length
  counters.cmt = sum(store.tickets.map((t) => t.comments.length))
  counters.key = store.apiKeys.length
  Object.defineProperties(store, {
    /** Deterministic clock: 2026-01-01T00:00:01Z, then one second later on every call. */
    now: { value: () => iso(BASE + ++ticks * 1000) },
    /** Next sequential id for a prefix, e.g. nextId('ord') → 'ord_121'. */
    nextId: { value: (prefix) => `${prefix}_${pad((counters[prefix] = (counters[prefix] ?? 0) + 1), ID_WIDTH[prefix] ?? 3)}` },
  })
  return store
}

// ---------------------------------------------------------------------------------------------
// Toolkit shared by the app modules
// ---------------------------------------------------------------------------------------------

/** A deep, JSON-clean copy: handlers never hand out references into the store. */
export const clone = (value) => JSON.parse(JSON.stringify(value))

export function getOrThrow(list, id, kind) {
  const found = list.find((item) => item.id === id)
  if (!found) throw notFound(kind, id)
  return found
}

const encodeCursor = (offset) => Buffer.from(JSON.stringify({ o: offset })).toString('base64url')
function decodeCursor(cursor) {
  try {
    const { o } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Number.isInteger(o) && o >= 0) return o
  } catch {
    // fall through
  }
  throw new ToolError('INVALID_INPUT', `Invalid cursor "${cursor}"; pass the nextCursor value from a previous page`)
}

/** Cursor pagination: `{ items, total, nextCursor? }`. */
export function paginate(list, { limit = 20, cursor } = {}) {
  const offset = cursor ? decodeCursor(cursor) : 0
  const items = list.slice(offset, offset + limit)
  const next = offset + items.length
  return { items: clone(items), total: list.length, ...(next < list.length ? { nextCursor: encodeCursor(next) } : {}) }
}

/** Offset pagination: `{ items, total, nextOffset? }`. */
export function paginateOffset(list, { limit = 20, offset = 0 } = {}) {
  const items = list.slice(offset, offset + limit)
  const next = offset + items.length
  return { items: clone(items), total: list.length, ...(next < list.length ? { nextOffset: next } : {}) }
}

/** Case-insensitive substring match over the given field values. */
export function matches(query, ...values) {
  const q = query.trim().toLowerCase()
  return values.some((v) => v != null && String(v).toLowerCase().includes(q))
}

// --- pricing, coupons, refunds (shared by orders and billing) -----------------------------------

/** Why a coupon cannot be used at `at`, or null when it can. */
export function couponProblem(coupon, at) {
  if (!coupon.active) return 'Coupon is inactive'
  if (coupon.expiresAt && coupon.expiresAt < at) return `Coupon expired on ${coupon.expiresAt.slice(0, 10)}`
  if (coupon.maxRedemptions != null && coupon.timesRedeemed >= coupon.maxRedemptions) return 'Coupon has reached its redemption limit'
  return null
}

export function findCoupon(store, code) {
  const coupon = store.coupons.find((c) => c.code === code.toUpperCase())
  if (!coupon) throw new ToolError('NOT_FOUND', `Coupon ${code} not found`, { kind: 'Coupon', id: code })
  return coupon
}

export function discountFor(coupon, subtotal) {
  return coupon.percentOff != null ? Math.floor((subtotal * coupon.percentOff) / 100) : Math.min(coupon.amountOff.amount, subtotal)
}

/** Prices requested `{ productId, quantity }` lines; merges duplicates; throws on unknown products or unusable coupons. */
export function priceOrder(store, requested, { couponCode = null, country = 'US', at } = {}) {
  const merged = new Map()
  for (const { productId, quantity } of requested) merged.set(productId, (merged.get(productId) ?? 0) + quantity)
  const products = [...merged.keys()].map((id) => getOrThrow(store.products, id, 'Product'))
  const items = products.map((product) => {
    if (product.status !== 'active') throw new ToolError('CONFLICT', `Product ${product.id} is archived and cannot be ordered`, { productId: product.id })
    const quantity = merged.get(product.id)
    return { productId: product.id, sku: product.sku, name: product.name, quantity, unitPrice: money(product.price.amount), total: money(product.price.amount * quantity) }
  })
  const subtotal = sum(items.map((i) => i.total.amount))
  let discount = 0
  let code = null
  if (couponCode) {
    const coupon = findCoupon(store, couponCode)
    const problem = couponProblem(coupon, at ?? BASE_DATE)
    if (problem) throw new ToolError('INVALID_INPUT', `${problem}: ${coupon.code}`, { couponCode: coupon.code })
    discount = discountFor(coupon, subtotal)
    code = coupon.code
  }
  const tax = Math.round((subtotal - discount) * taxRate(country))
  const shipping = !products.some(isPhysical) || subtotal - discount >= 10_000 ? 0 : 999
  return { items, subtotal: money(subtotal), discount: money(discount), tax: money(tax), shipping: money(shipping), total: money(subtotal - discount + tax + shipping), couponCode: code }
}

export { taxRate }

/** Creates, stores and returns an open invoice dated now. */
export function createInvoiceRecord(store, { userId, orderId = null, subscriptionId = null, lines, discount = 0, tax, country = 'US', memo = null, metadata = {}, dueDate }) {
  const now = store.now()
  const invoice = baseInvoice({ userId, orderId, subscriptionId, lines, discount, tax, country, issuedMs: Date.parse(now), memo })
  invoice.id = store.nextId('inv')
  invoice.number = `INV-${now.slice(0, 4)}-${pad(invoice.id.slice(4), 4)}`
  invoice.hostedUrl = `https://billing.example.com/invoices/${invoice.id}`
  invoice.sentAt = null
  invoice.metadata = { ...metadata }
  if (dueDate) invoice.dueDate = dueDate
  store.invoices.push(invoice)
  return invoice
}

const METHOD_DETAILS = { card: { brand: 'visa', last4: '4242' }, paypal: { brand: null, last4: null }, bank_transfer: { brand: null, last4: '6789' } }

/** Records a successful payment of an open invoice and marks the invoice (and its order) paid. */
export function settleInvoice(store, invoice, methodType = 'card') {
  if (invoice.status !== 'open') throw new ToolError('CONFLICT', `Invoice ${invoice.id} is ${invoice.status}; only open invoices can be paid`, { status: invoice.status })
  const now = store.now()
  const payment = {
    id: store.nextId('pay'),
    userId: invoice.userId,
    invoiceId: invoice.id,
    orderId: invoice.orderId,
    amount: money(invoice.amountDue.amount, invoice.currency),
    amountRefunded: money(0, invoice.currency),
    status: 'succeeded',
    method: { type: methodType, ...METHOD_DETAILS[methodType] },
    failureCode: null,
    description: invoice.orderId ? `Order ${invoice.orderId}` : invoice.subscriptionId ? `Subscription ${invoice.subscriptionId}` : `Invoice ${invoice.number}`,
    createdAt: now,
  }
  store.payments.push(payment)
  Object.assign(invoice, { status: 'paid', paidAt: now, amountPaid: money(invoice.total.amount, invoice.currency), amountDue: money(0, invoice.currency) })
  const order = invoice.orderId && store.orders.find((o) => o.id === invoice.orderId)
  if (order && order.status === 'pending') Object.assign(order, { status: 'paid', paidAt: now, paymentId: payment.id, updatedAt: now })
  return payment
}

/**
 * Refunds `amount` cents (default: everything not yet refunded) of a payment.
 * Throws PAYMENT_DECLINED when the amount exceeds what is left to refund.
 */
export function issueRefund(store, payment, { amount, reason = 'requested_by_customer', note = null } = {}) {
  if (payment.status === 'failed') throw new ToolError('CONFLICT', `Payment ${payment.id} failed and has nothing to refund`, { paymentId: payment.id })
  const remaining = payment.amount.amount - payment.amountRefunded.amount
  const requested = amount ?? remaining
  if (remaining <= 0 && amount == null) throw new ToolError('CONFLICT', `Payment ${payment.id} is already fully refunded`, { paymentId: payment.id })
  if (requested > remaining) {
    throw new ToolError('PAYMENT_DECLINED', `Refund of ${requested} exceeds the ${remaining} remaining on payment ${payment.id}`, { paymentId: payment.id, requested, remaining, currency: payment.amount.currency })
  }
  const refund = { id: store.nextId('ref'), paymentId: payment.id, orderId: payment.orderId, userId: payment.userId, amount: money(requested, payment.amount.currency), reason, status: 'succeeded', note, createdAt: store.now() }
  store.refunds.push(refund)
  payment.amountRefunded = money(payment.amountRefunded.amount + requested, payment.amount.currency)
  payment.status = payment.amountRefunded.amount >= payment.amount.amount ? 'refunded' : 'partially_refunded'
  const order = payment.orderId && store.orders.find((o) => o.id === payment.orderId)
  if (order && payment.status === 'refunded' && order.status !== 'cancelled') {
    order.status = 'refunded'
    order.updatedAt = refund.createdAt
  }
  return refund
}

// --- stock (shared by orders and inventory) -----------------------------------------------------

export const stockRow = (store, productId, warehouseId) => store.stock.find((s) => s.productId === productId && s.warehouseId === warehouseId)
export const availableUnits = (store, productId) => sum(store.stock.filter((s) => s.productId === productId).map((s) => s.onHand - s.reserved))

/** Applies `delta` to on-hand stock and logs the movement; creates the stock row when missing. */
export function moveStock(store, { productId, warehouseId, delta, reason, reference = null }) {
  let row = stockRow(store, productId, warehouseId)
  if (!row) store.stock.push((row = { productId, warehouseId, onHand: 0, reserved: 0 }))
  if (row.onHand + delta < 0) {
    throw new ToolError('OUT_OF_STOCK', `Only ${row.onHand} unit(s) of ${productId} on hand in ${warehouseId}`, { productId, warehouseId, onHand: row.onHand, requested: -delta })
  }
  row.onHand += delta
  row.reserved = Math.min(row.reserved, row.onHand)
  const movement = { id: store.nextId('mov'), productId, warehouseId, delta, reason, reference, at: store.now() }
  store.stockMovements.push(movement)
  return { row, movement }
}

// --- JSON Schema fragments ----------------------------------------------------------------------

/** Shared definitions; `defineTools` attaches the ones a schema references as `#/$defs/<Name>`. */
export const defs = {
  Money: {
    type: 'object',
    description: 'A monetary amount in minor units (cents): { amount: 1999, currency: "USD" } is $19.99.',
    properties: {
      amount: { type: 'integer', minimum: 0, description: 'Amount in minor units (cents).' },
      currency: { type: 'string', enum: ['USD', 'EUR', 'GBP'], default: 'USD', description: 'ISO 4217 currency code.' },
    },
    required: ['amount', 'currency'],
    additionalProperties: false,
  },
  Address: {
    type: 'object',
    description: 'A postal address.',
    properties: {
      line1: { type: 'string', minLength: 1, maxLength: 120 },
      line2: { type: 'string', maxLength: 120 },
      city: { type: 'string', minLength: 1 },
      region: { type: 'string', description: 'State, province or region code.' },
      postalCode: { type: 'string', minLength: 2, maxLength: 12 },
      country: { type: 'string', minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2 country code, e.g. "US".' },
    },
    required: ['line1', 'city', 'postalCode', 'country'],
    additionalProperties: false,
  },
  LineItem: {
    type: 'object',
    description: 'One product line of an order.',
    properties: {
      productId: { type: 'string', description: 'Product id, e.g. prd_003.' },
      sku: { type: 'string' },
      name: { type: 'string' },
      quantity: { type: 'integer', minimum: 1 },
      unitPrice: { $ref: '#/$defs/Money' },
      total: { $ref: '#/$defs/Money' },
    },
    required: ['productId', 'sku', 'name', 'quantity', 'unitPrice', 'total'],
    additionalProperties: false,
  },
  Metadata: {
    type: 'object',
    description: 'Free-form string key/value pairs (at most 20).',
    maxProperties: 20,
    additionalProperties: { type: 'string', maxLength: 500 },
  },
  Period: {
    description: 'Time window: either a preset relative to now (2026-01-01) or explicit inclusive dates.',
    oneOf: [
      {
        type: 'object',
        properties: { preset: { type: 'string', enum: ['last_7_days', 'last_30_days', 'last_90_days', 'last_365_days', 'all_time'] } },
        required: ['preset'],
        additionalProperties: false,
      },
      {
        type: 'object',
        properties: { from: { type: 'string', format: 'date' }, to: { type: 'string', format: 'date' } },
        required: ['from', 'to'],
        additionalProperties: false,
      },
    ],
  },
}

export const ref = (name) => ({ $ref: `#/$defs/${name}` })

/** `type: [t, 'null']`, keeping enums valid. */
export function nullable(schema) {
  if (schema.$ref) return { anyOf: [schema, { type: 'null' }] }
  return { ...schema, type: [schema.type, 'null'], ...(schema.enum ? { enum: [...schema.enum, null] } : {}) }
}

export const idProp = (kind, example) => ({ type: 'string', minLength: 1, description: `${kind} id, e.g. ${example}.` })

export const paginationProps = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size (1–100).' },
  cursor: { type: 'string', description: 'Opaque cursor: the nextCursor of the previous page. Omit for the first page.' },
}

/** `{ items, total, nextCursor? }` */
export function listOutput(itemSchema, description = 'One page of results.') {
  return {
    type: 'object',
    description,
    properties: {
      items: { type: 'array', items: itemSchema },
      total: { type: 'integer', minimum: 0, description: 'Number of matching records across all pages.' },
      nextCursor: { type: 'string', description: 'Pass as cursor to fetch the next page; absent on the last page.' },
    },
    required: ['items', 'total'],
    additionalProperties: false,
  }
}

/** An object schema with every listed property required and no extras. */
export function record(properties, { optional = [], description } = {}) {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    additionalProperties: false,
  }
}

export const ANNOTATIONS = {
  read: { readOnlyHint: true, openWorldHint: false },
  create: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  update: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  action: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  destructive: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  external: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
}

function collectRefs(node, found) {
  if (Array.isArray(node)) for (const v of node) collectRefs(v, found)
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')) {
        const name = value.slice('#/$defs/'.length)
        if (!defs[name]) throw new Error(`Unknown schema definition ${value}`)
        if (!found.has(name)) {
          found.add(name)
          collectRefs(defs[name], found)
        }
      } else collectRefs(value, found)
    }
  }
  return found
}

/** Attaches the `$defs` each schema references (deep-copied so tools never share schema objects). */
function withDefs(schema) {
  if (!schema) return schema
  const names = [...collectRefs(schema, new Set())].sort()
  const copy = clone(schema)
  if (names.length) copy.$defs = Object.fromEntries(names.map((n) => [n, clone(defs[n])]))
  return copy
}

/** Finalises an app's tool list: self-contained schemas and handlers that always get an input object. */
export function defineTools(tools) {
  return tools.map(({ handler, inputSchema, outputSchema, ...rest }) => ({
    ...rest,
    inputSchema: withDefs(inputSchema),
    ...(outputSchema ? { outputSchema: withDefs(outputSchema) } : {}),
    handler: async (input, ctx) => handler(input ?? {}, ctx),
  }))
}
