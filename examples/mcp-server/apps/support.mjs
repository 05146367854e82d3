import { ToolError, notFound } from '../errors.mjs'
import { ANNOTATIONS, BASE_DATE, clone, defineTools, getOrThrow, idProp, listOutput, matches, nullable, paginate, paginateOffset, paginationProps, record } from '../data.mjs'

const STATUSES = ['open', 'pending', 'on_hold', 'solved', 'closed']
const PRIORITIES = ['low', 'normal', 'high', 'urgent']
const CHANNELS = ['email', 'web', 'chat', 'phone']
const TEAMS = ['tier1', 'tier2', 'billing']
const AGENT_STATUSES = ['online', 'away', 'offline']
const COMPONENT_STATUSES = ['operational', 'degraded_performance', 'partial_outage', 'major_outage']
/** First-response targets in minutes. */
const SLA_MINUTES = { urgent: 60, high: 240, normal: 480, low: 1440 }
const RESOLVED = ['solved', 'closed']

// --- schemas --------------------------------------------------------------------------------

const dateTime = { type: 'string', format: 'date-time' }
const ticketId = idProp('Ticket', 'tkt_001')
const agentId = idProp('Agent', 'agt_01')
const userId = idProp('User', 'usr_001')
const status = { type: 'string', enum: STATUSES }
const priority = { type: 'string', enum: PRIORITIES }
const tags = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 32 }, maxItems: 10, uniqueItems: true }

const Attachment = record({ filename: { type: 'string', minLength: 1, maxLength: 200 }, url: { type: 'string', format: 'uri' }, sizeBytes: { type: 'integer', minimum: 0, maximum: 25_000_000 } })
const Comment = record({
  id: idProp('Comment', 'cmt_0001'),
  ticketId,
  authorType: { type: 'string', enum: ['agent', 'requester', 'system'] },
  authorId: nullable({ type: 'string' }),
  body: { type: 'string' },
  public: { type: 'boolean', description: 'false for internal notes only agents can see.' },
  attachments: { type: 'array', items: Attachment },
  createdAt: dateTime,
})
const summaryProps = {
  id: ticketId,
  tenantId: { type: 'string' },
  requesterId: userId,
  requesterName: { type: 'string' },
  requesterEmail: { type: 'string', format: 'email' },
  orderId: nullable({ type: 'string' }),
  subject: { type: 'string' },
  status,
  priority,
  channel: { type: 'string', enum: CHANNELS },
  assigneeId: nullable({ type: 'string' }),
  tags: { type: 'array', items: { type: 'string' } },
  escalationLevel: { type: 'integer', minimum: 0, maximum: 2 },
  mergedInto: nullable({ type: 'string' }),
  satisfaction: nullable(record({ score: { type: 'integer', minimum: 1, maximum: 5 }, comment: nullable({ type: 'string' }), ratedAt: dateTime })),
  commentCount: { type: 'integer', minimum: 0 },
  createdAt: dateTime,
  updatedAt: dateTime,
  firstResponseAt: nullable(dateTime),
  solvedAt: nullable(dateTime),
}
const TicketSummary = record(summaryProps, { description: 'A support ticket without its description and comments.' })
const Ticket = record({ ...summaryProps, description: { type: 'string' }, comments: { type: 'array', items: Comment } }, { description: 'A support ticket with description and comments.' })
const Agent = record({
  id: agentId,
  name: { type: 'string' },
  email: { type: 'string', format: 'email' },
  team: { type: 'string', enum: TEAMS },
  status: { type: 'string', enum: AGENT_STATUSES },
  maxOpenTickets: { type: 'integer', minimum: 1 },
  openTickets: { type: 'integer', minimum: 0, description: 'Assigned tickets not yet solved or closed.' },
})
const Macro = record({
  id: idProp('Macro', 'mac_01'),
  title: { type: 'string' },
  description: { type: 'string' },
  actions: record({ status, priority, addTags: { type: 'array', items: { type: 'string' } }, comment: { type: 'string' } }, { optional: ['status', 'priority', 'addTags', 'comment'] }),
})

// --- helpers --------------------------------------------------------------------------------

