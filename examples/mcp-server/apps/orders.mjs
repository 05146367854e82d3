import { ToolError, notFound } from '../errors.mjs'
import {
  ANNOTATIONS,
  BASE_DATE,
  WAREHOUSE_IDS,
  availableUnits,
  clone,
  couponProblem,
  createInvoiceRecord,
  defineTools,
  getOrThrow,
  idProp,
  invoiceLinesForOrder,
  isPhysical,
  isoDate,
  issueRefund,
  listOutput,
  matches,
  money,
  moveStock,
  nullable,
  paginate,
  paginationProps,
  priceOrder,
  record,
  ref,
  stockRow,
  sum,
  trackingFor,
} from '../data.mjs'

const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded']
const CARRIERS = ['ups', 'fedex', 'usps', 'dhl']
const CANCEL_REASONS = ['customer_request', 'duplicate', 'payment_failed', 'fraud_suspected', 'out_of_stock', 'other']
const RETURN_REASONS = ['damaged', 'wrong_item', 'not_as_described', 'no_longer_needed', 'other']
const RETURN_STATUSES = ['requested', 'approved', 'rejected']
const OPEN_FOR_EDIT = ['pending', 'paid']

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const orderId = idProp('Order', 'ord_001')
const userId = idProp('User', 'usr_001')
const productId = idProp('Product', 'prd_001')
const returnId = idProp('Return', 'ret_001')
const status = { type: 'string', enum: STATUSES }
const nullableDateTime = nullable(dateTime)

const Note = record({
  id: idProp('Note', 'note_0001'),
  body: { type: 'string' },
  visibility: { type: 'string', enum: ['internal', 'customer'] },
  authorId: { type: 'string' },
  createdAt: dateTime,
})
const Tracking = record({ carrier: { type: 'string', enum: CARRIERS }, trackingNumber: { type: 'string' }, url: { type: 'string', format: 'uri' } })
const Order = record(
  {
    id: orderId,
    tenantId: { type: 'string' },
    userId,
    customerEmail: { type: 'string', format: 'email' },
    status,
    items: { type: 'array', items: ref('LineItem'), minItems: 1 },
    subtotal: ref('Money'),
    discount: ref('Money'),
    tax: ref('Money'),
    shipping: ref('Money'),
    total: ref('Money'),
    couponCode: nullable({ type: 'string' }),
    shippingAddress: ref('Address'),
    invoiceId: nullable({ type: 'string' }),
    paymentId: nullable({ type: 'string' }),
    tracking: nullable(Tracking),
    notes: { type: 'array', items: Note },
    metadata: ref('Metadata'),
    createdAt: dateTime,
    updatedAt: dateTime,
    paidAt: nullableDateTime,
    shippedAt: nullableDateTime,
    deliveredAt: nullableDateTime,
    cancelledAt: nullableDateTime,
    cancelReason: nullable({ type: 'string', enum: CANCEL_REASONS }),
  },
  { description: 'An order with its line items, totals (cents), shipping address and fulfilment timestamps.' },
)
const summaryProps = {
  id: orderId,
  tenantId: { type: 'string' },
  userId,
  customerEmail: { type: 'string', format: 'email' },
  status,
  itemCount: { type: 'integer', minimum: 1, description: 'Total units across lines.' },
  total: ref('Money'),
  createdAt: dateTime,
}
const OrderSummary = record(summaryProps, { description: 'An order without lines or addresses.' })
const Return = record({
  id: returnId,
  orderId,
  userId,
  status: { type: 'string', enum: RETURN_STATUSES },
  items: { type: 'array', minItems: 1, items: record({ productId, quantity: { type: 'integer', minimum: 1 }, reason: { type: 'string', enum: RETURN_REASONS } }) },
  refundAmount: ref('Money'),
  refundId: nullable({ type: 'string' }),
  comment: nullable({ type: 'string' }),
  createdAt: dateTime,
  updatedAt: dateTime,
})
const requestedItems = {
  type: 'array',
  minItems: 1,
  maxItems: 25,
  description: 'Products and quantities; repeated products are merged.',
  items: {
    type: 'object',
    properties: { productId, quantity: { type: 'integer', minimum: 1, maximum: 100, default: 1 } },
    required: ['productId'],
    additionalProperties: false,
  },
}
const Quote = record({
  items: { type: 'array', items: ref('LineItem') },
  subtotal: ref('Money'),
  discount: ref('Money'),
  tax: ref('Money'),
  shipping: ref('Money'),
  total: ref('Money'),
  couponCode: nullable({ type: 'string' }),
})

