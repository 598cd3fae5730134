#!/usr/bin/env python3
"""run --check at TP 2 against a memory budget that holds the shards but not --check's unsharded
reference on group rank 0 (the tp = 1 model's weights, KV cache and activations): the point ends
status "oom" with a reason that names the reference, every rank exits 0, and the job ends well
within the collective timeout. Before the plan counted the reference whole, it counted only the
tp = 1 weights: the point started, group rank 0's allocation of the reference failed, and the job
died (rank 0 aborted while its peer waited in the clock sync). The same budget without --check
runs ok, so the shards do fit. serve --check's reference models are planned too."""
import time

from tpbtest import Ctx

# tiny, 2 layers, decode batch 8 at context 2048, fp32, TP 2. Per rank: weights 2 x 62.9 MB / 2
# = 62.9 MB, KV cache 2 x 8 x 2049 x 2 x 4 x 64 x 4 B = 67.1 MB, activations < 1 MB: ~131 MB.
# --check's reference on group rank 0 adds the tp = 1 model: 125.8 + 134.3 + ~1 MB = ~261 MB,
# of which the old plan counted the weights alone (~257 MB on rank 0 in all). A 300 MiB budget
# (315 MB) holds the shards and the old plan, not the reference's ~392 MB.
BASE = ["run", "--backend", "cpu", "--tp", "2", "--model", "tiny", "--layers", "2",
        "--batch", "8", "--context", "2048", "--steps", "2", "--warmup", "1",
        "--memory-budget", "300M", "--collective-timeout", "30"]


def main():
    c = Ctx()
    out = c.out("check")
    t0 = time.monotonic()
    rc, stdout, stderr = c.mpi(2, BASE + ["--check", "--out", out], timeout=120)
    wall = time.monotonic() - t0
    c.check(rc == 0, f"every rank exits 0 (rc {rc}): {stderr[-500:]}")
    c.check(wall < 30, f"the job ends within the collective timeout (30 s): {wall:.1f} s")
    pts = c.results(out)["points"]
    c.check(len(pts) == 1, f"one point ({len(pts)})")
    p = pts[0]
    c.check(p["status"] == "oom", f"status oom ({p['status']}: {p.get('reason', '')})")
    reason = p.get("reason", "")
    c.check("--check" in reason and "reference" in reason and "group rank 0" in reason,
            f"the reason says the --check reference did not fit: {reason}")
    mem = p.get("memory", {})
    c.check(mem.get("need_bytes", 0) > mem.get("have_bytes", 1) > 0, f"need > have: {mem}")
    c.check(abs(mem.get("have_bytes", 0) - 300 * 1024 ** 2) < 1, f"have is the budget: {mem}")
    c.check("oom" in stdout, "the summary shows the oom point")
    c.check_contract(out, ranks=2)

    plain = c.out("plain")
    c.mpi(2, BASE + ["--out", plain], timeout=120)
    st = c.results(plain)["points"][0]["status"]
    c.check(st == "ok", f"without --check the shards fit the same budget ({st})")

    # serve --check likewise: its two small models side by side on group rank 0 (the tp = 1 one
    # with the whole LM head, 125 MiB at tiny's vocabulary) were not in serve's plan at all.
    sv = c.out("serve")
    rc, _, stderr = c.mpi(2, ["serve", "--model", "tiny", "--layers", "2", "--requests", "4",
                              "--concurrency", "2", "--prompt-len", "32", "--output-len", "8",
                              "--chunk", "64", "--memory-budget", "150M", "--check",
                              "--collective-timeout", "30", "--out", sv], timeout=120)
    p = c.results(sv)["points"][0]
    c.check(p["status"] == "oom" and "--check" in p.get("reason", "")
            and "fits without --check" in p.get("reason", ""),
            f"serve --check: oom naming the reference ({p['status']}: {p.get('reason', '')})")
    c.finish()


if __name__ == "__main__":
    main()
