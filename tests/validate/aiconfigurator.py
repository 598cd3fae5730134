#!/usr/bin/env python3
"""The model backend's step against NVIDIA AIConfigurator's estimate for the same engine and
points (issue 57, item 4): consistency with AIConfigurator, which tests the composition (which
ops a step launches and how each is priced from the same measured tables), not the truth.

The grid: Llama-3.1-8B and 70B, h100-sxm and h200-sxm, TP 1/2/4/8, bf16; decode B = 1, 4, 16,
64, 256 at context 1024 (AIC: static_gen, isl 1024, osl 2: its TPOT over osl - 1 = 1 step, the
first generation step, priced at the context isl; varying isl by one token moves it 0.01%) and
prefill of 1024 and 4096 tokens at batch 1 (AIC: static_ctx, its TTFT). Points AIC says do
not fit in memory are kept in the JSON as such and skipped.
With --aic-python PY, --aic CLI or --install [DIR] it runs AIConfigurator (0.12.0) on the grid
(tests/validate/aiconfigurator_query.py, inside that Python) and writes AIC's figures with the
exact command and package versions into tests/validate/aiconfigurator_points.json (committed:
CI has no package); without them it reads that file. Then it runs `tpbench run --backend model
--engine ENGINE` on the points and prints point, AIC, tpbench, ratio and, where they differ,
the op group that differs most (both sides have per-op times). --check exits 1 when the
median |error| is over 5% or the worst over 15%, a point did not run, or an op of the
acceptance point does not say which table priced it.
Usage: tests/validate/aiconfigurator.py [--tpbench build/tpbench] [--engine vllm-0.24[,...]]
       [--points all|ci] [--aic-python PY | --aic CLI | --install [DIR]] [--check]
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile

import aiconfigurator_ops as ops

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
POINTS = os.path.join(HERE, "aiconfigurator_points.json")
MEDIAN_TARGET, WORST_TARGET = 0.05, 0.15
PACKAGE = "aiconfigurator==0.12.0"
# tpbench's engine -> AIConfigurator's backend and database version (the one it has for both
# h100_sxm and h200_sxm).
ENGINES = {"vllm-0.24": ("vllm", "0.24.0"), "sglang-0.5": ("sglang", "0.5.14"),
           "trtllm-1.3": ("trtllm", "1.3.0rc20")}
MODELS = {"llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
          "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B"}
SYSTEMS = {"h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm"}
TPS, DECODE_BATCHES, CONTEXT, PROMPTS = (1, 2, 4, 8), (1, 4, 16, 64, 256), 1024, (1024, 4096)
ACCEPTANCE = "llama-3.1-8b/h200-sxm/tp8/decode-b64"  # the acceptance point
# CI's subset (seconds): the acceptance point and one of each other kind of point.
CI_POINTS = (ACCEPTANCE, "llama-3.1-8b/h100-sxm/tp1/decode-b1",
             "llama-3.1-70b/h200-sxm/tp4/decode-b256",
             "llama-3.1-70b/h100-sxm/tp8/prefill-1024", "llama-3.1-8b/h200-sxm/tp2/prefill-4096")
# The other engines share vllm-0.24's composition: CI holds them at two points (the prefill one
# is where they differ most from AIC: the prefill all-reduce table, sglang's worst point).
CI_OTHER = (ACCEPTANCE, "llama-3.1-70b/h100-sxm/tp8/prefill-1024")


def grid(engine):
    backend, version = ENGINES[engine]
    pts = []
    for model in MODELS:
        for hw in SYSTEMS:
            for tp in TPS:
                base = {"model": model, "hardware": hw, "tp": tp, "aic_model": MODELS[model],
                        "system": SYSTEMS[hw], "backend": backend, "version": version}
                for b in DECODE_BATCHES:
                    pts.append(dict(base, id=f"{model}/{hw}/tp{tp}/decode-b{b}", phase="decode",
                                    batch=b, context=CONTEXT, mode="static_gen", isl=CONTEXT,
                                    osl=2))
                for s in PROMPTS:
                    pts.append(dict(base, id=f"{model}/{hw}/tp{tp}/prefill-{s}", phase="prefill",
                                    batch=1, prompt=s, mode="static_ctx", isl=s, osl=1))
    return pts


def install(venv):
    """A venv at `venv` with AIConfigurator 0.12.0 (pip, from its index); its python."""
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", PACKAGE], check=True)
    return py


def interpreter(cli):
    """The Python behind the `aiconfigurator` CLI script: its #! line."""
    with open(cli) as f:
        first = f.readline()
    if not first.startswith("#!") or "python" not in first:
        sys.exit(f"--aic: {cli} is not a Python script (no #! python line)")
    return first[2:].strip().split()[0]


