#!/usr/bin/env bash
# xroce-perf congestion (issue 12 item 7) and xroce-regs watch --cc (item 5):
# an incast through the in-process switch model on its simulated clock, with
# and without DCQCN, asserting on the RESULT line; PFC injected with -p -d;
# determinism; bad arguments; the live register view of a running incast.
# Each run is tens of ms of fabric time, well under a second of wall time.
set -euo pipefail
perf=$1
regs=$2
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# field NAME OUTPUT: a value of the RESULT line.
field() { grep '^RESULT ' <<<"$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# ge A B: A >= B (decimals).
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

run() {   # run NAME ARGS...: the output in $out, the exit status checked
  local name=$1; shift
  out=$(timeout 120 "$perf" congestion "$@" 2>&1) || { fail "$name: exit $?: $(tail -5 <<<"$out")"; out=""; return 1; }
  grep -q '^RESULT ' <<<"$out" || { fail "$name: no RESULT line: $(tail -5 <<<"$out")"; return 1; }
  echo "     $name: $(grep '^RESULT ' <<<"$out" | cut -d' ' -f2-9)"
}

# ---- 8 -> 1 incast, 10 Gb/s everywhere, 512 KiB bottleneck queue, ECN 20K..80K ----
# With DCQCN: the first RTTs overflow the queue (8 senders at line rate
# before the first CNPs), then no drop at all; every QP gets its share.
# Bounds from the measured run (seed 1, deterministic): jain 0.999, worst
# 50 ms window... worst 5 ms interval 0.975, utilisation 0.982, goodput 9.0
# Gb/s of a 9.25 Gb/s payload ceiling at MTU 1024, drops_late 0.
run "8->1 DCQCN" -N 8 -D 50ms --no-per-qp && {
  dc=$out
  [ "$(field drops_late "$dc")" = 0 ] || fail "8->1 DCQCN: drops after the start-up: $(field drops_late "$dc")"
  ge "$(field jain "$dc")" 0.95 || fail "8->1 DCQCN: fairness $(field jain "$dc") < 0.95"
  ge "$(field jain_min "$dc")" 0.90 || fail "8->1 DCQCN: worst interval fairness $(field jain_min "$dc") < 0.90"
  ge "$(field util "$dc")" 0.95 || fail "8->1 DCQCN: utilisation $(field util "$dc") < 0.95"
  ge "$(field goodput_gbps "$dc")" 8.5 || fail "8->1 DCQCN: goodput $(field goodput_gbps "$dc") < 8.5 Gb/s"
  [ "$(field qp_errors "$dc")" = 0 ] || fail "8->1 DCQCN: QP errors"
  [ "$(field cuts "$dc")" -gt 0 ] || fail "8->1 DCQCN: no rate decrease"
  [ "$(field cnp_sent "$dc")" = "$(field cnp_rcvd "$dc")" ] || fail "8->1 DCQCN: CNPs sent != received"
  # The queue is held near Kmin (20 KiB), far below its limit.
  ge 60 "$(field q_mean_kb "$dc")" || fail "8->1 DCQCN: mean queue $(field q_mean_kb "$dc") KB, not near Kmin"
}
# Without DCQCN (CNPs still arrive, rates stay at line rate): the queue
# stands full, tail drops all along, go-back-N and timeouts, less goodput
# (measured: 12397 drops, 215 retransmissions, 6.3 Gb/s, fairness 0.82).
run "8->1 no DCQCN" -N 8 -D 50ms --no-per-qp --no-dcqcn && {
  nd=$out
  [ "$(field cuts "$nd")" = 0 ] || fail "8->1 no DCQCN: rates were cut"
  [ "$(field drops_late "$nd")" -gt 1000 ] || fail "8->1 no DCQCN: only $(field drops_late "$nd") drops after start-up"
  if [ -n "${dc:-}" ]; then
    [ "$(field drops "$nd")" -gt $((10 * $(field drops "$dc") + 10)) ] || fail "no DCQCN: drops $(field drops "$nd") not 10x DCQCN's $(field drops "$dc")"
    [ "$(field rexmit "$nd")" -gt $((5 * $(field rexmit "$dc") + 5)) ] || fail "no DCQCN: retransmissions $(field rexmit "$nd") not 5x DCQCN's"
    ge "$(field goodput_gbps "$dc")" "$(awk -v g="$(field goodput_gbps "$nd")" 'BEGIN { print g * 1.1 }')" \
      || fail "no DCQCN: goodput $(field goodput_gbps "$nd") not 10% below DCQCN's $(field goodput_gbps "$dc")"
    ge "$(field q_mean_kb "$nd")" "$(awk -v q="$(field q_mean_kb "$dc")" 'BEGIN { print q * 3 }')" \
      || fail "no DCQCN: mean queue $(field q_mean_kb "$nd") KB not 3x DCQCN's"
  fi
}

# ---- 2 -> 1, two QPs each: DCQCN shares, the per-QP lines show rates ----
run "2x2->1 DCQCN" -N 2 -q 2 -D 30ms -i 10 && {
  ge "$(field jain "$out")" 0.95 || fail "2x2->1: fairness $(field jain "$out") < 0.95"
  [ "$(field drops_late "$out")" = 0 ] || fail "2x2->1: drops after start-up"
  n=$(grep -cE '^ +qp s[01]\.[01] 0x[0-9a-f]{6} +[0-9.]+ Gb/s  rate +[0-9]+ Mb/s  target +[0-9]+  alpha +[0-9]+/1024  ce [0-9]+ cnp_tx [0-9]+ cnp_rx [0-9]+$' <<<"$out" || true)
  [ "$n" -ge 8 ] || fail "2x2->1: $n per-QP lines with a DCQCN rate, not >= 8: $(grep -m3 ' qp s' <<<"$out")"
  grep -q "time is fabric time" <<<"$out" || fail "the header does not say the time is fabric time"
}

# ---- deterministic: the same options give the same output ----
a=$("$perf" congestion -N 3 -D 10ms | grep -v 'wall time')
b=$("$perf" congestion -N 3 -D 10ms | grep -v 'wall time')
[ "$a" = "$b" ] && echo "ok   deterministic" || fail "two identical runs differ"
c=$("$perf" -m congestion -N 3 -D 10ms | grep -v 'wall time')
[ "$a" = "$c" ] || fail "-m congestion is not the same as congestion"

# ---- PFC injected toward the senders: -p 3 -d 4 from 8 ms ----
# The senders' MAC models honour it: the frames are counted at the switch
# and the hosts, goodput falls to ~0 for the pause and recovers after it.
run "PFC inject, MAC honours" -N 2 -D 20ms -i 1 -p 3 -d 4 --pfc-at 8 --mac-pause --no-per-qp && {
  [ "$(field pfc_injected "$out")" -ge 4 ] || fail "inject: $(field pfc_injected "$out") frames injected"
  [ "$(field host_pfc "$out")" = "$(field pfc_injected "$out")" ] || fail "inject: hosts took $(field host_pfc "$out") of $(field pfc_injected "$out")"
  [ "$(field host_held "$out")" -gt 0 ] || fail "inject: the MACs held nothing"
  ge 0.5 "$(field good_min_gbps "$out")" || fail "inject: no goodput dip (lowest interval $(field good_min_gbps "$out") Gb/s)"
  paused=$(awk '$1 ~ /^1[01]\.000$/ { print $2 }' <<<"$out")
  for g in $paused; do ge 0.01 "$g" || fail "inject: goodput $g Gb/s while paused"; done
  after=$(awk '$1 == "14.000" { print $2 }' <<<"$out")
  ge "${after:-0}" 8 || fail "inject: goodput ${after:-?} Gb/s after XON, not recovered"
  grep -q "PFC XOFF for priority 3 toward the senders for 4.000 ms" <<<"$out" || fail "inject: no XOFF note"
  grep -q "PFC XON for priority 3" <<<"$out" || fail "inject: no XON note"
}
# Default: the frames go to the engines (ignore_pause on the MAC model,
# PFC_CTRL rx_enable set). Once the engine's PFC reaction is in, its pause
# counters and the dip show; until then only the frames' arrival.
run "PFC inject, engines" -N 2 -D 20ms -i 1 -p 3 -d 4 --pfc-at 8 --no-per-qp && {
  [ "$(field pfc_injected "$out")" -ge 4 ] || fail "inject (engine): nothing injected"
  [ "$(field host_pfc "$out")" = "$(field pfc_injected "$out")" ] || fail "inject (engine): frames lost on the way"
  [ "$(field host_held "$out")" = 0 ] || fail "inject (engine): the MAC model paused although told not to"
  if [ "$(field engine_pfc "$out")" -gt 0 ]; then
    ge "$(field engine_paused_us "$out")" 1000 || fail "inject (engine): engines paused only $(field engine_paused_us "$out") us of 4000"
    ge 0.5 "$(field good_min_gbps "$out")" || fail "inject (engine): no goodput dip"
    echo "     the engines react to PFC: paused $(field engine_paused_us "$out") us"
  else
    echo "     the engines do not count PFC frames yet (their PFC reaction is not in): arrival checked only"
  fi
}
# Switch-generated PFC with --pfc: lossless when the MACs honour it.
run "--pfc lossless" -N 4 -D 20ms --pfc --mac-pause --no-dcqcn --queue 64K --no-per-qp && {
  [ "$(field drops "$out")" = 0 ] || fail "--pfc --mac-pause: $(field drops "$out") drops"
  [ "$(field pfc_switch "$out")" -gt 0 ] || fail "--pfc: the switch sent no PFC"
}

# ---- bad arguments: exit 2, a message naming the problem ----
bad() {   # bad "ARGS" "MESSAGE"
  local o rc=0
  o=$(timeout 10 "$perf" congestion $1 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "'$1': exit $rc, not 2"
  grep -qF -- "$2" <<<"$o" || fail "'$1': no message '$2': $o"
}
bad "-N 0" "--senders must be at least 1"
bad "-N 17" "bad value '17' for --senders"
bad "-q 9" "bad value '9' for --qps"
bad "--bottleneck 10X" "--bottleneck '10X': not a rate"
bad "--edge 0" "--edge '0': not a rate"
bad "-s 0" "--size '0': not a byte count"
bad "-D 0" "--duration '0': not a time"
bad "-D 5parsecs" "--duration '5parsecs': not a time"
bad "-D 10ms -i 20" "--interval 20.000 ms is longer than the run"
bad "--ecn 80K,20K,0.2" "KMAX is below KMIN"
bad "--ecn 1,2" "not KMIN,KMAX,PMAX"
bad "--ecn 10K,20K,1.5" "PMAX is not within 0..1"
bad "--no-ecn --ecn 1K,2K,0.1" "--ecn and --no-ecn together"
bad "-p 3" "PFC injection needs both -p PRIO and -d MS"
bad "-d 3" "PFC injection needs both -p PRIO and -d MS"
bad "-p 8 -d 1" "bad value '8' for --pfc-prio"
bad "-p 3 -d 1 --pfc-at 30 -D 20ms" "--pfc-at 30.000 ms is not within the run"
bad "--pfc-at 3" "--pfc-at needs -p PRIO -d MS"
bad "--xoff 16K" "--xoff needs --pfc"
bad "--mac-pause" "has nothing to honour"
bad "-m 1000" "--mtu must be 256, 512, 1024, 2048 or 4096"
bad "--set NO_SUCH_REG=1" "no writable engine register of that name"
bad "--set CC_CTRL" "not REG=VALUE"
bad "--set QP_CC_RATE=5" "no writable engine register of that name"
bad "--frobnicate" "'--frobnicate': unknown option"
bad "-z" "option -z: unknown"
bad "10.0.0.1" "unexpected argument '10.0.0.1'"
bad "--regs-socket /tmp/$(printf 'x%.0s' {1..120})" "path too long"
echo "ok   bad arguments"
o=$("$perf" congestion --help) && grep -q "Usage: xroce-perf congestion" <<<"$o" || fail "--help"
# A register written by --set takes effect: no CNPs from the receiver.
run "--set" -N 2 -D 5ms --set CC_CTRL=0x00063005 --no-per-qp && {
  [ "$(field cnp_sent "$out")" = 0 ] || fail "--set CC_CTRL without cnp_enable: $(field cnp_sent "$out") CNPs"
}

# ---- xroce-regs watch --cc / --qp ----
o=$("$regs" watch --cc -i 0.05 -n 2) || fail "watch --cc: exit $?"
for c in cnp_sent cnp_rcvd ecn_marked_pkts dcqcn_rate_decreases pacer_waits pfc_pause_rcvd PFC_STATUS; do
  [ "$(grep -c "^$c " <<<"$o")" = 2 ] || fail "watch --cc: $c not shown in each of 2 rounds"
done
grep -q "pfc_tx_prio" <<<"$o" && fail "watch --cc: zero per-priority counters shown"
o=$("$regs" watch --qp 0x11 -i 0.05 -n 1) || fail "watch --qp: exit $?"
grep -q "qp 0x000011  READ: SLVERR" <<<"$o" || fail "watch --qp on a QP that does not exist: $o"
for a in "watch --qp x" "watch --qp 0x1000000" "watch --qp ," "dump --cc" "read CC_CTRL --qp 1"; do
  rc=0; o=$("$regs" $a 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "xroce-regs $a: exit $rc, not 2: $o"
done
# Live: a longer incast serving its engines' registers; watch a sender.
"$perf" congestion -N 2 -D 1 -i 100 --regs-socket "$work/regs" >live.out 2>&1 &
live=$!
for _ in $(seq 100); do [ -S "$work/regs-s0" ] && grep -q '^ *qp s0\.0 ' live.out && break; sleep 0.1; done
qpn=$(awk '$1 == "qp" && $2 == "s0.0" { print $3; exit }' live.out)
if [ -S "$work/regs-s0" ] && [ -n "$qpn" ]; then
  o=$(timeout 20 "$regs" --attach "$work/regs-s0" watch --cc --qp "$qpn" -i 0.3 -n 2) || fail "live watch: exit $?"
  grep -qE "^cnp_rcvd +[1-9][0-9]* " <<<"$o" || fail "live watch: no CNPs received: $o"
  grep -qE "^dcqcn_rate_decreases +[1-9]" <<<"$o" || fail "live watch: no rate decreases"
  grep -qE "^qp $qpn  rate +[0-9]+ Mb/s target +[0-9]+ Mb/s alpha +[0-9]+/1024  ce +[0-9]+ cnp_sent +[0-9]+ cnp_rcvd +[1-9]" <<<"$o" \
    || fail "live watch --qp: no DCQCN state for $qpn: $(grep '^qp' <<<"$o")"
  echo "ok   live watch: $(grep '^qp' <<<"$o" | tail -1)"
else
  fail "live: no register socket or QP line: $(head -20 live.out)"
fi
kill "$live" 2>/dev/null || true
wait "$live" 2>/dev/null || true

[ "$fails" = 0 ] && echo "all congestion checks passed" || { echo "$fails failure(s)"; exit 1; }
