#!/usr/bin/env python3
"""The model backend against the published corpus (issue 32): tests/validate/published.json.

Each entry of the corpus is one figure: a published one (its source, the place in it, its
conditions) or one of tpbench's own H200 steps (kind "tpbench-kernels", read at run time from
the recorded results, never typed in). Each says whether a constant was fitted to it ("fit") or
whether it is held out ("held-out": chosen and committed before any fitting, see the file's
held_out_policy). This script predicts every entry with `tpbench --backend model` only (virtual
ranks, nothing measured: seconds) and prints predicted against published with the error
(predicted / published - 1) per entry, then the held-out summary. Every model run takes the
entry's conditions' dtypes: `--dtype` (the weights'; fp8 runs bf16 activations and
all-reduces) and `--kv-dtype` where the conditions name the KV cache's. How an entry is predicted:
  decode_tokens_per_s         1 / the decode step (`run --phase decode --batch 1`, LM head on)
  ttft_ms                     the prefill step of the prompt (`run --phase prefill`, LM head on)
  static_batch_output_...     B x output / (the context phase + (output - 1) decode steps of B at
                              the mean context prompt + output / 2), per GPU (/ TP): a static
                              batch, as gptSessionBenchmark runs it (decode steps are linear in
                              the context, so the mean context gives their sum). The context phase
                              is one prefill step of all B prompts, as the engine runs it, where
                              the model fits that step in memory; else the fewest steps of B/2,
                              B/4, ... prompts that fit (the model's activation accounting refuses
                              one step of B = 52 x 2048 on 80 GB as oom, where an engine bounds
                              its tokens per step)
  allreduce_busbw/algbw/time  `collectives --backend model` at the entry's size, ranks, algorithm
  allgather/reducescatter_time  (and --kind, predict.kind; their size is nccl-tests', the whole
                              buffer)
                              (nccl: NCCL's choice; oneshot/twoshot: the custom all-reduce's
                              kernel; auto: as the serving engine dispatches), with --eager
                              where the figure is an eager call on an unregistered input
  step_ms                     the step itself (`run`, LM head off, --cuda-graph when measured so)
NCCL is priced under the release the entry's predict.nccl names (the one its source ran, where
the source records it or its stack pins it), 2.20.3's table where none is named; --nccl VERSION
prices every entry under one release, a what-if.
Checks (exit 1): the corpus's structure (>= 16 published entries from >= 5 sources, >= 3 GPU
types counting tpbench's H200, TP 1 and 8 both present, every entry with a source, conditions
and a role) and that every prediction ran. --targets also fails when the held-out median
|error| is over 10% or the worst over 25% (issue 32's targets; not the ctest's default: they do
not hold, see the last line).
--table prints docs/VALIDATION.md's tables of held-out errors (TABLES: label, n, median, worst);
--check DOC fails when a row of them is not in DOC as printed.
--engine-tables (issue 57) predicts the corpus again with each entry's own engine's measured
tables where that engine has them for its GPU (tests/validate/published_tables.py), roles
unchanged, and prints that held-out summary beside today's (--targets then judges it).
Usage: tests/validate/published.py [--tpbench build-cpu/tpbench] [--targets] [--table]
       [--check docs/VALIDATION.md] [--engine-tables]
"""
import argparse
import concurrent.futures
import copy
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile

import published_tables

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "validate", "published.json")
MEDIAN_TARGET, WORST_TARGET = 0.10, 0.25


class OutOfMemory(RuntimeError):
    """A modelled point the model refused as oom (its memory accounting)."""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-1500:]}")


def dtype_args(c):
    """--dtype and --kv-dtype from an entry's conditions (the KV cache's when it is named)."""
    args = ["--dtype", c["dtype"]]
    if c.get("kv_dtype"):
        args += ["--kv-dtype", c["kv_dtype"]]
    return args


