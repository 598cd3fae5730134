"""Reproducibility: a recorded point reruns from its results (--from RESULTS --point K) with the
same params, and the context records what is needed to do so (argv, versions, git sha)."""
from tpbtest import Ctx

c = Ctx()
first = c.out("first")
c.mpi(2, ["run", "--model", "tiny", "--phase", "prefill", "--batch", "2", "--prompt", "64", "--layers", "2",
          "--steps", "3", "--seed", "77", "--out", first])
r = c.results(first)
ctx = r["context"]
c.check(all(k in ctx for k in ("argv", "versions", "hosts", "env", "ranks")), "context has argv, versions, hosts, env, ranks")
c.check("git_sha" in ctx["versions"], "git sha recorded")
again = c.out("again")
c.mpi(2, ["run", "--from", first, "--point", "0", "--out", again])
r2 = c.results(again)
p1, p2 = r["points"][0]["params"], r2["points"][0]["params"]
c.check(p1 == p2, f"rerun params equal the recorded ones: {p2}")
c.check(r2["config"]["seed"] == 77, "seed carried over")
rc, _, se = c.mpi(2, ["run", "--from", first, "--point", "5", "--out", c.out("bad")], expect_rc=2)
c.check("--point" in se, "an out-of-range --point is bad input naming --point")
c.finish()
