import { ToolError, notFound } from '../errors.mjs'
import { ANNOTATIONS, clone, defineTools, getOrThrow, idProp, listOutput, matches, nullable, paginate, paginationProps, record, ref } from '../data.mjs'

const ROLES = ['admin', 'member', 'viewer']
const STATUSES = ['active', 'suspended', 'invited']
const PLANS = ['free', 'starter', 'pro', 'enterprise']
const TENANTS = ['t_acme', 't_globex']
const AUDIT_ACTIONS = ['user.created', 'user.invited', 'user.updated', 'user.deleted', 'user.suspended', 'user.reactivated', 'user.role_changed', 'user.merged', 'user.password_reset', 'team.created', 'team.member_added', 'team.member_removed']
const PERMISSIONS = {
  admin: ['users:read', 'users:write', 'billing:read', 'billing:write', 'orders:read', 'orders:write', 'support:read', 'support:write', 'analytics:read'],
  member: ['users:read', 'billing:read', 'orders:read', 'orders:write', 'support:read', 'support:write', 'analytics:read'],
  viewer: ['users:read', 'orders:read', 'support:read', 'analytics:read'],
}
const EXPORT_FIELDS = ['id', 'tenantId', 'name', 'email', 'phone', 'role', 'status', 'plan', 'createdAt', 'lastLoginAt']

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const userId = idProp('User', 'usr_001')
const tenantId = { type: 'string', enum: TENANTS, description: 'Tenant (workspace) id.' }
const role = { type: 'string', enum: ROLES, description: 'admin: full access; member: read/write without user & billing admin; viewer: read-only.' }
const status = { type: 'string', enum: STATUSES }
const plan = { type: 'string', enum: PLANS }
const tags = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 32 }, maxItems: 10, uniqueItems: true }

const summaryProps = {
  id: userId,
  tenantId,
  name: { type: 'string' },
  email: { type: 'string', format: 'email' },
  role,
  status,
  plan,
  createdAt: dateTime,
}
const UserSummary = record(summaryProps, { description: 'A user without contact details.' })
const User = record(
  {
    ...summaryProps,
    phone: nullable({ type: 'string' }),
    dateOfBirth: nullable({ type: 'string', format: 'date' }),
    address: nullable(ref('Address')),
    updatedAt: dateTime,
    lastLoginAt: nullable(dateTime),
    tags: { type: 'array', items: { type: 'string' } },
    metadata: ref('Metadata'),
  },
  { description: 'A user account including contact details (email, phone, address, date of birth).' },
)
const Team = record({
  id: idProp('Team', 'team_01'),
  tenantId,
  name: { type: 'string' },
  description: { type: 'string' },
  memberIds: { type: 'array', items: { type: 'string' } },
  createdAt: dateTime,
})
const notificationProps = {
  email: { type: 'boolean', description: 'Transactional and product emails.' },
  sms: { type: 'boolean', description: 'SMS alerts for security events.' },
  digest: { type: 'string', enum: ['daily', 'weekly', 'never'], description: 'Activity digest frequency.' },
}
const Preferences = record({
  userId,
  locale: { type: 'string', enum: ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'nl-NL'] },
  timezone: { type: 'string', description: 'IANA time zone, e.g. Europe/Berlin.' },
  theme: { type: 'string', enum: ['light', 'dark', 'system'] },
  notifications: record(notificationProps),
})
const AuditEntry = record({
  id: idProp('Audit entry', 'aud_0001'),
  at: dateTime,
  actorId: { type: 'string', description: 'User who performed the action.' },
  action: { type: 'string', enum: AUDIT_ACTIONS },
  targetType: { type: 'string', enum: ['user', 'team'] },
  targetId: { type: 'string' },
  details: { type: 'object', additionalProperties: { type: 'string' } },
})

// --- helpers --------------------------------------------------------------------------------

const summary = ({ id, tenantId, name, email, role, status, plan, createdAt }) => ({ id, tenantId, name, email, role, status, plan, createdAt })
const actorOf = (ctx) => ctx?.userId ?? 'usr_001'

function audit(store, ctx, action, targetType, targetId, details = {}) {
  const entry = { id: store.nextId('aud'), at: store.now(), actorId: actorOf(ctx), action, targetType, targetId, details: Object.fromEntries(Object.entries(details).map(([k, v]) => [k, String(v)])) }
  store.auditLog.push(entry)
  return entry
}

