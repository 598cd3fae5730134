"""The numbers each plot of plot.py draws, as plain tables (no matplotlib here).

Each function takes a tpbench_results.Results and returns a dict that plot.py writes beside the
picture as PLOT.json and then draws from, and from nothing else, so the data file holds exactly
the numbers drawn. A function returns None when the results hold nothing for its plot; then
NO_DATA[name] says why. Units are those of the axes (ms, us, GB/s), named in each field.
"""
import math

NO_DATA = {
    "utilisation": "no ok fixed-batch or serve points among the inputs",
    "throughput": "no ok decode points among the inputs",
    "ranks": "no ok points with per-rank figures among the inputs",
    "roofline": "no ok points with intensity and peaks among the inputs",
    "collectives": "no `tpbench collectives` results among the inputs",
    "heatmap": "no ok point's trace is there (trace.json or traces/point-K.json; --trace-steps 0 "
               "writes none)",
    "timeline": "no ok point's trace is there (trace.json or traces/point-K.json; --trace-steps 0 "
                "writes none)",
    "serve_curve": "no `tpbench serve` results (their top-level curve) among the inputs",
    "itl_cdf": "no serve point with a requests log (requests.jsonl) among the inputs",
    "itl_time": "no serve point with a requests log (requests.jsonl) among the inputs",
    "queue": "no serve point with a step log (steps.jsonl) among the inputs",
    "whatif_itl": "no `whatif` section with an ITL (run `tpbench whatif DIR` on a decode run, "
                  "sweep or serve first)",
    "whatif_curve": "no `whatif` section with tokens/s and p95 ITL (run `tpbench whatif DIR` "
                    "first)",
}


def num(x):
    """A JSON-safe number: NaN (a null figure in the results) becomes None."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def label(row, several):
    """A point's short name: phase, batch, context or prompt, TP (and load for serve)."""
    if row["phase"] == "serve":
        s = f"serve {row.get('params.serve.load', 'x')}={num(row.get('params.serve.x')):g} tp{row['tp']}"
    else:
        size = f"ctx{int(row['context'])}" if row["phase"] == "decode" else f"S{int(row['prompt'])}"
        s = f"{row['phase'][0]} B{int(row['batch'])} {size} tp{int(row['tp'])}"
    if isinstance(row.get("inject"), str) and row["inject"]:
        s += " +inject"
    return f"[{row['source_index']}] {s}" if several else s


def ok_points(r):
    """The ok model points in numeric order (by value, not text: B16 after B4), each labelled."""
    p = r.points
    if p.empty:
        return p
    p = p[p["status"] == "ok"].copy()
    if p.empty or "mbu" not in p:
        return p.iloc[0:0]
    sources = [d["source"] for d in r.documents]
    p["source_index"] = [sources.index(s) for s in p["source"]]
    for c in ("context", "prompt", "params.serve.x", "inject"):
        if c not in p:
            p[c] = 0 if c != "inject" else ""
    p["params.serve.x"] = p["params.serve.x"].fillna(0)
    p = p.sort_values(["source_index", "phase", "tp", "context", "prompt", "batch",
                       "params.serve.x", "point"], kind="stable")
    several = r.points["source"].nunique() > 1
    p["label"] = [label(row, several) for _, row in p.iterrows()]
    return p


def key(row):
    return {"source": row["source"], "point": int(row["point"]), "label": row["label"]}


def utilisation(r):
    pts = ok_points(r)
    if pts.empty:
        return None
    cols = ["occupancy_sampled", "mbu", "mfu", "mfu_ceiling"]
    return {"bars": cols,
            "points": [{**key(row), **{c: num(row.get(c)) for c in cols}} for _, row in pts.iterrows()]}


