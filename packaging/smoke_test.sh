#!/usr/bin/env bash
# Smoke-test a built bundle the way a user meets it (CI runs this after `make bundle`):
#   packaging/smoke_test.sh [BUNDLE]        BUNDLE defaults to dist/calibsim
# 1. the bundle's --self-test (offscreen, no network); 2. install into a temporary HOME;
# 3. the installed launcher's --self-test, the demo pairs scored in int8 and its demo tour
# (--screenshot); 4. uninstall and check nothing is left.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-dist/calibsim}
export QT_QPA_PLATFORM=offscreen
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_STATE_HOME PREFIX CALIBSIM_CACHE_DIR CALIBSIM_STATE_DIR

echo "bundle: $(du -sh "$bundle" | cut -f1) in $bundle"
start=$SECONDS
"$bundle/calibsim" --self-test
echo "bundle self-test: $((SECONDS - start)) s"

home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
HOME="$home" bash packaging/install.sh "$bundle"
HOME="$home" "$home/.local/bin/calibsim" --self-test
# int8, which the self-test does not reach: quantised on first use (onnxruntime.quantization).
HOME="$home" CALIBSIM_CACHE_DIR="$home/cache" "$home/.local/bin/calibsim" score resources/demo/pairs.csv \
    --precision int8 --out "$home/int8.csv"
echo "installed app, int8: scored $(( $(wc -l < "$home/int8.csv") - 1 )) demo pairs"
# The app as a user launches it (run_app), on the demo; prints the start-up timings.
HOME="$home" "$home/.local/bin/calibsim" --screenshot "$home/shots"
echo "installed app, seconds from launch: $(tr -d ' \n' < "$home/shots/timings.json")"
HOME="$home" bash packaging/uninstall.sh
left=$(find "$home/.local" -type f -o -type l)
if [ -n "$left" ]; then
    echo "smoke test: uninstall left these behind:" >&2
    echo "$left" >&2
    exit 1
fi
echo "smoke test passed: bundle and installed launcher self-tested, uninstall left nothing"
