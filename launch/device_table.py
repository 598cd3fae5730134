#!/usr/bin/env python3
"""The device check's table (launch/device-check.sh), from what one call left in its folder:
1. the steps: exit code and seconds of each, from steps.tsv;
2. every tpbench point: step time, MBU, MBU against the copy bandwidth calibrate measured in the
   same call, MFU, its ceiling and the host gap; a failed point shows its reason;
3. side by side with the peer reference (peer_torch.py's JSON lines), for the target model,
   with tpbench's steps under --attention cudnn (cuDNN's fused SDPA) in a column of their own:
   a point counts as cuDNN's by the kernels its ranks' kernel_choices say ran, not by the
   --attention asked (serve's paged graph refused by cuDNN runs natively and says so);
4. the --check verdict (the step against the independent host reference), and what
   --inject slow_op did to its op on the device stream (information, not a target);
   for ranks sharing a GPU: kernel choices equal within each group (else a failed check),
   the injected straggler recovered within 5% and the clock conversion error within what
   the ranks report (else a missed target);
5. the targets (issue 30's, in one call), judged on the target model's points only: a model
   whose shape cannot reach them (tiny: launch-bound, hidden 1024) is never judged. A target
   with no point to judge it is FAIL: nothing measured is not a pass. The step targets take
   tpbench's best (eager, graph or cudnn attention); the graph target compares native ones.
It reads result folders (sub-folders holding results.json) and skips everything else there
(logs, archives), and a folder it cannot read is a row saying so, not a crash.
Exit: 0 every target passes, 1 a --check failed, 3 a target fails, 2 bad usage.
Usage: device_table.py [--steps steps.tsv] [--calibration calibration.json] [--peer peer.jsonl]
                       [--target-model NAME] [--dtype bf16] DIR..."""
import argparse
import json
import os
import re
import sys

from device_table_ranks import conversion_lines, inject_lines, kernel_choices_lines


def result_dirs(roots):
    """Each root that holds results.json, else its sub-folders that do; sorted, files skipped."""
    out = []
    for r in roots:
        if os.path.isfile(os.path.join(r, "results.json")):
            out.append(r)
        elif os.path.isdir(r):
            out += [os.path.join(r, d) for d in sorted(os.listdir(r))
                    if os.path.isfile(os.path.join(r, d, "results.json"))]
    return out


def load_points(dirs):
    """(set name, point, cuda_graph) rows; an unreadable set is one row with status 'unreadable'."""
    rows = []
    for d in dirs:
        name = os.path.basename(d.rstrip("/"))
        try:
            with open(os.path.join(d, "results.json")) as f:
                doc = json.load(f)
            graph = bool(doc.get("config", {}).get("cuda_graph"))  # a run's setting
            attention = doc.get("config", {}).get("attention", "native")
            for p in doc.get("points", []):
                p["_attention"] = attention_ran(p, attention)  # the kernels that ran
                rows.append((name, p, graph))
        except (OSError, ValueError, AttributeError) as e:
            rows.append((name, {"status": "unreadable", "reason": str(e)[:80], "params": {}}, False))
    return rows


MIXED = re.compile(r"mixed-step attention: cuDNN paged (\d+) calls, native (\d+) calls(?: \((.*)\))?")


def mixed_calls(p):
    """(cuDNN paged calls, native calls, reason) over the ranks' kernel_choices: serve's
    mixed-step attention under --attention cudnn, per point (layers/cuda/cuda_device.cc)."""
    cudnn = native = 0
    why = ""
    for r in p.get("ranks") or []:
        for line in r.get("kernel_choices") or []:
            m = MIXED.match(line)
            if m:
                cudnn, native = cudnn + int(m.group(1)), native + int(m.group(2))
                why = why or (m.group(3) or "")
    return cudnn, native, why


def attention_ran(p, asked):
    """The attention kernels the point's steps ran: 'native', 'cudnn', 'cudnn+native' (cuDNN
    refused serve's paged graph for some steps) or 'cudnn?' (asked, and no rank recorded
    which ran). Only 'cudnn' joins the cuDNN column and targets; only 'native' the native."""
    if asked != "cudnn":
        return "native"
    lines = [ln for r in p.get("ranks") or [] for ln in r.get("kernel_choices") or []]
    if not any(ln.startswith("attention: cuDNN") for ln in lines):
        return "native" if any(ln.startswith("attention: native") for ln in lines) else "cudnn?"
    cudnn, native, _ = mixed_calls(p)
    if native:
        return "cudnn+native" if cudnn else "native"
    return "cudnn"


