#!/usr/bin/env python3
"""Plots from tpbench results (formatting only; every number comes from the results files).

usage: plot.py RESULTS_DIR_OR_FILE... --out DIR [--max-point-plots N] [--timeline-steps N]

Each plot is written as NAME.png, NAME.svg and NAME.json, the last holding exactly the numbers
drawn (results/plot_data.py builds it; the picture is drawn from it alone). DIR/index.json
lists every plot with a one-line description, or says why it has no data for these results;
`tpbench report` links them from report.md. Needs matplotlib and pandas (Debian:
python3-matplotlib python3-pandas); exits 3 naming what is missing.
"""
import argparse
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MISSING = [m for m in ("matplotlib", "pandas") if importlib.util.find_spec(m) is None]
if __name__ == "__main__" and MISSING:
    print("plot.py: missing " + " and ".join(MISSING) + " (Debian: apt-get install "
          + " ".join("python3-" + m for m in MISSING) + ")", file=sys.stderr)
    sys.exit(3)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import plot_data as D  # noqa: E402
import tpbench_results  # noqa: E402

COLOURS = {"compute": "tab:blue", "wait": "tab:red", "transfer": "tab:gray",
           "decode": "tab:blue", "prefill": "tab:orange", "serve": "tab:green"}
NAN = float("nan")

# name -> (title, what it shows): report.md's one line per plot.
CATALOGUE = {
    "utilisation": ("Occupancy vs MBU vs MFU", "occupancy (time with any device work in flight) "
                    "next to MBU, MFU and the MFU ceiling for each point: busy is not efficient"),
    "roofline": ("Roofline", "achieved FLOP/s against arithmetic intensity under the bandwidth and "
                 "compute roofs (ridge marked); the dotted line above each point rises to its MFU ceiling"),
    "throughput": ("Throughput vs p95 step time", "total tokens/s against p95 step time (decode's "
                   "ITL) as the batch grows, one line per context and TP"),
    "ranks": ("Per-rank compute, wait, transfer", "each rank's compute, wait (imbalance) and transfer "
              "seconds over the measured steps: who waits for whom"),
    "heatmap": ("Straggler heatmap", "wait in the all-reduces (us, summed per layer) for each rank "
                "and (step, layer) from the trace: the ranks that wait are dark, the slow rank "
                "that they wait for is the pale column"),
    "timeline": ("Timeline", "the first steps on every rank on the synced clock: compute, wait "
                 "and transfer as bars (what Perfetto shows of the trace)"),
    "collectives": ("Collectives sweep", "time and bus bandwidth against message size, with the "
                    "arrival skew (p95) and each rank's mean lag behind the first to arrive"),
    "serve_curve": ("Serving curve", "total tokens/s and p95 ITL against load: the free region "
                    "shaded, the knee and the memory wall marked; with a price (serve --price), "
                    "the cost per million tokens against load beside it"),
    "itl_cdf": ("ITL CDF", "the distribution of inter-token latency pooled over the measured "
                "requests, one line per load"),
    "itl_time": ("ITL over time", "every token gap against the virtual clock, the steps that "
                 "carried prefill rows shaded"),
    "queue": ("Running and waiting", "requests running and waiting at each step against the "
              "virtual clock"),
    "whatif_itl": ("What fixing it buys: ITL", "the measured ITL distribution against that of "
                   "each point's three best fixes (tpbench whatif; p0..p100 in steps of 5)"),
    "whatif_curve": ("What fixing it buys: the curve", "tokens/s against p95 ITL for every "
                     "point, as measured and under each fix (tpbench whatif)"),
}
PER_POINT = ("heatmap", "timeline", "itl_time", "queue")


def save(fig, out, name, data):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name + ".png"), dpi=110, bbox_inches="tight")
    fig.savefig(os.path.join(out, name + ".svg"), bbox_inches="tight")
    plt.close(fig)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"plot": name, **data}, f, separators=(",", ":"), allow_nan=False)
    return [name + ".png", name + ".svg", name + ".json"]


def value(x):
    return NAN if x is None else x


