#!/usr/bin/env bash
# launch/netns_hosts.sh: N fake hosts on one machine, so the multi-host paths of tpbench (MPI
# over TCP between hosts, Slurm with srun --mpi=pmix, a slow or dead link) run and are tested
# without a cluster.
#
# Host hK is a network namespace "hK" plus a UTS namespace with hostname hK (a bind-mounted
# namespace file under STATE/uts), joined to the others by a veth pair on a bridge made here
# (tpbbr0), with address 10.213.7.(K+1)/24 and its own /etc/hosts (/etc/netns/hK/hosts lists
# every host; /etc/netns/hK/resolv.conf points at 127.0.0.1 inside the namespace). Every
# address is on interfaces this script creates; nothing is routed out of the machine, and all
# launchers (mpirun, srun) run inside h0, so no test host name is ever looked up in DNS.
#
#   netns_hosts.sh up N [--rate RATE] [--delay US] [--tcp-retries2 R]
#                                                     hosts h0..h(N-1), optionally shaped
#   netns_hosts.sh shape HOST --rate RATE [--delay US] | shape HOST --clear   (replaces
#                                                     the host's shaping: what is not given goes)
#   netns_hosts.sh link HOST down|up                  the host's cable: its bridge port
#   netns_hosts.sh measure [HOST...] [--rate]         ping RTT (and three 1 s TCP transfers) again
#   netns_hosts.sh mpirun NP [MPIRUN ARGS] -- CMD...  Open MPI across the hosts, rank k on h(k%N)
#   netns_hosts.sh slurm up|down                      munged, slurmctld (h0), one slurmd per host
#   netns_hosts.sh srun [SRUN ARGS] -- CMD...         srun from inside h0
#   netns_hosts.sh exec HOST CMD...                   run CMD on HOST (its net, UTS, /etc/hosts)
#   netns_hosts.sh status                             what is up, shaping, measured RTT
#   netns_hosts.sh down                               remove everything made here (idempotent)
#
# Shaping (tc): a host's RATE limits both directions of its link: tbf on tpb0's egress inside
# the host (what it sends) and on tpbv-hK's egress on the bridge side (what it receives).
# --delay US is one-way latency of the host's link, added the same way with netem (host to host
# one-way = the two links' delays summed); a kernel without sch_netem gets exit 2, not a fake.
# After up/shape/link up the RTT from a peer (h0, or h1 for h0) is measured with ping (median
# of 20) and, where a rate is set, the rate with a 1 s python3 TCP stream into the host; both
# go to STATE/links.json, which mpirun/srun export as TPB_LINKS_FILE for tpbench to record.
#
# A dead link (`link HOST down` under a job): TCP gives up on unacknowledged data after
# net.ipv4.tcp_retries2 retransmissions, 15 by default (about 15 minutes), and notices an idle
# connection only by keepalive. up sets tcp_retries2=2 in every host's namespace (a time limit
# of 7 x 200 ms = 1.4 s; --tcp-retries2 15 for the kernel's default) and a route rto_min of
# 250 ms (TPB_NETNS_RTO_MIN_MS), so the retransmissions land at 0.25, 0.75 and 1.75 s and the
# third is the one that gives up: at Linux's own 200 ms floor a retransmission falls on the
# limit itself, and with tcp_retries2=3 mpirun's last send was given up 3.4 or 6.9 s after it,
# run to run. mpirun adds shorter Open MPI OOB keepalives and no 1 s pauses between SIGCONT, SIGTERM
# and SIGKILL to ranks that have already exited (see cmd_mpirun). Measured with tpbench sweep
# --collective-timeout 5, link down mid-run: ranks gone at 5.0-5.4 s (each one's watchdog),
# mpirun at 7.1-8.8 s (its last order to the lost host's orted given up by TCP), exit 3. Before
# these settings mpirun took 11.4-15 s. A rank stuck in a collective that tpbench does not watch
# is not ended by any of this: mpirun waits for it; `down` kills what is left in the namespaces.
#
# Parts: links.json and measuring in launch/netns/links.sh, Slurm in launch/netns/slurm.sh.
#
# State: ${TPB_NETNS_STATE:-/run/tpb-netns}. STATE/ledger lists what up made (namespaces,
# links, mounts, directories) and STATE/pids/ the daemons started (PID and start time, so a
# recycled PID is never signalled); down undoes exactly those, and kills the processes still
# inside the namespaces it made (orphaned orted or tpbench ranks after a dead link). Needs
# root, iproute2, util-linux (nsenter, unshare), iputils-ping, python3; slurm: slurm-wlm,
# munge (launch/deps.sh: tpb_install_deps "${TPB_MULTIHOST_PACKAGES[@]}").
# A && B || die (B is a test, never fails with output), and single-quoted code for sh/python:
# shellcheck disable=SC2015,SC2016
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
STATE=${TPB_NETNS_STATE:-/run/tpb-netns}
NET=10.213.7
SUBNET=$NET.0/24
BRIDGE=tpbbr0
INNER=tpb0                     # the host's end of its veth, inside its namespace
MAX_HOSTS=64
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
RATE_PORT=47201

