#!/usr/bin/env bash
# xroce-perf as a user meets it: every test on the in-memory link with
# --verify, a size sweep, JSON output, timed runs, the rc_pingpong mode, two
# processes over the UDP link on loopback (perftest's TCP exchange), and
# clear errors for bad arguments.
set -euo pipefail
perf=$1
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat; do
  out=$(timeout 120 "$perf" $t --link mem -n 300 -q $([[ $t == *_bw ]] && echo 2 || echo 1) --verify 2>&1) \
    || { fail "$t: exit $?: $(tail -3 <<<"$out")"; continue; }
  grep -q "errors  <-- FAILED" <<<"$out" && fail "$t: verification failed"
  grep -Eq "Data verification: [1-9][0-9]* messages checked, 0 errors|Receiver's data verification: [1-9][0-9]* messages checked, 0 errors" <<<"$out" \
    || fail "$t: nothing verified: $(tail -3 <<<"$out")"
  if [[ $t == *_bw ]]; then
    grep -q "#bytes     #iterations    BW peak\[MiB/sec\]    BW average\[MiB/sec\]   MsgRate\[Mpps\]" <<<"$out" || fail "$t: no bw table"
  else
    grep -q "t_min\[usec\]    t_max\[usec\]  t_typical\[usec\]    t_avg\[usec\]    t_stdev\[usec\]   99% percentile\[usec\]   99.9% percentile\[usec\]" <<<"$out" || fail "$t: no lat table"
  fi
  grep -q "local address: LID" <<<"$out" || fail "$t: no address block"
  echo "ok   $t: $(grep -E '^ [0-9]' <<<"$out" | tail -1 | tr -s ' \t' ' ')"
done

# The latency clock (perftest's: a stamp per post, samples from post to
# post, TSC ticks turned into microseconds at a rate taken against the
# monotonic clock): a long run's samples add up to at most the command's
# wall time and to at least a quarter of it (0.8 here): none lost or
# counted twice, and in microseconds, not ticks or nanoseconds. A single
# iteration still gives its one sample.
t0=$(date +%s%N)
out=$(timeout 120 "$perf" write_lat --link mem -n 200000 --out_json --out_json_file=lat.json 2>&1) || fail "write_lat -n 200000: $out"
t1=$(date +%s%N)
/usr/bin/python3 -c "
import json,sys
r=json.load(open('lat.json'))['results'][-1]
wall_us=($t1-$t0)/1e3
loop_us=r['t_avg']*2*199999
assert 0.05 <= r['t_min'] <= r['t_typical'] <= r['t_max'], r
assert wall_us / 4 <= loop_us <= wall_us, (loop_us, wall_us)
" || fail "write_lat's samples do not fit its run: $(cat lat.json)"
out=$(timeout 60 "$perf" write_lat --link mem -n 1 2>&1) || fail "write_lat -n 1: $out"
grep -qE '^ 2 +1 +[0-9.]*[1-9]' <<<"$out" || fail "write_lat -n 1: no sample: $(grep -E '^ [0-9]' <<<"$out")"
echo "ok   the latency clock"

# -a: every size from 2 up, one line each; --report_gbits; --out_json.
out=$(timeout 120 "$perf" write_bw --link mem -a -n 20 --report_gbits --out_json --out_json_file=w.json 2>&1) || fail "write_bw -a: $out"
lines=$(grep -cE '^ [0-9]+ +20 ' <<<"$out" || true)
[ "$lines" -eq 23 ] || fail "write_bw -a printed $lines size lines, not 23"
grep -q "BW peak\[Gb/sec\]" <<<"$out" || fail "--report_gbits"
/usr/bin/python3 -c "
import json,sys
d=json.load(open('w.json'))
assert d['status']=='ok' and len(d['results'])==23 and d['results'][-1]['MsgSize']==8388608, d
" || fail "--out_json is not the expected JSON"

# -D: a line per second, then the total.
out=$(timeout 60 "$perf" read_bw --link mem -D 3 2>&1) || fail "read_bw -D 3: $out"
n=$(grep -cE '^ 65536 ' <<<"$out" || true)
[ "$n" -ge 3 ] || fail "read_bw -D 3 printed $n result lines"
# -D keeps -Q: a completion per 32 WRs, not one per WR (and the run ends).
out=$(timeout 60 "$perf" write_bw --link mem -s 64 -D 1 -Q 32 --counters 2>&1) || fail "write_bw -D 1 -Q 32: $out"
wqes=$(awk '$1=="sq_wqes"{print $2; exit}' <<<"$out"); cqes=$(awk '$1=="cqes"{print $2; exit}' <<<"$out")
[ -n "$wqes" ] && [ -n "$cqes" ] && [ "$wqes" -gt 0 ] && [ $((cqes * 8)) -lt "$wqes" ] ||
  fail "write_bw -D 1 -Q 32: $cqes completions for $wqes WRs"

