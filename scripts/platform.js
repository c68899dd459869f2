'use strict'
// The napi platform suffix of this machine (linux-x64-gnu, darwin-arm64, ...), the
// same names index.js loads and npm/ packages carry.
const { platform, arch } = process

function isMusl() {
  if (platform !== 'linux') return false
  try {
    const report = process.report && process.report.getReport()
    return !(report && report.header && report.header.glibcVersionRuntime)
  } catch {
    return false
  }
}

function platformSuffix() {
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

const TRIPLES = {
  'linux-x64-gnu': 'x86_64-unknown-linux-gnu',
  'linux-x64-musl': 'x86_64-unknown-linux-musl',
  'linux-arm64-gnu': 'aarch64-unknown-linux-gnu',
  'linux-arm64-musl': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
  'win32-x64-msvc': 'x86_64-pc-windows-msvc',
}

module.exports = { platformSuffix, targetTriple: () => TRIPLES[platformSuffix()] }