function findByEmail(store, email) {
  return store.users.find((u) => u.email.toLowerCase() === email.toLowerCase())
}

function assertEmailFree(store, email, exceptId) {
  const existing = findByEmail(store, email)
  if (existing && existing.id !== exceptId) throw new ToolError('CONFLICT', `Email ${email} is already used by ${existing.id}`, { email, userId: existing.id })
}

function assertNotLastAdmin(store, user) {
  if (user.role !== 'admin') return
  const admins = store.users.filter((u) => u.tenantId === user.tenantId && u.role === 'admin' && u.status === 'active')
  if (admins.length === 1 && admins[0].id === user.id) {
    throw new ToolError('CONFLICT', `${user.id} is the last active admin of ${user.tenantId}; promote another admin first`, { userId: user.id, tenantId: user.tenantId })
  }
}

function newUser(store, { name, email, phone = null, role = 'member', tenantId, plan = 'free', address = null, dateOfBirth = null, tags = [], metadata = {} }, status) {
  assertEmailFree(store, email)
  const now = store.now()
  const user = { id: store.nextId('usr'), tenantId, name, email: email.toLowerCase(), phone, dateOfBirth, address: address && clone(address), role, status, plan, createdAt: now, updatedAt: now, lastLoginAt: null, tags: [...tags], metadata: { ...metadata } }
  store.users.push(user)
  store.preferences[user.id] = { locale: 'en-US', timezone: 'UTC', theme: 'system', notifications: { email: true, sms: false, digest: 'weekly' } }
  return user
}

