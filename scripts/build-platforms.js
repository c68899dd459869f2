#!/usr/bin/env node
'use strict'
// `npm run build:platforms`: builds the addon for every platform package under
// npm/<platform>/ (napi-rs's layout: `lcm-native-<platform>` with os/cpu/libc and
// the stripped `lcm-native.<platform>.node`), checks each binary, and keeps the
// packages' versions and the main package's optionalDependencies pinned to the
// main package's version.
//
//   node scripts/build-platforms.js                     every target
//   node scripts/build-platforms.js linux-x64-gnu ...   only those
//   node scripts/build-platforms.js --check             check what is built, build nothing
//   node scripts/build-platforms.js --native <platform> plain `cargo build` for the
//                                                       platform's own triple (on its own
//                                                       runner: Windows MSVC in the release)
//
// Cross builds use cargo-zigbuild with zig as the C compiler and linker
// (`pip install cargo-zigbuild ziglang`) and the Rust targets (`rustup target add`).
// Profile `dist` (Cargo.toml): release with thin LTO. LCM_NATIVE_DIST_PROFILE picks
// another (`release` for fat LTO). The Linux gnu builds link against glibc 2.17
// (zig's versioned glibc stubs), the floor `objdump -T` is checked against.
// Prints a table: target, built or why not, size, build seconds, checks.
const { spawnSync } = require('node:child_process')
const { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } = require('node:fs')
const { join } = require('node:path')

const root = join(__dirname, '..')
const GLIBC_FLOOR = '2.17'

/**
 * Every platform package. `triple` is the Rust target, `build` the triple passed
 * to cargo-zigbuild (a glibc suffix pins the floor), `lib` the file cargo writes,
 * `file` what `file(1)` must say of it.
 */
const TARGETS = {
  'linux-x64-gnu': { triple: 'x86_64-unknown-linux-gnu', build: `x86_64-unknown-linux-gnu.${GLIBC_FLOOR}`, os: 'linux', cpu: 'x64', libc: 'glibc', file: /ELF 64-bit LSB shared object, x86-64/ },
  'linux-arm64-gnu': { triple: 'aarch64-unknown-linux-gnu', build: `aarch64-unknown-linux-gnu.${GLIBC_FLOOR}`, os: 'linux', cpu: 'arm64', libc: 'glibc', file: /ELF 64-bit LSB shared object, ARM aarch64/ },
  'linux-x64-musl': { triple: 'x86_64-unknown-linux-musl', os: 'linux', cpu: 'x64', libc: 'musl', file: /ELF 64-bit LSB shared object, x86-64/ },
  'linux-arm64-musl': { triple: 'aarch64-unknown-linux-musl', os: 'linux', cpu: 'arm64', libc: 'musl', file: /ELF 64-bit LSB shared object, ARM aarch64/ },
  // macOS floors: zig links for its newest macOS unless MACOSX_DEPLOYMENT_TARGET says
  // otherwise (it wrote minos 15.0); Node 20 itself needs macOS 11 on arm64.
  'darwin-x64': { triple: 'x86_64-apple-darwin', os: 'darwin', cpu: 'x64', macos: '10.15', file: /Mach-O 64-bit (x86_64 )?dynamically linked shared library( x86_64)?/ },
  'darwin-arm64': { triple: 'aarch64-apple-darwin', os: 'darwin', cpu: 'arm64', macos: '11.0', file: /Mach-O 64-bit (arm64 )?dynamically linked shared library( arm64)?/ },
  // node.exe from nodejs.org is built with MSVC, so napi's loader looks for the
  // win32-x64-msvc package. MSVC's import libraries cannot be had offline; the GNU
  // target links with zig's mingw-w64, and a Node-API addon only crosses the C ABI
  // (napi-rs resolves the napi_* functions from the host process at load), so the
  // GNU-built DLL serves the same package. The release workflow builds it with
  // MSVC on a Windows runner instead.
  'win32-x64-msvc': { triple: 'x86_64-pc-windows-msvc', build: 'x86_64-pc-windows-gnu', os: 'win32', cpu: 'x64', file: /PE32\+ executable \(DLL\).*x86-64/ },
}

function libName(triple) {
  if (triple.includes('windows')) return 'lcm_native.dll'
  if (triple.includes('apple')) return 'liblcm_native.dylib'
  return 'liblcm_native.so'
}

function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 << 20, ...opts })
}

/** llvm-nm from rustup's llvm-tools component (reads ELF, Mach-O and PE), else null. */
function llvmNm() {
  const sysroot = run('rustc', ['--print', 'sysroot']).stdout?.trim()
  const host = /host: (\S+)/.exec(run('rustc', ['-vV']).stdout || '')?.[1]
  const p = sysroot && host && join(sysroot, 'lib', 'rustlib', host, 'bin', 'llvm-nm')
  return p && existsSync(p) ? p : null
}

/** The highest GLIBC_x.y symbol version a binary needs (objdump -T), or null. */
function highestGlibc(path) {
  const r = run('objdump', ['-T', path])
  if (r.status !== 0) return null
  const versions = [...r.stdout.matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)].map((m) => [Number(m[1]), Number(m[2]), Number(m[3] || 0)])
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2])
  const top = versions.pop()
  return top ? top.filter((n, i) => i < 2 || n).join('.') : null
}

