#!/usr/bin/env node
'use strict'
// lcm-tui: the command line lives in the native addon (Rust); this shim only
// forwards the arguments and sets the exit code it returns.
let addon
try {
  addon = require('../native.js').loadNative()
} catch (err) {
  process.stderr.write(`${err.message}\n`)
  process.exit(1)
}
const { runCli, interruptCli } = addon

// Ctrl-C: a command that can stop cleanly (rewrite) drops its in-flight request and
// exits by itself; otherwise, or on a second Ctrl-C, exit now. (The interactive
// browser reads Ctrl-C as a key: no signal reaches here while it runs.)
let interrupts = 0
process.on('SIGINT', () => {
  interrupts += 1
  if (interrupts > 1 || !interruptCli()) process.exit(130)
})

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err) => {
    process.stderr.write(`lcm-tui: ${err && err.message ? err.message : err}\n`)
    process.exitCode = 1
  },
)
