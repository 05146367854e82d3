// Realistic AgentScript plans of a given size, built from the kind of code models write: tool calls,
// array pipelines, object literals, template strings, try/catch, small helpers.

const blocks = [
  (i) => `const users${i} = await callTool('users:list', { limit: 50, status: 'active', page: ${i} });
const admins${i} = users${i}.items.filter((u) => u.role === 'admin' && !u.disabled).map((u) => ({ id: u.id, email: u.email }));`,
  (i) => `const invoices${i} = await callTool('billing:listInvoices', { customerIds: admins${i}.map((a) => a.id), since: '2026-01-01' });
const total${i} = invoices${i}.reduce((sum, inv) => sum + (inv.amountCents ?? 0), 0);`,
  (i) => `let summary${i};
try {
  summary${i} = await callTool('reports:summarize', { title: \`Admins batch ${i}\`, count: admins${i}.length, total: total${i} / 100 });
} catch (err) {
  summary${i} = { error: err.message, code: err.code ?? 'UNKNOWN' };
}`,
  (i) => `const byDomain${i} = admins${i}.reduce((acc, a) => {
  const domain = a.email.split('@')[1] ?? 'unknown';
  acc[domain] = (acc[domain] || 0) + 1;
  return acc;
}, {});
const top${i} = Object.entries(byDomain${i}).sort((x, y) => y[1] - x[1]).slice(0, 5);`,
  (i) => `const details${i} = await __safe_parallel(top${i}.map(([domain]) => () => callTool('crm:getAccount', { domain })), { maxConcurrency: 5 });
mcpLog('info', 'loaded accounts', { batch: ${i}, count: details${i}.length });`,
]

/** A script of about `bytes` bytes that validates under the `secure` preset. */
export function realisticScript(bytes) {
  let out = ''
  let i = 0
  while (out.length < bytes - 80) {
    out += blocks[i % blocks.length](Math.floor(i / blocks.length)) + '\n'
    i++
  }
  return out + `return { ok: true, batches: ${Math.floor(i / blocks.length)} };\n`
}