function versionAtMost(v, floor) {
  const a = v.split('.').map(Number)
  const b = floor.split('.').map(Number)
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] || 0) !== (b[i] || 0)) return (a[i] || 0) < (b[i] || 0)
  }
  return true
}

/** Format, architecture, the napi entry point, and for glibc the symbol-version floor. */
function check(platform, spec, path) {
  const problems = []
  const notes = []
  // A tool that is not installed (file, objdump, readelf on a Windows runner) is noted, not failed:
  // the release workflow checks every binary again on Linux.
  const has = (tool) => run(tool, ['--version']).error?.code !== 'ENOENT'
  if (!has('file')) notes.push('file(1) missing: format not checked')
  else {
    const kind = run('file', ['-b', path]).stdout?.trim() || ''
    if (!spec.file.test(kind)) problems.push(`file(1) says "${kind}"`)
    else notes.push(kind.split(',').slice(0, 2).join(','))
  }
  // ELF: the dynamic symbol table; Mach-O: external symbols (llvm-nm); PE: the export directory (objdump -p).
  const nm = spec.os === 'win32' ? (has('objdump') ? 'objdump' : null) : llvmNm()
  if (nm) {
    const nmArgs = spec.os === 'win32' ? ['-p', path] : spec.os === 'linux' ? ['-D', '--defined-only', path] : ['--extern-only', '--defined-only', path]
    const out = run(nm, nmArgs).stdout || ''
    if (!/\b_?napi_register_module_v1\b/.test(out)) problems.push('no exported napi_register_module_v1')
    else notes.push('exports napi_register_module_v1')
  } else {
    notes.push('llvm-nm missing (rustup component add llvm-tools): exports not checked')
  }
  if (spec.libc === 'glibc' && has('objdump')) {
    const top = highestGlibc(path)
    if (!top) problems.push('objdump -T found no GLIBC_ versions')
    else if (!versionAtMost(top, GLIBC_FLOOR)) problems.push(`needs GLIBC_${top} > floor ${GLIBC_FLOOR}`)
    else notes.push(`highest GLIBC_${top} <= ${GLIBC_FLOOR}`)
  }
  if (spec.libc === 'musl' && has('readelf')) {
    const r = run('readelf', ['-d', path]).stdout || ''
    const needed = [...r.matchAll(/Shared library: \[([^\]]+)\]/g)].map((m) => m[1])
    if (needed.some((n) => /^libc\.so\.6$|^libgcc_s/.test(n))) problems.push(`links glibc libraries: ${needed.join(' ')}`)
    else notes.push(`needs ${needed.join(' ') || 'nothing'}`)
  }
  if (spec.macos) {
    const objdump = llvmNm()?.replace(/llvm-nm$/, 'llvm-objdump')
    const headers = objdump ? run(objdump, ['--macho', '--private-headers', path]).stdout || '' : ''
    const minos = /cmd LC_BUILD_VERSION[\s\S]*?minos (\d+\.\d+)/.exec(headers)?.[1] || /cmd LC_VERSION_MIN_MACOSX[\s\S]*?version (\d+\.\d+)/.exec(headers)?.[1]
    if (!objdump) notes.push('llvm-objdump missing: macOS floor not checked')
    else if (!minos) problems.push('no macOS minimum version in the load commands')
    else if (!versionAtMost(minos, spec.macos)) problems.push(`needs macOS ${minos} > floor ${spec.macos}`)
    else notes.push(`macOS minos ${minos} <= ${spec.macos}`)
  }
  if (spec.os === 'win32' && has('objdump')) {
    const r = run('objdump', ['-p', path]).stdout || ''
    const dlls = [...r.matchAll(/DLL Name: (\S+)/g)].map((m) => m[1])
    const foreign = dlls.filter((d) => /libgcc|libwinpthread|libstdc\+\+|libnode/i.test(d))
    if (foreign.length) problems.push(`imports DLLs a Windows node.exe does not have: ${foreign.join(' ')}`)
    else notes.push(`imports ${dlls.join(' ')}`)
  }
  return { ok: problems.length === 0, text: [...problems, ...notes].join('; ') }
}

/**
 * napi-build links `-lnode` for windows-gnu targets (MinGW-built Node ships
 * libnode.dll) and panics unless LIBNODE_PATH holds a libnode.dll. napi-rs loads
 * every napi_* function at run time (its dyn-symbols feature), so nothing is
 * imported from it: an empty libnode.dll and an import library with no exports
 * (`zig dlltool`) satisfy the build, and the check refuses a DLL that would import
 * libnode.dll (node.exe from nodejs.org has none).
 */
function libnodeStub(targetDir) {
  const dir = join(targetDir, 'libnode-stub')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'libnode.dll'), '')
  writeFileSync(join(dir, 'node.def'), 'LIBRARY libnode.dll\nEXPORTS\n')
  const r = run('python3', ['-m', 'ziglang', 'dlltool', '-d', join(dir, 'node.def'), '-l', join(dir, 'libnode.a'), '-m', 'i386:x86-64'])
  if (r.status !== 0) throw new Error(`zig dlltool failed: ${r.stderr}`)
  return dir
}

