// Hand-written part of src/binding/header.d.ts: only what must stay generic or is
// JavaScript-specific (messages, callbacks, AbortSignal). Every other shape is generated
// from the Rust types by src/typegen.rs (`npm run gen:types`).

/**
 * What a failed call throws or rejects with: a JavaScript `Error` whose `code` is one of
 * the stable codes (`LcmErrorCode`, generated from the Rust `ErrorCode`).
 */
export interface LcmError extends Error {
  code: LcmErrorCode
}

/**
 * A content block of an AgentMessage (text, thinking, toolCall, image, or a provider-native block).
 * No index signature, so the host's block interfaces (`TextContent`, `ToolCall`, …) are assignable.
 */
export interface ContentBlock { type: string }

/**
 * What every message the engine accepts has: an object with a non-empty string `role`. Any role
 * (`user`, `assistant`, `toolResult`, `system`, the host's `bashExecution`, `custom`,
 * `branchSummary`, `compactionSummary`, a plugin's own) and any content shape is stored losslessly.
 * OpenClaw's `AgentMessage` (`openclaw/plugin-sdk/agent-harness-runtime`) is assignable to it; the
 * methods are generic over the message type `M`, so what comes back is typed as what went in.
 */
export interface AgentMessage {
  role: string
  content?: unknown
  timestamp?: number | string
}

/** A message as read back when the caller names no message type: any field may be present. */
export interface StoredAgentMessage extends AgentMessage {
  [key: string]: unknown
}

/**
 * Keys the host (OpenClaw) passes to lifecycle methods that the engine accepts and ignores
 * (`ingest`, `ingestBatch`, `assemble`, `compact`, `afterTurn`, `commitTurn`, `bootstrap` ignore
 * every key they do not know; only `LcmEngine.open` rejects unknown keys).
 */
export interface HostPassThrough {
  sessionFile?: string
  sessionTarget?: unknown
  runtimeContext?: unknown
  runtimeSettings?: unknown
  abortSignal?: AbortSignal
  prompt?: string
  model?: string
  availableTools?: unknown
  citationsMode?: unknown
  autoCompactionSummary?: string
  agentId?: string
  compactionTarget?: 'budget' | 'threshold'
}

/** Parameters of `ingest`. */
export interface IngestParams<M extends AgentMessage = StoredAgentMessage> extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  message: M
  /** Transcript entry id; a replay with a known id is not stored again. */
  entryId?: string
  /** Heartbeat turns are not stored. */
  isHeartbeat?: boolean
}

/** Parameters of `ingestBatch`. */
export interface IngestBatchParams<M extends AgentMessage = StoredAgentMessage> extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  messages: M[]
  /** Transcript entry ids parallel to `messages` (null where unknown). */
  entryIds?: Array<string | null>
  isHeartbeat?: boolean
}

/* ── Durable turns and transcripts ─────────────────────────────────────────── */

/** OpenClaw's transcript anchor of a turn's first (admission) or last (terminal) entry. */
export interface TranscriptAnchor {
  entryId: string
  activeMessagePosition: number
  logicalTurnId?: string
  agentId?: string
  sessionId?: string
  sessionKey?: string
  storePath?: string
  generation?: string
  rawSeq?: number
  effectiveParentId?: string | null
  idempotencyKey?: string
  role?: string
}

/**
 * Parameters of `commitTurn`: a turn's messages and its receipt in one transaction.
 * With `admission` and `terminal`, `messages.length` must equal
 * `terminal.activeMessagePosition − admission.activeMessagePosition + 1`, `advancementKey` must
 * equal `admission.logicalTurnId` when it has one, and the first / last message carry the anchors'
 * entry ids (unless `entryIds` says otherwise).
 */
export interface CommitTurnParams<M extends AgentMessage = StoredAgentMessage> extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  /** The turn's idempotency key (OpenClaw: the logical turn id). */
  advancementKey: string
  /** Hash of the turn's payload; default: sha256 (hex) of the canonical JSON of
   *  `{admission, entryIds, isHeartbeat, messages, sessionId, sessionKey, terminal}` (keys sorted at
   *  every level, no whitespace, absent keys as null). */
  payloadHash?: string
  messages: M[]
  /** Transcript entry ids parallel to `messages` (null where unknown). */
  entryIds?: Array<string | null>
  admission?: TranscriptAnchor
  terminal?: TranscriptAnchor
  /** A heartbeat turn stores no messages (its receipt is still written). */
  isHeartbeat?: boolean
}

/** One entry of the host's transcript (a JSONL line, or a row of its SQLite projection). */
export interface TranscriptEntry {
  /** `message` entries are imported; every other type is skipped. Default 'message'. */
  type?: string
  /** Entry id (`entryId` is accepted too). */
  id?: string
  entryId?: string
  /** Parent entry id; null for the root. Rows without the key are taken in order (a linear transcript). */
  parentId?: string | null
  message?: AgentMessage
}

