// Types of `lcm-native/openclaw`. Structural (no import of the `openclaw`
// package, which users of the plain library do not install); checked against
// OpenClaw's own `ContextEngine` and `OpenClawPluginApi` in __test__/types/.

import type { AgentMessage, LcmOptions } from '../index.js'
import type { LcmPluginConfig, ResolvedLcmPluginConfigValues } from './config.mjs'

// The config types are generated from CONFIG_KEYS (`npm run gen:config`).
export type { LcmPluginConfig, ResolvedLcmPluginConfigValues }

/** One row of `CONFIG_KEYS` (or one property of an `object` row). */
export interface ConfigKey {
  /** The config name. */
  key: string
  /** Other names accepted for it. */
  aliases?: string[]
  /** The environment variable(s) that override it, the first one winning. */
  env?: string | string[]
  /**
   * How a value is parsed; `list`: an array of strings, or a comma-separated string;
   * `providers`: `[{provider, model}]`, or `provider/model,…`; `object`: the
   * `properties` named (unknown ones warned); `array`: checked by `parse`; `retention`: an array of policies, or its JSON text.
   */
  type: 'number' | 'integer' | 'boolean' | 'string' | 'list' | 'providers' | 'object' | 'array' | 'retention'
  /** An `object` key's properties, each a row of its own. */
  properties?: ConfigKey[]
  /** An `array` key's item schema (JSON schema). */
  items?: Record<string, unknown>
  /** An `array` key's parser: its value and warnings, or undefined when invalid. */
  parse?: (raw: unknown) => { value: unknown; warnings: string[] } | undefined
  /** The TypeScript type written for it, when the value type does not say it. */
  tsType?: string
  /** The values a `string` key accepts. */
  enum?: string[]
  /** Why a lossless-claw key has no effect here (a start-up warning when it is set). */
  noEffect?: string
  /** The `LcmEngine.open` option it feeds; absent when the plugin uses it. */
  option?: string
  /** One line for the schema, the UI and the types. */
  description: string
  /** The default (the engine's, for an engine option). */
  default?: unknown
  minimum?: number
  maximum?: number
  /** The label of its UI hint; absent: no hint. */
  label?: string
  /** `resolveConfig` sets it to `default` when unset. */
  resolved?: boolean
}

/** A host LLM: the shape of OpenClaw's `api.runtime.llm`. */
export interface HostLlm {
  complete(params: {
    messages: Array<{ role: 'system' | 'user' | 'assistant'; content: string }>
    systemPrompt?: string
    maxTokens?: number
    model?: string
    purpose?: string
    signal?: AbortSignal
  }): Promise<{ text: string; model?: string }>
}

/** The resolved configuration (env over plugin config over defaults). */
export interface ResolvedLcmPluginConfig extends ResolvedLcmPluginConfigValues {
  /** What `LcmEngine.open` receives. */
  engineOptions: LcmOptions
  /** Unknown keys and unparsable values (ignored). */
  warnings: string[]
}

/** Options of `createContextEngine`. */
export interface CreateContextEngineOptions {
  /** Plugin config object (reference key names). */
  config?: LcmPluginConfig | Record<string, unknown>
  /** Environment to read `LCM_*` variables from (default `process.env`). */
  env?: Record<string, string | undefined>
  /** Host LLM for summaries (default: the configured provider, else offline). */
  llm?: HostLlm
  logger?: { info?: (msg: string) => void; warn?: (msg: string) => void; error?: (msg: string) => void }
  /** An already resolved configuration (wins over `config` / `env`). */
  resolvedConfig?: ResolvedLcmPluginConfig
  /** Where the package is installed, named by `LCM_NATIVE_MISSING` (default: this module's package). */
  packageDir?: string
  /** The clock of the summary spend guard and the prompt-cache TTL, in ms (default `Date.now`). */
  now?: () => number
}

