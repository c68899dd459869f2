#!/bin/sh
# Release workflow, on each platform's own runner: pack the main package and
# npm/<platform>/ (its binary already in place), `npm install --ignore-scripts` of
# both tarballs into an empty folder, then the smoke test and the lcm-tui bin.
set -eu
platform=$1
root=$(pwd)
out="$root/.packs"
mkdir -p "$out/consumer"
npm pack --ignore-scripts --pack-destination "$out"
(cd "npm/$platform" && npm pack --pack-destination "$out")
cd "$out/consumer"
echo '{"name":"consumer","private":true}' > package.json
npm install --ignore-scripts --no-audit --no-fund "$out"/lcm-native-[0-9]*.tgz "$out/lcm-native-$platform"-[0-9]*.tgz
node "$root/.ci/prebuilt-smoke.js"
node node_modules/lcm-native/bin/lcm-tui.js --version
