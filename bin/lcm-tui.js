#!/usr/bin/env node
'use strict'
// lcm-tui: the command line lives in the native addon (Rust); this shim only
// forwards the arguments and sets the exit code it returns.
const { runCli } = require('../index.js')

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err) => {
    process.stderr.write(`lcm-tui: ${err && err.message ? err.message : err}\n`)
    process.exitCode = 1
  },
)