# rc_pingpong mode.
out=$(timeout 60 "$perf" pingpong --link mem -n 200 2>&1) || fail "pingpong: $out"
grep -q "iters in .* usec/iter" <<<"$out" || fail "pingpong output: $out"
# ibv_rc_pingpong's own flags: taken (-g 0, -c checks the data, -i 1, -l 0)
# or refused with a message naming the flag.
out=$(timeout 60 "$perf" pingpong --link mem -n 50 -g 0 -c -i 1 -l 0 2>&1) || fail "pingpong -g 0 -c: $out"
grep -q "data verification: [1-9][0-9]* messages checked, 0 errors" <<<"$out" || fail "pingpong -c checked nothing: $out"
for f in "-g 1:-g 1" "-e:-e (completion events)" "-o:-o (on-demand" "-i 2:-i 2" "-t:-t (completion timestamps)"; do
  out=$(timeout 10 "$perf" pingpong --link mem -n 5 ${f%%:*} 2>&1) && fail "pingpong ${f%%:*} accepted"
  grep -qF -- "${f#*:}" <<<"$out" || fail "pingpong ${f%%:*}: no message naming it: $out"
done
echo "ok   pingpong: ibv_rc_pingpong's flags"

# Two processes over the UDP link: perftest's exchange on TCP.
for t in write_bw send_lat atomic_bw send_bw; do
  timeout 60 "$perf" $t --link udp --bind 127.0.0.1 -p 19200 -n 300 --verify >srv.out 2>&1 &
  sleep 0.3
  if out=$(timeout 60 "$perf" $t --link udp --bind 127.0.0.2 -p 19200 -n 300 --verify 127.0.0.1 2>&1) && wait $!; then
    grep -q "errors  <-- FAILED" <<<"$out$(cat srv.out)" && fail "$t over udp: verification failed"
    # send_bw's server measures what it received, as perftest's does.
    if [ $t = send_bw ] && ! grep -qE '^ 65536 +300 +[0-9.]*[1-9]' srv.out; then
      fail "send_bw server's result line: $(grep -E '^ 65536' srv.out)"
    fi
    echo "ok   $t over the UDP link between two processes"
  else
    fail "$t over udp: $(tail -3 <<<"$out") / server: $(tail -3 srv.out)"
  fi
done

# A client that leaves in the middle of the exchange: the server says the
# exchange failed and exits 1, instead of dying of SIGPIPE without a word.
timeout 30 "$perf" write_bw --link udp --bind 127.0.0.1 -p 19202 -n 10 >srv.out 2>&1 &
spid=$!
sleep 0.3
python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", 19202), timeout=5)
s.sendall(b"6.10".ljust(16, b"\0") + bytes([0, 0, 16, 0, 0, 0, 0, 64]) + b"5\0")   # version, cycle, cache, MTU
s.close()'
rc=0; wait $spid || rc=$?
if [ $rc = 1 ] && grep -q "Failed to exchange" srv.out; then
  echo "ok   a client gone mid-exchange: the server reports it and exits 1"
else
  fail "a client gone mid-exchange: server rc $rc: $(tail -2 srv.out)"
fi

# A peer whose exchange is malformed: a version that is no number ("nan"
# passed the version check and led to a read past the MTU's buffer) and a
# key whose last GID byte lacks its ':' (accepted before); the server says
# so and exits 1.
for bad in nan key; do
  timeout 30 "$perf" write_bw --link udp --bind 127.0.0.1 -p 19203 -n 10 >srv.out 2>&1 &
  spid=$!
  sleep 0.3
  python3 - "$bad" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", 19203), timeout=5)
version = b"nan" if sys.argv[1] == "nan" else b"6.10"
s.sendall(version.ljust(16, b"\0") + bytes([0, 0, 16, 0, 0, 0, 0, 64]) + b"5\0")
key = b"0000:0000:000001:000000:00000000:0000000000000000:" + b"00:" * 15 + b"0G" + b"00000000:"
s.sendall(key.ljust(108, b"\0"))
try:
    while s.recv(4096):
        pass
