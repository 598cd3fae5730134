#!/usr/bin/env bash
# tests/multihost/test_launcher.sh: launch/netns_hosts.sh end to end on one machine (root):
# two fake hosts, mpirun across them (hostnames, tpbench collectives), shaping with a measured
# effect, link down/up, a link that dies under a running tpbench (every rank, orted and mpirun
# must end), Slurm with srun --mpi=pmix launch/srun_node.sh (results name hosts h0 and h1),
# then down, after which nothing of the launcher may be left: no namespace, link, daemon or
# state file, and the main interface must not have sent a packet during the whole test.
# One line per check; exits non-zero if any check fails. About 40 s.
#
#   sudo tests/multihost/test_launcher.sh                      # TPBENCH=build/tpbench
#   TPBENCH=build-cpu/tpbench tests/multihost/test_launcher.sh
# TPB_MAIN_IF names the interface that must stay silent (default eth0).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
L=$ROOT/launch/netns_hosts.sh
TPBENCH=$(readlink -f "${TPBENCH:-$ROOT/build/tpbench}")
export TPBENCH
STATE=${TPB_NETNS_STATE:-/run/tpb-netns}
MAIN_IF=${TPB_MAIN_IF:-eth0}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
T_START=$EPOCHREALTIME

FAILS=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
check() { # DESC CMD...: ok if CMD succeeds
  local d=$1; shift
  if "$@"; then ok "$d"; else bad "$d"; fi
}
fatal() { bad "$*"; echo "stopping: the checks after this one need it"; exit 1; }
elapsed() { "$PY" -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$EPOCHREALTIME"; }
json() { # FILE EXPR: EXPR evaluated with d = the file's JSON
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
tx() { cat "/sys/class/net/$MAIN_IF/statistics/tx_packets"; }
ns_procs() { # the processes inside our namespaces, as HOST:COMM
  local h p
  for h in h0 h1; do
    for p in $(ip netns pids "$h" 2>/dev/null); do echo "$h:$(cat "/proc/$p/comm" 2>/dev/null)"; done
  done
}

[ "$(id -u)" -eq 0 ] || { echo "FAIL needs root (network namespaces)"; exit 1; }
[ -x "$TPBENCH" ] || { echo "FAIL no tpbench at $TPBENCH (set TPBENCH)"; exit 1; }
# shellcheck disable=SC1091  # launch/deps.sh
source "$ROOT/launch/deps.sh"
tpb_install_deps "${TPB_MULTIHOST_PACKAGES[@]}" >/dev/null
[ -f "$STATE/ledger" ] && { echo "FAIL $L is already up ($STATE): '$L down' first"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

OUT=$(mktemp -d /tmp/tpb-multihost.XXXXXX)
PIDS_SEEN=$OUT/pids_seen
: >"$PIDS_SEEN"
finish() {
  local rc=$?
  trap - EXIT
  if [ -f "$STATE/ledger" ]; then "$L" down >"$OUT/down-trap.log" 2>&1 || true; fi
  if [ "$FAILS" -eq 0 ] && [ "$rc" -eq 0 ]; then rm -rf "$OUT"; else echo "outputs kept in $OUT"; fi
  [ "$rc" -ne 0 ] || [ "$FAILS" -eq 0 ] || rc=1
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

if [ -r "/sys/class/net/$MAIN_IF/statistics/tx_packets" ]; then
  TX0=$(tx)
else
  TX0=""
  echo "note no interface $MAIN_IF: the silent-interface check is not made (set TPB_MAIN_IF)"
fi

# --- up ------------------------------------------------------------------------------------
t=$EPOCHREALTIME
"$L" up 2 >"$OUT/up.log" 2>&1 || { cat "$OUT/up.log"; fatal "up 2"; }
ok "up 2 ($(elapsed "$t") s)"
LINKS=$STATE/links.json
check "links.json: launcher, subnet, hosts h0 h1 at 10.213.7.1/.2, links up" \
  test "$(json "$LINKS" '[d["launcher"], d["subnet"]] + [(h["name"], h["addr"], h["link"]) for h in d["hosts"]]')" \
  = "['launch/netns_hosts.sh', '10.213.7.0/24', ('h0', '10.213.7.1', 'up'), ('h1', '10.213.7.2', 'up')]"
RTT0=$(json "$LINKS" 'd["hosts"][1]["measured"]["rtt_us_p50"]')
check "h1's RTT measured unshaped: $RTT0 us ($(json "$LINKS" 'd["hosts"][1]["measured"]["rtt_method"]'))" \
  "$PY" -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) < 100000)' "$RTT0"
check "every host has its hostname" test "$("$L" exec h0 hostname) $("$L" exec h1 hostname)" = "h0 h1"
check "h1 resolves h0 from its own hosts file" test "$("$L" exec h1 getent hosts h0 | awk '{print $1}')" = 10.213.7.1
check "a second up is refused" bash -c "! '$L' up 2 >/dev/null 2>&1"

# --- mpirun ----------------------------------------------------------------------------------
names=$("$L" mpirun 2 -- hostname 2>"$OUT/mpirun-hostname.err" | sort | tr '\n' ' ')
check "mpirun 2 -- hostname: ranks on h0 and h1 ($names)" test "$names" = "h0 h1 "
names=$("$L" mpirun 4 -- hostname 2>>"$OUT/mpirun-hostname.err" | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
check "mpirun 4 -- hostname: two ranks per host ($names)" test "$names" = "h0x2 h1x2 "
t=$EPOCHREALTIME
if "$L" mpirun 2 -- "$TPBENCH" collectives -b 4K -e 64K -f 4 -n 5 -w 1 --out "$OUT/coll" >"$OUT/coll.log" 2>&1; then
  ok "mpirun 2 -- tpbench collectives 4K..64K across the hosts ($(elapsed "$t") s)"
  check "collectives results: context.hosts is [h0, h1]" test "$(json "$OUT/coll/results.json" 'd["context"]["hosts"]')" = "['h0', 'h1']"
  if [ "$(json "$OUT/coll/results.json" '"links" in d["context"]')" = True ]; then
    check "collectives results: context.links is the launcher's links.json" \
      test "$(json "$OUT/coll/results.json" 'd["context"]["links"]["launcher"]')" = launch/netns_hosts.sh
  else
    echo "note this tpbench does not record context.links (TPB_LINKS_FILE)"
  fi
else
  tail -20 "$OUT/coll.log"
  bad "mpirun 2 -- tpbench collectives across the hosts (log: $OUT/coll.log)"
fi

# --- shaping ---------------------------------------------------------------------------------
"$L" measure h1 --rate >"$OUT/measure.log" 2>&1
RATE0=$(json "$LINKS" 'd["hosts"][1]["measured"]["rate_mbit"]')
"$L" shape h1 --rate 1gbit >"$OUT/shape.log" 2>&1 || { cat "$OUT/shape.log"; bad "shape h1 --rate 1gbit"; }
RATE1=$(json "$LINKS" 'd["hosts"][1]["measured"]["rate_mbit"]')
RTT1=$(json "$LINKS" 'd["hosts"][1]["measured"]["rtt_us_p50"]')
check "shape h1 --rate 1gbit: links.json says rate 1gbit" test "$(json "$LINKS" 'd["hosts"][1]["rate"]')" = 1gbit
check "tbf on both ends of h1's link (inside h1 and on the bridge side)" \
  bash -c "tc -n h1 qdisc show dev tpb0 | grep -q tbf && tc qdisc show dev tpbv-h1 | grep -q tbf"
check "measured rate into h1: $RATE0 Mbit/s unshaped, $RATE1 Mbit/s at 1gbit (800..1050, under 3/4 of unshaped)" \
  "$PY" -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (800 <= b <= 1050 and b < 0.75 * a))' "$RATE0" "$RATE1"
echo "info RTT h0->h1 median: $RTT0 us unshaped, $RTT1 us at 1gbit (84-byte pings; tbf does not delay them)"
set +e
msg=$("$L" shape h1 --rate 1gbit --delay 200 2>&1)
rc=$?
set -e
if [ $rc -eq 2 ]; then
  check "shape --delay without sch_netem: exit 2, one line naming sch_netem" \
    test "$(wc -l <<<"$msg") $(grep -c sch_netem <<<"$msg")" = "1 1"
  check "shape --delay refused: h1 keeps its 1gbit and no delay" \
    test "$(json "$LINKS" '(d["hosts"][1]["rate"], d["hosts"][1]["delay_us"])')" = "('1gbit', None)"
elif [ $rc -eq 0 ]; then
  RTT2=$(json "$LINKS" 'd["hosts"][1]["measured"]["rtt_us_p50"]')
  check "shape --delay 200 (netem): RTT $RTT1 -> $RTT2 us, at least +300 us" \
    "$PY" -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not b >= a + 300)' "$RTT1" "$RTT2"
else
  bad "shape --delay: exit $rc ($msg)"
fi
"$L" shape h1 --clear >/dev/null 2>&1
check "shape h1 --clear: no tbf left, rate null" \
  bash -c "! tc -n h1 qdisc show dev tpb0 | grep -q tbf && ! tc qdisc show dev tpbv-h1 | grep -q tbf && [ \"\$('$PY' -c 'import json; print(json.load(open(\"$LINKS\"))[\"hosts\"][1][\"rate\"])')\" = None ]"

# --- link down / up --------------------------------------------------------------------------
"$L" link h1 down >/dev/null
check "link h1 down: h0 cannot ping h1, links.json says down" \
  bash -c "! ip netns exec h0 ping -c 2 -i 0.2 -W 1 -q 10.213.7.2 >/dev/null 2>&1 && [ \"\$('$PY' -c 'import json; print(json.load(open(\"$LINKS\"))[\"hosts\"][1][\"link\"])')\" = down ]"
"$L" link h1 up >/dev/null
check "link h1 up: h0 pings h1 again, RTT measured" \
  bash -c "ip netns exec h0 ping -c 2 -i 0.2 -W 1 -q 10.213.7.2 >/dev/null 2>&1 && [ \"\$('$PY' -c 'import json; print(json.load(open(\"$LINKS\"))[\"hosts\"][1][\"measured\"][\"rtt_us_p50\"] is not None)')\" = True ]"

# A link that dies under a running job: tpbench's own timeout ends both ranks (each loses the
# other), net.ipv4.tcp_retries2=5 in the namespaces (up's default) ends orted and mpirun.
# A fixed hardware profile skips the start-up probe (2-3 s here, and a collective outside the
# watchdog): the link dies during the measured steps, which is what is checked.
TIMEOUT_S=5
cat >"$OUT/hw.json" <<'EOF'
{"name": "cpu-fixed", "peak_flops": {"fp32": 1e11}, "peak_bw": 2e10, "memory_bytes": 0,
 "llc_bytes": 33554432, "link_bw": 0, "measure_at_startup": false,
 "source": "fixed figures for tests/multihost/test_launcher.sh (no start-up probe)"}
EOF
( rc=0; "$L" mpirun 2 -- "$TPBENCH" run --model tiny --phase decode --batch 1 --context 128 --layers 1 \
    --steps 1000000 --warmup 1 --tp 2 --collective-timeout $TIMEOUT_S --hardware "$OUT/hw.json" --out "$OUT/dead" \
    >"$OUT/dead.log" 2>&1 || rc=$?
  echo $rc >"$OUT/dead.rc" ) &
DEAD_JOB=$!
for _ in $(seq 100); do
  [ "$(ns_procs | grep -cE ':(exe|tpbench)$' || true)" -ge 2 ] && break
  sleep 0.1
done
sleep 2                                      # past start-up (under 1 s), into the measured steps
ns_procs >"$OUT/dead.before"
t=$EPOCHREALTIME
"$L" link h1 down >/dev/null
ranks_gone="" all_gone="" dumped="" DEADLINE_S=40
t_down=${t%.*}
while [ $((${EPOCHREALTIME%.*} - t_down)) -lt $DEADLINE_S ]; do
  now=$(ns_procs | tr '\n' ' ')
  [ -z "$ranks_gone" ] && ! grep -qE ':(exe|tpbench) ' <<<"$now " && ranks_gone=$(elapsed "$t")
  [ -z "$now" ] && [ -f "$OUT/dead.rc" ] && { all_gone=$(elapsed "$t"); break; }
  if [ -z "$dumped" ] && [ $((${EPOCHREALTIME%.*} - t_down)) -ge 30 ]; then   # keep the sockets' state
    dumped=1
    { echo "$now"; for h in h0 h1; do echo "== $h"; ip netns exec "$h" ss -tanpo; done; } >"$OUT/dead.ss" 2>&1
  fi
  sleep 0.1
done
if [ -z "$all_gone" ]; then                   # do not wait for TCP: stop them (ours, by PID)
  for h in h0 h1; do for p in $(ip netns pids "$h"); do kill -KILL "$p" 2>/dev/null || true; done; done
fi
wait "$DEAD_JOB" 2>/dev/null || true
echo "info link h1 down under a run (was: $(tr '\n' ' ' <"$OUT/dead.before")): ranks gone after ${ranks_gone:-never} s, mpirun and orted after ${all_gone:-more than $DEADLINE_S} s, mpirun exit $(cat "$OUT/dead.rc" 2>/dev/null || echo none)"
check "dead link: both tpbench ranks end within collective-timeout + 3 s (${ranks_gone:-never})" \
  "$PY" -c 'import sys; sys.exit(not sys.argv[1] or float(sys.argv[1]) > float(sys.argv[2]) + 3)' "$ranks_gone" "$TIMEOUT_S"
check "dead link: mpirun and orted end too, within $DEADLINE_S s (${all_gone:-not by then: killed})" test -n "$all_gone"
check "dead link: tpbench reports the lost rank and mpirun exits 3 ($(cat "$OUT/dead.rc" 2>/dev/null))" \
  bash -c "grep -q 'stopped answering' '$OUT/dead.log' && [ \"\$(cat '$OUT/dead.rc')\" = 3 ]"
"$L" link h1 up >/dev/null

# --- slurm -----------------------------------------------------------------------------------
t=$EPOCHREALTIME
if "$L" slurm up >"$OUT/slurm-up.log" 2>&1; then
  ok "slurm up: munged, slurmctld, slurmd h0 h1, nodes idle ($(elapsed "$t") s)"
else
  cat "$OUT/slurm-up.log"
  fatal "slurm up"
fi
cat "$STATE"/pids/* | awk '{print $1, $2}' >>"$PIDS_SEEN"
t=$EPOCHREALTIME
if "$L" srun -N2 --mpi=pmix -- "$ROOT/launch/srun_node.sh" run --model tiny --phase decode --batch 1 \
  --context 128 --layers 1 --steps 5 --warmup 1 --tp 2 --out "$OUT/srun" >"$OUT/srun.log" 2>&1; then
  ok "srun -N2 --mpi=pmix launch/srun_node.sh run: tpbench as the tasks ($(elapsed "$t") s)"
  check "srun results: context.hosts is [h0, h1], world size 2" \
    test "$(json "$OUT/srun/results.json" '(d["context"]["hosts"], d["context"]["world_size"])')" = "(['h0', 'h1'], 2)"
else
  tail -20 "$OUT/srun.log"
  bad "srun -N2 --mpi=pmix launch/srun_node.sh run (log: $OUT/srun.log)"
fi
"$L" slurm down >/dev/null 2>&1
alive() { # the processes listed (PID STARTTIME) that still run
  local pid st s
  while read -r pid st; do
    s=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    s=${s##*) }
    # shellcheck disable=SC2086
    set -- $s
    [ "$1" != Z ] && [ "${20}" = "$st" ] && echo "$pid"
  done <"$PIDS_SEEN"
  return 0
}
check "slurm down: no daemon of ours alive" test -z "$(alive)"

# --- down ------------------------------------------------------------------------------------
"$L" down >"$OUT/down.log" 2>&1 || bad "down (log: $OUT/down.log)"
check "down: no network namespace h0/h1" bash -c "! ip netns list 2>/dev/null | grep -qE '^h[01]( |\$)'"
check "down: no tpbbr0 or tpbv-* link" bash -c "! ip -br link | grep -qE '^(tpbbr0|tpbv-)'"
check "down: no process of ours alive" test -z "$(alive)"
check "down: no state ($STATE), /etc/netns/h*, uts mounts" \
  bash -c "[ ! -e '$STATE' ] && ! ls -d /etc/netns/h[01] >/dev/null 2>&1 && ! grep -q ' $STATE' /proc/self/mountinfo"
check "down twice is fine" "$L" down
if [ -n "$TX0" ]; then
  TX1=$(tx)
  check "$MAIN_IF sent nothing during the test (tx_packets $TX0 -> $TX1)" test "$TX0" = "$TX1"
fi
echo "$([ $FAILS -eq 0 ] && echo PASS || echo "FAIL ($FAILS)") tests/multihost/test_launcher.sh in $(elapsed "$T_START") s"
[ "$FAILS" -eq 0 ]
