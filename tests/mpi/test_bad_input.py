"""Bad input, systematically: a table of malformed CLI lines, --set values,
--config files, model and hardware files and --inject specs. Every case must end the job
quickly (no hang), with exit code 2 on every rank, exactly one "tpbench: error" line (rank 0
only), no internal error, and a message that names the offending field.

Cases run a few at a time: each is an mpirun start-up (~1 s) that fails before any compute."""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tpbtest import Ctx  # noqa: E402

TIMEOUT_S = 60  # a case that takes longer has hung: setup errors must not wait on peers

# Files the cases point at; {work} in a case's args is replaced by the work directory.
FIXTURES = {
    "malformed.json": '{"batch": 1,,}',
    "results_min.json": json.dumps({"schema": "tpbench.results", "points": []}),
    "not_object.json": "[1, 2, 3]",
    "unknown_key.json": json.dumps({"model": "tiny", "bacth": 4}),
    "batch_string.json": json.dumps({"batch": "four"}),
    "batch_bool.json": json.dumps({"batch": True}),
    "batch_list.json": json.dumps({"batch": [1, 2]}),
    "steps_float.json": json.dumps({"steps": 2.5}),
    "inject_number.json": json.dumps({"inject": 5}),
    "model_neg_hidden.json": json.dumps({"hidden": -1024, "n_layers": 2, "n_heads": 16,
                                         "n_kv_heads": 8, "head_dim": 64,
                                         "intermediate": 4096}),
    "model_unknown_field.json": json.dumps({"hidden": 1024, "n_layers": 2, "n_heads": 16,
                                            "n_kv_heads": 8, "head_dim": 64,
                                            "intermediate": 4096, "n_expert": 8}),
    "model_missing.json": json.dumps({"hidden": 1024, "n_layers": 2, "n_heads": 16,
                                      "n_kv_heads": 8, "head_dim": 64}),
    "model_float_dim.json": json.dumps({"hidden": 1024.5, "n_layers": 2, "n_heads": 16,
                                        "n_kv_heads": 8, "head_dim": 64,
                                        "intermediate": 4096}),
    "model_gqa.json": json.dumps({"hidden": 1024, "n_layers": 2, "n_heads": 16,
                                  "n_kv_heads": 6, "head_dim": 64, "intermediate": 4096}),
    "model_heads3.json": json.dumps({"hidden": 768, "n_layers": 2, "n_heads": 3,
                                     "n_kv_heads": 3, "head_dim": 64, "intermediate": 3072}),
    "model_kv6.json": json.dumps({"hidden": 768, "n_layers": 2, "n_heads": 12,
                                  "n_kv_heads": 6, "head_dim": 64, "intermediate": 4096}),
    "model_inter_odd.json": json.dumps({"hidden": 1024, "n_layers": 2, "n_heads": 16,
                                        "n_kv_heads": 8, "head_dim": 64,
                                        "intermediate": 4097}),
    # Counts so large that weight bytes overflow int64 (and n_layers would make the memory
    # plan count down for ever): refused up front.
    "model_huge.json": json.dumps({"hidden": 2**62, "n_layers": 2, "n_heads": 16,
                                   "n_kv_heads": 8, "head_dim": 64, "intermediate": 4096}),
    "model_huge_layers.json": json.dumps({"hidden": 1024, "n_layers": 10**15, "n_heads": 16,
                                          "n_kv_heads": 8, "head_dim": 64,
                                          "intermediate": 4096}),
    "model_malformed.json": '{"hidden": 1024',
    "hw_bad_bw.json": json.dumps({"peak_flops": {"fp32": 1e12}, "peak_bw": -5,
                                  "source": "test"}),
    "hw_unknown_dtype.json": json.dumps({"peak_flops": {"fp33": 1e12}, "peak_bw": 1e11,
                                         "source": "test"}),
    "hw_zero_flops.json": json.dumps({"peak_flops": {"fp32": 0}, "peak_bw": 1e11,
                                      "source": "test"}),
    "hw_zero_bw.json": json.dumps({"peak_flops": {"fp32": 1e12}, "peak_bw": 0, "source": "test"}),
    "hw_eff_zero.json": json.dumps({"peak_flops": {"bf16": 1e15}, "peak_bw": 3e12, "source": "test",
                                    "efficiency": {"source": "test", "points": [
                                        {"op": "qkv_proj", "phase": "decode", "tp": 8,
                                         "tokens": 1, "fraction": 0}]}}),
    "topo_measured2.json": json.dumps({"name": "m2", "model": {"gpus_per_node": 2, "measured": {
        "collective": "mpi", "ranks": 2, "all_reduce": [[8, 1e-6], [1024, 2e-6]],
        "source": "test"}}}),
}