except OSError:
    pass
PY
  rc=0; wait $spid || rc=$?
  want=$([ $bad = nan ] && echo "version 'nan' is not 5.70 or later" || echo "key message is malformed")
  if [ $rc = 1 ] && grep -q "$want" srv.out; then
    echo "ok   a malformed exchange ($bad): the server says so and exits 1"
  else
    fail "a malformed exchange ($bad): server rc $rc: $(tail -2 srv.out)"
  fi
done

# A list of users that does not parse admits nobody more, and says so
# ("1000x" admitted user 1000 before).
out=$(XROCE_HOST_UIDS=1000x timeout 2 "$perf" write_bw --link host --bind 127.0.0.9 -p 19204 2>&1 || true)
grep -q "XROCE_HOST_UIDS='1000x': expected up to 8 user IDs" <<<"$out" \
  && echo "ok   XROCE_HOST_UIDS garbage: refused by name" || fail "XROCE_HOST_UIDS garbage: $(head -2 <<<"$out")"

rc=0; out=$(XROCE_XDP_MODE=bogus timeout 5 "$perf" write_bw --link xdp --ifname lo --bind 127.0.0.1 2>&1) || rc=$?
[ $rc != 0 ] && grep -q "XROCE_XDP_MODE='bogus': expected native, generic or auto" <<<"$out" \
  && echo "ok   XROCE_XDP_MODE garbage: refused by name" || fail "XROCE_XDP_MODE garbage: rc $rc: $out"

# The latency tests under 2 % loss each way, two processes over the kernel's
# UDP: a lost ACK lets the peer's next message complete before our send
# does; that receive completion was once dropped and the run stalled.
for t in send_lat write_lat read_lat atomic_lat; do
  timeout 90 "$perf" $t --link udp --no-host-path --bind 127.0.0.1 -p 19201 -n 300 --verify \
    --fault-drop 0.02 --fault-seed 1 >srv.out 2>&1 &
  sleep 0.3
  if out=$(timeout 90 "$perf" $t --link udp --no-host-path --bind 127.0.0.2 -p 19201 -n 300 --verify \
      --fault-drop 0.02 --fault-seed 11 127.0.0.1 2>&1) && wait $!; then
    grep -q "Data verification: 300 messages checked, 0 errors" <<<"$out" \
      || fail "$t under loss: not all 300 verified: $(grep verification <<<"$out")"
    echo "ok   $t under 2 % loss each way, two processes"
  else
    wait $! 2>/dev/null || true
    fail "$t under loss: $(tail -3 <<<"$out") / server: $(tail -3 srv.out)"
  fi
done

# -c UC|UD and --use_srq (issue 14): the tests perftest allows with each,
# verified end to end; UD messages are clamped to the MTU and land after
# 40 GRH bytes; UC/UD may lose nothing here (the mem link), but the check
# only asks that what arrived is intact.
for args in "send_bw -c UD -s 1000 -q 2" "send_lat -c UD -s 64" "send_bw -c UD" "send_bw -c UC -q 3" \
            "write_lat -c UC" "send_lat -c UC" "send_bw --use_srq -q 4" "send_bw -c UD --use_srq -q 2 -s 512" \
            "send_lat --use_srq" "send_bw -a --use_srq -q 2" "send_bw -g -s 1000 -q 2" "send_lat -g -s 64" \
            "send_bw -g -M 0:0:0:0:0:0:0:0:0:0:255:255:239:9:9:9 --use_srq -q 2 -s 512"; do
  n=$([[ $args == *" -a "* ]] && echo 10 || echo 300)
  out=$(timeout 120 "$perf" $args --link mem -n $n --verify 2>&1) || { fail "$args: exit $?: $(tail -3 <<<"$out")"; continue; }
  grep -q "errors  <-- FAILED" <<<"$out" && fail "$args: verification failed"
  grep -Eq "verification: [1-9][0-9]* messages checked, 0 errors" <<<"$out" || fail "$args: nothing verified: $(tail -3 <<<"$out")"
  conn=$(sed -n 's/.*-c \(U[CD]\).*/\1/p' <<<"$args"); conn=${conn:-RC}
  [[ $args == *" -g"* ]] && conn=UD   # -g (multicast) makes it UD, as perftest
  if [[ $args == *" -g"* ]] && ! grep -Eq "remote address: LID 0000 QPN 0xffffff" <<<"$out"; then
    fail "$args: the receiver did not give the group's QPN"
  fi
  srq=$([[ $args == *use_srq* ]] && echo ON || echo OFF)
  grep -Eq "Connection type : $conn[[:space:]]+Using SRQ      : $srq" <<<"$out" || fail "$args: header does not say $conn / SRQ $srq"
  echo "ok   $args: $(grep -E '^ [0-9]' <<<"$out" | tail -1 | tr -s ' \t' ' ')"
