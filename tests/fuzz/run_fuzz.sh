#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time on a scratch copy of its seed
# corpus (the committed corpus is never modified). Fails on any crash.
# Arguments after the third go to libFuzzer.
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$corpus"/. "$work"/
cd "$work"
"$fuzzer" -max_total_time="$seconds" -max_len=4400 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" "$work" 2>&1 | tail -n 25
exit "${PIPESTATUS[0]}"
