#!/usr/bin/env python3
"""`tpbench report`'s plots, results/tpbench_results.py and `tpbench export`, on 2 ranks of the
CPU backend (tiny model, one layer, few steps):
- report on a sweep (decode and prefill points), a collectives sweep, a serve run over two
  loads and a run with rank 1 slowed 1.5x: each writes report.md and its plots; every plot in
  plots/index.json is drawn (PNG, SVG and its data file) or says why it has no data, and
  report.md links each one with its line;
- every plot's data file holds the numbers of the results it came from, recomputed here from
  results.json, the trace and the serve logs with plain json (not with plot.py's code);
- the straggler heatmap of the slowed run: rank 1 is the straggler and rank 0 does the waiting;
- tpbench_results.load() reads every kind (run, sweep, collectives, serve) into its tables;
- export --format openmetrics parses with prometheus_client (one tpbench_mbu sample per rank
  per point, equal to ranks[].mbu; a null figure is omitted, not 0) and --format csv has one row
  per rank; bad input exits 2 naming the field;
- without pandas report.md still comes, saying what is missing.
Needs matplotlib, pandas and prometheus_client (Debian's python3-*): if this interpreter lacks
them it re-runs itself with /usr/bin/python3."""
import csv
import io
import json
import math
import os
import subprocess
import sys

NEEDS = ("matplotlib", "pandas", "prometheus_client")


def have_modules(py):
    code = "import " + ", ".join(NEEDS)
    return subprocess.run([py, "-c", code], capture_output=True).returncode == 0


if not have_modules(sys.executable) and os.path.exists("/usr/bin/python3") \
        and sys.executable != "/usr/bin/python3" and have_modules("/usr/bin/python3"):
    os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)

from tpbtest import Ctx  # noqa: E402

BASE = ["--model", "tiny", "--layers", "1", "--tp", "2"]


def close(a, b, rel=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def run_all(c):
    """The four kinds of results; returns {name: results dir}."""
    out = {}
    cfg = os.path.join(c.work, "sweep.json")
    with open(cfg, "w") as f:
        json.dump({"context": 128, "steps": 5, "warmup": 1, "points": [
            {"phase": "decode", "batch": 4}, {"phase": "decode", "batch": 1},
            {"phase": "prefill", "batch": 1, "prompt": 64, "steps": 3}]}, f)
    out["sweep"] = c.out("sweep")
    c.mpi(2, ["sweep", "--config", cfg, "--out", out["sweep"]] + BASE)
    out["straggler"] = c.out("straggler")
    c.mpi(2, ["run", "--phase", "decode", "--batch", "4", "--context", "128", "--steps", "10",
              "--inject", "rank=1:slowdown=1.5", "--out", out["straggler"]] + BASE)
    out["coll"] = c.out("coll")
    c.mpi(2, ["collectives", "-b", "1K", "-e", "64K", "-f", "4", "-w", "2", "-n", "10",
              "--out", out["coll"]])
    out["serve"] = c.out("serve")
    c.mpi(2, ["serve", "--model", "tiny", "--layers", "1", "--seed", "1", "--requests", "6",
              "--concurrency", "1,4", "--prompt-len", "32", "--output-len", "8",
              "--price", "cpu=0.5", "--out", out["serve"]])  # real ranks priced: the cost panel
    for name in ("straggler", "serve"):  # their whatif sections, for the whatif plots
        p = subprocess.run([c.tpbench, "whatif", out[name]], capture_output=True, text=True,
                           env=c.env, timeout=120)
        c.check(p.returncode == 0, f"whatif {name} -> rc {p.returncode}: {p.stderr.strip()}")
    return out


def results(d):
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f)


