"""A rank that hangs at step 3 ends the job within timeout + 5 s, the report names it, the
exit code is 3 (collective timeout), and the results written before it are kept, in both
--mpi-mode values: nonblocking (the polled wait throws, main() aborts) and blocking (the
default: the waiting ranks are stuck inside MPI_Allreduce, so only their watchdog threads can
end the job: without one this test would hang until its subprocess timeout).
A sweep whose second point hangs keeps its first point in results.json and points.jsonl."""
import json
import os
import time
from tpbtest import Ctx

TIMEOUT_S = 4
HANG = ["--model", "tiny", "--batch", "1", "--context", "128", "--layers", "2", "--steps", "10",
        "--collective-timeout", str(TIMEOUT_S)]

c = Ctx()
for mode in ("blocking", "nonblocking"):
    for np_ in (2, 4):
        where = f"{mode} np {np_}"
        out = c.out(f"hang_{mode}_np{np_}")
        t0 = time.time()
        rc, so, se = c.mpi(np_, ["run"] + HANG + ["--inject", "rank=1:hang_at_step=3",
                                                  "--mpi-mode", mode, "--out", out],
                           timeout=120, expect_rc=None)
        elapsed = time.time() - t0
        c.check(rc == 3, f"{where}: exit code {rc} == 3 (collective timeout)")
        c.check("never arrived: rank 1" in se and "step 3" in se, f"{where}: report names rank 1 and step 3")
        c.check(f"did not complete within {TIMEOUT_S} s" in se, f"{where}: report says the timeout")
        c.check(se.count("tpbench: error") == 1, f"{where}: one report line ({se.count('tpbench: error')})")
        # Start-up (probe, allocation, warm-up) takes a few seconds before step 3 is reached.
        c.check(elapsed < TIMEOUT_S + 5 + 15, f"{where}: ended in {elapsed:.1f} s")
        print(f"     {where}: hang test took {elapsed:.1f} s", flush=True)
        r = c.results(out)
        c.check(r["schema"] == "tpbench.results" and r["points"] == [], f"{where}: results.json intact")
        c.check(r["config"]["mpi_mode"] == mode, f"{where}: config records mpi_mode {mode}")

# Finished results are never lost: the clean first point stays when the second one hangs.
for mode in ("blocking", "nonblocking"):
    out = c.out(f"hang_sweep_{mode}")
    rc, so, se = c.mpi(2, ["sweep"] + HANG + ["--inject", "none;rank=1:hang_at_step=3",
                                              "--mpi-mode", mode, "--out", out],
                       timeout=120, expect_rc=None)
    c.check(rc == 3 and "never arrived: rank 1" in se, f"sweep {mode}: the second point hangs (rc {rc})")
    pts = c.results(out)["points"]
    c.check(len(pts) == 1 and pts[0]["status"] == "ok" and pts[0]["params"]["inject"] == [],
            f"sweep {mode}: results.json keeps the finished clean point")
    c.check(pts and pts[0]["params"].get("mpi_mode") == mode, f"sweep {mode}: params.mpi_mode {mode}")
    with open(os.path.join(out, "points.jsonl")) as f:
        lines = [json.loads(ln) for ln in f if ln.strip()]
    c.check(len(lines) == 1 and lines[0]["status"] == "ok", f"sweep {mode}: points.jsonl holds it too")
c.finish()
