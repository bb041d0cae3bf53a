#!/usr/bin/env bash
# xroce-regs end to end: golden-file regression check (passes on a good
# file, fails with a diff on a changed one), attach to a running engine's
# debug socket, read/write/dump/log/watch, and errors for bad input.
set -euo pipefail
regs=$1
work=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Golden file from a fresh engine; the check passes on a fresh engine.
"$regs" dump --golden > "$work/golden"
[ "$(grep -c '^0x' "$work/golden")" -gt 150 ] || fail "golden file too short"
out=$("$regs" check "$work/golden") || fail "check on a good golden file: $out"
grep -q "^OK:" <<<"$out" || fail "check did not say OK: $out"

# A changed golden value: non-zero exit and a diff naming the register.
sed 's/^0x0010 UDP_PORT 0x000012b7$/0x0010 UDP_PORT 0x000012b8/' "$work/golden" > "$work/bad"
rc=0; out=$("$regs" check "$work/bad") || rc=$?
[ "$rc" -eq 1 ] || fail "check on a changed golden file exited $rc"
grep -q "^- 0x0010 UDP_PORT .*0x000012b8 (golden)" <<<"$out" || fail "no diff line for UDP_PORT: $out"
grep -q "^+ 0x0010 UDP_PORT .*0x000012b7 (read)" <<<"$out" || fail "no read line for UDP_PORT: $out"

# A running engine on a debug socket.
sock=$work/engine.sock
"$regs" serve "$sock" --link-up > "$work/serve.log" &
server=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { fail "serve did not create $sock"; exit 1; }
"$regs" --attach "$sock" write MAC_LOW 0x00000001 >/dev/null || fail "write MAC_LOW"
"$regs" --attach "$sock" write MAC_HIGH 0x0200 >/dev/null || fail "write MAC_HIGH"
"$regs" --attach "$sock" write IP_ADDR 0x0a000001 >/dev/null || fail "write IP_ADDR"
"$regs" --attach "$sock" write CTRL 2 | grep -q OKAY || fail "enable over the socket"
out=$("$regs" --attach "$sock" read STATUS)
grep -q "link_up=1 ready=1 enabled=1 not_ready=0" <<<"$out" || fail "STATUS after enable: $out"
rc=0; out=$("$regs" --attach "$sock" write ID 5) || rc=$?
[ "$rc" -eq 1 ] && grep -q SLVERR <<<"$out" || fail "write to ID: rc=$rc $out"
rc=0; out=$("$regs" --attach "$sock" read 0x3) || rc=$?
[ "$rc" -eq 1 ] && grep -q DECERR <<<"$out" || fail "misaligned read: rc=$rc $out"
out=$("$regs" --attach "$sock" read reg_slverr)
grep -q "reg_slverr = 1" <<<"$out" || fail "reg_slverr over the socket: $out"
out=$("$regs" --attach "$sock" log)
grep -q "reg_error" <<<"$out" && grep -q "enable" <<<"$out" || fail "event log: $out"
out=$("$regs" --attach "$sock" dump)
grep -q "^0x0000 CTRL .*enable=1" <<<"$out" || fail "dump CTRL: $(head -2 <<<"$out")"
grep -q "^0x1000 sent_pkts " <<<"$out" || fail "dump lacks counters"
out=$("$regs" --attach "$sock" watch -i 0.1 -n 2)
grep -q -- "-- 0.2 s --" <<<"$out" || fail "watch rounds: $out"
# The golden check sees the configuration change on the live engine.
rc=0; out=$("$regs" --attach "$sock" check "$work/golden" --config-only) || rc=$?
[ "$rc" -eq 1 ] && grep -q "IP_ADDR" <<<"$out" || fail "check on a configured engine: rc=$rc $out"

# Usage errors.
rc=0; "$regs" read NO_SUCH_REG >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 2 ] || fail "unknown register: rc=$rc"
rc=0; "$regs" write CTRL notanumber >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 2 ] || fail "bad value: rc=$rc"
rc=0; "$regs" --attach "$work/none.sock" dump >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 2 ] || fail "no socket: rc=$rc"
rc=0; "$regs" frobnicate >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 2 ] || fail "unknown command: rc=$rc"
rc=0; "$regs" check /nonexistent >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 2 ] || fail "missing golden: rc=$rc"

# Bad input is refused with a reason (each once hung, flooded or passed).
# expect_err RC TEXT CMD...: exit RC, TEXT on stderr, within 20 s, no sanitizer report.
expect_err() {
  local want=$1 text=$2 rc=0 err; shift 2
  err=$(timeout 20 "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq "$want" ] && grep -q -- "$text" <<<"$err" && ! grep -q "Sanitizer\|runtime error" <<<"$err" \
    || fail "'${*:2}': rc=$rc (want $want) '$(head -3 <<<"$err")'"
}
expect_err 2 "bad --interval" "$regs" watch -i nan -n 1
expect_err 2 "bad --interval" "$regs" watch -i inf -n 1
expect_err 2 "no register" "$regs" check /dev/null
expect_err 2 "Is a directory" "$regs" check "$work"
printf '# only a comment\n' > "$work/empty"
expect_err 2 "no register" "$regs" check "$work/empty"
# An offset beyond the map or misaligned is tried and the answer explained.
rc=0; out=$("$regs" read 0xffffffff 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "DECERR.*beyond the register space" <<<"$out" || fail "read 0xffffffff: rc=$rc $out"
rc=0; out=$("$regs" read 0x6 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "DECERR.*not 4-byte aligned" <<<"$out" || fail "read 0x6: rc=$rc $out"
expect_err 2 "no register named '0x100000000'" "$regs" read 0x100000000
# A register space that reads all ones (no device behind the mapping) is
# refused at once; one that identifies but claims an absurd event ring too.
head -c 16777216 /dev/zero | tr '\0' '\377' > "$work/ones"
expect_err 2 "does not identify as xroce" "$regs" --mmio "$work/ones" log
printf '\x45\x43\x52\x58' | dd of="$work/ones" bs=1 seek=36 conv=notrunc status=none   # ID = "XRCE"
expect_err 1 "EVLOG_CAP" "$regs" --mmio "$work/ones" log

# A write error on stdout (a golden file on a full disk) is exit 1, not 0.
for args in "dump --golden" dump doc "read CTRL" "check $work/golden"; do
  rc=0; msg=$("$regs" $args 2>&1 >/dev/full) || rc=$?
  [ "$rc" -eq 1 ] && grep -q "error writing" <<<"$msg" || fail "$args >/dev/full: rc=$rc '$msg'"
done

[ "$fails" -eq 0 ] && echo "PASS: xroce-regs" || exit 1
