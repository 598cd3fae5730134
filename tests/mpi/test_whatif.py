#!/usr/bin/env python3
"""tpbench whatif on real np-2 CPU runs (issue 35), cheap enough for CI: the JSON's shape, the
replay giving back the measured steps, no_straggler buying something on a run with a 2x
straggler and little on a run without one, no_host_gap removing injected host work (how near
the real run without the fault a CPU replay lands is for tests/whatif/check_whatif.py: one
pair on a shared machine says nothing); the same two on the model backend (seeded noise, so
the fault is the only difference) within 1% of the real run without the fault; nulls with
reasons, and bad input as one line, exit 2. Serve points: on the model backend, an unchunked run
replayed at --chunk 512, a half-cache run replayed at the full cache, a run of 16 in flight at
--max-batch 6 replayed at 12 (its TTFT p95 too) and an NVLink run replayed on PCIe 5 (--topology
pcie5), each within 5% of the real run made that way; on a CPU serve under mpirun -np 2, the shape and the rebuilt run giving
back the measured figures."""
import json
import os
import subprocess

from tpbtest import Ctx

NAMES = {"no_straggler", "no_host_gap", "no_jitter", "chunked_prefill", "kv_budget", "max_batch",
         "topology", "fewer_kernels"}
FIELDS = ["name", "point", "tokens_per_s", "ttft_p95_s", "itl_p50_s", "itl_p95_s", "itl_p99_s",
          "goodput", "delta", "p99_excess_removed", "inputs", "reason", "itl_cdf"]
STEPS = 12


def run(c, name, inject=None, trace_steps=STEPS):
    out = c.out(name)
    args = ["run", "--backend", "cpu", "--model", "tiny", "--phase", "decode", "--batch", "1",
            "--context", "256", "--steps", str(STEPS), "--warmup", "2", "--trace-steps",
            str(trace_steps), "--out", out]
    c.mpi(2, args + (["--inject", inject] if inject else []))
    return out


def whatif(c, out, expect_rc=0):
    p = subprocess.run([c.tpbench, "whatif", out, "--json"], capture_output=True, text=True,
                       env=c.env, timeout=120)
    c.check(p.returncode == expect_rc, f"whatif {out} -> rc {p.returncode}: {p.stderr.strip()}")
    return p


def by_name(doc):
    return {x["name"]: x for x in doc["counterfactuals"]}


def check_shape(c, doc, out):
    cfs = doc["counterfactuals"]
    c.check({x["name"] for x in cfs} == NAMES, f"{out}: one counterfactual of each name")
    c.check(all(list(x.keys()) == FIELDS for x in cfs), f"{out}: the issue's fields, in order")
    for x in cfs:
        nulls = [k for k in ("tokens_per_s", "itl_p95_s") if x[k] is None]
        c.check(not nulls or x["reason"], f"{x['name']}: a null figure has a reason")
    c.check(by_name(doc)["fewer_kernels"]["tokens_per_s"] is None, "fewer_kernels is null on cpu")
    saved = c.results(out).get("whatif")
    c.check(saved == doc, f"{out}: results.json holds the same whatif section")


def model_run(c, name, inject=None, topology=None):
    """The model backend with seeded noise: the same run with and without the fault differs by
    the fault alone, so the replay is held to the real run without it within 1%."""
    out = c.out(name)
    args = [c.tpbench, "run", "--backend", "model", "--world", "8", "--tp", "8", "--model",
            "llama-3.1-70b", "--dtype", "bf16", "--batch", "8", "--context", "2048", "--steps",
            "30", "--trace-steps", "30", "--model-noise", "1:0.05", "--out", out]
    args += (["--inject", inject] if inject else []) + (["--topology", topology] if topology else [])
    p = subprocess.run(args, capture_output=True, text=True, env=c.env, timeout=300)
    c.check(p.returncode == 0, f"model run {name} -> rc {p.returncode}: {p.stderr[-500:]}")
    return out


