#!/usr/bin/env python3
"""The launch scripts against a fake topology and fake launchers (issue 54, defect 12): each
rank bound to a slice of its GPU's NUMA node with room for NCCL's proxy thread (not rank i ->
core i on one socket), NCCL_*/UCX_* forwarded to every host by mpirun -x, and srun without
--gpus-per-task's one-GPU cgroups. Runs in a second or so; no MPI, no Slurm, no GPU."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAUNCH = os.path.join(ROOT, "launch")
sys.path.insert(0, LAUNCH)
import bind_rank  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def fake_sysfs(root, nodes, gpus_per_node, cpus_per_node):
    """`nodes` NUMA nodes of `cpus_per_node` CPUs each, `gpus_per_node` NVIDIA GPUs on each,
    and an NVSwitch bridge (class 0x0680) that is not a GPU."""
    total = nodes * cpus_per_node
    write(f"{root}/devices/system/cpu/online", f"0-{total - 1}")
    for n in range(nodes):
        write(f"{root}/devices/system/node/node{n}/cpulist",
              f"{n * cpus_per_node}-{(n + 1) * cpus_per_node - 1}")
        for g in range(gpus_per_node):
            dev = f"{root}/bus/pci/devices/0000:{0x18 + 0x10 * (n * gpus_per_node + g):02x}:00.0"
            write(f"{dev}/vendor", "0x10de")
            write(f"{dev}/class", "0x030200")
            write(f"{dev}/numa_node", str(n))
    write(f"{root}/bus/pci/devices/0000:05:00.0/vendor", "0x10de")
    write(f"{root}/bus/pci/devices/0000:05:00.0/class", "0x068000")


def fake_launcher(bindir, name):
    """A `name` on PATH that records its argv as one JSON line and exits 0."""
    path = os.path.join(bindir, name)
    write(path, "#!/usr/bin/env python3\nimport json, os, sys\n"
                "open(os.environ['TPB_FAKE_LOG'], 'a').write(json.dumps(sys.argv[1:]) + '\\n')")
    os.chmod(path, 0o755)


class Binding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sysfs = os.path.join(self.tmp.name, "sys")

    def tearDown(self):
        self.tmp.cleanup()

    def test_eight_gpus_on_two_sockets(self):
        fake_sysfs(self.sysfs, nodes=2, gpus_per_node=4, cpus_per_node=16)
        plan = bind_rank.plan(self.sysfs, 8)
        seen = set()
        for i, (bus, node, cpus, why) in enumerate(plan):
            self.assertEqual(node, i // 4, f"rank {i} on GPU {bus}")
            self.assertTrue(set(cpus) <= set(range(16 * node, 16 * node + 16)), f"rank {i}: {cpus}")
            self.assertGreaterEqual(len(cpus), 2, f"rank {i}: no room for NCCL's proxy thread")
            self.assertFalse(seen & set(cpus), f"rank {i} overlaps another rank: {cpus}")
            self.assertEqual(why, "")
            seen |= set(cpus)
        self.assertEqual(plan[4][2], [16, 17, 18, 19])  # the second socket's GPUs, its cores

    def test_inherited_visible_devices_share_one_node(self):
        fake_sysfs(self.sysfs, nodes=2, gpus_per_node=2, cpus_per_node=8)
        plan = bind_rank.plan(self.sysfs, 2, cvd="2")  # GPU 2 hangs off node 1
        self.assertEqual([p[0] for p in plan], ["0000:38:00.0"] * 2)
        self.assertEqual([p[2] for p in plan], [[8, 9, 10, 11], [12, 13, 14, 15]])
        self.assertIsNone(bind_rank.visible_gpus(bind_rank.gpus(self.sysfs), "GPU-1234"))

    def test_no_gpu_splits_the_host(self):
        write(f"{self.sysfs}/devices/system/cpu/online", "0-3")
        plan = bind_rank.plan(self.sysfs, 2)
        self.assertEqual([p[2] for p in plan], [[0, 1], [2, 3]])
        self.assertIn("no GPU in sysfs", plan[0][3])

    def test_rank_binds_itself_then_execs(self):
        allowed = sorted(os.sched_getaffinity(0))
        write(f"{self.sysfs}/devices/system/cpu/online", ",".join(map(str, allowed)))
        write(f"{self.sysfs}/devices/system/node/node0/cpulist", str(allowed[-1]))
        dev = f"{self.sysfs}/bus/pci/devices/0000:18:00.0"
        write(f"{dev}/vendor", "0x10de")
        write(f"{dev}/class", "0x030200")
        write(f"{dev}/numa_node", "0")
        env = dict(os.environ, OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
        env.pop("CUDA_VISIBLE_DEVICES", None)
        p = subprocess.run([sys.executable, os.path.join(LAUNCH, "bind_rank.py"), "--sysfs", self.sysfs,
                            "--", sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                           capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), str([allowed[-1]]))


class Launchers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        self.log = os.path.join(self.tmp.name, "argv.jsonl")
        for name in ("mpirun", "srun"):
            fake_launcher(self.bin, name)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("NCCL_", "UCX_", "SLURM_", "OMPI_", "CUDA_"))}
        self.env.update(PATH=self.bin + os.pathsep + os.environ["PATH"], TPB_FAKE_LOG=self.log,
                        NCCL_SOCKET_IFNAME="eth0", NCCL_IB_HCA="mlx5_0,mlx5_1", UCX_TLS="rc,sm")

    def tearDown(self):
        self.tmp.cleanup()

    def launched(self, cmd, **env):
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(self.env, **env), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.log) as f:
            return json.loads(f.readlines()[-1])

    def assert_forwarded(self, argv, names):
        pairs = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-x"}
        for n in names:
            self.assertIn(n, pairs, f"-x {n} missing from {argv}")

    def test_mpirun_node_forwards_and_binds_by_numa(self):
        argv = self.launched([os.path.join(LAUNCH, "mpirun_node.sh"), "run", "--backend", "cuda"])
        self.assert_forwarded(argv, ["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "UCX_TLS", "CUDA_DEVICE_ORDER"])
        self.assertEqual(argv[argv.index("--bind-to") + 1], "none", argv)
        self.assertIn(os.path.join(LAUNCH, "bind_rank.py"), argv)
        self.assertEqual(argv[-3:], ["run", "--backend", "cuda"])

    def test_mpirun_topology_forwards(self):
        argv = self.launched([os.path.join(LAUNCH, "mpirun_topology.sh"), "default", "2", "--", "prog"])
        self.assert_forwarded(argv, ["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "UCX_TLS"])

    def test_srun_sees_every_gpu_of_its_node(self):
        script = os.path.join(LAUNCH, "srun_node.sh")
        argv = self.launched([script, "run"], SLURM_GPUS_ON_NODE="8")
        self.assertFalse([a for a in argv if a.startswith("--gpus-per-task")], argv)
        self.assertIn("--gpu-bind=none", argv)
        self.assertIn("--cpu-bind=none", argv)
        self.assertIn(os.path.join(LAUNCH, "bind_rank.py"), argv)
        with open(script) as f:
            self.assertFalse([l for l in f if l.startswith("#SBATCH --gpus-per-task")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
