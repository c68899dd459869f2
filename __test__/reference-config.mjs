// The reference plugin's (lossless-claw's) full example config: every key of its
// config table (research anchor-core.md §7.2) with a valid value. Used by
// config-reference.test.mjs (schema and resolution) and
// openclaw-command-gateway.test.mjs (a real gateway loads it).

/** The reference's full example config: every key of §7.2 with a valid value. */
export const FULL_REFERENCE_CONFIG = {
  enabled: true,
  hostFallbackMode: 'error',
  databasePath: '/var/lib/openclaw/lcm.db',
  largeFilesDir: '/var/lib/openclaw/lcm-files',
  ignoreSessionPatterns: ['agent:*:cron:**'],
  statelessSessionPatterns: ['agent:*:subagent:**'],
  skipStatelessSessions: true,
  contextThreshold: 0.75,
  contextThresholdOverrides: [
    { name: 'big windows', match: { modelContextWindowMin: 500000 }, contextThreshold: 0.6 },
    { name: 'opus', match: { model: 'anthropic/claude-opus-*' }, contextThreshold: 0.8, freshTailCount: 32, leafChunkTokens: 16000 },
    { match: { sessionPattern: 'agent:main:**', modelContextWindowMax: 200000 }, contextThreshold: 0.7 },
  ],
  freshTailCount: 64,
  freshTailMaxTokens: 24000,
  promptAwareEviction: false,
  stubLargeToolPayloads: false,
  leafMinFanout: 8,
  condensedMinFanout: 4,
  condensedMinFanoutHard: 2,
  sweepMaxDepth: 1,
  leafChunkTokens: 20000,
  summaryPrefixTargetTokens: 12000,
  maxSweepIterations: 12,
  sweepDeadlineMs: 120000,
  compactUntilUnderDeadlineMs: 300000,
  leafTargetTokens: 2400,
  condensedTargetTokens: 2000,
  summaryMaxOverageFactor: 3,
  fallbackMaxTokens: 512,
  maxExpandTokens: 4000,
  largeFileThresholdTokens: 25000,
  summaryModel: 'claude-haiku-4-5',
  summaryProvider: 'anthropic',
  largeFileSummaryModel: 'claude-haiku-4-5',
  largeFileSummaryProvider: 'anthropic',
  expansionModel: 'claude-sonnet-4-6',
  expansionProvider: 'anthropic',
  delegationTimeoutMs: 120000,
  summaryTimeoutMs: 60000,
  timezone: 'Europe/Berlin',
  transcriptGcEnabled: false,
  enableSummaryThinking: true,
  proactiveThresholdCompactionMode: 'deferred',
  autoRotateSessionFiles: { enabled: true, createBackups: false, sizeBytes: 2097152, startup: 'rotate', runtime: 'rotate' },
  independentLogFile: { enabled: true, file: '/tmp/lossless-claw.log', maxFileBytes: 104857600 },
  maxAssemblyTokenBudget: 180000,
  customInstructions: 'Keep ticket numbers verbatim.',
  circuitBreakerThreshold: 5,
  circuitBreakerCooldownMs: 1800000,
  replayFloodThresholdExternal: 3,
  replayFloodThresholdInternal: 32,
}

/**
 * Keys of §7.2 that other issues add (58: session lifecycle, 63: cost). They are
 * left out of FULL_REFERENCE_CONFIG until those branches are merged; the lead
 * folds them in then (and this list goes away).
 */
export const KEYS_FROM_OTHER_ISSUES = {
  newSessionRetainDepth: 2,
  bootstrapMaxTokens: 6000,
  pruneHeartbeatOk: false,
  stripInjectedContextTags: 'active_memory_plugin, relevant-memories',
  summaryCallWindowMs: 600000,
  summaryMaxCallsPerWindow: 24,
  summarySpendBackoffMs: 1800000,
  fallbackProviders: ['openai/gpt-5-mini'],
  cacheAwareCompaction: { enabled: true, cacheTTLSeconds: 300, maxColdCacheCatchupPasses: 2, hotCachePressureFactor: 4, hotCacheBudgetHeadroomRatio: 0.2, coldCacheObservationThreshold: 3, criticalBudgetPressureRatio: 0.9 },
  dynamicLeafChunkTokens: { enabled: true, max: 40000 },
}
