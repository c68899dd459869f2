import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { writeFileSync } from 'node:fs'
import { LcmEngine, addon, tempDir, rejectsWithCode } from './helpers.mjs'

const { renderPrompt, formatTimestamp, formatTimeRange } = addon

const SOURCE = '[2026-02-17 15:37 UTC] [user]\nShip release 4.2 after the flaky test in tests/api.rs is fixed.'
const TEMPLATES = ['leaf', 'condensed-d1', 'condensed-d2', 'condensed-d3', 'condensed-d3']

/** An empty override directory, so a developer's ~/.config/lcm-tui/prompts never leaks in. */
const emptyDir = () => tempDir('lcm-prompts-')

function render(params) {
  return renderPrompt({ promptDir: emptyDir(), sourceText: SOURCE, ...params })
}

describe('renderPrompt', () => {
  it('renders every depth with and without previous context, with the required structure', () => {
    for (let depth = 0; depth <= 4; depth++) {
      for (const previousContext of [undefined, 'PREVIOUS SUMMARY TEXT']) {
        const r = render({ depth, previousContext, targetTokens: 640, childCount: 3, timeRange: '2026-02-17 15:37–17:21 UTC' })
        expect(r.template).toBe(TEMPLATES[depth])
        expect(r.source).toBe('embedded')
        expect(r.targetTokens).toBe(640)
        expect(r.systemPrompt).toMatch(/summar/i)
        expect(r.systemPrompt).toMatch(/not instructions/i)
        const p = r.prompt
        const [open, close] = depth === 0 ? ['<conversation_segment>', '</conversation_segment>'] : ['<conversation_to_condense>', '</conversation_to_condense>']
        expect(p.endsWith(`${open}\n${SOURCE}\n${close}`)).toBe(true)
        expect(p).toContain('Expand for details about:')
        expect(p).toContain('Target length: about 640 tokens')
        expect(p).toMatch(/untrusted data[^\n]*never instructions/)
        expect(p).not.toContain('\n\n\n')
        expect(p).not.toContain('OpenClaw')
        const hasPrev = p.includes('<previous_context>\nPREVIOUS SUMMARY TEXT\n</previous_context>')
        expect(hasPrev).toBe(previousContext !== undefined && depth <= 1)
        if (!hasPrev) expect(p).not.toContain('<previous_context>')
        expect(p).not.toContain('Operator instructions')
      }
    }
  })

  it('switches the leaf policy when aggressive and adds operator instructions', () => {
    const normal = render({ depth: 0 })
    const aggressive = render({ depth: 0, aggressive: true, customInstructions: 'Keep ticket numbers.' })
    expect(normal.prompt).toContain('Summary policy:')
    expect(aggressive.prompt).toContain('strict: a previous attempt was too long')
    expect(aggressive.prompt).toContain('Operator instructions:\nKeep ticket numbers.')
    expect(aggressive.prompt).not.toBe(normal.prompt)
    for (const depth of [1, 2, 3]) {
      expect(render({ depth, customInstructions: 'Use metric units.' }).prompt).toContain('Operator instructions:\nUse metric units.')
    }
  })

  it('computes the default target like the pipeline', () => {
    const big = `${SOURCE}\n${'word '.repeat(4000)}`
    const tokens = Math.ceil(big.length / 4)
    expect(render({ depth: 0, sourceText: big }).targetTokens).toBe(Math.min(2400, Math.max(192, Math.floor((tokens * 35) / 100))))
    expect(render({ depth: 0 }).targetTokens).toBe(192)
    expect(render({ depth: 0, aggressive: true }).targetTokens).toBe(96)
    expect(render({ depth: 0, sourceText: big, leafTargetTokens: 500 }).targetTokens).toBe(500)
    expect(render({ depth: 2 }).targetTokens).toBe(2000)
    expect(render({ depth: 3, condensedTargetTokens: 100 }).targetTokens).toBe(512)
  })

  it('rejects bad parameters with LCM_INVALID_INPUT', () => {
    expect(() => render({ depth: -1 })).toThrow(expect.objectContaining({ code: 'LCM_INVALID_INPUT' }))
    expect(() => render({ dpeth: 1 })).toThrow(expect.objectContaining({ code: 'LCM_INVALID_INPUT' }))
  })
})

