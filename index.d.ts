/* generated — do not edit: `npm run gen:types` writes src/binding/header.d.ts from the Rust types (src/typegen.rs) and src/binding/handwritten.d.ts; napi build prepends it to index.d.ts */
/* eslint-disable */

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

/* ---- Engine options ---- */

/** How summaries are presented in assembled context. */
export type SummaryFormat = "xml" | "compact";

/** One `fallbackProviders` entry. */
export type FallbackProvider = {
  /** `anthropic`, `openai`, `openai-responses` or `offline`. */
  provider: string,
  /** The provider's model name. */
  model: string,
};

/**
 * Every option of the engine (`LcmOptions` adds the JavaScript-only ones). Field
 * docs name the JavaScript key. Every key is optional; unknown keys are rejected
 * (`LCM_INVALID_INPUT`).
 */
export type EngineOptions = {
  /**
   * `dbPath`: SQLite file, or `:memory:`. Default `$OPENCLAW_STATE_DIR/lcm.db`,
   * else `~/.openclaw/lcm.db`. The reference's name `databasePath` is accepted too.
   */
  dbPath?: string,
  /** `busyTimeoutMs`: how long a write waits for another process's lock (default 30000). */
  busyTimeoutMs?: number,
  /**
   * `mmapSizeBytes`: how much of the database file each SQLite connection reads
   * through a memory map (`PRAGMA mmap_size`), from 0 to
   * [`MMAP_MAX_BYTES`](crate::store::MMAP_MAX_BYTES) (just under 2 GiB).
   * Default 0: no map, every page is read with a system call into the
   * connection's page cache. A map saves that copy on reads of a large
   * database, at two costs: an I/O error on a mapped page (a failing disk, a
   * network file system, a file truncated underneath) raises `SIGBUS`, which
   * kills the host process (no error reaches JavaScript and panic containment
   * cannot catch it); and the mapped pages count in the process's RSS. With
   * several processes writing one file, each commit of another process also
   * makes SQLite unmap and map the file again.
   */
  mmapSizeBytes?: number,
  /** `timezone`: IANA zone for timestamps in prompts and XML; else `TZ`, else UTC. */
  timezone?: string,
  /** `freshTailCount`: newest raw messages never compacted or evicted (default 64). */
  freshTailCount?: number,
  /**
   * `freshTailMaxTokens`: optional token cap on the fresh tail (the newest user
   * turn is always kept whole).
   */
  freshTailMaxTokens?: number,
  /** `contextThreshold`: fraction of the budget above which compaction runs (default 0.75). */
  contextThreshold?: number,
  /** `leafChunkTokens`: cap on the messages one leaf summary covers (default 20000). */
  leafChunkTokens?: number,
  /** `leafTargetTokens`: upper bound of a leaf summary's target length (default 2400). */
  leafTargetTokens?: number,
  /** `condensedTargetTokens`: target length of a condensed summary (default 2000). */
  condensedTargetTokens?: number,
  /** `leafMinFanout`: leaves needed before they are condensed (default 8). */
  leafMinFanout?: number,
  /** `condensedMinFanout`: condensed nodes needed before they are condensed (default 4). */
  condensedMinFanout?: number,
  /** `condensedMinFanoutHard`: fanout under pressure (default 2). */
  condensedMinFanoutHard?: number,
  /**
   * `incrementalMaxDepth`: condensation depth after an incremental leaf pass
   * (-1 = unlimited; default 1).
   */
  incrementalMaxDepth?: number,
  /** `maxRounds`: sweeps `untilUnder` may run (default 10). */
  maxRounds?: number,
  /** `maxSweepIterations`: passes one sweep may run (default 200). */
  maxSweepIterations?: number,
  /**
   * `sweepDeadlineMs`: wall-clock limit of one sweep, and of a compaction call
   * other than `untilUnder` (default 300000).
   */
  sweepDeadlineMs?: number,
  /**
   * `compactUntilUnderDeadlineMs`: wall-clock limit of an `untilUnder` call, all
   * its sweeps together (default 300000).
   */
  compactUntilUnderDeadlineMs?: number,
  /**
   * `summaryPrefixTargetTokens`: a sweep condenses beyond `incrementalMaxDepth`
   * (at the hard fanout) while the summaries outside the fresh tail weigh more
   * than this, or the context is over its target. Default
   * max(condensedTargetTokens, min(leafChunkTokens, ⌊threshold / 2⌋)).
   */
  summaryPrefixTargetTokens?: number,
  /** `summaryMaxOverageFactor`: a summary over factor × target is capped (default 3). */
  summaryMaxOverageFactor?: number,
  /** `fallbackMaxTokens`: size of the deterministic truncation fallback (default 512). */
  fallbackMaxTokens?: number,
  /** `maxExpandTokens`: default token cap of expansions and grants (default 4000). */
  maxExpandTokens?: number,
  /**
   * `largeFileTokenThreshold`: file blocks above this many tokens are stored
   * outside the database (default 25000). The reference's other name
   * `largeFileThresholdTokens` is accepted too.
   */
  largeFileTokenThreshold?: number,
  /**
   * `largeFilesDir`: where large files go. Default `lcm-files` beside the database
   * (`~/.openclaw/lcm-files` for the default database).
   */
  largeFilesDir?: string,
  /**
   * `largeFileSummaryModel`: model that writes the exploration summary of large
   * files, replacing the deterministic one (`summarizeLargeFiles`). Unset: the
   * deterministic summary stays and no model is called. `provider/model` names a
   * provider when the prefix is one (`anthropic/…`).
   */
  largeFileSummaryModel?: string,
  /**
   * `largeFileSummaryProvider`: provider of `largeFileSummaryModel` when it names
   * none (`anthropic`, `openai`, `openai-responses`); the connection settings are
   * the `summary*` ones. Default: a `largeFileSummarizer` callback, else the host
   * `summarizer` callback, else the provider `summaryProvider` selects.
   */
  largeFileSummaryProvider?: string,
  /**
   * `promptDir`: per-file overrides of the prompt templates. Default
   * `~/.config/lcm-tui/prompts`.
   */
  promptDir?: string,
  /** `customInstructions`: operator instructions added to every prompt. */
  customInstructions?: string,
  /**
   * `stripInjectedContextTags`: XML-style tags whose blocks memory plugins inject
   * into user messages (`<relevant-memories>…</relevant-memories>`); they are left
   * out of the summarizer's input, the stored message stays exact (default
   * `active_memory_plugin`, `relevant-memories`, `relevant_memories`,
   * `hindsight_memories`; `[]` disables).
   */
  stripInjectedContextTags?: Array<string>,
  /** `summaryFormat`: `xml` (default) or `compact`. */
  summaryFormat?: SummaryFormat,
  /** `maxMessageBytes`: larger messages are rejected with LCM_INVALID_INPUT (default 64 MiB). */
  maxMessageBytes?: number,
  /**
   * `summaryProvider`: `anthropic`, `openai`, `openai-responses`, `offline`; the
   * host callback wins when given. Default: offline unless a key is configured.
   */
  summaryProvider?: string,
  /** `summaryModel`: model name for the provider. */
  summaryModel?: string,
  /** `summaryBaseUrl`: provider base URL (OpenAI-compatible servers, proxies). */
  summaryBaseUrl?: string,
  /** `summaryApiKey`: provider key; else `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`. */
  summaryApiKey?: string,
  /** `summaryTimeoutMs`: per-request timeout (default 60000). */
  summaryTimeoutMs?: number,
  /** `summaryMaxRetries`: retries on 429 / 5xx / timeouts (default 3). */
  summaryMaxRetries?: number,
  /** `summaryRetryBaseMs`: first retry backoff in ms; doubles per retry (default 500). */
  summaryRetryBaseMs?: number,
  /**
   * `summaryRetryMaxWaitMs`: cap on one retry wait, including a server's
   * `retry-after` (default 30000).
   */
  summaryRetryMaxWaitMs?: number,
  /**
   * `fallbackProviders`: summarizers tried in order when the configured one is
   * overloaded, times out, is rate limited or answers something unusable (after
   * its own retries). A fallback of the configured provider reuses its base URL
   * and key; another provider uses its default URL and its environment key.
   */
  fallbackProviders?: Array<FallbackProvider>,
  /**
   * `freshTailMaxBudgetRatio`: a token cap on the fresh tail as a share of each
   * call's token budget (with `freshTailMaxTokens`, the smaller wins; the newest
   * user turn is always kept whole). With `contextThreshold` it sets the headroom
   * a compaction leaves: a tail that fills the threshold on its own would be
   * compacted a few messages at a time, every turn. Default none.
   */
  freshTailMaxBudgetRatio?: number,
  /**
   * `retention`: policies that archive, then prune, idle conversations by
   * session-key glob (first match wins; default none: nothing is ever removed).
   */
  retention?: Array<RetentionPolicy>,
  /**
   * `archiveDir`: where retention writes archives. Default `archive` beside the
   * large-files directory (`~/.openclaw/archive` for the default database).
   */
  archiveDir?: string,
  /**
   * `maxDatabaseBytes`: soft cap on the database file; over it, `prune` applies
   * the pruning policies ahead of their days, oldest first (with no policy it
   * only warns).
   */
  maxDatabaseBytes?: number,
};

/* ---- Errors ---- */

/** The stable error codes a caller can branch on (`err.code`). */
export type LcmErrorCode = "LCM_INVALID_INPUT" | "LCM_DB_OPEN" | "LCM_DB_BUSY" | "LCM_DB" | "LCM_CLOSED" | "LCM_CONFIG" | "LCM_TEMPLATE" | "LCM_LLM_AUTH" | "LCM_LLM_RATE_LIMIT" | "LCM_LLM_TRANSIENT" | "LCM_LLM_BAD_RESPONSE" | "LCM_CALLBACK" | "LCM_NOT_FOUND" | "LCM_GRANT_REVOKED" | "LCM_GRANT_EXPIRED" | "LCM_GRANT_SCOPE" | "LCM_GRANT_EXHAUSTED" | "LCM_ABORTED" | "LCM_IO" | "LCM_TURN_CONFLICT" | "LCM_INTERNAL";

/* ---- Recall (grep / describe / expand / grants) ---- */

/** Options of `getMessages`. */
export type GetMessagesOptions = {
  /**
   * Re-inline externalized large files (default true: messages exactly as
   * ingested). False gives the stored form with `[LCM File: …]` references.
   */
  expandFiles?: boolean,
};

/** How the pattern is read. */
export type GrepMode = "regex" | "full_text";

/** What is searched. */
export type GrepScope = "messages" | "summaries" | "both";

/** Result order. */
export type GrepSort = "recency" | "relevance" | "hybrid";

/** Parameters of `grep`. Needs `conversationId`, `allConversations: true` or `grantId`. */
export type GrepParams = {
  /**
   * A regex (mode `regex`, Rust syntax, at most 1000 bytes) or full-text terms
   * (quoted phrases kept).
   */
  pattern: string,
  /** Default `regex`. */
  mode?: GrepMode,
  /** Default `both`. */
  scope?: GrepScope,
  /** Search one conversation. */
  conversationId?: number,
  /**
   * Search these conversations (a session family: the active conversation of
   * a key and its archived ones). Ignored when `conversationId` is given.
   */
  conversationIds?: Array<number>,
  /** Search every conversation. */
  allConversations?: boolean,
  /** Inclusive lower bound, ISO-8601. */
  since?: string,
  /** Exclusive upper bound, ISO-8601; must be later than `since`. */
  before?: string,
  /** Results per scope, 1–200 (default 50). */
  limit?: number,
  /** full_text only (regex is always newest first). Default `recency`. */
  sort?: GrepSort,
  /** Run under a delegation grant (scope and token budget). */
  grantId?: string,
};

