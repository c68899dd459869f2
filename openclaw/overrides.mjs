// `contextThresholdOverrides`: per-model, per-window and per-session rules for the
// compaction threshold (and optionally the fresh tail and leaf chunk size), as the
// reference plugin has them. A rule applies when every matcher it has matches; of
// the rules that apply the most specific wins — a `model` matcher outweighs a
// `sessionPattern`, which outweighs a window bound — and ties go to array order.

import { globToRegExp } from './sessions.mjs'

/** Weights of the matchers: any model rule beats any rule without one, and so on. */
const MODEL = 4
const SESSION = 2
const WINDOW = 1

/** The JSON schema of one rule (the manifest's `configSchema`). */
export const RULE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['contextThreshold'],
  properties: {
    name: { type: 'string', description: 'A label for the rule (shown in warnings and /lcm status).' },
    match: {
      type: 'object',
      additionalProperties: false,
      properties: {
        model: { type: 'string', description: 'Model id or provider/model; * matches any run of characters.' },
        modelContextWindowMin: { type: 'integer', minimum: 1, description: 'Smallest model context window, in tokens.' },
        modelContextWindowMax: { type: 'integer', minimum: 1, description: 'Largest model context window, in tokens.' },
        sessionPattern: { type: 'string', description: 'Session-key glob (* within a :-segment, ** across).' },
      },
    },
    contextThreshold: { type: 'number', exclusiveMinimum: 0, maximum: 1, description: 'The threshold for matching calls.' },
    freshTailCount: { type: 'integer', minimum: 1, description: 'The fresh tail for matching calls.' },
    leafChunkTokens: { type: 'integer', minimum: 1, description: 'The leaf chunk size for matching calls.' },
  },
}

/** The TypeScript type of the rule list (config.d.mts). */
export const RULES_TS_TYPE =
  'Array<{ name?: string; match?: { model?: string; modelContextWindowMin?: number; modelContextWindowMax?: number; sessionPattern?: string }; contextThreshold: number; freshTailCount?: number; leafChunkTokens?: number }>'

const isInt = (n, min) => Number.isInteger(n) && n >= min

/**
 * Checks a rule list from config; returns the valid rules (compiled) and a
 * warning per dropped rule. Not an array: `undefined` (the caller warns).
 */
export function parseRules(raw) {
  if (!Array.isArray(raw)) return undefined
  const rules = []
  const warnings = []
  raw.forEach((r, i) => {
    const label = `contextThresholdOverrides[${i}]${r && typeof r.name === 'string' ? ` (${r.name})` : ''}`
    const problem = ruleProblem(r)
    if (problem) {
      warnings.push(`config ${label}: ${problem}, rule ignored`)
      return
    }
    const m = r.match ?? {}
    rules.push({
      index: i,
      name: r.name,
      match: m,
      modelRe: typeof m.model === 'string' ? new RegExp(`^${m.model.trim().split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i') : undefined,
      sessionRe: typeof m.sessionPattern === 'string' ? globToRegExp(m.sessionPattern.trim()) : undefined,
      weight: (m.model !== undefined ? MODEL : 0) + (m.sessionPattern !== undefined ? SESSION : 0) + (m.modelContextWindowMin !== undefined || m.modelContextWindowMax !== undefined ? WINDOW : 0),
      contextThreshold: r.contextThreshold,
      freshTailCount: r.freshTailCount,
      leafChunkTokens: r.leafChunkTokens,
    })
  })
  return { value: rules, warnings }
}

/** Why a rule is not valid (null when it is). */
function ruleProblem(r) {
  if (!r || typeof r !== 'object' || Array.isArray(r)) return 'not an object'
  for (const k of Object.keys(r)) if (!(k in RULE_SCHEMA.properties)) return `unknown key ${k}`
  if (typeof r.contextThreshold !== 'number' || !(r.contextThreshold > 0 && r.contextThreshold <= 1)) return 'contextThreshold must be a number above 0, at most 1'
  if (r.freshTailCount !== undefined && !isInt(r.freshTailCount, 1)) return 'freshTailCount must be an integer of at least 1'
  if (r.leafChunkTokens !== undefined && !isInt(r.leafChunkTokens, 1)) return 'leafChunkTokens must be an integer of at least 1'
  if (r.name !== undefined && typeof r.name !== 'string') return 'name must be a string'
  const m = r.match
  if (m === undefined) return null
  if (!m || typeof m !== 'object' || Array.isArray(m)) return 'match must be an object'
  for (const k of Object.keys(m)) if (!(k in RULE_SCHEMA.properties.match.properties)) return `unknown matcher ${k}`
  for (const k of ['model', 'sessionPattern']) if (m[k] !== undefined && typeof m[k] !== 'string') return `match.${k} must be a string`
  for (const k of ['modelContextWindowMin', 'modelContextWindowMax']) if (m[k] !== undefined && !isInt(m[k], 1)) return `match.${k} must be a positive integer`
  return null
}

/**
 * The call's model and window, from what OpenClaw passes (`model`,
 * `runtimeContext.{provider, modelId, modelContextWindow}`).
 */
export function callModel(params) {
  const rc = params?.runtimeContext ?? {}
  const provider = typeof rc.provider === 'string' ? rc.provider : typeof params?.provider === 'string' ? params.provider : undefined
  const modelId = typeof rc.modelId === 'string' ? rc.modelId : typeof params?.model === 'string' ? params.model : typeof params?.model?.id === 'string' ? params.model.id : undefined
  const window = [rc.modelContextWindow, params?.modelContextWindow, params?.model?.contextWindow].find((n) => Number.isFinite(n) && n > 0)
  return { provider, modelId, window }
}

/** Whether every matcher of `rule` matches the call. */
function applies(rule, { sessionKey, provider, modelId, window }) {
  const m = rule.match
  if (rule.modelRe) {
    const names = modelId ? [modelId, provider ? `${provider}/${modelId}` : null].filter(Boolean) : []
    if (!names.some((n) => rule.modelRe.test(n))) return false
  }
  if (rule.sessionRe && !(typeof sessionKey === 'string' && rule.sessionRe.test(sessionKey.trim()))) return false
  if (m.modelContextWindowMin !== undefined && !(window >= m.modelContextWindowMin)) return false
  if (m.modelContextWindowMax !== undefined && !(window <= m.modelContextWindowMax)) return false
  return true
}

/**
 * The rule for a call: the most specific that applies (model > sessionPattern >
 * window), the first in the list on a tie; `undefined` when none applies.
 * @param {Array<object>} rules parsed rules
 * @param {{ sessionKey?: string, provider?: string, modelId?: string, window?: number }} call
 */
export function selectRule(rules, call) {
  let best
  for (const r of rules ?? []) if (applies(r, call) && (!best || r.weight > best.weight)) best = r
  return best
}

/** The engine's per-call `overrides` for a rule (undefined without one). */
export function overridesOf(rule) {
  if (!rule) return undefined
  const o = { contextThreshold: rule.contextThreshold }
  if (rule.freshTailCount !== undefined) o.freshTailCount = rule.freshTailCount
  if (rule.leafChunkTokens !== undefined) o.leafChunkTokens = rule.leafChunkTokens
  return o
}