def refusals(rows):
    """Each point asked for cuDNN whose serve steps ran the native kernels, with cuDNN's reason."""
    for name, p, _ in rows:
        cudnn, native, why = mixed_calls(p)
        if native:
            print(f"\ncuDNN refused the paged graph ({name}, {label(p, False)}): {native} of "
                  f"{cudnn + native} mixed-step attention calls ran natively; not a cuDNN point"
                  + (f": {why[:160]}" if why else ""))


def read_jsonl(path):
    rows = []
    if path and os.path.isfile(path):
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def measured_copy_bw(path, dtype):
    try:
        with open(path) as f:
            ops = json.load(f)["peaks"]["device_ops"]
        return ops[dtype]["add_GBps"] * 1e9
    except (OSError, ValueError, KeyError, TypeError):
        return None


def label(p, graph):
    q = p.get("params", {})
    ph = q.get("phase")
    if not ph:
        return "results.json unreadable"
    if ph == "decode":
        size = f"B={q.get('batch')} ctx={q.get('context')}"
    elif ph == "prefill":
        size = f"S={q.get('prompt')}" + (f" B={q['batch']}" if q.get("batch", 1) > 1 else "")
    else:
        size = f"conc={q.get('serve', {}).get('concurrency')}"
    return f"{q.get('model', '?')} L{q.get('layers', '?')} {ph} {size}{' graph' if graph else ''}"


def fmt(v, w=6, d=3):
    return f"{v:{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"


def steps_table(path):
    if not path or not os.path.isfile(path):
        print("no steps.tsv")
        return
    with open(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f][1:]
    print("steps: " + "; ".join(f"{n} {'ok' if rc == '0' else 'rc=' + rc} {s}s" for n, rc, s, *_ in lines))


def points_table(rows, copy_bw):
    print(f"\n{'set':13} {'point':42} {'status':6} {'step ms':>8} {'MBU':>6} {'/copy':>6} "
          f"{'MFU':>6} {'ceil':>6} {'hostgap':>7} {'launch':>6} {'bound':>6}")
    for name, p, graph in rows:
        m = p.get("metrics") or {}
        if p.get("status") != "ok":
            print(f"{name[:13]:13} {label(p, graph)[:42]:42} {p.get('status', '?')[:6]:6} "
                  f"{str(p.get('reason', ''))[:50]}")
            continue
        step = (m.get("itl_s") or m.get("step_time_s") or {}).get("p50")
        bw = (m.get("peaks") or {}).get("bw")
        split = m.get("idle_split") or {}  # launch/bound: the idle inside steps, split (1.18.0)
        of_copy = m["mbu"] * bw / copy_bw if copy_bw and bw and m.get("mbu") is not None else None
        ran = p.get("_attention", "native")
        point = label(p, graph) + ("" if ran == "native" else " " + ran)
        print(f"{name[:13]:13} {point[:42]:42} {'ok':6} {fmt(step * 1e3 if step else None, 8)} "
              f"{fmt(m.get('mbu'))} {fmt(of_copy)} {fmt(m.get('mfu'))} {fmt(m.get('mfu_ceiling'))} "
              f"{fmt(m.get('host_gap_fraction'), 7)} {fmt(split.get('launches_fraction'))} "
              f"{fmt(split.get('kernel_boundaries_fraction'))}")