/** A message that matched. */
export type MessageHit = {
  /** message_id */
  messageId: number,
  /** conversation_id */
  conversationId: number,
  /** DB role. */
  role: string,
  /** Message time (ISO). */
  createdAt: string,
  /** One-line context around the match. */
  snippet: string,
  /** FTS5 rank (lower is better), for full_text. */
  rank: number | null,
};

/** A summary that matched. */
export type SummaryHit = {
  /** sum_… */
  summaryId: string,
  /** conversation_id */
  conversationId: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** Depth in the DAG. */
  depth: number,
  /** The time used for filters and order: latest source time, else creation (ISO). */
  createdAt: string,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
  /** One-line context around the match. */
  snippet: string,
  /** FTS5 rank (lower is better), for full_text. */
  rank: number | null,
};

/** How a search ran. */
export type GrepScopeStats = {
  /**
   * `fts`, `fts-trigram`, `like`, `trigram-filter`, `scan`; before the catalog
   * is built also `fts-words`, `trigram-slices` and `scan-newest` (see [`cold`]).
   */
  strategy: string,
  /** Rows that passed scope, time and literal filters. */
  candidates: number,
  /** Rows read and checked against the pattern. */
  scanned: number,
  /**
   * True when the scan budget (10,000 rows) stopped the search before the scope
   * was covered.
   */
  truncated: boolean,
  /**
   * Messages in the engine's in-memory catalog (message scope only; null when
   * the search was answered from SQLite before the catalog was built).
   */
  indexedMessages: number | null,
  /** Approximate bytes of memory the catalog holds (message scope only). */
  indexBytes: number | null,
};

/** Result of `grep`. */
export type GrepResult = {
  /** The pattern as given. */
  pattern: string,
  /** Mode used. */
  mode: GrepMode,
  /** Scope used. */
  scope: GrepScope,
  /** Order used. */
  sort: GrepSort,
  /** Conversations searched (`null` = all). */
  conversationIds: Array<number> | null,
  /** Matching messages, in result order. */
  messages: Array<MessageHit>,
  /** Matching summaries, in result order. */
  summaries: Array<SummaryHit>,
  /** messages + summaries returned. */
  totalMatches: number,
  /** True when a scan budget stopped a search before its scope was covered. */
  truncated: boolean,
  /** How the message search ran. */
  messageStats: GrepScopeStats | null,
  /** How the summary search ran. */
  summaryStats: GrepScopeStats | null,
  /** Wall time in ms. */
  elapsedMs: number,
  /** The grant's state after this call, when run under one. */
  grant: Grant | null,
  /** The `lcm_grep` tool text (`## LCM Grep Results` …), ready to print. */
  text: string,
};

/** Options of `describe`. */
export type DescribeOptions = {
  /** The item must belong to this conversation, else the result is null. */
  conversationId?: number,
  /** The item must belong to one of these conversations (a session family). */
  conversationIds?: Array<number>,
  /** Explicitly allow any conversation. */
  allConversations?: boolean,
  /**
   * Budget cap marking manifest nodes in/over budget (default: the grant's
   * remaining budget, else `maxExpandTokens`).
   */
  tokenCap?: number,
  /** Delegation grant to run under. */
  grantId?: string,
  /** Files: include content for an agent, bounded by `expandFileMaxBytes`. */
  expandFile?: boolean,
  /** Files: bound of `expandFile` (default 32768, clamped to 1024–512000). */
  expandFileMaxBytes?: number,
  /** Files: first line (1-based). */
  startLine?: number,
  /** Files: last line (1-based, inclusive). */
  endLine?: number,
  /** Files: the whole content, byte-exact, unbounded (programmatic recovery). */
  includeContent?: boolean,
};

/** One node of a summary's source subtree. */
export type ManifestNode = {
  /** The node. */
  summaryId: string,
  /** The node it was reached from (`None` for the root). */
  parentSummaryId: string | null,
  /** Distance from the described summary. */
  depthFromRoot: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** DAG depth. */
  depth: number,
  /** Tokens of the node's content. */
  tokenCount: number,
  /** Summaries below it. */
  descendantCount: number,
  /** Tokens of the summaries below it. */
  descendantTokenCount: number,
  /** Tokens of the source messages below it. */
  sourceMessageTokenCount: number,
  /** Direct sources (summaries of a condensed node, messages of a leaf). */
  childCount: number,
  /** Earliest source time. */
  earliestAt: string | null,
  /** Latest source time. */
  latestAt: string | null,
  /** Ordinal path from the root (`0001.0003`). */
  path: string,
  /** Tokens to expand its summaries (`tok + descTok`). */
  costSummariesOnly: number,
  /** Tokens with the source messages too (`+ srcTok`). */
  costWithMessages: number,
  /** Whether `cost_summaries_only` fits the budget cap. */
  fitsSummariesOnly: boolean,
  /** Whether `cost_with_messages` fits the budget cap. */
  fitsWithMessages: boolean,
};

/** A described summary. */
export type SummaryDescription = {
  /** Sources (reference "parents"), in link order. */
  parentIds: Array<string>,
  /** Derived summaries (reference "children"). */
  childIds: Array<string>,
  /** Source messages of a leaf, in order. */
  messageIds: Array<number>,
  /** Distinct messages under the whole subtree. */
  sourceMessageCount: number,
  /** Budget cap used for the manifest. */
  budgetCap: number,
  /** `request`, `delegated_grant_remaining` or `config_default`. */
  budgetSource: "request" | "delegated_grant_remaining" | "config_default",
  /** Source subtree, breadth first, at most [`MAX_MANIFEST_NODES`]. */
  manifest: Array<ManifestNode>,
  /** Nodes left out of `manifest`. */
  manifestOmitted: number,
  /** True when `content` was cut to fit a grant's budget. */
  contentTruncated: boolean,
  /** `sum_` + 16 hex. */
  summaryId: string,
  /** Owning conversation. */
  conversationId: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** 0 for leaves, 1 + source depth for condensed nodes. */
  depth: number,
  /** Summary text. */
  content: string,
  /** Estimated tokens of the content. */
  tokenCount: number,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
  /** Number of summaries transitively below this one. */
  descendantCount: number,
  /** Σ tokens of the summaries below. */
  descendantTokenCount: number,
  /** Σ tokens of the source messages below. */
  sourceMessageTokenCount: number,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
  /** Large-file ids referenced by the sources. */
  fileIds: Array<string>,
  /** The summarizer model. */
  model: string,
};

/** A described large file. */
export type FileDescription = {
  /** Content (whole with `includeContent`, bounded with `expandFile`). */
  content?: string,
  /** Whether `content` stops before the end of the file or range. */
  contentTruncated?: boolean,
  /** First line of `content` (line ranges). */
  startLine?: number,
  /** Last line of `content` (line ranges). */
  endLine?: number,
  /** Why the content could not be read, when it could not. */
  contentError?: string,
  /** `file_` + 16 hex. */
  fileId: string,
  /** Owning conversation. */
  conversationId: number,
  /** Name from the `<file name=…>` attribute. */
  fileName: string | null,
  /** MIME type from the `mime` attribute. */
  mimeType: string | null,
  /** UTF-8 byte size of the content. */
  byteSize: number | null,
  /** Number of lines. */
  lineCount: number | null,
  /** Absolute path of the stored content. */
  storageUri: string,
  /** Deterministic exploration summary. */
  explorationSummary: string | null,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
};

/** Result of `describe`. */
export type DescribeResult = {
  /** The id described. */
  id: string,
  /** `summary` or `file`. */
  type: "summary" | "file",
  /** Summary details. */
  summary: SummaryDescription | null,
  /** File details. */
  file: FileDescription | null,
  /** The grant's state after this call. */
  grant: Grant | null,
  /** The `lcm_describe` tool text (`LCM_SUMMARY …` / `## LCM File: …`). */
  text: string,
};

/** Parameters of `expand`: `summaryId` and/or `summaryIds`, else `query`. */
export type ExpandParams = {
  /** One root. */
  summaryId?: string,
  /** Several roots, in priority order (after `summaryId`). */
  summaryIds?: Array<string>,
  /** Full-text query over summaries in scope, used when no id is given. */
  query?: string,
  /** Levels of sources to descend (default 3; `maxDepth` is accepted too). */
  depth?: number,
  /** Also return the original messages of leaves (default false). */
  includeMessages?: boolean,
  /** Token cap (default `maxExpandTokens`; a grant's remaining budget caps it). */
  tokenCap?: number,
  /** Delegation grant to run under. */
  grantId?: string,
  /** Roots must belong to this conversation. */
  conversationId?: number,
  /** Roots must belong to one of these conversations (a session family). */
  conversationIds?: Array<number>,
  /** Explicitly allow any conversation. */
  allConversations?: boolean,
};

/** A summary reached by an expansion. */
export type ExpandedSummary = {
  /** The summary. */
  summaryId: string,
  /** The node whose source it is. */
  parentSummaryId: string,
  /** The expansion root it was reached from. */
  rootId: string,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** DAG depth. */
  depth: number,
  /** Full content. */
  content: string,
  /** Tokens of the content. */
  tokenCount: number,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
};

/** A source message reached through a leaf. */
export type ExpandedMessage = {
  /** message_id */
  messageId: number,
  /** The leaf it belongs to. */
  summaryId: string,
  /** The expansion root it was reached from. */
  rootId: string,
  /** conversation_id */
  conversationId: number,
  /** DB role. */
  role: string,
  /** Plain-text content. */
  content: string,
  /** Tokens of the content. */
  tokenCount: number,
  /** Message time (SQLite UTC text). */
  createdAt: string,
};

/** A root of an expansion. */
export type WalkRoot = {
  /** The root summary. */
  summaryId: string,
  /** Its kind. */
  kind: SummaryKind,
  /** Its conversation. */
  conversationId: number,
};

/** Result of `expand`. */
export type ExpandResult = {
  /** Roots and reached summaries. */
  citedIds: Array<string>,
  /** Token cap applied. */
  tokenCap: number,
  /** Depth applied. */
  depth: number,
  /** The grant's state after this call. */
  grant: Grant | null,
  /** `## Expansion Results …` text for a sub-agent. */
  text: string,
  /** The expanded roots, in order. */
  roots: Array<WalkRoot>,
  /** Summaries reached, depth first in source order. */
  children: Array<ExpandedSummary>,
  /** Messages reached, in source order. */
  messages: Array<ExpandedMessage>,
  /** Tokens of everything returned. */
  totalTokens: number,
  /** True when the cap stopped the walk. */
  truncated: boolean,
};

/** Parameters of `createGrant`. */
export type CreateGrantParams = {
  /** Conversations the grantee may read (at least one). */
  conversationIds: Array<number>,
  /** Token budget across calls; default `maxExpandTokens`. */
  tokenCap?: number,
  /** Time to live in ms; default 300000. Zero or negative gives an expired grant. */
  ttlMs?: number,
  /**
   * When non-empty, only these summaries (and their sources) may be described
   * or expanded.
   */
  summaryIds?: Array<string>,
  /** Depth limit of expansions (default 3). */
  maxDepth?: number,
  /** Who issued it (free text, for diagnostics). */
  issuer?: string,
};

