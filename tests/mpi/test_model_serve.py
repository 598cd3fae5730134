#!/usr/bin/env python3
"""`tpbench serve --backend model`: the serving loop on virtual ranks, through the same records,
metrics, curve and diagnosis as a measured serve (issue 11, item 2).

Llama-3.1-70B fp8 (16 of its 80 layers on the curves), TP 8 on a modelled 8x H100
(h100-sxm:datasheet, the roofline docs/USAGE.md's table states, nvlink4), prompts 512, outputs 128,
chunked prefill 512, concurrency 1..128:
- every point is ok and passes the results contract; the curve has a free region at small
  concurrency and a knee; tokens/s rises with concurrency;
- with --slo, the curve's SLO capacity is the last rate before the first whose requests miss
  the TTFT SLO more than 10% of the time, as requests.jsonl gives it;
- a KV budget too small for the load moves the memory wall in (reported, with preemptions),
  and diagnose says memory_bound there;
- over pcie5 the step is slower (p50 ITL at concurrency 1 above nvlink4's) and the free
  region ends no later;
- a slowed rank (rank=3:slowdown=1.3): diagnose names the straggler, rank 3, +30% compute;
  output tokens/s falls;
- one rank's host work inside every step (rank=3:host_delay=1000): the ITL tail is imbalance,
  the straggler's cause outside_ops, and steps.jsonl's per-rank host_s holds it;
- --host-overhead 5000 at concurrency 1: host_bound;
- TTFT's queue and prefill (vLLM's request phases): mostly prefill at 2 requests/s, queueing at
  2000 with 8 sequences at most, the limit named;
- continuous batching gives at least 15% more output tokens/s than static on the same requests;
- without a chunk, long prompts among short ones stall decode: prefill_interference, named for
  the unchunked run only; the longest gaps match the logs (tests/tools/late_tokens_check.py) and
  name the 4096-token prompt, or a chunk of one; over PCIe, where the prompt's all-reduce is
  most of its step, the tail is still prefill's (its payload), and chunking lowers it there;
- the metrics recomputed from requests.jsonl (tests/tools/serve_metrics_check.py) match;
- the same command twice gives identical points; a long run says its timeline was sampled
  while steps.jsonl still has every step."""
import json
import os
import subprocess
import sys
import time

from tpbtest import Ctx

BASE = ["serve", "--backend", "model", "--collective", "model", "--world", "8", "--tp", "8",
        "--model", "llama-3.1-70b", "--dtype", "fp8", "--hardware", "h100-sxm:datasheet"]
# Up to 128: with 128 outputs and one 512-token prefill chunk a step, the first request ends as
# the 128th is admitted, so a load of 256 runs as 128 does.
LOADS = "1,2,4,8,16,32,64,128"
# The curves run 16 of the model's 80 layers and 128 output tokens: every check on them is a
# ratio or a shape (free region, knee, wall, PCIe against NVLink), which the layer count and
# the output length scale alike; three full-depth curves were ~110 s of CI, and at 256 outputs
# the 16-layer ones still ~60 s (one step at concurrency 1 costs ~0.1 ms of modelling, 65536 of
# them a curve's first load). The chunking and repeat checks keep all 80 layers.
WORK = ["--requests", "256", "--prompt-len", "512", "--output-len", "128", "--chunk", "512",
        "--layers", "16"]


def serve(c, name, args):
    out = c.out(name)
    t0 = time.monotonic()
    p = subprocess.run([c.tpbench] + BASE + args + ["--out", out], capture_output=True,
                       text=True, env=c.env, timeout=600)
    print(f"     {time.monotonic() - t0:6.1f} s  {name}")  # as tpbtest logs mpirun calls
    c.check(p.returncode == 0, f"{name}: rc {p.returncode} {p.stderr[-800:]}")
    return out, c.results(out)