def check_model_backend(c):
    # 2 TP groups, the trace keeps the first only (trace_writer's max_groups): null, not a guess.
    out = c.out("model-two-groups")
    p = subprocess.run([c.tpbench, "run", "--backend", "model", "--world", "8", "--tp", "4",
                        "--model", "llama-3.1-70b", "--batch", "8", "--steps", "5",
                        "--inject", "rank=5:slowdown=1.3", "--out", out],
                       capture_output=True, text=True, env=c.env, timeout=300)
    c.check(p.returncode == 0, f"model run, 2 TP groups -> rc {p.returncode}: {p.stderr[-500:]}")
    x = by_name(json.loads(whatif(c, out).stdout))["no_straggler"]
    c.check(x["tokens_per_s"] is None and "TP groups" in (x["reason"] or ""),
            f"a trace without every TP group: null with a reason ({x['reason']})")
    clean = model_run(c, "model-clean")
    real = c.results(clean)["points"][0]["metrics"]
    # Another interconnect: the nvlink4 run replayed on PCIe 5 against the real PCIe 5 run.
    pcie = c.results(model_run(c, "model-pcie5", topology="pcie5"))["points"][0]["metrics"]
    p = subprocess.run([c.tpbench, "whatif", clean, "--json", "--topology", "pcie5"],
                       capture_output=True, text=True, env=c.env, timeout=120)
    x = by_name(json.loads(p.stdout))["topology"]
    for k, m in (("tokens_per_s", pcie["tokens_per_s"]), ("itl_p95_s", pcie["step_time_s"]["p95"])):
        err = x[k] / m - 1
        c.check(abs(err) < 0.01, f"model: topology pcie5 {k} against the real pcie5 run ({err:+.4f})")
    for name, cf, inject in [
            ("model-straggler", "no_straggler", "rank=3:slowdown=1.3"),
            ("model-host", "no_host_gap",
             ",".join(f"rank={r}:host_delay=2000" for r in range(8)))]:
        x = by_name(json.loads(whatif(c, model_run(c, name, inject)).stdout))[cf]
        c.check(x["delta"]["tokens_per_s"] > 0.1, f"model: {cf} buys tokens/s ({x['delta']['tokens_per_s']:+.3f})")
        for k, m in (("tokens_per_s", real["tokens_per_s"]), ("itl_p95_s", real["step_time_s"]["p95"])):
            err = x[k] / m - 1
            c.check(abs(err) < 0.01, f"model: {cf} {k} against the real run without it ({err:+.4f})")


def model_serve(c, name, extra, tp=8):
    out = c.out(name)
    args = [c.tpbench, "serve", "--backend", "model", "--world", str(tp), "--tp", str(tp), "--model",
            "llama-3.1-70b", "--dtype", "bf16", "--concurrency", "16", "--requests", "96",
            "--prompt-len", "uniform:256..4096", "--output-len", "uniform:16..256",
            "--model-noise", "1:0.05", "-q", "--out", out] + extra
    p = subprocess.run(args, capture_output=True, text=True, env=c.env, timeout=300)
    c.check(p.returncode == 0, f"model serve {name} -> rc {p.returncode}: {p.stderr[-500:]}")
    return out


def serve_metrics(c, out):
    m = c.results(out)["points"][0]["metrics"]
    return {"tokens_per_s": m["output_tokens_per_s"], "itl_p95_s": m["itl_s"]["p95"],
            "ttft_p95_s": m["ttft_s"]["p95"]}


