#!/usr/bin/env python3
"""tpbench sweep against a memory budget, on 2 ranks: with --memory-budget set so that batch 16
does not fit, the 5-point batch sweep records batch 16 as status "oom" with need and have, marks
it as the memory-exhaustion point (in the point and in the top-level section), and keeps the
fitting points ok. An inject axis with mem_reserve on one rank shrinks the whole TP group's
budget (batch 8 no longer fits anywhere), and a dtype the backend lacks is a skipped point;
neither stops the sweep. Also exercises the range grammar (1..16:x2)."""
from tpbtest import Ctx

GIB = 1024 ** 3
# tiny, 2 layers, context 1024, TP=2: weights ~62 MiB per rank plus 4 MiB of KV cache per
# sequence, so batch 8 needs ~94 MiB and batch 16 ~125 MiB: a 115 MiB budget splits them.
BASE = ["sweep", "--model", "tiny", "--layers", "2", "--steps", "3", "--warmup", "1",
        "--memory-budget", "115M"]


def main():
    c = Ctx()
    out = c.out("oom")
    rc, stdout, _ = c.mpi(2, BASE + ["--batch", "1..16:x2", "--out", out], timeout=300)
    res = c.results(out)
    pts = res["points"]
    c.check([p["params"]["batch"] for p in pts] == [1, 2, 4, 8, 16], "1..16:x2 gives 5 points in order")
    c.check([p["status"] for p in pts] == ["ok"] * 4 + ["oom"], f"statuses {[p['status'] for p in pts]}")
    oom = pts[-1]
    mem = oom.get("memory", {})
    c.check(mem.get("need_bytes", 0) > mem.get("have_bytes", 1) > 0,
            f"oom point carries need > have: {mem}")
    c.check(abs(mem.get("have_bytes", 0) - 115 * 1024 ** 2) < 1, "have is the --memory-budget")
    c.check(oom.get("memory_exhaustion") is True, "the oom point is marked memory_exhaustion")
    c.check(all("memory_exhaustion" not in p for p in pts[:-1]), "no other point is marked")
    ex = res.get("memory_exhaustion") or {}
    c.check(ex.get("point_index") == 4 and ex.get("params", {}).get("batch") == 16,
            f"top-level memory_exhaustion names point 5 (batch 16): {ex.get('point_index')}")
    c.check("oom" in stdout and "memory exhaustion" in stdout, "summary table shows the oom point")
    c.check_contract(out, ranks=2)

    # The TP group is limited by its smallest budget: 0.03 GiB reserved on rank 1 only.
    out2 = c.out("reserve")
    rc, stdout, _ = c.mpi(2, BASE + ["--batch", "8", "--inject", "none;rank=1:mem_reserve=0.03",
                                     "--dtype", "fp32,bf16", "--out", out2], timeout=300)
    pts = c.results(out2)["points"]
    by = {(p["params"]["dtype"], tuple(p["params"]["inject"])): p for p in pts}
    c.check(len(pts) == 4, f"dtype x inject x batch = 4 points ({len(pts)})")
    clean = by.get(("fp32", ()), {})
    reserved = by.get(("fp32", ("rank=1:mem_reserve=0.03",)), {})
    c.check(clean.get("status") == "ok", "batch 8 fits the full budget")
    c.check(reserved.get("status") == "oom", "batch 8 is oom when one rank reserves 0.03 GiB")
    have = reserved.get("memory", {}).get("have_bytes", 0)
    c.check(abs(have - (115 * 1024 ** 2 - 0.03 * GIB)) < 1,
            f"have is the smallest rank's budget (budget - reserve): {have}")
    if reserved.get("status") == "ok":
        c.fail("mem_reserve on one rank did not shrink the group's budget")
    skipped = [p for p in pts if p["params"]["dtype"] == "bf16"]
    c.check(len(skipped) == 2 and all(p["status"] == "skipped" and "bf16" in p["reason"] for p in skipped),
            "bf16 on the cpu backend is a skipped point with a reason, and the sweep goes on")
    c.finish()


if __name__ == "__main__":
    main()