done
# A UD receiver the scheduler holds back (both ends on one core): the
# sender's 300 messages and its "done" are all out before it runs; what
# reached its link still counts, beyond the 16 receives it had posted.
out=$(timeout 120 taskset -c 0 "$perf" send_bw -c UD --use_srq -q 2 -s 512 --link mem -n 300 --verify 2>&1)
got=$(sed -n 's/.*verification: \([0-9]*\) messages checked, 0 errors.*/\1/p' <<<"$out")
[ "${got:-0}" -gt 16 ] && echo "ok   held-back UD receiver took $got messages" \
  || fail "held-back UD receiver: ${got:-no} messages verified: $(tail -3 <<<"$out")"
out=$(timeout 60 "$perf" send_bw -c UD --link mem -n 50 2>&1) || fail "send_bw -c UD: $out"
grep -q "Max msg size in UD is MTU 4096" <<<"$out" || fail "send_bw -c UD did not clamp 65536 to the MTU: $out"
grep -qE '^ 4096 ' <<<"$out" || fail "send_bw -c UD: no 4096-byte line"
out=$(timeout 60 "$perf" write_bw -c UC --link mem -n 300 2>&1) || fail "write_bw -c UC: $out"

# -l (a list of WRs per post call, one doorbell) and -Q (a completion
# every N): every message verified, the count exact when the last list is
# short, the header as perftest's.
for args in "write_bw -l 16 -s 64 -q 2" "send_bw -l 7 -Q 5 -s 64" "read_bw -l 4 -Q 3" "atomic_bw -l 32 -t 64" \
            "send_bw -c UD -l 8 -s 512" "write_bw -l 128 -Q 1 -s 64"; do
  out=$(timeout 120 "$perf" $args --link mem -n 301 --verify 2>&1) || { fail "$args: exit $?: $(tail -3 <<<"$out")"; continue; }
  grep -q "errors  <-- FAILED" <<<"$out" && fail "$args: verification failed"
  grep -Eq "verification: [1-9][0-9]* messages checked, 0 errors" <<<"$out" || fail "$args: nothing verified: $(tail -3 <<<"$out")"
  grep -Eq '^ [0-9]+ +301 ' <<<"$out" || fail "$args: not 301 iterations: $(grep -E '^ [0-9]' <<<"$out" | tail -1)"
  l=$(sed -n 's/.*-l \([0-9]*\).*/\1/p' <<<"$args"); q=$(sed -n 's/.*-Q \([0-9]*\).*/\1/p' <<<"$args")
  grep -Eq "Post List       : $l\b" <<<"$out" || fail "$args: header has no Post List $l"
  # Without -Q, perftest's: a completion per list.
  grep -Eq "CQ Moderation   : ${q:-$l}\b" <<<"$out" || fail "$args: header has no CQ Moderation ${q:-$l}"
  echo "ok   $args: $(grep -E '^ [0-9]' <<<"$out" | tail -1 | tr -s ' \t' ' ')"
done

# -Q is what the engine does: a completion per WR with -Q 1, one per 50
# (and the queue's tail) with -Q 50.
for qm in 1 50; do
  out=$(timeout 60 "$perf" write_bw --link mem -s 64 -n 2000 -Q $qm --counters 2>&1) || fail "-Q $qm: $out"
  wqes=$(awk '$1 == "sq_wqes" { print $2; exit }' <<<"$out"); cqes=$(awk '$1 == "cqes" { print $2; exit }' <<<"$out")
  if [ "$qm" = 1 ]; then ok=$([ "${cqes:-0}" -eq "${wqes:-1}" ] && echo y); else ok=$([ "${cqes:-9999}" -lt $(( ${wqes:-0} / 4 )) ] && echo y); fi
  [ "$ok" = y ] && echo "ok   -Q $qm: $cqes completions for $wqes WRs" || fail "-Q $qm: $cqes completions for $wqes WRs"
done

