"""--backend cuda where no GPU is visible: every rank exits 2 with one clear line from rank 0,
and nobody hangs. On a GPU machine the same command must instead run (see launch/). `info` lists
nccl exactly where it names the NCCL version linked (never for the stand-in), and the attention
libraries (cuDNN compiled in, and found at run time or "not found") without a GPU."""
import json
import re
import subprocess
from tpbtest import Ctx

c = Ctx()
info = json.loads(subprocess.run([c.tpbench, "info"], capture_output=True, text=True, env=c.env).stdout)
c.check(("nccl" in info["collectives"]) == ("nccl" in info)
        and re.fullmatch(r"\d+\.\d+\.\d+|unknown", info.get("nccl", "0.0.0")) is not None
        and ("nccl" not in info or "cuda" in info["backends"]),
        f"info: nccl listed with its linked version ({info.get('nccl')}, {info['collectives']})")
att = info.get("attention", {})
c.check(list(att) == ["native", "cudnn_compiled", "cudnn_frontend_version", "cudnn_runtime_version",
                      "cudnn_runtime_note"]
        and att["native"] == ("cuda" in info["backends"])
        and (re.fullmatch(r"\d+\.\d+\.\d+", att["cudnn_frontend_version"]) is not None) == att["cudnn_compiled"]
        and re.fullmatch(r"\d+\.\d+\.\d+|not found", att["cudnn_runtime_version"]) is not None,
        f"info: attention libraries ({att})")
has_gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0 if \
    subprocess.run(["which", "nvidia-smi"], capture_output=True).returncode == 0 else False
if has_gpu:
    c.check(True, "a GPU is visible: the no-GPU path is not what this machine exercises")
    c.finish()
for np_ in (1, 2):
    rc, so, se = c.mpi(np_, ["run", "--backend", "cuda", "--model", "tiny", "--out", c.out(f"cuda{np_}")],
                       timeout=120, expect_rc=2)
    lines = [l for l in se.splitlines() if l.startswith("tpbench:")]
    want = "no CUDA device is visible" if "cuda" in info["backends"] else "not built"
    c.check(len(lines) == 1 and "--backend" in lines[0] and want in lines[0],
            f"np {np_}: one line naming --backend ({lines})")
c.check("mpi" in info["collectives"], f"info lists collectives {info['collectives']}")
c.finish()