def run_aic(py, cli, engine):
    """AIC's figures on the grid of `engine`: the JSON's entry for it."""
    pts = grid(engine)
    acc = next(p for p in pts if p["id"] == ACCEPTANCE)
    req = {"points": pts, "cli": cli, "cli_check": acc if cli else None}
    r = subprocess.run([py, os.path.join(HERE, "aiconfigurator_query.py")],
                       input=json.dumps(req), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"AIConfigurator failed ({r.returncode}): {r.stderr[-1500:]}")
    res = json.loads(r.stdout)
    out = []
    for p, a in zip(pts, res["points"]):
        q = {k: p[k] for k in ("id", "model", "hardware", "tp", "phase", "batch")}
        q.update({k: p[k] for k in ("context", "prompt") if k in p})
        q["aic"] = {"metric": "tpot_ms" if p["phase"] == "decode" else "ttft_ms",
                    "command": a["command"], "memory_gib": round(a["memory_gib"], 3)}
        if a["oom"]:
            q["aic"]["oom"] = a["reason"]
        else:
            q["aic"]["ms"] = float(f"{a['ms']:.6g}")
            q["aic"]["ops_ms"] = {k: float(f"{v:.5g}") for k, v in a["ops_ms"].items()}
            # AIC's ops priced from its empirical corrections rather than measured tables
            q["aic"]["empirical_ops"] = [k for k, v in a["op_source"].items() if v != "silicon"]
        out.append(q)
    backend, version = ENGINES[engine]
    return {"backend": backend, "version": version, "packages": res["versions"],
            "via": "aiconfigurator.cli.api.cli_estimate (what `aiconfigurator cli estimate` "
                   "runs; each point's command is the CLI's equivalent)",
            "cli_check": res.get("cli_check"), "points": out}


def write_doc(doc):
    """The points file, one point a line (a reviewable diff when a point moves)."""
    lines = ["{", f' "about": {json.dumps(doc["about"])},', ' "engines": {']
    for i, (name, ent) in enumerate(doc["engines"].items()):
        head = {k: v for k, v in ent.items() if k != "points"}
        lines.append(f'  {json.dumps(name)}: {json.dumps(head)[:-1]}, "points": [')
        lines.append(",\n".join("   " + json.dumps(q) for q in ent["points"]))
        lines.append("  ]}" + ("," if i + 1 < len(doc["engines"]) else ""))
    with open(POINTS, "w") as f:
        f.write("\n".join(lines + [" }", "}"]) + "\n")


def check_doc(doc, engine):
    """The committed file's own checks: a list of problems (empty when it holds)."""
    bad = []
    ent = doc.get("engines", {}).get(engine)
    if not ent:
        return [f"{POINTS}: no engine {engine} (rerun with --aic-python or --install)"]
    if ent.get("packages", {}).get("aiconfigurator") != PACKAGE.split("==")[1]:
        bad.append(f"{engine}: packages.aiconfigurator is not {PACKAGE.split('==')[1]}")
    cc = ent.get("cli_check")
    if cc and abs(cc["cli_tpot_ms"] - cc["sdk_tpot_ms"]) > 0.0006:  # the CLI prints 3 decimals
        bad.append(f"{engine}: cli_check: the CLI's TPOT {cc['cli_tpot_ms']} is not the SDK's "
                   f"{cc['sdk_tpot_ms']:.4f}")
    known = set(ops.AIC_GROUPS.values()) | {g for _, g in ops.PATTERNS}
    for q in ent["points"]:
        a = q.get("aic", {})
        if "oom" in a:
            continue
        strays = [k for k in a.get("ops_ms", {}) if ops.group(k) not in known]
        if strays:
            bad.append(f"{q['id']}: aic.ops_ms {strays} in no op group (aiconfigurator_ops.py)")
        total = sum(a.get("ops_ms", {}).values())
        if not a.get("ms", 0) > 0 or not a.get("command"):
            bad.append(f"{q['id']}: aic.ms or aic.command missing")
        elif abs(total / a["ms"] - 1) > 0.005:  # AIC's step is the plain sum of its ops
            bad.append(f"{q['id']}: aic.ops_ms sums to {total:.4g} ms, not aic.ms {a['ms']:.4g}")
    return bad