/** Parameters of `bootstrap`: exactly one of `sessionFile` / `transcriptEntries`. */
export interface BootstrapParams extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  /** An OpenClaw / pi session JSONL file (read streaming, line by line). */
  sessionFile?: string
  /** The host's transcript rows, oldest first. */
  transcriptEntries?: TranscriptEntry[]
  /**
   * Judge from the transcript's newest entry alone: the last of `transcriptEntries`
   * (which may hold only the newest rows; the last one is enough), or the last line
   * of `sessionFile`, read from its end (the file is not scanned). Answers
   * 'conversation already up to date' when that entry is a message the
   * conversation stores, else 'the transcript tail is not stored: pass the whole
   * transcript' with `needsWholeTranscript: true`, importing nothing; the counts are
   * of the entries judged. A host that bootstraps before every turn asks this first
   * and passes the whole transcript only when asked.
   */
  transcriptTail?: boolean
  /**
   * A first import (a new conversation, a fork, a rollover) takes only the newest
   * messages within this many tokens: at least the newest one, none when it alone
   * exceeds the cap. Default: the whole transcript.
   */
  maxImportTokens?: number
  /** Leave turns that only acknowledged a heartbeat (`HEARTBEAT_OK`, mentioning `heartbeat.md`) out of the import. */
  skipHeartbeatTurns?: boolean
}

/** Lookup of a conversation by session id and/or key. */
export interface SessionLookup { sessionId?: string; sessionKey?: string }

/** One event reported to `onLog`. */
export interface LcmLogRecord {
  /** 'error' for a contained panic; 'warn' for a warning (the database over `maxDatabaseBytes` with no retention policy that prunes: code 'LCM_CONFIG'). */
  level: 'error' | 'warn'
  /** The code the failed call received: 'LCM_INTERNAL' (or 'LCM_CONFIG' for the size warning). */
  code: LcmErrorCode
  /** The operation that failed (the Rust function that queued the job, e.g. 'engine::Engine::grep_json'). */
  operation: string
  /** The panic message and where it was raised. */
  message: string
}

/* ── Prompts and summarizers ─────────────────────────────────────────────── */

/**
 * A host summarizer: returns the summary text, or `{ content, model? }`, directly or
 * as a Promise. A throw, a rejection, another return type or no answer within
 * `summaryTimeoutMs` fails the summarization with `LCM_CALLBACK` (nothing is written).
 */
export type SummarizerCallback = (
  request: SummaryRequest,
) => string | { content: string; model?: string } | Promise<string | { content: string; model?: string }>

/**
 * Options of `LcmEngine.open`: the engine's options (`EngineOptions`, generated from
 * the Rust `config::EngineOptions`) plus what only JavaScript can pass. Every key is
 * optional; unknown keys are rejected (LCM_INVALID_INPUT).
 */
export interface LcmOptions extends EngineOptions {
  /** The reference plugin's name for `dbPath` (give one of the two). */
  databasePath?: string
  /** The reference plugin's other name for `largeFileTokenThreshold` (give one of the two). */
  largeFileThresholdTokens?: number
  /** Host summarizer; wins over `summaryProvider`. */
  summarizer?: SummarizerCallback
  /** Writes large files' exploration summaries when `largeFileSummaryModel` is set (`summarizeLargeFiles`); wins over `largeFileSummaryProvider`. */
  largeFileSummarizer?: SummarizerCallback
  /**
   * Receives what the engine reports instead of printing it: today, a contained
   * panic (a bug; the call got `LCM_INTERNAL`, its transaction was rolled back and
   * the engine keeps serving). Called asynchronously; its return value and any
   * throw are ignored. Nothing goes to stderr unless `RUST_BACKTRACE` is set.
   */
  onLog?: (record: LcmLogRecord) => void
}


/* ── Compaction ─────────────────────────────────────────────────────────────── */

/** Parameters of `compact`. */
export interface CompactParams extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  /** The model's context budget; without it the host's `runtimeContext.tokenBudget`, else
   *  `runtimeSettings.limits.promptTokenBudget` (neither: LCM_INVALID_INPUT). */
  tokenBudget?: number
  /** Default 'sweep', or 'untilUnder' when the host asks for `compactionTarget: 'budget'`. */
  mode?: CompactMode
  /** Compact even when under the threshold. */
  force?: boolean
  currentTokenCount?: number
  /** Instructions for this call's prompts (override the configured `customInstructions`). */
  customInstructions?: string
  /** Target of `untilUnder` (default tokenBudget). */
  targetTokens?: number
  /** This call's replacements of contextThreshold / freshTailCount / leafChunkTokens. */
  overrides?: PolicyOverrides
  /** Stops the call between passes (an in-flight summarizer call is abandoned; finished passes stay). */
  signal?: AbortSignal
  /** Called with each pass as it is written (fire-and-forget; what it throws or returns is ignored). Anything but a function, `null` or `undefined` rejects with `LCM_INVALID_INPUT`. */
  onProgress?: (pass: CompactionPass) => void
}