def check_serve(c):
    """The serve replays against real runs made with the fix (model backend: no machine noise)."""
    plain = model_serve(c, "serve-plain", [])
    for name, cf, fault, flags, fix in [
            ("serve-chunk", "chunked_prefill", [], ["--chunk", "512"], ["--chunk", "512"]),
            ("serve-kv", "kv_budget", ["--kv-budget", "34304"], [], []),
            # 16 in flight, 6 at a time: the rest queue; 12 rows stay under the all-reduce's
            # 256 KB switch, which the fitted law cannot see (its text says so past 6 rows)
            ("serve-batch", "max_batch", ["--max-batch", "6", "--kv-budget", "70000"],
             ["--max-batch", "12"], ["--max-batch", "12", "--kv-budget", "70000"]),
            # one rank's host work inside every step (its host_s in the step log)
            ("serve-late", "no_straggler", ["--inject", "rank=3:host_delay=2000"], [], []),
            ("serve-pcie5", "topology", [], ["--topology", "pcie5"], ["--topology", "pcie5"])]:
        measured = model_serve(c, name, fault) if fault else plain
        real = serve_metrics(c, model_serve(c, name + "-real", fix) if fix else plain)
        p = subprocess.run([c.tpbench, "whatif", measured, "--json"] + flags,
                           capture_output=True, text=True, env=c.env, timeout=120)
        c.check(p.returncode == 0, f"whatif {name} -> rc {p.returncode}: {p.stderr.strip()}")
        x = by_name(json.loads(p.stdout))[cf]
        c.check(x["inputs"]["replay_error"] < 1e-6,
                f"{name}: the rebuilt run gives back the measured figures "
                f"({x['inputs']['replay_error']:.2e})")
        c.check(x["inputs"]["fit_error"] < 0.05 and x["inputs"]["fitted"],
                f"{name}: the step law fits the run's steps ({x['inputs']['fit_error']:.4f})")
        for k in ("tokens_per_s", "itl_p95_s") + (("ttft_p95_s",) if cf == "max_batch" else ()):
            err = x[k] / real[k] - 1
            c.check(abs(err) < 0.05, f"model serve: {cf} {k} against the real run ({err:+.4f})")
        if cf == "max_batch":
            c.check(x["delta"]["ttft_p95_s"] < -0.2 and "past the run's largest (6)" in
                    x["inputs"]["modelled"][0],
                    f"max_batch: the queue's TTFT comes down ({x['delta']['ttft_p95_s']:+.2f}), "
                    f"the extrapolation said ({x['inputs']['modelled'][0][-120:]})")
    # Across nodes: a TP 16 serve over two nodes of ib-ndr replayed on ib-xdr.
    def across(name, topo):
        return model_serve(c, name, ["--topology", topo], tp=16)
    ndr, xdr = across("serve-ndr", "ib-ndr"), serve_metrics(c, across("serve-xdr", "ib-xdr"))
    p = subprocess.run([c.tpbench, "whatif", ndr, "--json", "--topology", "ib-xdr"],
                       capture_output=True, text=True, env=c.env, timeout=120)
    x = by_name(json.loads(p.stdout))["topology"]
    c.check("over 2 node(s)" in x["inputs"]["modelled"][0], "TP 16 on ib-xdr: two nodes of 8")
    for k in ("tokens_per_s", "itl_p95_s"):
        err = x[k] / xdr[k] - 1
        c.check(abs(err) < 0.05, f"model serve across nodes: ib-ndr replayed on ib-xdr, {k} "
                f"against the real ib-xdr run ({err:+.4f})")
    # A CPU serve under mpirun: every name, the rebuilt run, and bad input.
    out = c.out("serve-cpu")
    c.mpi(2, ["serve", "--backend", "cpu", "--model", "tiny", "--layers", "2", "--concurrency",
              "2", "--requests", "6", "--prompt-len", "uniform:16..64", "--output-len",
              "uniform:2..8", "--out", out, "-q"])
    doc = json.loads(whatif(c, out).stdout)
    check_shape(c, doc, out)
    x = by_name(doc)["chunked_prefill"]
    c.check(x["tokens_per_s"] and x["inputs"]["replay_error"] < 1e-6,
            f"cpu serve: chunked_prefill replayed from the rebuilt run ({x['reason']})")
    p = subprocess.run([c.tpbench, "whatif", out, "--chunk", "many"], capture_output=True,
                       text=True, env=c.env, timeout=60)
    c.check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
            "--chunk" in p.stderr, f"whatif --chunk many: one line naming it, exit 2 ({p.stderr.strip()})")