def throughput(r):
    pts = ok_points(r)
    dec = pts[pts["phase"] == "decode"] if not pts.empty else pts
    if dec.empty:
        return None
    lines = []
    for (_, tp, ctx), g in dec.groupby(["source_index", "tp", "context"], sort=True):
        g = g.sort_values("batch")
        lines.append({"source": g["source"].iloc[0], "tp": int(tp), "context": int(ctx), "points": [
            {**key(row), "batch": int(row["batch"]), "p95_step_ms": num(row["step_time_s.p95"]) * 1e3,
             "tokens_per_s": num(row["tokens_per_s"])} for _, row in g.iterrows()]})
    return {"lines": lines}


def ranks(r):
    pts = ok_points(r)
    if pts.empty or r.ranks.empty:
        return None
    out = []
    for _, row in pts.iterrows():
        rk = r.ranks[(r.ranks["source"] == row["source"]) & (r.ranks["point"] == row["point"])]
        for _, x in rk.sort_values("rank").iterrows():
            out.append({**key(row), "rank": int(x["rank"]), "compute_s": num(x["compute_s"]),
                        "wait_s": num(x["wait_s"]), "transfer_s": num(x["transfer_s"])})
    return {"bars": out} if out else None


def roofline(r):
    pts = ok_points(r)
    if pts.empty:
        return None
    pts = pts[pts["intensity"].notna() & pts["mfu"].notna() & pts["peaks.flops"].notna()
              & pts["peaks.bw"].notna() & (pts["intensity"] > 0) & (pts["peaks.bw"] > 0)]
    if pts.empty:
        return None
    points = [{**key(row), "phase": row["phase"], "intensity": num(row["intensity"]),
               "achieved_flops_per_s": num(row["mfu"] * row["peaks.flops"]), "mfu": num(row["mfu"]),
               "mfu_ceiling": num(row["mfu_ceiling"]),
               "ceiling_flops_per_s": num(row["mfu_ceiling"] * row["peaks.flops"]),
               "peak_flops": num(row["peaks.flops"]), "peak_bw": num(row["peaks.bw"])}
              for _, row in pts.iterrows()]
    roofs = []
    for (flops, bw), g in pts.groupby(["peaks.flops", "peaks.bw"], sort=True):
        ridge = flops / bw
        lo = min(g["intensity"].min(), ridge) / 4
        hi = max(g["intensity"].max(), ridge) * 4
        roofs.append({"peak_flops": flops, "peak_bw": bw, "ridge_intensity": ridge,
                      "line": [[lo, lo * bw], [ridge, flops], [hi, flops]]})
    return {"roofs": roofs, "points": points}


def collectives(r):
    c = r.collectives
    if c.empty:
        return None
    c = c[c["status"] == "ok"].sort_values(["source", "kind", "dtype", "bytes"])
    if c.empty:
        return None
    sizes = [{"source": row["source"], "kind": row["kind"], "dtype": row["dtype"],
              "bytes": int(row["bytes"]), "time_us": num(row["time_s.mean"]) * 1e6,
              "p50_us": num(row["time_s.p50"]) * 1e6, "p99_us": num(row["time_s.p99"]) * 1e6,
              "algbw_GBps": num(row["algbw_GBps"]), "busbw_GBps": num(row["busbw_GBps"]),
              "skew_p95_us": num(row["collectives.skew_s.p95"]) * 1e6}
             for _, row in c.iterrows()]
    lags = []
    cr = r.collective_ranks
    if not cr.empty:
        ok = set(zip(c["source"], c["point"]))
        for _, row in cr.sort_values(["source", "kind", "bytes", "rank"]).iterrows():
            if (row["source"], row["point"]) in ok:
                lags.append({"source": row["source"], "kind": row["kind"], "bytes": int(row["bytes"]),
                             "rank": int(row["rank"]), "lag_mean_us": num(row["arrival_lag_s.mean"]) * 1e6})
    return {"sizes": sizes, "rank_lag": lags}


def traced_points(r):
    """The ok points with a trace on disk, in plot order, each with its trace."""
    pts = ok_points(r)
    out = []
    for _, row in pts.iterrows():
        if isinstance(row.get("trace"), str):
            t = r.trace(row["source"], int(row["point"]))
            if t is not None:
                out.append((row, t))
    return out


