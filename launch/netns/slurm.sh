# Sourced by launch/netns_hosts.sh: `slurm up|down` and `srun`. Uses the main script's
# constants and helpers (STATE, hosts, in_host, save_pid, stop_saved, die, say).
# shellcheck shell=bash disable=SC2015,SC2016
# ---------------------------------------------------------------------------------------------
# Slurm: munged (own key and socket in STATE/munge, never the system's /etc/munge key), then
# slurmctld in h0 and slurmd -N hK in each host, all in the foreground as background jobs of
# this script (PIDs in STATE/pids). Per-node spool and TmpFS (%n): the nodes share one
# filesystem, and PMIx's per-step directories (TmpFS/spmix_appdir_UID_JOB.STEP) collide in
# a shared /tmp.
slurm_conf() { echo "$STATE/slurm/slurm.conf"; }
slurm_write_conf() {
  local c s=$STATE/slurm h hw cpus sockets cores threads
  hw=$(in_host_sub h0 slurmd -C | head -1)
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
  sockets=$(sed -n 's/.* SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$hw")
  cores=$(sed -n 's/.* CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$hw")
  threads=$(sed -n 's/.* ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$hw")
  [ -n "$cpus" ] || die "slurmd -C said nothing usable: $hw"
  : >"$s/plugstack.conf"
  c=$(slurm_conf)
  cat >"$c" <<EOF
# Written by launch/netns_hosts.sh for its fake hosts; everything lives under $STATE.
ClusterName=tpbnetns
SlurmctldHost=h0($(addr_of h0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge-run/munge.socket
StateSaveLocation=$s/ctld
SlurmdSpoolDir=$s/%n/spool
TmpFS=$s/%n/tmp
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/%n/slurmd.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$s/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=5
MailProg=/bin/true
EOF
  for h in $(hosts); do
    echo "NodeName=$h NodeAddr=$(addr_of "$h") CPUs=$cpus Sockets=${sockets:-1} CoresPerSocket=${cores:-$cpus} ThreadsPerCore=${threads:-1} State=UNKNOWN" >>"$c"
  done
  echo "PartitionName=tpb Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$c"
}
in_host_sub() { (in_host "$@"); }   # in_host in a subshell: returns instead of replacing us
start_daemon() { # NAME LOG HOST CMD...: in_host HOST CMD in the background, PID saved as NAME
  local name=$1 log=$2 h=$3; shift 3
  (in_host "$h" "$@") >"$log" 2>&1 </dev/null &
  save_pid "$name" $!
}
slurm_dump_logs() {
  local f
  for f in "$STATE"/slurm/log/* "$STATE"/munge/munged.out; do
    [ -f "$f" ] || continue
    echo "----- $f (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
}
cmd_slurm_up() {
  need_root; need_up
  local h t0 idle n nodes
  saved_alive slurmctld && die "slurm already up (slurmctld pid $(cut -d' ' -f1 "$STATE/pids/slurmctld")): '$0 slurm down' first"
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    die "needs slurm-wlm and munge: source launch/deps.sh; tpb_install_deps \"\${TPB_MULTIHOST_PACKAGES[@]}\""
  t0=$EPOCHREALTIME
  rm -rf "$STATE/slurm" "$STATE/munge" "$STATE/munge-run"
  mkdir -p "$STATE/munge" "$STATE/munge-run" "$STATE/slurm/ctld" "$STATE/slurm/log"
  chmod 700 "$STATE/munge"; chmod 755 "$STATE" "$STATE/munge-run"   # munged checks both
  for h in $(hosts); do mkdir -p "$STATE/slurm/$h/spool" "$STATE/slurm/$h/tmp"; done
  head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
  chmod 400 "$STATE/munge/munge.key"
  trap 'slurm_up_failed' EXIT
  trap 'exit 130' INT TERM
  start_daemon munged "$STATE/munge/munged.out" h0 munged -F --key-file="$STATE/munge/munge.key" \
    --socket="$STATE/munge-run/munge.socket" --pid-file="$STATE/munge-run/munged.pid" \
    --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
  for _ in $(seq 100); do [ -S "$STATE/munge-run/munge.socket" ] && break; sleep 0.05; done
  [ -S "$STATE/munge-run/munge.socket" ] || { slurm_dump_logs; die "munged did not create its socket"; }
  slurm_write_conf
  export SLURM_CONF; SLURM_CONF=$(slurm_conf)
  start_daemon slurmctld "$STATE/slurm/log/slurmctld.out" h0 slurmctld -D -f "$SLURM_CONF"
  for h in $(hosts); do
    start_daemon "slurmd-$h" "$STATE/slurm/log/slurmd-$h.out" "$h" slurmd -D -N "$h" -f "$SLURM_CONF"
  done
  n=$(nhosts)
  for _ in $(seq 300); do
    nodes=$(in_host_sub h0 sinfo -h -N -o '%N %t' 2>/dev/null || true)
    idle=$(grep -c ' idle$' <<<"$nodes" || true)
    [ "$idle" -eq "$n" ] && break
    for d in munged slurmctld $(hosts | sed 's/^/slurmd-/'); do
      saved_alive "$d" || { slurm_dump_logs; die "slurm up: $d died"; }
    done
    sleep 0.1
  done
  if [ "$idle" -ne "$n" ]; then
    slurm_dump_logs
    die "slurm up: $idle of $n nodes idle after 30 s (sinfo: $(tr '\n' ';' <<<"$nodes"))"
  fi
  trap - EXIT INT TERM
  echo "slurm up in $("$PY" -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$EPOCHREALTIME") s: $n nodes idle; SLURM_CONF=$SLURM_CONF"
  in_host_sub h0 sinfo
}
slurm_up_failed() {
  local rc=$?
  [ $rc -eq 0 ] && return
  say "slurm up failed (exit $rc): stopping its daemons"
  cmd_slurm_down >&2 || true
  exit $rc
}
cmd_slurm_down() {
  need_root
  [ -d "$STATE" ] || { echo "slurm down: nothing up"; return 0; }
  local h pid jobs
  if saved_alive slurmctld; then
    SLURM_CONF=$(slurm_conf)
    export SLURM_CONF
    jobs=$(in_host_sub h0 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      in_host_sub h0 scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do [ -z "$(in_host_sub h0 squeue -h -o %A 2>/dev/null || true)" ] && break; sleep 0.1; done
    fi
  fi
  # shellcheck disable=SC2046  # host names are single words
  stop_saved $(hosts | sed 's/^/slurmd-/') slurmctld
  stop_saved munged
  # Step daemons outlive slurmd if a step was still running: they are in our namespaces.
  local left=()
  for h in $(hosts); do
    for pid in $(ip netns pids "$h" 2>/dev/null); do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] && left+=("$pid")
    done
  done
  stop_pids "${left[@]}"
  rm -rf "$STATE/slurm" "$STATE/munge" "$STATE/munge-run"
  echo "slurm down"
}

# srun [SRUN ARGS] -- CMD...: srun inside h0 with SLURM_CONF and TPB_LINKS_FILE (srun passes the
# environment on to the tasks).
cmd_srun() {
  need_root; need_up
  saved_alive slurmctld || die "slurm is not up: '$0 slurm up' first"
  local args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ "${1:-}" = -- ] && [ $# -ge 2 ] || die "usage: srun [SRUN ARGS] -- CMD..."
  shift
  export SLURM_CONF; SLURM_CONF=$(slurm_conf)
  export TPB_LINKS_FILE=$STATE/links.json OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  in_host h0 srun "${args[@]}" "$@"
}

cmd_slurm() {
  case ${1:-} in
    up) cmd_slurm_up ;;
    down) cmd_slurm_down ;;
    *) die "usage: slurm up|down" ;;
  esac
}