/** Writes npm/<platform>/package.json (and README.md) at the main package's version. */
function writeManifest(platform, spec, version) {
  const dir = join(root, 'npm', platform)
  mkdirSync(dir, { recursive: true })
  const node = `lcm-native.${platform}.node`
  const manifest = {
    name: `lcm-native-${platform}`,
    version,
    description: `lcm-native prebuilt addon for ${platform}`,
    os: [spec.os],
    cpu: [spec.cpu],
    main: node,
    files: [node],
    license: 'MIT',
    engines: { node: '>=20' },
    ...(spec.libc ? { libc: [spec.libc] } : {}),
  }
  const file = join(dir, 'package.json')
  const text = JSON.stringify(manifest, null, 2) + '\n'
  if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text)
  const readme = join(dir, 'README.md')
  if (!existsSync(readme)) {
    writeFileSync(readme, `# lcm-native-${platform}\n\nThe prebuilt \`lcm-native\` addon for \`${platform}\`. Install \`lcm-native\`; npm picks this package automatically.\n`)
  }
}

/** Pins the main package's optionalDependencies to its own version, one per platform. */
function pinOptionalDependencies(pkg) {
  const want = Object.fromEntries(Object.keys(TARGETS).sort().map((p) => [`lcm-native-${p}`, pkg.version]))
  if (JSON.stringify(pkg.optionalDependencies) === JSON.stringify(want)) return false
  pkg.optionalDependencies = want
  writeFileSync(join(root, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  return true
}

function main() {
  const args = process.argv.slice(2)
  const checkOnly = args.includes('--check')
  const nativeBuild = args.includes('--native')
  const named = args.filter((a) => !a.startsWith('--'))
  for (const n of named) if (!TARGETS[n]) throw new Error(`unknown platform ${n}; known: ${Object.keys(TARGETS).join(', ')}`)
  const platforms = named.length ? named : Object.keys(TARGETS)
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  if (pinOptionalDependencies(pkg)) console.log(`package.json: optionalDependencies pinned to ${pkg.version}`)
  const profile = process.env.LCM_NATIVE_DIST_PROFILE || 'dist'
  const targetDir = process.env.CARGO_TARGET_DIR || join(root, 'target')
  if (!checkOnly && !nativeBuild && run('cargo', ['zigbuild', '--help']).status !== 0) {
    console.error('cargo-zigbuild is missing: pip install cargo-zigbuild ziglang')
    process.exit(1)
  }

  const rows = []
  for (const platform of platforms) {
    const spec = TARGETS[platform]
    writeManifest(platform, spec, pkg.version)
    const out = join(root, 'npm', platform, `lcm-native.${platform}.node`)
    const buildTriple = nativeBuild ? spec.triple : spec.build || spec.triple
    const cargoTriple = buildTriple.replace(/\.\d+\.\d+$/, '')
    let seconds = null
    if (!checkOnly) {
      const cargoArgs = [nativeBuild ? 'build' : 'zigbuild', '--lib', '--profile', profile, '--target', buildTriple]
      console.log(`== ${platform}: cargo ${cargoArgs.join(' ')}`)
      const env = { ...process.env }
      delete env.CARGO_BUILD_TARGET
      // A cdylib on musl must link libc dynamically (Rust's musl targets default to static).
      if (spec.macos) env.MACOSX_DEPLOYMENT_TARGET = spec.macos
      if (cargoTriple === 'x86_64-pc-windows-gnu') env.LIBNODE_PATH = libnodeStub(targetDir)
      if (spec.libc === 'musl') env[`CARGO_TARGET_${cargoTriple.toUpperCase().replace(/-/g, '_')}_RUSTFLAGS`] = '-C target-feature=-crt-static'
      const t0 = Date.now()
      const r = spawnSync('cargo', cargoArgs, { cwd: root, env, stdio: 'inherit' })
      seconds = Math.round((Date.now() - t0) / 1000)
      if (r.status !== 0) {
        rows.push({ platform, status: 'FAILED', detail: `cargo ${cargoArgs[0]} exited ${r.status} after ${seconds} s` })
        continue
      }
      copyFileSync(join(targetDir, cargoTriple, profile, libName(cargoTriple)), out)
    }
    if (!existsSync(out)) {
      rows.push({ platform, status: 'missing', detail: `${out} not built` })
      continue
    }
    const c = check(platform, spec, out)
    const size = `${(statSync(out).size / 1048576).toFixed(1)} MiB`
    rows.push({ platform, status: c.ok ? 'ok' : 'BAD', size, seconds, detail: c.text })
  }
  console.log('\nplatform          status   size      build   checks')
  for (const r of rows) {
    console.log(`${r.platform.padEnd(17)} ${r.status.padEnd(8)} ${(r.size || '').padEnd(9)} ${r.seconds == null ? '     ' : `${String(r.seconds).padStart(4)}s`}   ${r.detail}`)
  }
  process.exit(rows.every((r) => r.status === 'ok') ? 0 : 1)
}

main()