def ok_points(rows, model, attention="native"):
    """The target model's ok single-sequence-prefill points at TP 1 with its most layers (a
    --check run on 2 layers is no step of the model), under `attention`'s kernels:
    (phase, size, graph) -> point."""
    mine = [(p, g) for _, p, g in rows if p.get("status") == "ok"
            and p["params"].get("model") == model and p["params"].get("tp", 1) == 1
            and "weight_dtype" not in p["params"]  # one dtype throughout: not the fp8 set
            and not p["params"].get("inject")  # no fault: not the slow-op set
            and p.get("_attention", "native") == attention]
    layers = max((p["params"].get("layers", 0) for p, _ in mine), default=0)
    out = {}
    for p, graph in mine:
        q = p["params"]
        if q.get("layers") != layers or (q["phase"] == "prefill" and q.get("batch", 1) != 1):
            continue
        if q.get("phase") == "serve":
            key = ("serve", q.get("serve", {}).get("concurrency"), False)
        else:
            key = (q["phase"], q["batch"] if q["phase"] == "decode" else q["prompt"], graph)
        out.setdefault(key, p)  # the first set that measured it (decode-first before the grid)
    return out


def step_ms(p):
    return p["metrics"]["step_time_s"]["p50"] * 1e3 if p else None


def side_by_side(pts, peer, model, cudnn=None):
    mine = [r for r in peer if r.get("model") == model]
    if not mine:
        print("\nno peer reference for " + model + " (peer.jsonl missing or empty)")
        return {}
    ref = {(r["mode"], r["phase"], r["batch"] if r["phase"] == "decode" else r["prompt"]): r["step_ms"]
           for r in mine}
    cudnn = cudnn or {}
    print(f"\n{model}, p50 step ms   {'torch eager':>11} {'torch graph':>11} {'compile+graph':>13} "
          f"{'tpb eager':>9} {'tpb graph':>9} {'tpb cudnn':>9} {'tpb/compile':>11}")
    keys = sorted({(ph, s) for _, ph, s in ref}
                  | {(ph, s) for ph, s, _ in list(pts) + list(cudnn) if ph != "serve"})
    for ph, s in keys:
        e, g = step_ms(pts.get((ph, s, False))), step_ms(pts.get((ph, s, True)))
        a = step_ms(cudnn.get((ph, s, False)))
        c = ref.get(("compile", ph, s))
        ratio = min(x for x in (e, g, a) if x) / c if c and (e or g or a) else None
        name = f"{ph} {'B' if ph == 'decode' else 'S'}={s}"
        print(f"{name:23} {fmt(ref.get(('eager', ph, s)), 11, 2)} {fmt(ref.get(('graph', ph, s)), 11, 2)} "
              f"{fmt(c, 13, 2)} {fmt(e, 9, 2)} {fmt(g, 9, 2)} {fmt(a, 9, 2)} {fmt(ratio, 11, 2)}")
    return ref


def check_verdict(rows):
    """Prints each --check verdict; returns how many failed."""
    failed = 0
    for name, p, _ in rows:
        v = p.get("verification")
        if v:
            failed += not v.get("passed")
            print(f"\n--check ({name}): {'PASS' if v.get('passed') else 'FAIL'} max_abs_err "
                  f"{v.get('max_abs_err')} tolerance {v.get('tolerance')} against "
                  f"'{v.get('reference', '?')}'")
    return failed


def op_s(p, op):
    return next((o.get("time_s_per_step") for o in p.get("ops") or [] if o.get("op") == op), None)


def slow_op_line(rows):
    """--inject slow_op on the device stream (its warm-up median spun inside the op's own events):
    each slowed op's time per step against the same point without the fault, beside the factor
    asked. Information, not a target: a slowed point is no step of the model."""
    def same(p, graph):  # the point's settings but the fault, its graph and attention
        q = {k: v for k, v in p["params"].items() if k != "inject"}
        return json.dumps(q, sort_keys=True), graph, p.get("_attention")

    clean = {}
    for _, p, graph in rows:
        if p.get("status") == "ok" and not p["params"].get("inject"):
            clean.setdefault(same(p, graph), p)
    for name, p, graph in rows:
        inj = p["params"].get("inject") or []
        if p.get("status") != "ok" or not any("slow_op=" in i for i in inj):
            continue
        spec = next(i for i in inj if "slow_op=" in i).split("slow_op=")[1].split(":")[0]
        op, want = spec.split("@")
        base = clean.get(same(p, graph))
        got = op_s(p, op) / op_s(base, op) if base and op_s(base, op) and op_s(p, op) else None
        print(f"\nslow_op ({name}): {op} x{fmt(got, 5, 2).strip()} per step against the point "
              f"without it (asked x{want}); step x"
              f"{fmt(step_ms(p) / step_ms(base) if base else None, 5, 2).strip()}")


