#!/usr/bin/env python3
"""Where a tpbench binary finds configs/ when nothing says: $TPB_CONFIG_DIR, then configs/ beside
the executable (a bundle carries it there), then ../share/tpbench/configs (an install prefix;
tests/install_check.sh runs one with the source tree gone), then ../configs, then the source
tree compiled in.
The source tree cannot be hidden here, so the order is shown with a marker model that only a
bundle's configs/ holds: a copy of the binary with that configs/ beside it finds the marker (and
runs it); a bare copy still reads the compiled-in tree (it knows tiny, not the marker);
$TPB_CONFIG_DIR comes first for both. Each "known:" list is the folder the binary read."""
import json
import os
import re
import shutil

from tpbtest import Ctx

MARKER = "marker-only-in-bundle"


def known_models(c, tpbench, env_dir):
    """The model names the binary at `tpbench` lists for an unknown one."""
    c.tpbench = tpbench
    c.env.pop("TPB_CONFIG_DIR", None)
    if env_dir:
        c.env["TPB_CONFIG_DIR"] = env_dir
    _, _, err = c.mpi(1, ["run", "--model", "no-such-model", "--out", c.out("unused")], expect_rc=2)
    m = re.search(r"unknown model 'no-such-model' \(known: ([^)]*)\)", err)
    return m.group(1).split(", ") if m else [f"no list in: {err.strip()}"]


def main():
    c = Ctx()
    built, source_configs = c.tpbench, os.path.join(c.source, "configs")
    bundle, bare = c.out("bundle/bin"), c.out("bare/bin")
    for d in (bundle, bare):
        os.makedirs(d)
        shutil.copy2(built, d)
    shutil.copytree(source_configs, os.path.join(bundle, "configs"))
    with open(os.path.join(source_configs, "models", "tiny.json")) as f:
        tiny = json.load(f)
    tiny["name"] = MARKER
    with open(os.path.join(bundle, "configs", "models", MARKER + ".json"), "w") as f:
        json.dump(tiny, f)
    in_bundle, in_bare = os.path.join(bundle, "tpbench"), os.path.join(bare, "tpbench")

    got = known_models(c, in_bundle, None)
    c.check(MARKER in got and "tiny" in got, f"configs/ beside the binary comes before the source tree: {got}")
    out = c.out("marker-run")
    c.tpbench = in_bundle  # as known_models left it: no $TPB_CONFIG_DIR
    c.mpi(1, ["run", "--model", MARKER, "--layers", "1", "--steps", "1", "--warmup", "0", "--trace-steps", "0",
              "--out", out])
    cfg = c.results(out)["config"] if os.path.exists(os.path.join(out, "results.json")) else {}
    c.check(cfg.get("model_shape", {}).get("name") == MARKER
            and os.path.realpath(cfg.get("config_dir", "")) == os.path.realpath(os.path.join(bundle, "configs")),
            f"the bundle's model runs, read from its configs/: {cfg.get('config_dir')}")

    got = known_models(c, in_bare, None)
    c.check("tiny" in got and MARKER not in got, f"no configs/ beside it: the compiled-in source tree ({got})")
    got = known_models(c, in_bare, os.path.join(bundle, "configs"))
    c.check(MARKER in got, f"$TPB_CONFIG_DIR before the compiled-in tree: {got}")
    got = known_models(c, in_bundle, source_configs)
    c.check(MARKER not in got and "tiny" in got, f"$TPB_CONFIG_DIR before configs/ beside the binary: {got}")
    c.finish()


if __name__ == "__main__":
    main()
