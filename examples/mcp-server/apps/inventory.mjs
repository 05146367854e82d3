import { ToolError } from '../errors.mjs'
import { ANNOTATIONS, WAREHOUSE_IDS, clone, defineTools, getOrThrow, idProp, isPhysical, listOutput, matches, money, moveStock, paginate, paginationProps, nullable, record, ref, stockRow, sum } from '../data.mjs'

const CATEGORIES = ['hardware', 'accessories', 'software', 'services']
const MOVEMENT_REASONS = ['receipt', 'sale', 'adjustment', 'transfer_in', 'transfer_out', 'return', 'damage', 'count_correction']

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const productId = idProp('Product', 'prd_001')
const warehouseId = { type: 'string', enum: WAREHOUSE_IDS, description: 'wh_east (Newark), wh_west (Reno) or wh_eu (Rotterdam).' }
const category = { type: 'string', enum: CATEGORIES }
const tags = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 32 }, maxItems: 10, uniqueItems: true }

const Product = record({
  id: productId,
  sku: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  category,
  price: ref('Money'),
  status: { type: 'string', enum: ['active', 'archived'] },
  tracked: { type: 'boolean', description: 'Physical goods whose stock is tracked per warehouse.' },
  reorderPoint: { type: 'integer', minimum: 0, description: 'Reorder when available units in a warehouse drop below this.' },
  tags: { type: 'array', items: { type: 'string' } },
  createdAt: dateTime,
  updatedAt: dateTime,
})
const StockLevel = record({
  productId,
  sku: { type: 'string' },
  warehouseId,
  onHand: { type: 'integer', minimum: 0 },
  reserved: { type: 'integer', minimum: 0 },
  available: { type: 'integer', minimum: 0, description: 'onHand − reserved.' },
})
const Movement = record({
  id: idProp('Stock movement', 'mov_0001'),
  productId,
  warehouseId,
  delta: { type: 'integer', description: 'Units added (positive) or removed (negative).' },
  reason: { type: 'string', enum: MOVEMENT_REASONS },
  reference: nullable({ type: 'string' }),
  at: dateTime,
})

// --- helpers --------------------------------------------------------------------------------

function level(store, row) {
  const product = store.products.find((p) => p.id === row.productId)
  return { productId: row.productId, sku: product?.sku ?? '', warehouseId: row.warehouseId, onHand: row.onHand, reserved: row.reserved, available: row.onHand - row.reserved }
}

function trackedProduct(store, id) {
  const product = getOrThrow(store.products, id, 'Product')
  if (!product.tracked) throw new ToolError('CONFLICT', `${product.name} (${id}) is a ${product.category} product without stock`, { productId: id, category: product.category })
  return product
}

