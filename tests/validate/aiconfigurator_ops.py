"""Op-by-op comparison for tests/validate/aiconfigurator.py: AIConfigurator's ops and tpbench's
ops are named differently and cut differently (AIC's add_norm is the residual add and the norm;
tpbench's attention is split into rope, kv_write and attention), so both are summed into the
same groups before they are set side by side.
"""
import statistics

ABOUT = ("NVIDIA AIConfigurator's estimates (static_gen TPOT: isl 1024, osl 2, its first "
         "generation step at context 1024; static_ctx TTFT: batch 1) on the issue 57 grid, with "
         "each point's CLI command, per-op times (ms) and AIC's own memory verdict; written by "
         "tests/validate/aiconfigurator.py --aic-python/--aic/--install, read by it (and CI) to "
         "compare tpbench's model backend: consistency, not truth")
# AIC's op names (after the generation_/context_ prefix) that the patterns below would misfile.
AIC_GROUPS = {"add_norm_1": "norm", "add_norm_2": "norm", "qkv_gemm": "qkv_proj",
              "proj_gemm": "o_proj", "gate_ffn1_gemm": "gate_up_proj", "act_gate": "act",
              "ffn2_gemm": "down_proj", "logits_gemm": "lm_head", "ar_1": "all_reduce",
              "ar_2": "all_reduce", "embedding_ar": "embedding", "p2p": "p2p"}
# (substring, group), first match wins: the all-reduces before "attn" and "norm" (allreduce_attn),
# the norms before "attn" (rmsnorm_attn).
PATTERNS = (("allreduce", "all_reduce"), ("all_reduce", "all_reduce"), ("embed", "embedding"),
            ("norm", "norm"), ("residual", "norm"), ("qkv", "qkv_proj"), ("rope", "attention"),
            ("rotary", "attention"), ("kv_write", "attention"), ("attention", "attention"),
            ("o_proj", "o_proj"), ("gate_up", "gate_up_proj"), ("swiglu", "act"),
            ("silu", "act"), ("down", "down_proj"), ("lm_head", "lm_head"),
            ("logits", "lm_head"), ("sampl", "lm_head"))
STANDARD = {"op", "time_s_per_step", "share_of_step", "bytes_per_step", "flops_per_step",
            "achieved_bw", "mbu"}


def group(name):
    """The group of an op of either side; an op no rule knows is a group of its own."""
    bare = name.removeprefix("generation_").removeprefix("context_")
    if bare in AIC_GROUPS:
        return AIC_GROUPS[bare]
    return next((g for s, g in PATTERNS if s in bare), bare)


def op_notes(o):
    """What results.json says of an op beyond its numbers (e.g. which table priced it)."""
    return {k: v for k, v in o.items() if k not in STANDARD}


def grouped(ms_of):
    g = {}
    for name, ms in ms_of.items():
        g[group(name)] = g.get(group(name), 0.0) + ms
    return g


def groups_of(q, per_op):
    """({group: AIC ms}, {group: tpbench ms}) of one compared point."""
    return grouped(q["aic"]["ops_ms"]), grouped({k: v[0] for k, v in per_op.items()})


def worst_group(q, per_op):
    a, t = groups_of(q, per_op)
    g = max(set(a) | set(t), key=lambda k: abs(t.get(k, 0) - a.get(k, 0)))
    return f"{g} {t.get(g, 0):.3g} vs {a.get(g, 0):.3g} ms"


def print_table(rows, engine, aic_engine):
    print(f"tpbench --backend model --engine {engine} against AIConfigurator's {aic_engine} "
          "(ms; TPOT for decode, TTFT for prefill)")
    print(f"{'point':<40} {'AIC':>9} {'tpbench':>9} {'ratio':>6} {'error':>7}  "
          "op group differing most: tpbench vs AIC")
    for q, aic, ms, per_op in rows:
        err = 100 * (ms / aic - 1)
        print(f"{q['id']:<40} {aic:>9.4g} {ms:>9.4g} {ms / aic:>6.3f} {err:>+6.1f}%  "
              f"{worst_group(q, per_op)}")


def print_composition(rows):
    """Each op group over all points: tpbench / AIC, its part of the error, and the points where
    only one side prices it (a composition difference, not a price difference)."""
    if not rows:
        return
    per = {}
    for q, aic, ms, per_op in rows:
        a, t = groups_of(q, per_op)
        for g in set(a) | set(t):
            per.setdefault(g, []).append((a.get(g, 0.0), t.get(g, 0.0), aic))
    print("op groups over the compared points: median tpbench/AIC, mean (tpbench - AIC) as a "
          "share of AIC's step, points priced by one side only")
    for g, xs in sorted(per.items(), key=lambda kv: -sum(abs(t - a) / s for a, t, s in kv[1])):
        if not any(a or t for a, t, _ in xs):
            continue  # priced by neither (AIC's p2p without pipeline stages)
        both = [t / a for a, t, _ in xs if a > 0 and t > 0]
        only_a = sum(1 for a, t, _ in xs if a > 0 and t == 0)
        only_t = sum(1 for a, t, _ in xs if t > 0 and a == 0)
        share = statistics.mean((t - a) / s for a, t, s in xs)
        ratio = f"{statistics.median(both):.3f}" if both else "-"
        print(f"  {g:<14} x{ratio:<6} {100 * share:>+6.1f}%  only AIC: {only_a:>3}  "
              f"only tpbench: {only_t:>3}")


def print_detail(q, ms, per_op):
    print(f"{q['id']}: tpbench {ms:.4g} ms against AIC {q['aic']['ms']:.4g} ms, by op group")
    a, t = groups_of(q, per_op)
    for g in sorted(set(a) | set(t), key=lambda k: -abs(t.get(k, 0) - a.get(k, 0))):
        aic_ops = ", ".join(f"{k} {v:.4g}" for k, v in q["aic"]["ops_ms"].items() if group(k) == g)
        print(f"  {g:<14} tpbench {t.get(g, 0):>8.4g}  AIC {a.get(g, 0):>8.4g}  ({aic_ops})")
        for k, (v, notes) in per_op.items():
            if group(k) == g:
                extra = f" {notes}" if notes else ""
                print(f"      tpbench {k} {v:.4g}{extra}")