def draw_utilisation(d):
    pts, bars = d["points"], d["bars"]
    names = {"occupancy_sampled": "occupancy", "mbu": "MBU", "mfu": "MFU", "mfu_ceiling": "MFU ceiling"}
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(pts)), 4))
    w = 0.8 / len(bars)
    for i, k in enumerate(bars):
        ax.bar([x + i * w for x in range(len(pts))], [value(p[k]) for p in pts], w, label=names[k])
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(pts))], [p["label"] for p in pts],
                  rotation=30, ha="right")
    ax.set_ylabel("fraction of peak / of time")
    ax.set_title("Occupancy is not MBU is not MFU")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def draw_roofline(d):
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for i, r in enumerate(d["roofs"]):
        xs, ys = zip(*r["line"])
        ax.plot(xs, ys, "k-", lw=1.5, label="roofs" if i == 0 else None)
        ax.axvline(r["ridge_intensity"], color="k", ls=":", lw=0.8)
        ax.annotate(f"{r['peak_bw'] / 1e9:.3g} GB/s", r["line"][0], textcoords="offset points",
                    xytext=(6, 4), fontsize=8, rotation=25)
        ax.annotate(f"{r['peak_flops'] / 1e9:.3g} GFLOP/s", r["line"][1], textcoords="offset points",
                    xytext=(-80, 4), fontsize=8)
        ax.annotate(f"ridge {r['ridge_intensity']:.2f} FLOP/B", (r["ridge_intensity"], r["peak_flops"]),
                    textcoords="offset points", xytext=(4, -12), fontsize=8)
    seen = set()
    for p in d["points"]:
        c = COLOURS.get(p["phase"], "tab:purple")
        ax.plot([p["intensity"]] * 2, [p["achieved_flops_per_s"], p["ceiling_flops_per_s"]], ":", color=c, lw=1)
        ax.plot(p["intensity"], p["ceiling_flops_per_s"], "_", color=c, ms=10)
        ax.plot(p["intensity"], p["achieved_flops_per_s"], "o", color=c,
                label=p["phase"] if p["phase"] not in seen else None)
        seen.add(p["phase"])
        ax.annotate(f"{p['label']}\nMFU {p['mfu']:.3f} / ceiling {p['mfu_ceiling']:.3f}",
                    (p["intensity"], p["achieved_flops_per_s"]), textcoords="offset points",
                    xytext=(5, -14), fontsize=6.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, cost model)")
    ax.set_ylabel("FLOP/s per rank")
    ax.plot([], [], "_", color="k", ms=10, label="MFU ceiling (at the roof)")
    ax.set_title("Roofline: achieved FLOP/s and the MFU ceiling")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def draw_throughput(d):
    fig, ax = plt.subplots(figsize=(6, 4))
    for line in d["lines"]:
        xs = [p["p95_step_ms"] for p in line["points"]]
        ys = [p["tokens_per_s"] for p in line["points"]]
        several = len({x["source"] for x in d["lines"]}) > 1
        name = f"tp{line['tp']} ctx{line['context']}"
        ax.plot(xs, ys, "o-", label=f"{line['points'][0]['label'].split(']')[0]}] {name}" if several else name)
        for x, y, p in zip(xs, ys, line["points"]):
            ax.annotate(f"B={p['batch']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("p95 step time = ITL (ms)")
    ax.set_ylabel("total tokens/s")
    ax.set_title("Throughput vs p95 ITL as batch grows")
    ax.legend(fontsize=8)
    return fig


def draw_ranks(d):
    bars = d["bars"]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(bars) + 1), 4))
    xs, ticks, last = [], [], None
    x = -1
    for b in bars:
        x += 2 if last is not None and (b["source"], b["point"]) != last else 1
        last = (b["source"], b["point"])
        xs.append(x)
        ticks.append(f"{b['label']}\nr{b['rank']}")
    c = [b["compute_s"] for b in bars]
    w = [b["wait_s"] for b in bars]
    t = [b["transfer_s"] for b in bars]
    ax.bar(xs, c, color=COLOURS["compute"], label="compute")
    ax.bar(xs, w, bottom=c, color=COLOURS["wait"], label="wait (imbalance)")
    ax.bar(xs, t, bottom=[a + b for a, b in zip(c, w)], color=COLOURS["transfer"], label="transfer")
    ax.set_xticks(xs, ticks, rotation=90, fontsize=7)
    ax.set_ylabel("seconds over the measured steps")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("Per-rank compute, wait and transfer")
    return fig