/**
 * A delegation grant as reported to callers (kept in memory by the engine; lost
 * on close).
 */
export type Grant = {
  /** `grant_` + 12 characters. */
  grantId: string,
  /** Allowed conversations. */
  conversationIds: Array<number>,
  /** Allowed summary subtrees (empty = the whole conversations). */
  summaryIds: Array<string>,
  /** Total budget. */
  tokenCap: number,
  /** Tokens already returned under this grant. */
  consumedTokens: number,
  /** Budget left. */
  remainingTokens: number,
  /** Depth limit of expansions. */
  maxDepth: number,
  /** Creation time (ISO). */
  createdAt: string,
  /** Expiry time (ISO). */
  expiresAt: string,
  /** Whether it was revoked. */
  revoked: boolean,
  /** Issuer, when given. */
  issuer: string | null,
};

/** State of the in-memory message catalog behind `grep` (`warmRecallIndex`). */
export type RecallIndexInfo = {
  /** Messages indexed. */
  indexedMessages: number,
  /** Approximate bytes held. */
  indexBytes: number,
  /** Time the call took. */
  elapsedMs: number,
};

/* ---- Summaries, context items ---- */

/**
 * The kind of a summary: a leaf summarizes messages, a condensed summary
 * summarizes summaries. Stored and serialized as `leaf` / `condensed`.
 */
export type SummaryKind = "leaf" | "condensed";

/** What a context item points at. Stored and serialized as `message` / `summary`. */
export type ContextItemType = "message" | "summary";

/** How a summary was obtained. */
export type SummaryLevel = "normal" | "aggressive" | "fallback" | "capped";

/* ---- Store rows ---- */

/** A `conversations` row. */
export type Conversation = {
  /** conversation_id */
  conversationId: number,
  /** Runtime session id. */
  sessionId: string,
  /** Stable session key, when known. */
  sessionKey: string | null,
  /** Whether this is the active row for its key. */
  active: boolean,
  /** When it was archived. */
  archivedAt: string | null,
  /**
   * Why it was archived (an [`ArchiveCause`] string; rows written by other
   * tools may hold other text).
   */
  archiveCause: string | null,
  /**
   * The session that last wrote it and was then ended by a lifecycle event
   * (`/new`, `/reset`, …): the next session id under its key continues it.
   */
  endedSessionId: string | null,
  /** Optional title. */
  title: string | null,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
  /** Last update time (SQLite UTC text). */
  updatedAt: string,
};

/**
 * Why a conversation left the active state. Serialized as the strings stored in
 * `conversations.archive_cause` (the reference's `manual-reset` and
 * `session-deleted`, and ours for the other causes).
 */
export type ArchiveCause = "manual-reset" | "new-session" | "idle-reset" | "daily-reset" | "compaction-rollover" | "session-deleted" | "operator" | "session-rollover";

/** One entry of the context list. */
export type ContextItem = {
  /** Position, 0..n-1. */
  ordinal: number,
  /** `message` or `summary`. */
  itemType: ContextItemType,
  /** The message, for message items. */
  messageId: number | null,
  /** The summary, for summary items. */
  summaryId: string | null,
  /** Token count of the item (message or summary token_count). */
  tokenCount: number,
  /** The summary's depth, for summary items. */
  depth: number | null,
  /** The message's DB role, for message items. */
  role: string | null,
};

/** A `summaries` row. */
export type SummaryRecord = {
  /** `sum_` + 16 hex. */
  summaryId: string,
  /** Owning conversation. */
  conversationId: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** 0 for leaves, 1 + source depth for condensed nodes. */
  depth: number,
  /** Summary text. */
  content: string,
  /** Estimated tokens of the content. */
  tokenCount: number,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
  /** Number of summaries transitively below this one. */
  descendantCount: number,
  /** Σ tokens of the summaries below. */
  descendantTokenCount: number,
  /** Σ tokens of the source messages below. */
  sourceMessageTokenCount: number,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
  /** Large-file ids referenced by the sources. */
  fileIds: Array<string>,
  /** The summarizer model. */
  model: string,
};

/** A summary with its DAG links. */
export type SummaryWithLinks = {
  /** Source summaries (the reference's "parents"), in link order. */
  parentIds: Array<string>,
  /** Source messages of a leaf, in link order. */
  messageIds: Array<number>,
  /** `sum_` + 16 hex. */
  summaryId: string,
  /** Owning conversation. */
  conversationId: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** 0 for leaves, 1 + source depth for condensed nodes. */
  depth: number,
  /** Summary text. */
  content: string,
  /** Estimated tokens of the content. */
  tokenCount: number,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
  /** Number of summaries transitively below this one. */
  descendantCount: number,
  /** Σ tokens of the summaries below. */
  descendantTokenCount: number,
  /** Σ tokens of the source messages below. */
  sourceMessageTokenCount: number,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
  /** Large-file ids referenced by the sources. */
  fileIds: Array<string>,
  /** The summarizer model. */
  model: string,
};

/** Counts of a conversation's rows. */
export type ConversationStats = {
  /** Stored messages. */
  messageCount: number,
  /** Σ tokens of stored messages. */
  messageTokens: number,
  /** Stored summaries. */
  summaryCount: number,
  /** Context-list entries. */
  contextItems: number,
  /** Σ tokens of the context list. */
  contextTokens: number,
  /**
   * Summarizer requests made for this conversation since the engine opened
   * (answered or failed; filled by the engine, not stored).
   */
  summarizerCalls: number,
  /** Of those, the failed ones. */
  summarizerFailures: number,
  /** Estimated input tokens of the answered requests. */
  summarizerInputTokens: number,
  /** Estimated tokens of their answers. */
  summarizerOutputTokens: number,
};

/** Parameters of `insertSummary`. */
export type InsertSummaryParams = {
  /** The conversation. */
  conversationId: number,
  /** Summary text. */
  content: string,
  /** Source messages (a leaf), in order. */
  messageIds?: Array<number>,
  /** Source summaries of one depth (a condensed node), in order. */
  summaryIds?: Array<string>,
  /** Model name recorded on the row. */
  model?: string,
};

/* ---- Status ---- */

/** Parameters of `status`. */
export type StatusParams = {
  /**
   * The session to report on (runtime id); without it and `sessionKey`, only the
   * database is reported.
   */
  sessionId?: string,
  /** The session's stable key (found first, as everywhere). */
  sessionKey?: string,
  /**
   * The model's context budget, in tokens: gives the threshold and whether
   * compaction is due.
   */
  tokenBudget?: number,
  /**
   * The threshold ratio in force for this session (default: the engine's
   * `contextThreshold`).
   */
  contextThreshold?: number,
  /**
   * List the largest tables (default true). Reads every page of the file, so it
   * takes time in proportion to its size.
   */
  tables?: boolean,
};

/** The answer of `status`. */
export type EngineStatus = {
  /** The database file. */
  database: DatabaseStatus,
  /** Conversations by state. */
  conversations: ConversationCounts,
  /** The session asked about (null when none was named). */
  session: SessionStatus | null,
};

/** Parameters of `summarizeLargeFiles`. */
export type SummarizeLargeFilesParams = {
  /**
   * Only this session's files (runtime id); without it and `sessionKey`, every
   * conversation's.
   */
  sessionId?: string,
  /** The session's stable key (found first, as everywhere). */
  sessionKey?: string,
  /** At most this many files are sent to the model (default 4, at most 100). */
  limit?: number,
};

/** What `summarizeLargeFiles` did. */
export type SummarizeLargeFilesResult = {
  /**
   * Whether a large-file model is configured (`largeFileSummaryModel`); when
   * false nothing was done and no model was called.
   */
  enabled: boolean,
  /** Files whose summary the model rewrote. */
  summarized: number,
  /**
   * Files whose model call failed (they keep the deterministic summary and are
   * retried later, with backoff, up to 5 attempts).
   */
  failed: number,
  /** Stored messages whose reference text now carries a model's summary. */
  messagesUpdated: number,
  /** Files still waiting for a model summary (due now or later). */
  remaining: number,
  /** The last failure's code and message, when one failed. */
  lastError: string | null,
};

/** The database file. */
export type DatabaseStatus = {
  /** Its path. */
  path: string,
  /** Bytes of the main file. */
  fileBytes: number,
  /** Bytes of its write-ahead log (`-wal`), 0 when there is none. */
  walBytes: number,
  /** Bytes per page. */
  pageSize: number,
  /** Pages in the main file. */
  pageCount: number,
  /** Unused pages (VACUUM returns them to the file system). */
  freelistPages: number,
  /**
   * The largest tables, indexes counted toward their table, largest first (null
   * when not asked, or when SQLite lacks the `dbstat` table).
   */
  largestTables: Array<TableSize> | null,
  /**
   * Stored messages not yet in the full-text index (indexed in batches; a search
   * indexes them first).
   */
  unindexedMessages: number,
};

/** Bytes used by one table, its indexes included. */
export type TableSize = {
  /** The table (an index counts toward its table). */
  name: string,
  /** Bytes of its pages. */
  bytes: number,
};

/** Conversations by state. */
export type ConversationCounts = {
  /** The active row of each session. */
  active: number,
  /** Archived rows (a reset or a new session keeps the old one). */
  archived: number,
};

/** One session's context. */
export type SessionStatus = {
  /** Its active conversation (null when nothing was stored for it yet). */
  conversationId: number | null,
  /** Stored messages. */
  messages: number,
  /** Σ tokens of the stored messages. */
  messageTokens: number,
  /** Context-list entries (messages and summaries). */
  contextItems: number,
  /** Σ tokens of the context list. */
  contextTokens: number,
  /** The budget asked about (null when none was given). */
  tokenBudget: number | null,
  /** The threshold ratio in force. */
  contextThreshold: number,
  /** ⌊contextThreshold × tokenBudget⌋ (null without a budget). */
  threshold: number | null,
  /** Summaries per depth, shallowest first. */
  summariesByDepth: Array<DepthCount>,
  /** When the newest summary was written (SQLite UTC text; survives restarts). */
  newestSummaryAt: string | null,
  /** The last compaction of this process that wrote summaries. */
  lastCompaction: CompactionRecord | null,
  /** What is still to do. */
  pending: PendingWork,
};

/** Summaries of one depth in a conversation. */
export type DepthCount = {
  /** Depth (0: leaves). */
  depth: number,
  /** Summaries of that depth. */
  count: number,
  /** How many of them are in the context list. */
  inContext: number,
};

/** A compaction that wrote summaries, as this process saw it (`status`). */
export type CompactionRecord = {
  /** When it ended (ISO 8601, UTC). */
  at: string,
  /** The mode that ran. */
  mode: CompactMode,
  /** Why it ended (the result's `reason`). */
  reason: string,
  /** Stored context tokens before. */
  tokensBefore: number,
  /** Stored context tokens after. */
  tokensAfter: number,
  /** Summaries written. */
  passes: number,
  /** Summarizer requests made (answered or failed), as metered. */
  summarizerCalls: number,
  /** Passes that fell back to deterministic truncation. */
  fallbacks: number,
  /** Estimated tokens sent to the summarizer (the passes' source text). */
  tokensIn: number,
  /** Estimated tokens of the summaries written. */
  tokensOut: number,
  /** Wall-clock time of the passes, in milliseconds. */
  ms: number,
};

