// A lossless-claw configuration carried over as it is: every key of the
// reference's config table (research anchor-core.md §7.2) validates against the
// manifest's schema with a JSON-schema validator, resolves with only the
// documented warnings, and the keys that mean something here take effect.
import { describe, it, expect } from 'vitest'
import { readFileSync, existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { root } from './helpers.mjs'
import { candidateDirs } from './openclaw-installed.mjs'
import { CONFIG_KEYS, resolveConfig, closestKey } from '../openclaw/config.mjs'
import { parseRules, selectRule, overridesOf, callModel } from '../openclaw/overrides.mjs'
import { expansionModelRef } from '../openclaw/tools.mjs'
import { largeFileModelRef } from '../openclaw/shared.mjs'
import { createContextEngine } from '../openclaw/index.mjs'
import { freshConfig, conversation, fakeLlm } from './openclaw-fixture.mjs'
import { FULL_REFERENCE_CONFIG } from './reference-config.mjs'

const manifest = JSON.parse(readFileSync(join(root, 'openclaw.plugin.json'), 'utf8'))

const FULL = FULL_REFERENCE_CONFIG

/** The rows whose keys are accepted but have no effect here, with their warnings. */
const noEffectWarnings = (config) =>
  CONFIG_KEYS.filter((r) => config[r.key] !== undefined).flatMap((r) =>
    r.noEffect
      ? [`config ${r.key}: accepted for lossless-claw compatibility, no effect in lcm-native (${r.noEffect})`]
      : (r.properties ?? [])
          .filter((p) => p.noEffect && config[r.key][p.key] !== undefined)
          .map((p) => `config ${r.key}.${p.key}: accepted for lossless-claw compatibility, no effect in lcm-native (${p.noEffect})`),
  )

/** ajv: this package's dev dependency, else the copy OpenClaw itself ships. */
function loadAjv() {
  const bases = [join(root, 'package.json'), ...candidateDirs().map((d) => join(d, 'package.json'))]
  for (const base of bases) {
    if (!existsSync(base) && base !== join(root, 'package.json')) continue
    try {
      const Ajv = createRequire(base)('ajv')
      return Ajv.default ?? Ajv
    } catch {
      /* not there */
    }
  }
  throw new Error('ajv not found: it is a dev dependency of the schema tests (npm i -D ajv)')
}

describe('a lossless-claw configuration', () => {
  const Ajv = loadAjv()
  const validate = new Ajv({ strict: true, allErrors: true }).compile(manifest.configSchema)

  it('every key of the reference table is in CONFIG_KEYS', () => {
    for (const k of Object.keys(FULL_REFERENCE_CONFIG)) expect(CONFIG_KEYS.some((r) => r.key === k), k).toBe(true)
    // Every row of the reference's table (research anchor-core.md §7.2), aliases apart.
    expect(Object.keys(FULL_REFERENCE_CONFIG)).toHaveLength(58)
  })

  it('the full example validates against openclaw.plugin.json with a JSON-schema validator', () => {
    const ok = validate(FULL)
    expect(validate.errors ?? []).toEqual([])
    expect(ok).toBe(true)
    // Aliases too.
    const { databasePath, sweepMaxDepth, largeFileThresholdTokens, ...rest } = FULL
    expect(validate({ ...rest, dbPath: databasePath, incrementalMaxDepth: sweepMaxDepth, largeFileTokenThreshold: largeFileThresholdTokens })).toBe(true)
  })

  it('the schema still refuses typos, bad values and unknown nested keys', () => {
    const refused = (config) => {
      expect(validate(config), JSON.stringify(config)).toBe(false)
      return validate.errors.map((e) => `${e.instancePath} ${e.message}`).join('; ')
    }
    expect(refused({ contextTreshold: 0.7 })).toMatch(/additional properties/)
    expect(refused({ hostFallbackMode: 'crash' })).toMatch(/allowed values/)
    expect(refused({ autoRotateSessionFiles: { enabeld: true } })).toMatch(/additional properties/)
    expect(refused({ contextThresholdOverrides: [{ match: { model: 'x' } }] })).toMatch(/contextThreshold/)
    expect(refused({ contextThresholdOverrides: [{ match: { modle: 'x' }, contextThreshold: 0.5 }] })).toMatch(/additional properties/)
    expect(refused({ contextThresholdOverrides: [{ contextThreshold: 0 }] })).toMatch(/> 0/)
    expect(refused({ sweepMaxDepth: -2 })).toMatch(/>= -1/)
  })

  it('resolves with only the documented warnings, one per key that has no effect here', () => {
    const r = resolveConfig(FULL, {})
    const expected = noEffectWarnings(FULL)
    expect(r.warnings).toEqual(expected)
    // The keys README's "Switching from lossless-claw" lists as having no effect here.
    expect(expected.map((w) => w.split(':')[0].slice('config '.length)).sort()).toEqual(
      ['hostFallbackMode', 'promptAwareEviction', 'stubLargeToolPayloads', 'transcriptGcEnabled', 'proactiveThresholdCompactionMode', 'autoRotateSessionFiles', 'independentLogFile', 'replayFloodThresholdExternal', 'replayFloodThresholdInternal', 'cacheAwareCompaction.maxColdCacheCatchupPasses', 'cacheAwareCompaction.hotCachePressureFactor', 'cacheAwareCompaction.hotCacheBudgetHeadroomRatio', 'cacheAwareCompaction.coldCacheObservationThreshold'].sort(),
    )
    // Keys that mean something here reach the engine options.
    expect(r.engineOptions).toMatchObject({
      incrementalMaxDepth: 1,
      summaryPrefixTargetTokens: 12000,
      compactUntilUnderDeadlineMs: 300000,
      maxSweepIterations: 12,
      sweepDeadlineMs: 120000,
      summaryProvider: 'anthropic',
      summaryModel: 'claude-haiku-4-5',
      largeFileSummaryModel: 'claude-haiku-4-5',
      largeFileSummaryProvider: 'anthropic',
    })
    expect(largeFileModelRef(r)).toBe('anthropic/claude-haiku-4-5')
    expect(largeFileModelRef({ largeFileSummaryModel: 'openai/gpt-5', largeFileSummaryProvider: 'anthropic' })).toBe('openai/gpt-5')
    expect(largeFileModelRef({ largeFileSummaryProvider: 'anthropic' })).toBeUndefined()
    expect(r.contextThresholdOverrides.map((x) => x.contextThreshold)).toEqual([0.6, 0.8, 0.7])
    expect(r.autoRotateSessionFiles).toEqual(FULL.autoRotateSessionFiles)
    expect(expansionModelRef(r)).toBe('anthropic/claude-sonnet-4-6')
    expect(expansionModelRef({ expansionModel: 'openai/gpt-5', expansionProvider: 'anthropic' })).toBe('openai/gpt-5')
    expect(expansionModelRef({ expansionProvider: 'anthropic' })).toBeUndefined()
  })

  it('the defaults are quiet: an empty config warns about nothing', () => {
    expect(resolveConfig({}, {}).warnings).toEqual([])
  })

  it('a typo warns and names the closest known key, at the top level and inside an object', () => {
    const r = resolveConfig({ contextTreshold: 0.7, sweepMaxDeph: 2, autoRotateSessionFiles: { enabeld: false }, zzzUnrelated: 1 }, {})
    expect(r.warnings).toContain('config contextTreshold: unknown key, ignored (did you mean contextThreshold?)')
    expect(r.warnings).toContain('config sweepMaxDeph: unknown key, ignored (did you mean sweepMaxDepth?)')
    expect(r.warnings).toContain('config autoRotateSessionFiles.enabeld: unknown key, ignored (did you mean autoRotateSessionFiles.enabled?)')
    expect(r.warnings).toContain('config zzzUnrelated: unknown key, ignored')
    expect(r.contextThreshold).toBeUndefined()
    expect(closestKey('dbpath', ['dbPath', 'databasePath'])).toBe('dbPath')
  })

  it('bad values warn and fall back, naming what is expected', () => {
    const r = resolveConfig({ hostFallbackMode: 'crash', sweepMaxDepth: -5, independentLogFile: 'yes', contextThresholdOverrides: [{ contextThreshold: 2 }, { match: { model: 'm' }, contextThreshold: 0.5 }] }, {})
    expect(r.warnings).toEqual([
      'config sweepMaxDepth: expected an integer of at least -1, ignored',
      'config contextThresholdOverrides[0]: contextThreshold must be a number above 0, at most 1, rule ignored',
      'config hostFallbackMode: expected one of error, capture-only, ignored',
      'config independentLogFile: expected an object, ignored',
    ])
    expect(r.contextThresholdOverrides).toHaveLength(1)
    expect(r.engineOptions.incrementalMaxDepth).toBeUndefined()
  })
})

describe('environment variables under the reference names', () => {
  it('LCM_INCREMENTAL_MAX_DEPTH sets sweepMaxDepth; LCM_SWEEP_MAX_DEPTH wins over it', () => {
    expect(resolveConfig({}, { LCM_INCREMENTAL_MAX_DEPTH: '3' }).engineOptions.incrementalMaxDepth).toBe(3)
    expect(resolveConfig({ sweepMaxDepth: 0 }, { LCM_INCREMENTAL_MAX_DEPTH: '-1' }).engineOptions.incrementalMaxDepth).toBe(-1)
    expect(resolveConfig({}, { LCM_INCREMENTAL_MAX_DEPTH: '3', LCM_SWEEP_MAX_DEPTH: '2' }).engineOptions.incrementalMaxDepth).toBe(2)
  })

  it('every variable of the table parses into its key (nested ones into their object)', () => {
    const sample = (row) => (row.enum ? row.enum.at(-1) : row.type === 'retention' ? '[{"match":"agent:*:cron:**","pruneAfterDays":14}]' : row.type === 'providers' ? 'openai/gpt-5-mini,anthropic/claude-haiku-4-5' : row.type === 'boolean' ? 'false' : row.type === 'list' ? 'a,b' : row.type === 'string' ? 'x' : String(Math.max(row.minimum ?? 1, 1)))
    const parsed = (row, v) => (row.type === 'retention' ? [{ match: 'agent:*:cron:**', pruneAfterDays: 14 }] : row.type === 'providers' ? [{ provider: 'openai', model: 'gpt-5-mini' }, { provider: 'anthropic', model: 'claude-haiku-4-5' }] : row.type === 'boolean' ? false : row.type === 'list' ? ['a', 'b'] : row.type === 'string' ? v : Number(v))
    let seen = 0
    for (const row of CONFIG_KEYS) {
      const rows = row.type === 'object' ? row.properties.map((p) => [p, (r) => r[row.key]?.[p.key]]) : [[row, (r) => r[row.key]]]
      for (const [r, get] of rows) {
        for (const name of [r.env ?? []].flat()) {
          const v = sample(r)
          const out = resolveConfig({}, { [name]: v })
          expect(get(out), name).toEqual(parsed(r, v))
          expect(out.warnings.filter((w) => !w.includes('no effect')), name).toEqual([])
          seen++
        }
      }
    }
    expect(seen).toBeGreaterThan(50)
    const logs = resolveConfig({}, { LCM_LOG_FILE_ENABLED: 'false', LCM_LOG_MAX_FILE_BYTES: '1024' })
    expect(logs.independentLogFile).toEqual({ enabled: false, maxFileBytes: 1024 })
    expect(logs.warnings).toEqual([expect.stringMatching(/^config independentLogFile: accepted for lossless-claw compatibility, no effect/)])
  })
})

describe('contextThresholdOverrides precedence', () => {
  const rules = parseRules([
    { name: 'window', match: { modelContextWindowMin: 100000 }, contextThreshold: 0.5 },
    { name: 'session', match: { sessionPattern: 'agent:main:**' }, contextThreshold: 0.6 },
    { name: 'session+window', match: { sessionPattern: 'agent:main:**', modelContextWindowMax: 300000 }, contextThreshold: 0.65 },
    { name: 'model', match: { model: 'claude-opus-*' }, contextThreshold: 0.7, freshTailCount: 16 },
    { name: 'model again', match: { model: 'anthropic/claude-opus-4' }, contextThreshold: 0.72 },
    { name: 'catch-all', contextThreshold: 0.9 },
  ]).value
  const pick = (call) => selectRule(rules, call)?.name

  it('a model rule beats a session rule, which beats a window rule; every matcher must match', () => {
    const call = { sessionKey: 'agent:main:main', provider: 'anthropic', modelId: 'claude-opus-4', window: 200000 }
    expect(pick(call)).toBe('model')
    expect(pick({ ...call, modelId: 'claude-sonnet-4' })).toBe('session+window')
    expect(pick({ ...call, modelId: 'claude-sonnet-4', window: 400000 })).toBe('session')
    expect(pick({ ...call, modelId: 'gpt-5', sessionKey: 'agent:other:main' })).toBe('window')
    expect(pick({ sessionKey: 'agent:other:main', modelId: 'gpt-5', window: 50000 })).toBe('catch-all')
    // An unknown window never matches a window bound.
    expect(pick({ sessionKey: 'agent:other:main', modelId: 'gpt-5' })).toBe('catch-all')
  })

  it('ties go to array order; a model rule may name the provider', () => {
    const call = { sessionKey: 'x', provider: 'anthropic', modelId: 'claude-opus-4', window: 1000 }
    expect(pick(call)).toBe('model')
    const swapped = parseRules([
      { name: 'b', match: { model: 'anthropic/claude-opus-4' }, contextThreshold: 0.72 },
      { name: 'a', match: { model: 'claude-opus-*' }, contextThreshold: 0.7 },
    ]).value
    expect(selectRule(swapped, call).name).toBe('b')
    expect(selectRule(swapped, { ...call, provider: 'bedrock' }).name).toBe('a')
    expect(overridesOf(selectRule(rules, call))).toEqual({ contextThreshold: 0.7, freshTailCount: 16 })
    expect(overridesOf(undefined)).toBeUndefined()
  })

  it('the call model comes from OpenClaw\'s runtimeContext', () => {
    expect(callModel({ runtimeContext: { provider: 'anthropic', modelId: 'claude-opus-4', modelContextWindow: 200000 } })).toEqual({ provider: 'anthropic', modelId: 'claude-opus-4', window: 200000 })
    expect(callModel({ model: 'gpt-5' })).toEqual({ provider: undefined, modelId: 'gpt-5', window: undefined })
  })

  it('the plugin engine compacts with the rule of the session: a low threshold compacts what the default leaves', async () => {
    const S = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }
    const run = async (overrides) => {
      // A leaf chunk larger than the conversation: only the threshold can make maintenance compact.
      const engine = createContextEngine({ config: freshConfig({ leafChunkTokens: 5_000, leafMinChunkTokens: 0, contextThresholdOverrides: overrides }), env: {}, llm: fakeLlm(), logger: { warn() {}, info() {}, error() {} } })
      await engine.ready
      const messages = conversation(12, 60)
      await engine.afterTurn({ ...S, messages, prePromptMessageCount: 0 })
      const r = await engine.maintain({ ...S, tokenBudget: 20_000, runtimeContext: { provider: 'anthropic', modelId: 'claude-opus-4', modelContextWindow: 200000 } })
      await engine.dispose()
      return r.reason
    }
    expect(await run([])).toBe('below threshold')
    expect(await run([{ match: { model: 'claude-opus-*' }, contextThreshold: 0.05 }])).toMatch(/^lcm store: .*\d+ passes/)
    expect(await run([{ match: { model: 'gpt-*' }, contextThreshold: 0.05 }])).toBe('below threshold')
    expect(await run([{ match: { sessionPattern: 'agent:main:*' }, contextThreshold: 0.05 }])).toMatch(/^lcm store: /)
  })
})