def draw_heatmap(d):
    rows, ranks = d["rows"], d["ranks"]
    fig, ax = plt.subplots(figsize=(2.6 + 0.8 * len(ranks), min(7, 2 + 0.12 * len(rows))))
    im = ax.imshow(d["wait_us"], aspect="auto", cmap="magma_r", interpolation="nearest")
    names = [f"r{q}" + (" (straggler)" if q == d["straggler_rank"] else "") for q in ranks]
    ax.set_xticks(range(len(ranks)), names, fontsize=8)
    step = max(1, len(rows) // 24)
    ax.set_yticks(range(0, len(rows), step), [f"s{r['step']} L{r['layer']}" for r in rows[::step]],
                  fontsize=7)
    ax.set_xlabel("rank")
    ax.set_ylabel("(step, layer)")
    fig.colorbar(im, ax=ax, label="wait in all-reduces (us)")
    ax.set_title(f"Who waits: {d['label']}", fontsize=9)
    return fig


def draw_timeline(d):
    ranks = sorted({s["rank"] for s in d["segments"]})
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.7 * len(ranks)))
    for kind in ("compute", "wait", "transfer"):
        segs = [s for s in d["segments"] if s["kind"] == kind]
        named = False
        for q in ranks:
            mine = [(s["start_ms"], s["dur_ms"]) for s in segs if s["rank"] == q]
            if mine:
                ax.broken_barh(mine, (q - 0.3, 0.6), color=COLOURS[kind], label=None if named else kind)
                named = True
    for b in d["step_bounds"]:
        ax.plot([b["start_ms"]] * 2, [b["rank"] - 0.42, b["rank"] + 0.42], "k-", lw=0.8)
        ax.annotate(f"step {b['step']}", (b["start_ms"], b["rank"] + 0.34), fontsize=6,
                    xytext=(2, 0), textcoords="offset points")
    ax.set_yticks(ranks, [f"rank {q}" for q in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms on the synced clock (from the first traced step)")
    ax.set_title(f"First {d['steps']} steps: {d['label']}", fontsize=9, loc="left")
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1, 1), ncol=3, frameon=False)
    return fig


def draw_collectives(d):
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(13, 4))
    groups = {}
    for s in d["sizes"]:
        groups.setdefault((s["source"], s["kind"], s["dtype"]), []).append(s)
    several = len({g[0] for g in groups}) > 1
    for (src, kind, dtype), ss in groups.items():
        name = f"{kind} {dtype}" + (f" ({os.path.basename(os.path.dirname(src))})" if several else "")
        b = [s["bytes"] for s in ss]
        a1.plot(b, [s["time_us"] for s in ss], "o-", label=f"{name} mean")
        a1.fill_between(b, [s["p50_us"] for s in ss], [s["p99_us"] for s in ss], alpha=0.2)
        a2.plot(b, [s["busbw_GBps"] for s in ss], "o-", label=name)
        a3.plot(b, [s["skew_p95_us"] for s in ss], "k--", lw=1, label=f"{name} skew p95")
        for q in sorted({x["rank"] for x in d["rank_lag"] if x["source"] == src and x["kind"] == kind}):
            lag = [x for x in d["rank_lag"] if x["source"] == src and x["kind"] == kind and x["rank"] == q]
            a3.plot([x["bytes"] for x in lag], [x["lag_mean_us"] for x in lag], ".-", label=f"rank {q} lag")
    for a in (a1, a2, a3):
        a.set_xscale("log", base=2)
        a.set_xlabel("message size (bytes)")
        a.legend(fontsize=7)
    a1.set_yscale("log")
    a1.set_ylabel("time (us): mean, p50..p99 shaded")
    a2.set_ylabel("bus bandwidth (GB/s)")
    a3.set_ylabel("us behind the first to arrive")
    a1.set_title("Time")
    a2.set_title("Bus bandwidth")
    a3.set_title("Per-rank skew")
    return fig


