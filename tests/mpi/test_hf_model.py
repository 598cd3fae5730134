#!/usr/bin/env python3
"""`--model` given a Hugging Face config.json, through the real binary (one process, model backend,
virtual time: a few seconds in all).

- A checkpoint folder holding Qwen2.5-7B-Instruct's config.json runs at TP 4 on the model
  backend: the point's model is the folder's name, its shape the config's (hidden 3584, 28
  layers), and its warnings carry the q/k/v-bias note (a Qwen2 bias the layer does not compute).
- The shipped meta-llama/Meta-Llama-3.1-8B runs by hub id and prices the step exactly as
  tpbench's own llama-3.1-8b does (the same shape from two sources).
- A refused architecture (the shipped Qwen/Qwen3-30B-A3B, an MoE) and a windowed Mistral exit 2
  with exactly one line naming the architecture or the field."""
import os
import subprocess

from tpbtest import Ctx

RUN = ["run", "--backend", "model", "--hardware", "h100-sxm", "--dtype", "bf16", "--tp", "4",
       "--phase", "decode", "--batch", "8", "--context", "1024", "--steps", "2", "--warmup", "1"]


def run(c, name, model, expect_rc):
    out = c.out(name)
    p = subprocess.run([c.tpbench] + RUN + ["--model", model, "--out", out], capture_output=True,
                       text=True, env=c.env, timeout=120)
    c.check(p.returncode == expect_rc, f"{name}: rc {p.returncode}, expected {expect_rc}: "
                                       f"{p.stderr[-800:]}")
    return out, p


def main():
    c = Ctx()
    fixtures = os.path.join(c.source, "tests", "fixtures", "hf")
    out, _ = run(c, "qwen2_folder", os.path.join(fixtures, "Qwen2.5-7B-Instruct"), 0)
    if os.path.exists(os.path.join(out, "results.json")):
        r = c.results(out)
        point = r["points"][0]
        shape = r["config"]["model_shape"]
        c.check(point["params"]["model"] == "Qwen2.5-7B-Instruct",
                f"model named by its folder: {point['params']['model']}")
        c.check(shape["hidden"] == 3584 and shape["n_layers"] == 28 and shape["head_dim"] == 128,
                f"the config's shape echoed: {shape}")
        warnings = point.get("warnings") or []
        c.check(any(w.startswith("hf_config: Qwen2ForCausalLM's q/k/v projection biases")
                    for w in warnings), f"the bias note among the warnings: {warnings}")
        c.check_contract(out)

    steps = {}
    for name, model in (("hf_llama", "meta-llama/Meta-Llama-3.1-8B"), ("own_llama", "llama-3.1-8b")):
        out, _ = run(c, name, model, 0)
        if os.path.exists(os.path.join(out, "results.json")):
            steps[name] = c.results(out)["points"][0]["metrics"]["step_time_s"]["p50"]
            c.check_contract(out)
    c.check(len(steps) == 2 and steps["hf_llama"] == steps["own_llama"],
            f"the shipped HF Llama-3.1-8B prices as tpbench's own file: {steps}")

    for name, model, needle in (
            ("refused_moe", "Qwen/Qwen3-30B-A3B",
             "architectures 'Qwen3MoeForCausalLM' not supported (mixture of experts: issue 55)"),
            ("refused_window", os.path.join(fixtures, "Mistral-7B-v0.1.json"),
             "field 'sliding_window' is 4096")):
        _, p = run(c, name, model, 2)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        c.check(len(lines) == 1 and lines[0].startswith("tpbench: error: ") and needle in lines[0],
                f"{name}: one line naming it: {lines}")
    c.finish()


if __name__ == "__main__":
    main()