/** `info` of the engine. */
export interface LcmEngineInfo {
  id: string
  name: string
  version: string
  ownsCompaction: boolean
  turnMaintenanceMode: 'background'
  transcriptSemantics: {
    currentTurnFence: 'before-current-turn-entry-v1'
    turnAdvancementIdempotency: 'atomic-idempotent-v1'
  }
  acceptedHostParams: string[]
}

/** A transcript anchor (OpenClaw's `TranscriptEntryAnchor`). */
export interface TurnAnchor {
  readonly agentId: string
  readonly sessionId: string
  readonly sessionKey: string
  readonly storePath: string
  readonly generation: string
  readonly entryId: string
  readonly rawSeq: number
  readonly effectiveParentId: string | null
  readonly activeMessagePosition: number
  readonly idempotencyKey?: string
}

/** The admitted user entry of a durable turn. */
export interface TurnAdmission extends TurnAnchor {
  readonly logicalTurnId: string
  readonly role: 'user'
}

/** Host context passed to most lifecycle calls. */
export interface HostCallContext {
  runtimeSettings?: { limits?: { promptTokenBudget?: number | null } } & Record<string, unknown>
  runtimeContext?: Record<string, unknown> & { tokenBudget?: number; currentTokenCount?: number }
  sessionTarget?: Record<string, unknown>
}

export interface CompactOutcome {
  ok: boolean
  compacted: boolean
  reason?: string
  result?: { tokensBefore: number; tokensAfter?: number; details?: unknown }
}

export interface MaintenanceOutcome {
  changed: boolean
  bytesFreed: number
  rewrittenEntries: number
  reason?: string
}

/** The lcm-native context engine. */
export declare class LcmContextEngine {
  constructor(options?: CreateContextEngineOptions)
  readonly info: LcmEngineInfo
  /** Resolves once the shared database opened (or failed to). */
  readonly ready: Promise<void>
  ingest(params: { sessionId: string; sessionKey?: string; message: AgentMessage | object; isHeartbeat?: boolean }): Promise<{ ingested: boolean }>
  ingestBatch(params: { sessionId: string; sessionKey?: string; messages: Array<AgentMessage | object>; isHeartbeat?: boolean }): Promise<{ ingestedCount: number }>
  assemble(params: HostCallContext & { sessionId: string; sessionKey?: string; messages: Array<AgentMessage | object>; tokenBudget?: number }): Promise<{ messages: any[]; estimatedTokens: number; systemPromptAddition?: string }>
  compact(params: HostCallContext & {
    sessionId: string
    sessionKey?: string
    tokenBudget?: number
    force?: boolean
    currentTokenCount?: number
    compactionTarget?: 'budget' | 'threshold'
    customInstructions?: string
    abortSignal?: AbortSignal
  }): Promise<CompactOutcome>
  afterTurn(params: HostCallContext & {
    sessionId: string
    sessionKey?: string
    sessionFile?: string
    messages: Array<AgentMessage | object>
    prePromptMessageCount: number
    isHeartbeat?: boolean
    tokenBudget?: number
  }): Promise<void>
  commitTurn(params: HostCallContext & {
    advancementKey: string
    admission: TurnAdmission
    terminal: TurnAnchor
    messages: Array<AgentMessage | object>
    sessionId: string
    sessionKey?: string
    isHeartbeat?: boolean
  }): Promise<{ status: 'committed' | 'duplicate' }>
  bootstrap(params: HostCallContext & { sessionId: string; sessionKey?: string; sessionFile: string }): Promise<{ bootstrapped: boolean; importedMessages?: number; reason?: string }>
  maintain(params: HostCallContext & { sessionId: string; sessionKey?: string; sessionFile: string; abortSignal?: AbortSignal }): Promise<MaintenanceOutcome>
  prepareSubagentSpawn(params: {
    parentSessionKey: string
    childSessionKey: string
    contextMode?: 'isolated' | 'fork'
    ttlMs?: number
  }): Promise<{ rollback: () => void | Promise<void> } | undefined>
  onSubagentEnded(params: { childSessionKey: string; reason: 'deleted' | 'completed' | 'swept' | 'released' }): Promise<void>
  dispose(): Promise<void>
}