def codes(c, out):
    p = subprocess.run([c.tpbench, "diagnose", "--json", out], capture_output=True, text=True,
                       env=c.env)
    c.check(p.returncode == 0, f"diagnose --json {out}: rc {p.returncode} {p.stderr}")
    d = json.loads(p.stdout)
    return [{v["code"] for v in pt["verdicts"] if "code" in v} for f in d["files"]
            for pt in f["points"]]


def curve_line(res):
    cv = res["curve"]
    pts = [(q["x"], round(q["total_tokens_per_s"]), round(q["itl_p95_s"] * 1e3, 2))
           for q in cv["points"]]
    return cv, pts


def the_curve(c):
    out, res = serve(c, "curve", ["--topology", "nvlink4", "--concurrency", LOADS] + WORK)
    c.check_contract(out)
    cv, pts = curve_line(res)
    print(f"nvlink4 curve (x, tokens/s, p95 ITL ms): {pts}")
    print(f"  free region up to {cv['free_region']['upto']}, knee {cv['knee']['x']}, "
          f"wall {cv.get('memory_wall')}")
    c.check(all(p["status"] == "ok" for p in res["points"]), "every load is ok")
    tps = [q["total_tokens_per_s"] for q in cv["points"]]
    c.check(all(b > a for a, b in zip(tps, tps[1:])), f"tokens/s rises with load: {tps}")
    c.check(cv["free_region"]["upto"] is not None and cv["free_region"]["upto"] >= 2,
            "a free region at small concurrency")
    c.check(cv["knee"]["x"] is not None and 8 <= cv["knee"]["x"] <= 256, "a knee is reported")
    c.check(cv.get("memory_wall") is None, "80 GB holds this load: no memory wall")
    return res


def slo_capacity(c):
    """With --slo, the curve's SLO capacity: the last rate, in increasing order, whose requests
    meet the TTFT SLO at least 90% of the time before the first that misses, recomputed here
    from requests.jsonl (TTFT = first token - arrival, vLLM's)."""
    out, res = serve(c, "slo", ["--rate", "5,20,50,100,200", "--requests", "96", "--prompt-len",
                                "512", "--output-len", "64", "--layers", "16", "--slo",
                                "ttft=7"])
    reqs = [json.loads(l) for l in open(os.path.join(out, "requests.jsonl"))]
    att = []
    for i in range(len(res["points"])):
        mine = [r for r in reqs if r["point"] == i and not r["warmup"] and not r["rejected"]]
        att.append(sum(r["first_token_s"] - r["arrival_s"] <= 0.007 for r in mine) / len(mine))
    rates = [p["params"]["serve"]["x"] for p in res["points"]]
    first_miss = next((k for k, a in enumerate(att) if a < 0.9), None)
    want = rates[first_miss - 1] if first_miss else None  # None: even the lightest missed
    cap = res["curve"]["slo_capacity"]
    per_gpu = res["points"][rates.index(cap["x"])]["metrics"]["goodput"]["requests_per_s"] / 8
    c.check(first_miss is not None and cap["x"] == want and cap["next_x"] == rates[first_miss] and
            abs(cap["goodput_per_gpu"] - per_gpu) < 1e-9,
            f"SLO capacity {cap['x']} (next {cap['next_x']}), the logs' attainment {att}")


def kv_wall(c):
    out, res = serve(c, "kv", ["--topology", "nvlink4", "--concurrency", LOADS,
                               "--kv-budget", "30000"] + WORK)
    cv, pts = curve_line(res)
    wall = cv.get("memory_wall")
    print(f"kv-budget 30000: {pts}; wall {wall}; knee {cv['knee']['x']}")
    c.check(wall is not None and wall["x"] <= 128, f"the memory wall comes in: {wall}")
    heavy = res["points"][-1]
    c.check(heavy["serve"]["preemptions"] > 0, "preemptions are counted at the heaviest load")
    c.check("memory_bound" in codes(c, out)[-1], "diagnose says memory_bound at the wall")
    # The longest gap there is a preempted request's: it sat out steps, and the logs agree.
    tool = os.path.join(c.source, "tests", "tools", "late_tokens_check.py")
    r = subprocess.run([sys.executable, tool, out], capture_output=True, text=True)
    c.check(r.returncode == 0, f"kv: late_tokens_check.py: {r.stdout[-1500:]}{r.stderr}")
    w = heavy["metrics"]["itl_attribution"]["worst"][0]
    c.check(w["part"] == "between_steps" and w["skipped_steps"] > 0 and w["preemptions"] > 0,
            f"the longest gap at the wall sat out steps, preempted ({w})")


