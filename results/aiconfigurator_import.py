#!/usr/bin/env python3
"""Converts the installed AIConfigurator's measured kernel tables into tpbench's engine table.

usage: aiconfigurator_import.py SYSTEM ENGINE VERSION [--out DIR] [--systems-dir DIR]
  e.g. `h200_sxm vllm 0.24.0` writes DIR/vllm-0.24/h200-sxm.json (DIR: configs/engine_tables
  beside this script). SYSTEM, ENGINE and VERSION are AIConfigurator's names; --systems-dir is
  its systems/ folder (default: $TPB_AIC_SYSTEMS_DIR, else the installed aiconfigurator-core's,
  found without importing it). The arguments are checked
  against that folder before pandas is imported. Bad input or a missing package: one line,
  exit 2. The conversion itself is aiconfigurator_tables.py (standard library only).
"""
import argparse
import hashlib
import json
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aiconfigurator_tables as tables  # noqa: E402

HARDWARE = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200",
            "a100_sxm": "a100-sxm-80g"}
ENGINES = ("vllm", "sglang", "trtllm")
INSTALL = "pip install aiconfigurator (with pandas and pyarrow)"
NOTES = [
    "decode_attention: context = tokens in the KV cache before the step. AIConfigurator keys a "
    "generation_attention row by s = isl + step (its rows have isl 1) and, decoding after a prompt "
    "of P tokens, queries s = P + 1 (its engine, Llama-3.1-8B B 64 TP 8 on h200_sxm vllm 0.24.0: "
    "isl 2048 prices generation attention at exactly its s = 2049 value), so context = isl + step - 1.",
    "AIConfigurator's own attention query is not the bare row: it smooths the generation table "
    "(its s 1025 gives 0.01921 ms where the rows at s 1024 and 2048 interpolate to 0.01894 ms) and "
    "adds analytical memory ops (RoPE, KV-cache write) to context attention (its Llama-3.1-8B "
    "TP 8 prefill of 1024 tokens: 0.0339 ms against the row's 0.0207 ms).",
    "prefill_attention: context_attention rows at step 0 only (no cached prefix); prompt = isl.",
    "collectives: message_size counts elements (AIConfigurator's all-reduce at B 64, TP 8, "
    "Llama-3.1-8B is 0.01114 ms a layer, the 8-rank custom graph row at 262144 = 64 x 4096); "
    "bytes = elements x 2 (bfloat16 / half rows only).",
    "Where a key repeats, the first row wins, as AIConfigurator's own table view folds them "
    "(h200_sxm's nccl 2.26.2 file holds each size twice, its rows saying version 2.29.2: the view "
    "reads the 8-rank half all_reduce at 262144 as 0.01924 ms, the first of 0.01924 and 0.02049).",
    "Only this version's own rows: AIConfigurator also borrows rows from sibling versions "
    "(its shared layer) where a shape is missing; those are not here.",
]


def fail(field, why):
    print(f"aiconfigurator_import: {field}: {why}", file=sys.stderr)
    sys.exit(2)


def choices(path):
    return sorted(d for d in os.listdir(path) if not d.startswith(".")) if os.path.isdir(path) else []


def systems_dir(given):
    """The systems/ folder: --systems-dir, else the installed package's (found, not imported)."""
    if given:
        if not os.path.isdir(os.path.join(given, "data")):
            fail("--systems-dir", f"'{given}' holds no data/ folder (AIConfigurator's systems/)")
        return given
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        fail("aiconfigurator-core", f"not installed: {INSTALL}")
    return os.path.join(list(spec.submodule_search_locations)[0], "systems")


def check_args(a, root):
    """The version's data folders, by op; every name checked against what exists."""
    systems = [d for d in choices(os.path.join(root, "data")) if os.path.isfile(os.path.join(root, d + ".yaml"))]
    if a.system not in systems:
        fail("SYSTEM", f"'{a.system}' is not one of {', '.join(systems)}")
    if a.system not in HARDWARE:
        fail("SYSTEM", f"'{a.system}' has no tpbench hardware name (known: {', '.join(sorted(HARDWARE))})")
    data = os.path.join(root, "data", a.system)
    if a.engine not in ENGINES:
        fail("ENGINE", f"'{a.engine}' is not one of {', '.join(ENGINES)}")
    versions = sorted(set(choices(os.path.join(data, "gemm", a.engine))) |
                      set(choices(os.path.join(data, "attention", a.engine))))
    if a.version not in versions:
        fail("VERSION", f"'{a.version}' has no {a.engine} gemm or attention tables on {a.system} "
                        f"(there are: {', '.join(versions) or 'none'})")


def engine_name(engine, version):
    return f"{engine}-{'.'.join(version.split('.')[:2])}"


def package_version():
    from importlib import metadata
    try:
        return "aiconfigurator-core " + metadata.version("aiconfigurator-core")
    except metadata.PackageNotFoundError:
        return "aiconfigurator-core (not installed: tables read from --systems-dir)"


def load_modules():
    missing = [m for m in ("pandas", "pyarrow", "yaml") if importlib.util.find_spec(m) is None]
    if missing:
        fail(" and ".join(missing), f"not importable: {INSTALL}")
    import pandas
    import yaml
    return pandas, yaml