function summary(ticket) {
  const { description, comments, ...rest } = ticket
  return clone({ ...rest, commentCount: comments.length })
}
function full(ticket, { includeComments = true, includeInternal = true } = {}) {
  const { comments, ...rest } = ticket
  return clone({ ...rest, commentCount: comments.length, comments: includeComments ? comments.filter((c) => includeInternal || c.public) : [] })
}
const openCount = (store, id) => store.tickets.filter((t) => t.assigneeId === id && !RESOLVED.includes(t.status)).length
const agentView = (store, agent) => ({ ...clone(agent), openTickets: openCount(store, agent.id) })
const PRIORITY_RANK = Object.fromEntries(PRIORITIES.map((p, i) => [p, i]))

function editable(store, id) {
  const ticket = getOrThrow(store.tickets, id, 'Ticket')
  if (ticket.status === 'closed') throw new ToolError('CONFLICT', `Ticket ${id} is closed; reopen it first`, { ticketId: id, status: 'closed' })
  return ticket
}

function addComment(store, ticket, { authorType, authorId, body, isPublic = true, attachments = [] }) {
  const comment = { id: store.nextId('cmt'), ticketId: ticket.id, authorType, authorId, body, public: isPublic, attachments: clone(attachments), createdAt: store.now() }
  ticket.comments.push(comment)
  ticket.updatedAt = comment.createdAt
  if (authorType === 'agent' && isPublic && !ticket.firstResponseAt) ticket.firstResponseAt = comment.createdAt
  return comment
}

function setStatus(store, ticket, next) {
  ticket.status = next
  if (RESOLVED.includes(next) && !ticket.solvedAt) ticket.solvedAt = store.now()
  if (!RESOLVED.includes(next)) ticket.solvedAt = null
  ticket.updatedAt = store.now()
}

function assertCapacity(store, agent) {
  if (openCount(store, agent.id) >= agent.maxOpenTickets) {
    throw new ToolError('CONFLICT', `Agent ${agent.id} already has ${agent.maxOpenTickets} open tickets`, { agentId: agent.id, maxOpenTickets: agent.maxOpenTickets })
  }
}

// --- tools ----------------------------------------------------------------------------------

