"""AIConfigurator's kernel tables (rows as plain dicts) -> tpbench's engine table (FORMAT: issue 57).

Standard library only, so tests feed it synthetic rows without pandas; aiconfigurator_import.py
reads the parquet files and calls these. Times become seconds, collective sizes bytes, every
number 4 significant digits. Where a key repeats, the first row wins, as AIConfigurator's own
table view folds its rows (its h200_sxm nccl_perf holds each size twice).
"""
import json

# AIConfigurator's dtype names -> tpbench's; any other (fp8_block, int8, nvfp4, ...) is skipped.
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "fp8": "fp8"}
ELEMENT_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "fp8": 1}

# The collective implementations: AIConfigurator's custom all-reduce `backend` (vLLM, SGLang)
# or `implementation` (TensorRT-LLM) column -> tpbench's impl name.
CUSTOM_IMPLS = {
    "vllm_graph": "custom_graph",
    "vllm_eager": "custom_eager",
    "sglang_graph": "custom_graph",
    "sglang_eager": "custom_eager",
    # TensorRT-LLM's own all-reduce kernel; its table does not say graph or eager.
    "trtllm": "custom",
}


def sig4(x):
    """x with 4 significant digits (JSON keeps the shortest repr of that float)."""
    return float(f"{x:.4g}")


def seconds(ms):
    """AIConfigurator's milliseconds -> seconds, 4 significant digits."""
    return sig4(ms / 1000.0)


def first_wins(rows, key):
    """{key(row): row}, keeping the first row of each key."""
    out = {}
    for r in rows:
        out.setdefault(key(r), r)
    return out


def grid(cells, *axes):
    """Nested lists over the axes (outermost first) of cells[(a, b, ...)] in seconds; null
    where a combination was not measured."""
    if not axes:
        return None
    if len(axes) == 1:
        return [seconds(cells[(v,)]) if (v,) in cells else None for v in axes[0]]
    return [grid({k[1:]: ms for k, ms in cells.items() if k[0] == v}, *axes[1:]) for v in axes[0]]


def most_rows_kernel(rows):
    """(the kernel_source with the most rows, {kernel: rows}); ties go to the name first in
    sorted order, so the choice does not hang on row order."""
    counts = {}
    for r in rows:
        counts[r["kernel_source"]] = counts.get(r["kernel_source"], 0) + 1
    best = sorted(counts, key=lambda k: (-counts[k], k))[0]
    return best, counts


def convert_gemm(rows):
    """gemm_perf rows -> ({dtype: {kernel, m, n, k, s}}, rows kept, notes)."""
    out, kept, notes = {}, 0, []
    for src in sorted({r["gemm_dtype"] for r in rows}):
        dt = DTYPES.get(src)
        if dt is None:
            continue
        mine = [r for r in rows if r["gemm_dtype"] == src]
        kernel, counts = most_rows_kernel(mine)
        if len(counts) > 1:
            notes.append(f"gemm {src}: kept {kernel} (most rows) of {counts}")
        mine = [r for r in mine if r["kernel_source"] == kernel]
        cells = {k: r["latency"] for k, r in first_wins(mine, lambda r: (r["m"], r["n"], r["k"])).items()}
        axes = [sorted({k[i] for k in cells}) for i in range(3)]
        out[dt] = {"kernel": kernel, "m": axes[0], "n": axes[1], "k": axes[2], "s": grid(cells, *axes)}
        kept += len(cells)
    return out, kept, notes


def full_attention(rows):
    """The rows tpbench prices: full attention (window_size 0) at beam width 1."""
    return [r for r in rows if r.get("window_size", 0) == 0 and r.get("beam_width", 1) == 1]


def decode_context(r):
    """Tokens already in the KV cache at this decode step. AIConfigurator keys a generation row
    by s = isl + step and, decoding after a prompt of P tokens, queries s = P + 1 (checked
    against its engine: Llama-3.1-8B, B 64, TP 8, isl 2048 prices attention at its s = 2049):
    s counts the new token too, so the cache held s - 1."""
    return r["isl"] + r["step"] - 1


TP_SIZES = (1, 2, 4, 8)