/** Work still to do for a session. */
export type PendingWork = {
  /** Compaction calls of this session running now. */
  compactionsRunning: number,
  /** The context is over the threshold (false without a budget). */
  compactionDue: boolean,
  /**
   * A compaction that did not end left a gap in the context list (the next one
   * closes it first).
   */
  contextGap: boolean,
};

/* ---- Ingest, turns, transcripts ---- */

/** Result of `ingest`. */
export type IngestResult = {
  /** False for heartbeats and replays. */
  ingested: boolean,
  /** The conversation, when the message reached the store. */
  conversationId: number | null,
  /** The stored message's id. */
  messageId: number | null,
  /** The stored message's seq. */
  seq: number | null,
};

/** Outcome of one message of a batch. */
export type IngestedMessage = {
  /** False when the message was a replay and was not stored again. */
  ingested: boolean,
  /** The stored row's id (the existing row's id for a replay of an entry id). */
  messageId: number | null,
  /** The stored row's seq. */
  seq: number | null,
};

/** Result of `ingestBatch`. */
export type IngestBatchResult = {
  /** How many messages were stored (replays and heartbeats excluded). */
  ingestedCount: number,
  /** The conversation, when the batch reached the store. */
  conversationId: number | null,
  /** One entry per input message. */
  results: Array<IngestedMessage>,
};

/** Result of `commitTurn`. */
export type CommitTurnResult = {
  /**
   * `committed`, or `duplicate`: this key was committed before with the same
   * payload; nothing was written.
   */
  status: "committed" | "duplicate",
  /** The conversation; null for a heartbeat or empty turn of a session without one. */
  conversationId: number | null,
  /**
   * Messages stored by this call (0 for a duplicate, a heartbeat, an empty turn,
   * and entry ids already stored).
   */
  ingestedCount: number,
};

/** Result of `bootstrap`. */
export type BootstrapResult = {
  /** True when messages were imported. */
  bootstrapped: boolean,
  /** Messages imported by this call. */
  importedMessages: number,
  /**
   * Why: `imported session messages`, `reconciled missing session messages`,
   * `conversation already up to date`, `no messages in session file`,
   * `no common message with the stored conversation`, or (`transcriptTail`)
   * `the transcript tail is not stored: pass the whole transcript`.
   */
  reason: string,
  /** The conversation, when there is one. */
  conversationId: number | null,
  /** Messages on the transcript's leaf path. */
  transcriptMessages: number,
  /** Entries that are not messages or not on the leaf path (and unreadable lines). */
  skippedEntries: number,
  /**
   * A `transcriptTail` call whose rows did not prove the conversation up to
   * date ([`REASON_NEEDS_WHOLE`]): call again with the whole transcript.
   */
  needsWholeTranscript: boolean,
  /**
   * The conversation this call archived (`session-rollover`): a new session id
   * under the key whose transcript does not continue it.
   */
  archivedConversationId: number | null,
};

/* ---- Session lifecycle ---- */

/** Why a session ended (OpenClaw's `session_end` / `before_reset` reasons). */
export type EndReason = "new" | "reset" | "idle" | "daily" | "compaction" | "deleted" | "shutdown" | "restart" | "unknown" | "continued";

/** `endSession` parameters. */
export type EndSessionParams = {
  /** The ending session's id. */
  sessionId: string,
  /** Its stable key (the conversation is found by key first). */
  sessionKey?: string,
  /** Why it ended. */
  reason: EndReason,
  /** The session id that follows, when the host says. */
  nextSessionId?: string,
  /**
   * `new` only: summaries of depth ≥ this stay in the context (−1 keeps
   * everything, 0 keeps all summaries; default 2).
   */
  retainDepth?: number,
};

/** What an end-of-session event did. */
export type LifecycleAction = "pruned" | "archived" | "kept" | "continued" | "alreadyHandled" | "noConversation";

/** `endSession` result. */
export type EndSessionResult = {
  /** What was done. */
  action: LifecycleAction,
  /** The conversation the event applied to. */
  conversationId: number | null,
  /** The fresh active conversation of the key, after an archive. */
  successorId: number | null,
  /** The archive cause written. */
  cause: ArchiveCause | null,
  /** Message items taken out of the context (`new`). */
  prunedMessages: number,
  /** Summary items taken out of the context (`new`). */
  prunedSummaries: number,
  /** Items left in the context list (`new`). */
  keptItems: number,
};

/** `archiveConversation` parameters (operators and hosts without hooks). */
export type ArchiveParams = {
  /** The conversation to archive. */
  conversationId: number,
  /** Why (default `operator`). */
  cause?: ArchiveCause,
  /** Also create a fresh active conversation for its key (default false). */
  successor?: boolean,
};

/** `archiveConversation` / `unarchiveConversation` result. */
export type ArchiveResult = {
  /** The conversation named. */
  conversationId: number,
  /** Whether its state changed (false: it already was archived / active). */
  changed: boolean,
  /** The successor created by an archive with `successor: true`. */
  successorId: number | null,
  /**
   * Unarchive: the conversation that held the key and was archived
   * (`operator`) to make room.
   */
  displacedId: number | null,
};

/** `pruneContext` parameters: `/new`'s pruning without ending a session. */
export type PruneContextParams = {
  /** The conversation. */
  conversationId: number,
  /**
   * Summaries of depth ≥ this stay (−1 keeps everything, 0 keeps all summaries;
   * default 2).
   */
  retainDepth?: number,
};

/* ---- Context assembly ---- */

/** Why the live messages were returned instead of an assembly. */
export type AssembleFallbackReason = "noConversation" | "emptyContext" | "incompleteCoverage" | "emptyAssembly" | "noUserTurn" | "error";

/** What the repair passes changed. */
export type AssembleRepairStats = {
  /** Synthetic error results inserted for calls without a result. */
  syntheticToolResults: number,
  /** Tool results dropped because no preceding assistant called them. */
  droppedOrphanResults: number,
  /** Second (and later) results for one call id dropped. */
  droppedDuplicateResults: number,
  /** Tool-call blocks dropped because an earlier assistant used the same id. */
  droppedDuplicateToolCalls: number,
  /** Tool-call blocks stripped from `error` / `aborted` assistants. */
  strippedTerminalToolCalls: number,
  /**
   * Tool-call blocks stripped because their result is not in the assembled
   * context (evicted, summarized, or placed before the call).
   */
  strippedUnpairedToolCalls: number,
  /** Tool results moved next to their call. */
  movedToolResults: number,
  /** Messages dropped because nothing sendable was left in them. */
  droppedEmptyMessages: number,
  /** Messages dropped because the host marked them `excludeFromContext`. */
  droppedExcludedMessages: number,
  /** Tool results without a call id presented as assistant text. */
  downgradedToolResults: number,
};

/** What an assembly did. */
export type AssembleStats = {
  /** The conversation assembled, when found. */
  conversationId: number | null,
  /** The budget in force. */
  tokenBudget: number,
  /** Entries of the context list. */
  contextItems: number,
  /** Summaries in the output. */
  summariesIncluded: number,
  /** Stored messages in the output (synthetic results not counted). */
  messagesIncluded: number,
  /** Evictable context items left out for the budget. */
  droppedForBudget: number,
  /** Context items whose row could not be read (dangling references). */
  unresolvedItems: number,
  /** Ordinal where the fresh tail starts (absent when there is no tail). */
  tailStartOrdinal: number | null,
  /** Context items in the fresh tail. */
  tailItems: number,
  /** Tokens of the fresh tail as presented. */
  tailTokens: number,
  /**
   * True when the output is over the budget (only when the newest user turn
   * alone is).
   */
  overBudget: boolean,
  /**
   * The output's stored token counts (what compaction thresholds count), beside
   * `estimatedTokens` (its wire count): their ratio scales stored counts to what
   * providers see.
   */
  storedTokens: number,
  /** Oldest messages (fresh-tail or live) dropped to stay within the budget. */
  clampedMessages: number,
  /**
   * Tool results of the newest user turn cut to fit the budget (when that turn
   * alone is over it).
   */
  trimmedToolResults: number,
  /** Their tokens. */
  clampedTokens: number,
  /** True when the live messages were returned. */
  liveFallback: boolean,
  /** Why, when `live_fallback` is set. */
  fallbackReason: AssembleFallbackReason | null,
  /** The error that caused a fallback. */
  error: string | null,
  /** What the clean-up and pairing repair changed. */
  repair: AssembleRepairStats,
};

/* ---- Summarizers and prompts ---- */

/** One request to a summarizer. */
export type SummaryRequest = {
  /** The rendered prompt (the user message). */
  prompt: string,
  /** The system prompt. */
  systemPrompt: string,
  /** Target length of the answer, in tokens. */
  targetTokens: number,
  /** Depth of the summary being built (0 = leaf). */
  depth: number,
  /** Whether this is the aggressive retry. */
  aggressive: boolean,
  /** Model hint (the configured model), if any. */
  model: string | null,
  /** The source text alone (what the prompt wraps), for extractive summarizers. */
  sourceText: string,
};

/** Parameters of `summarizeText` (JavaScript): a source text run through the pipeline. */
export type SummarizeTextParams = {
  /** Depth of the summary to build (default 0, a leaf). */
  depth?: number,
  /** The source text, with its `[…]` headers. */
  sourceText: string,
  /** Preceding summary text (leaf and depth-1 prompts). */
  previousContext?: string,
  /** Number of source items (default: the blank-line separated blocks). */
  childCount?: number,
  /** Formatted time range of the sources. */
  timeRange?: string,
  /** Instructions for this call (instead of the configured ones). */
  customInstructions?: string,
};

/** The pipeline's answer. */
export type SummarizeResult = {
  /** Final summary text. */
  content: string,
  /** How it was obtained. */
  level: SummaryLevel,
  /** Model that produced it (`deterministic` for fallbacks). */
  model: string,
  /** Estimated tokens of the source. */
  tokensIn: number,
  /** Estimated tokens of the summary. */
  tokensOut: number,
};

/** Parameters of `renderPrompt` (JavaScript). */
export type RenderPromptParams = {
  /** Depth of the summary (0 leaf, 1, 2, 3+). */
  depth?: number,
  /** The aggressive leaf policy. */
  aggressive?: boolean,
  /** Target length; default computed as the pipeline does from `sourceText`. */
  targetTokens?: number,
  /** Preceding summary text. */
  previousContext?: string,
  /** Number of source items (default: blank-line separated blocks). */
  childCount?: number,
  /** Formatted time range. */
  timeRange?: string,
  /** The source text. */
  sourceText?: string,
  /** Operator instructions. */
  customInstructions?: string,
  /** Override directory (default `~/.config/lcm-tui/prompts`, as the engine). */
  promptDir?: string,
  /** For the default target (default 2400). */
  leafTargetTokens?: number,
  /** For the default target (default 2000). */
  condensedTargetTokens?: number,
};

