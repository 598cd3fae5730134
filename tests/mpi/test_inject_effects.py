#!/usr/bin/env python3
"""Injections other than slowdown, on 2 ranks, judged from the analysis:
- host_delay on rank 1 raises rank 1's host_gap_fraction (time with no device work) and not
  rank 0's: rank 0 spends that time waiting in the next collective, which counts as busy.
- mem_contend on rank 0 runs a bandwidth hog beside the point; the point completes and the
  results record the injection on rank 0 only.
- a comma-separated spec applies each entry to its own rank."""
from tpbtest import Ctx

POINT = ["run", "--model", "tiny", "--batch", "1", "--layers", "2", "--steps", "10", "--warmup", "2"]


def ranks(res):
    return {r["rank"]: r for r in res["points"][0]["ranks"]}


def main():
    c = Ctx()
    out = c.out("host_delay")
    # 20 ms of host time per step against steps of ~10-40 ms: a large, unmistakable gap.
    c.mpi(2, POINT + ["--inject", "rank=1:host_delay=20000", "--out", out])
    r = ranks(c.results(out))
    g0, g1 = r[0]["host_gap_fraction"], r[1]["host_gap_fraction"]
    print(f"host_gap_fraction: rank 0 {g0:.3f}, rank 1 {g1:.3f}")
    c.check(g1 > 0.15, f"host_delay raises rank 1's host gap ({g1:.3f} > 0.15)")
    c.check(g0 < 0.05, f"rank 0's host gap stays small ({g0:.3f} < 0.05): its wait is busy time")
    c.check(r[1]["inject"].get("host_delay_us") == 20000 and "host_delay_us" not in r[0]["inject"],
            "host_delay is recorded on rank 1 only")
    c.check_contract(out, ranks=2)

    out = c.out("mem_contend")
    c.mpi(2, POINT + ["--inject", "rank=0:mem_contend=1,rank=1:jitter=0.5@2000", "--out", out])
    res = c.results(out)
    r = ranks(res)
    c.check(res["points"][0]["status"] == "ok", "the point with a bandwidth hog completes")
    c.check(r[0]["inject"].get("mem_contend") is True and "mem_contend" not in r[1]["inject"],
            "mem_contend is recorded on rank 0 only")
    hog = r[0].get("mem_contend", {})
    c.check(hog.get("bytes_moved", 0) > 0 and hog.get("GBps", 0) > 0.1 and "mem_contend" not in r[1],
            f"rank 0's hog moved memory during the measured steps ({hog})")
    c.check(r[1]["inject"].get("jitter", {}).get("us") == 2000 and "jitter" not in r[0]["inject"],
            "the second entry (jitter) applies to rank 1 only")
    c.check(res["points"][0]["params"]["inject"] == ["rank=0:mem_contend=1,rank=1:jitter=0.5@2000"],
            "params.inject echoes the spec")
    c.check_contract(out, ranks=2)
    c.finish()


if __name__ == "__main__":
    main()
