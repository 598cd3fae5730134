#!/usr/bin/env python3
"""Plots from tpbench results (formatting only; every number comes from results.json).

usage: plot.py RESULTS_DIR_OR_FILE... --out DIR

Writes:
  utilisation.png  occupancy vs MBU vs MFU vs the MFU ceiling, per point (the article's point:
                   the first is not the others)
  throughput.png   total tokens/s against p95 step time (ITL for decode) as batch grows
  ranks.png        per-rank compute / wait / transfer of each point (who waits for whom)
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load_points(paths):
    pts = []
    for p in paths:
        f = os.path.join(p, "results.json") if os.path.isdir(p) else p
        with open(f) as fh:
            for pt in json.load(fh)["points"]:
                if pt.get("status") == "ok" and "mbu" in pt.get("metrics", {}):
                    pts.append(pt)
    # By value, not by file name: out/decode_b16 sorts before out/decode_b4 as text.
    return sorted(pts, key=order)


def order(pt):
    p = pt["params"]
    return (p["phase"], p["tp"], p.get("context", 0), p.get("prompt", 0), p["batch"])


def value(x):
    """A null figure (no value: see the point's warnings) plots as a gap, not as 0."""
    return float("nan") if x is None else x


def label(pt):
    p = pt["params"]
    size = f"ctx{p['context']}" if p["phase"] == "decode" else f"S{p['prompt']}"
    return f"{p['phase'][0]} B{p['batch']} {size} tp{p['tp']}"


def utilisation(pts, out):
    keys = [("occupancy_sampled", "occupancy"), ("mbu", "MBU"), ("mfu", "MFU"), ("mfu_ceiling", "MFU ceiling")]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(pts)), 4))
    w = 0.8 / len(keys)
    for i, (k, name) in enumerate(keys):
        ax.bar([x + i * w for x in range(len(pts))], [value(pt["metrics"].get(k)) for pt in pts], w, label=name)
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(pts))], [label(p) for p in pts], rotation=30, ha="right")
    ax.set_ylabel("fraction of peak / of time")
    ax.set_title("Occupancy is not MBU is not MFU")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "utilisation.png"), dpi=120)


def throughput(pts, out):
    dec = sorted((p for p in pts if p["params"]["phase"] == "decode"), key=lambda p: p["params"]["batch"])
    if not dec:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [p["metrics"]["step_time_s"]["p95"] * 1e3 for p in dec]
    ys = [p["metrics"]["tokens_per_s"] for p in dec]
    ax.plot(xs, ys, "o-")
    for x, y, p in zip(xs, ys, dec):
        ax.annotate(f"B={p['params']['batch']}", (x, y), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("p95 step time = ITL (ms)")
    ax.set_ylabel("total tokens/s")
    ax.set_title("Throughput vs p95 ITL as batch grows")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)


def ranks(pts, out):
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * sum(len(p["ranks"]) for p in pts)), 4))
    x, ticks = 0, []
    for pt in pts:
        for r in pt["ranks"]:
            c, w_, t = r["compute_s"], r["wait_s"], r["transfer_s"]
            ax.bar(x, c, color="tab:blue")
            ax.bar(x, w_, bottom=c, color="tab:red")
            ax.bar(x, t, bottom=c + w_, color="tab:gray")
            ticks.append((x, f"{label(pt)}\nr{r['rank']}"))
            x += 1
        x += 1
    ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks], rotation=90, fontsize=7)
    ax.set_ylabel("seconds over the measured steps")
    ax.legend(["compute", "wait (imbalance)", "transfer"])
    ax.set_title("Per-rank compute, wait and transfer")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ranks.png"), dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    pts = load_points(a.results)
    if not pts:
        raise SystemExit("no ok points to plot")
    utilisation(pts, a.out)
    throughput(pts, a.out)
    ranks(pts, a.out)
    print(f"plots written to {a.out}")


if __name__ == "__main__":
    main()