/** A rendered prompt and the template that produced it. */
export type RenderedPrompt = {
  /** The user message. */
  prompt: string,
  /** The system prompt. */
  systemPrompt: string,
  /** Template name: `leaf`, `condensed-d1`, `condensed-d2` or `condensed-d3`. */
  template: "leaf" | "condensed-d1" | "condensed-d2" | "condensed-d3",
  /** `embedded` or the override file's path. */
  source: string,
  /** The target length in the prompt. */
  targetTokens: number,
};

/* ---- Compaction ---- */

/**
 * Per-call replacements of the compaction policy (the plugin's
 * `contextThresholdOverrides` rules): what is given replaces the engine's option
 * for this call only.
 */
export type PolicyOverrides = {
  /** Replaces `contextThreshold`, in (0, 1]. */
  contextThreshold?: number,
  /** Replaces `freshTailCount`. */
  freshTailCount?: number,
  /** Replaces `leafChunkTokens`. */
  leafChunkTokens?: number,
};

/** Parameters of `evaluate`. */
export type EvaluateParams = {
  /** Runtime session id. */
  sessionId: string,
  /** Stable session key. */
  sessionKey?: string,
  /** The model's context budget, in tokens. */
  tokenBudget: number,
  /** The host's observed token count of the live context, if known. */
  currentTokenCount?: number,
  /** This call's policy replacements. */
  overrides?: PolicyOverrides,
};

/**
 * The answer of `evaluate`: compaction is due when `currentTokens > threshold`
 * (strictly).
 */
export type Evaluation = {
  /** `currentTokens > threshold`. */
  shouldCompact: boolean,
  /** `threshold` when compaction is due, else `none`. */
  reason: "threshold" | "none",
  /** max(stored context tokens, currentTokenCount). */
  currentTokens: number,
  /** ⌊contextThreshold × tokenBudget⌋. */
  threshold: number,
  /** The budget evaluated against. */
  tokenBudget: number,
  /** Σ tokens of the stored context list. */
  storedTokens: number,
  /** The host's count, when given and positive. */
  observedTokens: number | null,
  /** Raw message tokens outside the fresh tail (diagnostic; the leaf trigger). */
  rawTokensOutsideTail: number,
  /** Whether raw tokens outside the tail reach `leafChunkTokens`. */
  leafTrigger: boolean,
  /** The conversation, when the session has one. */
  conversationId: number | null,
};

/**
 * How much to compact. `incremental`: one leaf pass, then condensation up to
 * `incrementalMaxDepth` (also runs when the leaf trigger fires). `sweep`: leaf
 * passes until none is eligible, then condensation shallowest-first; while still
 * over the threshold, condensation again with `condensedMinFanoutHard`; each phase
 * stops when a pass no longer reduces tokens. `untilUnder`: up to `maxRounds`
 * forced sweeps until the context is at or under `targetTokens` (default
 * tokenBudget); equality still compacts once.
 */
export type CompactMode = "incremental" | "sweep" | "untilUnder";

/** A finished pass, as reported in `CompactResult.passes` and to `onProgress`. */
export type CompactionPass = {
  /** Leaf or condensed. */
  kind: SummaryKind,
  /** Depth of the new summary. */
  depth: number,
  /** The new summary. */
  summaryId: string,
  /** How the summary was obtained. */
  level: SummaryLevel,
  /** Estimated tokens of the source text. */
  tokensIn: number,
  /** Estimated tokens of the summary. */
  tokensOut: number,
  /** Model that produced it. */
  model: string,
  /** Wall-clock time of the pass. */
  ms: number,
  /** Number of sources (messages or summaries) replaced. */
  sourceCount: number,
  /** Context tokens before the pass. */
  contextTokensBefore: number,
  /** Context tokens after the pass. */
  contextTokensAfter: number,
};

/** Summarizer requests and their tokens. */
export type SummarizerUsage = {
  /** Requests sent (answered or failed). */
  calls: number,
  /** Requests that failed (error, timeout, refused). */
  failures: number,
  /** Estimated input tokens of the answered requests. */
  inputTokens: number,
  /** Estimated tokens of their answers. */
  outputTokens: number,
};

/** The result of `compact` (never an error for "nothing to do"). */
export type CompactResult = {
  /** False when the summarizer failed, or `untilUnder` missed its target. */
  ok: boolean,
  /** True only if at least one summary was written. */
  compacted: boolean,
  /**
   * Why the call ended: `below threshold`, `nothing to compact`, `compacted`,
   * `compacted; still over threshold`, `already under target`, `could not reach
   * target`, `aborted`, `deadline reached (sweepDeadlineMs)`, `iteration cap
   * reached (maxSweepIterations)`, `summarizer failed (LCM_…): …`, …
   */
  reason: string,
  /** Nothing is left to compact and the context is still over the target. */
  exhausted: boolean,
  /** The call was cancelled (finished passes are kept). */
  aborted: boolean,
  /** The error code of a summarizer failure (`LCM_LLM_AUTH`, `LCM_CALLBACK`, …). */
  errorCode: LcmErrorCode | null,
  /** The mode that ran. */
  mode: CompactMode,
  /** The conversation, when the session has one. */
  conversationId: number | null,
  /** Stored context tokens before. */
  tokensBefore: number,
  /** Stored context tokens after. */
  tokensAfter: number,
  /** max(stored, currentTokenCount) before. */
  currentTokens: number,
  /** ⌊contextThreshold × tokenBudget⌋. */
  threshold: number,
  /** The goal the mode compacted toward (threshold, or the untilUnder target). */
  targetTokens: number,
  /** Sweeps run by `untilUnder` (1 for a sweep, 0 when nothing ran). */
  rounds: number,
  /** Every written pass, in order. */
  passes: Array<CompactionPass>,
  /** Summarizer requests this call made and their estimated tokens. */
  summarizer: SummarizerUsage,
};

/** Result of `afterTurn`. */
export type AfterTurnResult = {
  /** The ingest of the new messages. */
  ingest: IngestBatchResult,
  /** The threshold sweep (`compacted: false, reason: "below threshold"` when not due). */
  compaction: CompactResult,
};

/* ---- Prompt templates ---- */

/** One template in a listing. */
export type PromptEntry = {
  /** `leaf`, `condensed-d1`, `condensed-d2`, `condensed-d3`. */
  name: "leaf" | "condensed-d1" | "condensed-d2" | "condensed-d3",
  /** The file name in use: `leaf.jinja` (embedded or override) or `leaf.tmpl`. */
  file: string,
  /** `embedded` or `override`. */
  source: "embedded" | "override",
  /** The override file that wins, if any. */
  path: string | null,
  /** Override files present but not used (a `.tmpl` beside a `.jinja` that wins). */
  shadowed: Array<string>,
  /** Why the override cannot be used (the engine refuses to open with it), if so. */
  error: string | null,
};

/** What `listPrompts` returns. */
export type PromptList = {
  /** The override directory consulted. */
  dir: string,
  /** Whether that directory exists. */
  dirExists: boolean,
  /** The four templates, in depth order. */
  templates: Array<PromptEntry>,
};

/** A file `exportPrompts` did not write, and why. */
export type PromptSkippedFile = {
  /** The file that was left alone. */
  path: string,
  /** Why. */
  reason: string,
};

/** What `exportPrompts` did. */
export type PromptExportReport = {
  /** The directory written to. */
  dir: string,
  /** Files written (created or, with `force`, overwritten). */
  written: Array<string>,
  /** Files left alone. */
  skipped: Array<PromptSkippedFile>,
};

/** A template's active text. */
export type ShownPrompt = {
  /** `leaf`, `condensed-d1`, … */
  name: "leaf" | "condensed-d1" | "condensed-d2" | "condensed-d3",
  /** `embedded` or `override`. */
  source: "embedded" | "override",
  /** The override file, if one is active. */
  path: string | null,
  /** The template text as written (a `.tmpl` override in Go syntax). */
  text: string,
};

/** An override compared with its embedded default. */
export type PromptDiff = {
  /** `leaf`, `condensed-d1`, … */
  name: "leaf" | "condensed-d1" | "condensed-d2" | "condensed-d3",
  /** The override directory consulted. */
  dir: string,
  /** The override file, if any. */
  path: string | null,
  /** Whether the override equals the default byte for byte. */
  identical: boolean,
  /** Unified diff (embedded → override); `None` without an override. */
  diff: string | null,
};

/* ---- Rewrite ---- */

/**
 * `{ summaryId?, subtree?, depth?, all? }`: which summaries (exactly one of
 * `summaryId`, `depth`, `all: true`).
 */
export type RewriteSelector = {
  /** A summary (with everything beneath it unless `subtree: false`). */
  summaryId?: string,
  /** With `summaryId`: include its sources, recursively (default true). */
  subtree?: boolean,
  /** Every summary of this depth. */
  depth?: number,
  /** Every summary of the conversation. */
  all?: boolean,
};

/** A summary without its text: what choosing and ordering summaries needs. */
export type PlannedRewrite = {
  /** `sum_…`. */
  summaryId: string,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** 0 for leaves. */
  depth: number,
  /** Source messages (leaf) or source summaries (condensed). */
  childCount: number,
  /** Current token count. */
  tokenCount: number,
  /** Earliest source time (ISO), if recorded. */
  earliestAt: string | null,
  /** Latest source time (ISO), if recorded. */
  latestAt: string | null,
  /** Creation time (SQLite UTC text). */
  createdAt: string,
};

/** One rewritten (or, in a dry run, previewed) summary. */
export type RewriteEntry = {
  /** `sum_…`. */
  summaryId: string,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** 0 for leaves. */
  depth: number,
  /** Source messages (leaf) or source summaries (condensed). */
  childCount: number,
  /** Earliest source time (ISO). */
  earliestAt: string | null,
  /** Latest source time (ISO). */
  latestAt: string | null,
  /** The summary's time range in the display zone (`2026-02-17 15:37–21:14 UTC`). */
  timeRange: string | null,
  /** The stored text before. */
  oldContent: string,
  /** The new text (equal to the old one when skipped). */
  newContent: string,
  /** Stored token count before. */
  oldTokens: number,
  /** Token count of the new text. */
  newTokens: number,
  /** `new_tokens - old_tokens`. */
  delta: number,
  /** Unified diff old → new (empty when equal). */
  diff: string,
  /**
   * How the pipeline obtained the text (`normal`, `aggressive`, `fallback`,
   * `capped`); `null` when skipped.
   */
  level: SummaryLevel | null,
  /** The model that wrote it; `null` when skipped. */
  model: string | null,
  /** Whether the new text was written to the database. */
  applied: boolean,
  /** Why the summary was left as it is, if it was. */
  skipped: string | null,
};

/** A progress event: one more summary done. */
export type RewriteProgress = {
  /** Summaries done so far, this one included. */
  completed: number,
  /** Summaries in the plan. */
  total: number,
  /** This summary's entry. */
  entry: RewriteEntry,
};

/** Why a run stopped. */
export type RewriteFailure = {
  /** The summary being rewritten. */
  summaryId: string,
  /** Its depth. */
  depth: number,
  /** The `LCM_…` code. */
  code: LcmErrorCode,
  /** The message. */
  message: string,
};