const stockOf = (store, id) => store.stock.filter((s) => s.productId === id).map((row) => level(store, row))

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'inventory:listProducts',
    title: 'List products',
    description: 'List catalog products filtered by category, status, tag, name text or price range (cents). Returns products with price, status and reorder point, plus total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        category,
        status: { type: 'string', enum: ['active', 'archived'] },
        tag: { type: 'string' },
        query: { type: 'string', minLength: 2, description: 'Substring of the name or SKU.' },
        minPrice: { type: 'integer', minimum: 0, description: 'Cents.' },
        maxPrice: { type: 'integer', minimum: 0, description: 'Cents.' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(Product),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'catalog'],
    handler: async ({ category, status, tag, query, minPrice, maxPrice, limit, cursor }, { store }) =>
      paginate(
        store.products.filter((p) =>
          (!category || p.category === category) && (!status || p.status === status) && (!tag || p.tags.includes(tag)) && (!query || matches(query, p.name, p.sku)) &&
          (minPrice == null || p.price.amount >= minPrice) && (maxPrice == null || p.price.amount <= maxPrice)),
        { limit, cursor },
      ),
  },
  {
    name: 'inventory:getProduct',
    title: 'Get a product',
    description: 'Fetch a product with its stock level in every warehouse and the total available units (0 for untracked software and services).',
    inputSchema: { type: 'object', properties: { productId }, required: ['productId'], additionalProperties: false },
    outputSchema: record({ product: Product, stock: { type: 'array', items: StockLevel }, available: { type: 'integer', minimum: 0 } }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'catalog'],
    handler: async ({ productId }, { store }) => {
      const product = getOrThrow(store.products, productId, 'Product')
      const stock = stockOf(store, productId)
      return { product: clone(product), stock, available: sum(stock.map((s) => s.available)) }
    },
  },
  {
    name: 'inventory:getProductBySku',
    title: 'Find a product by SKU',
    description: 'Look a product up by its SKU (e.g. SKU-1004). Returns the product.',
    inputSchema: {
      type: 'object',
      properties: { sku: { type: 'string', pattern: '^SKU-[0-9]{4}$', examples: ['SKU-1004'], description: 'SKU such as SKU-1004.' } },
      required: ['sku'],
      additionalProperties: false,
    },
    outputSchema: Product,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'catalog'],
    examples: [{ description: 'The desk lamp', input: { sku: 'SKU-1001' } }],
    handler: async ({ sku }, { store }) => {
      const product = store.products.find((p) => p.sku === sku.toUpperCase())
      if (!product) throw new ToolError('NOT_FOUND', `Product with SKU ${sku} not found`, { kind: 'Product', id: sku })
      return clone(product)
    },
  },
  {
    name: 'inventory:createProduct',
    title: 'Create a product',
    description: 'Add a product to the catalog with a unique SKU, price (cents) and optional initial stock per warehouse (physical categories only). CONFLICT if the SKU exists. Returns the product and its stock levels.',
    inputSchema: {
      type: 'object',
      properties: {
        sku: { type: 'string', minLength: 4, maxLength: 32 },
        name: { type: 'string', minLength: 2, maxLength: 120 },
        description: { type: 'string', maxLength: 2000, default: '' },
        category,
        price: ref('Money'),
        reorderPoint: { type: 'integer', minimum: 0, maximum: 10000, default: 10 },
        tags,
        initialStock: {
          type: 'object',
          description: 'Units per warehouse, e.g. { "wh_east": 50 }.',
          propertyNames: { enum: WAREHOUSE_IDS },
          additionalProperties: { type: 'integer', minimum: 0, maximum: 100000 },
        },
      },
      required: ['sku', 'name', 'category', 'price'],
      additionalProperties: false,
    },
    outputSchema: record({ product: Product, stock: { type: 'array', items: StockLevel } }),
    annotations: ANNOTATIONS.create,
    tags: ['write', 'catalog'],
    examples: [
      {
        description: 'A new webcam cover with stock in two warehouses',
        input: { sku: 'SKU-2001', name: 'Privacy Webcam Cover (3-pack)', category: 'accessories', price: { amount: 900, currency: 'USD' }, initialStock: { wh_east: 200, wh_eu: 80 }, tags: ['new'] },
      },
    ],
    handler: async ({ sku, name, description = '', category, price, reorderPoint = 10, tags = [], initialStock = {} }, { store }) => {
      const normalized = sku.toUpperCase()
      if (store.products.some((p) => p.sku === normalized)) throw new ToolError('CONFLICT', `SKU ${normalized} already exists`)
      if (price.currency !== 'USD') throw new ToolError('INVALID_INPUT', 'Catalog prices are in USD')
      const physical = isPhysical({ category })
      if (!physical && Object.keys(initialStock).length) throw new ToolError('INVALID_INPUT', `${category} products have no stock`)
      const now = store.now()
      const product = { id: store.nextId('prd'), sku: normalized, name, description, category, price: money(price.amount), status: 'active', tracked: physical, reorderPoint: physical ? reorderPoint : 0, tags: [...tags], createdAt: now, updatedAt: now }
      store.products.push(product)
      for (const [warehouse, units] of Object.entries(initialStock)) {
        if (units > 0) moveStock(store, { productId: product.id, warehouseId: warehouse, delta: units, reason: 'receipt', reference: 'initial stock' })
      }
      return { product: clone(product), stock: stockOf(store, product.id) }
    },
  },
  {
    name: 'inventory:updateProduct',
    title: 'Update a product',
    description: 'Change a product\'s name, description, price (cents), reorder point or tags (replaced). Existing orders keep their prices. Returns the product.',
    inputSchema: {
      type: 'object',
      properties: {
        productId,
        name: { type: 'string', minLength: 2, maxLength: 120 },
        description: { type: 'string', maxLength: 2000 },
        price: ref('Money'),
        reorderPoint: { type: 'integer', minimum: 0, maximum: 10000 },
        tags,
      },
      required: ['productId'],
      minProperties: 2,
      additionalProperties: false,
    },
    outputSchema: Product,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'catalog'],
    handler: async ({ productId, ...patch }, { store }) => {
      const product = getOrThrow(store.products, productId, 'Product')
      if (!Object.keys(patch).length) throw new ToolError('INVALID_INPUT', 'Nothing to update')
      if (patch.price && patch.price.currency !== 'USD') throw new ToolError('INVALID_INPUT', 'Catalog prices are in USD')
      Object.assign(product, clone(patch), { updatedAt: store.now() })
      return clone(product)
    },
  },
  {
    name: 'inventory:archiveProduct',
    title: 'Archive a product',
    description: 'Archive a product so it can no longer be ordered; existing orders are unaffected. CONFLICT if already archived. Returns the product.',
    inputSchema: { type: 'object', properties: { productId }, required: ['productId'], additionalProperties: false },
    outputSchema: Product,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'catalog'],
    handler: async ({ productId }, { store }) => {
      const product = getOrThrow(store.products, productId, 'Product')
      if (product.status === 'archived') throw new ToolError('CONFLICT', `Product ${productId} is already archived`)
      Object.assign(product, { status: 'archived', updatedAt: store.now() })
      return clone(product)
    },
  },
  {
    name: 'inventory:getStockLevels',
    title: 'Get stock levels',
    description: 'Stock levels (on hand, reserved, available) per product and warehouse, optionally for one product or warehouse, or only rows below the product\'s reorder point.',
    inputSchema: {
      type: 'object',
      properties: { productId, warehouseId, belowReorderPoint: { type: 'boolean', default: false } },
      additionalProperties: false,
    },
    outputSchema: listOutput(StockLevel),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'stock'],
    handler: async ({ productId, warehouseId, belowReorderPoint = false }, { store }) => {
      if (productId) getOrThrow(store.products, productId, 'Product')
      const rows = store.stock
        .filter((s) => (!productId || s.productId === productId) && (!warehouseId || s.warehouseId === warehouseId))
        .map((row) => level(store, row))
        .filter((l) => !belowReorderPoint || l.available < (store.products.find((p) => p.id === l.productId)?.reorderPoint ?? 0))
      return { items: rows, total: rows.length }
    },
  },
  {
    name: 'inventory:adjustStock',
    title: 'Adjust stock',
    description: 'Add or remove units of a tracked product in one warehouse (non-zero delta) with a reason such as a receipt, damage or count correction. OUT_OF_STOCK if it would go negative. Returns the new level and the movement.',
    inputSchema: {
      type: 'object',
      properties: {
        productId,
        warehouseId,
        delta: { type: 'integer', minimum: -10000, maximum: 10000, not: { const: 0 }, description: 'Positive adds units, negative removes them.' },
        reason: { type: 'string', enum: ['receipt', 'adjustment', 'damage', 'count_correction'], default: 'adjustment' },
        reference: { type: 'string', maxLength: 64, description: 'Purchase order, RMA or count sheet id.' },
      },
      required: ['productId', 'warehouseId', 'delta'],
      additionalProperties: false,
    },
    outputSchema: record({ level: StockLevel, movement: Movement }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'stock'],
    examples: [
      { description: 'Receive 40 keyboards in Reno', input: { productId: 'prd_003', warehouseId: 'wh_west', delta: 40, reason: 'receipt', reference: 'PO-5120' } },
      { description: 'Write off two damaged lamps', input: { productId: 'prd_001', warehouseId: 'wh_east', delta: -2, reason: 'damage' } },
    ],
    handler: async ({ productId, warehouseId, delta, reason = 'adjustment', reference = null }, { store }) => {
      trackedProduct(store, productId)
      if (delta === 0) throw new ToolError('INVALID_INPUT', 'delta must not be 0')
      const { row, movement } = moveStock(store, { productId, warehouseId, delta, reason, reference })
      return { level: level(store, row), movement: clone(movement) }
    },
  },
  {
    name: 'inventory:transferStock',
    title: 'Transfer stock',
    description: 'Move available units of a tracked product from one warehouse to another. OUT_OF_STOCK if the source lacks available units. Returns both new levels and the two movement ids.',
    inputSchema: {
      type: 'object',
      properties: {
        productId,
        fromWarehouseId: warehouseId,
        toWarehouseId: warehouseId,
        quantity: { type: 'integer', minimum: 1, maximum: 10000 },
      },
      required: ['productId', 'fromWarehouseId', 'toWarehouseId', 'quantity'],
      additionalProperties: false,
    },
    outputSchema: record({ from: StockLevel, to: StockLevel, movementIds: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 } }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'stock'],
    handler: async ({ productId, fromWarehouseId, toWarehouseId, quantity }, { store }) => {
      trackedProduct(store, productId)
      if (fromWarehouseId === toWarehouseId) throw new ToolError('INVALID_INPUT', 'Source and destination warehouses must differ')
      const source = stockRow(store, productId, fromWarehouseId)
      const available = source ? source.onHand - source.reserved : 0
      if (available < quantity) throw new ToolError('OUT_OF_STOCK', `Only ${available} unit(s) of ${productId} available in ${fromWarehouseId}`, { productId, warehouseId: fromWarehouseId, available, requested: quantity })
      const out = moveStock(store, { productId, warehouseId: fromWarehouseId, delta: -quantity, reason: 'transfer_out', reference: toWarehouseId })
      const into = moveStock(store, { productId, warehouseId: toWarehouseId, delta: quantity, reason: 'transfer_in', reference: fromWarehouseId })
      return { from: level(store, out.row), to: level(store, into.row), movementIds: [out.movement.id, into.movement.id] }
    },
  },
  {
    name: 'inventory:listLowStock',
    title: 'List low stock',
    description: 'List warehouse stock rows whose available units are below the product\'s reorder point, with a suggested reorder quantity (up to 3× the reorder point). Lowest coverage first.',
    inputSchema: { type: 'object', properties: { warehouseId, category: { type: 'string', enum: ['hardware', 'accessories'] } }, additionalProperties: false },
    outputSchema: listOutput(
      record({
        productId,
        sku: { type: 'string' },
        name: { type: 'string' },
        warehouseId,
        available: { type: 'integer', minimum: 0 },
        reorderPoint: { type: 'integer', minimum: 0 },
        suggestedReorder: { type: 'integer', minimum: 1 },
      }),
    ),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'stock'],
    handler: async ({ warehouseId, category }, { store }) => {
      const rows = []
      for (const row of store.stock) {
        const product = store.products.find((p) => p.id === row.productId)
        if (!product || product.status !== 'active' || (warehouseId && row.warehouseId !== warehouseId) || (category && product.category !== category)) continue
        const available = row.onHand - row.reserved
        if (available < product.reorderPoint) {
          rows.push({ productId: product.id, sku: product.sku, name: product.name, warehouseId: row.warehouseId, available, reorderPoint: product.reorderPoint, suggestedReorder: product.reorderPoint * 3 - available })
        }
      }
      rows.sort((a, b) => a.available / a.reorderPoint - b.available / b.reorderPoint || a.productId.localeCompare(b.productId))
      return { items: rows, total: rows.length }
    },
  },
  {
    name: 'inventory:listWarehouses',
    title: 'List warehouses',
    description: 'List warehouses with their address, the number of products stocked and total units on hand.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputSchema: listOutput(
      record({
        id: warehouseId,
        name: { type: 'string' },
        address: ref('Address'),
        active: { type: 'boolean' },
        productCount: { type: 'integer', minimum: 0 },
        unitsOnHand: { type: 'integer', minimum: 0 },
      }),
    ),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'stock'],
    handler: async (_input, { store }) => {
      const items = store.warehouses.map((w) => {
        const rows = store.stock.filter((s) => s.warehouseId === w.id && s.onHand > 0)
        return { ...clone(w), productCount: rows.length, unitsOnHand: sum(rows.map((r) => r.onHand)) }
      })
      return { items, total: items.length }
    },
  },
  {
    name: 'inventory:listStockMovements',
    title: 'List stock movements',
    description: 'Stock movement history newest first, filtered by product, warehouse, reason or time. Returns movements with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: { productId, warehouseId, reason: { type: 'string', enum: MOVEMENT_REASONS }, since: dateTime, ...paginationProps },
      additionalProperties: false,
    },
    outputSchema: listOutput(Movement),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'stock'],
    handler: async ({ productId, warehouseId, reason, since, limit, cursor }, { store }) =>
      paginate(
        store.stockMovements
          .filter((m) => (!productId || m.productId === productId) && (!warehouseId || m.warehouseId === warehouseId) && (!reason || m.reason === reason) && (!since || Date.parse(m.at) >= Date.parse(since)))
          .reverse(),
        { limit, cursor },
      ),
  },
]

export default { appId: 'inventory', tools: defineTools(tools) }
