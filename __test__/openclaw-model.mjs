// A loopback OpenAI-compatible chat-completions server for the tests that drive
// OpenClaw itself: it records every request and answers each with what `respond`
// decides (a text, or one tool call), streamed or not, as the request asks.
import http from 'node:http'

/** The text of a chat message's content. */
export const textOf = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''))

const USAGE = { prompt_tokens: 100, completion_tokens: 60, total_tokens: 160 }

/**
 * Starts the server. `respond(body, n)` gets the parsed request body and its
 * 1-based number and returns `{ text }` or `{ toolCall: { id, name, arguments } }`
 * (arguments as an object). Resolves `{ server, requests, port }`; `requests`
 * holds `{ url, body }` of every request.
 */
export function chatCompletionsServer(respond) {
  const requests = []
  const server = http.createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {}
      requests.push({ url: req.url, body })
      const answer = respond(body, requests.length)
      const head = { id: `c${requests.length}`, created: 1, model: body.model }
      if (!body.stream) return sendWhole(res, head, answer)
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const event = (choices, extra = {}) => res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices, ...extra })}\n\n`)
      if (answer.toolCall) {
        const { id, name, arguments: args } = answer.toolCall
        const call = { index: 0, id, type: 'function', function: { name, arguments: JSON.stringify(args) } }
        event([{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: null }])
        event([{ index: 0, delta: {}, finish_reason: 'tool_calls' }])
      } else {
        event([{ index: 0, delta: { role: 'assistant', content: answer.text }, finish_reason: null }])
        event([{ index: 0, delta: {}, finish_reason: 'stop' }])
      }
      event([], { usage: USAGE })
      res.end('data: [DONE]\n\n')
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, requests, port: server.address().port })))
}

function sendWhole(res, head, answer) {
  const message = answer.toolCall
    ? { role: 'assistant', content: null, tool_calls: [{ id: answer.toolCall.id, type: 'function', function: { name: answer.toolCall.name, arguments: JSON.stringify(answer.toolCall.arguments) } }] }
    : { role: 'assistant', content: answer.text }
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: answer.toolCall ? 'tool_calls' : 'stop' }], usage: USAGE }))
}

/** The `models` block of an OpenClaw config naming the loopback server as provider `loop`. */
export function loopProvider(port, contextWindow = 16_000) {
  return {
    mode: 'merge',
    providers: {
      loop: {
        baseUrl: `http://127.0.0.1:${port}/v1`,
        apiKey: 'sk-loopback',
        api: 'openai-completions',
        timeoutSeconds: 60,
        models: [{ id: 'loop-model', name: 'Loopback', reasoning: false, input: ['text'], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow, maxTokens: 2048 }],
      },
    },
  }
}
