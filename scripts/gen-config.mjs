#!/usr/bin/env node
// `npm run gen:config`: writes what the plugin's config table (`CONFIG_KEYS` in
// openclaw/config.mjs) implies: `configSchema` and `uiHints` of
// openclaw.plugin.json (the rest of the manifest is kept as it is) and the
// types of openclaw/config.d.mts. `--check` writes nothing and exits 1, naming
// each file that differs and its first differing lines, when a committed file is
// not what the table generates.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { CONFIG_KEYS } from '../openclaw/config.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const MANIFEST = 'openclaw.plugin.json'
export const TYPES = 'openclaw/config.d.mts'

/** The JSON schema of one retention policy (`retention` keys). */
const RETENTION_POLICY = {
  type: 'object',
  additionalProperties: false,
  required: ['match'],
  properties: {
    match: { type: 'string' },
    archiveAfterDays: { type: 'number', minimum: 0 },
    pruneAfterDays: { type: 'number', minimum: 0 },
  },
}

/** The JSON schema of one value of `row`: an object row is strict, with its properties. */
function valueSchema(row) {
  if (row.type === 'object') {
    const properties = {}
    for (const p of row.properties) properties[p.key] = { ...valueSchema(p), description: describe(p, false) }
    return { type: 'object', additionalProperties: false, properties }
  }
  if (row.type === 'array') return { type: 'array', items: row.items }
  if (row.type === 'retention') return { type: 'array', items: RETENTION_POLICY }
  if (row.type === 'providers') {
    const ref = { type: 'string', pattern: '^[^/]+/.+$' }
    const obj = { type: 'object', additionalProperties: false, required: ['provider', 'model'], properties: { provider: { type: 'string' }, model: { type: 'string' } } }
    return { type: 'array', items: { anyOf: [obj, ref] } }
  }
  // A list is an array of strings, or one comma-separated string (the environment's form).
  if (row.type === 'list') return { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] }
  const s = { type: row.type }
  if (row.enum) s.enum = row.enum
  if (row.minimum !== undefined) s.minimum = row.minimum
  if (row.maximum !== undefined) s.maximum = row.maximum
  return s
}

/**
 * `configSchema`: one property per key and alias, strict. A key with aliases
 * names its default in the description only: a host that fills in schema
 * defaults would otherwise set the key and hide a value given under an alias.
 */
export function configSchema(rows = CONFIG_KEYS) {
  const properties = {}
  for (const row of rows) {
    const aliases = row.aliases ?? []
    const schema = { ...valueSchema(row), description: describe(row, aliases.length > 0) }
    if (row.default !== undefined && aliases.length === 0) schema.default = row.default
    properties[row.key] = schema
    for (const alias of aliases) properties[alias] = { ...valueSchema(row), description: `Alias of ${row.key}.` }
  }
  return { type: 'object', additionalProperties: false, properties }
}

/** The description, with the default when `withDefault`. */
function describe(row, withDefault) {
  const d = withDefault && row.default !== undefined ? ` (default ${JSON.stringify(row.default)})` : ''
  return `${row.description}${d}.`
}

/** `uiHints`: a label and help for the keys with a `label`. */
export function uiHints(rows = CONFIG_KEYS) {
  const hints = {}
  for (const row of rows) {
    if (!row.label) continue
    const notes = []
    if (row.minimum !== undefined && row.maximum !== undefined) notes.push(`${row.minimum}-${row.maximum}`)
    if (row.default !== undefined && typeof row.default !== 'object' && row.type !== 'boolean') notes.push(`default ${row.default}`)
    hints[row.key] = { label: row.label, help: notes.length ? `${row.description} (${notes.join(', ')})` : row.description }
  }
  return hints
}

/** openclaw.plugin.json with its `uiHints` and `configSchema` generated from the table. */
export function manifestText(current, rows = CONFIG_KEYS) {
  const manifest = JSON.parse(current)
  manifest.uiHints = uiHints(rows)
  manifest.configSchema = configSchema(rows)
  return JSON.stringify(manifest, null, 2) + '\n'
}