# (name, np, args after "tpbench", substrings the error line must contain). Cases without
# --out get one from the runner so that only the field under test is wrong.
CASES = [
    # --- CLI structure -------------------------------------------------------------------
    ("no verb", 2, [], ["verb", "run, sweep"]),
    ("unknown verb", 2, ["fly"], ["unknown verb 'fly'", "run, sweep"]),
    ("trace steps negative", 2, ["run", "--trace-steps", "-1"], ["--trace-steps"]),
    ("unknown option", 2, ["run", "--frobnicate", "3"], ["--frobnicate"]),
    ("mistyped option", 2, ["run", "--bacth", "4"], ["--bacth", "did you mean --batch?"]),
    ("time without a unit it knows", 2, ["run", "--collective-timeout", "3parsecs"],
     ["--collective-timeout", "10s"]),
    ("option of another verb", 2, ["info", "--batch", "1"], ["--batch"]),
    ("option given twice", 2, ["run", "--batch", "1", "--batch", "2"], ["--batch"]),
    ("option without value", 2, ["run", "--out", "{work}/out-novalue", "--batch"], ["--batch"]),
    # --- types ---------------------------------------------------------------------------
    ("batch not a number", 2, ["run", "--batch", "abc"], ["--batch", "abc"]),
    ("batch fractional", 2, ["run", "--batch", "1.5"], ["--batch"]),
    ("batch inf", 2, ["run", "--batch", "inf"], ["--batch"]),
    ("occupancy window nan", 2, ["run", "--occupancy-window", "nan"], ["--occupancy-window"]),
    ("check not a bool", 2, ["run", "--set", "check=maybe"], ["--check"]),
    ("batch list via --set", 2, ["run", "--set", "batch=[1,2]"], ["--batch"]),
    # Every string is echoed into results.json, which cannot hold invalid UTF-8.
    ("out not UTF-8", 2, ["run", "--out", "{work}/out-\udcff\udcfe"], ["--out", "UTF-8"]),
    ("inject not UTF-8", 2, ["run", "--inject", "rank=0:slowdown=2\udcff"], ["--inject", "UTF-8"]),
    ("out not a string via --set", 2, ["run", "--set", "out=5"], ["--out"]),
    ("inject not strings via --set", 2, ["run", "--set", "inject=5"], ["--inject"]),
    # A directory opens as an ifstream and throws on read (found by fuzz_config).
    ("config is a directory", 2, ["run", "--config", "{work}"], ["--config", "not a regular file"]),
    ("from is a directory without results", 2, ["run", "--from", "{work}", "--point", "0"], ["--from"]),
    ("compare of a directory without results", 2, ["compare", "{work}", "{work}"], ["compare"]),
    ("report of a directory without results", 2, ["report", "{work}"], ["report"]),
    ("calibrate without --out", 2, ["calibrate"], ["--out"]),
    ("calibrate tp not dividing heads", 2, ["calibrate", "--tp", "3", "--out", "{work}/cal"], ["--tp", "divide"]),
    ("calibrate unknown model", 2, ["calibrate", "--model", "nosuch", "--out", "{work}/cal"], ["nosuch"]),
    ("calibrate max-bytes too small", 2, ["calibrate", "--max-bytes", "100", "--out", "{work}/cal"], ["--max-bytes"]),
    ("calibrate --runs without --from", 2, ["calibrate", "--runs", "{work}", "--out", "{work}/cal"], ["--runs", "--from"]),
    ("attention cudnn on the cpu backend", 2, ["run", "--attention", "cudnn", "--out", "{work}/a"], ["--attention", "cuda backend only"]),
    ("attention cudnn on the model backend", 1, ["run", "--backend", "model", "--attention", "cudnn", "--out", "{work}/a"], ["--attention", "cuda backend only"]),
    ("attention unknown kernel", 2, ["run", "--attention", "flash", "--out", "{work}/a"], ["--attention", "flash"]),
    ("diagnose of a directory without results", 2, ["diagnose", "{work}"], ["diagnose"]),
    ("diagnose of a file that is not results", 2, ["diagnose", "{work}/not_object.json"], ["diagnose", "results"]),
    ("report into an unwritable --out", 2, ["report", "{work}/results_min.json", "--out", "/proc/tpbench-report"], ["--out"]),
    ("config batch string", 2, ["run", "--config", "{work}/batch_string.json"], ["--batch"]),
    ("config batch bool", 2, ["run", "--config", "{work}/batch_bool.json"], ["--batch"]),
    ("config batch list", 2, ["run", "--config", "{work}/batch_list.json"], ["--batch"]),
    ("config steps float", 2, ["run", "--config", "{work}/steps_float.json"], ["--steps"]),
    ("config inject number", 2, ["run", "--config", "{work}/inject_number.json"], ["--inject"]),
    # --- ranges --------------------------------------------------------------------------
    ("batch zero", 2, ["run", "--batch", "0"], ["--batch"]),
    ("batch negative", 2, ["run", "--batch=-3"], ["--batch"]),
    ("steps zero", 2, ["run", "--steps", "0"], ["--steps"]),
    ("warmup negative", 2, ["run", "--warmup=-1"], ["--warmup"]),
    ("context negative", 2, ["run", "--context=-1"], ["--context"]),
    ("prompt zero", 2, ["run", "--phase", "prefill", "--prompt", "0"], ["--prompt"]),
    ("layers beyond the model", 2, ["run", "--layers", "9"], ["--layers"]),
    ("tp zero", 2, ["run", "--tp", "0"], ["--tp"]),
    ("collective timeout zero", 2, ["run", "--collective-timeout", "0"], ["--collective-timeout"]),
    ("blas threads zero", 2, ["run", "--blas-threads", "0"], ["--blas-threads"]),
    ("sync rounds zero", 2, ["run", "--sync-rounds", "0"], ["--sync-rounds"]),
    ("unknown phase", 2, ["run", "--phase", "mixed"], ["--phase", "mixed"]),
    ("unknown backend", 2, ["run", "--backend", "tpu"], ["--backend", "tpu"]),
    ("unknown dtype", 2, ["run", "--dtype", "fp64"], ["--dtype", "fp64"]),
    ("unknown tp groups", 2, ["run", "--tp-groups", "diagonal"], ["--tp-groups"]),
    ("unknown mpi mode", 2, ["run", "--mpi-mode", "polled"],
     ["--mpi-mode", "polled", "blocking|nonblocking"]),
    ("unknown mpi mode in sweep", 2, ["sweep", "--mpi-mode", "async", "--batch", "1,2"],
     ["--mpi-mode", "async"]),
    ("unknown mpi mode in collectives", 2, ["collectives", "--mpi-mode", "Blocking"],
     ["--mpi-mode", "Blocking"]),
    ("mpi mode a number via --set", 2, ["collectives", "--set", "mpi_mode=1"], ["--mpi-mode"]),
    # --- the model backend (virtual ranks in one process: np 1) ---------------------------
    ("model world not divisible into nodes", 1,
     ["collectives", "--backend", "model", "--topology", "ib-ndr", "--world", "12"], ["--world", "12"]),
    ("model world zero", 1, ["collectives", "--backend", "model", "--world", "0"], ["--world"]),
    ("model unknown topology", 1, ["collectives", "--backend", "model", "--topology", "nvlink9"],
     ["--topology", "nvlink9"]),
    ("model nvls without NVLink SHARP", 1,
     ["collectives", "--backend", "model", "--topology", "pcie5", "--algo", "nvls"], ["--algo", "nvls"]),
    ("model nvls across nodes", 1, ["collectives", "--backend", "model", "--topology", "ib-ndr",
                                    "--world", "16", "--algo", "nvls"], ["--algo", "nvls"]),
    ("model unknown algo", 1, ["collectives", "--backend", "model", "--algo", "fastest"],
     ["--algo", "fastest"]),
    ("model across nodes on a one-node preset", 1,
     ["collectives", "--backend", "model", "--topology", "nvlink4", "--world", "16"], ["--topology"]),
    ("model preset without a model section", 1,
     ["collectives", "--backend", "model", "--topology", "nvlink"], ["--topology", "nvlink"]),
    ("model under mpirun -np 2", 2, ["collectives", "--backend", "model"], ["--backend", "mpirun"]),
    ("world without the model backend", 2, ["collectives", "--world", "4"], ["--world"]),
    ("model collective on the cpu backend", 2, ["collectives", "--collective", "model"],
     ["--collective", "model"]),
    ("model world not divisible by tp", 1, ["run", "--backend", "model", "--world", "12", "--tp", "8"],
     ["--world", "12"]),
    ("model run with --check", 1, ["run", "--backend", "model", "--check"], ["--check"]),
    ("model inject on a rank past --world", 1,
     ["run", "--backend", "model", "--world", "8", "--tp", "8", "--inject", "rank=9:slowdown=2"],
     ["--inject", "rank 9"]),
    ("model run on a probed profile", 1, ["run", "--backend", "model", "--hardware", "cpu"],
     ["--hardware", "cpu"]),
    ("model sm_clock on a profile without a clock", 1,
     ["run", "--backend", "model", "--hardware", "b200", "--inject", "rank=1:sm_clock=900"],
     ["--inject", "sm_clock_mhz"]),
    ("sm_clock emulate share out of range", 1,
     ["run", "--backend", "model", "--inject", "rank=0:sm_clock=emulate@1.5"],
     ["--inject", "sm_clock emulate share"]),
    ("sm_clock prior neither unlocked nor a range", 1,
     ["run", "--backend", "model", "--inject", "rank=0:sm_clock=1200@locked"],
     ["--inject", "sm_clock prior"]),
    ("model serve of two TP groups", 1,
     ["serve", "--backend", "model", "--world", "8", "--tp", "4", "--concurrency", "1"],
     ["--tp", "one TP group"]),
    ("model noise not SEED:CV", 1, ["run", "--backend", "model", "--model-noise", "x:1"],
     ["--model-noise"]),
    ("model noise CV above 1", 1, ["run", "--backend", "model", "--model-noise", "7:2"],
     ["--model-noise"]),
    ("model noise on the cpu backend", 2, ["run", "--model-noise", "7:0.1"], ["--model-noise"]),
    ("model noise on collectives", 1,
     ["collectives", "--backend", "model", "--set", "model_noise=7:0.1"], ["--model-noise"]),
    ("efficiency fraction zero", 1,
     ["run", "--backend", "model", "--hardware", "{work}/hw_eff_zero.json"], ["fraction"]),
    ("measured fabric of 2 ranks for a group of 8", 1,
     ["run", "--backend", "model", "--world", "8", "--tp", "8", "--topology",
      "{work}/topo_measured2.json"], ["--topology", "8"]),
    ("modelled preset for a real run", 2, ["run", "--topology", "nvlink4"], ["--topology", "nvlink4"]),
    ("memory budget unit", 2, ["run", "--memory-budget", "8X"], ["--memory-budget"]),
    ("memory budget negative", 2, ["run", "--memory-budget=-1G"], ["--memory-budget"]),
    # --- huge values (overflow of counts and byte sizes) ---------------------------------
    ("batch beyond int64", 2, ["run", "--batch", "99999999999999999999999"], ["--batch"]),
    ("batch beyond double via --set", 2, ["run", "--set", "batch=1e400"], ["--batch"]),
    ("steps huge", 2, ["run", "--steps", "1e12"], ["--steps"]),
    ("seed huge", 2, ["run", "--seed", "1e30"], ["--seed"]),
    ("serve concurrency beyond int64", 1,
     ["serve", "--backend", "model", "--concurrency", "1e308"], ["--concurrency", "at most"]),
    ("vLLM's spelling named as given", 1,
     ["serve", "--backend", "model", "--max-concurrency", "1.5"], ["--max-concurrency"]),
    ("vLLM's input length beyond int64", 1,
     ["serve", "--backend", "model", "--random-input-len", "9223372036854775808"],
     ["--random-input-len"]),
    ("memory budget huge", 2, ["run", "--memory-budget", "1e30"], ["--memory-budget"]),
    ("prefill tokens overflow", 2,
     ["run", "--phase", "prefill", "--batch", "1048576", "--prompt", "16777216"], ["--batch"]),
    ("model hidden overflow", 2, ["run", "--model", "{work}/model_huge.json"], ["hidden"]),
    ("model layers huge", 2, ["run", "--model", "{work}/model_huge_layers.json"], ["n_layers"]),
    # --- unknown keys --------------------------------------------------------------------
    ("unknown --set key", 2, ["run", "--set", "bacth=4"], ["bacth"]),
    ("unknown --config key", 2, ["run", "--config", "{work}/unknown_key.json"],
     ["bacth", "did you mean 'batch'?"]),
    ("--set without =", 2, ["run", "--set", "batch"], ["--set"]),
    ("--set empty key", 2, ["run", "--set", "=3"], ["--set"]),
    # --- contradictions ------------------------------------------------------------------
    ("nccl on cpu", 2, ["run", "--collective", "nccl", "--backend", "cpu"], ["--collective"]),
    ("bf16 on cpu", 2, ["run", "--dtype", "bf16"], ["--dtype", "bf16"]),
    ("tp not dividing world", 2, ["run", "--tp", "3"], ["--tp"]),
    ("world 3 with tp 2", 3, ["run", "--tp", "2"], ["--tp", "world size 3"]),
    ("tp above world", 2, ["run", "--tp", "32"], ["--tp"]),
    ("control: 3 heads at tp 1 runs", 1, ["run", "--tp", "1", "--model", "{work}/model_heads3.json"],
     None),  # a control row: tp=1 divides anything, so this one must run (exit 0)
    ("tp 2 does not divide 3 heads", 2, ["run", "--model", "{work}/model_heads3.json"],
     ["--tp", "n_heads"]),
    ("tp 2 does not divide intermediate", 2, ["run", "--model", "{work}/model_inter_odd.json"],
     ["--tp", "intermediate"]),
    ("tp 4 vs 6 kv heads", 4, ["run", "--model", "{work}/model_kv6.json"], ["--tp", "n_kv_heads"]),
    # --- paths ---------------------------------------------------------------------------
    ("missing --config file", 2, ["run", "--config", "{work}/nope.json"], ["--config", "nope.json"]),
    ("malformed --config", 2, ["run", "--config", "{work}/malformed.json"], ["--config", "malformed"]),
    ("--config not an object", 2, ["run", "--config", "{work}/not_object.json"], ["--config"]),
    ("unknown model name", 2, ["run", "--model", "gpt-5"], ["--model", "gpt-5"]),
    ("model path missing", 2, ["run", "--model", "{work}/nope.json"], ["--model"]),
    ("model name with slash", 2, ["run", "--model", "../models/tiny"], ["--model"]),
    ("model negative hidden", 2, ["run", "--model", "{work}/model_neg_hidden.json"], ["hidden"]),
    ("model unknown field", 2, ["run", "--model", "{work}/model_unknown_field.json"], ["n_expert"]),
    ("model missing field", 2, ["run", "--model", "{work}/model_missing.json"], ["intermediate"]),
    ("model float dim", 2, ["run", "--model", "{work}/model_float_dim.json"], ["hidden"]),
    ("model GQA mismatch", 2, ["run", "--model", "{work}/model_gqa.json"], ["n_kv_heads"]),
    ("model malformed JSON", 2, ["run", "--model", "{work}/model_malformed.json"], ["malformed"]),
    ("unknown hardware", 2, ["run", "--hardware", "tpu-v9"], ["--hardware", "tpu-v9"]),
    ("hardware negative bw", 2, ["run", "--hardware", "{work}/hw_bad_bw.json"], ["peak_bw"]),
    ("hardware zero flops", 2, ["run", "--hardware", "{work}/hw_zero_flops.json"], ["peak_flops.fp32"]),
    ("hardware zero bw", 2, ["sweep", "--hardware", "{work}/hw_zero_bw.json"], ["peak_bw"]),
    ("memory budget SI suffix typo", 2, ["run", "--memory-budget", "2GiBs"], ["--memory-budget"]),
    ("layers neither N nor auto", 2, ["run", "--layers", "some"], ["--layers"]),
    ("hardware unknown dtype", 2, ["run", "--hardware", "{work}/hw_unknown_dtype.json"], ["fp33"]),
    ("unwritable --out", 2, ["run", "--out", "/proc/tpbench-x"], ["--out"]),
    ("--out is a file", 2, ["run", "--out", "{work}/malformed.json"], ["--out"]),
    ("missing --out", 2, ["run", "--out", ""], ["--out"]),
    # --- --inject ------------------------------------------------------------------------
    ("inject unknown key", 2, ["run", "--inject", "rank=0:slowness=2"], ["--inject", "slowness"]),
    ("inject rank out of range", 2, ["run", "--inject", "rank=2:slowdown=2"], ["--inject", "rank 2"]),
    ("inject negative rank", 2, ["run", "--inject", "rank=-1:slowdown=2"], ["--inject", "rank"]),
    ("inject fractional rank", 2, ["run", "--inject", "rank=0.5:slowdown=2"], ["--inject", "rank"]),
    ("inject slowdown below 1", 2, ["run", "--inject", "rank=1:slowdown=0.5"], ["--inject", "slowdown"]),
    ("inject jitter without @", 2, ["run", "--inject", "rank=1:jitter=0.1"], ["--inject", "jitter"]),
    ("inject jitter p above 1", 2, ["run", "--inject", "rank=1:jitter=2@100"], ["--inject", "jitter"]),
    ("inject without rank", 2, ["run", "--inject", "slowdown=2"], ["--inject", "rank"]),
    ("inject without effect", 2, ["run", "--inject", "rank=1"], ["--inject", "no effect"]),
    ("inject empty entry", 2, ["run", "--inject", "rank=0:slowdown=2,,rank=1:slowdown=2"],
     ["--inject", "empty"]),
    ("inject trailing comma", 2, ["run", "--inject", "rank=0:slowdown=2,"], ["--inject"]),
    ("inject trailing colon", 2, ["run", "--inject", "rank=0:slowdown=2:"], ["--inject"]),
    ("inject fractional step", 2, ["run", "--inject", "rank=0:hang_at_step=1.5"],
     ["--inject", "hang_at_step"]),
    ("inject repeated key", 2, ["run", "--inject", "rank=0:slowdown=2:slowdown=3"],
     ["--inject", "slowdown"]),
]