die() { echo "netns_hosts.sh: $*" >&2; exit 1; }
say() { echo "netns_hosts.sh: $*" >&2; }
outer() { echo "tpbv-$1"; }    # the bridge-side end of host $1's veth
addr_of() { echo "$NET.$((${1#h} + 1))"; }
hosts() { [ -f "$STATE/hosts" ] && cat "$STATE/hosts"; }
nhosts() { hosts | wc -l; }
is_up() { [ -f "$STATE/ledger" ]; }
need_up() { is_up || die "not up (no $STATE/ledger): run '$0 up N' first"; }
need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (namespaces, veth, tc)"; }
need_host() { hosts | grep -qx -- "$1" || die "no host '$1' (hosts: $(hosts | tr '\n' ' '))"; }
ledger() { echo "$*" >>"$STATE/ledger"; }

# links.json and the measurements (launch/netns/links.sh); Slurm (launch/netns/slurm.sh).
# shellcheck source=launch/netns/links.sh
source "$(dirname "$SELF")/netns/links.sh"
# shellcheck source=launch/netns/slurm.sh
source "$(dirname "$SELF")/netns/slurm.sh"

# ---------------------------------------------------------------------------------------------
# Running things on a host. in_host HOST CMD... runs CMD in HOST's network and UTS namespaces
# and in a private mount namespace where /etc/hosts and /etc/resolv.conf are the host's (what
# `ip netns exec` does, minus its remount of /sys, which slurmd refuses). CMD is exec'd: a
# background `in_host ... &` has the PID that CMD ends up with.
# Host hK's processes run on CPU K mod (CPUs online), as a host of its own would have its own
# cores: the ranks stay put instead of migrating between the machine's cores, which keeps runs
# comparable (this project's CI VM has vCPUs of unequal speed). TPB_NETNS_PIN=0 turns it off.
in_host() {
  local h=$1 pin=()
  shift
  [ "${TPB_NETNS_PIN:-1}" = 0 ] || pin=(taskset -c "$((${h#h} % $(getconf _NPROCESSORS_ONLN)))")
  exec "${pin[@]}" nsenter --net="/run/netns/$h" --uts="$STATE/uts/$h" -- \
    unshare --mount --propagation private -- \
    sh -c 'mount --bind "$1/hosts" /etc/hosts &&
           { [ ! -e /etc/resolv.conf ] || mount --bind "$1/resolv.conf" /etc/resolv.conf; } &&
           shift && exec "$@"' sh "/etc/netns/$h" "$@"
}