/** The result of a run. */
export type RewriteReport = {
  /** The conversation. */
  conversationId: number,
  /** True for a dry run (nothing written). */
  dryRun: boolean,
  /** Summaries in the plan. */
  planned: number,
  /** One entry per summary done, in plan order. */
  entries: Array<RewriteEntry>,
  /** Σ old token counts of the entries. */
  oldTokens: number,
  /** Σ new token counts of the entries. */
  newTokens: number,
  /** `new_tokens - old_tokens`. */
  delta: number,
  /**
   * Always null on a resolved promise (a failed run rejects); set when a run
   * stopped early (the entries before it stand).
   */
  error: RewriteFailure | null,
};

/* ---- Doctor ---- */

/** Parameters of `doctor`: exactly one of `conversation_id` / `all`. */
export type DoctorParams = {
  /** The conversation to check. */
  conversationId?: number,
  /** Check every conversation. */
  all?: boolean,
  /** Repair what can be repaired (default: report only, write nothing). */
  apply?: boolean,
};

/** The kinds of violation. */
export type ViolationKind = "sqliteIntegrity" | "ordinalGap" | "contextDangling" | "contextForeign" | "linkDangling" | "linkForeign" | "cycle" | "reachedTwice" | "summarySources" | "uncoveredMessages" | "coveredTwice" | "metadata" | "ftsMissing" | "ftsExtra" | "ftsOutdated" | "ftsDuplicate" | "ftsIndex" | "largeFileMoved" | "largeFileMissing";

/** One broken invariant. */
export type Violation = {
  /** What is broken. */
  kind: ViolationKind,
  /** The conversation it belongs to (`None`: the whole database). */
  conversationId: number | null,
  /** Summaries involved. */
  summaryIds: Array<string>,
  /** Messages involved. */
  messageIds: Array<number>,
  /** Whether `apply` repairs it without losing anything. */
  repairable: boolean,
  /** What is wrong, naming the rows. */
  message: string,
  /** Kind-specific details (columns, ordinals, table). */
  details?: Record<string, unknown>,
};

/** Which marker a broken summary ends with. */
export type MarkerKind = "truncated" | "capped" | "referenceFallback" | "referenceEmergency";

/** A summary whose text ends with a fallback or truncation marker. */
export type BrokenSummary = {
  /** The summary. */
  summaryId: string,
  /** Its conversation. */
  conversationId: number,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** Its depth. */
  depth: number,
  /** Stored token count. */
  tokenCount: number,
  /** Length of the text in characters. */
  chars: number,
  /** The marker it ends with. */
  marker: MarkerKind,
  /** The marker's text. */
  markerText: string,
  /** Its context ordinal, when it is a context item. */
  contextOrdinal: number | null,
  /** Whether a context item reaches it. */
  reachable: boolean,
  /** Position in the repair order of its conversation (1-based). */
  order: number,
};

/** What a repair did. */
export type DoctorRepairKind = "removedDanglingLink" | "removedDanglingContextItem" | "relinked" | "reinserted" | "metadata" | "resequenced" | "ftsRows" | "ftsRebuilt" | "resummarized" | "relocatedLargeFile";

/** One repair. */
export type DoctorRepair = {
  /** What was done. */
  kind: DoctorRepairKind,
  /** The conversation (`None`: database-wide). */
  conversationId: number | null,
  /** Summaries involved. */
  summaryIds: Array<string>,
  /** Messages involved. */
  messageIds: Array<number>,
  /** What was done, naming the rows. */
  message: string,
};

/** How one broken summary's repair went. */
export type ResummaryStatus = "repaired" | "stillBroken" | "unchanged";

/** One re-summarization. */
export type Resummarized = {
  /** The summary. */
  summaryId: string,
  /** Its conversation. */
  conversationId: number,
  /** What happened. */
  status: ResummaryStatus,
  /** How the new text was obtained. */
  level: SummaryLevel | null,
  /** The model that wrote it. */
  model: string | null,
  /** Tokens before. */
  tokensBefore: number,
  /** Tokens of the new text. */
  tokensAfter: number | null,
};

/** The summarizer failure that stopped the repairs. */
export type DoctorStopError = {
  /** The summary being repaired. */
  summaryId: string,
  /** The error's `LCM_…` code. */
  code: LcmErrorCode,
  /** The error's message. */
  message: string,
};

/** What a check found. */
export type DoctorFindings = {
  /** Broken invariants. */
  violations: Array<Violation>,
  /** Summaries ending with a fallback or truncation marker, in repair order. */
  brokenSummaries: Array<BrokenSummary>,
};

/** The result of `doctor`. */
export type DoctorReport = {
  /** True when nothing is left to repair (after `apply`, when it was asked for). */
  ok: boolean,
  /** Whether repairs were asked for. */
  applied: boolean,
  /** The conversations checked. */
  conversationIds: Array<number>,
  /** The structural repairs made (`apply`). */
  repairs: Array<DoctorRepair>,
  /** The re-summarizations (`apply`). */
  resummarized: Array<Resummarized>,
  /** The summarizer error that stopped the re-summarizations. */
  error: DoctorStopError | null,
  /** What a check after the repairs found (`apply`). */
  remaining: DoctorFindings | null,
  /** Broken invariants. */
  violations: Array<Violation>,
  /** Summaries ending with a fallback or truncation marker, in repair order. */
  brokenSummaries: Array<BrokenSummary>,
};

/* ---- DAG operations (dissolve / transplant) ---- */

/** A summary as the dry runs show it. */
export type SummaryView = {
  /** The summary. */
  summaryId: string,
  /** `leaf` or `condensed`. */
  kind: SummaryKind,
  /** Depth. */
  depth: number,
  /** Token count. */
  tokenCount: number,
  /** Context ordinal, when it is a context item. */
  ordinal: number | null,
  /** The start of its text. */
  preview: string,
};

/** Parameters of `dissolve`. */
export type DissolveParams = {
  /** The conversation whose context list holds the summary. */
  conversationId: number,
  /** The summary to dissolve. */
  summaryId: string,
  /** Write (default: plan only). */
  apply?: boolean,
  /** Keep the summary row (unreferenced) instead of deleting it. */
  keep?: boolean,
};

/** One item that comes back into the context list. */
export type RestoredItem = {
  /** `summary` or `message`. */
  itemType: ContextItemType,
  /** The summary, for summary items. */
  summaryId: string | null,
  /** The message, for message items. */
  messageId: number | null,
  /** The summary's kind. */
  kind: SummaryKind | null,
  /** The summary's depth. */
  depth: number | null,
  /** The message's role. */
  role: string | null,
  /** The message's seq. */
  seq: number | null,
  /** Its tokens. */
  tokenCount: number,
  /** The start of its text. */
  preview: string,
};

/** What a dissolve does (the dry run) or did. */
export type DissolvePlan = {
  /** The conversation. */
  conversationId: number,
  /** The summary dissolved. */
  target: SummaryView,
  /** What replaces it, in order. */
  restored: Array<RestoredItem>,
  /** Context items before. */
  contextItemsBefore: number,
  /** Context items after. */
  contextItemsAfter: number,
  /** Context tokens before. */
  contextTokensBefore: number,
  /** Context tokens after. */
  contextTokensAfter: number,
  /** `after - before`. */
  tokenDelta: number,
  /** Items after the target, which move. */
  itemsShifted: number,
  /** How far they move. */
  shift: number,
  /** Whether the summary row is kept. */
  keep: boolean,
  /** Whether it was written. */
  applied: boolean,
};

/** Parameters of `transplant`. */
export type TransplantParams = {
  /** Where the summaries come from. */
  sourceConversationId: number,
  /** Where they go. */
  targetConversationId: number,
  /** Write (default: plan only). */
  apply?: boolean,
};

/** Summaries to copy at one depth. */
export type DepthCount = {
  /** The depth. */
  depth: number,
  /** How many. */
  count: number,
};

/** An old → new id pair. */
export type IdPair = {
  /** The source summary. */
  from: string,
  /** Its copy. */
  to: string,
};

/** What a transplant does (the dry run) or did. */
export type TransplantPlan = {
  /** Source conversation. */
  sourceConversationId: number,
  /** Target conversation. */
  targetConversationId: number,
  /** The source's context summaries, in context order (they are prepended). */
  contextSummaries: Array<SummaryView>,
  /** Every summary to copy, by depth. */
  summariesByDepth: Array<DepthCount>,
  /** Summaries to copy (context ones and everything beneath). */
  summaryCount: number,
  /** Messages to copy. */
  messageCount: number,
  /** Message parts to copy. */
  partCount: number,
  /** Context items of the target before: summaries. */
  targetSummaryItems: number,
  /** Context items of the target before: messages. */
  targetMessageItems: number,
  /** Tokens the prepended items add to the target's context. */
  tokenOverhead: number,
  /** `file_…` ids the copies mention (their files stay registered to the source). */
  fileIds: Array<string>,
  /** Whether it was written. */
  applied: boolean,
  /** The copies of the context summaries, in order (after apply). */
  mapping: Array<IdPair>,
  /** Seq range of the copied messages in the target (after apply). */
  seqRange: [number, number] | null,
  /** Copied messages found in `messages_fts` after the flush (after apply). */
  messagesIndexed: number | null,
};

/* ---- Space: backup, storage stats, reclaim ---- */

/** Parameters of `backup`. */
export type BackupParams = {
  /** Absolute path of the copy (written as `<to>.partial`, checked, fsynced, then renamed). */
  to: string,
};

/** What a backup did. */
export type BackupReport = {
  /** The copy's path. */
  path: string,
  /** Bytes of the copy. */
  bytes: number,
  /** Pages copied. */
  pages: number,
  /** Backup steps (each at most [`BACKUP_STEP_PAGES`] pages). */
  steps: number,
  /** Wall time, ms. */
  elapsedMs: number,
  /** The longest step, ms. */
  longestStepMs: number,
  /** `PRAGMA integrity_check` of the copy: `["ok"]` when sound. */
  integrity: Array<string>,
};

/** Parameters of `storageStats`. */
export type StorageStatsParams = {
  /** Also measure every table and index (`dbstat`: reads every page). */
  tables?: boolean,
};

/** What one table or index holds (from `dbstat`). */
export type TableSpace = {
  /** Table or index name (`sqlite_schema` for the schema itself). */
  name: string,
  /** Bytes of its pages (`SUM(pgsize)`). */
  bytes: number,
  /** Pages it uses. */
  pages: number,
};

/**
 * The database file's space: pages, free pages, auto-vacuum mode and, when SQLite
 * was built with `dbstat` (the addon's bundled SQLite is), bytes per table.
 */
export type SpaceReport = {
  /** Page size, bytes. */
  pageSize: number,
  /** Pages in the file (main database, not the WAL). */
  pageCount: number,
  /** Pages on the freelist (space a vacuum would give back). */
  freelistCount: number,
  /** `pageSize × pageCount`. */
  databaseBytes: number,
  /** `none`, `full` or `incremental`. */
  autoVacuum: string,
  /** Every table and index by size, largest first (empty without `dbstat`). */
  tables: Array<TableSpace>,
  /** The engine's `maxDatabaseBytes`, when set. */
  maxDatabaseBytes: number | null,
  /** Live pages (`pageCount − freelistCount`) over `maxDatabaseBytes`. */
  overCap: boolean,
};

/** Parameters of `reclaimSpace`. */
export type ReclaimSpaceParams = {
  /** Free pages to give back at most (default: all, in steps of 64 pages). */
  maxPages?: number,
};

