#!/usr/bin/env bash
# A malformed script (or a path that is no script) must fail with a
# message: conformance_run exits 1 and says TEXT, neither crashing (a
# signal: exit > 128) nor drawing a sanitizer report, nor passing.
#   check_bad.sh RUNNER SCRIPT [TEXT]   (TEXT: default the script's '# expect:' line)
set -uo pipefail
runner=$1 script=$2
want=${3:-$(sed -n 's/^# expect: //p' "$script" 2>/dev/null | head -1)}
[ -n "$want" ] || { echo "FAIL: $script has no '# expect:' line"; exit 1; }
out=$(timeout 60 "$runner" "$script" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 1 ]; then
  echo "FAIL: exit $rc, expected 1"
  exit 1
fi
if grep -q "Sanitizer\|runtime error" <<<"$out"; then
  echo "FAIL: sanitizer report"
  exit 1
fi
if ! grep -qF -- "$want" <<<"$out"; then
  echo "FAIL: no message '$want'"
  exit 1
fi
grep -q "^0 of 1 scripts passed" <<<"$out" || { echo "FAIL: the script was counted as passed"; exit 1; }
echo "PASS: $script refused"
