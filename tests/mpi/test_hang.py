"""A rank that hangs at step 3 ends the job within timeout + 5 s, the report names it, the
exit code is 3 (collective timeout), and the results written before it are kept, in both
--mpi-mode values: nonblocking (the polled wait throws, main() aborts) and blocking (the
default: the waiting ranks are stuck inside MPI_Allreduce, so only their watchdogs' timer
signals can end the job: without them this test would hang until its subprocess timeout).
A sweep whose second point hangs keeps its first point in results.json and points.jsonl.
On virtual ranks (--backend model, one process, no mpirun) the same inject ends the job the
same way: exit 3, one line worded as the board's report (rank, step, the timeout), the finished
points kept, in run, sweep and serve, and within a second (the wait is modelled, not slept); a
TP group of one has no peer inside it, so the world's clock sync after the steps names it."""
import json
import os
import subprocess
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

MODEL = ["--backend", "model", "--model", "tiny", "--dtype", "bf16", "--hardware", "h100-sxm",
         "--collective-timeout", str(TIMEOUT_S)]


def model(args):
    t0 = time.time()
    p = subprocess.run([c.tpbench] + args, capture_output=True, text=True, env=c.env, timeout=60)
    return p.returncode, p.stderr, time.time() - t0


def model_hang_checks(where, rc, se, elapsed, waited_in):
    c.check(rc == 3, f"{where}: exit code {rc} == 3 (collective timeout)")
    c.check(se.count("tpbench: error") == 1, f"{where}: one report line:\n{se}")
    c.check("never arrived: rank 1 (" in se and "stopped at step 3" in se,
            f"{where}: the report names rank 1 and step 3:\n{se}")
    c.check(waited_in in se, f"{where}: the report says where its peer waited ({waited_in})")
    c.check("nothing was waited" in se, f"{where}: the report says the wait is modelled")
    c.check(elapsed < 10, f"{where}: ended in {elapsed:.1f} s (nothing is slept)")


out = c.out("hang_model_run")
rc, se, el = model(["run", *MODEL, "--world", "4", "--tp", "2", "--batch", "4", "--steps", "10",
                    "--inject", "rank=1:hang_at_step=3", "--out", out])
model_hang_checks("model run tp 2", rc, se, el, "rank 0 waited in allreduce_attn of layer 0 at step 3")
c.check(f"did not complete within {TIMEOUT_S} s" in se, "model run: the report says the timeout")
c.check("last left allreduce_mlp of layer 7 at step 2" in se,
        f"model run: rank 1 was last seen leaving step 2's last all-reduce:\n{se}")
r = c.results(out)
c.check(r["schema"] == "tpbench.results" and r["points"] == [], "model run: results.json intact")

out = c.out("hang_model_sweep")
rc, se, el = model(["sweep", *MODEL, "--world", "2", "--tp", "2", "--batch", "4", "--steps", "10",
                    "--inject", "none;rank=1:hang_at_step=3", "--out", out])
model_hang_checks("model sweep", rc, se, el, "rank 0 waited in allreduce_attn of layer 0 at step 3")
pts = c.results(out)["points"]
c.check(len(pts) == 1 and pts[0]["status"] == "ok" and pts[0]["params"]["inject"] == [],
        "model sweep: results.json keeps the finished clean point")

rc, se, el = model(["run", *MODEL, "--world", "2", "--tp", "1", "--batch", "4", "--steps", "10",
                    "--inject", "rank=1:hang_at_step=3", "--out", c.out("hang_model_tp1")])
model_hang_checks("model run tp 1", rc, se, el, "rank 0 waited after its last step (9)")
c.check("the clock sync after the steps did not complete" in se,
        f"model run tp 1: a group of one is noticed at the world's clock sync:\n{se}")

out = c.out("hang_model_serve")
rc, se, el = model(["serve", *MODEL, "--world", "2", "--tp", "2", "--concurrency", "2,4",
                    "--requests", "8", "--prompt-len", "32", "--output-len", "16",
                    "--inject", "rank=1:hang_at_step=3", "--out", out])
model_hang_checks("model serve", rc, se, el, "rank 0 waited in allreduce_attn of layer 0 at step 3")
c.check(c.results(out)["points"] == [], "model serve: results.json intact")
c.finish()