# Daemon PIDs: STATE/pids/NAME holds "PID STARTTIME"; only a live process with that start time
# is signalled.
proc_start() { # PID -> its start time (field 22 of /proc/PID/stat), empty if gone or a zombie
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  [ "$1" != Z ] && echo "${20}"
}
save_pid() { # NAME PID
  mkdir -p "$STATE/pids"
  echo "$2 $(proc_start "$2")" >"$STATE/pids/$1"
}
saved_alive() { # NAME: true if that daemon still runs
  local pid st
  [ -f "$STATE/pids/$1" ] || return 1
  read -r pid st <"$STATE/pids/$1"
  [ -n "$st" ] && [ "$(proc_start "$pid")" = "$st" ]
}
stop_pids() { # PID...: TERM, up to 5 s, then KILL; reaps our own children
  local pid left
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 50); do
    left=0
    for pid in "$@"; do [ -n "$(proc_start "$pid")" ] && left=1; done
    [ $left -eq 0 ] && break
    sleep 0.1
  done
  for pid in "$@"; do
    [ -n "$(proc_start "$pid")" ] && { say "pid $pid ignored TERM: KILL"; kill -KILL "$pid" 2>/dev/null || true; }
    wait "$pid" 2>/dev/null || true
  done
}
stop_saved() { # NAME...: stop the saved daemons, forget them
  local n pid st pids=()
  for n in "$@"; do
    [ -f "$STATE/pids/$n" ] || continue
    read -r pid st <"$STATE/pids/$n"
    if [ -n "$st" ] && [ "$(proc_start "$pid")" = "$st" ]; then pids+=("$pid"); fi
  done
  stop_pids "${pids[@]}"
  for n in "$@"; do rm -f "$STATE/pids/$n"; done
}

# ---------------------------------------------------------------------------------------------
# Shaping.
have_netem() { unshare --net tc qdisc add dev lo root netem delay 1us >/dev/null 2>&1; }
need_netem() {
  have_netem && return 0
  echo "netns_hosts.sh: --delay needs the sch_netem qdisc, which this kernel ($(uname -r)) lacks (tc qdisc add ... netem fails); not faked" >&2
  exit 2
}
check_rate() { # RATE as tc takes it: 100mbit, 1gbit, 500kbit, 10mbps (bytes)...
  [[ $1 =~ ^[0-9]+(\.[0-9]+)?([kmgt]?bit|[kmgt]?bps)$ ]] || die "bad rate '$1' (e.g. 100mbit, 1gbit, 10mbps)"
}
# A real link of RATE has no allowance above it: the bucket holds 100 us at the rate, at least
# four full-size frames. A 64 KiB bucket (one GSO super-packet) let a decode step's all-reduce
# of 64 KiB through at full speed after every compute gap, so the shaping did not show; a shaped
# device therefore sends frames of one MTU (gso_max_size, see apply_shape).
burst_of() { # RATE -> tbf burst in bytes
  "$PY" -c '
import re, sys
m = re.match(r"([0-9.]+)([kmgt]?)(bit|bps)$", sys.argv[1])
bps = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
Bps = bps / 8 if m.group(3) == "bit" else bps
print(max(int(Bps * 100e-6), 4 * 1514))' "$1"
}
apply_shape() { # HOST RATE DELAY_US (either may be empty: both empty clears)
  local h=$1 rate=$2 delay=$3 side dev ns
  for side in inner outer; do
    if [ $side = inner ]; then dev=$INNER; ns=(-n "$h"); else dev=$(outer "$h"); ns=(); fi
    tc "${ns[@]}" qdisc del dev "$dev" root 2>/dev/null || true
    # Frames no larger than the bucket: no GSO super-packets while shaped (65536 when cleared).
    ip "${ns[@]}" link set dev "$dev" gso_max_size "$([ -n "$rate" ] && echo 1514 || echo 65536)"
    if [ -n "$rate" ]; then
      tc "${ns[@]}" qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$(burst_of "$rate")" latency 20ms
      [ -z "$delay" ] || tc "${ns[@]}" qdisc add dev "$dev" parent 1:1 handle 10: netem delay "${delay}us" limit 100000
    elif [ -n "$delay" ]; then
      tc "${ns[@]}" qdisc add dev "$dev" root handle 1: netem delay "${delay}us" limit 100000
    fi
  done
  links set "$h" "rate=$([ -n "$rate" ] && echo "\"$rate\"" || echo null)" "delay_us=${delay:-null}"
}

