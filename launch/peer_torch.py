#!/usr/bin/env python3
"""The device check's peer reference: the layer stack tpbench runs (no embedding, no LM head,
as `tpbench run` by default), in PyTorch on the same GPU in the same call, so the table puts
tpbench beside the kernels users' engines run. Shapes come from the bundle's configs/models,
the same files tpbench reads. bf16 weights (random, scale 0.02), a static KV cache, SDPA
attention with GQA; timed three ways:
  eager    one Python call per step;
  graph    the step captured in a torch.cuda.CUDAGraph and replayed;
  compile  torch.compile(fullgraph, static shapes) plus a CUDA graph, as gpt-fast runs.
Each point is the median of CUDA-event-timed steps after warm-up, appended to --out as one
JSON line. The flop and byte counts here are only for the console; the table compares step
times, and tpbench's own MBU/MFU come from its cost model.
Usage: peer_torch.py --modes eager,graph[,compile] [--small] [--model NAME] --out FILE.jsonl"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def model_shape(name, small):
    with open(os.path.join(HERE, "configs", "models", name + ".json")) as f:
        m = json.load(f)
    if small:  # the rehearsal's size: tiny, 2 layers
        m["n_layers"] = 2
    return m


def build(torch, m, dev, dt, gen):
    H, NH, NKV, D, FF = m["hidden"], m["n_heads"], m["n_kv_heads"], m["head_dim"], m["intermediate"]

    def rnd(*s):
        return torch.randn(*s, device=dev, dtype=dt, generator=gen) * 0.02

    return [dict(wqkv=rnd((NH + 2 * NKV) * D, H), wo=rnd(H, NH * D), wgu=rnd(2 * FF, H),
                 wd=rnd(H, FF), n1=torch.ones(H, device=dev, dtype=dt),
                 n2=torch.ones(H, device=dev, dtype=dt)) for _ in range(m["n_layers"])]


def make_step(torch, F, m, layers):
    NH, NKV, D, eps = m["n_heads"], m["n_kv_heads"], m["head_dim"], m["rms_eps"]

    def rms(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    def rope(x, cos, sin):  # x [B, heads, S, D], rotate-half layout
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def step(x, caches, pos, cos, sin):
        B, S, _ = x.shape
        for l, (kc, vc) in zip(layers, caches):
            q, k, v = (rms(x, l["n1"]) @ l["wqkv"].t()).split([NH * D, NKV * D, NKV * D], -1)
            q = rope(q.view(B, S, NH, D).transpose(1, 2), cos, sin)
            k = rope(k.view(B, S, NKV, D).transpose(1, 2), cos, sin)
            kc[:, :, pos:pos + S] = k
            vc[:, :, pos:pos + S] = v.view(B, S, NKV, D).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, kc[:, :, :pos + S], vc[:, :, :pos + S],
                                               is_causal=S > 1, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(B, S, NH * D) @ l["wo"].t()
            gate, up = (rms(x, l["n2"]) @ l["wgu"].t()).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ l["wd"].t()
        return x

    return step


def median_ms(torch, fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort()
    return ts[len(ts) // 2]


def graphed(torch, fn):
    """fn captured in a CUDA graph after two warm-up calls on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def point(torch, m, step, mode, phase, size, ctx, dev, dt, gen):
    B, S = (size, 1) if phase == "decode" else (1, size)
    L, NKV, D = m["n_layers"], m["n_kv_heads"], m["head_dim"]
    caches = [(torch.randn(B, NKV, ctx + S, D, device=dev, dtype=dt, generator=gen),
               torch.randn(B, NKV, ctx + S, D, device=dev, dtype=dt, generator=gen))
              for _ in range(L)]
    x = torch.randn(B, S, m["hidden"], device=dev, dtype=dt, generator=gen)
    inv = 1.0 / (m["rope_theta"] ** (torch.arange(0, D, 2, device=dev).float() / D))
    ang = torch.outer(torch.arange(ctx, ctx + S, device=dev).float(), inv)
    cos, sin = torch.cos(ang).to(dt), torch.sin(ang).to(dt)
    fn = lambda: step(x, caches, ctx, cos, sin)  # noqa: E731
    t0 = time.time()
    with torch.no_grad():
        if mode == "eager":
            ms = median_ms(torch, fn, 20 if phase == "decode" else 5)
        else:  # graph, and compile (whose step is already compiled) under a graph
            fn()
            torch.cuda.synchronize()
            g = graphed(torch, fn)
            ms = median_ms(torch, g.replay, 30 if phase == "decode" else 5)
    row = dict(peer="torch", mode=mode, model=m["name"], layers=L, phase=phase,
               batch=B, context=ctx if phase == "decode" else 0, prompt=S if phase == "prefill" else 0,
               step_ms=ms, setup_s=round(time.time() - t0 - 0, 2))
    del caches
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="eager,graph")
    ap.add_argument("--model", default="llama-3.1-8b")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch.py: no PyTorch here ({e}): no peer reference", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch.py: PyTorch sees no GPU: no peer reference", file=sys.stderr)
        return 1
    m = model_shape("tiny" if a.small else a.model, a.small)
    dev, dt = "cuda", torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(0)
    layers = build(torch, m, dev, dt, gen)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: {m['name']} "
          f"{m['n_layers']} layers", flush=True)
    plan = {"eager": [("decode", 1), ("decode", 8), ("decode", 64), ("decode", 256), ("prefill", 512), ("prefill", 4096)],
            "graph": [("decode", 1), ("decode", 8), ("decode", 64), ("decode", 256)],
            "compile": [("decode", 1), ("decode", 64), ("prefill", 4096)]}
    for mode in a.modes.split(","):
        step = make_step(torch, F, m, layers)
        if mode == "compile":
            import torch._dynamo
            torch._dynamo.config.cache_size_limit = 64
            step = torch.compile(step, fullgraph=True, dynamic=False)
        for phase, size in plan[mode]:
            row = point(torch, m, step, mode, phase, size, 1024 if phase == "decode" else 0, dev, dt, gen)
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