def step_s(tpbench, work, model, dtypes, p, tp, phase, batch, size):
    """The modelled p50 step of one point (s); `dtypes` is dtype_args' list."""
    out = tempfile.mkdtemp(dir=work)
    cmd = [tpbench, "run", "--backend", "model", "--model", model] + dtypes + [
           "--hardware", p["hardware"], "--topology", topology(p),
           "--world", str(tp), "--tp", str(tp), "--phase", phase, "--batch", str(batch),
           "--lm-head", "true" if p.get("lm_head") else "false", "--steps", "2", "--warmup", "1",
           "--out", out, "-q"]
    cmd += ["--context", str(size)] if phase == "decode" else ["--prompt", str(size)]
    if p.get("cuda_graph"):
        cmd.append("--cuda-graph")
    if p.get("engine"):
        cmd += ["--engine", p["engine"]]
    if p.get("algo"):  # else tpbench's auto: the engine's custom all-reduce where it takes one
        cmd += ["--algo", p["algo"]]
    run(cmd)
    with open(os.path.join(out, "results.json")) as f:
        pt = json.load(f)["points"][0]
    if pt["status"] == "oom":
        raise OutOfMemory(f"{' '.join(cmd)}: {pt.get('reason')}")
    if pt["status"] != "ok":
        raise RuntimeError(f"{' '.join(cmd)}: {pt['status']} ({pt.get('reason')})")
    return pt["metrics"]["step_time_s"]["p50"]


def collective(tpbench, work, p):
    out = tempfile.mkdtemp(dir=work)
    js = os.path.join(out, "nccl.json")
    run([tpbench, "collectives", "--backend", "model", "--world", str(p["world"]),
         "--kind", p.get("kind", "all_reduce"),
         "--topology", topology(p), "--algo", p["algo"], "-b", str(p["bytes"]),
         "-e", str(p["bytes"]), "-d", p["dtype"], "-J", js, "--out", out] +
        (["--eager"] if p.get("eager") else []) +
        (["--engine", p["engine"]] if p.get("engine") else []))
    with open(js) as f:
        return json.load(f)["results"][0]["out_of_place"]


def measured_step_ms(m):
    with open(os.path.join(ROOT, m["file"])) as f:
        for pt in json.load(f)["points"]:
            q = pt["params"]
            size = q["batch"] if q["phase"] == "decode" else q["prompt"]
            if q["phase"] == m["phase"] and size == m["size"] and pt["status"] == "ok":
                return pt["metrics"]["step_time_s"]["p50"] * 1e3
    raise RuntimeError(f"no ok point {m['phase']} {m['size']} in {m['file']}")