/** What `reclaimSpace` gave back. */
export type ReclaimSpaceResult = {
  /** Pages given back to the file system. */
  pages: number,
  /** Bytes given back (`pages × pageSize`). */
  bytes: number,
  /** Free pages left in the file. */
  freelistCount: number,
  /** The file's auto-vacuum mode (`none` gives nothing back: `lcm-tui vacuum` converts it). */
  autoVacuum: string,
};

/* ---- Retention ---- */

/** One retention policy (`retention` option, first matching policy wins). */
export type RetentionPolicy = {
  /**
   * Session-key glob (`*` within one `:`-separated segment, `**` across
   * segments, `?` one character); a conversation without a key is matched by
   * its session id.
   */
  match: string,
  /**
   * Write an archive of conversations idle for more than this many days (they
   * stay in the database).
   */
  archiveAfterDays?: number,
  /**
   * Archive, then remove from the database, conversations idle for more than
   * this many days (every row: messages, parts, summaries, links, index rows).
   */
  pruneAfterDays?: number,
};

/** Parameters of `prune`. */
export type PruneParams = {
  /** Report what would be archived and removed, change nothing. */
  dryRun?: boolean,
  /**
   * At most this many conversations per call (default 16): the plugin's
   * `maintain` calls it in small steps.
   */
  limit?: number,
  /**
   * The time ages are measured from (ISO 8601 or SQLite UTC text); default now.
   * For simulations and tests.
   */
  now?: string,
};

/** What `prune` does to one conversation. */
export type PruneKind = "archive" | "prune";

/** Why a conversation was picked. */
export type PruneReason = "age" | "cap";

/** One conversation archived (and removed), or that would be. */
export type PruneAction = {
  /** The conversation. */
  conversationId: number,
  /** Its session key, else its session id. */
  session: string,
  /** The policy's `match`. */
  policy: string,
  /** `archive` or `prune`. */
  action: PruneKind,
  /** `age` or `cap`. */
  reason: PruneReason,
  /** Its newest message's time (SQLite UTC text). */
  lastActivity: string,
  /** Days since then. */
  idleDays: number,
  /** Messages it holds. */
  messages: number,
  /** The archive's directory (written, reused, or that would be written). */
  archive: string | null,
  /** Done (false in a dry run, or when the conversation changed meanwhile). */
  done: boolean,
  /** Why it was not done, when it was not (dry run aside). */
  skipped: string | null,
};

/** What `prune` did (or would do). */
export type PruneReport = {
  /** Nothing was changed. */
  dryRun: boolean,
  /** The conversations, oldest activity first. */
  actions: Array<PruneAction>,
  /** Conversations due beyond `limit` (a later call takes them). */
  remaining: number,
  /** The database's bytes (pages × page size) before. */
  databaseBytes: number,
  /** `maxDatabaseBytes`, when set. */
  maxDatabaseBytes: number | null,
  /** Over the cap before this call. */
  overCap: boolean,
  /** Over the cap with no policy that could apply: only a warning. */
  capWarning: string | null,
  /** Messages removed from the database. */
  messagesRemoved: number,
  /** Bytes given back to the file system afterwards (incremental vacuum). */
  bytesReclaimed: number,
};

/** Parameters of `restoreArchive`. */
export type RestoreArchiveParams = {
  /** The archive's directory (or its `manifest.json`). */
  path: string,
};

/** What `restoreArchive` put back. */
export type RestoreReport = {
  /** The archive's directory. */
  archive: string,
  /** The conversation, under its original id. */
  conversationId: number,
  /** Messages put back. */
  messages: number,
  /** Rows per table put back. */
  counts: { [key in string]: number },
  /**
   * False when another conversation is now the session key's active one (the
   * restored conversation is then inactive).
   */
  active: boolean,
};

/** Where a pruned summary went. */
export type PrunedSummary = {
  /** The summary. */
  summaryId: string,
  /** The conversation that held it (removed with it). */
  conversationId: number,
  /** The archive's directory (`lcm-tui restore <archive>` puts it back). */
  archive: string,
};

/**
 * Which binding artifact the generated loader actually loaded: `'native'` for
 * a native addon, otherwise the `platformArchABI` of the WASI flavor. Every
 * flavor napi-rs can build is listed, because `NAPI_RS_NATIVE_LIBRARY_PATH`
 * can point the loader at a WASI artifact this package does not build itself.
 */
export declare const __napiBindingTarget: 'native' | 'wasm32-wasi' | 'wasm32-wasip1'

/**
 * A Lossless Context Management engine over one SQLite database. Create it with
 * `LcmEngine.open(options)`; every method is async and runs off the JS thread.
 */
