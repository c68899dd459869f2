// The typings check CI runs (`npm run check:types`): a fresh generation from the
// Rust types must equal the committed src/binding/header.d.ts (and index.d.ts); a
// committed copy with one line altered makes it fail, printing a diff that names
// the line.
import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root, tempDir } from './helpers.mjs'

const HEADER = 'src/binding/header.d.ts'

function check(committedDir) {
  const args = [join(root, 'scripts/gen-types.js'), '--check', '--header-only']
  if (committedDir) args.push('--committed', committedDir)
  return spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' })
}

describe('gen-types --check', () => {
  it('passes on the committed header', () => {
    const r = check()
    expect(r.stderr + r.stdout).toMatch(/match a fresh generation/)
    expect(r.status).toBe(0)
  }, 300_000)

  it('fails on a committed header with one line altered, naming the line', () => {
    const dir = tempDir('lcm-gen-types-')
    const text = readFileSync(join(root, HEADER), 'utf8')
    const line = text.split('\n').find((l) => /^ {2}pattern: string,$/.test(l))
    expect(line).toBeDefined()
    mkdirSync(join(dir, 'src/binding'), { recursive: true })
    writeFileSync(join(dir, HEADER), text.replace(line, '  pattern: number,'))
    const r = check(dir)
    expect(r.status).toBe(1)
    expect(r.stdout).toContain(`--- committed/${HEADER}`)
    expect(r.stdout).toContain('\n-  pattern: number,')
    expect(r.stdout).toContain('\n+  pattern: string,')
    expect(r.stderr).toMatch(/1 file\(s\) differ/)
  }, 300_000)
})