def collective_events(trace):
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("tid") == 2]


def heatmap(row, trace):
    """Wait (us) summed over each (step, layer)'s all-reduces, per rank (pid)."""
    cells = {}
    ranks = set()
    for e in collective_events(trace):
        a = e.get("args", {})
        k = (a["step"], a["layer"])
        ranks.add(e["pid"])
        cells.setdefault(k, {})
        cells[k][e["pid"]] = cells[k].get(e["pid"], 0.0) + a["wait_us"]
    if not cells:
        return None
    ranks = sorted(ranks)
    rows = sorted(cells)
    strag = row.get("straggler.rank")
    return {**key(row), "straggler_rank": None if strag is None or math.isnan(strag) else int(strag),
            "steps_written": trace.get("metadata", {}).get("steps_written"),
            "ranks": ranks, "rows": [{"step": s, "layer": l} for s, l in rows],
            "wait_us": [[cells[k].get(q, 0.0) for q in ranks] for k in rows]}


def timeline(row, trace, steps=3):
    """The first `steps` steps of each rank: compute segments, and each all-reduce split into
    its wait (from its enter) and its transfer (up to its exit), in ms from the trace's origin."""
    segs, bounds = [], []
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        step = a.get("step", int(e["name"].split()[-1]) if e.get("tid") == 0 else None)
        if step is None or step >= steps:
            continue
        t0, d = e["ts"] / 1e3, e["dur"] / 1e3
        if e["tid"] == 0:
            bounds.append({"rank": e["pid"], "step": step, "start_ms": t0, "dur_ms": d})
        elif e["tid"] == 1:
            segs.append({"rank": e["pid"], "kind": "compute", "op": e["name"], "step": step,
                         "layer": a.get("layer"), "start_ms": t0, "dur_ms": d})
        elif e["tid"] == 2:
            w, x = a["wait_us"] / 1e3, a["transfer_us"] / 1e3
            base = {"rank": e["pid"], "op": e["name"], "step": step, "layer": a.get("layer")}
            if w > 0:
                segs.append({**base, "kind": "wait", "start_ms": t0, "dur_ms": w})
            if x > 0:
                segs.append({**base, "kind": "transfer", "start_ms": t0 + d - x, "dur_ms": x})
    if not segs:
        return None
    return {**key(row), "steps": steps, "segments": segs,
            "step_bounds": sorted(bounds, key=lambda b: (b["rank"], b["step"]))}


def serve_curve(r):
    if not r.curves:
        return None
    source, cv = next(iter(r.curves.items()))
    pts = [{"x": num(p["x"]), "total_tokens_per_s": num(p.get("total_tokens_per_s")),
            "itl_p95_ms": None if p.get("itl_p95_s") is None else p["itl_p95_s"] * 1e3,
            "status": p.get("status")} for p in cv.get("points", [])]
    # Results 1.25.0 with a price: each load's cost per million tokens (USD), drawn only then.
    if any(p.get("cost_per_mtok") for p in cv.get("points", [])):
        for d, p in zip(pts, cv.get("points", [])):
            cost = p.get("cost_per_mtok") or {}
            d["cost_per_mtok_output_usd"] = num(cost.get("output_usd"))
            d["cost_per_mtok_total_usd"] = num(cost.get("total_usd"))
    free, knee, wall = cv.get("free_region") or {}, cv.get("knee") or {}, cv.get("memory_wall") or {}
    return {"source": source, "x_name": cv.get("x"), "points": pts,
            "free_region_upto": free.get("upto"), "knee_x": knee.get("x"),
            "memory_wall_x": wall.get("x"), "memory_wall_reason": wall.get("reason")}


def serve_points(r):
    pts = ok_points(r)
    return pts[pts["phase"] == "serve"] if not pts.empty else pts


