#!/usr/bin/env python3
"""Binds one rank to cores of its GPU's NUMA node, then execs the program (mpirun_node.sh and
srun_node.sh start every rank through it); --plan prints every local rank's binding instead.

  bind_rank.py [--sysfs ROOT] -- PROGRAM [ARGS...]     # as the rank: bind, then exec
  bind_rank.py [--sysfs ROOT] --plan N                 # N ranks on this host: one line each

Rank i opens GPU i % (visible GPUs), counted in PCI bus order: the launchers export
CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA counts them the same way, and tpbench picks GPU
local_rank % visible (harness/mpi/device_pick.h). The ranks whose GPUs sit on one NUMA node
split that node's CPUs in equal contiguous slices; each slice keeps at least 2 CPUs where it
can, so NCCL's proxy thread, CUPTI's buffer thread and the NVML sampler do not take the rank's
only core. Without a GPU (or a GPU's NUMA node) the host's online CPUs are split instead."""
import os
import re
import sys


def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11], as sysfs writes CPU lists."""
    cpus = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def gpus(sysfs):
    """NVIDIA display/3D controllers (class 0x0300xx, 0x0302xx; not NVSwitch bridges) as
    (bus id, NUMA node), in bus order."""
    base = os.path.join(sysfs, "bus", "pci", "devices")
    found = []
    for bus in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        dev = os.path.join(base, bus)
        cls = read(os.path.join(dev, "class"), "")
        if read(os.path.join(dev, "vendor")) == "0x10de" and cls[:6] in ("0x0300", "0x0302"):
            found.append((bus, int(read(os.path.join(dev, "numa_node"), "-1"))))
    return found


def visible_gpus(all_gpus, cvd):
    """The GPUs CUDA_VISIBLE_DEVICES leaves, in its order; None when it names GPUs by UUID or
    MIG instance, which sysfs cannot map."""
    if cvd is None:
        return all_gpus
    picked = []
    for item in (x.strip() for x in cvd.split(",")):
        if not re.fullmatch(r"\d+", item):
            return None
        if int(item) >= len(all_gpus):
            break  # CUDA stops at the first invalid index
        picked.append(all_gpus[int(item)])
    return picked


def node_cpus(sysfs, node):
    """The CPUs of NUMA node `node`, None when sysfs does not say (or node is -1)."""
    text = read(os.path.join(sysfs, "devices", "system", "node", f"node{node}", "cpulist"))
    return parse_cpulist(text) if node >= 0 and text else None


def plan(sysfs, ranks, cvd=None):
    """One entry per local rank: (gpu bus id or None, NUMA node, [cpus], note)."""
    online = parse_cpulist(read(os.path.join(sysfs, "devices", "system", "cpu", "online"),
                                f"0-{(os.cpu_count() or 1) - 1}"))
    vis = visible_gpus(gpus(sysfs), cvd)
    note = "" if vis else ("CUDA_VISIBLE_DEVICES names GPUs sysfs cannot map" if vis is None
                           else "no GPU in sysfs")
    gpu_of = [vis[i % len(vis)] if vis else (None, -1) for i in range(ranks)]
    pools = [node_cpus(sysfs, node) for _, node in gpu_of]
    keys = [node if pool else -1 for (_, node), pool in zip(gpu_of, pools)]  # -1: the host
    out = []
    for i, (bus, node) in enumerate(gpu_of):
        cpus = pools[i] or online
        group = [j for j in range(ranks) if keys[j] == keys[i]]
        share = max(1, len(cpus) // len(group))
        k = group.index(i)
        mine = cpus[k * share:(k + 1) * share] or [cpus[k % len(cpus)]]
        why = note or ("" if pools[i] else "the GPU's NUMA node is unknown: the host's CPUs are split")
        if len(mine) < 2:
            why = (why + "; " if why else "") + "1 CPU for the rank: NCCL's proxy thread shares it"
        out.append((bus, node, mine, why))
    return out


def local_rank_and_size(env):
    """The launcher's local rank and ranks on this host (the same variables, in the same order,
    as harness/mpi/device_pick.cc)."""
    for rank, size in (("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                       ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
                       ("SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE")):
        if rank in env and re.fullmatch(r"\d+", env[rank]):
            m = re.match(r"\d+", env.get(size, ""))
            return int(env[rank]), int(m.group(0)) if m else int(env[rank]) + 1
    return None, None


def main(argv):
    sysfs = "/sys"
    if argv[:1] == ["--sysfs"]:
        sysfs, argv = argv[1], argv[2:]
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if argv[:1] == ["--plan"] and len(argv) == 2 and argv[1].isdigit() and int(argv[1]) > 0:
        for i, (bus, node, cpus, why) in enumerate(plan(sysfs, int(argv[1]), cvd)):
            print(f"rank {i} gpu {bus or '-'} numa {node} cpus {','.join(map(str, cpus))}"
                  + (f" ({why})" if why else ""))
        return 0
    if argv[:1] != ["--"] or len(argv) < 2:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    rank, size = local_rank_and_size(os.environ)
    if rank is not None:
        bus, _, cpus, why = plan(sysfs, max(size, rank + 1), cvd)[rank]
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as e:  # a cgroup that forbids those CPUs: run unbound, and say so
            print(f"bind_rank.py: local rank {rank}: cannot bind to {cpus}: {e}", file=sys.stderr)
        if why and bus and rank == 0:  # CPU-only hosts (tests, fake hosts) stay quiet
            print(f"bind_rank.py: {why}", file=sys.stderr)
    os.execvp(argv[1], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
