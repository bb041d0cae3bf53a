#!/usr/bin/env bash
# xroce-gen as a user meets it: outputs, PSN runs, hex for $readmemh, and a
# clear error (exit 2, nothing written) for every kind of bad argument.
set -euo pipefail
gen=$1 decode=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# (Here-strings, not pipes into grep -q: under pipefail a writer cut off by
# grep's early exit would fail the check.)
grep -q -- "--pcap FILE" <<<"$("$gen" --help)" || fail "--help does not document --pcap"
grep -q "RC_RDMA_READ_REQUEST" <<<"$("$gen" --list)" || fail "--list lacks READ_REQUEST"
# Every example in --help runs as written (one named an opcode that is not).
gen_abs=$(realpath "$gen")
while read -r example; do
  (cd "$work" && eval "\"\$gen_abs\" ${example#xroce-gen }" >/dev/null 2>"$work/ex.err") \
    || fail "--help example '$example': $(cat "$work/ex.err")"
done < <("$gen" --help | sed -n '/^Examples:/,$s/^  \(xroce-gen .*\)/\1/p')
[ -s "$work/all.pcap" ] || fail "--help examples: none ran"

# --count with a PSN run that wraps at 2^24, to pcap and hex at once.
"$gen" -q -o rc_rdma_write_middle --mtu 256 --count 4 --psn 0xfffffe \
  --pcap "$work/w.pcap" --hex "$work/w.hex"
psns=$("$decode" "$work/w.pcap" | sed -E 's/.*psn=(0x[0-9a-f]+).*/\1/' | tr '\n' ' ')
[ "$psns" = "0xfffffe 0xffffff 0x000000 0x000001 " ] || fail "PSN run: got '$psns'"

# The hex file holds exactly the pcap's bytes, one byte per line.
/usr/bin/python3 - "$work/w.pcap" "$work/w.hex" <<'PY' || fail "hex file differs from pcap"
import struct, sys
data = open(sys.argv[1], "rb").read()[24:]
frames = b""
while data:
    incl = struct.unpack("<I", data[8:12])[0]
    frames += data[16:16 + incl]
    data = data[16 + incl:]
hexbytes = bytes(int(l, 16) for l in open(sys.argv[2]) if not l.startswith("//"))
assert all(len(l.strip()) == 2 for l in open(sys.argv[2]) if not l.startswith("//"))
sys.exit(0 if hexbytes == frames else 1)
PY

# Field flags land where they belong.
out=$("$gen" -o rc_rdma_write_only --va 0x1000 --rkey 0xabc --size 100 --qpn 0x42 --psn 7 \
  --ackreq --pcap "$work/f.pcap" -q && "$decode" "$work/f.pcap")
grep -q "qpn=0x000042 psn=0x000007 ackreq=1 .* reth=0x1000,0x00000abc,100" <<<"$out" \
  || fail "RETH/BTH fields: $out"
out=$("$gen" -o rc_compare_swap --va 0x2000 --rkey 5 --swap 9 --compare 3 --pcap "$work/a.pcap" -q \
  && "$decode" "$work/a.pcap")
grep -q "atomic=0x2000,0x00000005,0x9,0x3" <<<"$out" || fail "AtomicETH fields: $out"
out=$("$gen" -o rc_acknowledge --syndrome 0x62 --msn 77 --pcap "$work/k.pcap" -q && "$decode" "$work/k.pcap")
grep -q "aeth=0x62,77" <<<"$out" || fail "AETH fields: $out"
"$gen" -q -o rc_send_first --mtu 4096 --pcap "$work/m.pcap"
grep -q "payload=4096" <<<"$("$decode" --mtu 4096 "$work/m.pcap")" || fail "FIRST payload must be the MTU"

# Bad arguments: exit 2, a message naming the problem, no output file.
check_bad() {
  local want=$1; shift
  local msg rc=0
  msg=$("$gen" -q --pcap "$work/bad.pcap" "$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] || fail "'$*' exited $rc, expected 2"
  grep -qi -- "$want" <<<"$msg" || fail "'$*' said '$msg', expected '$want'"
  [ ! -e "$work/bad.pcap" ] || { fail "'$*' wrote a file"; rm -f "$work/bad.pcap"; }
}
check_bad "unknown opcode" -o 0x15
check_bad "unknown opcode" -o nonsense
check_bad "--psn" --psn 0x1000000
check_bad "--qpn" --qpn -1
check_bad "--mtu" --mtu 1000
check_bad "--pcp" --pcp 8
check_bad "--dmac" --dmac 01:02:03
check_bad "--src" --src 300.1.1.1
check_bad "must both be IPv4 or both IPv6" --src fd00::1
check_bad "--count" --count 0
check_bad "--size" --size 5000
check_bad "unexpected argument" stray
# Conflicts between the opcode and the payload size are errors too (exit 1).
rc=0; msg=$("$gen" -q -o rc_acknowledge --size 8 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "carries no payload" <<<"$msg" || fail "ACK with payload: rc=$rc '$msg'"
rc=0; msg=$("$gen" -q -o rc_send_first --size 100 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "exactly the MTU" <<<"$msg" || fail "FIRST with size != MTU: rc=$rc '$msg'"
# (No sanitizer report either: the ASan build runs this too; LeakSanitizer
# keeps a nonzero exit status, so only its report shows a leak.)
rc=0; msg=$("$gen" -q --pcap /nonexistent/dir/x.pcap 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "/nonexistent/dir/x.pcap" <<<"$msg" && ! grep -q Sanitizer <<<"$msg" \
  || fail "unwritable path: rc=$rc '$msg'"
rc=0; msg=$("$gen" -q --pcap "$work/h.pcap" --hex /nonexistent/dir/x.hex 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q "/nonexistent/dir/x.hex" <<<"$msg" && ! grep -q Sanitizer <<<"$msg" \
  || fail "unwritable hex path: rc=$rc '$msg'"

# A write error (a full disk: /dev/full) is an error, exit 1 with a message,
# not a truncated file and exit 0.
full_fails() {
  local rc=0 msg
  msg=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 1 ] && grep -q "error writing" <<<"$msg" || fail "'${*:2}' on a full disk: rc=$rc '$msg'"
}
full_fails "$gen" -o rc_send_only --pcap /dev/full -q
full_fails "$gen" -a -n 100 --pcap /dev/full -q
full_fails "$gen" -a --hex /dev/full -q
full_fails sh -c '"$1" -a -n 20 >/dev/full' sh "$gen"
full_fails sh -c '"$1" --list >/dev/full' sh "$gen"
full_fails sh -c '"$1" --help >/dev/full' sh "$gen"
full_fails sh -c '"$1" "$2" >/dev/full' sh "$decode" "$work/w.pcap"

[ "$fails" -eq 0 ] && echo "PASS: xroce-gen CLI" || exit 1
