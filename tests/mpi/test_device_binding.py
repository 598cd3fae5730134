"""context.ranks[].device_binding on CPU ranks (issue 54): every GPU field is null with a reason,
the CPU set is the rank's affinity, and the results pass check_results.py (whose "unique bus id
per host" rule skips null bus ids). The GPU side (real bus ids, NUMA nodes, NCCL transports on
an 8-GPU node) waits for a GPU; the rank -> GPU choice is unit-tested (test_device_pick.cc)."""
from tpbtest import Ctx

c = Ctx()
out = c.out("cpu")
c.mpi(2, ["run", "--model", "tiny", "--layers", "1", "--steps", "2", "--warmup", "0", "--context", "128",
          "--out", out], timeout=180)
ranks = c.results(out)["context"]["ranks"]
c.check(len(ranks) == 2, f"two ranks in context ({len(ranks)})")
for r in ranks:
    b = r.get("device_binding")
    if not isinstance(b, dict):
        c.fail(f"rank {r.get('rank')}: no device_binding ({r})")
        continue
    nulls = [f for f in ("device_index", "pci_bus_id", "numa_node", "nccl_transports") if b.get(f, 0) is not None]
    c.check(not nulls, f"rank {r['rank']}: GPU fields null on the cpu backend (not null: {nulls})")
    reasons = b.get("reasons", [])
    c.check(all(any(x.startswith(f + ": ") for x in reasons)
                for f in ("device_index", "pci_bus_id", "numa_node", "nccl_transports")),
            f"rank {r['rank']}: a reason for each null field ({reasons})")
    c.check("device_index: --backend cpu: no GPU" in reasons, f"rank {r['rank']}: says why ({reasons})")
    c.check(b.get("cpu_set") and b["cpu_set"] == r["placement"]["cpus_allowed"],
            f"rank {r['rank']}: cpu_set is the affinity ({b.get('cpu_set')} vs {r['placement']})")
    c.check(b.get("shared") is False and b.get("before_mpi_init") is False,
            f"rank {r['rank']}: no GPU shared or picked ({b})")
c.check_contract(out, ranks=2)
c.finish()