def model_shapes(configs):
    """{(q_heads, kv_heads, head_dim)} one GPU holds for each Hugging Face config at TP 1-8:
    heads split by TP, KV heads replicated (one a GPU) where TP is a multiple of them."""
    out = set()
    for c in configs:
        c = c.get("text_config", c)
        n, hidden = c.get("num_attention_heads"), c.get("hidden_size")
        kv = c.get("num_key_value_heads") or n
        hd = c.get("head_dim") or (hidden // n if n and hidden else None)
        if not (isinstance(n, int) and isinstance(kv, int) and isinstance(hd, int)):
            continue
        for tp in TP_SIZES:
            kv_tp = kv // tp if kv % tp == 0 else (1 if tp % kv == 0 else None)
            if n % tp == 0 and kv_tp:
                out.add((n // tp, kv_tp, hd))
    return out


def convert_attention(rows, phase, shapes=None):
    """context/generation_attention rows -> ({kv dtype: [entry]}, rows kept, notes); phase is
    "prefill" (axis `prompt`: isl, step 0 only, no cached prefix) or "decode" (axis `context`).
    shapes: the (q_heads, kv_heads, head_dim) to keep (None: all)."""
    axis = "prompt" if phase == "prefill" else "context"
    rows = full_attention(rows)
    if shapes is not None:
        rows = [r for r in rows if (r["num_heads"], r["num_key_value_heads"], r["head_dim"]) in shapes]
    if phase == "prefill":
        rows = [r for r in rows if r["step"] == 0]
    out, kept, notes, dropped = {}, 0, [], {}
    shapes = {}
    for r in rows:
        shapes.setdefault((r["kv_cache_dtype"], r["num_heads"], r["num_key_value_heads"], r["head_dim"]), []).append(r)
    for (src, qh, kvh, hd) in sorted(shapes):
        dt = DTYPES.get(src)
        if dt is None:
            continue
        kernel, counts = most_rows_kernel(shapes[(src, qh, kvh, hd)])
        for k, n in counts.items():
            if k != kernel:
                dropped[k] = dropped.get(k, 0) + n
        mine = [r for r in shapes[(src, qh, kvh, hd)] if r["kernel_source"] == kernel]
        length = (lambda r: r["isl"]) if phase == "prefill" else decode_context
        cells = {k: r["latency"] for k, r in first_wins(mine, lambda r: (r["batch_size"], length(r))).items()}
        batch, lengths = sorted({k[0] for k in cells}), sorted({k[1] for k in cells})
        out.setdefault(dt, []).append({"kernel": kernel, "q_heads": qh, "kv_heads": kvh, "head_dim": hd,
                                       "batch": batch, axis: lengths, "s": grid(cells, batch, lengths)})
        kept += len(cells)
    used = {}
    for entries in out.values():
        for e in entries:
            used[e["kernel"]] = used.get(e["kernel"], 0) + 1
    notes.append(f"{phase}_attention kernels, by (kv dtype, head shape) entries: {used}" +
                 (f"; where a shape had several, the one with most rows was kept, leaving out rows of "
                  f"{dropped}" if dropped else ""))
    return out, kept, notes


def curve(rows, dtype_col):
    """{ranks: {bytes, s}} from rows of one collective implementation; message_size counts
    elements of the row's dtype (AIConfigurator queries tokens x hidden: at B 64, TP 8,
    Llama-3.1-8B its all-reduce is the 8-rank row at 262144 = 64 x 4096)."""
    out = {}
    for g in sorted({r["num_gpus"] for r in rows}):
        mine = first_wins([r for r in rows if r["num_gpus"] == g], lambda r: r["message_size"])
        sizes = sorted(mine)
        out[str(g)] = {"bytes": [n * ELEMENT_BYTES[mine[n][dtype_col]] for n in sizes],
                       "s": [seconds(mine[n]["latency"]) for n in sizes]}
    return out


def convert_custom_allreduce(rows):
    """custom_allreduce_perf rows -> ({impl: {ranks: curve}}, rows kept). Only 16-bit rows."""
    impl_of = lambda r: CUSTOM_IMPLS.get(r.get("backend") or r.get("implementation"))
    rows = [r for r in rows if impl_of(r) and ELEMENT_BYTES.get(r["allreduce_dtype"]) == 2]
    out = {}
    for impl in sorted({impl_of(r) for r in rows}):
        out[impl] = curve([r for r in rows if impl_of(r) == impl], "allreduce_dtype")
    return out, sum(len(c["s"]) for v in out.values() for c in v.values())


def convert_nccl(rows):
    """nccl_perf rows -> ({kind: {"nccl": {ranks: curve}}}, rows kept): all_reduce and
    all_gather, half rows (16-bit payloads, 2 bytes an element)."""
    out = {}
    for kind in ("all_reduce", "all_gather"):
        mine = [r for r in rows if r["op_name"] == kind and r["nccl_dtype"] == "half"]
        if mine:
            out[kind] = {"nccl": curve(mine, "nccl_dtype")}
    return out, sum(len(c["s"]) for v in out.values() for c in v["nccl"].values())


def elementwise(gpu, system):
    """The system file's memory-bound corrections, with what AIConfigurator says they are."""
    return {"bw_fraction": gpu["mem_bw_empirical_scaling_factor"],
            "fixed_s": sig4(gpu["mem_empirical_constant_latency"]),
            "source": f"AIConfigurator's systems/{system}.yaml mem_bw_empirical_scaling_factor and "
                      "mem_empirical_constant_latency, which it calls unofficial corrections from "
                      "observation"}


def dumps(doc):
    """The table as JSON: objects indented, a list of numbers on one line, each row of a grid on
    its own line, so a regenerated table diffs by row."""
    def emit(v, ind):
        pad, inner = "\n" + " " * ind, "\n" + " " * (ind + 1)
        if isinstance(v, dict):
            if not v:
                return "{}"
            return "{" + ",".join(inner + json.dumps(k) + ": " + emit(x, ind + 1) for k, x in v.items()) + pad + "}"
        if isinstance(v, list) and v and (all(isinstance(x, (list, dict)) for x in v) or
                                          all(isinstance(x, str) for x in v)):
            return "[" + ",".join(inner + emit(x, ind + 1) for x in v) + pad + "]"
        return json.dumps(v, separators=(",", ":"))
    return emit(doc, 0) + "\n"
