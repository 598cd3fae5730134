"""A rank that hangs at step 3 ends the job within timeout + 5 s, the report names it, the
exit code is 3 (collective timeout), and the results written before it are kept."""
import time
from tpbtest import Ctx

c = Ctx()
for np_ in (2, 4):
    out = c.out(f"hang_np{np_}")
    t0 = time.time()
    rc, so, se = c.mpi(np_, ["run", "--model", "tiny", "--batch", "1", "--context", "128", "--layers", "2",
                             "--steps", "10", "--inject", "rank=1:hang_at_step=3",
                             "--collective-timeout", "4", "--out", out], timeout=120, expect_rc=None)
    elapsed = time.time() - t0
    c.check(rc == 3, f"np {np_}: exit code {rc} == 3 (collective timeout)")
    c.check("never arrived: rank 1" in se and "step 3" in se, f"np {np_}: report names rank 1 and step 3")
    c.check(se.count("tpbench: error") == 1, f"np {np_}: one report line ({se.count('tpbench: error')})")
    # Start-up (probe, allocation, warm-up) takes a few seconds before step 3 is reached.
    c.check(elapsed < 4 + 5 + 15, f"np {np_}: ended in {elapsed:.1f} s")
    r = c.results(out)
    c.check(r["schema"] == "tpbench.results" and r["points"] == [], f"np {np_}: results.json intact")
c.finish()