const tools = [
  {
    name: 'support:listTickets',
    title: 'List tickets',
    description: 'List support tickets filtered by status(es), priority, assignee (or unassigned), requester, tenant, order or tag, sorted by last update by default. Returns ticket summaries with total and nextCursor.',
    inputSchema: {
      type: 'object',
      properties: {
        status: { type: 'array', items: status, minItems: 1, uniqueItems: true },
        priority,
        assigneeId: agentId,
        unassigned: { type: 'boolean', description: 'Only tickets without an assignee.' },
        requesterId: userId,
        tenantId: { type: 'string', enum: ['t_acme', 't_globex'] },
        orderId: idProp('Order', 'ord_001'),
        tag: { type: 'string' },
        sort: { type: 'string', enum: ['-updatedAt', '-createdAt', 'createdAt', '-priority'], default: '-updatedAt' },
        ...paginationProps,
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(TicketSummary),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'pagination'],
    examples: [
      { description: 'Unassigned open tickets', input: { status: ['open'], unassigned: true } },
      { description: 'Urgent tickets of one agent', input: { assigneeId: 'agt_05', priority: 'urgent', sort: '-createdAt' } },
    ],
    handler: async ({ status, priority, assigneeId, unassigned, requesterId, tenantId, orderId, tag, sort = '-updatedAt', limit, cursor }, { store }) => {
      const tickets = store.tickets.filter((t) =>
        (!status || status.includes(t.status)) && (!priority || t.priority === priority) && (!assigneeId || t.assigneeId === assigneeId) &&
        (unassigned == null || (t.assigneeId === null) === unassigned) && (!requesterId || t.requesterId === requesterId) &&
        (!tenantId || t.tenantId === tenantId) && (!orderId || t.orderId === orderId) && (!tag || t.tags.includes(tag)))
      const sorters = {
        '-updatedAt': (a, b) => b.updatedAt.localeCompare(a.updatedAt),
        '-createdAt': (a, b) => b.createdAt.localeCompare(a.createdAt),
        createdAt: (a, b) => a.createdAt.localeCompare(b.createdAt),
        '-priority': (a, b) => PRIORITY_RANK[b.priority] - PRIORITY_RANK[a.priority] || b.createdAt.localeCompare(a.createdAt),
      }
      return paginate(tickets.sort(sorters[sort]).map(summary), { limit, cursor })
    },
  },
  {
    name: 'support:getTicket',
    title: 'Get a ticket',
    description: 'Fetch one ticket with its description, requester contact and comments (internal notes included unless includeInternal is false).',
    inputSchema: {
      type: 'object',
      properties: { ticketId, includeComments: { type: 'boolean', default: true }, includeInternal: { type: 'boolean', default: true } },
      required: ['ticketId'],
      additionalProperties: false,
    },
    outputSchema: Ticket,
    annotations: ANNOTATIONS.read,
    tags: ['read'],
    handler: async ({ ticketId, includeComments, includeInternal }, { store }) => full(getOrThrow(store.tickets, ticketId, 'Ticket'), { includeComments, includeInternal }),
  },
  {
    name: 'support:searchTickets',
    title: 'Search tickets',
    description: 'Full-text search (case-insensitive substring) over ticket subject, description, requester email, tags and comment bodies, optionally within one status. Returns matching ticket summaries, newest first.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 2, maxLength: 200 }, status, limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 } },
      required: ['query'],
      additionalProperties: false,
    },
    outputSchema: listOutput(TicketSummary),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'search'],
    handler: async ({ query, status, limit = 10 }, { store }) => {
      const hits = store.tickets
        .filter((t) => (!status || t.status === status) && matches(query, t.subject, t.description, t.requesterEmail, t.tags.join(' '), ...t.comments.map((c) => c.body)))
        .reverse()
      return { items: hits.slice(0, limit).map(summary), total: hits.length }
    },
  },
  {
    name: 'support:createTicket',
    title: 'Open a ticket',
    description: 'Open a support ticket for a user identified by id or email, optionally about one of their orders. Returns the ticket.',
    inputSchema: {
      type: 'object',
      properties: {
        requester: {
          description: 'Who the ticket is for: { userId } or { email } of an existing user.',
          oneOf: [
            { type: 'object', properties: { userId }, required: ['userId'], additionalProperties: false },
            { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'], additionalProperties: false },
          ],
        },
        subject: { type: 'string', minLength: 3, maxLength: 200 },
        description: { type: 'string', minLength: 1, maxLength: 5000 },
        priority: { ...priority, default: 'normal' },
        channel: { type: 'string', enum: CHANNELS, default: 'web' },
        orderId: { ...idProp('Order', 'ord_001'), description: 'Order the ticket is about; must belong to the requester.' },
        tags,
      },
      required: ['requester', 'subject', 'description'],
      additionalProperties: false,
    },
    outputSchema: Ticket,
    annotations: ANNOTATIONS.create,
    tags: ['write'],
    examples: [
      {
        description: 'A damaged-delivery ticket about an order',
        input: { requester: { email: 'ava.tanaka@acme.example.com' }, subject: 'Lamp arrived broken', description: 'The lamp shade was cracked on arrival.', priority: 'high', orderId: 'ord_115', tags: ['shipping', 'damaged'] },
      },
    ],
    handler: async ({ requester, subject, description, priority = 'normal', channel = 'web', orderId = null, tags = [] }, { store }) => {
      const user = requester.userId ? getOrThrow(store.users, requester.userId, 'User') : store.users.find((u) => u.email === requester.email.toLowerCase())
      if (!user) throw notFound('User', requester.email)
      if (orderId) {
        const order = getOrThrow(store.orders, orderId, 'Order')
        if (order.userId !== user.id) throw new ToolError('INVALID_INPUT', `Order ${orderId} belongs to ${order.userId}, not ${user.id}`)
      }
      const now = store.now()
      const ticket = {
        id: store.nextId('tkt'),
        tenantId: user.tenantId,
        requesterId: user.id,
        requesterName: user.name,
        requesterEmail: user.email,
        orderId,
        subject,
        description,
        status: 'open',
        priority,
        channel,
        assigneeId: null,
        tags: [...tags],
        escalationLevel: 0,
        mergedInto: null,
        satisfaction: null,
        comments: [],
        createdAt: now,
        updatedAt: now,
        firstResponseAt: null,
        solvedAt: null,
      }
      store.tickets.push(ticket)
      return full(ticket)
    },
  },
  {
    name: 'support:updateTicket',
    title: 'Update a ticket',
    description: 'Change subject, status, priority, tags (replaced) or linked order of a ticket that is not closed. Returns the ticket summary.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketId,
        subject: { type: 'string', minLength: 3, maxLength: 200 },
        status: { type: 'string', enum: ['open', 'pending', 'on_hold', 'solved'], description: 'Use support:closeTicket to close.' },
        priority,
        tags,
        orderId: nullable({ type: 'string', description: 'Order id, or null to unlink.' }),
      },
      required: ['ticketId'],
      minProperties: 2,
      additionalProperties: false,
    },
    outputSchema: TicketSummary,
    annotations: ANNOTATIONS.update,
    tags: ['write'],
    handler: async ({ ticketId, status, orderId, ...rest }, { store }) => {
      const ticket = editable(store, ticketId)
      if (orderId) getOrThrow(store.orders, orderId, 'Order')
      Object.assign(ticket, clone(rest), orderId !== undefined ? { orderId } : {})
      if (status) setStatus(store, ticket, status)
      ticket.updatedAt = store.now()
      return summary(ticket)
    },
  },
  {
    name: 'support:assignTicket',
    title: 'Assign a ticket',
    description: 'Assign a ticket to an agent, or unassign it with agentId null. CONFLICT if the agent is at capacity or the ticket is closed. Returns the ticket summary and previous assignee.',
    inputSchema: {
      type: 'object',
      properties: { ticketId, agentId: nullable({ type: 'string', description: 'Agent id such as agt_03, or null to unassign.' }) },
      required: ['ticketId', 'agentId'],
      additionalProperties: false,
    },
    outputSchema: record({ ticket: TicketSummary, previousAssigneeId: nullable({ type: 'string' }) }),
    annotations: ANNOTATIONS.update,
    tags: ['write', 'routing'],
    handler: async ({ ticketId, agentId }, { store }) => {
      const ticket = editable(store, ticketId)
      const previousAssigneeId = ticket.assigneeId
      if (agentId !== null && agentId !== previousAssigneeId) assertCapacity(store, getOrThrow(store.agents, agentId, 'Agent'))
      Object.assign(ticket, { assigneeId: agentId, updatedAt: store.now() })
      return { ticket: summary(ticket), previousAssigneeId }
    },
  },
  {
    name: 'support:escalateTicket',
    title: 'Escalate a ticket',
    description: 'Escalate an unresolved ticket to level 1 or 2: raises priority (level 2 means urgent), reassigns it to the least busy tier-2 agent and records an internal note. Returns the ticket summary.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketId,
        level: { type: 'integer', minimum: 1, maximum: 2, default: 1 },
        reason: { type: 'string', minLength: 5, maxLength: 1000 },
      },
      required: ['ticketId', 'reason'],
      additionalProperties: false,
    },
    outputSchema: TicketSummary,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'routing'],
    handler: async ({ ticketId, level = 1, reason }, { store }) => {
      const ticket = editable(store, ticketId)
      if (RESOLVED.includes(ticket.status)) throw new ToolError('CONFLICT', `Ticket ${ticketId} is ${ticket.status}; reopen it before escalating`)
      if (level <= ticket.escalationLevel) throw new ToolError('CONFLICT', `Ticket ${ticketId} is already at escalation level ${ticket.escalationLevel}`)
      const agent = store.agents
        .filter((a) => a.team === 'tier2' && a.status !== 'offline')
        .sort((a, b) => openCount(store, a.id) - openCount(store, b.id))[0]
      const minimum = level === 2 ? 'urgent' : 'high'
      Object.assign(ticket, { escalationLevel: level, priority: PRIORITY_RANK[ticket.priority] < PRIORITY_RANK[minimum] ? minimum : ticket.priority, ...(agent ? { assigneeId: agent.id } : {}) })
      if (!ticket.tags.includes('escalated')) ticket.tags.push('escalated')
      addComment(store, ticket, { authorType: 'system', authorId: null, body: `Escalated to level ${level}: ${reason}`, isPublic: false })
      return summary(ticket)
    },
  },
  {
    name: 'support:closeTicket',
    title: 'Close a ticket',
    description: 'Close a ticket with a resolution and an optional public closing comment; CONFLICT if already closed. Returns the ticket summary.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketId,
        resolution: { type: 'string', enum: ['solved', 'duplicate', 'wont_fix', 'no_response'], default: 'solved' },
        comment: { type: 'string', maxLength: 5000, description: 'Public message to the requester.' },
      },
      required: ['ticketId'],
      additionalProperties: false,
    },
    outputSchema: TicketSummary,
    annotations: ANNOTATIONS.action,
    tags: ['write'],
    handler: async ({ ticketId, resolution = 'solved', comment }, { store }) => {
      const ticket = editable(store, ticketId)
      if (comment) addComment(store, ticket, { authorType: 'agent', authorId: ticket.assigneeId, body: comment })
      if (!ticket.tags.includes(`resolution:${resolution}`)) ticket.tags.push(`resolution:${resolution}`)
      setStatus(store, ticket, 'closed')
      return summary(ticket)
    },
  },
  {
    name: 'support:reopenTicket',
    title: 'Reopen a ticket',
    description: 'Reopen a solved or closed ticket (status becomes open, satisfaction rating is cleared); CONFLICT otherwise. Returns the ticket summary.',
    inputSchema: { type: 'object', properties: { ticketId, reason: { type: 'string', maxLength: 1000 } }, required: ['ticketId'], additionalProperties: false },
    outputSchema: TicketSummary,
    annotations: ANNOTATIONS.action,
    tags: ['write'],
    handler: async ({ ticketId, reason }, { store }) => {
      const ticket = getOrThrow(store.tickets, ticketId, 'Ticket')
      if (!RESOLVED.includes(ticket.status)) throw new ToolError('CONFLICT', `Ticket ${ticketId} is ${ticket.status}, not solved or closed`)
      if (ticket.mergedInto) throw new ToolError('CONFLICT', `Ticket ${ticketId} was merged into ${ticket.mergedInto}`)
      if (reason) addComment(store, ticket, { authorType: 'system', authorId: null, body: `Reopened: ${reason}`, isPublic: false })
      ticket.satisfaction = null
      setStatus(store, ticket, 'open')
      return summary(ticket)
    },
  },
  {
    name: 'support:addComment',
    title: 'Comment on a ticket',
    description: 'Add a public reply or internal note to a ticket, with optional attachments. The first public agent reply sets firstResponseAt; a requester reply reopens pending or solved tickets. Returns the comment.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketId,
        body: { type: 'string', minLength: 1, maxLength: 10000 },
        authorType: { type: 'string', enum: ['agent', 'requester'], default: 'agent' },
        authorId: { type: 'string', description: 'Agent or user id; defaults to the assignee (agent) or the requester.' },
        public: { type: 'boolean', default: true, description: 'false makes an internal note.' },
        attachments: { type: 'array', items: Attachment, maxItems: 5 },
      },
      required: ['ticketId', 'body'],
      additionalProperties: false,
    },
    outputSchema: Comment,
    annotations: ANNOTATIONS.create,
    tags: ['write', 'comments'],
    examples: [
      { description: 'Public agent reply', input: { ticketId: 'tkt_058', body: 'We are on it and will update you within the hour.' } },
      {
        description: 'Internal note with a log file',
        input: { ticketId: 'tkt_058', body: 'Attaching proxy logs.', public: false, attachments: [{ filename: 'proxy.log', url: 'https://files.example.com/proxy.log', sizeBytes: 20480 }] },
      },
    ],
    handler: async ({ ticketId, body, authorType = 'agent', authorId, public: isPublic = true, attachments = [] }, { store }) => {
      const ticket = editable(store, ticketId)
      if (authorType === 'requester' && !isPublic) throw new ToolError('INVALID_INPUT', 'Requesters cannot write internal notes')
      const author = authorId ?? (authorType === 'agent' ? ticket.assigneeId : ticket.requesterId)
      if (authorId && authorType === 'agent') getOrThrow(store.agents, authorId, 'Agent')
      const comment = addComment(store, ticket, { authorType, authorId: author, body, isPublic, attachments })
      if (authorType === 'requester' && ['pending', 'solved'].includes(ticket.status)) setStatus(store, ticket, 'open')
      return clone(comment)
    },
  },
  {
    name: 'support:listComments',
    title: 'List ticket comments',
    description: 'List the comments of a ticket oldest first with offset pagination, optionally public ones only. Returns comments, total and nextOffset.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketId,
        publicOnly: { type: 'boolean', default: false },
        limit: paginationProps.limit,
        offset: { type: 'integer', minimum: 0, default: 0 },
      },
      required: ['ticketId'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { items: { type: 'array', items: Comment }, total: { type: 'integer', minimum: 0 }, nextOffset: { type: 'integer', minimum: 1 } },
      required: ['items', 'total'],
      additionalProperties: false,
    },
    annotations: ANNOTATIONS.read,
    tags: ['read', 'comments', 'pagination'],
    handler: async ({ ticketId, publicOnly = false, limit, offset }, { store }) =>
      paginateOffset(getOrThrow(store.tickets, ticketId, 'Ticket').comments.filter((c) => !publicOnly || c.public), { limit, offset }),
  },
  {
    name: 'support:mergeTickets',
    title: 'Merge tickets',
    description: 'Merge duplicate tickets of the same tenant into a target ticket: their comments are copied to the target and they are closed with mergedInto set. Returns the target summary and merged ids.',
    inputSchema: {
      type: 'object',
      properties: {
        targetTicketId: ticketId,
        sourceTicketIds: { type: 'array', items: ticketId, minItems: 1, maxItems: 10, uniqueItems: true },
      },
      required: ['targetTicketId', 'sourceTicketIds'],
      additionalProperties: false,
    },
    outputSchema: record({ target: TicketSummary, merged: { type: 'array', items: { type: 'string' }, minItems: 1 } }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ targetTicketId, sourceTicketIds }, { store }) => {
      const target = editable(store, targetTicketId)
      const sources = sourceTicketIds.map((id) => {
        if (id === targetTicketId) throw new ToolError('INVALID_INPUT', 'A ticket cannot be merged into itself')
        const source = editable(store, id)
        if (source.tenantId !== target.tenantId) throw new ToolError('CONFLICT', `Ticket ${id} belongs to another tenant`)
        return source
      })
      for (const source of sources) {
        for (const c of source.comments) target.comments.push({ ...clone(c), id: store.nextId('cmt'), ticketId: target.id })
        addComment(store, target, { authorType: 'system', authorId: null, body: `Merged ${source.id}: ${source.subject}`, isPublic: false })
        addComment(store, source, { authorType: 'system', authorId: null, body: `Merged into ${target.id}`, isPublic: false })
        source.tags = [...new Set([...source.tags, 'merged'])]
        source.mergedInto = target.id
        setStatus(store, source, 'closed')
        target.tags = [...new Set([...target.tags, ...source.tags.filter((t) => t !== 'merged')])]
      }
      return { target: summary(target), merged: sources.map((s) => s.id) }
    },
  },
  {
    name: 'support:listAgents',
    title: 'List agents',
    description: 'List support agents, optionally by team or availability, with their current open ticket load.',
    inputSchema: {
      type: 'object',
      properties: { team: { type: 'string', enum: TEAMS }, status: { type: 'string', enum: AGENT_STATUSES } },
      additionalProperties: false,
    },
    outputSchema: listOutput(Agent),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'agents'],
    handler: async ({ team, status }, { store }) => {
      const agents = store.agents.filter((a) => (!team || a.team === team) && (!status || a.status === status))
      return { items: agents.map((a) => agentView(store, a)), total: agents.length }
    },
  },
  {
    name: 'support:getAgent',
    title: 'Get an agent',
    description: 'Fetch a support agent with the summaries of the unresolved tickets assigned to them.',
    inputSchema: { type: 'object', properties: { agentId }, required: ['agentId'], additionalProperties: false },
    outputSchema: record({ agent: Agent, assigned: { type: 'array', items: TicketSummary } }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'agents'],
    handler: async ({ agentId }, { store }) => {
      const agent = getOrThrow(store.agents, agentId, 'Agent')
      return { agent: agentView(store, agent), assigned: store.tickets.filter((t) => t.assigneeId === agentId && !RESOLVED.includes(t.status)).map(summary) }
    },
  },
  {
    name: 'support:setAgentStatus',
    title: 'Set agent availability',
    description: 'Set an agent online, away or offline (offline agents are skipped by escalation routing). Returns the agent.',
    inputSchema: { type: 'object', properties: { agentId, status: { type: 'string', enum: AGENT_STATUSES } }, required: ['agentId', 'status'], additionalProperties: false },
    outputSchema: Agent,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'agents'],
    handler: async ({ agentId, status }, { store }) => {
      const agent = getOrThrow(store.agents, agentId, 'Agent')
      agent.status = status
      return agentView(store, agent)
    },
  },
  {
    name: 'support:listMacros',
    title: 'List macros',
    description: 'List canned responses (macros) and the status, priority, tag and comment changes each applies.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputSchema: listOutput(Macro),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'macros'],
    handler: async (_input, { store }) => ({ items: clone(store.macros), total: store.macros.length }),
  },
  {
    name: 'support:applyMacro',
    title: 'Apply a macro',
    description: 'Apply a macro to a ticket: posts its comment as the assignee and applies its status, priority and tags. Returns the updated ticket with comments.',
    inputSchema: { type: 'object', properties: { ticketId, macroId: idProp('Macro', 'mac_01') }, required: ['ticketId', 'macroId'], additionalProperties: false },
    outputSchema: Ticket,
    annotations: ANNOTATIONS.action,
    tags: ['write', 'macros'],
    handler: async ({ ticketId, macroId }, { store }) => {
      const ticket = editable(store, ticketId)
      const { actions } = getOrThrow(store.macros, macroId, 'Macro')
      if (actions.comment) addComment(store, ticket, { authorType: 'agent', authorId: ticket.assigneeId, body: actions.comment })
      if (actions.priority) ticket.priority = actions.priority
      if (actions.addTags) ticket.tags = [...new Set([...ticket.tags, ...actions.addTags])]
      if (actions.status) setStatus(store, ticket, actions.status)
      return full(ticket)
    },
  },
  {
    name: 'support:rateTicket',
    title: 'Record a satisfaction rating',
    description: 'Store the requester\'s CSAT score (1–5) and optional comment on a solved or closed ticket, replacing any earlier rating. Returns the ticket summary.',
    inputSchema: {
      type: 'object',
      properties: { ticketId, score: { type: 'integer', minimum: 1, maximum: 5 }, comment: { type: 'string', maxLength: 1000 } },
      required: ['ticketId', 'score'],
      additionalProperties: false,
    },
    outputSchema: TicketSummary,
    annotations: ANNOTATIONS.update,
    tags: ['write', 'csat'],
    handler: async ({ ticketId, score, comment = null }, { store }) => {
      const ticket = getOrThrow(store.tickets, ticketId, 'Ticket')
      if (!RESOLVED.includes(ticket.status)) throw new ToolError('CONFLICT', `Ticket ${ticketId} is ${ticket.status}; only solved or closed tickets can be rated`)
      ticket.satisfaction = { score, comment, ratedAt: store.now() }
      return summary(ticket)
    },
  },
  {
    name: 'support:getStatus',
    title: 'Service status',
    description: 'Current health of the service: overall status, per-component status and active incidents. Optionally only one component.',
    inputSchema: {
      type: 'object',
      properties: { component: { type: 'string', enum: ['api', 'dashboard', 'checkout', 'email', 'webhooks', 'search'] } },
      additionalProperties: false,
    },
    outputSchema: record({
      status: { type: 'string', enum: COMPONENT_STATUSES, description: 'Worst status across the returned components.' },
      components: { type: 'array', items: record({ id: { type: 'string' }, name: { type: 'string' }, status: { type: 'string', enum: COMPONENT_STATUSES } }) },
      activeIncidents: {
        type: 'array',
        items: record({
          id: { type: 'string' },
          title: { type: 'string' },
          impact: { type: 'string', enum: ['minor', 'major', 'critical'] },
          status: { type: 'string', enum: ['investigating', 'identified', 'monitoring'] },
          componentIds: { type: 'array', items: { type: 'string' } },
          startedAt: dateTime,
          url: { type: 'string', format: 'uri' },
        }),
      },
      updatedAt: dateTime,
    }),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'status'],
    codecall: { visibleInListTools: true },
    handler: async ({ component }, { store }) => {
      const components = store.statusComponents.filter((c) => !component || c.id === component)
      const status = COMPONENT_STATUSES[Math.max(0, ...components.map((c) => COMPONENT_STATUSES.indexOf(c.status)))]
      const degraded = new Set(components.filter((c) => c.status !== 'operational').map((c) => c.id))
      const activeIncidents = degraded.size
        ? [{ id: 'inc_2025_1231', title: 'Delayed email notifications', impact: 'minor', status: 'monitoring', componentIds: [...degraded], startedAt: '2025-12-31T21:40:00.000Z', url: 'https://status.example.com/incidents/inc_2025_1231' }]
        : []
      return { status, components: clone(components), activeIncidents, updatedAt: BASE_DATE }
    },
  },
  {
    name: 'support:bulkUpdateTickets',
    title: 'Update many tickets',
    description: 'Apply the same status, priority, assignee and/or added tags to up to 50 tickets. Closed and unknown tickets are skipped with a reason. Returns updated ids and skipped entries.',
    inputSchema: {
      type: 'object',
      properties: {
        ticketIds: { type: 'array', items: ticketId, minItems: 1, maxItems: 50, uniqueItems: true },
        set: {
          type: 'object',
          properties: {
            status: { type: 'string', enum: ['open', 'pending', 'on_hold', 'solved'] },
            priority,
            assigneeId: nullable({ type: 'string' }),
            addTags: tags,
          },
          minProperties: 1,
          additionalProperties: false,
        },
      },
      required: ['ticketIds', 'set'],
      additionalProperties: false,
    },
    outputSchema: record({
      updated: { type: 'array', items: { type: 'string' } },
      skipped: { type: 'array', items: record({ ticketId: { type: 'string' }, reason: { type: 'string', enum: ['not_found', 'closed'] } }) },
    }),
    annotations: ANNOTATIONS.update,
    tags: ['write', 'bulk'],
    handler: async ({ ticketIds, set }, { store }) => {
      if (set.assigneeId) getOrThrow(store.agents, set.assigneeId, 'Agent')
      const updated = []
      const skipped = []
      for (const id of ticketIds) {
        const ticket = store.tickets.find((t) => t.id === id)
        if (!ticket) skipped.push({ ticketId: id, reason: 'not_found' })
        else if (ticket.status === 'closed') skipped.push({ ticketId: id, reason: 'closed' })
        else {
          if (set.priority) ticket.priority = set.priority
          if (set.assigneeId !== undefined) ticket.assigneeId = set.assigneeId
          if (set.addTags) ticket.tags = [...new Set([...ticket.tags, ...set.addTags])]
          if (set.status) setStatus(store, ticket, set.status)
          ticket.updatedAt = store.now()
          updated.push(id)
        }
      }
      return { updated, skipped }
    },
  },
  {
    name: 'support:deleteTicket',
    title: 'Delete a ticket',
    description: 'Permanently delete a ticket and its comments (e.g. spam). Returns the deleted id.',
    inputSchema: { type: 'object', properties: { ticketId, reason: { type: 'string', enum: ['spam', 'duplicate', 'gdpr_request', 'test'] } }, required: ['ticketId'], additionalProperties: false },
    outputSchema: record({ deleted: { type: 'boolean', const: true }, ticketId }),
    annotations: ANNOTATIONS.destructive,
    tags: ['write', 'destructive'],
    handler: async ({ ticketId }, { store }) => {
      const ticket = getOrThrow(store.tickets, ticketId, 'Ticket')
      store.tickets.splice(store.tickets.indexOf(ticket), 1)
      return { deleted: true, ticketId }
    },
  },
  {
    name: 'support:listSlaBreaches',
    title: 'List SLA breaches',
    description: 'List tickets whose first response came (or is still missing) after the SLA target for their priority (urgent 1h, high 4h, normal 8h, low 24h), worst first. Returns per-ticket minutes over target.',
    inputSchema: {
      type: 'object',
      properties: {
        priority,
        includeResolved: { type: 'boolean', default: false, description: 'Also report solved and closed tickets.' },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      },
      additionalProperties: false,
    },
    outputSchema: listOutput(
      record({
        ticketId,
        subject: { type: 'string' },
        priority,
        status,
        assigneeId: nullable({ type: 'string' }),
        createdAt: dateTime,
        firstResponseAt: nullable(dateTime),
        targetMinutes: { type: 'integer', minimum: 1 },
        minutesOverTarget: { type: 'integer', minimum: 1 },
      }),
    ),
    annotations: ANNOTATIONS.read,
    tags: ['read', 'sla'],
    handler: async ({ priority, includeResolved = false, limit = 20 }, { store }) => {
      const now = Date.parse(BASE_DATE)
      const breaches = store.tickets
        .filter((t) => (!priority || t.priority === priority) && (includeResolved || !RESOLVED.includes(t.status)))
        .map((t) => {
          const responded = t.firstResponseAt ? Date.parse(t.firstResponseAt) : Math.max(now, Date.parse(t.createdAt))
          const minutes = Math.floor((responded - Date.parse(t.createdAt)) / 60_000)
          return { ticketId: t.id, subject: t.subject, priority: t.priority, status: t.status, assigneeId: t.assigneeId, createdAt: t.createdAt, firstResponseAt: t.firstResponseAt, targetMinutes: SLA_MINUTES[t.priority], minutesOverTarget: minutes - SLA_MINUTES[t.priority] }
        })
        .filter((b) => b.minutesOverTarget > 0)
        .sort((a, b) => b.minutesOverTarget - a.minutesOverTarget)
      return { items: breaches.slice(0, limit), total: breaches.length }
    },
  },
]

export default { appId: 'support', tools: defineTools(tools) }