# ---------------------------------------------------------------------------------------------
cmd_up() {
  need_root
  local n=${1:-} rate="" delay="" retries=${TPB_NETNS_TCP_RETRIES2:-2} k h a
  local rto_min=${TPB_NETNS_RTO_MIN_MS:-250}
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le $MAX_HOSTS ] || die "usage: up N [--rate RATE] [--delay US] [--tcp-retries2 R] (1 <= N <= $MAX_HOSTS)"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) rate=${2:?--rate RATE}; check_rate "$rate"; shift 2 ;;
      --delay) delay=${2:?--delay US}; [[ $delay =~ ^[0-9]+$ ]] || die "bad --delay '$delay' (whole microseconds)"; shift 2 ;;
      --tcp-retries2) retries=${2:?--tcp-retries2 R}; shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  [[ $retries =~ ^[0-9]+$ ]] && [ "$retries" -ge 1 ] && [ "$retries" -le 15 ] || die "bad --tcp-retries2 '$retries' (1..15)"
  [[ $rto_min =~ ^[0-9]+$ ]] && [ "$rto_min" -ge 1 ] && [ "$rto_min" -le 5000 ] || die "bad TPB_NETNS_RTO_MIN_MS '$rto_min' (1..5000)"
  [ -z "$delay" ] || need_netem
  is_up && die "already up ($STATE/ledger exists): run '$0 down' first"
  ip link show "$BRIDGE" >/dev/null 2>&1 && die "a link named $BRIDGE exists but $STATE has no ledger: not ours, not touching it"
  for k in $(seq 0 $((n - 1))); do
    ip netns list | grep -qE "^h$k( |$)" && die "a network namespace h$k exists but is not ours: remove it first"
    [ -e "/etc/netns/h$k" ] && die "/etc/netns/h$k exists but is not ours: remove it first"
  done
  [ -e "$STATE" ] && [ -n "$(ls -A "$STATE" 2>/dev/null)" ] && die "$STATE exists and is not empty but has no ledger: remove it first"

  trap 'up_failed' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$STATE"
  : >"$STATE/ledger"
  [ -d /run/netns ] || ledger runnetns /run/netns
  [ -d /etc/netns ] || { mkdir -p /etc/netns; ledger etcnetns /etc/netns; }
  mkdir -p "$STATE/uts"

  ip link add "$BRIDGE" type bridge
  ledger link "$BRIDGE"
  sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1" 2>/dev/null || true
  ip link set "$BRIDGE" up

  for k in $(seq 0 $((n - 1))); do
    h=h$k; a=$(addr_of "$h")
    echo "$h" >>"$STATE/hosts"
    mkdir -p "/etc/netns/$h"
    ledger dir "/etc/netns/$h"
    { echo "127.0.0.1 localhost"
      for j in $(seq 0 $((n - 1))); do echo "$(addr_of "h$j") h$j"; done; } >"/etc/netns/$h/hosts"
    echo "nameserver 127.0.0.1" >"/etc/netns/$h/resolv.conf"   # nothing resolves outside

    ip netns add "$h"
    ledger netns "$h"
    ip netns exec "$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
    ip netns exec "$h" sysctl -qw "net.ipv4.tcp_retries2=$retries"
    ip link add "$(outer "$h")" type veth peer name "$INNER" netns "$h"
    ledger link "$(outer "$h")"
    sysctl -qw "net.ipv6.conf.$(outer "$h").disable_ipv6=1" 2>/dev/null || true
    ip link set "$(outer "$h")" master "$BRIDGE" up
    ip -n "$h" addr add "$a/24" dev "$INNER"
    ip -n "$h" link set lo up
    ip -n "$h" link set "$INNER" up
    # A fixed floor on the retransmission timeout, above Linux's 200 ms: see "A dead link" above.
    ip -n "$h" route replace "$SUBNET" dev "$INNER" proto kernel scope link src "$a" rto_min "${rto_min}ms"

    touch "$STATE/uts/$h"
    unshare --uts="$STATE/uts/$h" hostname "$h"
    ledger mount "$STATE/uts/$h"
  done
  # shellcheck disable=SC2046
  links init "$SUBNET" "$NET" $(hosts)
  for h in $(hosts); do
    { [ -z "$rate" ] && [ -z "$delay" ]; } || apply_shape "$h" "$rate" "$delay"
  done
  for h in $(hosts); do measure_host "$h"; done
  echo "$retries" >"$STATE/tcp_retries2"
  trap - EXIT INT TERM
  echo "up: $n hosts on $SUBNET (bridge $BRIDGE), net.ipv4.tcp_retries2=$retries in each, state $STATE"
  links status "$BRIDGE"
}
up_failed() {
  local rc=$?
  [ $rc -eq 0 ] && return
  say "up failed (exit $rc): tearing down what it made"
  cmd_down >&2 || true
  [ $rc -eq 130 ] || rc=1   # 2 means "no sch_netem" only
  exit $rc
}