def topology(c, nv):
    out, res = serve(c, "pcie5", ["--topology", "pcie5", "--concurrency", LOADS] + WORK)
    cv, pts = curve_line(res)
    a, b = nv["points"][0]["metrics"]["itl_s"]["p50"], res["points"][0]["metrics"]["itl_s"]["p50"]
    print(f"pcie5 curve: {pts}; free region up to {cv['free_region']['upto']}; "
          f"ITL p50 at 1: nvlink4 {a * 1e3:.2f} ms, pcie5 {b * 1e3:.2f} ms")
    c.check(b > 1.1 * a, "PCIe's all-reduces make the decode step slower")
    c.check(cv["free_region"]["upto"] <= nv["curve"]["free_region"]["upto"],
            "the free region ends no later over PCIe")


def straggler(c, nv):
    out, res = serve(c, "slow", ["--topology", "nvlink4", "--concurrency", "16",
                                 "--inject", "rank=3:slowdown=1.3"] + WORK)
    p = res["points"][0]
    s = p["straggler"]
    print(f"slowed rank: {s}")
    c.check(s["rank"] == 3 and abs(s["excess_compute_fraction"] - 0.3) < 1e-6,
            "the straggler is rank 3 at +30% compute")
    c.check("straggler" in codes(c, out)[0], "diagnose names the straggler")
    base = nv["points"][4]["metrics"]["output_tokens_per_s"]
    c.check(p["metrics"]["output_tokens_per_s"] < 0.95 * base,
            "a slowed rank costs output tokens/s")


def late_host(c):
    """One rank's host work inside every decode step (results 1.21.0, the step log's per-rank
    host_s): its peers wait it out, so the ITL tail is imbalance, and the straggler's cause is
    outside its ops. Before, the tail charged it to decode compute."""
    out, res = serve(c, "late-host", ["--concurrency", "16", "--requests", "32", "--prompt-len",
                                      "128", "--output-len", "128", "--layers", "16",
                                      "--model-noise", "1:0.05", "--inject",
                                      "rank=3:host_delay=1000"])
    p = res["points"][0]
    sh = p["metrics"]["itl_attribution"]["shares"]
    c.check(sh["imbalance"] > 0.5, f"the late rank's host work is the ITL tail's imbalance ({sh})")
    s = p["straggler"]
    c.check(s["costliest_rank"] == 3 and s["cause"]["kind"] == "outside_ops",
            f"rank 3 costs the group's wait, outside its ops ({s['costliest_rank']}, "
            f"{s['cause']['kind']})")
    with open(os.path.join(out, "steps.jsonl")) as f:
        step = json.loads(f.readlines()[-1])
    host = [r["host_s"] for r in step["ranks"]]
    c.check(host[3] > 0.0009 and max(host[:3] + host[4:]) < 0.0001,
            f"steps.jsonl: rank 3's host_s holds the 1 ms, the others' none ({host})")
    worst = p["metrics"]["itl_attribution"]["worst"]
    c.check(len({w["step"] for w in worst}) == len(worst) == 5 and
            all(w["part"] == "imbalance" and w["rank"] == 3 and w["tokens"] == 16 and
                0.0009 < w["part_s"] < 0.0012 for w in worst),
            f"the five longest gaps, from five steps of 16 tokens each: imbalance, rank 3, "
            f"about 1 ms ({worst[:1]})")
    d = subprocess.run([c.tpbench, "diagnose", out], capture_output=True, text=True, env=c.env)
    c.check("largest part was imbalance (+1.00 ms, rank 3 late)" in d.stdout,
            "diagnose names the longest gap's part and its late rank")
    rep = c.out("late-host-report")
    r = subprocess.run([c.tpbench, "report", out, "--out", rep, "--no-plots"], capture_output=True,
                       text=True, env=c.env)
    text = open(os.path.join(rep, "report.md")).read() if r.returncode == 0 else ""
    c.check("| 16 | imbalance |" in text and "The longest inter-token gaps" in text,
            "report.md lists the longest gaps with their part")
    c.check("not the decode step's bandwidth limit alone" in d.stdout and
            "bandwidth_bound" not in codes(c, out)[0],
            "a uniform ITL with a late rank in every step is not called the bandwidth limit")


