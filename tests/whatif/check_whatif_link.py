#!/usr/bin/env python3
"""whatif --topology on a serve point, set against a real serve on the other link: two hosts
made of network namespaces (launch/netns_hosts.sh), the TP group of 2 across them.

  1. calibrate across the hosts with h1's link shaped to RATE: the all-reduce curve of that
     link (DIR/topology.json, a measured fabric);
  2. in interleaved pairs, the same serve (CPU backend, tiny, 2 layers, mixed prefill and
     decode) on the unshaped link and on the shaped one;
  3. each unshaped serve replayed with `whatif --topology DIR/topology.json`, and the median of
     those against the median of the real shaped serves: output tokens/s and p95 ITL.

It also prints, for the prefill steps of the shaped serves, the link's time as the serve saw it
(the slowest rank's wait + transfer per step, the median) beside the calibrated curve's for the
same messages: what the replay is handed against what the link gave inside the serve.
Not a CI test: it measures this machine as it is (about two minutes). Run as root:
  tests/whatif/check_whatif_link.py --tpbench build/tpbench [--pairs 3] [--rate 400mbit]
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(ROOT, "launch", "netns_hosts.sh")
SERVE = ["serve", "--backend", "cpu", "--model", "tiny", "--layers", "2", "--tp", "2",
         "--concurrency", "4", "--requests", "24", "--prompt-len", "uniform:256..1024",
         "--output-len", "uniform:8..48", "--seed", "7", "-q"]
# The presets that name each link (tpbench checks the launcher's links file against them).
PRESET = {"400mbit": "hosts-tcp-400m", "1gbit": "hosts-tcp-1g"}


def hosts(*args, timeout=600):
    p = subprocess.run([HOSTS, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"check_whatif_link: netns_hosts.sh {' '.join(args)} -> rc {p.returncode}\n"
                 f"{p.stderr[-2000:]}")
    return p.stdout


def serve(a, out, rate):
    shutil.rmtree(out, ignore_errors=True)
    hosts("shape", "h1", "--rate", rate) if rate else hosts("shape", "h1", "--clear")
    hosts("mpirun", "2", "--", a.tpbench, *SERVE, "--topology",
          PRESET[rate] if rate else "hosts-tcp", "--out", out)
    with open(os.path.join(out, "results.json")) as f:
        m = json.load(f)["points"][0]["metrics"]
    return {"tokens_per_s": m["output_tokens_per_s"], "itl_p95_s": m["itl_s"]["p95"]}


def replay(a, out, curve):
    p = subprocess.run([a.tpbench, "whatif", out, "--json", "--topology", curve],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"check_whatif_link: whatif {out} -> rc {p.returncode}\n{p.stderr}")
    c = next(c for c in json.loads(p.stdout)["counterfactuals"] if c["name"] == "topology")
    if c["tokens_per_s"] is None:
        sys.exit(f"check_whatif_link: topology is null: {c['reason']}")
    return c


def curve_time(points, nbytes):
    """The calibrated curve at `nbytes`: log-log between its points, linear past the last."""
    for (x0, t0), (x1, t1) in zip(points, points[1:]):
        if x0 <= nbytes <= x1:
            f = math.log(nbytes / x0) / math.log(x1 / x0)
            return math.exp(math.log(t0) + f * math.log(t1 / t0))
    return points[-1][1] * nbytes / points[-1][0]


def link_in_serve(out, points, per_token, n):
    """Median over the prefill steps: the slowest rank's wait + transfer, and the curve's time
    for the step's n all-reduces of its tokens x per_token bytes."""
    seen, curve = [], []
    with open(os.path.join(out, "steps.jsonl")) as f:
        for line in f:
            s = json.loads(line)
            if s["prefill_tokens"] > 0 and s.get("ranks"):
                seen.append(max(r["wait_s"] + r["transfer_s"] for r in s["ranks"]))
                curve.append(n * curve_time(points, s["batch_tokens"] * per_token))
    return statistics.median(seen), statistics.median(curve)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(ROOT, "build", "tpbench"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rate", default="400mbit", choices=sorted(PRESET))
    ap.add_argument("--work", default="/tmp/tpb-whatif-link")
    a = ap.parse_args()
    a.tpbench = os.path.abspath(a.tpbench)
    os.makedirs(a.work, exist_ok=True)
    brought_up = "status: down" in hosts("status")
    if brought_up:
        hosts("up", "2")
    try:
        cal = os.path.join(a.work, "cal")
        shutil.rmtree(cal, ignore_errors=True)
        hosts("shape", "h1", "--rate", a.rate)
        hosts("mpirun", "2", "--", a.tpbench, "calibrate", "--op-profile", "false",
              "--max-bytes", "32M", "--reps", "3", "--out", cal, "-q")
        curve = os.path.join(cal, "topology.json")
        with open(curve) as f:
            points = json.load(f)["model"]["measured"]["all_reduce"]
        replayed, real, link = [], [], []
        for i in range(a.pairs):
            order = [("", "plain"), (a.rate, "shaped")]
            for rate, kind in order if i % 2 == 0 else order[::-1]:
                out = os.path.join(a.work, f"{kind}-{i}")
                r = serve(a, out, rate)
                if kind == "shaped":
                    real.append(r)
                    continue
                c = replay(a, out, curve)
                replayed.append(c)
            with open(os.path.join(a.work, f"plain-{i}", "results.json")) as f:
                cost = json.load(f)["points"][0]["cost"]
            n = cost["collectives_per_step"]
            link.append(link_in_serve(os.path.join(a.work, f"shaped-{i}"), points,
                                      cost["comm_bytes"] / n / cost["tokens"], n))
    finally:
        hosts("shape", "h1", "--clear")
        if brought_up:
            hosts("down")
    print(f"serve across two hosts, h1's link at {a.rate}, {a.pairs} interleaved pairs "
          f"(medians); the replay: whatif --topology on the calibrated curve of that link")
    print("| metric | replayed from the unshaped serve | real serve on the link | error |")
    print("|---|---|---|---|")
    for k in ("tokens_per_s", "itl_p95_s"):
        x = statistics.median(c[k] for c in replayed)
        y = statistics.median(r[k] for r in real)
        print(f"| {k} | {x:.4g} | {y:.4g} | {100 * (x / y - 1):+.1f}% |")
    seen = statistics.median(s for s, _ in link)
    cal_t = statistics.median(c for _, c in link)
    print(f"prefill steps of the real serves: the link's time per step {seen * 1e3:.1f} ms "
          f"(slowest rank's wait + transfer), the calibrated curve's for the same messages "
          f"{cal_t * 1e3:.1f} ms ({cal_t / seen:.2f}x)")


if __name__ == "__main__":
    main()
