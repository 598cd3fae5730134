"""published.py --engine-tables (issue 57): each corpus entry re-predicted with its own engine's
measured tables (configs/engine_tables/ENGINE/HARDWARE.json, from AIConfigurator), where that
engine has tables for the entry's GPU; every other entry keeps today's pricing. Roles are
unchanged: a held-out entry stays held out. The held-out summary is printed beside today's and
judged against issue 32's targets.
"""
import copy
import os
import statistics
import subprocess

# An entry's engine (the start of its conditions' engine: vLLM's own kernels, including those
# SGLang's test calls) -> the tpbench engine whose tables price it.
ENGINE_OF = (("vLLM", "vllm-0.24"), ("SGLang", "sglang-0.5"), ("TensorRT-LLM", "trtllm-1.3"))
GPU_OF = (("A100", "a100-sxm-80g"), ("H100", "h100-sxm"), ("H200", "h200-sxm"), ("B200", "b200"))


def tables_path(root, engine, hardware):
    return os.path.join(root, "configs", "engine_tables", engine, f"{hardware}.json")


def hardware_of(e):
    """The entry's tpbench hardware: its prediction's, else its GPU's (the collectives rows)."""
    if e["predict"].get("hardware"):
        return e["predict"]["hardware"]
    gpu = e["conditions"].get("gpu", "")
    return next((hw for name, hw in GPU_OF if gpu.startswith(name)), None)


def engine_of(root, e):
    """The tables engine that prices entry `e`, or None (no such engine in configs/engines, or
    no tables for its GPU)."""
    if e["kind"] != "published":
        return None
    named = e["conditions"].get("engine", "")
    eng = next((t for start, t in ENGINE_OF if named.startswith(start)), None)
    hw = hardware_of(e)
    usable = eng and hw and os.path.exists(tables_path(root, eng, hw)) and \
        os.path.exists(os.path.join(root, "configs", "engines", f"{eng}.json"))
    return eng if usable else None


def collectives_take_engine(tpbench):
    """Whether `tpbench collectives` prices with --engine (else its rows keep today's)."""
    r = subprocess.run([tpbench, "collectives", "--help"], capture_output=True, text=True)
    return "--engine" in r.stdout


def with_tables(root, entries, collectives_ok):
    """Copies of the entries, each re-priced by its engine's tables where it has them: the
    entries and {id: the engine that priced it}."""
    out, priced = [], {}
    for e in entries:
        eng = engine_of(root, e)
        if eng and ("model" in e["conditions"] or collectives_ok):
            e = copy.deepcopy(e)
            e["predict"]["engine"] = eng
            priced[e["id"]] = eng
        out.append(e)
    return out, priced


def stats(errs):
    a = sorted(abs(x) for x in errs)
    return (len(a), statistics.median(a), a[-1]) if a else (0, None, None)


def verdict(n, med, worst, median_target, worst_target):
    if not n:
        return "0 entries"
    ok = med <= median_target and worst <= worst_target
    return (f"{n} entries, median |error| {100 * med:.1f}%, worst {100 * worst:.1f}%: "
            f"{'meets' if ok else 'misses'} issue 32's targets (median <= "
            f"{100 * median_target:.0f}%, worst <= {100 * worst_target:.0f}%)")


def print_comparison(today, tables, priced, targets):
    """Each re-priced entry today and with tables, then the held-out summaries side by side."""
    by_id = {e["id"]: err for e, err in today}
    print(f"\nwith each entry's engine tables (--engine-tables): {len(priced)} entries re-priced")
    print(f"{'entry':<34} {'role':<8} {'engine':<11} {'today':>8} {'tables':>8}")
    for e, err in tables:
        if e["id"] in priced:
            was = by_id.get(e["id"])
            was_s = f"{100 * was:>+7.1f}%" if was is not None else f"{'-':>8}"
            print(f"{e['id']:<34} {e['role']:<8} {priced[e['id']]:<11} {was_s} "
                  f"{100 * err:>+7.1f}%")
    rows = (("held-out, published", lambda e: e["role"] == "held-out" and e["kind"] == "published"),
            ("held-out, the re-priced entries",
             lambda e: e["role"] == "held-out" and e["id"] in priced),
            ("held-out, all", lambda e: e["role"] == "held-out"))
    for label, takes in rows:
        for name, res in (("today", today), ("with engine tables", tables)):
            n, med, worst = stats([err for e, err in res if takes(e)])
            print(f"{label}, {name}: {verdict(n, med, worst, *targets)}")


def table_impl(e):
    """The all-reduce table a collectives row is judged against, or None: a custom all-reduce
    row only where vLLM's own dispatch picked the kernel (the table is that dispatch), an NCCL
    row only at NCCL's own choice of algorithm (the table's), never a forced ring or NVLS."""
    p, named = e["predict"], e["conditions"].get("engine", "")
    if p.get("kind", "all_reduce") != "all_reduce" or "model" in e["conditions"]:
        return None
    if named.startswith("vLLM custom"):
        if "dispatch" not in named and p.get("algo") != "auto":
            return None
        return "custom_eager" if p.get("eager") else "custom_graph"
    forced = "NCCL_ALGO" in named or p.get("algo") in ("ring", "tree", "nvls")
    return None if forced else "nccl"


def curve_s(curve, size):
    """Time (s) of `size` bytes on a table curve: linear between its points, and from the last
    two beyond its largest (FORMAT57's rule for collectives); below its smallest, no faster
    than its smallest."""
    xs, ys = curve["bytes"], curve["s"]
    i = max(1, min(len(xs) - 1, next((k for k, x in enumerate(xs) if x >= size), len(xs) - 1)))
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return max(y0 + (y1 - y0) * (size - x0) / (x1 - x0), min(y0, y1) if size < x0 else 0.0)


def table_metric(e, s):
    """Entry `e`'s metric from a time `s` on the table (nccl-tests' bandwidths)."""
    p, metric = e["predict"], e["metric"]
    if metric == "allreduce_time_us":
        return s * 1e6
    algbw = p["bytes"] / s / 1e9
    n = p["world"]
    return {"allreduce_algbw_GBps": algbw, "allreduce_busbw_GBps": algbw * 2 * (n - 1) / n}[metric]


def judge_collectives(root, entries, load):
    """The corpus's all-reduce rows against the measured all-reduce tables themselves (which
    issue 32 lacked): [(entry, error, table name)] where a table has the row's GPU and ranks."""
    out = []
    for e in entries:
        impl, hw = table_impl(e), hardware_of(e)
        named = e["conditions"].get("engine", "")
        eng = next((t for start, t in ENGINE_OF if named.startswith(start)), "vllm-0.24")
        path = tables_path(root, eng, hw) if impl and hw else None
        if not path or not os.path.exists(path):
            continue
        curve = load(path).get("collectives", {}).get("all_reduce", {}).get(impl, {}).get(
            str(e["predict"]["world"]))
        if curve:
            err = table_metric(e, curve_s(curve, e["predict"]["bytes"])) / e["value"] - 1
            out.append((e, err, f"{eng}/{hw} all_reduce.{impl}"))
    return out


def print_collectives(judged, targets):
    print(f"\nall-reduce rows against the measured tables themselves ({len(judged)} rows; a "
          "custom all-reduce row where vLLM's dispatch picked the kernel, NCCL at its own choice)")
    for e, err, table in judged:
        print(f"  {e['id']:<30} {e['role']:<8} {table:<40} {100 * err:>+7.1f}%")
    for role in ("held-out", "fit"):
        n, med, worst = stats([err for e, err, _ in judged if e["role"] == role])
        print(f"  {role}: {verdict(n, med, worst, *targets)}")