def host_bound(c):
    out, _ = serve(c, "host", ["--concurrency", "1", "--requests", "8", "--prompt-len", "64",
                               "--output-len", "64", "--host-overhead", "5000"])
    c.check("host_bound" in codes(c, out)[0], "diagnose says host_bound at --host-overhead 5000")
    # Noiseless virtual ranks never wait: the balance line says so rather than "nan%".
    d = subprocess.run([c.tpbench, "diagnose", out], capture_output=True, text=True, env=c.env)
    c.check("nan" not in d.stdout and "its group never waited" in d.stdout,
            f"diagnose: a group that never waited reads so ({d.stdout[-300:]})")


def static_vs_continuous(c):
    got = {}
    for sched in ("static", "continuous"):
        out, res = serve(c, sched, ["--concurrency", "8", "--requests", "64", "--prompt-len",
                                    "64", "--output-len", "uniform:16..256", "--seed", "1",
                                    "--scheduler", sched])
        got[sched] = res["points"][0]["metrics"]["output_tokens_per_s"]
    ratio = got["continuous"] / got["static"]
    print(f"continuous / static output tokens/s: {ratio:.2f}")
    c.check(ratio >= 1.15, "continuous gives at least 15% more output tokens/s than static")


def late_tokens_hold(c, out, res, name):
    """The longest gaps against the logs (tests/tools/late_tokens_check.py), and the prompt
    each names: unchunked, a whole 4096-token prompt; chunked, a 256-token budget's chunk."""
    tool = os.path.join(c.source, "tests", "tools", "late_tokens_check.py")
    r = subprocess.run([sys.executable, tool, out], capture_output=True, text=True)
    c.check(r.returncode == 0, f"{name}: late_tokens_check.py: {r.stdout[-1500:]}{r.stderr}")
    w = res["points"][0]["metrics"]["itl_attribution"]["worst"][0]
    row = (w.get("prefilled") or [{}])[0]
    prompt = {json.loads(l)["id"]: json.loads(l)["prompt_len"]
              for l in open(os.path.join(out, "requests.jsonl"))}.get(row.get("request"))
    if name == "unchunked":
        c.check(w["part"] == "prefill" and row.get("tokens") == 4096 == prompt and
                row.get("cached") == 0,
                f"unchunked: the longest gap names a whole 4096-token prompt ({w})")
        d = subprocess.run([c.tpbench, "diagnose", out], capture_output=True, text=True,
                           env=c.env)
        c.check(f"request {row.get('request')}'s 4096-token prompt" in d.stdout,
                "diagnose names the prompt behind the longest gap")
    else:
        c.check(w["part"] == "prefill" and 0 < row.get("tokens", 0) <= 256 and prompt == 4096,
                f"chunked: the longest gap names a chunk of a 4096-token prompt ({w})")


