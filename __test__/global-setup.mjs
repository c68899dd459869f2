// Every temporary file a test run makes (databases, workloads, prompt folders, child
// processes' files) goes under one folder that is removed when the run ends, so the
// suite leaves nothing behind in the system's temp directory.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export default function setup() {
  if (process.env.LCM_TEST_TMP) return undefined // scripts/test.js made one already
  const dir = mkdtempSync(join(tmpdir(), 'lcm-test-run-'))
  process.env.TMPDIR = dir
  process.env.LCM_TEST_TMP = dir
  return () => rmSync(dir, { recursive: true, force: true })
}