const preferencesOf = (store, id) => ({ userId: id, ...clone(store.preferences[id]) })
const toCsv = (rows, fields) => [fields.join(','), ...rows.map((r) => fields.map((f) => JSON.stringify(r[f] ?? '')).join(','))].join('\n')

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'users:list',
    title: 'List users',
    description: 'List users page by page, optionally filtered by tenant, role, status or plan and sorted. Returns user summaries (id, name, email, role, status, plan) with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        tenantId,
        role,
        status,
        plan,
        sort: { type: 'string', enum: ['id', 'name', 'createdAt', '-createdAt'], default: 'id', description: 'Sort key; a leading "-" sorts descending.' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(UserSummary),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination'],
    examples: [
      { description: 'First page of active admins', input: { role: 'admin', status: 'active', limit: 10 } },
      { description: 'Newest Globex users', input: { tenantId: 't_globex', sort: '-createdAt', limit: 5 } },
    ],
    handler: async ({ tenantId, role, status, plan, sort = 'id', limit, cursor }, { store }) => {
      const desc = sort.startsWith('-')
      const key = sort.replace(/^-/, '')
      const users = store.users
        .filter((u) => (!tenantId || u.tenantId === tenantId) && (!role || u.role === role) && (!status || u.status === status) && (!plan || u.plan === plan))
        .sort((a, b) => (desc ? -1 : 1) * String(a[key]).localeCompare(String(b[key])))
      return paginate(users.map(summary), { limit, cursor })
    },
  },
  {
    name: 'users:get',
    title: 'Get a user',
    description: 'Fetch one user by id or by email (exactly one of userId / email). Returns the full profile including email, phone, postal address and date of birth.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        email: { type: 'string', format: 'email', description: 'Look the user up by email instead of id.' },
      },
      oneOf: [{ required: ['userId'] }, { required: ['email'] }],
      additionalProperties: false,
    },
    outputSchema: User,
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    examples: [
      { description: 'By id', input: { userId: 'usr_001' } },
      { description: 'By email', input: { email: 'liam.moreau@acme.example.com' } },
    ],
    handler: async ({ userId, email }, { store }) => {
      const user = userId ? getOrThrow(store.users, userId, 'User') : findByEmail(store, email)
      if (!user) throw notFound('User', email)
      return clone(user)
    },
  },
  {
    name: 'users:whoami',
    title: 'Current user',
    description: 'Return the user the session acts as, with their tenant and effective permissions. Takes no input.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputSchema: record({
      user: User,
      tenant: record({ id: tenantId, name: { type: 'string' }, region: { type: 'string', enum: ['us', 'eu'] } }),
      permissions: { type: 'array', items: { type: 'string' }, description: 'Granted scopes such as "orders:write".' },
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'session'],
    codecall: { visibleInListTools: true },
    handler: async (_input, ctx) => {
      const user = getOrThrow(ctx.store.users, actorOf(ctx), 'User')
      return { user: clone(user), tenant: clone(getOrThrow(ctx.store.tenants, user.tenantId, 'Tenant')), permissions: PERMISSIONS[user.role] }
    },
  },
  {
    name: 'users:search',
    title: 'Search users',
    description: 'Case-insensitive search over user name, email, phone, city and tags. Returns up to `limit` matching user summaries, each with the fields that matched.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 2, maxLength: 100, description: 'Text to look for, e.g. "berlin" or "@globex".' },
        tenantId,
        limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
      },
      required: ['query'],
      additionalProperties: false,
    },
    outputSchema: listOutput(record({ ...summaryProps, matchedFields: { type: 'array', items: { type: 'string', enum: ['name', 'email', 'phone', 'city', 'tags'] }, minItems: 1 } })),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'search'],
    handler: async ({ query, tenantId, limit = 10 }, { store }) => {
      const hits = []
      for (const user of store.users) {
        if (tenantId && user.tenantId !== tenantId) continue
        const fields = { name: user.name, email: user.email, phone: user.phone, city: user.address?.city, tags: user.tags.join(' ') }
        const matchedFields = Object.keys(fields).filter((f) => matches(query, fields[f]))
        if (matchedFields.length) hits.push({ ...summary(user), matchedFields })
      }
      return { items: clone(hits.slice(0, limit)), total: hits.length }
    },
  },
  {
    name: 'users:create',
    title: 'Create a user',
    description: 'Create a user in a tenant. Fails with CONFLICT when the email is taken. With sendInvite the user starts as "invited", otherwise "active". Returns the new user.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 100 },
        email: { type: 'string', format: 'email' },
        phone: { type: 'string', pattern: '^\\+[0-9][0-9 ]{6,18}$', examples: ['+1 415 555 0199'], description: 'E.164-style phone number with optional spaces.' },
        tenantId,
        role: { ...role, default: 'member' },
        plan: { ...plan, default: 'free' },
        address: ref('Address'),
        dateOfBirth: { type: 'string', format: 'date' },
        tags,
        metadata: ref('Metadata'),
        sendInvite: { type: 'boolean', default: false, description: 'Email an invitation instead of activating right away.' },
      },
      required: ['name', 'email', 'tenantId'],
      additionalProperties: false,
    },
    outputSchema: User,
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    examples: [
      {
        description: 'Create an active member with an address',
        input: { name: 'Grace Hopper', email: 'grace.hopper@acme.example.com', tenantId: 't_acme', phone: '+1 415 555 0199', address: { line1: '1 Navy Way', city: 'Arlington', region: 'VA', postalCode: '22202', country: 'US' }, metadata: { source: 'import' } },
      },
    ],
    handler: async ({ sendInvite = false, ...input }, ctx) => {
      const user = newUser(ctx.store, input, sendInvite ? 'invited' : 'active')
      audit(ctx.store, ctx, sendInvite ? 'user.invited' : 'user.created', 'user', user.id, { email: user.email, role: user.role })
      return clone(user)
    },
  },
  {
    name: 'users:update',
    title: 'Update a user',
    description: 'Change profile fields of a user (name, email, phone, address, date of birth, plan, tags, metadata); only the given fields change and metadata is replaced as a whole. Returns the updated user.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        name: { type: 'string', minLength: 1, maxLength: 100 },
        email: { type: 'string', format: 'email' },
        phone: { type: 'string', minLength: 7, maxLength: 24 },
        address: ref('Address'),
        dateOfBirth: { type: 'string', format: 'date' },
        plan,
        tags,
        metadata: ref('Metadata'),
      },
      required: ['userId'],
      minProperties: 2,
      additionalProperties: false,
    },
    outputSchema: User,
    annotations: ANNOTATIONS.update,
    tags: ['write'],
    handler: async ({ userId, ...patch }, ctx) => {
      const user = getOrThrow(ctx.store.users, userId, 'User')
      if (!Object.keys(patch).length) throw new ToolError('INVALID_INPUT', 'Nothing to update: pass at least one field besides userId')
      if (patch.email) assertEmailFree(ctx.store, patch.email, user.id)
      Object.assign(user, clone(patch), patch.email ? { email: patch.email.toLowerCase() } : {}, { updatedAt: ctx.store.now() })
      audit(ctx.store, ctx, 'user.updated', 'user', user.id, { fields: Object.keys(patch).join(',') })
      return clone(user)
    },
  },
  {
    name: 'users:delete',
    title: 'Delete a user',
    description: 'Permanently delete a user and remove them from teams. Refuses (CONFLICT) for the last active admin of a tenant or a user with orders still in flight (pending, paid or shipped).',
    inputSchema: {
      type: 'object',
      properties: { userId, reason: { type: 'string', maxLength: 500, description: 'Stored in the audit log.' } },
      required: ['userId'],
      additionalProperties: false,
    },
    outputSchema: record({ deleted: { type: 'boolean', const: true }, userId, deletedAt: dateTime }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ userId, reason = '' }, ctx) => {
      const { store } = ctx
      const user = getOrThrow(store.users, userId, 'User')
      assertNotLastAdmin(store, user)
      const inFlight = store.orders.filter((o) => o.userId === userId && ['pending', 'paid', 'shipped'].includes(o.status))
      if (inFlight.length) throw new ToolError('CONFLICT', `${userId} has ${inFlight.length} order(s) in flight (${inFlight.map((o) => o.id).join(', ')}); cancel or deliver them first`, { orderIds: inFlight.map((o) => o.id) })
      store.users.splice(store.users.indexOf(user), 1)
      delete store.preferences[userId]
      for (const team of store.teams) team.memberIds = team.memberIds.filter((id) => id !== userId)
      const entry = audit(store, ctx, 'user.deleted', 'user', userId, { email: user.email, reason })
      return { deleted: true, userId, deletedAt: entry.at }
    },
  },
  {
    name: 'users:suspend',
    title: 'Suspend a user',
    description: 'Suspend an active user so they can no longer sign in; CONFLICT if they are not active or are the last admin. Returns the updated user summary.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        reason: { type: 'string', enum: ['payment_overdue', 'abuse', 'security', 'requested', 'other'] },
        note: { type: 'string', maxLength: 500 },
      },
      required: ['userId', 'reason'],
      additionalProperties: false,
    },
    outputSchema: UserSummary,
    annotations: ANNOTATIONS.update,
    tags: ['write'],
    handler: async ({ userId, reason, note }, ctx) => {
      const user = getOrThrow(ctx.store.users, userId, 'User')
      if (user.status !== 'active') throw new ToolError('CONFLICT', `User ${userId} is ${user.status}, only active users can be suspended`, { status: user.status })
      assertNotLastAdmin(ctx.store, user)
      user.status = 'suspended'
      user.updatedAt = ctx.store.now()
      audit(ctx.store, ctx, 'user.suspended', 'user', userId, { reason, ...(note ? { note } : {}) })
      return summary(user)
    },
  },
  {
    name: 'users:reactivate',
    title: 'Reactivate a user',
    description: 'Lift a suspension and make the user active again; CONFLICT if the user is not suspended. Returns the updated user summary.',
    inputSchema: { type: 'object', properties: { userId }, required: ['userId'], additionalProperties: false },
    outputSchema: UserSummary,
    annotations: ANNOTATIONS.update,
    tags: ['write'],
    handler: async ({ userId }, ctx) => {
      const user = getOrThrow(ctx.store.users, userId, 'User')
      if (user.status !== 'suspended') throw new ToolError('CONFLICT', `User ${userId} is ${user.status}, not suspended`, { status: user.status })
      user.status = 'active'
      user.updatedAt = ctx.store.now()
      audit(ctx.store, ctx, 'user.reactivated', 'user', userId)
      return summary(user)
    },
  },
  {
    name: 'users:invite',
    title: 'Invite a user',
    description: 'Invite someone by email into a tenant with a role; creates an "invited" user. Returns the user summary, the invitation link and when it expires.',
    inputSchema: {
      type: 'object',
      properties: {
        email: { type: 'string', format: 'email' },
        tenantId,
        role: { ...role, default: 'member' },
        name: { type: 'string', maxLength: 100, description: 'Display name; defaults to the email local part.' },
        expiresInDays: { type: 'integer', minimum: 1, maximum: 30, default: 7 },
      },
      required: ['email', 'tenantId'],
      additionalProperties: false,
    },
    outputSchema: record({ user: UserSummary, inviteUrl: { type: 'string', format: 'uri' }, expiresAt: dateTime }),
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    handler: async ({ email, tenantId, role = 'member', name, expiresInDays = 7 }, ctx) => {
      const user = newUser(ctx.store, { email, tenantId, role, name: name ?? email.split('@')[0] }, 'invited')
      audit(ctx.store, ctx, 'user.invited', 'user', user.id, { email: user.email, role })
      const expiresAt = new Date(Date.parse(user.createdAt) + expiresInDays * 86_400_000).toISOString()
      return { user: summary(user), inviteUrl: `https://app.example.com/invite/${user.id}?tenant=${tenantId}`, expiresAt }
    },
  },
  {
    name: 'users:changeRole',
    title: 'Change a user role',
    description: 'Set the role of a user (admin, member or viewer). Refuses to demote the last active admin of a tenant. Returns the user summary and the previous role.',
    inputSchema: { type: 'object', properties: { userId, role }, required: ['userId', 'role'], additionalProperties: false },
    outputSchema: record({ user: UserSummary, previousRole: role }),
    annotations: ANNOTATIONS.update,
    tags: ['write', 'permissions'],
    handler: async ({ userId, role }, ctx) => {
      const user = getOrThrow(ctx.store.users, userId, 'User')
      const previousRole = user.role
      if (previousRole !== role) {
        if (previousRole === 'admin') assertNotLastAdmin(ctx.store, user)
        user.role = role
        user.updatedAt = ctx.store.now()
        audit(ctx.store, ctx, 'user.role_changed', 'user', userId, { from: previousRole, to: role })
      }
      return { user: summary(user), previousRole }
    },
  },
  {
    name: 'users:merge',
    title: 'Merge duplicate users',
    description: 'Merge a duplicate user into another user of the same tenant: orders, invoices, payments, refunds, subscriptions, tickets and events move to the target and the source is deleted. Returns the target user and how many records moved.',
    inputSchema: {
      type: 'object',
      properties: {
        sourceUserId: { ...userId, description: 'The duplicate to remove, e.g. usr_014.' },
        targetUserId: { ...userId, description: 'The user that survives, e.g. usr_002.' },
      },
      required: ['sourceUserId', 'targetUserId'],
      additionalProperties: false,
    },
    outputSchema: record({
      target: User,
      deletedUserId: { type: 'string' },
      moved: record(Object.fromEntries(['orders', 'invoices', 'payments', 'refunds', 'subscriptions', 'tickets', 'events'].map((k) => [k, { type: 'integer', minimum: 0 }]))),
    }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ sourceUserId, targetUserId }, ctx) => {
      const { store } = ctx
      if (sourceUserId === targetUserId) throw new ToolError('INVALID_INPUT', 'sourceUserId and targetUserId must differ')
      const source = getOrThrow(store.users, sourceUserId, 'User')
      const target = getOrThrow(store.users, targetUserId, 'User')
      if (source.tenantId !== target.tenantId) throw new ToolError('CONFLICT', `Cannot merge across tenants (${source.tenantId} → ${target.tenantId})`)
      assertNotLastAdmin(store, source)
      const moved = {}
      const reassign = (key, list, field, extra = () => {}) => {
        const owned = list.filter((r) => r[field] === sourceUserId)
        for (const r of owned) {
          r[field] = targetUserId
          extra(r)
        }
        moved[key] = owned.length
      }
      reassign('orders', store.orders, 'userId', (o) => (o.customerEmail = target.email))
      reassign('invoices', store.invoices, 'userId')
      reassign('payments', store.payments, 'userId')
      reassign('refunds', store.refunds, 'userId')
      reassign('subscriptions', store.subscriptions, 'userId')
      reassign('tickets', store.tickets, 'requesterId', (t) => Object.assign(t, { requesterEmail: target.email, requesterName: target.name }))
      reassign('events', store.events, 'userId')
      store.users.splice(store.users.indexOf(source), 1)
      delete store.preferences[sourceUserId]
      for (const team of store.teams) {
        if (team.memberIds.includes(sourceUserId)) team.memberIds = [...new Set(team.memberIds.map((id) => (id === sourceUserId ? targetUserId : id)))]
      }
      target.tags = [...new Set([...target.tags, ...source.tags])].sort()
      target.updatedAt = store.now()
      audit(store, ctx, 'user.merged', 'user', targetUserId, { mergedFrom: sourceUserId })
      return { target: clone(target), deletedUserId: sourceUserId, moved }
    },
  },
  {
    name: 'users:export',
    title: 'Export users',
    description: 'Export users matching the filters as CSV or JSON Lines text, with the chosen columns. Returns the file content and the row count.',
    inputSchema: {
      type: 'object',
      properties: {
        tenantId,
        status,
        role,
        format: { type: 'string', enum: ['csv', 'jsonl'], default: 'csv' },
        fields: { type: 'array', items: { type: 'string', enum: EXPORT_FIELDS }, minItems: 1, uniqueItems: true, default: ['id', 'name', 'email', 'role', 'status'] },
      },
      additionalProperties: false,
    },
    outputSchema: record({ format: { type: 'string', enum: ['csv', 'jsonl'] }, rowCount: { type: 'integer', minimum: 0 }, content: { type: 'string' }, generatedAt: dateTime }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'export'],
    handler: async ({ tenantId, status, role, format = 'csv', fields = ['id', 'name', 'email', 'role', 'status'] }, { store }) => {
      const rows = store.users
        .filter((u) => (!tenantId || u.tenantId === tenantId) && (!status || u.status === status) && (!role || u.role === role))
        .map((u) => Object.fromEntries(fields.map((f) => [f, u[f]])))
      const content = format === 'csv' ? toCsv(rows, fields) : rows.map((r) => JSON.stringify(r)).join('\n')
      return { format, rowCount: rows.length, content, generatedAt: store.now() }
    },
  },
  {
    name: 'users:listTeams',
    title: 'List teams',
    description: 'List teams, optionally only those of one tenant. Returns teams with their member ids.',
    inputSchema: { type: 'object', properties: { tenantId, ...paginationProps }, additionalProperties: false },
    outputSchema: listOutput(Team),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'teams'],
    handler: async ({ tenantId, limit, cursor }, { store }) => paginate(store.teams.filter((t) => !tenantId || t.tenantId === tenantId), { limit, cursor }),
  },
  {
    name: 'users:getTeam',
    title: 'Get a team',
    description: 'Fetch a team with the summaries of its members.',
    inputSchema: { type: 'object', properties: { teamId: idProp('Team', 'team_01') }, required: ['teamId'], additionalProperties: false },
    outputSchema: record({ team: Team, members: { type: 'array', items: UserSummary } }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'teams'],
    handler: async ({ teamId }, { store }) => {
      const team = getOrThrow(store.teams, teamId, 'Team')
      const members = team.memberIds.map((id) => store.users.find((u) => u.id === id)).filter(Boolean).map(summary)
      return { team: clone(team), members }
    },
  },
  {
    name: 'users:createTeam',
    title: 'Create a team',
    description: 'Create a team in a tenant with optional initial members (all must belong to the tenant). CONFLICT if the tenant already has a team with that name. Returns the team.',
    inputSchema: {
      type: 'object',
      properties: {
        tenantId,
        name: { type: 'string', minLength: 2, maxLength: 60 },
        description: { type: 'string', maxLength: 280, default: '' },
        memberIds: { type: 'array', items: userId, maxItems: 50, uniqueItems: true, default: [] },
      },
      required: ['tenantId', 'name'],
      additionalProperties: false,
    },
    outputSchema: Team,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'teams'],
    handler: async ({ tenantId, name, description = '', memberIds = [] }, ctx) => {
      const { store } = ctx
      if (store.teams.some((t) => t.tenantId === tenantId && t.name.toLowerCase() === name.toLowerCase())) throw new ToolError('CONFLICT', `Team "${name}" already exists in ${tenantId}`)
      for (const id of memberIds) {
        const member = getOrThrow(store.users, id, 'User')
        if (member.tenantId !== tenantId) throw new ToolError('INVALID_INPUT', `User ${id} belongs to ${member.tenantId}, not ${tenantId}`)
      }
      const team = { id: store.nextId('team'), tenantId, name, description, memberIds: [...memberIds], createdAt: store.now() }
      store.teams.push(team)
      audit(store, ctx, 'team.created', 'team', team.id, { name })
      return clone(team)
    },
  },
  {
    name: 'users:addTeamMember',
    title: 'Add a team member',
    description: 'Add a user of the same tenant to a team; CONFLICT if already a member. Returns the team.',
    inputSchema: { type: 'object', properties: { teamId: idProp('Team', 'team_01'), userId }, required: ['teamId', 'userId'], additionalProperties: false },
    outputSchema: Team,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'teams'],
    handler: async ({ teamId, userId }, ctx) => {
      const team = getOrThrow(ctx.store.teams, teamId, 'Team')
      const user = getOrThrow(ctx.store.users, userId, 'User')
      if (user.tenantId !== team.tenantId) throw new ToolError('CONFLICT', `User ${userId} belongs to ${user.tenantId}, team ${teamId} to ${team.tenantId}`)
      if (team.memberIds.includes(userId)) throw new ToolError('CONFLICT', `User ${userId} is already a member of ${teamId}`)
      team.memberIds.push(userId)
      audit(ctx.store, ctx, 'team.member_added', 'team', teamId, { userId })
      return clone(team)
    },
  },
  {
    name: 'users:removeTeamMember',
    title: 'Remove a team member',
    description: 'Remove a user from a team; NOT_FOUND if the user is not a member. Returns the team.',
    inputSchema: { type: 'object', properties: { teamId: idProp('Team', 'team_01'), userId }, required: ['teamId', 'userId'], additionalProperties: false },
    outputSchema: Team,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'teams'],
    handler: async ({ teamId, userId }, ctx) => {
      const team = getOrThrow(ctx.store.teams, teamId, 'Team')
      if (!team.memberIds.includes(userId)) throw new ToolError('NOT_FOUND', `User ${userId} is not a member of ${teamId}`, { kind: 'TeamMember', id: userId })
      team.memberIds = team.memberIds.filter((id) => id !== userId)
      audit(ctx.store, ctx, 'team.member_removed', 'team', teamId, { userId })
      return clone(team)
    },
  },
  {
    name: 'users:getPreferences',
    title: 'Get user preferences',
    description: 'Read a user\'s locale, time zone, theme and notification settings.',
    inputSchema: { type: 'object', properties: { userId }, required: ['userId'], additionalProperties: false },
    outputSchema: Preferences,
    annotations: ANNOTATIONS.read,
    tags: ['read', 'preferences'],
    handler: async ({ userId }, { store }) => {
      getOrThrow(store.users, userId, 'User')
      return preferencesOf(store, userId)
    },
  },
  {
    name: 'users:updatePreferences',
    title: 'Update user preferences',
    description: 'Change some of a user\'s preferences; notification settings are merged field by field. Returns the full preferences.',
    inputSchema: {
      type: 'object',
      properties: {
        userId,
        locale: Preferences.properties.locale,
        timezone: { type: 'string', minLength: 1, description: 'IANA time zone, e.g. America/Chicago.' },
        theme: Preferences.properties.theme,
        notifications: { type: 'object', properties: notificationProps, minProperties: 1, additionalProperties: false },
      },
      required: ['userId'],
      additionalProperties: false,
    },
    outputSchema: Preferences,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'preferences'],
    handler: async ({ userId, notifications, ...rest }, { store }) => {
      getOrThrow(store.users, userId, 'User')
      if (!notifications && !Object.keys(rest).length) throw new ToolError('INVALID_INPUT', 'Nothing to update: pass at least one preference')
      const prefs = store.preferences[userId]
      Object.assign(prefs, rest)
      if (notifications) Object.assign(prefs.notifications, notifications)
      return preferencesOf(store, userId)
    },
  },
  {
    name: 'users:listAuditLog',
    title: 'List audit log entries',
    description: 'List audit log entries newest first, filtered by the user involved (as actor or target), action and time range. Returns entries with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        userId: { ...userId, description: 'Entries where this user is the actor or the target.' },
        action: { type: 'string', enum: AUDIT_ACTIONS },
        since: { type: 'string', format: 'date-time' },
        until: { type: 'string', format: 'date-time' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(AuditEntry),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination', 'audit'],
    handler: async ({ userId, action, since, until, limit, cursor }, { store }) => {
      const entries = store.auditLog
        .filter((e) => (!userId || e.actorId === userId || e.targetId === userId) && (!action || e.action === action) && (!since || Date.parse(e.at) >= Date.parse(since)) && (!until || Date.parse(e.at) <= Date.parse(until)))
        .reverse()
      return paginate(entries, { limit, cursor })
    },
  },
  {
    name: 'users:resetPassword',
    title: 'Send a password reset',
    description: 'Create a one-hour password reset link for an active user and optionally email it. CONFLICT for suspended or invited users. Returns the link and where it was sent.',
    inputSchema: {
      type: 'object',
      properties: { userId, notify: { type: 'boolean', default: true, description: 'Email the link to the user.' } },
      required: ['userId'],
      additionalProperties: false,
    },
    outputSchema: record({ userId, resetUrl: { type: 'string', format: 'uri' }, expiresAt: dateTime, emailSentTo: nullable({ type: 'string', format: 'email' }) }),
    annotations: ANNOTATIONS.action,
    tags: ['write', 'security'],
    handler: async ({ userId, notify = true }, ctx) => {
      const user = getOrThrow(ctx.store.users, userId, 'User')
      if (user.status !== 'active') throw new ToolError('CONFLICT', `User ${userId} is ${user.status}; only active users can reset their password`)
      const entry = audit(ctx.store, ctx, 'user.password_reset', 'user', userId, { notify })
      return { userId, resetUrl: `https://app.example.com/reset-password?token=${entry.id}`, expiresAt: new Date(Date.parse(entry.at) + 3_600_000).toISOString(), emailSentTo: notify ? user.email : null }
    },
  },
  {
    name: 'users:bulkUpdateStatus',
    title: 'Suspend or reactivate many users',
    description: 'Set status active or suspended on up to 50 users at once. Users already in that state, invited users and unknown ids are skipped with a reason. Returns updated ids and skipped entries.',
    inputSchema: {
      type: 'object',
      properties: {
        userIds: { type: 'array', items: userId, minItems: 1, maxItems: 50, uniqueItems: true },
        status: { type: 'string', enum: ['active', 'suspended'] },
        reason: { type: 'string', maxLength: 200 },
      },
      required: ['userIds', 'status'],
      additionalProperties: false,
    },
    outputSchema: record({
      updated: { type: 'array', items: { type: 'string' } },
      skipped: { type: 'array', items: record({ userId: { type: 'string' }, reason: { type: 'string', enum: ['not_found', 'unchanged', 'invited', 'last_admin'] } }) },
    }),
    annotations: ANNOTATIONS.update,
    tags: ['write', 'bulk'],
    examples: [{ description: 'Suspend two users', input: { userIds: ['usr_010', 'usr_011', 'usr_999'], status: 'suspended', reason: 'Security review' } }],
    handler: async ({ userIds, status, reason = '' }, ctx) => {
      const updated = []
      const skipped = []
      for (const id of userIds) {
        const user = ctx.store.users.find((u) => u.id === id)
        if (!user) skipped.push({ userId: id, reason: 'not_found' })
        else if (user.status === 'invited') skipped.push({ userId: id, reason: 'invited' })
        else if (user.status === status) skipped.push({ userId: id, reason: 'unchanged' })
        else if (status === 'suspended' && user.role === 'admin' && ctx.store.users.filter((u) => u.tenantId === user.tenantId && u.role === 'admin' && u.status === 'active').length === 1) skipped.push({ userId: id, reason: 'last_admin' })
        else {
          user.status = status
          user.updatedAt = ctx.store.now()
          audit(ctx.store, ctx, status === 'suspended' ? 'user.suspended' : 'user.reactivated', 'user', id, { reason, bulk: true })
          updated.push(id)
        }
      }
      return { updated, skipped }
    },
  },
  {
    name: 'users:_purgeAll',
    title: 'Purge all users (internal)',
    description: 'Internal maintenance: delete every user, optionally of one tenant, with their preferences and team memberships. Requires confirm: true.',
    inputSchema: {
      type: 'object',
      properties: { confirm: { type: 'boolean', const: true, description: 'Must be true.' }, tenantId },
      required: ['confirm'],
      additionalProperties: false,
    },
    outputSchema: record({ deletedUsers: { type: 'integer', minimum: 0 }, tenantId: nullable({ type: 'string' }) }),
    annotations: ANNOTATIONS.destructive,
    tags: ['internal', 'destructive'],
    internal: true,
    handler: async ({ confirm, tenantId = null }, { store }) => {
      if (confirm !== true) throw new ToolError('INVALID_INPUT', 'Pass confirm: true to purge users')
      const doomed = new Set(store.users.filter((u) => !tenantId || u.tenantId === tenantId).map((u) => u.id))
      store.users = store.users.filter((u) => !doomed.has(u.id))
      for (const id of doomed) delete store.preferences[id]
      for (const team of store.teams) team.memberIds = team.memberIds.filter((id) => !doomed.has(id))
      return { deletedUsers: doomed.size, tenantId }
    },
  },
]

export default { appId: 'users', tools: defineTools(tools) }