// --- helpers --------------------------------------------------------------------------------

const unitCount = (order) => sum(order.items.map((i) => i.quantity))
const summary = (o) => ({ id: o.id, tenantId: o.tenantId, userId: o.userId, customerEmail: o.customerEmail, status: o.status, itemCount: unitCount(o), total: clone(o.total), createdAt: o.createdAt })
const withQuantity = (items) => items.map(({ productId, quantity = 1 }) => ({ productId, quantity }))

function assertStatus(order, allowed, action) {
  if (!allowed.includes(order.status)) {
    throw new ToolError('CONFLICT', `Order ${order.id} is ${order.status}; cannot ${action} (allowed when ${allowed.join(' or ')})`, { orderId: order.id, status: order.status })
  }
}

function assertInStock(store, items) {
  for (const { productId, quantity } of items) {
    const product = getOrThrow(store.products, productId, 'Product')
    if (!product.tracked) continue
    const available = availableUnits(store, productId)
    if (available < quantity) throw new ToolError('OUT_OF_STOCK', `Only ${available} unit(s) of ${product.name} (${productId}) available, ${quantity} requested`, { productId, available, requested: quantity })
  }
}

/** Re-prices a pending order after its lines changed and keeps its open invoice in sync. */
function reprice(store, order, items) {
  assertStatus(order, ['pending'], 'change items')
  if (!items.length) throw new ToolError('CONFLICT', `Order ${order.id} must keep at least one item; cancel it instead`)
  assertInStock(store, items)
  const coupon = order.couponCode && store.coupons.find((c) => c.code === order.couponCode)
  const couponCode = coupon && !couponProblem(coupon, BASE_DATE) ? coupon.code : null
  Object.assign(order, priceOrder(store, items, { couponCode, country: order.shippingAddress.country }), { updatedAt: store.now() })
  const invoice = store.invoices.find((i) => i.id === order.invoiceId)
  if (invoice?.status === 'open') {
    const lines = invoiceLinesForOrder(order)
    const subtotal = sum(lines.map((l) => l.amount.amount))
    Object.assign(invoice, { lines, subtotal: money(subtotal), discount: clone(order.discount), tax: clone(order.tax), total: clone(order.total), amountDue: clone(order.total) })
  }
  return clone(order)
}

const currentItems = (order) => order.items.map(({ productId, quantity }) => ({ productId, quantity }))
const toCsv = (rows, fields) => [fields.join(','), ...rows.map((r) => fields.map((f) => JSON.stringify(r[f] ?? '')).join(','))].join('\n')

