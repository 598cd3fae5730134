#!/usr/bin/env bash
# Installed, as a user installs it, with the source tree gone (issue 33): a fresh clone of this
# checkout's HEAD is configured (the arguments given, default --preset cpu-only, tests off),
# tpbench built, `cmake --install`ed into a prefix and `pip install ./results`ed into a venv
# with no package index. Then the clone is deleted (the path compiled into the binary is gone)
# and the prefix moved (nothing may point at where it was installed), and from there:
# a model-backend run reads share/tpbench/configs, an unknown model lists the known ones,
# `report` draws plots with share/tpbench/results/plot.py, and the installed loader reads them.
# First, that the README's prerequisites list the Debian packages launch/deps.sh installs.
# Usage: tests/install_check.sh [CMAKE CONFIGURE ARGS...]
# Quick when the caller's build filled ccache with the same flags: tests/run.sh passes its
# Release build's, so the clone's objects come from the cache (paths are relative to
# CCACHE_BASEDIR, set here to the clone; the source path is compiled into config_dir.cc alone).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN)}
source launch/deps.sh
# The venv module, and wheel for setuptools' wheel build without fetching it (pip's default
# build isolation would download setuptools from PyPI).
tpb_install_deps python3-venv python3-wheel
# Debian's python3: the one apt gave pandas, matplotlib, setuptools and wheel.
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/tpb-install.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
(($#)) || set -- --preset cpu-only

# The README's prerequisites name launch/deps.sh's Debian packages: the same set.
readme=$(tr '\n' ' ' <README.md | grep -o '`build-essential [^`]*`' | tr -d '`' | tr -s ' ' '\n' | grep . | sort)
[[ "$readme" == "$(printf '%s\n' "${TPB_DEB_PACKAGES[@]}" | sort)" ]] ||
  fail "README's Debian packages are not launch/deps.sh's: $(echo $readme)"
ok "README's Debian packages are launch/deps.sh's (${#TPB_DEB_PACKAGES[@]})"

[[ -z "$(git status --porcelain --untracked-files=no)" ]] ||
  echo "note: uncommitted changes are not in the clone; this checks HEAD"
SRC=$WORK/src
git clone -q --no-checkout "$ROOT" "$SRC"
git -C "$SRC" checkout -q "$(git rev-parse HEAD)"
export CCACHE_BASEDIR=$SRC
(cd "$SRC" && cmake "$@" -DTPB_BUILD_TESTS=OFF >"$WORK/cmake.log" 2>&1) ||
  fail "configure: $(tail -5 "$WORK/cmake.log")"
BUILD=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$SRC"/build*/CMakeCache.txt | head -1)
[[ -d "$BUILD" ]] || fail "no build folder under the clone after: cmake $*"
cmake --build "$BUILD" -j"$JOBS" --target tpbench >"$WORK/build.log" 2>&1 ||
  fail "build: $(grep -m3 error "$WORK/build.log")"
cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" || fail "cmake --install"
ok "fresh clone built (cmake $*) and installed"

"$PY" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/pip" install -q --no-index --no-build-isolation "$SRC/results" \
  >"$WORK/pip.log" 2>&1 || fail "pip install ./results: $(tail -5 "$WORK/pip.log")"
ok "pip install --no-index --no-build-isolation ./results"

rm -rf "$SRC"
P=$WORK/moved
mv "$WORK/prefix" "$P"
T=$P/bin/tpbench
unset TPB_CONFIG_DIR TPB_PLOT_SCRIPT
cd "$WORK"
version=$("$T" --version | sed -n 's/^tpbench \([^ ]*\) .*/\1/p')
loader=$("$WORK/venv/bin/python" -c "import importlib.metadata as m; print(m.version('tpbench-results'))")
[[ -n "$version" && "$version" == "$loader" ]] ||
  fail "tpbench --version says '$version', the loader's pyproject.toml '$loader'"
ok "tpbench $version, its loader $loader"

"$T" run --backend model --world 8 --tp 8 --model llama-3.1-8b --dtype bf16 --batch 4 \
  --out "$WORK/out" >"$WORK/run.log" 2>&1 || fail "run from the prefix: $(tail -3 "$WORK/run.log")"
"$PY" - "$WORK/out/results.json" "$P/share/tpbench/configs" <<'PY' || fail "run: its config_dir"
import json, os, sys
d = json.load(open(sys.argv[1]))
got = d["config"]["config_dir"]
assert os.path.realpath(got) == os.path.realpath(sys.argv[2]), got
assert d["points"][0]["status"] == "ok", d["points"][0]
PY
ok "run --backend model from the moved prefix, configs from share/tpbench/configs"

set +e
err=$("$T" run --model no-such-model --out "$WORK/bad" 2>&1 >/dev/null)
rc=$?
set -e
[[ $rc -eq 2 && "$err" == *"(known: "*"llama-3.1-8b"* ]] || fail "unknown model: rc $rc ($err)"
ok "an unknown model lists the installed ones"

"$T" report "$WORK/out" >"$WORK/report.log" 2>&1 || fail "report: $(tail -3 "$WORK/report.log")"
grep -q "^Made by $P/share/tpbench/results/plot.py with " "$WORK/out/report.md" ||
  fail "report: plot.py not from the prefix: $(grep -m1 'plot' "$WORK/out/report.md")"
drawn=$(sed -n 's/.*(1 results, \([0-9]*\) plots)$/\1/p' "$WORK/report.log")
[[ "${drawn:-0}" -gt 0 ]] || fail "report drew no plots: $(cat "$WORK/report.log")"
ok "report: $drawn plots by share/tpbench/results/plot.py"

"$WORK/venv/bin/python" - "$WORK/out" "$WORK/venv" <<'PY' || fail "the installed loader"
import os, sys
import tpbench_results as t
assert os.path.realpath(t.__file__).startswith(os.path.realpath(sys.argv[2])), t.__file__
r = t.load(sys.argv[1])
assert len(r.points) == 1 and len(r.ranks) == 8, (r.points.shape, r.ranks.shape)
PY
ok "the pip-installed tpbench_results loads the run (1 point, 8 ranks)"