def chunking(c):
    found = {}
    for name, extra in (("unchunked", []), ("chunked", ["--chunk", "256"])):
        out, res = serve(c, name, ["--rate", "40", "--requests", "400", "--prompt-len",
                                   "mix:64@0.9,4096@0.1", "--output-len", "64"] + extra)
        itl = res["points"][0]["metrics"]["itl_s"]
        found[name] = codes(c, out)[0]
        print(f"{name}: ITL p50 {itl['p50'] * 1e3:.2f} ms, p99 {itl['p99'] * 1e3:.2f} ms, "
              f"codes {sorted(found[name])}")
        found[name + "_p99"] = itl["p99"]
        late_tokens_hold(c, out, res, name)
    c.check("prefill_interference" in found["unchunked"], "unchunked: prefill_interference")
    c.check("prefill_interference" not in found["chunked"], "chunked: no prefill_interference")
    c.check(found["chunked_p99"] < found["unchunked_p99"], "chunking lowers p99 ITL")


def queueing(c):
    """TTFT split as vLLM's request phases split it: far under capacity the queue is empty and
    TTFT is the prefill; far over it, with 8 sequences at most, requests wait for admission, and
    diagnose says queueing at the batch's limit. The step log is the truth for the limit, the
    request log for the queue (serve_metrics_check.py recomputes queue_s from it)."""
    out, res = serve(c, "queueing", ["--rate", "2,2000", "--max-batch", "8", "--requests", "64",
                                     "--prompt-len", "512", "--output-len", "32", "--layers",
                                     "16"])
    light, heavy = (p["metrics"] for p in res["points"])
    found = codes(c, out)
    # A request arriving mid-step waits for the step's end: a queue under one step, not none.
    c.check(light["queue_s"]["mean"] < 0.25 * light["ttft_s"]["mean"] and
            "queueing" not in found[0],
            f"2 requests/s: TTFT is mostly the prefill (queue mean {light['queue_s']['mean']}, "
            f"ttft mean {light['ttft_s']['mean']})")
    steps = [json.loads(l) for l in open(os.path.join(out, "steps.jsonl"))]
    running = max(s["running"] for s in steps if s["point"] == 1)
    c.check("queueing" in found[1] and running == 8 and
            heavy["queue_s"]["mean"] > 0.5 * heavy["ttft_s"]["mean"] and
            heavy["request_throughput"] < 2000,
            f"2000 requests/s: queueing, the running batch at its 8 (steps.jsonl: {running}), "
            f"{heavy['request_throughput']:.0f} requests/s finished")
    d = subprocess.run([c.tpbench, "diagnose", out], capture_output=True, text=True, env=c.env)
    c.check("reached its limit of 8 sequences" in d.stdout and "past this server's capacity"
            in d.stdout, "diagnose names the batch's limit, and the load past capacity")
    tool = os.path.join(c.source, "tests", "tools", "serve_metrics_check.py")
    r = subprocess.run([sys.executable, tool, out], capture_output=True, text=True)
    c.check(r.returncode == 0, f"queueing: serve_metrics_check.py: {r.stdout[-1500:]}{r.stderr}")
    compare_batches(c, out, res)


def compare_batches(c, out, res):
    """compare on two serve sweeps that differ in one serving setting: the loads match row by
    row, the run is labelled by that setting alone, and the serve figures' ratios are the two
    results files' own."""
    wide, wres = serve(c, "queueing-16", ["--rate", "2,2000", "--max-batch", "16", "--requests",
                                          "64", "--prompt-len", "512", "--output-len", "32",
                                          "--layers", "16"])
    cmp_dir = c.out("compare-batches")
    p = subprocess.run([c.tpbench, "compare", out, wide, "--out", cmp_dir], capture_output=True,
                       text=True, env=c.env)
    c.check(p.returncode == 0, f"compare: rc {p.returncode} {p.stderr[-500:]}")
    doc = json.load(open(os.path.join(cmp_dir, "compare.json")))
    c.check("serve.max_batch" in doc["label_fields"] and len(doc["rows"]) == 2 and
            "serve.max_batch=16" in p.stdout and "TTFT p99" in p.stdout,
            f"compare: both loads matched, labelled by serve.max_batch ({doc['label_fields']}, "
            f"{len(doc['rows'])} rows)")
    for row, a, b in zip(doc["rows"], res["points"], wres["points"]):
        got = dict(row["entries"][1]["ratio"])
        want = b["metrics"]["ttft_s"]["p50"] / a["metrics"]["ttft_s"]["p50"]
        c.check(abs(got["ttft_p50_s"] - want) < 1e-9 and "queue_p50_s" in got,
                f"compare: TTFT p50 ratio {got['ttft_p50_s']:.4f}, the results' own {want:.4f}")