def jsonl(d, name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []


def trace_of(d, p):
    with open(os.path.join(d, p["trace"])) as f:
        return json.load(f)


def data_of(rep, name):
    with open(os.path.join(rep, "plots", name + ".json")) as f:
        return json.load(f)


def check_model_plots(c, d, res, rep, drawn):
    pts = res["points"]
    ok = [(i, p) for i, p in enumerate(pts) if p["status"] == "ok" and "collectives" in p and "mbu" in p["metrics"]]
    if not ok:
        return
    u = data_of(rep, "utilisation")["points"]
    c.check(sorted(x["point"] for x in u) == sorted(i for i, _ in ok), f"{d}: utilisation has every ok point")
    for x in u:
        m = pts[x["point"]]["metrics"]
        c.check(all(close(x[k], m[k]) for k in ("occupancy_sampled", "mbu", "mfu", "mfu_ceiling")),
                f"{d}: utilisation point {x['point']} = its metrics")
    dec = [x for x in u if pts[x["point"]]["params"]["phase"] == "decode"]
    batches = [pts[x["point"]]["params"]["batch"] for x in dec]
    c.check(batches == sorted(batches), f"{d}: points in numeric order ({batches})")
    rf = data_of(rep, "roofline")
    for x in rf["points"]:
        m = pts[x["point"]]["metrics"]
        c.check(close(x["intensity"], m["intensity"]) and close(x["achieved_flops_per_s"], m["mfu"] * m["peaks"]["flops"])
                and close(x["ceiling_flops_per_s"], m["mfu_ceiling"] * m["peaks"]["flops"])
                and x["phase"] == pts[x["point"]]["params"]["phase"],
                f"{d}: roofline point {x['point']} at (intensity, mfu x peak), ceiling mfu_ceiling x peak")
    peaks = {(p["metrics"]["peaks"]["flops"], p["metrics"]["peaks"]["bw"], p["metrics"]["ridge"]) for _, p in ok}
    c.check(len(rf["roofs"]) == len(peaks) and all(
        any(close(r["peak_flops"], f) and close(r["peak_bw"], b) and close(r["ridge_intensity"], g) for f, b, g in peaks)
        for r in rf["roofs"]), f"{d}: the roofs and ridge are the points' peaks")
    for x in data_of(rep, "ranks")["bars"]:
        r = next(r for r in pts[x["point"]]["ranks"] if r["rank"] == x["rank"])
        c.check(all(close(x[k], r[k]) for k in ("compute_s", "wait_s", "transfer_s")),
                f"{d}: ranks bar {x['point']}/r{x['rank']} = ranks[]")
    if "throughput" in drawn:
        for line in data_of(rep, "throughput")["lines"]:
            for x in line["points"]:
                m = pts[x["point"]]["metrics"]
                c.check(close(x["p95_step_ms"], m["step_time_s"]["p95"] * 1e3) and close(x["tokens_per_s"], m["tokens_per_s"]),
                        f"{d}: throughput point {x['point']} = p95 step time, tokens/s")
    for i, p in ok:
        if p.get("trace"):
            check_trace_plots(c, d, i, p, trace_of(d, p), rep, drawn)


def check_trace_plots(c, d, i, p, trace, rep, drawn):
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    coll = [e for e in ev if e["tid"] == 2]
    if f"heatmap-p{i}" in drawn:
        h = data_of(rep, f"heatmap-p{i}")
        want = {}
        for e in coll:
            k = (e["args"]["step"], e["args"]["layer"], e["pid"])
            want[k] = want.get(k, 0.0) + e["args"]["wait_us"]
        got = {(row["step"], row["layer"], q): h["wait_us"][j][h["ranks"].index(q)]
               for j, row in enumerate(h["rows"]) for q in h["ranks"]}
        c.check(set(got) == set(want) and all(close(got[k], want[k]) for k in want),
                f"{d} point {i}: heatmap cells = the trace's wait_us per (step, layer, rank)")
        if trace["metadata"]["steps_written"] == p["params"]["steps"]:
            for r in p["ranks"]:
                col = sum(row[h["ranks"].index(r["rank"])] for row in h["wait_us"])
                c.check(close(col * 1e-6, r["wait_s"], rel=1e-6),
                        f"{d} point {i}: heatmap column r{r['rank']} sums to ranks[].wait_s ({col * 1e-6:.6g})")
    if f"timeline-p{i}" in drawn:
        t = data_of(rep, f"timeline-p{i}")
        n = t["steps"]
        for kind, tid, arg in (("compute", 1, None), ("wait", 2, "wait_us"), ("transfer", 2, "transfer_us")):
            for q in sorted({e["pid"] for e in ev}):
                src = [e for e in ev if e["tid"] == tid and e["pid"] == q and e["args"]["step"] < n]
                want = sum((e["dur"] if arg is None else e["args"][arg]) / 1e3 for e in src)
                got = sum(s["dur_ms"] for s in t["segments"] if s["kind"] == kind and s["rank"] == q)
                c.check(close(got, want, rel=1e-9), f"{d} point {i}: timeline {kind} of rank {q} = the trace's "
                        f"first {n} steps ({got:.3f} ms)")


def check_collectives_plot(c, d, res, rep):
    x = data_of(rep, "collectives")
    pts = [p for p in res["points"] if p["status"] == "ok"]
    c.check(len(x["sizes"]) == len(pts), f"{d}: one collectives row per size ({len(pts)})")
    for s, p in zip(x["sizes"], sorted(pts, key=lambda p: p["params"]["bytes"])):
        m = p["metrics"]
        c.check(s["bytes"] == p["params"]["bytes"] and close(s["time_us"], m["time_s"]["mean"] * 1e6)
                and close(s["busbw_GBps"], m["busbw_GBps"]) and close(s["p99_us"], m["time_s"]["p99"] * 1e6)
                and close(s["skew_p95_us"], p["collectives"]["skew_s"]["p95"] * 1e6),
                f"{d}: collectives size {s['bytes']} = its time, busbw, skew")
    lags = {(l["bytes"], l["rank"]): l["lag_mean_us"] for l in x["rank_lag"]}
    want = {(p["params"]["bytes"], r["rank"]): r["arrival_lag_s"]["mean"] * 1e6 for p in pts for r in p["ranks"]}
    c.check(set(lags) == set(want) and all(close(lags[k], want[k]) for k in want),
            f"{d}: per-rank lag = ranks[].arrival_lag_s.mean")


def gaps(reqs, i):
    out = []
    for r in reqs:
        if r["point"] == i and not r["warmup"] and not r["rejected"]:
            out += [b - a for a, b in zip(r["token_s"], r["token_s"][1:])]
    return sorted(out)


def percentile(v, q):
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def check_serve_plots(c, d, res, rep, drawn):
    cv = data_of(rep, "serve_curve")
    want = res["curve"]
    c.check([p["x"] for p in cv["points"]] == [p["x"] for p in want["points"]]
            and all(close(a["total_tokens_per_s"], b["total_tokens_per_s"]) and close(a["itl_p95_ms"], b["itl_p95_s"] * 1e3)
                    for a, b in zip(cv["points"], want["points"]))
            and cv["knee_x"] == (want["knee"] or {}).get("x")
            and cv["free_region_upto"] == want["free_region"]["upto"]
            and cv["memory_wall_x"] == (want["memory_wall"] or {}).get("x"),
            f"{d}: the curve plot = results' curve (knee {cv['knee_x']}, free up to {cv['free_region_upto']})")
    # 1.25.0: priced, the second panel draws each load's cost per million tokens, the results'.
    c.check(all(b.get("cost_per_mtok") and close(a.get("cost_per_mtok_output_usd"), b["cost_per_mtok"]["output_usd"])
                and close(a.get("cost_per_mtok_total_usd"), b["cost_per_mtok"]["total_usd"])
                for a, b in zip(cv["points"], want["points"])),
            f"{d}: the curve plot's cost panel = results' curve cost_per_mtok")
    reqs, steps = jsonl(d, "requests.jsonl"), jsonl(d, "steps.jsonl")
    # The whatif ITL plot's measured line is the requests log's ITL, and its points are the
    # whatif section's.
    for panel in data_of(rep, "whatif_itl")["panels"]:
        g = gaps(reqs, panel["point"])
        c.check(all(close(panel["measured_ms"][k], percentile(g, q) * 1e3)
                    for k, q in enumerate(panel["p"])),
                f"{d} point {panel['point']}: the whatif ITL plot's measured line = the requests "
                f"log's ITL quantiles")
    wcurve = {s["name"]: s["points"] for s in data_of(rep, "whatif_curve")["series"]}
    for x in res["whatif"]["counterfactuals"]:
        if x["tokens_per_s"] is not None:
            pt = [p for p in wcurve[x["name"]] if p["point"] == x["point"]]
            c.check(len(pt) == 1 and close(pt[0]["tokens_per_s"], x["tokens_per_s"])
                    and close(pt[0]["itl_p95_ms"], x["itl_p95_s"] * 1e3),
                    f"{d}: the whatif curve's {x['name']} point {x['point']} = the whatif section's")
    cdf = data_of(rep, "itl_cdf")["series"]
    for s in cdf:
        g = gaps(reqs, s["point"])
        itl = res["points"][s["point"]]["metrics"]["itl_s"]
        c.check(len(g) == len(s["itl_ms"]) and all(close(a, b * 1e3) for a, b in zip(s["itl_ms"], g))
                and close(percentile(g, 50), itl["p50"]) and close(percentile(g, 99), itl["p99"]),
                f"{d} point {s['point']}: ITL CDF = the requests log's token gaps (p50, p99 = metrics.itl_s)")
    for i, p in enumerate(res["points"]):
        mine = [s for s in steps if s["point"] == i]
        if f"itl_time-p{i}" in drawn:
            t = data_of(rep, f"itl_time-p{i}")
            pre = [s for s in mine if s["prefill_tokens"] > 0]
            c.check(len(t["gaps"]) == len(gaps(reqs, i)) and len(t["prefill_steps"]) == len(pre)
                    and all(close(a["end_s"], b["t_s"]) for a, b in zip(t["prefill_steps"], pre)),
                    f"{d} point {i}: ITL over time has every gap and every prefill step ({len(pre)})")
        if f"queue-p{i}" in drawn:
            q = data_of(rep, f"queue-p{i}")["steps"]
            c.check([(s["running"], s["waiting"]) for s in q] == [(s["running"], s["waiting"]) for s in mine]
                    and all(close(a["start_s"], b["t_s"] - b["duration_s"]) for a, b in zip(q, mine)),
                    f"{d} point {i}: queue plot = steps.jsonl running/waiting at each step's start")


def report(c, name, d):
    rep = c.out("report-" + name)
    rc, stdout, stderr = c.mpi(1, ["report", d, "--out", rep])
    md = open(os.path.join(rep, "report.md")).read()
    with open(os.path.join(rep, "plots", "index.json")) as f:
        index = json.load(f)["plots"]
    drawn = set()
    for p in index:
        if p["files"]:
            stem = p["files"][0][:-4]
            drawn.add(stem)
            c.check([os.path.exists(os.path.join(rep, "plots", f)) and os.path.getsize(os.path.join(rep, "plots", f)) > 0
                     for f in p["files"]] == [True] * 3 and p["files"][0].endswith(".png"),
                    f"{name}: {stem} has its png, svg and json")
            c.check(f"**{p['title']}**: {p['what']}" in md and f"](plots/{p['files'][0]})" in md,
                    f"{name}: report.md links {stem} with its line")
        else:
            c.check(bool(p["missing"]) and f"**{p['title']}**: no data: {p['missing']}" in md,
                    f"{name}: report.md says {p['name']} has no data ({p['missing']})")
    return rep, drawn


def check_reports(c, out):
    expect = {"sweep": {"utilisation", "roofline", "throughput", "ranks", "heatmap-p0", "timeline-p0"},
              "straggler": {"utilisation", "roofline", "ranks", "heatmap-p0", "timeline-p0",
                            "whatif_itl", "whatif_curve"},
              "coll": {"collectives"},
              "serve": {"serve_curve", "itl_cdf", "itl_time-p0", "queue-p1", "roofline", "heatmap-p1",
                        "whatif_itl", "whatif_curve"}}
    for name, d in out.items():
        rep, drawn = report(c, name, d)
        c.check(expect[name] <= drawn, f"{name}: drew {sorted(expect[name] - drawn) or 'all expected'} "
                f"({len(drawn)} plots)")
        res = results(d)
        if name == "coll":
            check_collectives_plot(c, d, res, rep)
            continue
        check_model_plots(c, d, res, rep, drawn)
        if name == "serve":
            check_serve_plots(c, d, res, rep, drawn)
        if name == "straggler":
            # Who waits more is timing (a loaded machine time-slices the ranks); the heatmap must
            # say what the results say, and name their straggler.
            h, p = data_of(rep, "heatmap-p0"), res["points"][0]
            col = [sum(row[j] for row in h["wait_us"]) for j in range(len(h["ranks"]))]
            waits = [r["wait_s"] for r in sorted(p["ranks"], key=lambda r: r["rank"])]
            c.check(h["straggler_rank"] == p["straggler"]["rank"] == 1
                    and (col[0] > col[1]) == (waits[0] > waits[1]),
                    f"straggler: rank 1 is the straggler, named in the heatmap; wait per rank "
                    f"{col[0]:.0f} vs {col[1]:.0f} us as in ranks[]")


def check_frames(c, out):
    sys.path.insert(0, os.path.join(c.source, "results"))
    import tpbench_results as t
    for name, d in out.items():
        res = results(d)
        r = t.load(d)
        model = [p for p in res["points"] if "kind" not in p["params"]]
        coll = [p for p in res["points"] if "kind" in p["params"]]
        steps = sum(len(p.get("samples", {}).get("step_time_s", [])) for p in model)
        ranks = sum(len(p.get("ranks", [])) for p in model)
        c.check(len(r.points) == len(model) and len(r.ranks) == ranks and len(r.steps) == steps
                and len(r.collectives) == len(coll), f"{name}: load() tables {r.points.shape} {r.ranks.shape} "
                f"{r.steps.shape} {r.collectives.shape}")
        if model:
            ok = r.points[r.points["status"] == "ok"]
            c.check(all(close(a, res["points"][i]["metrics"]["mbu"]) for a, i in zip(ok["mbu"], ok["point"])),
                    f"{name}: points.mbu = metrics.mbu")
        if name == "serve":
            c.check(len(r.requests) == len(jsonl(d, "requests.jsonl")) and len(r.serve_steps) == len(jsonl(d, "steps.jsonl"))
                    and len(r.curve) == len(res["curve"]["points"]),
                    f"serve: requests {r.requests.shape}, serve_steps {r.serve_steps.shape}, curve {r.curve.shape}")
            worst = [w for p in res["points"] for w in p["metrics"]["itl_attribution"]["worst"]]
            c.check(len(r.late_tokens) == len(worst) > 0 and
                    list(r.late_tokens["gap_s"]) == [w["gap_s"] for w in worst],
                    f"serve: late_tokens holds every point's worst gaps ({r.late_tokens.shape})")
    golden = os.path.join(c.source, "tests", "golden")
    for g in sorted(os.listdir(golden)):
        if g.startswith("results_") and g.endswith(".json"):
            doc = json.load(open(os.path.join(golden, g)))
            r = t.load(os.path.join(golden, g))
            c.check(len(r.points) + len(r.collectives) == len(doc["points"]), f"load() reads tests/golden/{g}")
    r = t.load(list(out.values()))
    c.check(r.points["source"].nunique() == 3 and r.collectives["source"].nunique() == 1,
            "load() over a list of results keeps each row's source")


def export(c, args, expect_rc=0):
    p = subprocess.run([c.tpbench, "export"] + args, capture_output=True, text=True, env=c.env)
    c.check(p.returncode == expect_rc, f"export {' '.join(args)[-80:]}: rc {p.returncode} {p.stderr.strip()[:200]}")
    return p


def check_export(c, out):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
    from prometheus_client.parser import text_string_to_metric_families
    dirs = [out["sweep"], out["straggler"], out["serve"], out["coll"]]
    text = export(c, ["--format", "openmetrics"] + dirs).stdout
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for want in ("tpbench_mbu", "tpbench_mfu", "tpbench_mfu_ceiling", "tpbench_occupancy", "tpbench_busy_fraction",
                 "tpbench_wait_fraction", "tpbench_step_seconds", "tpbench_tokens_per_second"):
        c.check(want in fams and fams[want].documentation and fams[want].type in ("gauge", "summary"),
                f"export: {want} with HELP and TYPE")
    mbu = {(s.labels["results"], int(s.labels["point"]), int(s.labels["rank"])): s for s in fams["tpbench_mbu"].samples}
    want = {}
    for d in dirs[:3]:
        for i, p in enumerate(results(d)["points"]):
            if p["status"] == "ok":
                for r in p["ranks"]:
                    want[(d, i, r["rank"])] = (r, p["params"])
    c.check(set(mbu) == set(want), f"export: one tpbench_mbu sample per rank per point ({len(mbu)})")
    c.check(all(close(mbu[k].value, r["mbu"]) and mbu[k].labels["host"] == r["host"]
                and mbu[k].labels["model"] == par["model"] and mbu[k].labels["phase"] == par["phase"]
                and mbu[k].labels["batch"] == str(par["batch"]) and mbu[k].labels["tp"] == str(par["tp"])
                and mbu[k].labels["topology"] == par["topology"]
                for k, (r, par) in want.items() if k in mbu), "export: each sample = ranks[].mbu, labelled model, "
            "phase, batch, tp, topology, rank, host")
    serve = [p for p in results(out["serve"])["points"] if p["status"] == "ok"]
    for fam, key in (("tpbench_tpot_seconds", "tpot_s"), ("tpbench_e2el_seconds", "e2el_s")):
        n = {s.labels["point"]: s.value for s in fams[fam].samples if s.name == fam + "_count"} if fam in fams else {}
        c.check(len(n) == len(serve) and all(n[str(i)] == p["metrics"][key]["n"] for i, p in enumerate(serve)),
                f"export: {fam} per serve point, its _count = metrics.{key}.n ({n})")
    load = serve[0]["params"]["serve"]["load"]
    c.check(all(load in s.labels for s in fams["tpbench_tokens_per_second"].samples
                if s.labels["results"] == out["serve"]), f"export: serve samples labelled by their load ({load})")
    cost = {s.labels["point"]: s.value for s in fams.get("tpbench_cost_usd_per_million_tokens", []).samples} \
        if "tpbench_cost_usd_per_million_tokens" in fams else {}
    c.check(len(cost) == len(serve) and all(close(cost[str(i)], p["metrics"]["cost_per_mtok"]["total_usd"])
                                            for i, p in enumerate(serve)),
            f"export: tpbench_cost_usd_per_million_tokens per priced serve point = cost_per_mtok.total_usd ({cost})")
    q = {s.labels.get("quantile") for s in fams["tpbench_step_seconds"].samples}
    c.check({"0.5", "0.95", "0.99"} <= q, f"export: step seconds by quantile {sorted(x for x in q if x)}")
    try:
        n = len(list(om_parse(text)))
        c.check(n == len(fams), f"export: the OpenMetrics parser reads it too ({n} families)")
    except Exception as e:  # noqa: BLE001
        c.fail(f"export: the OpenMetrics parser refuses it: {e}")

    # A null figure is no sample (not 0): null one rank's mbu in a copy of the run.
    doc = results(out["straggler"])
    doc["points"][0]["ranks"][1]["mbu"] = None
    nulled = os.path.join(c.work, "nulled.json")
    with open(nulled, "w") as f:
        json.dump(doc, f)
    fams = {f.name: f for f in text_string_to_metric_families(export(c, [nulled]).stdout)}
    ranks = [s.labels["rank"] for s in fams["tpbench_mbu"].samples]
    c.check(ranks == ["0"], f"export: a null mbu is omitted ({ranks})")

    rows = list(csv.DictReader(io.StringIO(export(c, ["--format", "csv", out["sweep"], out["straggler"]]).stdout)))
    want = [(d, i, r) for d in (out["sweep"], out["straggler"]) for i, p in enumerate(results(d)["points"])
            if p["status"] == "ok" for r in p["ranks"]]
    c.check(len(rows) == len(want) and all(close(float(x["mbu"]), r["mbu"]) and x["rank"] == str(r["rank"])
                                           for x, (_, _, r) in zip(rows, want)),
            f"export csv: one row per rank per point, mbu = ranks[].mbu ({len(rows)} rows)")
    c.check(all(x["step_seconds_q0.95"] for x in rows), "export csv: the point's p95 on each rank's row")
    for args, field in ((["--format", "xml", out["sweep"]], "--format"), ([c.out("missing")], "export")):
        p = export(c, args, expect_rc=2)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        c.check(len(lines) == 1 and field in lines[0] and not p.stdout, f"export bad input: one line naming {field}: "
                f"{lines[:1]}")


def check_without_pandas(c, out):
    hide = os.path.join(c.work, "nopandas")
    os.makedirs(hide, exist_ok=True)
    with open(os.path.join(hide, "pandas.py"), "w") as f:
        f.write("raise ImportError('hidden by test_plots.py')\n")
    py = os.path.join(hide, "python3")
    with open(py, "w") as f:
        f.write(f"#!/bin/sh\nPYTHONPATH={hide} exec {sys.executable} \"$@\"\n")
    os.chmod(py, 0o755)
    rep = c.out("report-nopandas")
    env = dict(c.env, TPB_PLOT_PYTHON=py)
    p = subprocess.run([c.tpbench, "report", out["straggler"], "--out", rep], capture_output=True, text=True, env=env)
    md = open(os.path.join(rep, "report.md")).read() if os.path.exists(os.path.join(rep, "report.md")) else ""
    c.check(p.returncode == 0 and "No plots: no python3 here imports pandas" in md and "![" not in md
            and "pandas" in p.stdout, f"without pandas: report.md, saying what is missing ({p.stdout.strip()[-120:]})")


def main():
    c = Ctx()
    out = run_all(c)
    check_reports(c, out)
    check_frames(c, out)
    check_export(c, out)
    check_without_pandas(c, out)
    c.finish()


if __name__ == "__main__":
    main()