def targets(pts, ref, copy_bw, cudnn=None):
    """(name, values, test) per target; values empty when no point measured it. The step and
    bandwidth targets take tpbench's best: eager, graph, or cuDNN's attention (`cudnn`)."""
    cudnn = cudnn or {}

    def vs_compile(b):
        e, g, c = step_ms(pts.get(("decode", b, False))), step_ms(pts.get(("decode", b, True))), \
            ref.get(("compile", "decode", b))
        a = step_ms(cudnn.get(("decode", b, False)))
        best = min([x for x in (e, g, a) if x] or [None]) if (e or g or a) else None
        return [best / c] if best and c else []

    def faster(*ps):
        return min([p for p in ps if p], key=step_ms, default=None)

    d1 = pts.get(("decode", 1, False))
    fast1 = faster(d1, cudnn.get(("decode", 1, False)))
    bw = [fast1["metrics"]["mbu"] * fast1["metrics"]["peaks"]["bw"] / copy_bw] \
        if fast1 and copy_bw else []
    pre = faster(pts.get(("prefill", 4096, False)), cudnn.get(("prefill", 4096, False)))
    graph = [step_ms(pts[k]) / step_ms(pts[(k[0], k[1], False)]) for k in pts
             if k[0] == "decode" and k[2] and (k[0], k[1], False) in pts]
    # Serve against run under the same attention kernels; the better of the two pairs.
    pairs = [(s.get(("serve", 1, False)), s.get(("decode", 1, False))) for s in (pts, cudnn)]
    itl = [min(sv["metrics"]["itl_s"]["p50"] * 1e3 / step_ms(dv) for sv, dv in pairs
               if sv and dv)] if any(sv and dv for sv, dv in pairs) else []
    return [
        ("decode B=1 step <= 1.06x torch.compile+graph", vs_compile(1), lambda v: v <= 1.06),
        ("decode B=64 step <= 1.06x torch.compile+graph", vs_compile(64), lambda v: v <= 1.06),
        ("prefill S=4096 MFU >= 0.60 (datasheet peak)", [pre["metrics"]["mfu"]] if pre else [],
         lambda v: v >= 0.60),
        ("--cuda-graph step / eager <= 1.02 at every batch", graph, lambda v: v <= 1.02),
        ("serve ITL p50 at conc 1 <= 1.15x run decode B=1 (same attention kernels)", itl,
         lambda v: v <= 1.15),
        ("decode B=1 bandwidth >= 0.80 of measured copy", bw, lambda v: v >= 0.80),
    ]


def print_targets(rows, model):
    failed = 0
    print(f"\ntargets, judged on {model} at TP 1:")
    for name, vals, good in rows:
        verdict = "PASS" if vals and all(good(v) for v in vals) else "FAIL"
        failed += verdict == "FAIL"
        print(f"{verdict}  {name}: {', '.join(f'{v:.3f}' for v in vals) or 'no point measured it'}")
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps")
    ap.add_argument("--calibration")
    ap.add_argument("--peer")
    ap.add_argument("--target-model", default="llama-3.1-8b")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    steps_table(a.steps)
    copy_bw = measured_copy_bw(a.calibration, a.dtype) if a.calibration else None
    print(f"measured copy bandwidth ({a.dtype} add kernel, calibrate): "
          + (f"{copy_bw / 1e9:.1f} GB/s" if copy_bw else "none (no calibrate result)"))
    rows = load_points(result_dirs(a.results))
    points_table(rows, copy_bw)
    pts = ok_points(rows, a.target_model)
    cudnn = ok_points(rows, a.target_model, "cudnn")
    ref = side_by_side(pts, read_jsonl(a.peer), a.target_model, cudnn)
    wrong = check_verdict(rows) + kernel_choices_lines(rows)
    refusals(rows)
    slow_op_line(rows)
    ranks_missed = inject_lines(rows) + conversion_lines(rows)
    missed = print_targets(targets(pts, ref, copy_bw, cudnn), a.target_model)
    return 1 if wrong else 3 if missed or ranks_missed else 0


if __name__ == "__main__":
    sys.exit(main())