cmd_shape() {
  need_root; need_up
  local h=${1:?usage: shape HOST --rate RATE [--delay US] | shape HOST --clear} rate="" delay="" clear=""
  need_host "$h"; shift
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) rate=${2:?--rate RATE}; check_rate "$rate"; shift 2 ;;
      --delay) delay=${2:?--delay US}; [[ $delay =~ ^[0-9]+$ ]] || die "bad --delay '$delay'"; shift 2 ;;
      --clear) clear=1; shift ;;
      *) die "shape: unknown option '$1'" ;;
    esac
  done
  if [ -n "$clear" ]; then
    [ -z "$rate$delay" ] || die "shape: --clear takes no --rate/--delay"
  else
    [ -n "$rate$delay" ] || die "shape: give --rate RATE, --delay US or --clear"
    [ -z "$delay" ] || need_netem
  fi
  apply_shape "$h" "$rate" "$delay"
  remeasure "$h"
  if [ -n "$clear" ]; then
    echo "shape: $h cleared"
  else
    echo "shape: $h rate ${rate:-none}, delay $([ -n "$delay" ] && echo "$delay us" || echo none): on $INNER egress inside $h (what $h sends) and on $(outer "$h") egress on the bridge (what $h receives)"
  fi
  links status "$BRIDGE" | grep -A2 "^  $h "
}

cmd_link() {
  need_root; need_up
  local h=${1:?usage: link HOST down|up} st=${2:-}
  need_host "$h"
  case $st in
    down | up) ;;
    *) die "usage: link HOST down|up" ;;
  esac
  # The bridge-side end: the host sees its carrier go (NO-CARRIER), its packets are dropped and
  # nothing reaches it, like a pulled cable; no error is returned to its sockets.
  ip link set "$(outer "$h")" "$st"
  links set "$h" "link=\"$st\""
  remeasure "$h"
  # A node Slurm marked down while its link was: back to service now, not at the next ping.
  if [ "$st" = up ] && saved_alive slurmctld; then
    SLURM_CONF=$(slurm_conf) in_host_sub h0 scontrol update NodeName="$h" State=RESUME >/dev/null 2>&1 || true
  fi
  echo "link: $h $st ($(outer "$h") on $BRIDGE)"
}

