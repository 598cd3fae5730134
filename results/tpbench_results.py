"""tpbench results as pandas DataFrames, for notebooks and for plot.py (Debian: python3-pandas).

    import sys; sys.path.insert(0, "results")
    import tpbench_results as t
    r = t.load("out/quickstart")     # a results folder, a results.json, or a list of them
    r.points.shape, r.ranks.shape

Tables (every row carries `source`, the results.json it came from, and `point`, the point's
index in that file's points[]; join on both):
  points       one row per model point (run, sweep, serve): params and metrics by their own
               names (`batch`, `mbu`, `step_time_s.p50`), every other block by its path
               (`collectives.wait_fraction`, `straggler.rank`, `cost.flops`, `serve.steps`,
               `params.serve.x`); a point that is not ok has its status and reason and NaN
               figures
  ranks        one row per rank of each model point (ranks[] of results/SCHEMA.md)
  steps        the raw per-step samples: one row per measured step (`samples.step_time_s`)
  collectives  one row per message size of a `tpbench collectives` run
  collective_ranks  one row per rank per message size (arrival lag, wait, transfer)
  requests     serve: requests.jsonl (token_s[] kept as a list per row)
  serve_steps  serve: steps.jsonl (ranks[] kept as a list per row)
  curve        serve: the top-level curve's points; `curves[source]` is the whole section
               (free region, knee, memory wall)
  late_tokens  serve: each point's longest inter-token gaps, one row each, with the part
               that made them (metrics.itl_attribution.worst[], results 1.21.0); 1.22.0's
               parts_s as columns parts_s.prefill .. parts_s.between_steps, and prefilled[]
               (the step's largest prompt rows) kept as a list per row
Field meanings: results/SCHEMA.md. Nothing is recomputed here; `trace(source, point)` reads a
point's Chrome trace.
"""
import json
import os

import pandas as pd

# The blocks of a point that become columns under their own prefix.
POINT_BLOCKS = ("collectives", "straggler", "clock_sync", "cost", "serve", "verification",
                "memory", "tp_placement")


def results_file(path):
    """The results.json that `path` (a folder or a file) names."""
    return os.path.join(path, "results.json") if os.path.isdir(path) else path


def _flat(d, prefix=""):
    """Nested dicts as dotted keys; lists stay values (inject[] is joined: one text per point)."""
    out = {}
    for k, v in (d or {}).items():
        key = prefix + k
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        elif k == "inject" and isinstance(v, list):
            out[key] = ";".join(v)
        else:
            out[key] = v
    return out


def _is_collectives_point(p):
    return "kind" in p.get("params", {}) and "bytes" in p.get("params", {})


def _point_row(source, i, p):
    row = {"source": source, "point": i, "status": p.get("status"), "reason": p.get("reason", "")}
    params = dict(p.get("params", {}))
    serve = params.pop("serve", None)
    row.update(_flat(params))
    if serve is not None:
        row.update(_flat(serve, "params.serve."))
    row.update(_flat(p.get("metrics", {})))
    for b in POINT_BLOCKS:
        if isinstance(p.get(b), dict):
            row.update(_flat(p[b], b + "."))
    row["warnings"] = ";".join(p.get("warnings", []))
    row["trace"] = p.get("trace")
    return row


def _coll_row(source, i, p):
    row = {"source": source, "point": i, "status": p.get("status"), "reason": p.get("reason", "")}
    row.update(_flat(p.get("params", {})))
    metrics = {k: v for k, v in p.get("metrics", {}).items() if k != "definitions"}
    row.update(_flat(metrics))
    for b in ("collectives", "straggler", "clock_sync"):
        if isinstance(p.get(b), dict):
            row.update(_flat(p[b], b + "."))
    return row


def _jsonl(path, point_index):
    """The lines of a serve log that belong to points in `point_index` (point number -> True)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if r.get("point") in point_index]


class Results:
    """What load() returns: the tables above plus the documents they came from."""

    def __init__(self, documents):
        self.documents = documents  # [{source, dir, doc}]
        rows = {k: [] for k in ("points", "ranks", "steps", "collectives", "collective_ranks",
                                "requests", "serve_steps", "curve", "late_tokens")}
        self.curves = {}
        for d in documents:
            self._add(d, rows)
        for k, v in rows.items():
            setattr(self, k, pd.DataFrame(v))

    def _add(self, d, rows):
        source, doc = d["source"], d["doc"]
        logs = {}  # serve log file -> {point: True}
        for i, p in enumerate(doc.get("points", [])):
            if _is_collectives_point(p):
                rows["collectives"].append(_coll_row(source, i, p))
                for r in p.get("ranks", []):
                    rows["collective_ranks"].append(
                        {"source": source, "point": i, "kind": p["params"]["kind"],
                         "bytes": p["params"]["bytes"], **_flat(r)})
                continue
            rows["points"].append(_point_row(source, i, p))
            for r in p.get("ranks", []):
                rows["ranks"].append({"source": source, "point": i, **_flat(r)})
            for k, t in enumerate(p.get("samples", {}).get("step_time_s", [])):
                rows["steps"].append({"source": source, "point": i, "step": k, "step_time_s": t})
            attribution = (p.get("metrics") or {}).get("itl_attribution") or {}
            for w in attribution.get("worst") or []:
                rows["late_tokens"].append({"source": source, "point": i, **_flat(w)})
            serve = p.get("serve") or {}
            for key, table in (("steps_file", "serve_steps"), ("requests_file", "requests")):
                if serve.get(key):
                    logs.setdefault((serve[key], table), {})[i] = True
        for (name, table), pts in logs.items():
            for r in _jsonl(os.path.join(d["dir"], name), pts):
                rows[table].append({"source": source, **r})
        if isinstance(doc.get("curve"), dict):
            self.curves[source] = doc["curve"]
            for c in doc["curve"].get("points", []):
                rows["curve"].append({"source": source, **c})

    def point(self, source, i):
        """The point record as written (a dict)."""
        for d in self.documents:
            if d["source"] == source:
                return d["doc"]["points"][i]
        raise KeyError(source)

    def trace(self, source, i):
        """The point's Chrome trace (a dict), or None when it has none or the file is gone."""
        for d in self.documents:
            if d["source"] == source:
                name = d["doc"]["points"][i].get("trace")
                f = os.path.join(d["dir"], name) if name else None
                if f and os.path.exists(f):
                    with open(f) as fh:
                        return json.load(fh)
        return None


def load(paths):
    """Results from a results folder or results.json, or a list of them."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    documents = []
    for p in paths:
        f = results_file(os.fspath(p))
        with open(f) as fh:
            doc = json.load(fh)
        if not isinstance(doc.get("points"), list):
            raise ValueError(f"{f}: not a tpbench results document (no points[])")
        documents.append({"source": f, "dir": os.path.dirname(f) or ".", "doc": doc})
    return Results(documents)