/** Builds the context engine over the shared database of the configuration. */
export declare function createContextEngine(options?: CreateContextEngineOptions): LcmContextEngine

/** An agent tool as OpenClaw runs it. */
export interface LcmRecallTool {
  name: string
  label: string
  description: string
  parameters: Record<string, unknown>
  execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<{ content: Array<{ type: 'text'; text: string }>; details: unknown }>
}

/** The part of OpenClaw's `OpenClawPluginApi` that `register` uses. */
export interface LcmPluginHostApi {
  pluginConfig?: Record<string, unknown>
  registrationMode?: string
  logger?: { info?: (msg: string) => void; warn?: (msg: string) => void; error?: (msg: string) => void }
  runtime?: unknown
  registerContextEngine(id: string, factory: (ctx: any) => LcmContextEngine | Promise<LcmContextEngine>): void
  registerTool(factory: (ctx: { sessionKey?: string; sessionId?: string }) => LcmRecallTool | null, opts?: { name?: string }): void
  /** `gateway_stop` / `gateway_start`, and the session lifecycle hooks `before_reset`, `session_end`, `session_start`. */
  on?(hookName: 'gateway_stop' | 'gateway_start' | 'before_reset' | 'session_end' | 'session_start', handler: (event: any, ctx: any) => Promise<void> | void): void
  /** `/lcm` and `/lossless` are registered through it when the host has it. */
  registerCommand?(command: LcmCommandDefinition): void
}

/** A chat command as OpenClaw's `registerCommand` takes it (`/lcm`, `/lossless`). */
export interface LcmCommandDefinition {
  name: string
  description: string
  acceptsArgs: boolean
  requireAuth: boolean
  handler(ctx: { args?: string; sessionKey?: string; sessionId?: string }): Promise<{ text: string }>
}

/**
 * Registers the engine `lcm-native`, the four recall tools, the `/lcm` command
 * (alias `/lossless`), the session lifecycle hooks and the shutdown on `gateway_stop`. Resolves `ready` once the database opened.
 */
export declare function register(
  api: LcmPluginHostApi,
  options?: { config?: LcmPluginConfig; env?: Record<string, string | undefined>; llm?: HostLlm },
): { ready: Promise<void>; shutdown: () => Promise<void> }

export declare const ENGINE_ID: 'lcm-native'
export declare const ENGINE_NAME: string
export declare const ACCEPTED_HOST_PARAMS: readonly string[]
export declare const TOOL_NAMES: readonly ['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query']
export declare const COMMAND_NAMES: readonly ['lcm', 'lossless']
/** Runs one `/lcm` invocation (`args`: what follows the command name) for a session; resolves with the reply text. */
export declare function runLcmCommand(args: string, session: { sessionKey?: string; sessionId?: string }, deps: { handle: unknown; config: ResolvedLcmPluginConfig }): Promise<string>
export declare const DEFAULT_TOKEN_BUDGET: number
export declare const CONFIG_KEYS: ReadonlyArray<ConfigKey>
export declare function resolveConfig(pluginConfig?: LcmPluginConfig | Record<string, unknown>, env?: Record<string, string | undefined>): ResolvedLcmPluginConfig
export declare function resolveTokenBudget(params: HostCallContext & { tokenBudget?: number }, config: ResolvedLcmPluginConfig): number
/** Throws `LCM_INVALID_INPUT` unless both anchors name the same agent, session, store and generation as the call. */
export declare function checkTurnAnchors(params: { sessionId: string; admission?: unknown; terminal?: unknown }): void

declare const entry: {
  id: 'lcm-native'
  name: string
  description: string
  register: typeof register
}
export default entry
