"""Foundation acceptance on real ranks: TP-sharded output equals the unsharded reference for
tp = 1, 2, 4; every contract field is present and self-consistent; B=1 decode shows the
article's picture; np 4 with --tp 2 gives two reported TP groups."""
import json
import os

from tpbtest import Ctx

c = Ctx()

# TP correctness at tp = 1, 2, 4 (np 4 is oversubscribed on 2 cores: function only).
for np_, extra in ((1, []), (2, []), (4, [])):
    out = c.out(f"check_np{np_}")
    c.mpi(np_, ["run", "--model", "tiny", "--phase", "decode", "--batch", "2", "--context", "256",
                "--steps", "3", "--warmup", "1", "--check", "--out", out] + extra)
    p = c.results(out)["points"][0]
    v = p.get("verification", {})
    c.check(v.get("passed") is True and v["max_abs_err"] <= v["tolerance"],
            f"tp={np_} decode matches the host fp64 reference: err {v.get('max_abs_err')} tol {v.get('tolerance')}")
    # An independent reference: fp32 against fp64 leaves a small error, never exactly 0 (which
    # is what comparing the step with itself gave at tp 1).
    c.check(v.get("reference", "").startswith("host fp64 layer stack") and v["max_abs_err"] > 0,
            f"tp={np_}: against the host fp64 layer stack with a nonzero error ({v.get('reference')}, {v.get('max_abs_err')})")
    sv = v.get("sharded_vs_unsharded")
    c.check((sv is None) == (np_ == 1) and (sv is None or sv["passed"] is True),
            f"tp={np_}: the sharded-vs-unsharded comparison is there exactly when tp > 1 and passes ({sv})")
    c.check(p["params"]["tp"] == np_, f"tp defaults to the world size ({np_})")

# Prefill correctness (causal attention, cache writes) at tp = 2.
out = c.out("check_prefill")
c.mpi(2, ["run", "--model", "tiny", "--phase", "prefill", "--batch", "1", "--prompt", "96", "--layers", "2",
          "--steps", "2", "--warmup", "1", "--check", "--out", out])
v = c.results(out)["points"][0]["verification"]
c.check(v["passed"] and v["sharded_vs_unsharded"]["passed"],
        f"tp=2 prefill matches the host reference and the unsharded step: {v}")

# run --lm-head: the step ends with the final norm, the vocab-parallel LM head and greedy
# sampling, as a serving step does; --check also compares the sampled tokens, and the ops table
# prices the step's end from the cost model (tiny: h 1024, vocab 32000, so V/tp = 16000).
out = c.out("check_lm_head")
c.mpi(2, ["run", "--model", "tiny", "--phase", "decode", "--batch", "3", "--context", "64",
          "--layers", "2", "--steps", "3", "--warmup", "1", "--check", "--lm-head", "true",
          "--out", out])
p = c.results(out)["points"][0]
v = p["verification"]
c.check(v["passed"] and v.get("tokens_match") is True
        and v["sharded_vs_unsharded"].get("tokens_match") is True and "tokens_near_tie" in v,
        f"--lm-head: TP output and sampled tokens match the reference ({v})")
ops = {o["op"]: o for o in p["ops"]}
c.check(all(k in ops for k in ("final_norm", "lm_head", "sample", "sample_gather")),
        f"--lm-head: the step's end is timed ({sorted(ops)})")
c.check(ops.get("lm_head", {}).get("flops_per_step") == 2.0 * 3 * 1024 * 16000,
        f"--lm-head: lm_head FLOPs per step 2*S*h*V/tp ({ops.get('lm_head', {}).get('flops_per_step')})")
c.check(p["params"].get("lm_head") is True, "--lm-head is recorded in the point's params")

# A corrupted shard must be caught (tests/unit/test_stack_reference.cc corrupts one); here the
# tolerance must stay far below the output's own scale: fp32, 2 layers of tiny, 3.1e-5 of it.
c.check(v["tolerance"] < 1e-3 * v["max_abs_ref"], f"verification tolerance is tight ({v['tolerance']})")

# The acceptance command: B=1 decode, 2 ranks, the article's picture.
out = c.out("decode_b1")
c.mpi(2, ["run", "--backend", "cpu", "--model", "tiny", "--phase", "decode", "--batch", "1",
          "--context", "1024", "--steps", "15", "--check", "--out", out])
c.check_contract(out, ranks=2)
r = c.results(out)
p = r["points"][0]
m = p["metrics"]
for rk in p["ranks"]:
    c.check(rk["busy_fraction"] >= 0.9, f"rank {rk['rank']} busy_fraction {rk['busy_fraction']:.3f} >= 0.9")