def printable(text):
    """ASCII-safe: cases pass non-UTF-8 bytes, and ctest's stdout may be ASCII."""
    if isinstance(text, list):
        text = " ".join(text)
    return text.encode("ascii", "backslashreplace").decode()


def run_case(ctx, case):
    name, np, args, expect = case
    args = [a.replace("{work}", ctx.work) for a in args]
    if args and args[0] == "run" and not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", ctx.out("out-" + name.replace(" ", "_"))]
    if expect is None:  # control rows: a valid line close to a bad one must still run
        args += ["--steps", "1", "--warmup", "0", "--layers", "1", "--batch", "1",
                 "--context", "16", "--sync-rounds", "2"]
    cmd = [ctx.mpirun, "-np", str(np), "--oversubscribe", "--bind-to", "none", ctx.tpbench] + args
    # Own session, so that a hung case is ended with its whole process group.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", env=ctx.env, start_new_session=True)
    try:
        _, stderr = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return name, [f"hung: no exit within {TIMEOUT_S} s: {printable(cmd)}"], ""
    problems = []
    err_lines = [ln for ln in stderr.splitlines() if ln.startswith("tpbench:")]
    if expect is None:
        if p.returncode != 0:
            problems.append(f"control case failed: rc {p.returncode}\n{stderr[-2000:]}")
        return name, problems, ""
    if p.returncode != 2:
        problems.append(f"rc {p.returncode}, expected 2")
    errors = [ln for ln in err_lines if ln.startswith("tpbench: error: ")]
    if len(errors) != 1 or len(err_lines) != 1:
        problems.append(f"expected exactly one 'tpbench: error:' line, got {err_lines}")
    if "internal error" in stderr:
        problems.append("internal error reported")
    line = errors[0] if errors else ""
    for s in expect:
        if s not in line:
            problems.append(f"message lacks '{s}'")
    if problems:
        problems.append(f"cmd: {printable(cmd)}\nstderr: {stderr[-1500:]}")
    return name, problems, line


def main():
    ctx = Ctx()
    for fname, text in FIXTURES.items():
        with open(os.path.join(ctx.work, fname), "w") as f:
            f.write(text)
    ctx.check(len([c for c in CASES if c[3] is not None]) >= 30, "at least 30 bad-input cases")
    # Eight at a time: a case is mostly mpirun waiting (start-up, and a second's sleep after a
    # rank exits non-zero), ~0.5 s of CPU in ~2.5 s. On 2 cores: 4 at a time 72 s, 8 54 s, 12 47 s.
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for name, problems, line in pool.map(lambda c: run_case(ctx, c), CASES):
            detail = "\n" + "\n".join(problems) if problems else ""
            ctx.check(not problems, printable(f"{name}: {line}{detail}"))
    ctx.finish()


if __name__ == "__main__":
    main()
