#!/usr/bin/env bash
# The multi-host stage of tests/run.sh: hosts made of network namespaces on this machine
# (launch/netns_hosts.sh), then the launcher's own test (hosts, shaping, link faults, Slurm's
# srun) and tpbench's behaviour across hosts (test_multihost.py). Needs root with
# CAP_NET_ADMIN; where that is missing the stage says so and fails, unless TPB_SKIP_NETNS=1 is
# set by hand (a skipped stage is not a passed one).
set -euo pipefail
cd "$(dirname "$0")/../.."
TPBENCH=${TPBENCH:-build/tpbench}
probe=tpb-probe-$$
if [[ $(id -u) -ne 0 ]] || ! ip netns add "$probe" 2>/dev/null; then
  msg="multi-host stage: needs root with CAP_NET_ADMIN to make network namespaces"
  if [[ ${TPB_SKIP_NETNS:-0} == 1 ]]; then
    echo "$msg; skipped because TPB_SKIP_NETNS=1 was set by hand"
    exit 0
  fi
  echo "$msg; failing (set TPB_SKIP_NETNS=1 by hand to skip it)" >&2
  exit 1
fi
ip netns del "$probe"
source launch/deps.sh
tpb_install_deps "${TPB_MULTIHOST_PACKAGES[@]}"
work=${TPB_MULTIHOST_WORK:-$(mktemp -d /tmp/tpb-multihost.XXXXXX)}
# The interface of the default route is the one that must send nothing during the tests.
main_if=$(awk '$2 == "00000000" { print $1; exit }' /proc/net/route)
export TPB_MAIN_IF=${TPB_MAIN_IF:-${main_if:-eth0}}
echo "multi-host stage: watching $TPB_MAIN_IF (the default route's interface) for traffic out"
# The install above talks to the package mirror; its connections' last packets can leave a
# second later and would count against the tests. Start once the counter has held for 2 s.
tx=/sys/class/net/$TPB_MAIN_IF/statistics/tx_packets
if [[ -r $tx ]]; then
  for _ in $(seq 20); do
    a=$(cat "$tx")
    sleep 2
    [[ $(cat "$tx") == "$a" ]] && break
  done
fi
TPBENCH=$TPBENCH tests/multihost/test_launcher.sh
python3 tests/multihost/test_multihost.py --tpbench "$TPBENCH" --work "$work"
echo "multi-host figures: $work/figures.json"