def main():
    c = Ctx()
    check_serve(c)
    # 2x, not the issue's 1.3x: on a loaded 2-core machine the others' compute swells too, and
    # a 1.3x excess can vanish into it (tests/whatif/check_whatif.py uses 1.3x).
    slow = run(c, "straggler", "rank=1:slowdown=2")
    clean = run(c, "clean")
    host = run(c, "host", "rank=0:host_delay=3000,rank=1:host_delay=3000")
    bare = run(c, "no-trace", trace_steps=0)

    doc = json.loads(whatif(c, slow).stdout)
    check_shape(c, doc, slow)
    s = by_name(doc)["no_straggler"]
    c.check(s["inputs"]["steps"] == STEPS, f"all {STEPS} steps replayed")
    # Not 0: a collective whose exit the clock sync puts before its latest enter replays later.
    c.check(s["inputs"]["replay_error"] < 0.03,
            f"unchanged replay gives back the steps (error {s['inputs']['replay_error']:.4f})")
    c.check(s["delta"]["tokens_per_s"] > 0.01,
            f"no_straggler buys tokens/s on a 2x straggler ({s['delta']['tokens_per_s']:+.3f})")
    ranked = [x["delta"]["tokens_per_s"] for x in doc["counterfactuals"] if x["tokens_per_s"]]
    c.check(ranked == sorted(ranked, reverse=True), "ranked by the tokens/s gain")

    # Without an injected straggler the run's own noise can still make one (a CI run saw rank 0
    # at +35% compute on a loaded machine, and the replay rightly bought +32%): what the replay
    # may buy is bounded by the excess the run measured, not by a fixed guess at the noise.
    doc = json.loads(whatif(c, clean).stdout)
    g = by_name(doc)["no_straggler"]["delta"]["tokens_per_s"]
    excess = c.results(clean)["points"][0]["straggler"]["excess_compute_fraction"]
    c.check(-0.02 < g <= excess + 0.02,
            f"no_straggler without an injected straggler buys at most the run's own measured "
            f"excess compute ({g:+.3f}, excess {excess:.3f})")

    doc = json.loads(whatif(c, host).stdout)
    h = by_name(doc)["no_host_gap"]
    step = h["delta"]["measured"]["itl_p50_s"]
    gain = step - h["itl_p50_s"]
    # At least the injected 3 ms (less a margin); more where the machine's load adds host time.
    c.check(gain > 0.0025, f"no_host_gap removes the 3 ms host work (p50 {gain*1e3:.2f} ms)")

    doc = json.loads(whatif(c, bare).stdout)
    c.check(all(x["tokens_per_s"] is None and x["reason"] for x in doc["counterfactuals"]),
            "without a trace: every counterfactual null with a reason")
    c.check(all("no trace" in x["reason"] for x in doc["counterfactuals"]
                if x["name"] in ("no_straggler", "no_host_gap", "no_jitter")),
            "the replayed ones say the trace is missing")

    check_model_backend(c)

    x = by_name(json.loads(whatif(c, clean).stdout))["topology"]
    c.check(x["tokens_per_s"] is None and "--topology" in x["reason"],
            f"topology without --topology: null, saying how to ask ({x['reason']})")
    p = subprocess.run([c.tpbench, "whatif", clean, "--topology", "bogus"], capture_output=True,
                       text=True, env=c.env, timeout=60)
    c.check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--topology" in p.stderr,
            f"whatif --topology bogus: one line naming it, exit 2 ({p.stderr.strip()[:120]})")
    p = whatif(c, c.out("nowhere"), expect_rc=2)
    c.check(len(p.stderr.strip().splitlines()) == 1 and "whatif" in p.stderr,
            f"a missing folder: one line naming the field ({p.stderr.strip()})")
    with open(os.path.join(slow, "trace.json"), "w") as f:
        f.write("{not json")
    p = whatif(c, slow, expect_rc=2)
    c.check(len(p.stderr.strip().splitlines()) == 1 and "points[0].trace" in p.stderr,
            f"a broken trace: one line naming the field ({p.stderr.strip()})")
    c.finish()


if __name__ == "__main__":
    main()