def context_phase_s(tpbench, work, model, dtypes, p, tp, b, isl):
    """A static batch's context phase: one prefill step of all b prompts where the model fits
    it in memory, else the fewest steps of at most half as many prompts as the last try
    (b // n steps of n prompts and one of the rest), as an engine bounds its tokens per step."""
    n = b
    while True:
        try:
            full = step_s(tpbench, work, model, dtypes, p, tp, "prefill", n, isl)
            break
        except OutOfMemory:
            if n == 1:
                raise
            n = (n + 1) // 2
    rest = b % n
    tail = step_s(tpbench, work, model, dtypes, p, tp, "prefill", rest, isl) if rest else 0.0
    return (b // n) * full + tail


def predict(tpbench, work, e):
    c, p, metric = e["conditions"], e["predict"], e["metric"]
    model, tp = c.get("model"), c.get("tp", 1)
    dtypes = dtype_args(c) if model else None  # the collectives entries take -d alone
    if metric == "decode_tokens_per_s":
        return 1.0 / step_s(tpbench, work, model, dtypes, p, tp, "decode", p["batch"], p["context"])
    if metric == "ttft_ms":
        return 1e3 * step_s(tpbench, work, model, dtypes, p, tp, "prefill", 1, p["prompt"])
    if metric == "static_batch_output_tokens_per_s_per_gpu":
        b, isl, osl = p["batch"], p["prompt"], p["output"]
        pre = context_phase_s(tpbench, work, model, dtypes, p, tp, b, isl)
        dec = step_s(tpbench, work, model, dtypes, p, tp, "decode", b, isl + osl // 2)
        return b * osl / (pre + (osl - 1) * dec) / tp
    if metric == "step_ms":
        phase = p["phase"]
        size = p["context"] if phase == "decode" else p["prompt"]
        return 1e3 * step_s(tpbench, work, model, dtypes, p, tp, phase, p["batch"], size)
    r = collective(tpbench, work, p)
    return {"allreduce_busbw_GBps": r["bus_bw"], "allreduce_algbw_GBps": r["alg_bw"],
            "allreduce_time_us": r["time"], "allgather_time_us": r["time"],
            "reducescatter_time_us": r["time"]}[metric]


def topology(p):
    """The --topology of prediction `p`: its preset, under the NCCL release it names (the
    release the source ran, where it records one or its stack pins one; the default else)."""
    t = p.get("topology", "nvlink4")
    return f"{t}:nccl-{p['nccl']}" if p.get("nccl") else t


def with_release(e, version):
    """A copy of entry `e` predicted on its topology under NCCL `version`'s tuning table."""
    e = copy.deepcopy(e)
    if e["kind"] == "published":
        e["predict"]["nccl"] = version
    return e


def structure(doc):
    """The corpus's own checks: a list of problems (empty when it holds)."""
    bad, ents = [], doc["entries"]
    pub = [e for e in ents if e["kind"] == "published"]
    srcs = {e["source"] for e in pub}
    gpus = {e["conditions"]["gpu"].split()[0] for e in ents}
    tps = {e["conditions"]["tp"] for e in ents}
    if len(pub) < 16:
        bad.append(f"{len(pub)} published entries (at least 16)")
    if len(srcs) < 5:
        bad.append(f"{len(srcs)} published sources (at least 5)")
    if len(gpus) < 3:
        bad.append(f"GPU types {sorted(gpus)} (at least 3)")
    if not {1, 8} <= tps:
        bad.append(f"TP degrees {sorted(tps)} (1 and 8 both)")
    for e in ents:
        if e["source"] not in doc["sources"] or not e.get("where"):
            bad.append(f"{e['id']}: no source or place in it")
        if e["role"] not in ("fit", "held-out"):
            bad.append(f"{e['id']}: role {e['role']!r}")
        if not e.get("conditions") or "tp" not in e["conditions"]:
            bad.append(f"{e['id']}: no conditions")
        if e["kind"] == "published" and not isinstance(e.get("value"), (int, float)):
            bad.append(f"{e['id']}: no published value")
    if not any(e["role"] == "held-out" for e in ents):
        bad.append("no held-out entry")
    return bad


def summary(label, errs):
    a = sorted(abs(x) for x in errs)
    if not a:
        return f"{label}: 0 entries"
    return (f"{label}: {len(a)} entries, median |error| {100 * statistics.median(a):.1f}%, "
            f"worst {100 * a[-1]:.1f}%")


def held_out_published(e):
    return e["role"] == "held-out" and e["kind"] == "published"


# docs/VALIDATION.md's tables of held-out errors, each row (its label as the document prints it)
# the entries it counts. A pass is the commit that added its entries (the corpus's "pass";
# without one, the first); passes 4 to 6 came after the model was frozen.
TABLES = {
    "held-out": [
        ("published", held_out_published),
        ("published, before the fourth pass",
         lambda e: held_out_published(e) and e.get("pass", 1) < 4),
        ("published, the fourth pass (added after the model was frozen)",
         lambda e: held_out_published(e) and e.get("pass") == 4),
        ("published, the fifth pass (the same)",
         lambda e: held_out_published(e) and e.get("pass") == 5),
        ("published, the sixth pass (the same; its release set before it was predicted)",
         lambda e: held_out_published(e) and e.get("pass") == 6),
        ("published, the 29 held out before 2026-12-06",
         lambda e: held_out_published(e) and "pass" not in e),
        ("SGLang PR 2904's eager vLLM kernels",
         lambda e: held_out_published(e) and e["source"] == "sglang-2904"),
        ("tpbench's H200 kernels",
         lambda e: e["role"] == "held-out" and e["kind"] == "tpbench-kernels"),
        ("all", lambda e: e["role"] == "held-out"),
    ],
    "pass 5": [
        ("ring busbw and NVLS algbw, 8 GiB, 2 / 4 / 6 GPUs",
         lambda e: e["id"].startswith(("wb-ring-", "wb-nvls-"))),
        ("PyTorch, one all-reduce per CUDA-graph replay, bf16, 4 KB to 2 MB",
         lambda e: e["id"].startswith("wb-torchgraph-")),
        ("nccl-tests `-g 4 -G 1`, float, 8 B to 16 MB",
         lambda e: e["id"].startswith("wb-ncclgraph-")),
    ],
}


def table_rows(results):
    """Each table row as `| label | n | median% | worst%`, the part of the document's row that
    --check holds it to (what follows the worst figure is the document's own words)."""
    rows = []
    for rows_of in TABLES.values():
        for label, takes in rows_of:
            a = sorted(abs(err) for e, err in results if takes(e))
            rows.append(f"| {label} | {len(a)} | {100 * statistics.median(a):.1f}% | "
                        f"{100 * a[-1]:.1f}%" if a else f"| {label} | 0 |")
    return rows


def check_document(path, rows):
    """The rows missing from `path` (a row is there when a line of it starts with the row)."""
    with open(path) as f:
        lines = f.read().splitlines()
    def has(r):  # the row, then the cell's end or the document's words on it
        return any(line.startswith(r) and line[len(r):len(r) + 1] in ("", " ", "|")
                   for line in lines)
    return [r for r in rows if not has(r)]


def print_summaries(results):
    pub = [err for e, err in results if held_out_published(e)]
    print(summary("held-out, published", pub))
    for n in sorted({e["pass"] for e, _ in results if e.get("pass")}):
        errs = [err for e, err in results if held_out_published(e) and e.get("pass") == n]
        when = "after the model was frozen" if n >= 4 else "with a mechanism, see held_out_policy"
        print(summary(f"held-out, published in pass {n} ({when})", errs))
    print(summary("held-out, tpbench's own H200 kernels",
                  [err for e, err in results if e["kind"] == "tpbench-kernels"]))
    return [err for e, err in results]


def predict_all(tpbench, work, ents, problems):
    """(entry, error) of every entry that predicted, held out or fitted; prints each row."""
    with concurrent.futures.ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        futs = [pool.submit(predict, tpbench, work, e) for e in ents]
    print(f"{'entry':<34} {'role':<8} {'GPU':<5} {'TP':>2} {'metric':<26} {'published':>10} "
          f"{'predicted':>10} {'error':>8}")
    results = []
    for e, fut in zip(ents, futs):
        try:
            pred = fut.result()
            ref = e["value"] if e["kind"] == "published" else measured_step_ms(e["measured"])
        except RuntimeError as x:
            problems.append(f"{e['id']}: {x}")
            continue
        err = pred / ref - 1
        results.append((e, err))
        c = e["conditions"]
        print(f"{e['id']:<34} {e['role']:<8} {c['gpu'].split()[0]:<5} {c['tp']:>2} "
              f"{e['metric'][:26]:<26} {ref:>10.4g} {pred:>10.4g} {100 * err:>+7.1f}%")
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(ROOT, "build-cpu", "tpbench"))
    ap.add_argument("--targets", action="store_true", help="fail when the held-out targets miss")
    ap.add_argument("--nccl", metavar="VERSION",
                    help="price NCCL under another release's tuning table (--topology "
                         "PRESET:nccl-VERSION): a what-if, not the registered prediction")
    ap.add_argument("--table", action="store_true",
                    help="print docs/VALIDATION.md's tables of held-out errors")
    ap.add_argument("--check", metavar="DOC",
                    help="fail when a table row differs from DOC's (docs/VALIDATION.md)")
    ap.add_argument("--engine-tables", action="store_true",
                    help="also predict each entry with its engine's measured tables (issue 57) "
                         "and print that held-out summary beside today's")
    a = ap.parse_args()
    if a.check and a.nccl:
        ap.error("--check holds the document to the registered predictions: drop --nccl")
    if a.engine_tables and a.nccl:
        ap.error("--engine-tables prices the registered predictions: drop --nccl")
    with open(CORPUS) as f:
        doc = json.load(f)
    problems = structure(doc)
    work = tempfile.mkdtemp(prefix="tpb-published.")
    ents = doc["entries"]
    if a.nccl:
        ents = [with_release(e, a.nccl) for e in ents]
        print(f"what-if: every topology under NCCL {a.nccl}'s tuning table, "
              "not the corpus's registered predictions")
    results = predict_all(os.path.abspath(a.tpbench), work, ents, problems)
    pub = [e for e in ents if e["kind"] == "published"]
    print(f"corpus: {len(pub)} published entries from {len({e['source'] for e in pub})} sources, "
          f"{len(ents) - len(pub)} tpbench-kernel entries; work in {work}")
    held = [(e, err) for e, err in results if e["role"] == "held-out"]
    rows = table_rows(held)
    if a.table:
        print("\n".join(rows))
    if a.check:
        missing = check_document(a.check, rows)
        problems += [f"{a.check} has no row starting '{r}'" for r in missing]
        print(f"{len(rows) - len(missing)} of {len(rows)} table rows as in {a.check}")
    for p in problems:
        print("FAIL", p)
    allerr = sorted(abs(x) for x in print_summaries(held))
    missed = statistics.median(allerr) > MEDIAN_TARGET or allerr[-1] > WORST_TARGET
    print(summary("held-out", allerr))
    if a.engine_tables:
        before = len(problems)
        missed = engine_tables(os.path.abspath(a.tpbench), work, ents, results, problems)
        for p in problems[before:]:
            print("FAIL", p)
    return 1 if problems or (a.targets and missed) else 0


def load_json(path):
    with open(path) as f:
        return json.load(f)


def engine_tables(tpbench, work, ents, today, problems):
    """--engine-tables: the corpus again, each entry with its engine's tables where it has
    them; prints the summaries side by side; whether the held-out targets miss with them."""
    coll = published_tables.collectives_take_engine(tpbench)
    tabled, priced = published_tables.with_tables(ROOT, ents, coll)
    print(f"\nre-predicting {len(priced)} entries with their engines' tables"
          f"{'' if coll else ' (the collectives rows keep today: collectives takes no --engine)'}")
    redo = [e for e in tabled if e["id"] in priced]
    again = dict((e["id"], err) for e, err in predict_all(tpbench, work, redo, problems)) \
        if redo else {}
    tables = [(e, again[e["id"]]) if e["id"] in priced else (e, err)
              for e, err in today if e["id"] not in priced or e["id"] in again]
    published_tables.print_comparison(today, tables, priced, (MEDIAN_TARGET, WORST_TARGET))
    judged = published_tables.judge_collectives(ROOT, ents, functools.lru_cache(None)(load_json))
    published_tables.print_collectives(judged, (MEDIAN_TARGET, WORST_TARGET))
    held = sorted(abs(err) for e, err in tables if e["role"] == "held-out")
    return statistics.median(held) > MEDIAN_TARGET or held[-1] > WORST_TARGET


if __name__ == "__main__":
    sys.exit(main())