# Both ends sending (-b): each keeps its engine going until the other is
# done, and neither waits out PEER_WAIT_MS (120 s) for the other's word.
for t in write_bw read_bw atomic_bw; do
  start=$(date +%s)
  out=$(timeout 60 "$perf" $t -b --link mem -n 500 2>&1) || { fail "$t -b: exit $?: $(tail -3 <<<"$out")"; continue; }
  took=$(( $(date +%s) - start ))
  [ "$took" -le 20 ] && echo "ok   $t -b: ${took} s" || fail "$t -b took ${took} s"
done

# The mem link sends large payloads by reference (gather frames); with
# --no-gather every payload is copied into its frame. Both arrive whole.
for g in "" --no-gather; do
  out=$(timeout 60 "$perf" write_bw --link mem -s 65536 -n 300 --verify --counters $g 2>&1) || fail "write_bw $g: $out"
  grep -q "0 errors" <<<"$out" || fail "write_bw --verify $g: $(grep -i verif <<<"$out")"
  n=$(awk '$1 == "link_tx_gather" { print $2; exit }' <<<"$out")
  if [ -z "$g" ]; then ok=$([ "${n:-0}" -gt 0 ] && echo y); else ok=$([ "${n:-1}" -eq 0 ] && echo y); fi
  [ "$ok" = y ] && echo "ok   write_bw ${g:-(gather)}: ${n} gather frames" || fail "write_bw ${g:-(gather)}: ${n:-no} gather frames"
done

# Bad arguments: exit 2 and a reason.
check_bad() {
  local want=$1; shift
  local rc=0 msg
  msg=$("$perf" "$@" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "$want" <<<"$msg" || fail "'$*': rc=$rc '$msg'"
}
check_bad "unknown test" frobnicate_bw
check_bad "must be 256" write_bw --link mem -m 1000
check_bad "bad value" write_bw --link mem -s -5
check_bad "--bind ADDR is needed" write_bw --link udp
check_bad "no server address" write_bw --link mem 10.0.0.1
check_bad "bandwidth options" write_lat --link mem -b
check_bad "bandwidth options" write_lat --link mem -l 4
check_bad "more than the send queue holds" write_bw --link mem -l 200 -t 128
check_bad "bad value" write_bw --link mem -l 2000
check_bad "1 or more" write_bw --link mem -Q 0
check_bad "-t must be 1 or more" write_bw --link mem -t 0
check_bad "-r must be 1 or more" send_bw --link mem -r 0
check_bad "more than a completion queue holds" send_bw --link mem -q 64 -t 16384 -r 16384
check_bad "need RC" read_bw --link mem -c UC
check_bad "need RC" atomic_lat --link mem -c UC
check_bad "only the send tests" write_bw --link mem -c UD
check_bad "offers RC, UC and UD" send_bw --link mem -c XRC
check_bad "only the send tests receive" write_bw --link mem --use_srq
check_bad "multicast is for the send tests" write_bw --link mem -g
check_bad "multicast is for the send tests" send_bw --link mem -M 239.1.1.1
check_bad "a multicast group" send_bw --link mem -g -M 10.0.0.1
check_bad "a multicast group" send_bw --link mem -g -M 1:2:3
check_bad "needs RC" write_bw --link mem -c UC --verify
rc=0; msg=$(timeout 20 "$perf" write_bw --link udp --bind 127.0.0.1 -p 19205 no.such.host.invalid 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "Cannot resolve 'no.such.host.invalid'" <<<"$msg" || fail "unresolvable server: $msg"
rc=0; msg=$("$perf" write_bw --link raw --bind 10.0.0.1 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "needs an interface" <<<"$msg" || fail "raw without --ifname: $msg"
# A capture that cannot be written: exit 1 and the path, at once, nothing
# leaked (the ASan build runs this too: LeakSanitizer reports, the status
# stays 1). Over UDP the server went on without its link and waited.
for link in "--link mem" "--bind 127.0.0.77 -p 19206"; do
  rc=0; msg=$(timeout 20 "$perf" write_bw $link --pcap /nonexistent/dir/x.pcap 2>&1) || rc=$?
  [ "$rc" -eq 1 ] && grep -q "cannot write /nonexistent/dir/x.pcap" <<<"$msg" && ! grep -q Sanitizer <<<"$msg" \
    || fail "write_bw $link --pcap to an unwritable path: rc=$rc '$(head -3 <<<"$msg")'"
done

[ "$fails" -eq 0 ] && echo "PASS: xroce-perf" || exit 1
