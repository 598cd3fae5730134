#!/usr/bin/env python3
"""The device check's table (device_table.py), its part for ranks sharing one GPU (issue 54):
kernel choices equal within each TP group, an injected straggler recovered from the stamps,
and the GPU-to-host clock conversion error measured between ranks that read one globaltimer."""
# Judged on the points of more than one rank.
WITHIN = 0.05  # an injected straggler's excess recovered within 5% of what was asked


def fmt(v, w=6, d=3):
    return f"{v:{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"


def multi_rank(rows):
    return [(n, p) for n, p, _ in rows if p.get("status") == "ok" and len(p.get("ranks") or []) > 1]


def choice_key(text):
    """A kernel choice without its timings ('...; fastest of 8 timed candidates (...)'):
    the kernel picked is what must agree across a group, not each rank's own stopwatch."""
    return str(text).split(";")[0].strip()


def kernel_choices_lines(rows):
    """ranks[].kernel_choices equal within each TP group; returns the groups that differ."""
    failed = 0
    for name, p in multi_rank(rows):
        groups = {}
        for r in p["ranks"]:
            groups.setdefault(r.get("group", 0), []).append(r)
        bad = []
        for g, rs in sorted(groups.items()):
            keys = {r.get("rank"): [choice_key(c) for c in r.get("kernel_choices") or []] for r in rs}
            first = next(iter(keys.values()))
            for rank, k in keys.items():
                if k != first:
                    diff = next((b for a, b in zip(first, k) if a != b), f"{len(k)} choices against {len(first)}")
                    bad.append(f"group {g} rank {rank}: {diff[:90]}")
        n = max((len(r.get("kernel_choices") or []) for r in p["ranks"]), default=0)
        failed += bool(bad)
        verdict = "FAIL " + "; ".join(bad[:2]) if bad else "PASS" if n else "none recorded (the CPU tunes none)"
        print(f"\nkernel choices ({name}): {verdict} ({len(groups)} group(s), {n} choices a rank)")
    return failed


def inject_asked(p):
    """[(rank, key, value)] from the point's --inject specs ('rank=1:slowdown=1.3')."""
    out = []
    for spec in p["params"].get("inject") or []:
        kv = dict(x.split("=", 1) for x in str(spec).split(":") if "=" in x)
        rank = int(kv.pop("rank", -1)) if str(kv.get("rank", "-1")).lstrip("-").isdigit() else -1
        out += [(rank, k, v) for k, v in kv.items()]
    return out


def seconds(value, unit="us"):
    """A --inject time ('2ms', '500us', '0.002s'; bare numbers in `unit`) in seconds."""
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    v = str(value).strip()
    for u in ("ms", "us", "ns", "s"):
        if v.endswith(u):
            return float(v[:-len(u)]) * scale[u]
    return float(v) * scale[unit]


def inject_lines(rows):
    """The injected straggler recovered from the (device) stamps: the slowdown's rank named the
    straggler with (1 + excess_compute_fraction) within 5% of the factor; the host delay's rank
    named by the cause, its time outside ops per step within 5% of the delay. Returns misses."""
    missed = 0
    for name, p in multi_rank(rows):
        s = p.get("straggler") or {}
        for rank, key, value in inject_asked(p):
            if key == "slowdown":
                want = float(value)
                exc = s.get("excess_compute_fraction")
                got = 1 + exc if isinstance(exc, (int, float)) else None
                who = s.get("rank")
                what = f"rank {who} x{fmt(got, 5, 3).strip()} (asked x{want:g} on rank {rank})"
            elif key == "host_delay":
                want = seconds(value)
                cause = s.get("cause") or {}
                got, who = cause.get("outside_ops_excess_s"), cause.get("rank")
                what = (f"rank {who} {fmt(got * 1e3 if isinstance(got, (int, float)) else None, 5, 3).strip()} "
                        f"ms more per step outside its ops (asked {want * 1e3:g} ms on rank {rank})")
            else:
                continue
            ok = who == rank and isinstance(got, (int, float)) and abs(got / want - 1) <= WITHIN
            missed += not ok
            print(f"\ninject {key} ({name}): {'PASS' if ok else 'FAIL'} {what}; within {WITHIN:.0%}")
    return missed


def clock_field(clock, what):
    """The rank's GPU-to-host conversion `what` ('offset_s' or 'uncertainty_s') under whichever
    name the results give it (ranks[].clock: a device/gpu/conversion field); None if absent."""
    for k, v in (clock or {}).items():
        if k.endswith(what) and any(w in k for w in ("device", "gpu", "conversion")) \
                and isinstance(v, (int, float)):
            return v
    return None


def conversion_lines(rows):
    """Ranks that share a GPU read one globaltimer on one host clock: their conversions'
    offsets differ only by conversion error. That spread against the uncertainties the ranks
    report (the two largest summed); null where the results carry no per-rank conversion.
    Returns the GPUs whose spread exceeds it."""
    missed = 0
    for name, p in multi_rank(rows):
        gpus = {}
        for r in p["ranks"]:
            dev = next((r[k] for k in ("pci_bus_id", "bus_id", "device_index") if r.get(k) is not None),
                       r.get("device"))
            gpus.setdefault((r.get("host"), dev), []).append(r)
        for (host, dev), rs in sorted(gpus.items(), key=str):
            if len(rs) < 2:
                continue
            offs = [clock_field(r.get("clock"), "offset_s") for r in rs]
            unc = sorted((clock_field(r.get("clock"), "uncertainty_s") for r in rs), key=lambda u: u or 0)
            ranks = ",".join(str(r.get("rank")) for r in rs)
            if None in offs:
                print(f"\nclock conversion ({name}): ranks {ranks} on one GPU: null (no per-rank "
                      "GPU-to-host conversion in the results)")
                continue
            spread = max(offs) - min(offs)
            bound = sum(u for u in unc[-2:] if u is not None) if None not in unc else None
            ok = bound is not None and spread <= bound
            missed += not ok
            print(f"\nclock conversion ({name}): {'PASS' if ok else 'FAIL'} ranks {ranks} on one GPU: "
                  f"offsets spread {spread * 1e6:.2f} us against the reported "
                  f"{fmt(bound * 1e6 if bound is not None else None, 5, 2).strip()} us")
    return missed