cmd_measure() {
  need_root; need_up
  local want_rate="" hs=() h
  for h in "$@"; do
    if [ "$h" = --rate ]; then want_rate=rate; else need_host "$h"; hs+=("$h"); fi
  done
  [ ${#hs[@]} -gt 0 ] || mapfile -t hs < <(hosts)
  for h in "${hs[@]}"; do measure_host "$h" "$want_rate"; done
  links status "$BRIDGE"
}

cmd_exec() {
  need_up
  local h=${1:?usage: exec HOST CMD...}
  need_host "$h"; shift
  [ $# -gt 0 ] || die "usage: exec HOST CMD..."
  in_host "$h" "$@"
}

# mpirun NP [MPIRUN ARGS] -- CMD...: hostfile of the hosts with ceil(NP/N) slots each and
# --map-by node (unless ARGS map themselves), so rank k runs on h(k % N); remote daemons are
# started by STATE/mpi/agent.sh (Open MPI's ssh stand-in: AGENT HOST CMDLINE runs CMDLINE on
# HOST). mpirun itself runs in h0; TCP (and the OOB channel) only on the test subnet.
cmd_mpirun() {
  need_root; need_up
  local np=${1:-} n args=() cmd=() mca v
  [[ $np =~ ^[0-9]+$ ]] && [ "$np" -ge 1 ] || die "usage: mpirun NP [MPIRUN ARGS] -- CMD..."
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ "${1:-}" = -- ] && [ $# -ge 2 ] || die "usage: mpirun NP [MPIRUN ARGS] -- CMD..."
  shift; cmd=("$@")
  n=$(nhosts)
  mkdir -p "$STATE/mpi"
  # One file per slot count, written whole and renamed: concurrent mpiruns never see half a file.
  local slots=$(((np + n - 1) / n)) hf
  hf=$STATE/mpi/hostfile.slots$slots
  hosts | sed "s/\$/ slots=$slots/" >"$hf.$$" && mv -f "$hf.$$" "$hf"
  { echo '#!/bin/sh'
    echo '# Open MPI plm_rsh_agent for launch/netns_hosts.sh hosts: like ssh, AGENT HOST WORDS... runs the words as one command line on HOST.'
    printf 'h=$1; shift; exec env TPB_NETNS_STATE=%q %q exec "$h" sh -c "$*"\n' "$STATE" "$SELF"
  } >"$STATE/mpi/agent.sh.$$"
  chmod +x "$STATE/mpi/agent.sh.$$" && mv -f "$STATE/mpi/agent.sh.$$" "$STATE/mpi/agent.sh"
  # shellcheck disable=SC2054  # self,tcp is one word (the order the hosts-tcp presets check)
  mca=(--hostfile "$hf" -np "$np"
    --mca plm rsh --mca plm_rsh_agent "$STATE/mpi/agent.sh" --mca plm_rsh_no_tree_spawn 1
    --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET"
    --mca mpi_yield_when_idle 1
    -x OMPI_ALLOW_RUN_AS_ROOT=1 -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    -x OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
    -x TPB_LINKS_FILE="$STATE/links.json")
  printf '%s\n' "${args[@]}" | grep -qE -- '^-{1,2}(map-by|npernode|N|ppr|rankfile|rf)$' || mca+=(--map-by node)
  printf '%s\n' "${args[@]}" | grep -qE -- '^-{1,2}bind-to$' || mca+=(--bind-to none)
  # An idle control connection to a host whose link died is noticed by TCP keepalive only:
  # Open MPI's 300 s idle + 9 probes x 20 s leaves mpirun waiting up to 8 min; a probe after 15 s
  # idle, 6 x 5 s unanswered, ends it 30 to 45 s after the link died (after what tpbench itself
  # reports with a --collective-timeout under ~29 s). MPIRUN ARGS naming oob_tcp_keepalive_* win.
  # Killing a job's ranks: Open MPI sends SIGCONT, SIGTERM and SIGKILL 1 s apart, even to a
  # rank that has exited (a watchdog's exit 3); tpbench handles none of them, so no pause.
  printf '%s\n' "${args[@]}" | grep -q -- '^odls_base_sigkill_timeout' ||
    mca+=(--mca odls_base_sigkill_timeout 0)
  printf '%s\n' "${args[@]}" | grep -q -- '^oob_tcp_keepalive' ||
    mca+=(--mca oob_tcp_keepalive_time 15 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 6)
  # Not an allocation: an outer Slurm job's variables would switch Open MPI to its slurm plm/ras.
  for v in $(compgen -e); do [[ $v == SLURM_* ]] && unset "$v"; done
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TPB_LINKS_FILE="$STATE/links.json"
  in_host h0 mpirun "${mca[@]}" "${args[@]}" "${cmd[@]}"
}

# ---------------------------------------------------------------------------------------------
cmd_down() {
  need_root
  if [ ! -f "$STATE/ledger" ]; then
    [ -d "$STATE" ] && rm -rf "$STATE"
    echo "down: nothing up"
    return 0
  fi
  local kind arg h pid left=() entries=()
  cmd_slurm_down >/dev/null || true
  # shellcheck disable=SC2046  # daemon names are single words
  [ -d "$STATE/pids" ] && stop_saved $(ls "$STATE/pids")
  mapfile -t entries < <(tac "$STATE/ledger")
  # Whatever still runs inside our namespaces was started through us (mpirun ranks, orted,
  # measurement helpers): stop it by PID, or the namespaces would outlive their names.
  for e in "${entries[@]}"; do
    read -r kind arg <<<"$e"
    [ "$kind" = netns ] || continue
    for pid in $(ip netns pids "$arg" 2>/dev/null); do left+=("$pid"); done
  done
  [ ${#left[@]} -eq 0 ] || { say "down: stopping ${#left[@]} leftover process(es) in the namespaces: ${left[*]}"; stop_pids "${left[@]}"; }
  for e in "${entries[@]}"; do
    read -r kind arg <<<"$e"
    case $kind in
      mount) mountpoint -q "$arg" 2>/dev/null && { umount "$arg" 2>/dev/null || umount -l "$arg"; } ;;
      netns) ip netns list | grep -qE "^$arg( |$)" && ip netns del "$arg" ;;
      link) ip link show "$arg" >/dev/null 2>&1 && ip link del "$arg" ;;
      dir) case $arg in /etc/netns/h[0-9]* | "$STATE"/*) rm -rf -- "$arg" ;; esac ;;
      etcnetns) rmdir /etc/netns 2>/dev/null || true ;;
      runnetns)
        if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
          mountpoint -q /run/netns && umount /run/netns
          rmdir /run/netns 2>/dev/null || true
        fi ;;
    esac
  done
  rm -rf -- "$STATE"
  echo "down: removed"
}

cmd_status() {
  if ! is_up; then echo "status: down (no $STATE/ledger)"; return 0; fi
  local h d
  echo "status: up, state $STATE, net.ipv4.tcp_retries2=$(cat "$STATE/tcp_retries2" 2>/dev/null || echo '?') in each host"
  links status "$BRIDGE"
  echo "shaping (tbf/netem on $INNER egress inside the host = what it sends; on tpbv-HOST egress = what it receives):"
  for h in $(hosts); do
    printf '  %-4s inside: %s | bridge side: %s\n' "$h" \
      "$(tc -n "$h" qdisc show dev "$INNER" 2>/dev/null | grep -v noqueue | tr '\n' ' ' || true)" \
      "$(tc qdisc show dev "$(outer "$h")" 2>/dev/null | grep -v noqueue | tr '\n' ' ' || true)"
  done
  printf 'slurm:'
  if saved_alive slurmctld; then
    for d in munged slurmctld $(hosts | sed 's/^/slurmd-/'); do
      printf ' %s=%s' "$d" "$(saved_alive "$d" && cut -d' ' -f1 "$STATE/pids/$d" || echo dead)"
    done
    printf ' (SLURM_CONF=%s)\n' "$(slurm_conf)"
  else
    echo " down"
  fi
}

usage() { sed -n '2,/^# A && B/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; }

main() {
  local sub=${1:-}
  [ $# -gt 0 ] && shift
  case $sub in
    up) cmd_up "$@" ;;
    shape) cmd_shape "$@" ;;
    link) cmd_link "$@" ;;
    measure) cmd_measure "$@" ;;
    mpirun) cmd_mpirun "$@" ;;
    slurm) cmd_slurm "$@" ;;
    srun) cmd_srun "$@" ;;
    exec) cmd_exec "$@" ;;
    status) cmd_status ;;
    down) cmd_down ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 1 ;;
  esac
}
main "$@"
