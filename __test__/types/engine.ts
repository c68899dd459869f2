// Consumer fixture: compiled by `.ci/run` with `tsc --noEmit -p __test__/types` (strict,
// NodeNext, ESM) against OpenClaw's published SDK types. It is never run: it proves that
// a TypeScript plugin can call every public method with the documented shapes, and that
// OpenClaw's `AgentMessage` goes in and comes back out without a cast.
import type {
  AgentMessage as HostMessage,
  HarnessContextEngine,
} from 'openclaw/plugin-sdk/agent-harness-runtime'
import {
  LcmEngine,
  diffPrompt,
  exportPrompts,
  formatTimeRange,
  formatTimestamp,
  listPrompts,
  renderPrompt,
  runCli,
  showPrompt,
  sqliteVersion,
  type AgentMessage,
  type AssembleResult,
  type BootstrapResult,
  type CommitTurnResult,
  type CompactResult,
  type LcmError,
  type LcmErrorCode,
  type RenderedPrompt,
  type SummaryKind,
  type SummaryMessage,
} from 'lcm-native'

type HostIngest = Parameters<HarnessContextEngine['ingest']>[0]
type HostAssemble = Parameters<HarnessContextEngine['assemble']>[0]
type HostCompact = Parameters<HarnessContextEngine['compact']>[0]
type HostAfterTurn = Parameters<NonNullable<HarnessContextEngine['afterTurn']>>[0]
type HostCommitTurn = Parameters<NonNullable<HarnessContextEngine['commitTurn']>>[0]
type HostBootstrap = Parameters<NonNullable<HarnessContextEngine['bootstrap']>>[0]

export async function lifecycle(
  engine: LcmEngine,
  ingest: HostIngest,
  assemble: HostAssemble,
  compact: HostCompact,
  afterTurn: HostAfterTurn,
  commit: HostCommitTurn,
  boot: HostBootstrap,
): Promise<HostMessage[]> {
  // The host's params objects are passed through as they are (extra keys are ignored).
  await engine.ingest(ingest)
  await engine.ingestBatch({ sessionId: ingest.sessionId, messages: [ingest.message] })
  const assembled = await engine.assemble({ ...assemble, tokenBudget: assemble.tokenBudget ?? 8000 })
  const forModel: HostMessage[] = assembled.messages
  await engine.compact({ ...compact, tokenBudget: compact.tokenBudget ?? 8000 })
  await engine.afterTurn({ ...afterTurn, tokenBudget: afterTurn.tokenBudget ?? 8000 })
  const committed: CommitTurnResult = await engine.commitTurn(commit)
  const status: 'committed' | 'duplicate' = committed.status
  void status
  const booted: BootstrapResult = await engine.bootstrap(boot)
  void booted.importedMessages
  const stored: HostMessage[] = await engine.getMessages<HostMessage>(committed.conversationId ?? 1)
  return [...forModel, ...stored]
}

// A summary `assemble` presents is one of OpenClaw's user messages (timestamp included).
export function summariesAreHostMessages(m: SummaryMessage): HostMessage {
  return m
}

export function ownMessagesAcceptHostMessages(m: HostMessage): AgentMessage {
  return m
}

export async function everything(host: HostMessage[]): Promise<void> {
  const engine = await LcmEngine.open({ dbPath: ':memory:', freshTailCount: 8, summaryFormat: 'xml' })
  const aliased = await LcmEngine.open({ databasePath: ':memory:', largeFileThresholdTokens: 30000 })
  await aliased.close()
  const path: string = engine.dbPath
  void path
  const r = await engine.ingest({ sessionId: 's', message: { role: 'user', content: 'hi', timestamp: Date.now() } })
  await engine.ingest({ sessionId: 's', message: { role: 'bashExecution', command: 'ls', output: 'a', exitCode: 0 } })
  await engine.ingestBatch({ sessionId: 's', messages: host, entryIds: host.map(() => null) })
  const conversation = await engine.getConversation({ sessionId: 's' })
  const id = conversation?.conversationId ?? r.conversationId ?? 1
  await engine.listConversations()
  const plain = await engine.getMessages(id, { expandFiles: false })
  void plain[0]?.role
  await engine.getContextItems(id)
  await engine.getSummaries(id)
  await engine.getStats(id)
  await engine.insertSummary({ conversationId: id, content: 'summary', messageIds: [1] })
  const assembled: AssembleResult<HostMessage> = await engine.assemble({ sessionId: 's', tokenBudget: 4000, messages: host })
  const back: HostMessage[] = assembled.messages
  void back
  void assembled.stats.droppedForBudget
  await engine.summarizeText({ sourceText: 'text' })
  await engine.evaluate({ sessionId: 's', tokenBudget: 4000 })
  const controller = new AbortController()
  const compacted: CompactResult = await engine.compact({
    sessionId: 's',
    tokenBudget: 4000,
    mode: 'sweep',
    abortSignal: controller.signal,
    onProgress: (pass) => void pass.tokensOut,
  })
  void compacted.reason
  await engine.afterTurn({ sessionId: 's', messages: host, prePromptMessageCount: 0, tokenBudget: 4000, sessionFile: '/tmp/s.jsonl' })
  await engine.commitTurn({ sessionId: 's', advancementKey: 'turn-1', messages: host, isHeartbeat: false })
  await engine.bootstrap({ sessionId: 's', sessionFile: '/tmp/s.jsonl' })
  await engine.bootstrap({ sessionId: 's', transcriptEntries: [{ type: 'message', id: 'e1', parentId: null, message: { role: 'user', content: 'x' } }] })
  engine.cancel('s')
  await engine.integrityCheck()
  await engine.doctor({ conversationId: id })
  await engine.dissolve({ conversationId: id, summaryId: 'sum_x' })
  await engine.transplant({ sourceConversationId: id, targetConversationId: id + 1 })
  await engine.grep({ pattern: 'x', conversationId: id })
  await engine.describe('sum_x', { conversationId: id })
  await engine.expand({ summaryId: 'sum_x' })
  const grant = await engine.createGrant({ conversationIds: [id] })
  await engine.getGrant(grant.grantId)
  await engine.revokeGrant(grant.grantId)
  await engine.warmRecallIndex()
  engine.getRecallToolDefinitions().map((t) => t.name)
  await engine.planRewrite({ conversationId: id, all: true })
  await engine.rewrite({ conversationId: id, depth: 0, apply: false })
  await engine.close()
  const rendered: RenderedPrompt = renderPrompt({ depth: 0, sourceText: 'x' })
  void rendered.prompt
  listPrompts()
  showPrompt('leaf')
  diffPrompt('leaf')
  exportPrompts({ dir: '/tmp/prompts' })
  formatTimestamp(Date.now(), 'UTC')
  formatTimeRange(0, Date.now())
  sqliteVersion()
  await runCli(['--help'])
}

// Closed sets are unions generated from the Rust enums: a misspelt code or kind fails.
export function closedSets(err: LcmError, kind: SummaryKind): boolean {
  // @ts-expect-error: not an error code
  const bogus: LcmErrorCode = 'LCM_BOGUS'
  void bogus
  return err.code === 'LCM_NOT_FOUND' && kind !== 'leaf'
}