const TS_TYPES = { boolean: 'boolean', string: 'string', number: 'number', integer: 'number', list: 'string[]', providers: 'Array<{ provider: string; model: string } | string>',
  retention: 'Array<{ match: string; archiveAfterDays?: number; pruneAfterDays?: number }>',
}

/** The TypeScript type of a row's value. */
function tsType(row) {
  if (row.tsType) return row.tsType
  if (row.enum) return row.enum.map((v) => JSON.stringify(v)).join(' | ')
  if (row.type === 'object') return `{ ${row.properties.map((p) => `${p.key}?: ${tsType(p)}`).join('; ')} }`
  return TS_TYPES[row.type]
}

/** A doc comment at two spaces of indentation. */
const doc = (text) => `  /** ${text} */\n`

/** openclaw/config.d.mts. */
export function typesText(rows = CONFIG_KEYS) {
  let config = ''
  let resolved = ''
  for (const row of rows) {
    const type = tsType(row)
    const dflt = row.default !== undefined ? ` Default \`${JSON.stringify(row.default)}\`.` : ''
    const range =
      row.maximum !== undefined ? ` From ${row.minimum} to ${row.maximum}.` : row.minimum !== undefined ? ` At least ${row.minimum}.` : ''
    const option = row.option ? ` Engine option \`${row.option}\`.` : ''
    config += doc(`${row.description}.${dflt}${range}${option}`) + `  ${row.key}?: ${type}\n`
    for (const alias of row.aliases ?? []) config += doc(`Alias of \`${row.key}\`.`) + `  ${alias}?: ${type}\n`
    if (row.resolved) resolved += `  ${row.key}: ${type}\n`
  }
  return `// Generated by \`npm run gen:config\` (scripts/gen-config.mjs) from CONFIG_KEYS in
// openclaw/config.mjs: edit the table, then regenerate. Never edit by hand.

/** The plugin configuration (\`plugins.entries.lcm-native.config\`); every key is optional. */
export interface LcmPluginConfig {
${config}}

/** The keys \`resolveConfig\` always sets (to their defaults when unset). */
export interface ResolvedLcmPluginConfigValues extends LcmPluginConfig {
${resolved}}
`
}

/** Every generated file: path (from the package root) → expected text. */
export function generate(read = (p) => readFileSync(join(root, p), 'utf8')) {
  return { [MANIFEST]: manifestText(read(MANIFEST)), [TYPES]: typesText() }
}

/** The first lines where `actual` differs from `expected`, as `-`/`+` pairs. */
export function differences(expected, actual, most = 6) {
  const e = expected.split('\n')
  const a = actual.split('\n')
  const out = []
  for (let i = 0; i < Math.max(e.length, a.length) && out.length < most * 2; i++) {
    if (e[i] === a[i]) continue
    out.push(`  line ${i + 1}: - ${a[i] ?? '(end of file)'}`, `  line ${i + 1}: + ${e[i] ?? '(end of file)'}`)
  }
  return out
}

function main() {
  const check = process.argv.includes('--check')
  let stale = 0
  for (const [path, expected] of Object.entries(generate((p) => readFileSync(join(root, p), 'utf8')))) {
    let actual = ''
    try {
      actual = readFileSync(join(root, path), 'utf8')
    } catch {}
    if (actual === expected) continue
    if (check) {
      stale++
      console.error(`${path} differs from what CONFIG_KEYS generates (- committed, + generated):`)
      for (const line of differences(expected, actual)) console.error(line)
    } else {
      writeFileSync(join(root, path), expected)
      console.log(`wrote ${path}`)
    }
  }
  if (stale) {
    console.error(`${stale} generated file(s) out of date: run \`npm run gen:config\``)
    process.exit(1)
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