def token_gaps(r, row):
    """Every gap between consecutive tokens of the point's measured requests: (end time, gap)."""
    q = r.requests
    if q.empty:
        return None
    q = q[(q["source"] == row["source"]) & (q["point"] == row["point"]) & ~q["warmup"] & ~q["rejected"]]
    if q.empty:
        return None
    out = []
    for _, x in q.iterrows():
        t = x["token_s"]
        out += [(b, b - a, int(x["id"])) for a, b in zip(t, t[1:])]
    return sorted(out)


def itl_cdf(r):
    series = []
    for _, row in serve_points(r).iterrows():
        g = token_gaps(r, row)
        if g:
            v = sorted(x[1] * 1e3 for x in g)
            series.append({**key(row), "itl_ms": v, "cdf": [(i + 1) / len(v) for i in range(len(v))]})
    return {"series": series} if series else None


def whatif_rows(r):
    """Each counterfactual of each input's whatif section, with its source."""
    for d in r.documents:
        for c in (d["doc"].get("whatif") or {}).get("counterfactuals", []):
            yield d["source"], c


def whatif_itl(r, top=3):
    """Per point (the first 4), the measured ITL quantiles and those of its `top` best fixes."""
    panels = {}
    for source, c in whatif_rows(r):
        cdf = c.get("itl_cdf")
        k = (source, c["point"])
        if not cdf or (k not in panels and len(panels) == 4):
            continue
        p = panels.setdefault(k, {"source": source, "point": c["point"], "p": cdf["p"],
                                  "measured_ms": [x * 1e3 for x in cdf["measured"]], "fixes": []})
        if len(p["fixes"]) < top:  # the section lists each point's fixes best first
            p["fixes"].append({"name": c["name"], "itl_ms": [x * 1e3 for x in cdf["counterfactual"]]})
    return {"panels": list(panels.values())} if panels else None


def whatif_curve(r):
    """tokens/s against p95 ITL for every point, as measured and under each fix."""
    series = {}
    for source, c in whatif_rows(r):
        m = c["delta"]["measured"]
        if c["tokens_per_s"] is None or c["itl_p95_s"] is None or m.get("itl_p95_s") is None:
            continue
        series.setdefault("measured", {})[(source, c["point"])] = (m["itl_p95_s"] * 1e3,
                                                                   m["tokens_per_s"])
        series.setdefault(c["name"], {})[(source, c["point"])] = (c["itl_p95_s"] * 1e3,
                                                                  c["tokens_per_s"])
    out = [{"name": n, "points": [{"source": k[0], "point": k[1], "itl_p95_ms": v[0],
                                   "tokens_per_s": v[1]} for k, v in sorted(pts.items())]}
           for n, pts in series.items()]
    return {"series": out} if out else None


def itl_time(r, row):
    g = token_gaps(r, row)
    if not g:
        return None
    s = r.serve_steps
    pre = [] if s.empty else s[(s["source"] == row["source"]) & (s["point"] == row["point"])
                              & (s["prefill_tokens"] > 0)]
    return {**key(row), "gaps": [{"t_s": t, "itl_ms": d * 1e3, "request": i} for t, d, i in g],
            "prefill_steps": [{"start_s": x["t_s"] - x["duration_s"], "end_s": x["t_s"],
                               "prefill_tokens": int(x["prefill_tokens"])} for _, x in pre.iterrows()]
            if len(pre) else []}


def queue(r, row):
    s = r.serve_steps
    if s.empty:
        return None
    s = s[(s["source"] == row["source"]) & (s["point"] == row["point"])].sort_values("step")
    if s.empty:
        return None
    # The queue as the step was planned, so at the step's start (t_s is its end).
    return {**key(row), "steps": [{"step": int(x["step"]), "start_s": x["t_s"] - x["duration_s"],
                                   "running": int(x["running"]), "waiting": int(x["waiting"])}
                                  for _, x in s.iterrows()]}
