#!/usr/bin/env bash
# Link selection errors a user can act on: a missing interface, an address
# in use, an address that is not local, missing privileges, bad settings.
set -euo pipefail
peer=$1
fails=0
expect() {   # description, expected message part, command...
  local what=$1 want=$2; shift 2
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && grep -q -- "$want" <<<"$out"; then echo "ok   $what"; else
    echo "FAIL $what: rc=$rc: $out"; fails=$((fails + 1)); fi
}
expect "missing interface" "no interface named 'nosuchif0'" \
  "$peer" --link raw --ifname nosuchif0 --addr 10.0.0.1 --server --tcp 0
expect "address not local" "is not an address of this host" \
  "$peer" --link udp --addr 192.0.2.77 --server --tcp 0
expect "unknown link" "unknown link 'carrier-pigeon'" \
  "$peer" --link carrier-pigeon --addr 10.0.0.1 --server --tcp 0
expect "raw without interface" "needs an interface" \
  "$peer" --link raw --addr 10.0.0.1 --server --tcp 0
expect "bad VLAN" "VLAN 1..4094" \
  "$peer" --link raw --ifname lo --addr 10.0.0.1 --vlan 5000 --server --tcp 0
# Address in use: a first peer holds 127.0.0.1:4791.
"$peer" --link udp --addr 127.0.0.1 --server --tcp 19990 >/dev/null 2>&1 &
holder=$!
sleep 0.3
expect "address in use" "port 4791 is already in use" \
  "$peer" --link udp --addr 127.0.0.1 --server --tcp 19991
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
# Privileges: the raw link as an unprivileged user.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  expect "raw link without CAP_NET_RAW" "needs CAP_NET_RAW" \
    setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$peer" --link raw --ifname lo --addr 10.0.0.1 --server --tcp 0
else
  echo "FAIL privileges case needs root and setpriv to drop them"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
