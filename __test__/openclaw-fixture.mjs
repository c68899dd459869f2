// Test fixture for lcm-native/openclaw: a fake OpenClaw plugin api, a fake host
// LLM, durable-turn anchors, and session transcripts (JSONL) to bootstrap from.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './helpers.mjs'

/** Options that make compaction happen on small conversations. */
export const SMALL_CONFIG = {
  freshTailCount: 4,
  leafChunkTokens: 600,
  leafMinFanout: 2,
  condensedMinFanout: 2,
  leafTargetTokens: 120,
  condensedTargetTokens: 120,
  maxSweepIterations: 200,
  timezone: 'UTC',
}

/** A fresh database path under a temp dir. */
export function dbFile(prefix = 'lcm-oc-') {
  return join(tempDir(prefix), 'lcm.db')
}

/** A config object for a fresh database. */
export function freshConfig(extra = {}) {
  return { databasePath: dbFile(), ...SMALL_CONFIG, ...extra }
}

/** Words that make a message weigh roughly `tokens` tokens. */
export function filler(tokens, seed = 0) {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet']
  const out = []
  for (let i = 0; i < tokens; i++) out.push(words[(i * 7 + seed) % words.length])
  return out.join(' ')
}

/** `n` user/assistant turns (2n messages) of about `tokens` tokens each. */
export function conversation(n, tokens = 60, tag = 'turn') {
  const out = []
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `${tag} ${i} question: ${filler(tokens, i)}`, timestamp: 1_700_000_000_000 + i * 2000 })
    out.push({ role: 'assistant', content: [{ type: 'text', text: `${tag} ${i} answer: ${filler(tokens, i + 3)}` }], timestamp: 1_700_000_000_000 + i * 2000 + 1000 })
  }
  return out
}

/** Writes an OpenClaw session transcript (header + message entries chained by parentId). */
export function writeTranscript(messages, { dir = tempDir('lcm-oc-jsonl-'), sessionId = 'sess-1', extraEntries = [] } = {}) {
  const lines = [{ type: 'session', version: 3, id: sessionId, timestamp: new Date(1_700_000_000_000).toISOString(), cwd: '/tmp' }]
  let parent = null
  messages.forEach((message, i) => {
    const id = `e${i + 1}`
    lines.push({ type: 'message', id, parentId: parent, timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(), message })
    parent = id
  })
  for (const e of extraEntries) lines.push({ parentId: parent, timestamp: new Date().toISOString(), ...e })
  const file = join(dir, `${sessionId}.jsonl`)
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return file
}

/** Anchors of a durable turn covering positions `from..from+count-1`. */
export function turnAnchors({ sessionId = 'sess-1', sessionKey = 'agent:main:main', turnId = 'turn-1', from = 0, count = 2, generation = 'g1' } = {}) {
  const base = { agentId: 'main', sessionId, sessionKey, storePath: '/tmp/store.sqlite', generation, effectiveParentId: null }
  const admission = { ...base, entryId: `${turnId}-u`, rawSeq: from, activeMessagePosition: from, logicalTurnId: turnId, role: 'user' }
  const terminal = { ...base, entryId: `${turnId}-t`, rawSeq: from + count - 1, activeMessagePosition: from + count - 1 }
  return { advancementKey: turnId, admission, terminal }
}

/** A fake host LLM recording its calls; `fail` makes it throw that error. */
export function fakeLlm({ fail, answer } = {}) {
  const calls = []
  return {
    calls,
    async complete(params) {
      calls.push(params)
      if (fail) throw typeof fail === 'function' ? fail() : fail
      if (answer) return { text: typeof answer === 'function' ? answer(params) : answer, model: 'fake/model', provider: 'fake' }
      const body = params.messages.map((m) => m.content).join('\n')
      return { text: `Summary: ${body.split(/\s+/).slice(0, 40).join(' ')}`, model: 'fake/model', provider: 'fake' }
    },
  }
}

/** A fake OpenClaw plugin api capturing what the plugin registers. */
export function fakeApi({ pluginConfig = freshConfig(), llm, registrationMode = 'full' } = {}) {
  const engines = new Map()
  const tools = []
  const hooks = new Map()
  const commands = []
  const logs = { info: [], warn: [], error: [] }
  const api = {
    id: 'lcm-native',
    name: 'lcm-native',
    source: 'test',
    registrationMode,
    config: {},
    pluginConfig,
    runtime: llm ? { llm } : {},
    logger: {
      info: (m) => logs.info.push(m),
      warn: (m) => logs.warn.push(m),
      error: (m) => logs.error.push(m),
      debug: () => {},
    },
    registerContextEngine: (id, factory) => engines.set(id, factory),
    registerTool: (tool, opts) => tools.push({ tool, opts }),
    registerCommand: (command) => commands.push(command),
    on: (name, handler) => hooks.set(name, [...(hooks.get(name) ?? []), handler]),
  }
  return {
    api,
    engines,
    tools,
    hooks,
    logs,
    commands,
    /** Runs a registered command as the host does for `/name args` in a chat. */
    async command(name, args = '', ctx = { sessionKey: 'agent:main:main', sessionId: 'sess-1' }) {
      const c = commands.find((x) => x.name === name)
      if (!c) throw new Error(`no command ${name}`)
      return c.handler({ channel: 'test', isAuthorizedSender: true, commandBody: `/${name} ${args}`.trim(), args, config: {}, ...ctx })
    },
    /** Builds the tool `name` for a session, as the host does per run. */
    tool(name, ctx = { sessionKey: 'agent:main:main', sessionId: 'sess-1' }) {
      const row = tools.find((t) => t.opts?.name === name)
      return row ? row.tool(ctx) : undefined
    },
    async emit(name, event = {}, ctx = {}) {
      for (const h of hooks.get(name) ?? []) await h(event, ctx)
    },
  }
}