def prefill_over_pcie(c):
    """Over PCIe a long prompt's all-reduce, not its compute, is most of its step: the tail is
    still the prompt's (its payload), so diagnose says prefill_interference, not the link, and
    chunking, the fix it names, lowers the p99 ITL on the same link."""
    load = ["--rate", "40", "--requests", "400", "--prompt-len", "mix:64@0.9,4096@0.1",
            "--output-len", "64", "--topology", "pcie5-switch"]
    p99 = {}
    for name, extra in (("pcie-unchunked", []), ("pcie-chunked", ["--chunk", "256"])):
        out, res = serve(c, name, load + extra)
        p99[name] = res["points"][0]["metrics"]["itl_s"]["p99"]
        a = res["points"][0]["metrics"]["itl_attribution"]
        if name == "pcie-unchunked":
            w = a["worst"][0]
            c.check(w["parts_s"]["transfer"] < w["parts_s"]["prefill"] and
                    a["shares"]["prefill"] > 0.5,
                    f"pcie, unchunked: the prompts' all-reduce is prefill's, not the link's "
                    f"(shares {a['shares']}, longest gap {w['parts_s']})")
            c.check("prefill_interference" in codes(c, out)[0],
                    "pcie, unchunked: prefill_interference")
    c.check(p99["pcie-chunked"] < 0.5 * p99["pcie-unchunked"],
            f"pcie: chunking, the named fix, halves the p99 ITL at least "
            f"({p99['pcie-chunked'] * 1e3:.1f} vs {p99['pcie-unchunked'] * 1e3:.1f} ms)")


def same_twice(c):
    outs = []
    for k in range(2):
        out, res = serve(c, f"twice-{k}", ["--concurrency", "1,16", "--requests", "32",
                                           "--prompt-len", "512", "--output-len", "256",
                                           "--chunk", "512"])
        outs.append((out, res))
    a, b = (r["points"] for _, r in outs)
    c.check(a == b, "the same command gives identical points")
    p = a[0]
    sampled = [w for w in p.get("warnings", []) if w.startswith("timeline_sampled")]
    steps = [json.loads(l) for l in open(os.path.join(outs[0][0], "steps.jsonl"))
             if json.loads(l)["point"] == 0]
    c.check(sampled and len(steps) == p["serve"]["steps"],
            f"a long run samples its timeline ({sampled[:1]}) and logs every step "
            f"({len(steps)} of {p['serve']['steps']})")
    tool = os.path.join(c.source, "tests", "tools", "serve_metrics_check.py")
    r = subprocess.run([sys.executable, tool, outs[0][0]], capture_output=True, text=True)
    c.check(r.returncode == 0, f"serve_metrics_check.py: {r.stdout[-1500:]}{r.stderr}")


def main():
    c = Ctx()
    nv = the_curve(c)
    kv_wall(c)
    slo_capacity(c)
    topology(c, nv)
    straggler(c, nv)
    late_host(c)
    host_bound(c)
    static_vs_continuous(c)
    chunking(c)
    prefill_over_pcie(c)
    queueing(c)
    same_twice(c)
    c.finish()


if __name__ == "__main__":
    main()
