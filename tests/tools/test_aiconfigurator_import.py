#!/usr/bin/env python3
"""results/aiconfigurator_tables.py and aiconfigurator_import.py over made-up AIConfigurator rows
whose conversion is known (no pandas, no package, no network): ms -> s at 4 significant digits,
collective elements -> bytes, a GEMM grid with a null hole, the window and beam filters, the
dtype mapping (fp8_block skipped), decode context = isl + step - 1, first row wins, the kernel
with most rows kept; the document assembled from a fake systems/ tree; and a wrong SYSTEM,
ENGINE or VERSION refused in one line naming it, exit 2, before pandas is looked for."""
import contextlib
import io
import json
import os
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "results"))
import aiconfigurator_import as imp  # noqa: E402
import aiconfigurator_tables as t  # noqa: E402

FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg)


def gemm_row(dt, m, n, k, ms, kernel="lin"):
    return {"gemm_dtype": dt, "kernel_source": kernel, "m": m, "n": n, "k": k, "latency": ms}


def test_rounding():
    check(t.sig4(123456) == 123500.0, f"sig4(123456) = {t.sig4(123456)}")
    check(t.sig4(0.000123456) == 0.0001235, f"sig4(0.000123456) = {t.sig4(0.000123456)}")
    # 0.0123456 ms is 1.23456e-05 s: 4 digits, seconds.
    check(t.seconds(0.0123456) == 1.235e-05, f"seconds(0.0123456 ms) = {t.seconds(0.0123456)}")


def test_gemm():
    rows = [gemm_row("bfloat16", m, n, k, m * n * k / 1e3) for m in (1, 2) for n in (64, 128) for k in (32, 64)
            if (m, n, k) != (2, 128, 64)]
    rows.append(gemm_row("bfloat16", 1, 64, 32, 99.0))  # a repeat: the first row wins
    rows.append(gemm_row("bfloat16", 1, 64, 32, 5.0, kernel="rare"))  # fewer rows: not kept
    rows += [gemm_row("fp8", 1, 64, 32, 0.5, "cutlass"), gemm_row("fp8_block", 1, 64, 32, 0.4, "deepgemm")]
    out, kept, notes = t.convert_gemm(rows)
    check(sorted(out) == ["bf16", "fp8"], f"dtypes {sorted(out)} (fp8_block skipped)")
    g = out["bf16"]
    check((g["m"], g["n"], g["k"]) == ([1, 2], [64, 128], [32, 64]), f"axes {g['m']} {g['n']} {g['k']}")
    # 1 x 64 x 32 / 1e3 ms = 2.048 ms = 0.002048 s; the hole (2, 128, 64) is null.
    check(g["s"][0][0][0] == 0.002048, f"s[0][0][0] = {g['s'][0][0][0]}")
    check(g["s"][1][1][1] is None and g["s"][1][1][0] == 0.008192, f"hole/neighbour {g['s'][1][1]}")
    check(g["kernel"] == "lin" and any("rare" in n for n in notes), f"kernel {g['kernel']}, notes {notes}")
    check(out["fp8"]["kernel"] == "cutlass" and out["fp8"]["s"] == [[[0.0005]]], f"fp8 {out['fp8']}")
    check(kept == 8, f"rows kept {kept}")


def attn_row(b, isl, step, ms, kv="bfloat16", window=0, beam=1, kernel="fa3", heads=(4, 1, 128)):
    return {"batch_size": b, "isl": isl, "step": step, "latency": ms, "kv_cache_dtype": kv,
            "window_size": window, "beam_width": beam, "kernel_source": kernel,
            "num_heads": heads[0], "num_key_value_heads": heads[1], "head_dim": heads[2]}


def test_decode_attention():
    rows = [attn_row(b, 1, s, 0.01 * b + s / 1e5) for b in (1, 64) for s in (1, 1023)]
    rows += [attn_row(64, 1, 2047, 0.7, window=128), attn_row(64, 1, 2047, 0.7, beam=2),
             attn_row(1, 1, 1, 0.02, kv="fp8"), attn_row(1, 1, 1, 0.02, kv="int8"),
             attn_row(1, 1, 1, 0.02, kernel="fa4"), attn_row(1, 1, 1, 0.02, heads=(3, 3, 80))]
    out, kept, notes = t.convert_attention(rows, "decode", shapes={(4, 1, 128)})
    check(sorted(out) == ["bf16", "fp8"], f"kv dtypes {sorted(out)} (int8 skipped)")
    e = out["bf16"]
    check(len(e) == 1 and (e[0]["q_heads"], e[0]["kv_heads"], e[0]["head_dim"]) == (4, 1, 128),
          f"shapes {[(x['q_heads'], x['kv_heads'], x['head_dim']) for x in e]} (3/3/80 not a model's)")
    e = e[0]
    # step 1023 after isl 1: AIConfigurator's s = 1024, so 1023 tokens were cached.
    check(e["batch"] == [1, 64] and e["context"] == [1, 1023], f"axes {e['batch']} {e['context']}")
    check(e["s"][1][1] == t.seconds(0.64 + 1023 / 1e5) and e["kernel"] == "fa3", f"s {e['s']} {e['kernel']}")
    check(kept == 5 and any("fa4" in n for n in notes), f"kept {kept}; windowed/beam rows left out; {notes}")


def test_prefill_attention():
    rows = [attn_row(1, p, 0, p / 1e4) for p in (16, 1024)] + [attn_row(1, 1024, 16, 9.0)]
    out, _, _ = t.convert_attention(rows, "prefill")
    e = out["bf16"][0]
    check(e["prompt"] == [16, 1024] and e["s"] == [[1.6e-06, 0.0001024]], f"prefill {e}")


