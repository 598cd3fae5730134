#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, coverage on the project's code) in
# build-asan/ (the asan preset) and runs each for a bounded time: tests/fuzz/run_fuzz.sh [SECONDS] (default 60).
# The targets run side by side. Exit non-zero on any crash, leak, sanitizer report or
# non-BadInput exception; the reproducer is left in build-asan/fuzz-out/<target>/.
# The seed corpus (tests/fuzz/corpus/) is read, never written: new inputs go to build-asan/fuzz-out/.
set -euo pipefail
SECONDS_PER_TARGET=${1:-60}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build-asan
TARGETS="fuzz_config fuzz_inject fuzz_nccl_tests"
command -v clang++-14 >/dev/null || { echo "run_fuzz.sh: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }

# The asan preset is the fuzz tree too (clang-14, address,undefined,fuzzer-no-link, -O0):
# tests/sanitize.sh has usually built most of it already. -O0 keeps CI's build short but runs
# fuzz_config several times slower; for a long run by hand: TPB_FUZZ_OPT=-O1 run_fuzz.sh 600
# (the next sanitize.sh puts the tree back to the preset's -O0).
OPT=${TPB_FUZZ_OPT:+-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$TPB_FUZZ_OPT -gline-tables-only}
mkdir -p "$BUILD"
(cd "$ROOT" && cmake --preset asan ${OPT:+"$OPT"} >"$BUILD/cmake-preset.log" 2>&1) ||
  { cat "$BUILD/cmake-preset.log" >&2; exit 1; }
cmake --build "$BUILD" -j"$(getconf _NPROCESSORS_ONLN)" --target $TARGETS

declare -A DICT=([fuzz_config]=config.dict [fuzz_inject]=inject.dict
                 [fuzz_nccl_tests]=nccl_tests.dict)
declare -A SEEDS=([fuzz_config]=config [fuzz_inject]=inject [fuzz_nccl_tests]=nccl_tests)
declare -A PID=()
for t in $TARGETS; do
  out=$BUILD/fuzz-out/$t
  mkdir -p "$out/corpus"
  (cd "$out" && exec "$BUILD/$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=2048 \
     -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -dict="$ROOT/tests/fuzz/${DICT[$t]}" \
     -artifact_prefix="$out/" "$out/corpus" "$ROOT/tests/fuzz/corpus/${SEEDS[$t]}" \
     >"$out/log.txt" 2>&1) &
  PID[$t]=$!
done
status=0
for t in $TARGETS; do
  if wait "${PID[$t]}"; then rc=0; else rc=$?; fi
  log=$BUILD/fuzz-out/$t/log.txt
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  corpus=$(find "$BUILD/fuzz-out/$t/corpus" -type f | wc -l)
  if [ "$rc" = 0 ]; then
    echo "$t: ok, $execs executions in ${SECONDS_PER_TARGET} s, corpus $corpus inputs"
  else
    echo "$t: FAILED (rc $rc) after $execs executions; log $log" >&2
    grep -E -A30 "^==[0-9]+==ERROR|runtime error|terminate called|uncaught|deadly signal" "$log" | head -60 >&2 || tail -40 "$log" >&2
    status=1
  fi
done
exit $status
