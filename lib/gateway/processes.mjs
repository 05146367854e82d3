// Process trees, so that closing an upstream leaves no process behind: `npx -y server` is npm
// running node, a wrapper script is a shell running a binary, and killing the child the SDK
// spawned does not always end its children. Linux reads /proc; elsewhere these find nothing and
// the SDK's own close (stdin end, SIGTERM, SIGKILL) is what there is.
import { readdirSync, readFileSync } from 'node:fs'

/** `{ pid, ppid, start }` of a process, or null (gone, or not Linux). */
function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { pid, ppid: Number(fields[1]), start: fields[19] }
  } catch {
    return null
  }
}

/** `pid` and all its descendants, each with its start time (so a reused pid is never killed). */
export function processTree(pid) {
  const root = stat(pid)
  if (!root) return []
  let entries
  try {
    entries = readdirSync('/proc')
  } catch {
    return [root]
  }
  const children = new Map()
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    const s = stat(Number(name))
    if (!s) continue
    if (!children.has(s.ppid)) children.set(s.ppid, [])
    children.get(s.ppid).push(s)
  }
  const out = [root]
  for (let i = 0; i < out.length && out.length < 10_000; i++) out.push(...(children.get(out[i].pid) ?? []))
  return out
}

/** Whether the process `p` (from `processTree`) still runs (a zombie counts as gone). */
export function alive(p) {
  const s = stat(p.pid)
  if (!s || s.start !== p.start) return false
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${p.pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

/** Waits up to `graceMs` for the processes to end by themselves, then SIGKILLs the rest. */
export async function killTree(tree, graceMs = 500) {
  const deadline = Date.now() + graceMs
  while (tree.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  for (const p of tree) {
    if (!alive(p)) continue
    try {
      process.kill(p.pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
}