def draw_serve_curve(d):
    pts = [p for p in d["points"] if p["status"] == "ok"]
    priced = any("cost_per_mtok_output_usd" in p for p in pts)
    if priced:  # a second panel: what a token costs as the load grows
        fig, (ax, cx) = plt.subplots(1, 2, figsize=(12, 4))
        draw_cost_panel(cx, pts, d["x_name"])
    else:
        fig, ax = plt.subplots(figsize=(6.5, 4))
    xs = [p["x"] for p in pts]
    ax.plot(xs, [p["total_tokens_per_s"] for p in pts], "o-", color="tab:blue", label="total tokens/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"load ({d['x_name']})")
    ax.set_ylabel("total tokens/s", color="tab:blue")
    a2 = ax.twinx()
    a2.plot(xs, [value(p["itl_p95_ms"]) for p in pts], "s--", color="tab:red", label="p95 ITL")
    a2.set_ylabel("p95 ITL (ms)", color="tab:red")
    if d["free_region_upto"] is not None and xs:
        ax.axvspan(min(xs), d["free_region_upto"], color="tab:green", alpha=0.12, label="free region")
    if d["knee_x"] is not None:
        ax.axvline(d["knee_x"], color="k", ls=":", label=f"knee ({d['knee_x']:g})")
    if d["memory_wall_x"] is not None:
        ax.axvline(d["memory_wall_x"], color="tab:purple", ls="-", lw=2,
                   label=f"memory wall ({d['memory_wall_x']:g})")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = a2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    ax.set_title("Serving: throughput and p95 ITL against load")
    return fig


def draw_cost_panel(ax, pts, x_name):
    xs = [p["x"] for p in pts]
    ax.plot(xs, [value(p["cost_per_mtok_output_usd"]) for p in pts], "o-", color="tab:orange",
            label="per million output tokens")
    ax.plot(xs, [value(p["cost_per_mtok_total_usd"]) for p in pts], "s--", color="tab:brown",
            label="per million tokens (prompt + output)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"load ({x_name})")
    ax.set_ylabel("US dollars per million tokens")
    ax.set_title("Cost per token against load")
    ax.legend(fontsize=8)


def draw_itl_cdf(d):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s in d["series"]:
        ax.step(s["itl_ms"], s["cdf"], where="post", label=s["label"])
    ax.set_xscale("log")
    ax.set_xlabel("inter-token latency (ms)")
    ax.set_ylabel("fraction of token gaps")
    ax.set_title("ITL CDF (measured requests, pooled)")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def draw_itl_time(d):
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for i, p in enumerate(d["prefill_steps"]):
        ax.axvspan(p["start_s"], p["end_s"], color="tab:orange", alpha=0.25, lw=0,
                   label="step with prefill rows" if i == 0 else None)
    ax.plot([g["t_s"] for g in d["gaps"]], [g["itl_ms"] for g in d["gaps"]], ".", ms=3, color="tab:blue",
            label="token gap")
    ax.set_xlabel("virtual clock (s)")
    ax.set_ylabel("ITL (ms)")
    ax.set_title(f"ITL over time: {d['label']}", fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    return fig


def draw_queue(d):
    fig, ax = plt.subplots(figsize=(9, 3))
    t = [s["start_s"] for s in d["steps"]]
    ax.step(t, [s["running"] for s in d["steps"]], where="post", label="running")
    ax.step(t, [s["waiting"] for s in d["steps"]], where="post", label="waiting")
    ax.set_xlabel("virtual clock (s), at each step's start")
    ax.set_ylabel("requests")
    ax.set_title(f"Queue: {d['label']}", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def draw_whatif_itl(d):
    n = len(d["panels"])
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for ax, p in zip(axes[0], d["panels"]):
        q = [x / 100 for x in p["p"]]
        ax.step(p["measured_ms"], q, where="post", color="k", lw=2, label="measured")
        for f in p["fixes"]:
            ax.step(f["itl_ms"], q, where="post", label=f["name"])
        ax.set_xscale("log")
        ax.set_xlabel("inter-token latency (ms)")
        ax.set_ylabel("fraction of token gaps")
        ax.set_title(f"point {p['point']}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("ITL, measured and with each fix")
    return fig


def draw_whatif_curve(d):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s in d["series"]:
        pts = s["points"]
        style = {"color": "k", "lw": 2, "marker": "o"} if s["name"] == "measured" else {"marker": "."}
        ax.plot([p["itl_p95_ms"] for p in pts], [p["tokens_per_s"] for p in pts], ls="-" if len(pts) > 1 else "",
                label=s["name"], **style)
    ax.set_xlabel("p95 ITL (ms)")
    ax.set_ylabel("tokens/s")
    ax.set_title("Throughput against p95 ITL, measured and with each fix")
    ax.legend(fontsize=7)
    return fig


DRAW = {k[5:]: v for k, v in globals().items() if k.startswith("draw_")}


def suffix(r, data):
    """A per-point plot's file name part: the point, and the results it is from when several."""
    if len(r.documents) == 1:
        return f"p{data['point']}"
    k = next(i for i, d in enumerate(r.documents) if d["source"] == data["source"])
    return f"s{k}p{data['point']}"


def entry(name, files=None, missing=None, point=None):
    title, what = CATALOGUE[name]
    if point is not None:
        title = f"{title}: {point['label']}"
    return {"name": name, "title": title, "what": what, "files": files or [], "missing": missing,
            "source": point["source"] if point else None, "point": point["point"] if point else None}


def per_point_data(name, r, a):
    """(point key, data) for each point the per-point plot `name` can draw."""
    if name in ("heatmap", "timeline"):
        for row, t in D.traced_points(r):
            data = D.heatmap(row, t) if name == "heatmap" else D.timeline(row, t, a.timeline_steps)
            if data:
                yield data
    else:
        for _, row in D.serve_points(r).iterrows():
            data = D.itl_time(r, row) if name == "itl_time" else D.queue(r, row)
            if data:
                yield data


def forget_previous(out):
    """Removes the files a previous index.json in `out` listed, so no stale plot stays beside."""
    index = os.path.join(out, "index.json")
    if not os.path.exists(index):
        return
    try:
        with open(index) as f:
            old = json.load(f)["plots"]
    except (OSError, ValueError, KeyError):
        return
    for p in old:
        for name in p.get("files", []):
            path = os.path.join(out, os.path.basename(name))
            if os.path.exists(path):
                os.remove(path)
    os.remove(index)


def draw_one(name, r, a):
    """The index entries of plot `name`: one per point for a per-point plot, else one."""
    if name not in PER_POINT:
        data = getattr(D, name)(r)
        return [entry(name, save(DRAW[name](data), a.out, name, data)) if data
                else entry(name, missing=D.NO_DATA[name])]
    out = []
    for data in per_point_data(name, r, a):
        if len(out) == a.max_point_plots:
            out.append(entry(name, missing=f"more points than --max-point-plots {a.max_point_plots}: "
                                           "the rest are not drawn"))
            break
        out.append(entry(name, save(DRAW[name](data), a.out, f"{name}-{suffix(r, data)}", data),
                         point=data))
    return out or [entry(name, missing=D.NO_DATA[name])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-point-plots", type=int, default=8,
                    help="per-point plots (heatmap, timeline, ITL over time, queue) for at most N points each")
    ap.add_argument("--timeline-steps", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    forget_previous(a.out)
    r = tpbench_results.load(a.results)
    plots = []
    for name in CATALOGUE:
        try:
            plots += draw_one(name, r, a)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # A field that is not as tpbench writes it (a document edited or cut by hand) costs
            # this plot alone: the report says why and draws the rest.
            plots.append(entry(name, missing=f"the results do not read as tpbench writes "
                                             f"them ({type(e).__name__}: {e})"))
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump({"plots": plots}, f, indent=1)
    drawn = sum(1 for p in plots if p["files"])
    print(f"plot.py: {drawn} plots written to {a.out} ({len(plots) - drawn} without data)")


if __name__ == "__main__":
    main()