/** Parameters of `afterTurn` (the plugin's lifecycle hook). */
export interface AfterTurnParams<M extends AgentMessage = StoredAgentMessage> extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  /** The session's messages after the turn; `messages.slice(prePromptMessageCount)` are ingested in one batch. */
  messages: M[]
  prePromptMessageCount: number
  /** Without it, the host's stated budget (as for `compact`). */
  tokenBudget?: number
  currentTokenCount?: number
  /** Transcript entry ids (null where unknown), parallel to `messages` or to the new messages only. */
  entryIds?: Array<string | null>
  /** Heartbeat turns are neither stored nor compacted. */
  isHeartbeat?: boolean
  customInstructions?: string
  /** As in `CompactParams` (for the turn's threshold sweep). */
  overrides?: PolicyOverrides
  /** As in `CompactParams`. */
  signal?: AbortSignal
  /** As in `CompactParams`. */
  onProgress?: (pass: CompactionPass) => void
}

/** Parameters of `planRewrite`. */
export interface PlanRewriteParams extends RewriteSelector {
  conversationId: number
  /** Aborting rejects the call with `LCM_ABORTED`. */
  signal?: AbortSignal
}

/** Parameters of `rewrite`: the targets flat (`summaryId` / `depth` / `all`) or in `selector`. */
export interface RewriteParams extends RewriteSelector {
  conversationId: number
  selector?: RewriteSelector
  /** Write the new texts (default false: a dry run writes nothing). */
  apply?: boolean
  /** Timestamp / time-range headers in the source text (default true). */
  timestamps?: boolean
  /** Prompt override directory for this run. */
  promptDir?: string
  /** Summarizer model for this run. */
  model?: string
  /** Summarizer for this run: 'anthropic' | 'openai' | 'openai-responses' | 'offline' (default: the engine's, e.g. the host callback). */
  provider?: string
  /** Provider base URL for this run. */
  baseUrl?: string
  /** Condensed summaries of one depth summarized at once, 1–64 (default 4). Leaves always run one by one. */
  concurrency?: number
  /** Called after each summary, in plan order. Anything but a function, `null` or `undefined` rejects with `LCM_INVALID_INPUT`. */
  onProgress?: (event: RewriteProgress) => void
  /** Aborting closes the in-flight summarizer request and rejects with `LCM_ABORTED`; nothing of it is written (summaries applied before stay). */
  signal?: AbortSignal
}

/** An agent tool definition for the plugin to register. */
export interface RecallToolDefinition {
  name: 'lcm_grep' | 'lcm_describe' | 'lcm_expand' | 'lcm_expand_query'
  label: string
  description: string
  /** JSON schema of the parameters. */
  parameters: Record<string, unknown>
}


// ── Context assembly ─────────────────────────────────────────────────────────

/** Parameters of `assemble`. */
export interface AssembleParams<M extends AgentMessage = StoredAgentMessage> extends HostPassThrough {
  sessionId: string
  sessionKey?: string
  /** Token budget of the assembled context (> 0). The output never exceeds it unless the newest user turn alone does:
   *  the oldest messages (fresh tail or live) are dropped first (see `stats.clampedMessages`).
   *  Without it, the host's `runtimeContext.tokenBudget`, else `runtimeSettings.limits.promptTokenBudget`. */
  tokenBudget?: number
  /** The host's live messages; returned unchanged when the store cannot do better or assembly fails. */
  messages?: M[]
}

/**
 * A summary as `assemble` presents it: a user message whose content is the `<summary>` element
 * (XML or compact format) and whose `timestamp` (epoch ms) is the latest time of the messages it
 * covers (else its earliest, else when it was written). OpenClaw's `UserMessage` accepts it.
 */
export type SummaryMessage = { role: 'user'; content: string; timestamp: number }

/** Result of `assemble`. */
export interface AssembleResult<M extends AgentMessage = StoredAgentMessage> {
  /** Messages for the model, oldest first: the stored or live messages and the summaries
   *  ({@link SummaryMessage}) that stand in for older ones. */
  messages: Array<M | SummaryMessage>
  /** Estimated tokens of `messages`, XML wrappers included. */
  estimatedTokens: number
  stats: AssembleStats
  /** Static recall guidance for the system prompt; present when a summary is included. */
  systemPromptAddition?: string
}

/* ── Operator jobs: doctor, dissolve, transplant ─────────────────────────── */