def test_collectives():
    rows = [{"backend": "vllm_graph", "allreduce_dtype": "bfloat16", "num_gpus": 8, "message_size": 262144,
             "latency": 0.0111446},
            {"backend": "vllm_eager", "allreduce_dtype": "bfloat16", "num_gpus": 8, "message_size": 262144,
             "latency": 0.036},
            {"implementation": "trtllm", "allreduce_dtype": "bfloat16", "num_gpus": 2, "message_size": 128,
             "latency": 0.002}]
    out, kept = t.convert_custom_allreduce(rows)
    # 64 tokens x 4096 hidden = 262144 bf16 elements = 524288 bytes.
    g = out["custom_graph"]["8"]
    check(g == {"bytes": [524288], "s": [1.114e-05]}, f"custom_graph {g}")
    check(out["custom_eager"]["8"]["s"] == [3.6e-05] and out["custom"]["2"]["bytes"] == [256] and kept == 3,
          f"impls {out}")
    n = [{"op_name": op, "nccl_dtype": dt, "num_gpus": 2, "message_size": 1024, "latency": ms}
         for op, dt, ms in [("all_reduce", "half", 0.02), ("all_reduce", "half", 0.03), ("all_reduce", "int8", 0.01),
                            ("all_gather", "half", 0.01), ("alltoall", "half", 0.05)]]
    out, kept = t.convert_nccl(n)
    check(out == {"all_reduce": {"nccl": {"2": {"bytes": [2048], "s": [2e-05]}}},
                  "all_gather": {"nccl": {"2": {"bytes": [2048], "s": [1e-05]}}}} and kept == 2, f"nccl {out}")


def test_model_shapes():
    llama8b = {"num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}
    llama70b = {"text_config": {"num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128}}
    s = t.model_shapes([llama8b, llama70b, {"architectures": ["x"]}])
    want = {(32, 8, 128), (16, 4, 128), (8, 2, 128), (4, 1, 128), (64, 8, 128), (32, 4, 128), (16, 2, 128),
            (8, 1, 128)}
    check(s == want, f"model shapes {sorted(s)}")


def fake_tree(d):
    os.makedirs(os.path.join(d, "data", "h200_sxm", "gemm", "vllm", "0.24.0"))
    with open(os.path.join(d, "h200_sxm.yaml"), "w") as f:  # JSON is YAML
        json.dump({"gpu": {"mem_bw_empirical_scaling_factor": 0.8, "mem_empirical_constant_latency": 3e-6},
                   "misc": {"nccl_version": "2.26.2"}}, f)


def run_main(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = imp.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, err.getvalue().strip().splitlines()


def test_cli_refusals():
    with tempfile.TemporaryDirectory() as d:
        fake_tree(d)
        for argv, field in [(["h999_sxm", "vllm", "0.24.0"], "SYSTEM"), (["h200_sxm", "vlm", "0.24.0"], "ENGINE"),
                            (["h200_sxm", "vllm", "0.9"], "VERSION")]:
            rc, lines = run_main(argv + ["--systems-dir", d, "--out", d])
            check(rc == 2 and len(lines) == 1 and f": {field}: " in lines[0], f"{argv}: rc {rc}, {lines}")
        check("there are: 0.24.0" in run_main(["h200_sxm", "vllm", "0.9", "--systems-dir", d])[1][0],
              "VERSION lists what exists")


def test_document():
    """build() over a fake tree, the parquet reader replaced by made-up rows."""
    rows = {"gemm_perf": [gemm_row("bfloat16", 1, 64, 32, 1.0)],
            "context_attention_perf": [attn_row(1, 16, 0, 0.01)],
            "generation_attention_perf": [attn_row(1, 1, 1, 0.01)],
            "nccl_perf": [{"op_name": "all_reduce", "nccl_dtype": "half", "num_gpus": 2, "message_size": 1,
                           "latency": 0.01}]}

    def read_table(root, rel, pandas, yaml):
        name = os.path.basename(rel)[:-len(".parquet")]
        if name not in rows:
            return None, None
        return rows[name], {"file": "systems/" + rel, "sha256": "x", "rows": 1, "collection": None}

    saved = imp.read_table, imp.load_modules
    imp.read_table = read_table
    imp.load_modules = lambda: (None, types.SimpleNamespace(safe_load=json.load))
    try:
        with tempfile.TemporaryDirectory() as d:
            fake_tree(d)
            a = types.SimpleNamespace(system="h200_sxm", engine="vllm", version="0.24.0")
            doc = imp.build(a, d)
    finally:
        imp.read_table, imp.load_modules = saved
    check((doc["engine"], doc["hardware"]) == ("vllm-0.24", "h200-sxm"), f"names {doc['engine']} {doc['hardware']}")
    check(doc["collectives"] == {"all_reduce": {"nccl": {"2": {"bytes": [2], "s": [1e-05]}}}},
          f"collectives {doc['collectives']} (no custom all-reduce table: absent)")
    check(doc["elementwise"]["bw_fraction"] == 0.8 and doc["elementwise"]["fixed_s"] == 3e-06, "elementwise")
    check(any("custom_allreduce" in x for x in doc["provenance"]["absent"]), f"absent {doc['provenance'].get('absent')}")
    check(doc["decode_attention"]["bf16"][0]["context"] == [1], "decode context")
    text = t.dumps(doc)
    check(json.loads(text) == doc and "[0.001]" in [ln.strip() for ln in text.splitlines()], "dumps round-trips, a grid row a line")


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
    print("FAILED" if FAILS else "ok", len(FAILS))
    sys.exit(1 if FAILS else 0)