export declare class LcmEngine {
  /**
   * Whether the session's context is over the threshold:
   * `currentTokens = max(stored, currentTokenCount)`, `threshold =
   * floor(contextThreshold × tokenBudget)`, due when strictly greater. Reads only.
   */
  evaluate(params: EvaluateParams): Promise<Evaluation>
  /**
   * Compacts the session's conversation (`mode`: incremental, sweep, untilUnder).
   * Summarizer calls run with no database connection held; each pass is written
   * in one transaction. Resolves with a result even when there is nothing to do,
   * the summarizer fails (`ok: false`, `errorCode`) or the call is aborted.
   * Rejects only for bad parameters and database failures.
   */
  compact(params: CompactParams): Promise<CompactResult>
  /**
   * The plugin's lifecycle hook: ingests `messages.slice(prePromptMessageCount)`
   * in one batch, then runs a threshold sweep when the context is over the
   * threshold. Resolves with `{ ingest, compaction }`.
   */
  afterTurn<M extends AgentMessage = StoredAgentMessage>(params: AfterTurnParams<M>): Promise<AfterTurnResult>
  /**
   * Stops every running compaction of the session (matched by session id or
   * key) between passes; an in-flight summarizer call is abandoned and nothing
   * of it is written. Returns how many calls were running.
   */
  cancel(session: string): number
  /** `PRAGMA integrity_check` rows: `['ok']` for a sound database. */
  integrityCheck(): Promise<string[]>
  /**
   * Checks the store's invariants for one conversation (`conversationId`) or all
   * (`all: true`): SQLite integrity, context ordinals, links, cycles, coverage of
   * every message exactly once, recomputed summary columns, full-text rows; and
   * lists broken summaries (ending with a fallback or truncation marker) in repair
   * order. `apply: true` repairs what can be repaired without loss, then
   * summarizes broken summaries again (each in its own transaction; a summarizer
   * error stops and is reported in `error`). Resolves with a report whose `ok` is
   * true when nothing is (left) to repair.
   */
  doctor(params: DoctorParams): Promise<DoctorReport>
  /**
   * Replaces a summary of the context list, at its position, by what it was made
   * from (a condensed summary by its children, a leaf by its messages). Without
   * `apply` it only plans; with it, one transaction also removes the summary, its
   * links and FTS rows (`keep: true` keeps the row, unreferenced). Rejects with
   * `LCM_NOT_FOUND` (listing what exists) or `LCM_INVALID_INPUT` (naming the
   * summary that holds one not in the context list).
   */
  dissolve(params: DissolveParams): Promise<DissolvePlan>
  /**
   * Copies the source conversation's context summaries, every summary beneath
   * them and their messages and parts, under new ids, to the front of the target's
   * context list. Without `apply` it only plans. Refuses when the target already
   * holds the text of a summary to copy.
   */
  transplant(params: TransplantParams): Promise<TransplantPlan>
  /**
   * Searches messages and/or summaries. `mode: "regex"` (default; Rust regex
   * syntax, linear time) or `"full_text"` (FTS5, every term quoted; CJK through
   * substring matching). Needs `conversationId`, `allConversations: true` or a
   * `grantId`. Resolves with structured hits and the tool's `text` rendering.
   */
  grep(params: GrepParams): Promise<GrepResult>
  /**
   * Describes a `sum_…` summary (lineage, manifest, content) or a `file_…` large
   * file (exploration summary; content with `expandFile` or `includeContent`).
   * Resolves with null for unknown ids or ids outside `conversationId`.
   */
  describe(id: string, options?: DescribeOptions): Promise<DescribeResult | null>
  /**
   * Walks from summaries to their sources (and leaf messages with
   * `includeMessages`), oldest first, stopping at the token cap (`truncated`).
   */
  expand(params: ExpandParams): Promise<ExpandResult>
  /**
   * Creates an in-memory delegation grant scoping grep/describe/expand to some
   * conversations with a token budget and a time to live.
   */
  createGrant(params: CreateGrantParams): Promise<Grant>
  /** Revokes a grant; resolves false when the id is unknown. */
  revokeGrant(grantId: string): Promise<boolean>
  /** A grant's current state (budget left, expiry, revoked), or null. */
  getGrant(grantId: string): Promise<Grant | null>
  /**
   * Builds (or catches up) the in-memory message catalog behind `grep` now, so
   * the next search does not pay for it. Optional: `grep` does it on demand.
   */
  warmRecallIndex(): Promise<RecallIndexInfo>
  /**
   * JSON-schema definitions of `lcm_grep`, `lcm_describe`, `lcm_expand` and
   * `lcm_expand_query`, to register as agent tools unchanged.
   */
  getRecallToolDefinitions(): Array<RecallToolDefinition>
  /**
   * The summaries a rewrite would touch, in order: bottom-up by depth, chronological
   * within a depth; `summaryId` means that summary and everything beneath it
   * (`subtree: false` for the summary alone). Rejects `LCM_NOT_FOUND` naming what
   * exists for unknown conversations, summaries or depths.
   */
  planRewrite(params: PlanRewriteParams): Promise<Array<PlannedRewrite>>
  /**
   * Rewrites summaries in place with the current prompts. A dry run (the default)
   * writes nothing; `apply: true` updates each summary's content and token count
   * (and its full-text rows) in its own transaction. Resolves with the report; a
   * summarizer error rejects with its code (`LCM_LLM_AUTH`, `LCM_CALLBACK`, …) after
   * stopping the run — rewrites applied before it stay, and were reported through
   * `onProgress`. `signal` (an AbortSignal) cancels the in-flight summarizer call
   * (its HTTP request is closed) and rejects with `LCM_ABORTED`; nothing partial is
   * written.
   */
  rewrite(params: RewriteParams): Promise<RewriteReport>
  /**
   * Takes a consistent copy of the database at `to` while writers keep writing
   * (SQLite's online backup API, 512 KiB per step, one read snapshot). The copy is
   * written as `<to>.partial`, must pass `integrity_check`, is fsynced, then
   * renamed to `to`; the large files go to `lcm-files` beside it. Rejects with
   * `LCM_IO` (nothing left under `to`'s name) or `LCM_INVALID_INPUT` (`to`
   * missing, relative, or the database itself).
   */
  backup(params: BackupParams): Promise<BackupReport>
  /**
   * The file's pages, free pages and auto-vacuum mode; with `tables: true` also
   * the bytes of every table and index (SQLite's `dbstat`, reads every page).
   */
  storageStats(params?: StorageStatsParams): Promise<SpaceReport>
  /**
   * Gives free pages back to the file system in short steps (64 pages per write
   * job): after pruning, on a file in `auto_vacuum = INCREMENTAL` (every new
   * file; `lcm-tui vacuum` converts an older one).
   */
  reclaimSpace(params?: ReclaimSpaceParams): Promise<ReclaimSpaceResult>
  /**
   * Applies the retention policies (`retention`, `maxDatabaseBytes`): archives
   * conversations idle past `archiveAfterDays`; archives, then removes, those
   * past `pruneAfterDays` (over the cap, oldest first ahead of their days). An
   * archive (zstd JSONL per month, manifest with sha256) is fsynced before the
   * removal commits. At most `limit` (16) conversations per call; `dryRun`
   * changes nothing. Then gives the freed pages back in small steps.
   */
  prune(params?: PruneParams): Promise<PruneReport>
  /**
   * Puts a pruned conversation back from its archive (`path`: the archive's
   * directory or manifest), byte for byte under its original ids, in one
   * transaction. Rejects with `LCM_IO` when a file does not match the manifest
   * and `LCM_INVALID_INPUT` when the conversation is in the database.
   */
  restoreArchive(params: RestoreArchiveParams): Promise<RestoreReport>
  /**
   * Where a summary that retention removed went: `{ summaryId, conversationId,
   * archive }`, or null when it was never pruned (recall tools name the archive
   * instead of answering "not found").
   */
  prunedSummary(summaryId: string): Promise<PrunedSummary | null>
  /**
   * Opens (creating and migrating when needed) the database and returns an engine.
   * Rejects with `LCM_DB_OPEN` when the file cannot be opened or is not SQLite, or
   * when another copy of the addon, loaded into this process from another path,
   * has it open (two SQLite libraries on one file corrupt it; `native.js` shares
   * one copy per version); `LCM_INVALID_INPUT` for unknown or out-of-range options.
   */
  static open(options?: LcmOptions): Promise<LcmEngine>
  /**
   * Test hook, never called by accident: the next store job of `kind`
   * (`'write'` or `'read'`) panics as a bug would, to show that a panic is
   * contained (`LCM_INTERNAL` naming the operation, reported to `onLog`) and the
   * engine keeps serving.
   */
  _debugPanicNextJob(kind: 'write' | 'read'): void
  /** The database path this engine uses. */
  get dbPath(): string
  /**
   * Stores one AgentMessage at the end of the session's conversation (created on
   * first use). Resolves after COMMIT with `{ ingested, conversationId, messageId, seq }`;
   * `ingested` is false for heartbeats and replays of a known `entryId`.
   */
  ingest<M extends AgentMessage = StoredAgentMessage>(params: IngestParams<M>): Promise<IngestResult>
  /**
   * Stores a turn's messages in one transaction (all or nothing). Replays of a
   * known `entryId` and identical duplicates inside the batch are skipped.
   */
  ingestBatch<M extends AgentMessage = StoredAgentMessage>(params: IngestBatchParams<M>): Promise<IngestBatchResult>
  /**
   * Commits a turn's messages and its receipt in one transaction, idempotently:
   * the same `advancementKey` with the same payload hash resolves `duplicate` and
   * writes nothing; with another hash it rejects with `LCM_TURN_CONFLICT` and
   * writes nothing. Resolves after COMMIT with `{ status, conversationId, ingestedCount }`.
   */
  commitTurn<M extends AgentMessage = StoredAgentMessage>(params: CommitTurnParams<M>): Promise<CommitTurnResult>
  /**
   * Imports what the store lacks of a session transcript (`sessionFile`: a JSONL
   * file read streaming; or `transcriptEntries`: the host's rows): all of it for a
   * new conversation, the missing tail otherwise, never a duplicate. Resolves with
   * `{ bootstrapped, importedMessages, reason, conversationId, transcriptMessages, skippedEntries, needsWholeTranscript }`.
   */
  bootstrap(params: BootstrapParams): Promise<BootstrapResult>
  /** The conversation of a session (`{ sessionId?, sessionKey? }`), or null. */
  getConversation(params: SessionLookup): Promise<Conversation | null>
  /** Every conversation, newest first. */
  listConversations(): Promise<Array<Conversation>>
  /**
   * Applies the end of a session to its conversation (`reason`: `new` prunes the
   * context to summaries of depth ≥ `retainDepth`; `reset`, `idle`, `daily`,
   * `compaction` archive it and start a fresh conversation for the key;
   * `deleted` archives it; `restart`, `shutdown`, `unknown` change nothing). A
   * second event for the same ending session changes nothing. One transaction.
   */
  endSession(params: EndSessionParams): Promise<EndSessionResult>
  /**
   * Archives a conversation (`cause` default `operator`; `successor: true` also
   * starts a fresh active conversation for its key), in one transaction.
   */
  archiveConversation(params: ArchiveParams): Promise<ArchiveResult>
  /**
   * Makes an archived conversation active again; the conversation holding its
   * key, if any, is archived (`operator`) in the same transaction.
   */
  unarchiveConversation(conversationId: number): Promise<ArchiveResult>
  /**
   * `/new`'s pruning of one conversation's context list: message items and
   * summary items of depth < `retainDepth` (default 2) leave it; nothing is
   * deleted, pruned items stay reachable by recall.
   */
  pruneContext(params: PruneContextParams): Promise<EndSessionResult>
  /** Every conversation of a session key, active and archived, newest first. */
  sessionFamily(sessionKey: string): Promise<Array<Conversation>>
  /**
   * Every stored message of a conversation, rebuilt exactly as ingested, oldest
   * first: large files externalized at ingest are re-inlined from disk. Pass
   * `{ expandFiles: false }` for the stored form with `[LCM File: …]` references.
   */
  getMessages<M extends AgentMessage = StoredAgentMessage>(conversationId: number, options?: GetMessagesOptions): Promise<Array<M>>
  /** The context list (what the model sees) with each item's token count. */
  getContextItems(conversationId: number): Promise<Array<ContextItem>>
  /** Every summary of a conversation with its source links. */
  getSummaries(conversationId: number): Promise<Array<SummaryWithLinks>>
  /** Row counts and token totals of a conversation. */
  getStats(conversationId: number): Promise<ConversationStats>
  /**
   * The database (path, size, largest tables, conversations active and archived)
   * and, for a session (`sessionId` / `sessionKey`), its context: items and
   * tokens against `tokenBudget`, summaries per depth, the last compaction of this
   * process and pending work. Reads only; without params, the database only.
   */
  status(params?: StatusParams): Promise<EngineStatus>
  /**
   * Low-level: replaces a contiguous run of context items (`messageIds` for a leaf,
   * `summaryIds` of one depth for a condensed node) by one summary with the given
   * text, in one transaction; metadata is computed from the sources. Resolves with
   * the new `sum_…` id. Compaction uses the same primitive.
   */
  insertSummary(params: InsertSummaryParams): Promise<string>
  /**
   * Builds the model context for a session under `tokenBudget`: summaries as XML
   * user messages, a fresh tail of raw messages, tool pairing repaired. Returns the
   * live `messages` unchanged when the store cannot do better (no conversation,
   * store trailing, assembly failure — see `stats.fallbackReason`). Rejects with
   * `LCM_INVALID_INPUT` without `sessionId` or with a non-positive budget.
   */
  assemble<M extends AgentMessage = StoredAgentMessage>(params: AssembleParams<M>): Promise<AssembleResult<M>>
  /**
   * Replaces the deterministic exploration summaries of large files by
   * summaries the large-file model writes (`largeFileSummaryModel`), off the
   * writer thread: up to `limit` files (default 4), of one session when
   * `sessionId`/`sessionKey` is given, oldest first. Each file's row, the
   * reference text of the stored messages that embed it and their full-text rows
   * change in one transaction; `getMessages` still returns the original bytes. A
   * failed model call keeps the deterministic summary and is retried by a later
   * call with backoff (at most 5 attempts). Without a large-file model it does
   * nothing (`enabled: false`).
   */
  summarizeLargeFiles(params?: SummarizeLargeFilesParams): Promise<SummarizeLargeFilesResult>
  /**
   * Runs the summarization pipeline on a source text (prompt for the depth, the
   * configured summarizer or host callback, escalation normal → aggressive →
   * truncation, overage cap) without touching the database. Resolves with
   * `{ content, level, model, tokensIn, tokensOut }`; rejects with the summarizer's
   * error (`LCM_LLM_AUTH`, `LCM_LLM_RATE_LIMIT`, `LCM_LLM_TRANSIENT`,
   * `LCM_LLM_BAD_RESPONSE`, `LCM_CALLBACK`), in which case compaction writes nothing.
   */
  summarizeText(params: SummarizeTextParams): Promise<SummarizeResult>
  /**
   * Finishes queued writes, checkpoints and closes the database, and frees what
   * the engine holds in memory (the recall index: about 10 MiB per 100k
   * messages), off the JavaScript thread. A recall index still being built
   * (right after `open`) is abandoned, not waited for. Later calls reject with
   * `LCM_CLOSED`. Closing twice is harmless; an engine never closed is freed
   * off the JavaScript thread too once it is garbage-collected.
   */
  close(): Promise<void>
}

/**
 * A unified diff of a template's override against its embedded default (`diff` is
 * null when there is no override).
 */
export declare function diffPrompt(name: string, promptDir?: string): PromptDiff

/**
 * Writes the embedded templates as editable `<name>.jinja` files into `dir`
 * (default `~/.config/lcm-tui/prompts`). Existing files are skipped (and reported)
 * unless `force`. Throws `LCM_IO` when the directory cannot be written.
 */
export declare function exportPrompts(params?: { dir?: string; force?: boolean }): PromptExportReport

/**
 * `2026-02-17 15:37–17:21 PST` within a day, `2026-02-17 – 2026-02-18` across days.
 * Throws `LCM_CONFIG` for an unknown zone.
 */
export declare function formatTimeRange(earliest: number | string | Date, latest: number | string | Date, timezone?: string): string

/**
 * `2026-02-17 15:37 PST`: a time (epoch ms, ISO string or Date) in `timezone`
 * (IANA; default `TZ`, else UTC). Throws `LCM_CONFIG` for an unknown zone.
 */
export declare function formatTimestamp(value: number | string | Date, timezone?: string): string

/**
 * Forwards Ctrl-C to the running `lcm-tui` command (`rewrite` drops its in-flight
 * summarizer request and stops; nothing partial is written). Returns false when no
 * running command listens, so the caller can exit at once.
 */
export declare function interruptCli(): boolean

/**
 * Each template and where it comes from: embedded, or the override file in
 * `promptDir` (default `~/.config/lcm-tui/prompts`) that wins, with the reason an
 * override cannot be used.
 */
export declare function listPrompts(promptDir?: string): PromptList

/**
 * Renders the summarization prompt for a depth (0 leaf, 1, 2, 3+) exactly as the
 * engine would send it, with the system prompt, the template used and its source
 * (`embedded` or the override file). Throws `LCM_TEMPLATE` for a broken override.
 */
export declare function renderPrompt(params: RenderPromptParams): RenderedPrompt

/**
 * Runs `lcm-tui` with `argv` (the arguments after the program name) on its own
 * thread, writing to the process's stdout and stderr. Resolves with the exit code:
 * 0 success, 1 the job failed, 2 bad usage.
 */
export declare function runCli(argv: Array<string>): Promise<number>

/**
 * The active text of a template (`leaf`, `condensed-d1`, …; case-insensitive,
 * extension optional): the override file as written, else the embedded default.
 */
export declare function showPrompt(name: string, promptDir?: string): ShownPrompt

/** The SQLite library version compiled into the addon. */
export declare function sqliteVersion(): string