ridge = m["peaks"]["flops"] / m["peaks"]["bw"]
c.check(abs(m["mfu_ceiling"] - min(1.0, m["intensity"] / ridge)) < 1e-9,
        f"mfu_ceiling {m['mfu_ceiling']:.5f} = min(1, intensity/ridge)")
c.check(m["mfu"] < 0.5 * max(m["mbu"], 1e-9) + m["mfu_ceiling"],
        f"B=1: MFU {m['mfu']:.4f} is small and bounded by its ceiling's order, MBU {m['mbu']:.3f} is the number")
c.check(m["mfu"] <= 1.5 * m["mfu_ceiling"], f"MFU {m['mfu']:.4f} within its ceiling {m['mfu_ceiling']:.4f}")
c.check(p["collectives"]["count"] == 15 * 8 * 2, f"2 all-reduces per layer per step ({p['collectives']['count']})")
c.check(len(p["samples"]["step_time_s"]) == 15, "raw per-step samples kept, warm-up excluded")
c.check(r["context"]["llc_bytes"] > 0 and "ranks_per_core" in r["context"], "context records LLC and ranks_per_core")
with open(out + "/points.jsonl") as f:
    c.check(len(f.read().strip().splitlines()) == 1, "points.jsonl streamed one line")
for rk in p["ranks"]:
    ht = rk["host_thread"]
    c.check(0 < ht["cpu_s"] <= ht["wall_s"] * 1.01 and 0 <= ht["descheduled_fraction"] <= 1
            and ht["involuntary_switches"] >= 0,
            f"rank {rk['rank']}: host_thread is a CPU share of the measured wall ({ht})")

# trace.json (Chrome/Perfetto): all 15 steps fit the default 20, so each rank's collective
# events must add up to the wait and transfer the analysis reported for that rank.
c.check(p.get("trace") == "trace.json", "the point names its trace")
with open(out + "/trace.json") as f:
    tr = json.load(f)
ev = [e for e in tr["traceEvents"] if e["ph"] == "X"]
c.check(tr["metadata"]["steps_written"] == 15, f"trace holds the 15 measured steps ({tr['metadata']['steps_written']})")
for rk in p["ranks"]:
    coll = [e for e in ev if e["pid"] == rk["rank"] and e["tid"] == 2]
    comp = [e for e in ev if e["pid"] == rk["rank"] and e["tid"] == 1]
    w = sum(e["args"]["wait_us"] for e in coll) * 1e-6
    t = sum(e["args"]["transfer_us"] for e in coll) * 1e-6
    cs = sum(e["dur"] for e in comp) * 1e-6
    c.check(len(coll) == 15 * 8 * 2 and abs(w - rk["wait_s"]) <= 1e-6 + 1e-6 * rk["wait_s"]
            and abs(t - rk["transfer_s"]) <= 1e-6 + 1e-6 * rk["transfer_s"]
            and abs(cs - rk["compute_s"]) <= 1e-6 + 1e-6 * rk["compute_s"],
            f"rank {rk['rank']}: trace sums = results (wait {w:.6f}/{rk['wait_s']:.6f}, "
            f"transfer {t:.6f}/{rk['transfer_s']:.6f}, compute {cs:.6f}/{rk['compute_s']:.6f})")

# np 4 with --tp 2: two TP groups, both reported.
out = c.out("two_groups")
c.mpi(4, ["run", "--model", "tiny", "--batch", "1", "--context", "256", "--layers", "4", "--tp", "2",
          "--steps", "5", "--check", "--out", out])
c.check_contract(out, ranks=4)
p = c.results(out)["points"][0]
groups = sorted({rk["group"] for rk in p["ranks"]})
c.check(groups == [0, 1], f"two TP groups reported: {groups}")
c.check(sorted(rk["group_rank"] for rk in p["ranks"]) == [0, 0, 1, 1], "group ranks 0,1 in each group")
c.check(p["verification"]["passed"], "both groups verified")
# Four busy ranks on fewer than four cores: the threads are off their cores about half the
# time on average, and the results must say so (measured, beside the configured
# ranks_per_core). The mean, not each rank: the scheduler may favour one rank for a whole
# point (seen in CI: 0.64, 0.65, 0.09, 0.57), but the time off the cores adds up the same.
if len(os.sched_getaffinity(0)) < 4:
    off = [rk["host_thread"]["descheduled_fraction"] for rk in p["ranks"]]
    cores = len(os.sched_getaffinity(0))
    c.check(sum(off) / len(off) > 0.3,
            f"np 4 on {cores} cores: the ranks are off their cores > 30% on average ({off})")
    c.check(any(w.startswith("time_sliced:") for w in p["warnings"]), f"time_sliced warning: {p['warnings']}")
c.finish()
