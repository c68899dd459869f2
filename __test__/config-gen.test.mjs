// The plugin's config comes from one table (CONFIG_KEYS): the manifest's schema and
// the config types are generated from it, and every key that feeds an engine
// option is one `LcmEngine.open` accepts (so the table and src/config.rs cannot
// drift apart unnoticed).
import { describe, it, expect } from 'vitest'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { root, tempDir, LcmEngine, rejectsWithCode } from './helpers.mjs'
import { CONFIG_KEYS, resolveConfig } from '../openclaw/config.mjs'
import { generate, differences, MANIFEST, TYPES } from '../scripts/gen-config.mjs'

const read = (p) => readFileSync(join(root, p), 'utf8')

describe('generated config files', () => {
  it('openclaw.plugin.json and openclaw/config.d.mts are what CONFIG_KEYS generates', () => {
    const expected = generate()
    expect(Object.keys(expected).sort()).toEqual([MANIFEST, TYPES].sort())
    for (const [path, text] of Object.entries(expected)) {
      expect(differences(text, read(path)), `${path}: run npm run gen:config`).toEqual([])
    }
  })

  it('gen-config --check passes on the committed files', () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts/gen-config.mjs'), '--check'], { encoding: 'utf8' })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('a deliberate mismatch is reported, naming the line', () => {
    const expected = generate()[MANIFEST]
    const edited = expected.replace('"maximum": 1', '"maximum": 2')
    expect(edited).not.toBe(expected)
    const diff = differences(expected, edited)
    expect(diff.length).toBe(2)
    expect(diff[0]).toMatch(/^ {2}line \d+: - +"maximum": 2,$/)
    expect(diff[1]).toMatch(/^ {2}line \d+: \+ +"maximum": 1,$/)
  })

  it('the schema keeps every range and type of the table, strict', () => {
    const schema = JSON.parse(read(MANIFEST)).configSchema
    expect(schema.additionalProperties).toBe(false)
    for (const row of CONFIG_KEYS) {
      for (const name of [row.key, ...(row.aliases ?? [])]) {
        const p = schema.properties[name]
        if (row.type === 'list') expect(p.anyOf.map((x) => x.type), name).toEqual(['array', 'string'])
        else expect(p.type, name).toBe(row.type === 'providers' || row.type === 'retention' ? 'array' : row.type)
        if (row.type === 'object') expect(Object.keys(p.properties), name).toEqual(row.properties.map((q) => q.key))
        expect(p.minimum, name).toBe(row.minimum)
        expect(p.maximum, name).toBe(row.maximum)
        expect(typeof p.description, name).toBe('string')
      }
    }
  })
})

/** A valid value of `row` for `LcmEngine.open`. */
function sample(row, dir) {
  if (row.default !== undefined) return row.default
  if (row.option === 'dbPath') return join(dir, 'sample.db')
  if (row.option === 'largeFilesDir') return join(dir, 'files')
  if (row.option === 'timezone') return 'UTC'
  if (row.type === 'string') return 'sample'
  if (row.type === 'retention') return [{ match: 'agent:*:cron:**', archiveAfterDays: 1, pruneAfterDays: 14 }]
  return row.minimum ?? 1
}

describe('CONFIG_KEYS and the engine options', () => {
  const rows = CONFIG_KEYS.filter((r) => r.option)

  it('every key that maps to an engine option is accepted by LcmEngine.open', async () => {
    expect(rows.length).toBeGreaterThan(10)
    const dir = tempDir()
    for (const row of rows) {
      const options = { dbPath: ':memory:', [row.option]: sample(row, dir) }
      const engine = await LcmEngine.open(options).catch((e) => {
        throw new Error(`${row.key} → ${row.option}: ${e.code} ${e.message}`)
      })
      await engine.close()
    }
  })

  it('the options resolveConfig builds from all those keys at once open an engine', async () => {
    const dir = tempDir()
    const config = Object.fromEntries(rows.map((r) => [r.key, sample(r, dir)]))
    const resolved = resolveConfig(config, {})
    expect(resolved.warnings).toEqual([])
    for (const row of rows) expect(resolved.engineOptions, row.key).toHaveProperty(row.option)
    const engine = await LcmEngine.open({ ...resolved.engineOptions, dbPath: ':memory:' })
    await engine.close()
  })

  it('an option the engine does not know is refused (what the test above relies on)', async () => {
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', notAnOption: 1 }), 'LCM_INVALID_INPUT')
  })
})