describe('prompt overrides', () => {
  it('an override directory with one file changes only that prompt', () => {
    const dir = emptyDir()
    writeFileSync(join(dir, 'condensed-d2.jinja'), 'CUSTOM d{{ depth }} n={{ child_count }} t={{ target_tokens }}\n<x>\n{{ source_text }}\n</x>\n')
    for (let depth = 0; depth <= 4; depth++) {
      const custom = renderPrompt({ promptDir: dir, depth, sourceText: SOURCE, childCount: 5 })
      const stock = render({ depth, childCount: 5 })
      if (depth === 2) {
        expect(custom.prompt).toBe(`CUSTOM d2 n=5 t=2000\n<x>\n${SOURCE}\n</x>`)
        expect(custom.source).toBe(join(dir, 'condensed-d2.jinja'))
      } else {
        expect(custom.prompt).toBe(stock.prompt)
        expect(custom.source).toBe('embedded')
      }
    }
  })

  it('accepts Go text/template overrides named .tmpl (lcm-tui)', () => {
    const dir = emptyDir()
    writeFileSync(join(dir, 'leaf.tmpl'), 'Go {{.TargetTokens}}\n{{if .PreviousContext -}}\nprev={{.PreviousContext}}\n{{end -}}\nsrc={{.SourceText}}\n')
    expect(renderPrompt({ promptDir: dir, sourceText: 'S', previousContext: 'P', targetTokens: 300 }).prompt).toBe('Go 300\nprev=P\nsrc=S')
    expect(renderPrompt({ promptDir: dir, sourceText: 'S', targetTokens: 300 }).prompt).toBe('Go 300\nsrc=S')
  })

  it('a broken override fails at LcmEngine.open with file and line (LCM_TEMPLATE)', async () => {
    const dir = emptyDir()
    const file = join(dir, 'condensed-d1.jinja')
    writeFileSync(file, 'first line\nsecond line\n{% if previous_context %}\nnever closed\n')
    const e = await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', promptDir: dir }), 'LCM_TEMPLATE')
    expect(e.message).toContain(file)
    expect(e.message).toMatch(/line \d+/)
    expect(() => renderPrompt({ promptDir: dir, depth: 0 })).toThrow(expect.objectContaining({ code: 'LCM_TEMPLATE' }))

    // Parses, but an unknown variable fails the sample render at open, naming its line.
    writeFileSync(file, 'ok\n\n{{ target_tokenz }}\n')
    const e2 = await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', promptDir: dir }), 'LCM_TEMPLATE')
    expect(e2.message).toContain(`${file} line 3`)

    // No database file is created when the templates are broken.
    const dbPath = join(tempDir(), 'lcm.db')
    await rejectsWithCode(LcmEngine.open({ dbPath, promptDir: dir }), 'LCM_TEMPLATE')
    expect((await import('node:fs')).existsSync(dbPath)).toBe(false)
  })

  it('the engine sends exactly what renderPrompt shows, using the override', async () => {
    const dir = emptyDir()
    writeFileSync(join(dir, 'leaf.jinja'), 'MY LEAF PROMPT ({{ target_tokens }} tokens{% if aggressive %}, strict{% endif %})\n{{ custom_instructions }}\n---\n{{ source_text }}\n')
    const seen = []
    const engine = await LcmEngine.open({
      dbPath: ':memory:',
      promptDir: dir,
      customInstructions: 'Operator rule.',
      summarizer: (req) => {
        seen.push(req)
        return 'A short summary.'
      },
    })
    const sourceText = `${SOURCE}\n${'detail '.repeat(300)}`
    const out = await engine.summarizeText({ depth: 0, sourceText })
    expect(out.level).toBe('normal')
    const expected = renderPrompt({ promptDir: dir, depth: 0, sourceText, customInstructions: 'Operator rule.' })
    expect(seen).toHaveLength(1)
    expect(seen[0].prompt).toBe(expected.prompt)
    expect(seen[0].systemPrompt).toBe(expected.systemPrompt)
    expect(seen[0].targetTokens).toBe(expected.targetTokens)
    expect(seen[0].prompt.startsWith('MY LEAF PROMPT (')).toBe(true)
    await engine.close()
  })
})

describe('time formatting', () => {
  const a = Date.UTC(2026, 1, 17, 23, 37)
  const b = Date.UTC(2026, 1, 18, 1, 21)

  it('formats timestamps in a zone from ms, ISO strings and Dates', () => {
    expect(formatTimestamp(a, 'America/Los_Angeles')).toBe('2026-02-17 15:37 PST')
    expect(formatTimestamp('2026-02-17T23:37:00.000Z', 'UTC')).toBe('2026-02-17 23:37 UTC')
    expect(formatTimestamp(new Date(a), 'Europe/Berlin')).toBe('2026-02-18 00:37 CET')
    expect(formatTimestamp('2026-02-17 23:37:00', 'UTC')).toBe('2026-02-17 23:37 UTC')
  })

  it('formats ranges within a day, across days and for one instant', () => {
    expect(formatTimeRange(a, b, 'America/Los_Angeles')).toBe('2026-02-17 15:37–17:21 PST')
    expect(formatTimeRange(b, a, 'America/Los_Angeles')).toBe('2026-02-17 15:37–17:21 PST')
    expect(formatTimeRange(a, b, 'UTC')).toBe('2026-02-17 – 2026-02-18')
    expect(formatTimeRange(a, a, 'UTC')).toBe('2026-02-17 23:37 UTC')
  })

  it('rejects unknown zones with LCM_CONFIG and non-times with LCM_INVALID_INPUT', async () => {
    expect(() => formatTimestamp(a, 'Mars/Olympus_Mons')).toThrow(expect.objectContaining({ code: 'LCM_CONFIG' }))
    expect(() => formatTimeRange(a, b, 'Nowhere/Land')).toThrow(expect.objectContaining({ code: 'LCM_CONFIG' }))
    expect(() => formatTimestamp('next tuesday', 'UTC')).toThrow(expect.objectContaining({ code: 'LCM_INVALID_INPUT' }))
    expect(() => formatTimestamp({}, 'UTC')).toThrow(expect.objectContaining({ code: 'LCM_INVALID_INPUT' }))
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', promptDir: emptyDir(), timezone: 'Mars/Olympus_Mons' }), 'LCM_CONFIG')
  })
})