def read_table(root, rel, pandas, yaml):
    """(rows, provenance) of systems/RELATIVE, or (None, None) where the file is absent."""
    path = os.path.join(root, rel)
    if not os.path.isfile(path):
        return None, None
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    rows = pandas.read_parquet(path).to_dict("records")
    meta_path = os.path.join(os.path.dirname(path), "collection_meta.yaml")
    meta = None
    if os.path.isfile(meta_path):
        with open(meta_path) as f:
            meta = yaml.safe_load(f)
    return rows, {"file": "systems/" + rel, "sha256": digest, "rows": len(rows), "collection": meta}


def model_shapes(root):
    """(the attention shapes AIConfigurator's shipped model configs have at TP 1-8, the note
    saying so); (None, note) keeps every shape where the configs are not beside systems/."""
    folder = os.path.join(root, "..", "model_configs")
    names = sorted(f for f in choices(folder) if f.endswith("_config.json"))
    if not names:
        return None, "attention: every (q_heads, kv_heads, head_dim) kept (no model_configs/ beside systems/)"
    configs = []
    for n in names:
        with open(os.path.join(folder, n)) as f:
            configs.append(json.load(f))
    return tables.model_shapes(configs), (
        f"attention: only the (q_heads, kv_heads, head_dim) a GPU holds for one of the {len(names)} "
        "Hugging Face configs AIConfigurator ships (model_configs/) at TP 1, 2, 4 or 8 (heads split "
        "by TP, KV heads replicated where TP is a multiple of them); the other measured shapes are "
        "left out to keep the file near 1 MB")


def build(a, root):
    pandas, yaml = load_modules()
    with open(os.path.join(root, a.system + ".yaml")) as f:
        system = yaml.safe_load(f)
    base = f"data/{a.system}"
    shapes, shapes_note = model_shapes(root)
    sources = {
        "gemm": (f"{base}/gemm/{a.engine}/{a.version}/gemm_perf.parquet", tables.convert_gemm),
        "prefill_attention": (f"{base}/attention/{a.engine}/{a.version}/context_attention_perf.parquet",
                              lambda r: tables.convert_attention(r, "prefill", shapes)),
        "decode_attention": (f"{base}/attention/{a.engine}/{a.version}/generation_attention_perf.parquet",
                             lambda r: tables.convert_attention(r, "decode", shapes)),
        "custom_allreduce": (f"{base}/comm/{a.engine}/{a.version}/custom_allreduce_perf.parquet",
                             lambda r: tables.convert_custom_allreduce(r) + ([],)),
        "nccl": (f"{base}/comm/nccl/{system['misc']['nccl_version']}/nccl_perf.parquet",
                 lambda r: tables.convert_nccl(r) + ([],)),
    }
    pkg = package_version()
    doc = {"format": 1, "engine": engine_name(a.engine, a.version), "hardware": HARDWARE[a.system]}
    prov = {"source": f"NVIDIA AIConfigurator ({pkg}, Apache-2.0): kernel timings measured on real nodes",
            "package": pkg, "system": a.system, "framework": a.engine, "version": a.version,
            "converted_by": "results/aiconfigurator_import.py", "notes": NOTES + [shapes_note], "tables": {}}
    converted, absent = {}, []
    for name, (rel, convert) in sources.items():
        rows, p = read_table(root, rel, pandas, yaml)
        if rows is None:
            absent.append(f"{name} (no systems/{rel})")
            continue
        converted[name], p["rows_kept"], notes = convert(rows)
        prov["notes"] += notes
        prov["tables"][name] = p
    sysfile = os.path.join(root, a.system + ".yaml")
    with open(sysfile, "rb") as f:
        prov["tables"]["elementwise"] = {"file": f"systems/{a.system}.yaml",
                                         "sha256": hashlib.sha256(f.read()).hexdigest()}
    if absent:
        prov["absent"] = absent
    doc["provenance"] = prov
    for name in ("gemm", "decode_attention", "prefill_attention"):
        if converted.get(name):
            doc[name] = converted[name]
    coll = {}
    if converted.get("custom_allreduce"):
        coll["all_reduce"] = dict(converted["custom_allreduce"])
    for kind, impls in converted.get("nccl", {}).items():
        coll.setdefault(kind, {}).update(impls)
    if coll:
        doc["collectives"] = coll
    doc["elementwise"] = tables.elementwise(system["gpu"], a.system)
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("engine", metavar="ENGINE")
    p.add_argument("version", metavar="VERSION")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "configs", "engine_tables")))
    p.add_argument("--systems-dir", default=os.environ.get("TPB_AIC_SYSTEMS_DIR") or None)
    a = p.parse_args(argv)
    root = systems_dir(a.systems_dir)
    check_args(a, root)
    doc = build(a, root)
    path = os.path.join(a.out, doc["engine"], doc["hardware"] + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = tables.dumps(doc)
    with open(path, "w") as f:
        f.write(text)
    kept = ", ".join(k for k in ("gemm", "decode_attention", "prefill_attention", "collectives") if k in doc)
    print(f"aiconfigurator_import: {path} ({len(text) / 1e6:.2f} MB: {kept})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
