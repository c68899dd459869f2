// Shared test helpers: the built addon, temp dirs, and the shared workload generator.
import { createRequire } from 'node:module'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'

const require = createRequire(import.meta.url)
export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const addon = require(join(root, 'index.js'))
export const { LcmEngine } = addon

export function tempDir(prefix = 'lcm-test-') {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** The seeded workload generator shared by every implementation (../shared/bench). */
export function workloadScript() {
  const candidates = [join(root, '..', 'shared', 'bench', 'gen-workload.mjs'), join(root, '..', '..', 'shared', 'bench', 'gen-workload.mjs'), join(root, 'bench', 'gen-workload.mjs')]
  const found = candidates.find((p) => existsSync(p))
  if (!found) throw new Error('gen-workload.mjs not found beside the checkout (../shared/bench)')
  return found
}

/** Generates `n` AgentMessages with the shared generator; returns { messages, needles }. */
export function workload(n, seed = 1, extra = []) {
  const dir = tempDir('lcm-wl-')
  const out = join(dir, 'conv.jsonl')
  const needles = join(dir, 'needles.jsonl')
  execFileSync(process.execPath, [workloadScript(), '--messages', String(n), '--seed', String(seed), '--out', out, '--needles', needles, ...extra])
  const messages = readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const needleRows = readFileSync(needles, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  return { messages, needles: needleRows }
}

/** Splits messages into turns: each user message starts a new turn. */
export function turns(messages) {
  const out = []
  for (const m of messages) {
    if (m.role === 'user' || out.length === 0) out.push([])
    out[out.length - 1].push(m)
  }
  return out
}

/** Expects a promise to reject with the given LCM code; returns the error. */
export async function rejectsWithCode(promise, code) {
  try {
    await promise
  } catch (e) {
    if (e.code !== code) throw new Error(`expected code ${code}, got ${e.code}: ${e.message}`)
    return e
  }
  throw new Error(`expected rejection with ${code}, but it resolved`)
}
