#!/usr/bin/env bash
# Two xroce-perf processes on this host (issue 16): every test with
# --verify over --link host; the UDP link's automatic path to a local peer
# (frames counted on the host path, none through the kernel) and
# --no-host-path (the reverse); loss and reordering from the fault wrapper
# on the host link; a server killed with SIGKILL mid-transfer (the client
# fails in bounded time, the rendezvous is gone, the address works again).
# Needs no root. Host addresses 10.250.7.x are this script's only.
set -euo pipefail
perf=$1
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
port=19400

# run NAME SERVER_ARGS -- CLIENT_ARGS: a pair; the client's output in c.out.
pair() {
  local name=$1 srv=() cli=()
  shift
  while [ "$1" != -- ]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  port=$((port + 1))
  timeout 60 "$perf" "${srv[@]}" -p $port >s.out 2>&1 &
  local spid=$!
  if ! timeout 60 "$perf" "${cli[@]}" -p $port 127.0.0.1 >c.out 2>&1; then
    fail "$name: client exit: $(tail -3 c.out)"
    wait $spid || true
    return 1
  fi
  wait $spid || { fail "$name: server exit: $(tail -3 s.out)"; return 1; }
  if grep -q "<-- FAILED" c.out s.out; then fail "$name: verification failed"; return 1; fi
  grep -Eq "(Data|Receiver's data) verification: [1-9][0-9]* messages checked, 0 errors" c.out s.out \
    || { fail "$name: nothing verified"; return 1; }
  return 0
}

H1="--link host --bind 10.250.7.1" H2="--link host --bind 10.250.7.2"
for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat pingpong; do
  n="-n 300"
  [ $t = pingpong ] && n="-n 100"
  pair "host $t" $t $H1 $n --verify -- $t $H2 $n --verify --counters \
    && echo "ok   host $t: $(grep -E '^ +[0-9]' c.out | tail -1 | tr -s ' \t' ' ')"
  grep -q "Link paths (host link)" c.out || fail "host $t: no link path counters"
done

# The UDP link reaches a local xroce peer through shared memory, unasked.
U1="--link udp --bind 127.0.0.1" U2="--link udp --bind 127.0.0.2"
for t in write_bw read_lat send_bw; do
  if pair "udp auto $t" $t $U1 -n 300 --verify -- $t $U2 -n 300 --verify --counters; then
    host=$(sed -n 's/^ *host (shared memory) *\([0-9]*\) sent.*/\1/p' c.out)
    net=$(sed -n 's/^ *network (UDP) *\([0-9]*\) sent, \([0-9]*\) received.*/\1 \2/p' c.out)
    [ "${host:-0}" -gt 0 ] && [ "$net" = "0 0" ] && echo "ok   udp auto $t: $host frames through shared memory, none through the kernel" \
      || fail "udp auto $t: host '$host' network '$net'"
  fi
done
if pair "udp --no-host-path" write_bw $U1 --no-host-path -n 300 --verify -- write_bw $U2 --no-host-path -n 300 --verify --counters; then
  grep -Eq "host \(shared memory\) +0 sent, 0 received" c.out && grep -Eq "network \(UDP\) +[1-9][0-9]* sent" c.out \
    && echo "ok   udp --no-host-path: through the kernel" || fail "udp --no-host-path: $(grep -A3 'Link paths' c.out)"
fi

# Loss and reordering on the host link, both directions: RC recovers, data verified.
F="--fault-drop 0.02 --fault-reorder 0.02"
for t in write_bw read_bw send_bw write_lat; do
  pair "host faults $t" $t $H1 $F --fault-seed 1 -n 200 --verify -- $t $H2 $F --fault-seed 2 -n 200 --verify --counters \
    && echo "ok   host $t with 2 % loss and 2 % reordering each way"
done

# SIGKILL the server mid-transfer.
port=$((port + 1))
"$perf" write_bw $H1 -D 30 -p $port >s.out 2>&1 &
spid=$!
timeout 60 "$perf" write_bw $H2 -D 30 -p $port 127.0.0.1 >c.out 2>&1 &
cpid=$!
for _ in $(seq 100); do grep -q "BW peak" s.out c.out 2>/dev/null && break; sleep 0.05; done
sleep 1
kill -9 $spid
wait $spid 2>/dev/null || true
start=$SECONDS
if wait $cpid; then
  fail "kill: the client carried on as if the server were there"
else
  echo "ok   kill: the client failed $((SECONDS - start)) s after its peer died: $(grep -iE 'error|fail' c.out | head -1)"
fi
[ $((SECONDS - start)) -le 20 ] || fail "kill: the client took $((SECONDS - start)) s to notice"
grep -q "@xroce-host/10.250.7.1" /proc/net/unix && fail "kill: the dead server's rendezvous is still there"
grep -q "@xroce-host/10.250.7.2" /proc/net/unix && fail "kill: the client's rendezvous outlived it"
pair "after kill" write_bw $H1 -n 200 --verify -- write_bw $H2 -n 200 --verify && echo "ok   both addresses work again"

[ $fails -eq 0 ] && echo "host link: all passed" || { echo "host link: $fails failed"; exit 1; }