def check_tables(engine):
    """tpbench's tables for `engine` must come from the AIC database the points were taken from
    (a regenerated table of another version would compare two databases, not compositions)."""
    bad = []
    for hw, system in SYSTEMS.items():
        path = os.path.join(ROOT, "configs", "engine_tables", engine, f"{hw}.json")
        if not os.path.exists(path):
            continue  # tpbench refuses the point itself, and says so
        with open(path) as f:
            prov = json.load(f).get("provenance", {})
        got = (prov.get("framework"), prov.get("version"), prov.get("system"))
        if got != ENGINES[engine] + (system,):
            bad.append(f"{path}: provenance framework/version/system {got}, the points' "
                       f"{ENGINES[engine] + (system,)}")
    return bad


def tpbench_point(tpbench, engine, q, work):
    """tpbench's modelled p50 step (ms) and its ops ({op: (ms, the op's other fields)})."""
    out = tempfile.mkdtemp(dir=work)
    size = ["--context", str(q["context"])] if q["phase"] == "decode" else \
        ["--prompt", str(q["prompt"])]
    cmd = [tpbench, "run", "--backend", "model", "--engine", engine, "--hardware", q["hardware"],
           "--world", str(q["tp"]), "--tp", str(q["tp"]), "--model", q["model"], "--dtype",
           "bf16", "--phase", q["phase"], "--batch", str(q["batch"])] + size + [
           "--lm-head", "true", "--steps", "2", "--warmup", "1", "--out", out, "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"exit {r.returncode}: {last} ({' '.join(cmd)})")
    try:
        with open(os.path.join(out, "results.json")) as f:
            pt = json.load(f)["points"][0]
    except (OSError, ValueError, IndexError, KeyError) as x:
        raise RuntimeError(f"no results.json point ({x}): {' '.join(cmd)}") from x
    if pt["status"] != "ok":
        raise RuntimeError(f"{pt['status']} ({pt.get('reason')}): {' '.join(cmd)}")
    per_op = {o["op"]: (1e3 * o["time_s_per_step"], ops.op_notes(o)) for o in pt["ops"]}
    return 1e3 * pt["metrics"]["step_time_s"]["p50"], per_op


def compare(tpbench, engine, qs, problems):
    """[(point, AIC ms, tpbench ms, tpbench ops)] for every point both sides priced."""
    work = tempfile.mkdtemp(prefix="tpb-aic.")
    live = [q for q in qs if "oom" not in q["aic"]]
    with concurrent.futures.ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        futs = [pool.submit(tpbench_point, tpbench, engine, q, work) for q in live]
    rows = []
    for q, fut in zip(live, futs):
        try:
            ms, per_op = fut.result()
        except RuntimeError as x:
            problems.append(f"{q['id']}: {x}")
            continue
        rows.append((q, q["aic"]["ms"], ms, per_op))
    return rows


def summarise(rows, skipped):
    errs = sorted(abs(t / a - 1) for _, a, t, _ in rows)
    label = "consistency with AIConfigurator (tests the composition, not the truth)"
    if not errs:
        print(f"{label}: no point compared")
        return False
    med, worst = statistics.median(errs), errs[-1]
    wq = max(rows, key=lambda r: abs(r[2] / r[1] - 1))[0]["id"]
    ok = med <= MEDIAN_TARGET and worst <= WORST_TARGET
    for phase in ("decode", "prefill"):
        e = sorted(abs(t / a - 1) for q, a, t, _ in rows if q["phase"] == phase)
        if e:
            print(f"  {phase}: {len(e)} points, median |error| {100 * statistics.median(e):.1f}%, "
                  f"worst {100 * e[-1]:.1f}%")
    print(f"{label}: {len(errs)} points ({skipped} skipped: AIC says they do not fit), median "
          f"|error| {100 * med:.1f}%, worst {100 * worst:.1f}% ({wq}); targets median <= "
          f"{100 * MEDIAN_TARGET:.0f}%, worst <= {100 * WORST_TARGET:.0f}%: "
          f"{'met' if ok else 'MISSED'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(ROOT, "build", "tpbench"))
    ap.add_argument("--engine", default="vllm-0.24",
                    help=f"one of {', '.join(sorted(ENGINES))}, or several, comma-separated")
    ap.add_argument("--tpbench-engine", metavar="NAME",
                    help="price tpbench's side with another --engine (none: today's default "
                         "pricing, the issue's baseline) against AIC's figures for --engine")
    ap.add_argument("--points", default="all", choices=("all", "ci"))
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--aic-python", metavar="PY", help="a Python with aiconfigurator 0.12.0")
    src.add_argument("--aic", metavar="CLI", help="the aiconfigurator CLI (its Python runs it)")
    src.add_argument("--install", nargs="?", const="/tmp/tpbench-aic-venv", metavar="DIR",
                     help=f"make a venv at DIR and pip-install {PACKAGE} into it")
    ap.add_argument("--check", action="store_true", help="exit 1 when the targets miss")
    ap.add_argument("--detail", metavar="ID", help="print the per-op comparison of point ID")
    a = ap.parse_args()
    engines = a.engine.split(",")
    for e in engines:
        if e not in ENGINES:
            ap.error(f"--engine: {e!r} is not one of {', '.join(sorted(ENGINES))}")
    with open(POINTS) if os.path.exists(POINTS) else open(os.devnull) as f:
        doc = json.loads(f.read() or '{"engines": {}}')
    py = install(a.install) if a.install else (interpreter(a.aic) if a.aic else a.aic_python)
    if py:
        cli = a.aic or os.path.join(os.path.dirname(py), "aiconfigurator")
        doc.setdefault("about", ops.ABOUT)
        for e in engines:
            doc["engines"][e] = run_aic(py, cli if os.path.exists(cli) else None, e)
            print(f"AIConfigurator's figures for {e} written to {POINTS}")
        write_doc(doc)
    failed = [e for e in engines if not run_engine(a, doc, e)]
    return 1 if a.check and failed else 0


def run_engine(a, doc, aic_engine):
    """One engine's comparison, printed; whether it met the targets with every point run."""
    problems = check_doc(doc, aic_engine) + check_tables(aic_engine)
    if problems:
        print("\n".join("FAIL " + p for p in problems))
        return False
    qs = doc["engines"][aic_engine]["points"]
    if a.points == "ci":
        want = CI_POINTS if aic_engine == "vllm-0.24" else CI_OTHER
        qs = [q for q in qs if q["id"] in want]
        if len(qs) != len(want):
            problems.append(f"{POINTS}: CI's points {want} are not all there")
    engine = a.tpbench_engine or aic_engine
    rows = compare(os.path.abspath(a.tpbench), engine, qs, problems)
    ops.print_table(rows, engine, aic_engine)
    ops.print_composition(rows)
    for q, aic, ms, per_op in rows:
        if q["id"] in (a.detail, ACCEPTANCE):
            ops.print_detail(q, ms, per_op)
    for q, _, _, per_op in rows:  # the acceptance: the step says which table priced each op
        unsaid = [k for k, (ms, notes) in per_op.items() if ms > 0 and "priced_by" not in notes]
        if q["id"] == ACCEPTANCE and unsaid:
            problems.append(f"{q['id']}: ops {unsaid} do not say which table priced them "
                            "(ops[].priced_by)")
    ok = summarise(rows, sum(1 for q in qs if "oom" in q["aic"]))
    for p in problems:
        print("FAIL", p)
    return ok and not problems


if __name__ == "__main__":
    sys.exit(main())