function createOrder(store, { userId, items, shippingAddress, couponCode, metadata = {}, note }) {
  const user = getOrThrow(store.users, userId, 'User')
  if (user.status !== 'active') throw new ToolError('CONFLICT', `User ${userId} is ${user.status}; only active users can place orders`)
  const address = shippingAddress ?? user.address
  if (!address) throw new ToolError('INVALID_INPUT', `User ${userId} has no address on file; pass shippingAddress`)
  const priced = priceOrder(store, items, { couponCode, country: address.country, at: BASE_DATE })
  assertInStock(store, priced.items)
  const now = store.now()
  const id = store.nextId('ord')
  const order = {
    id,
    tenantId: user.tenantId,
    userId,
    customerEmail: user.email,
    status: 'pending',
    ...priced,
    shippingAddress: clone(address),
    invoiceId: null,
    paymentId: null,
    tracking: null,
    notes: note ? [{ id: store.nextId('note'), body: note, visibility: 'customer', authorId: userId, createdAt: now }] : [],
    metadata: { ...metadata },
    createdAt: now,
    updatedAt: now,
    paidAt: null,
    shippedAt: null,
    deliveredAt: null,
    cancelledAt: null,
    cancelReason: null,
  }
  if (couponCode) store.coupons.find((c) => c.code === priced.couponCode).timesRedeemed++
  order.invoiceId = createInvoiceRecord(store, { userId, orderId: id, lines: invoiceLinesForOrder(order), discount: order.discount.amount, tax: order.tax.amount }).id
  store.orders.push(order)
  return order
}

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'orders:list',
    title: 'List orders',
    description: 'List orders filtered by customer, tenant, statuses, creation time range, product or minimum total (cents), newest first by default. Returns order summaries with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        tenantId: { type: 'string', enum: ['t_acme', 't_globex'] },
        status: { type: 'array', items: status, minItems: 1, uniqueItems: true, description: 'Any of these statuses.' },
        from: { ...dateTime, description: 'Created at or after.' },
        to: { ...dateTime, description: 'Created at or before.' },
        productId: { ...productId, description: 'Only orders containing this product.' },
        minTotal: { type: 'integer', minimum: 0, description: 'Minimum order total in cents.' },
        sort: { type: 'string', enum: ['-createdAt', 'createdAt', '-total', 'total'], default: '-createdAt' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(OrderSummary),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination'],
    examples: [
      { description: 'Open orders of one customer', input: { userId: 'usr_001', status: ['pending', 'paid', 'shipped'] } },
      { description: 'Biggest orders of December 2025', input: { from: '2025-12-01T00:00:00Z', to: '2025-12-31T23:59:59Z', sort: '-total', limit: 5 } },
    ],
    handler: async ({ userId, tenantId, status, from, to, productId, minTotal, sort = '-createdAt', limit, cursor }, { store }) => {
      const desc = sort.startsWith('-') ? -1 : 1
      const key = sort.replace(/^-/, '')
      const value = (o) => (key === 'total' ? o.total.amount : Date.parse(o.createdAt))
      const orders = store.orders
        .filter((o) =>
          (!userId || o.userId === userId) && (!tenantId || o.tenantId === tenantId) && (!status || status.includes(o.status)) &&
          (!from || Date.parse(o.createdAt) >= Date.parse(from)) && (!to || Date.parse(o.createdAt) <= Date.parse(to)) &&
          (!productId || o.items.some((i) => i.productId === productId)) && (minTotal == null || o.total.amount >= minTotal))
        .sort((a, b) => desc * (value(a) - value(b)))
      return paginate(orders.map(summary), { limit, cursor })
    },
  },
  {
    name: 'orders:get',
    title: 'Get an order',
    description: 'Fetch one order with line items, totals in cents, customer email, shipping address, tracking, notes and timestamps.',
    inputSchema: { type: 'object', properties: { orderId }, required: ['orderId'], additionalProperties: false },
    outputSchema: Order,
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    handler: async ({ orderId }, { store }) => clone(getOrThrow(store.orders, orderId, 'Order')),
  },
  {
    name: 'orders:search',
    title: 'Search orders',
    description: 'Search orders by order id, customer email, product name or SKU, coupon code or tracking number (case-insensitive substring). Returns matching order summaries, newest first.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 2, maxLength: 100 }, limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 } },
      required: ['query'],
      additionalProperties: false,
    },
    outputSchema: listOutput(OrderSummary),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'search'],
    handler: async ({ query, limit = 10 }, { store }) => {
      const hits = store.orders
        .filter((o) => matches(query, o.id, o.customerEmail, o.couponCode, o.tracking?.trackingNumber, ...o.items.flatMap((i) => [i.name, i.sku])))
        .reverse()
      return { items: hits.slice(0, limit).map(summary), total: hits.length }
    },
  },
  {
    name: 'orders:create',
    title: 'Place an order',
    description: 'Place a pending order for an active user: prices the items, applies an optional coupon, adds tax and shipping, checks stock and opens an invoice. Ships to the user\'s address unless shippingAddress is given. Returns the order.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        items: requestedItems,
        shippingAddress: ref('Address'),
        couponCode: { type: 'string', minLength: 3, maxLength: 20 },
        note: { type: 'string', maxLength: 1000, description: 'Delivery instructions, stored as a customer-visible note.' },
        metadata: ref('Metadata'),
      },
      required: ['userId', 'items'],
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    examples: [
      { description: 'Two lamps and a license with a coupon', input: { userId: 'usr_002', items: [{ productId: 'prd_001', quantity: 2 }, { productId: 'prd_016' }], couponCode: 'WELCOME10', metadata: { channel: 'api' } } },
    ],
    handler: async (input, { store }) => clone(createOrder(store, { ...input, items: withQuantity(input.items) })),
  },
  {
    name: 'orders:update',
    title: 'Update an order',
    description: 'Change the shipping address or metadata of an order that has not shipped yet (CONFLICT otherwise). Returns the order.',
    inputSchema: {
      type: 'object',
      properties: { orderId, shippingAddress: ref('Address'), metadata: ref('Metadata') },
      required: ['orderId'],
      minProperties: 2,
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.update,
    tags: ['write'],
    handler: async ({ orderId, shippingAddress, metadata }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      assertStatus(order, OPEN_FOR_EDIT, 'update')
      if (!shippingAddress && !metadata) throw new ToolError('INVALID_INPUT', 'Pass shippingAddress and/or metadata')
      if (shippingAddress) order.shippingAddress = clone(shippingAddress)
      if (metadata) order.metadata = { ...metadata }
      order.updatedAt = store.now()
      return clone(order)
    },
  },
  {
    name: 'orders:cancel',
    title: 'Cancel an order',
    description: 'Cancel a pending or paid order; a paid order is refunded in full unless refund is false, an open invoice is voided. CONFLICT once shipped. Returns the order and the refund id (or null).',
    inputSchema: {
      type: 'object',
      properties: {
        orderId,
        reason: { type: 'string', enum: CANCEL_REASONS, default: 'customer_request' },
        refund: { type: 'boolean', default: true, description: 'Refund the payment of a paid order.' },
      },
      required: ['orderId'],
      additionalProperties: false,
    },
    outputSchema: record({ order: Order, refundId: nullable({ type: 'string' }), refundedAmount: nullable(ref('Money')) }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ orderId, reason = 'customer_request', refund = true }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      assertStatus(order, OPEN_FOR_EDIT, 'cancel')
      let refunded = null
      const payment = order.paymentId && store.payments.find((p) => p.id === order.paymentId)
      if (payment && refund) refunded = issueRefund(store, payment, { reason: 'order_cancelled', note: `Order ${orderId} cancelled: ${reason}` })
      const invoice = store.invoices.find((i) => i.id === order.invoiceId)
      const now = store.now()
      if (invoice?.status === 'open') Object.assign(invoice, { status: 'void', voidedAt: now, amountDue: money(0) })
      Object.assign(order, { status: 'cancelled', cancelledAt: now, cancelReason: reason, updatedAt: now })
      return { order: clone(order), refundId: refunded?.id ?? null, refundedAmount: refunded ? clone(refunded.amount) : null }
    },
  },
  {
    name: 'orders:addItem',
    title: 'Add an item to an order',
    description: 'Add units of a product to a pending order (merged with an existing line); totals and the open invoice are recomputed. Returns the order.',
    inputSchema: {
      type: 'object',
      properties: { orderId, productId, quantity: { type: 'integer', minimum: 1, maximum: 100, default: 1 } },
      required: ['orderId', 'productId'],
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'items'],
    handler: async ({ orderId, productId, quantity = 1 }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      return reprice(store, order, [...currentItems(order), { productId, quantity }])
    },
  },
  {
    name: 'orders:removeItem',
    title: 'Remove an item from an order',
    description: 'Remove a product line from a pending order; CONFLICT if it is the last line. Returns the re-priced order.',
    inputSchema: { type: 'object', properties: { orderId, productId }, required: ['orderId', 'productId'], additionalProperties: false },
    outputSchema: Order,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'items'],
    handler: async ({ orderId, productId }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      if (!order.items.some((i) => i.productId === productId)) throw new ToolError('NOT_FOUND', `Order ${orderId} has no line for ${productId}`, { kind: 'LineItem', id: productId })
      return reprice(store, order, currentItems(order).filter((i) => i.productId !== productId))
    },
  },
  {
    name: 'orders:updateItemQuantity',
    title: 'Change an item quantity',
    description: 'Set the quantity of an existing line of a pending order. Returns the re-priced order.',
    inputSchema: {
      type: 'object',
      properties: { orderId, productId, quantity: { type: 'integer', minimum: 1, maximum: 100 } },
      required: ['orderId', 'productId', 'quantity'],
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'items'],
    handler: async ({ orderId, productId, quantity }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      if (!order.items.some((i) => i.productId === productId)) throw new ToolError('NOT_FOUND', `Order ${orderId} has no line for ${productId}`, { kind: 'LineItem', id: productId })
      return reprice(store, order, currentItems(order).map((i) => (i.productId === productId ? { productId, quantity } : i)))
    },
  },
  {
    name: 'orders:ship',
    title: 'Ship an order',
    description: 'Mark a paid order as shipped with a carrier and tracking number, taking physical items out of stock (from the given warehouse, else the one with most stock). OUT_OF_STOCK if a warehouse runs short. Returns the order.',
    inputSchema: {
      type: 'object',
      properties: {
        orderId,
        carrier: { type: 'string', enum: CARRIERS, default: 'ups' },
        trackingNumber: { type: 'string', minLength: 6, maxLength: 40, description: 'Generated when omitted.' },
        warehouseId: { type: 'string', enum: WAREHOUSE_IDS },
      },
      required: ['orderId'],
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'fulfilment'],
    handler: async ({ orderId, carrier = 'ups', trackingNumber, warehouseId }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      assertStatus(order, ['paid'], 'ship')
      for (const item of order.items) {
        const product = store.products.find((p) => p.id === item.productId)
        if (!product || !isPhysical(product)) continue
        const from = warehouseId ?? WAREHOUSE_IDS.map((w) => stockRow(store, item.productId, w)).filter(Boolean).sort((a, b) => b.onHand - a.onHand)[0]?.warehouseId ?? WAREHOUSE_IDS[0]
        moveStock(store, { productId: item.productId, warehouseId: from, delta: -item.quantity, reason: 'sale', reference: orderId })
      }
      const tracking = trackingFor(() => 0.5, orderId, carrier)
      if (trackingNumber) Object.assign(tracking, { trackingNumber, url: `https://track.example.com/${carrier}/${encodeURIComponent(trackingNumber)}` })
      const now = store.now()
      Object.assign(order, { status: 'shipped', tracking, shippedAt: now, updatedAt: now })
      return clone(order)
    },
  },
  {
    name: 'orders:markDelivered',
    title: 'Mark an order delivered',
    description: 'Record delivery of a shipped order (now, or at deliveredAt); CONFLICT unless shipped. Returns the order.',
    inputSchema: {
      type: 'object',
      properties: { orderId, deliveredAt: { ...dateTime, description: 'When it was delivered; defaults to now.' } },
      required: ['orderId'],
      additionalProperties: false,
    },
    outputSchema: Order,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'fulfilment'],
    handler: async ({ orderId, deliveredAt }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      assertStatus(order, ['shipped'], 'mark delivered')
      const at = deliveredAt ? new Date(deliveredAt).toISOString() : store.now()
      if (at < order.shippedAt) throw new ToolError('INVALID_INPUT', `deliveredAt is before the ship date ${order.shippedAt}`)
      Object.assign(order, { status: 'delivered', deliveredAt: at, updatedAt: store.now() })
      return clone(order)
    },
  },
  {
    name: 'orders:getTracking',
    title: 'Get shipment tracking',
    description: 'Get the carrier, tracking number, link, estimated delivery and scan events of an order. Orders not shipped yet return status "not_shipped" with null tracking fields.',
    inputSchema: { type: 'object', properties: { orderId }, required: ['orderId'], additionalProperties: false },
    outputSchema: record({
      orderId,
      status: { type: 'string', enum: ['not_shipped', 'in_transit', 'delivered', 'cancelled'] },
      carrier: nullable({ type: 'string', enum: CARRIERS }),
      trackingNumber: nullable({ type: 'string' }),
      trackingUrl: nullable({ type: 'string', format: 'uri' }),
      estimatedDelivery: nullable({ type: 'string', format: 'date' }),
      events: { type: 'array', items: record({ at: dateTime, location: { type: 'string' }, description: { type: 'string' } }) },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'fulfilment'],
    handler: async ({ orderId }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      if (!order.tracking) {
        return { orderId, status: order.status === 'cancelled' ? 'cancelled' : 'not_shipped', carrier: null, trackingNumber: null, trackingUrl: null, estimatedDelivery: null, events: [] }
      }
      const shipped = Date.parse(order.shippedAt)
      const events = [
        { at: order.shippedAt, location: 'Fulfilment center', description: 'Label created, package handed to carrier' },
        { at: new Date(shipped + 86_400_000).toISOString(), location: 'Regional hub', description: 'In transit' },
      ]
      if (order.deliveredAt) {
        events.push({ at: new Date(Date.parse(order.deliveredAt) - 6 * 3_600_000).toISOString(), location: order.shippingAddress.city, description: 'Out for delivery' })
        events.push({ at: order.deliveredAt, location: order.shippingAddress.city, description: 'Delivered' })
      }
      return {
        orderId,
        status: order.deliveredAt ? 'delivered' : 'in_transit',
        carrier: order.tracking.carrier,
        trackingNumber: order.tracking.trackingNumber,
        trackingUrl: order.tracking.url,
        estimatedDelivery: order.deliveredAt ? order.deliveredAt.slice(0, 10) : isoDate(shipped + 4 * 86_400_000),
        events: events.filter((e) => e.at >= order.shippedAt).sort((a, b) => a.at.localeCompare(b.at)),
      }
    },
  },
  {
    name: 'orders:listByCustomer',
    title: 'Orders of a customer',
    description: 'List every order of one customer, identified by user id or by email, with their lifetime spend (cents, excluding cancelled and refunded orders). Returns the customer, order summaries and totals.',
    inputSchema: {
      type: 'object',
      properties: {
        customer: {
          description: 'Either { userId } or { email }.',
          anyOf: [
            { type: 'object', properties: { userId }, required: ['userId'], additionalProperties: false },
            { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'], additionalProperties: false },
          ],
        },
        status,
      },
      required: ['customer'],
      additionalProperties: false,
    },
    outputSchema: record({
      customer: record({ userId, name: { type: 'string' }, email: { type: 'string', format: 'email' } }),
      items: { type: 'array', items: OrderSummary },
      total: { type: 'integer', minimum: 0 },
      lifetimeSpend: ref('Money'),
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    examples: [
      { description: 'By email', input: { customer: { email: 'ava.tanaka@acme.example.com' } } },
      { description: 'Delivered orders by id', input: { customer: { userId: 'usr_013' }, status: 'delivered' } },
    ],
    handler: async ({ customer, status }, { store }) => {
      const user = customer.userId ? getOrThrow(store.users, customer.userId, 'User') : store.users.find((u) => u.email === customer.email.toLowerCase())
      if (!user) throw notFound('User', customer.email)
      const all = store.orders.filter((o) => o.userId === user.id)
      const shown = all.filter((o) => !status || o.status === status)
      const spend = sum(all.filter((o) => !['cancelled', 'refunded'].includes(o.status)).map((o) => o.total.amount))
      return { customer: { userId: user.id, name: user.name, email: user.email }, items: shown.map(summary), total: shown.length, lifetimeSpend: money(spend) }
    },
  },
  {
    name: 'orders:addNote',
    title: 'Add a note to an order',
    description: 'Attach an internal (staff only) or customer-visible note to an order. Returns the note.',
    inputSchema: {
      type: 'object',
      properties: {
        orderId,
        body: { type: 'string', minLength: 1, maxLength: 2000 },
        visibility: { type: 'string', enum: ['internal', 'customer'], default: 'internal' },
      },
      required: ['orderId', 'body'],
      additionalProperties: false,
    },
    outputSchema: Note,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'notes'],
    handler: async ({ orderId, body, visibility = 'internal' }, ctx) => {
      const order = getOrThrow(ctx.store.orders, orderId, 'Order')
      const note = { id: ctx.store.nextId('note'), body, visibility, authorId: ctx.userId ?? 'usr_001', createdAt: ctx.store.now() }
      order.notes.push(note)
      order.updatedAt = note.createdAt
      return clone(note)
    },
  },
  {
    name: 'orders:listNotes',
    title: 'List order notes',
    description: 'List the notes of an order, oldest first, optionally only one visibility.',
    inputSchema: {
      type: 'object',
      properties: { orderId, visibility: { type: 'string', enum: ['internal', 'customer'] } },
      required: ['orderId'],
      additionalProperties: false,
    },
    outputSchema: listOutput(Note),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'notes'],
    handler: async ({ orderId, visibility }, { store }) => {
      const notes = getOrThrow(store.orders, orderId, 'Order').notes.filter((n) => !visibility || n.visibility === visibility)
      return { items: clone(notes), total: notes.length }
    },
  },
  {
    name: 'orders:quote',
    title: 'Quote an order',
    description: 'Price a basket without placing an order: line totals, coupon discount, tax for the destination country and shipping (free over $100 or for digital-only baskets). Returns amounts in cents.',
    inputSchema: {
      type: 'object',
      properties: {
        items: requestedItems,
        couponCode: { type: 'string', minLength: 3, maxLength: 20 },
        shippingCountry: { type: 'string', minLength: 2, maxLength: 2, default: 'US', description: 'ISO country code; US orders pay 8% tax, others 20% VAT.' },
      },
      required: ['items'],
      additionalProperties: false,
    },
    outputSchema: Quote,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pricing'],
    examples: [
      {
        description: 'A keyboard shipped to Germany',
        input: { items: [{ productId: 'prd_003', quantity: 1 }], shippingCountry: 'DE' },
        output: {
          items: [{ productId: 'prd_003', sku: 'SKU-1003', name: 'Vertex Mechanical Keyboard', quantity: 1, unitPrice: { amount: 12900, currency: 'USD' }, total: { amount: 12900, currency: 'USD' } }],
          subtotal: { amount: 12900, currency: 'USD' },
          discount: { amount: 0, currency: 'USD' },
          tax: { amount: 2580, currency: 'USD' },
          shipping: { amount: 0, currency: 'USD' },
          total: { amount: 15480, currency: 'USD' },
          couponCode: null,
        },
      },
    ],
    handler: async ({ items, couponCode, shippingCountry = 'US' }, { store }) => priceOrder(store, withQuantity(items), { couponCode, country: shippingCountry.toUpperCase(), at: BASE_DATE }),
  },
  {
    name: 'orders:createReturn',
    title: 'Request a return',
    description: 'Open a return request for units of a delivered order, each with a reason; quantities cannot exceed what was ordered minus earlier returns. Returns the return with the refund it would trigger (cents).',
    inputSchema: {
      type: 'object',
      properties: {
        orderId,
        items: {
          type: 'array',
          minItems: 1,
          maxItems: 25,
          items: {
            type: 'object',
            properties: { productId, quantity: { type: 'integer', minimum: 1, maximum: 100 }, reason: { type: 'string', enum: RETURN_REASONS } },
            required: ['productId', 'quantity', 'reason'],
            additionalProperties: false,
          },
        },
        comment: { type: 'string', maxLength: 1000 },
      },
      required: ['orderId', 'items'],
      additionalProperties: false,
    },
    outputSchema: Return,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'returns'],
    examples: [{ description: 'Return a damaged item', input: { orderId: 'ord_006', items: [{ productId: 'prd_024', quantity: 1, reason: 'not_as_described' }], comment: 'Coverage was not what I expected' } }],
    handler: async ({ orderId, items, comment = null }, { store }) => {
      const order = getOrThrow(store.orders, orderId, 'Order')
      assertStatus(order, ['delivered'], 'return items')
      const earlier = store.returns.filter((r) => r.orderId === orderId && r.status !== 'rejected').flatMap((r) => r.items)
      const requested = new Map()
      for (const { productId, quantity } of items) requested.set(productId, (requested.get(productId) ?? 0) + quantity)
      let refund = 0
      for (const [productId, quantity] of requested) {
        const line = order.items.find((i) => i.productId === productId)
        if (!line) throw new ToolError('INVALID_INPUT', `Order ${orderId} does not contain ${productId}`)
        const returnable = line.quantity - sum(earlier.filter((i) => i.productId === productId).map((i) => i.quantity))
        if (quantity > returnable) throw new ToolError('INVALID_INPUT', `Only ${returnable} unit(s) of ${productId} can still be returned`, { productId, returnable })
        refund += line.unitPrice.amount * quantity
      }
      const now = store.now()
      const ret = { id: store.nextId('ret'), orderId, userId: order.userId, status: 'requested', items: clone(items), refundAmount: money(refund), refundId: null, comment, createdAt: now, updatedAt: now }
      store.returns.push(ret)
      return clone(ret)
    },
  },
  {
    name: 'orders:listReturns',
    title: 'List returns',
    description: 'List return requests, newest first, filtered by order, customer or status. Returns them with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: { orderId, userId, status: { type: 'string', enum: RETURN_STATUSES }, ...paginationProps },
      additionalProperties: false,
    },
    outputSchema: listOutput(Return),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'returns'],
    handler: async ({ orderId, userId, status, limit, cursor }, { store }) =>
      paginate(store.returns.filter((r) => (!orderId || r.orderId === orderId) && (!userId || r.userId === userId) && (!status || r.status === status)).reverse(), { limit, cursor }),
  },
  {
    name: 'orders:approveReturn',
    title: 'Approve a return',
    description: 'Approve a requested return: refunds its amount on the order\'s payment (unless refund is false) and puts physical units back into a warehouse (unless restock is false). Returns the return and refund id.',
    inputSchema: {
      type: 'object',
      properties: {
        returnId,
        refund: { type: 'boolean', default: true },
        restock: { type: 'boolean', default: true },
        warehouseId: { type: 'string', enum: WAREHOUSE_IDS, default: 'wh_east' },
      },
      required: ['returnId'],
      additionalProperties: false,
    },
    outputSchema: record({ return: Return, refundId: nullable({ type: 'string' }) }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'returns', 'refunds'],
    handler: async ({ returnId, refund = true, restock = true, warehouseId = 'wh_east' }, { store }) => {
      const ret = getOrThrow(store.returns, returnId, 'Return')
      if (ret.status !== 'requested') throw new ToolError('CONFLICT', `Return ${returnId} is already ${ret.status}`)
      const order = getOrThrow(store.orders, ret.orderId, 'Order')
      if (refund) {
        const payment = order.paymentId && store.payments.find((p) => p.id === order.paymentId)
        if (!payment) throw new ToolError('CONFLICT', `Order ${order.id} has no payment to refund`)
        const remaining = payment.amount.amount - payment.amountRefunded.amount
        ret.refundId = issueRefund(store, payment, { amount: Math.min(ret.refundAmount.amount, remaining), reason: 'product_defective', note: `Return ${returnId}` }).id
      }
      if (restock) {
        for (const item of ret.items) {
          const product = store.products.find((p) => p.id === item.productId)
          if (product && isPhysical(product)) moveStock(store, { productId: item.productId, warehouseId, delta: item.quantity, reason: 'return', reference: returnId })
        }
      }
      Object.assign(ret, { status: 'approved', updatedAt: store.now() })
      return { return: clone(ret), refundId: ret.refundId }
    },
  },
  {
    name: 'orders:rejectReturn',
    title: 'Reject a return',
    description: 'Reject a requested return with a reason shown to the customer; CONFLICT if it was already decided. Returns the return.',
    inputSchema: {
      type: 'object',
      properties: { returnId, reason: { type: 'string', minLength: 3, maxLength: 1000 } },
      required: ['returnId', 'reason'],
      additionalProperties: false,
    },
    outputSchema: Return,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'returns'],
    handler: async ({ returnId, reason }, { store }) => {
      const ret = getOrThrow(store.returns, returnId, 'Return')
      if (ret.status !== 'requested') throw new ToolError('CONFLICT', `Return ${returnId} is already ${ret.status}`)
      Object.assign(ret, { status: 'rejected', comment: reason, updatedAt: store.now() })
      return clone(ret)
    },
  },
  {
    name: 'orders:export',
    title: 'Export orders',
    description: 'Export orders created between two dates (inclusive) as CSV or JSON Lines, optionally only some statuses. Returns the file content and row count; totals are in cents.',
    inputSchema: {
      type: 'object',
      properties: {
        from: { type: 'string', format: 'date' },
        to: { type: 'string', format: 'date' },
        status: { type: 'array', items: status, minItems: 1, uniqueItems: true },
        format: { type: 'string', enum: ['csv', 'jsonl'], default: 'csv' },
      },
      required: ['from', 'to'],
      additionalProperties: false,
    },
    outputSchema: record({ format: { type: 'string', enum: ['csv', 'jsonl'] }, rowCount: { type: 'integer', minimum: 0 }, content: { type: 'string' }, generatedAt: dateTime }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'export'],
    handler: async ({ from, to, status, format = 'csv' }, { store }) => {
      if (from > to) throw new ToolError('INVALID_INPUT', '"from" must not be after "to"')
      const fields = ['id', 'userId', 'customerEmail', 'status', 'itemCount', 'total', 'createdAt']
      const rows = store.orders
        .filter((o) => o.createdAt.slice(0, 10) >= from && o.createdAt.slice(0, 10) <= to && (!status || status.includes(o.status)))
        .map((o) => ({ ...summary(o), total: o.total.amount }))
      const content = format === 'csv' ? toCsv(rows, fields) : rows.map((r) => JSON.stringify(Object.fromEntries(fields.map((f) => [f, r[f]])))).join('\n')
      return { format, rowCount: rows.length, content, generatedAt: store.now() }
    },
  },
  {
    name: 'orders:duplicate',
    title: 'Re-order',
    description: 'Place a new pending order with the same items and shipping address as an earlier order, at today\'s prices and without its coupon. Returns the new order.',
    inputSchema: { type: 'object', properties: { orderId }, required: ['orderId'], additionalProperties: false },
    outputSchema: Order,
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    handler: async ({ orderId }, { store }) => {
      const source = getOrThrow(store.orders, orderId, 'Order')
      return clone(createOrder(store, { userId: source.userId, items: currentItems(source), shippingAddress: source.shippingAddress, metadata: { reorderOf: orderId } }))
    },
  },
]

export default { appId: 'orders', tools: defineTools(tools) }
