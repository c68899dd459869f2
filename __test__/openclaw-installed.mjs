// Where the published `openclaw` package is installed for the tests that drive
// OpenClaw itself (CI installs it outside the checkout for the type fixture;
// LCM_OPENCLAW_DIR points elsewhere), and whether this Node can run it.
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { root } from './helpers.mjs'

/** Directories whose node_modules may hold `openclaw`. */
export function candidateDirs() {
  return [process.env.LCM_OPENCLAW_DIR, join(root, '__test__', 'types'), join(homedir(), '.cache', 'lcm-native-ci', 'types')].filter(Boolean)
}

/** `{ dir, harness, cli }` of the first installed `openclaw`, else null. */
export function findOpenclaw() {
  for (const dir of candidateDirs()) {
    if (!existsSync(join(dir, 'node_modules', 'openclaw', 'package.json'))) continue
    try {
      const req = createRequire(join(dir, 'package.json'))
      return { dir, harness: req.resolve('openclaw/plugin-sdk/agent-harness-runtime'), cli: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs') }
    } catch {
      /* not resolvable from there */
    }
  }
  return null
}

function nodeAtLeast(major, minor) {
  const [a, b] = process.versions.node.split('.').map(Number)
  return a > major || (a === major && b >= minor)
}

/** Why the OpenClaw tests cannot run here, or null when they can. */
export function openclawSkipReason() {
  if (!nodeAtLeast(24, 16)) return `Node ${process.versions.node} < 24.16: OpenClaw does not load here (CI runs it on its Node 24 leg)`
  if (!findOpenclaw()) return `the openclaw package is not installed (looked in ${candidateDirs().join(', ')})`
  return null
}
