#!/usr/bin/env bash
# Sanitizer stages, CPU only:
#   asan: ASan+UBSan build (preset asan -> build-asan/): the unit tests, then small np-2 CPU
#         runs (decode with --check, prefill, and every --inject effect that runs on a CPU).
#   tsan: TSan build (preset tsan -> build-tsan/) of the harness's own threads and their
#         test only (tpb_thread_tests: tests/unit/test_threads.cc, the mem_contend hog
#         beside timed device work, its counter read across threads, shutdown at any moment;
#         the hang watchdog's timer tick beside blocking collectives, armed at call rate, firing
#         once, stopped while armed; a ticker destroyed with a tick pending). The rest of the harness runs on the main thread; building all
#         of it under TSan cost minutes of CI for no other thread to check. (The NVML sampler
#         thread is CUDA-only.)
# Both presets use clang-14 at -O0 -gline-tables-only, json and gtest precompiled per target
# (TPB_PCH, cmake/pch.cmake): 3-4x faster to compile than -O2 -g,
# with file:line stacks. The asan tree is also the fuzz tree (tests/fuzz/run_fuzz.sh).
# Usage: tests/sanitize.sh [asan|tsan|all] (default all). Exit non-zero on any report.
#
# Leak checking: on for the unit tests (the parsers, analysis, cost model, timeline and the
# contention thread, all without MPI), off (detect_leaks=0) for the mpirun runs. Open MPI 4.1
# keeps ~50 allocations past MPI_Finalize (strdup'd MCA parameters, PMIx and hwloc state) and
# OpenBLAS keeps its buffers, and LeakSanitizer reports them at exit. They cannot be
# suppressed by naming the library: Open MPI dlcloses its MCA and PMIx components during
# MPI_Finalize (OMPI_MCA_mca_base_component_disable_dlclose=1 does not keep them all), so most
# allocation stacks end in "<unknown module>", and a suppression that matched those would
# hide the project's own leaks too. Address and UB errors stay fatal in every run.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
STAGE=${1:-all}
JOBS=${TPB_JOBS:-$(getconf _NPROCESSORS_ONLN)}  # not nproc: it obeys OMP_NUM_THREADS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export UBSAN_OPTIONS

build() {  # preset, targets...
  local preset=$1
  shift
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$JOBS" --target "$@"
}

asan_stage() {
  build asan tpb_unit_tests tpbench
  # Less the tests whose cost is double-precision references at tiny's full shapes (they run
  # in the Release unit stage):
  # - the skinny GEMM at full shapes reaches no code that the tile-and-tail and column-chunk
  #   cases do not (they take every tile, tail, chunk and leftover row on small shapes); its
  #   reference at -O0 was 105 s;
  # - the stack reference's prefill step (122 s) and its two failure cases (33 s, the decode
  #   step's reference again). The decode test keeps the reference's GEMMs, norms, rope and
  #   LM head here; its causal prefill attention runs unsanitized only (an np-2 `--check` of
  #   a 32-token prefill was 3.5 min under ASan at -O0).
  local slow='*SkinnyGemmPath.MatchesReferenceOnTinyShapes/*'
  slow+=':StackReference.MatchesTheCpuPrefillStepAtTp1:StackReference.Fails*'
  local out=build-asan/sanitize-out
  rm -rf "$out" "$out".*.log
  mkdir -p "$out"
  # In two shards side by side (gtest's own sharding): each is one single-threaded process.
  echo "== asan: unit tests (less $slow), 2 shards"
  local shard pids=() failed=0
  for shard in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard \
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
      build-asan/tests/tpb_unit_tests --gtest_brief=1 --gtest_filter="-$slow" >"$out.unit$shard.log" 2>&1 &
    pids+=($!)
  done
  for shard in 0 1; do
    if ! wait "${pids[$shard]}"; then
      cat "$out.unit$shard.log"
      failed=1
    fi
    grep -E "tests? from .* ran|PASSED|FAILED" "$out.unit$shard.log" | sed "s/^/shard $shard: /"
  done
  [[ $failed == 0 ]] || { echo "sanitize.sh: asan unit tests failed" >&2; return 1; }
  local asan="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=1"  # see the header
  local small=(--model tiny --layers 2 --steps 3 --warmup 1 --context 64 --sync-rounds 4)
  local runs=(
    "decode-check:--check"
    "prefill:--phase prefill --prompt 32 --batch 2"
    "inject:--inject rank=1:slowdown=1.5,rank=0:jitter=0.5@200:host_delay=50:clock_offset=2"
    "contend:--inject rank=0:mem_contend=1:mem_reserve=0.1"
  )
  for r in "${runs[@]}"; do
    local name=${r%%:*} args=${r#*:}
    echo "== asan: mpirun -np 2 tpbench run ${small[*]} $args"
    # shellcheck disable=SC2086  # $args is a list of words on purpose
    mpirun -np 2 --bind-to none -x ASAN_OPTIONS="$asan" -x UBSAN_OPTIONS \
      build-asan/tpbench run "${small[@]}" $args --out "$out/$name" >"$out.$name.log" 2>&1 ||
      { cat "$out.$name.log"; echo "sanitize.sh: asan run '$name' failed" >&2; return 1; }
    if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$out.$name.log"; then
      echo "sanitize.sh: sanitizer report in run '$name'" >&2
      return 1
    fi
  done
  # serve at one load: a load costs ~50 s here (its --check script and its steps' skinny GEMMs
  # at -O0 under ASan), and the curve's code over several loads runs in the ASan unit tests.
  echo "== asan: sweep, collectives, serve, diagnose, compare, report and calibrate"
  local verbs=(
    "sweep:mpirun -np 2 --bind-to none build-asan/tpbench sweep ${small[*]} --batch 1,2 --out $out/sweep"
    "collectives:mpirun -np 2 --bind-to none build-asan/tpbench collectives -b 8 -e 64K -f 8 -n 5 -w 1 --baseline --out $out/coll"
    "serve:mpirun -np 2 --bind-to none build-asan/tpbench serve --model tiny --layers 1 --requests 6 --concurrency 3 --prompt-len mix:24@0.5,40@0.5 --output-len uniform:2..6 --chunk 16 --kv-budget 96 --check --sync-rounds 4 --out $out/serve"
    "serve-static:mpirun -np 2 --bind-to none build-asan/tpbench serve --model tiny --layers 1 --requests 4 --concurrency 2 --scheduler static --prompt-len 16 --output-len 4 --host-overhead 100 --inject rank=1:slowdown=1.5 --sync-rounds 4 --out $out/serve-static"
    "diagnose:build-asan/tpbench diagnose $out/sweep"
    "diagnose-serve:build-asan/tpbench diagnose --json $out/serve"
    "compare:build-asan/tpbench compare $out/decode-check $out/inject"
    "report:build-asan/tpbench report $out/sweep $out/decode-check --out $out/report"
    "calibrate:mpirun -np 2 --bind-to none build-asan/tpbench calibrate --reps 1 --max-bytes 64K --op-profile off --out $out/calibrate"
  )
  for v in "${verbs[@]}"; do
    local name=${v%%:*} cmd=${v#*:}
    # shellcheck disable=SC2086
    ASAN_OPTIONS="$asan" $cmd >"$out.$name.log" 2>&1 ||
      { cat "$out.$name.log"; echo "sanitize.sh: asan '$name' failed" >&2; return 1; }
    if grep -E "ERROR: AddressSanitizer|runtime error:" "$out.$name.log"; then
      echo "sanitize.sh: sanitizer report in '$name'" >&2
      return 1
    fi
  done
  # Every error path of the bad-input table, under ASan+UBSan.
  echo "== asan: tests/mpi/test_bad_input.py"
  ASAN_OPTIONS="$asan" python3 tests/mpi/test_bad_input.py --tpbench build-asan/tpbench \
    --mpirun mpirun --source "$ROOT" --work "$out/bad-input" >"$out.bad-input.log" 2>&1 ||
    { grep -v "^ok" "$out.bad-input.log"; echo "sanitize.sh: bad-input under asan failed" >&2; return 1; }
  if grep -rE "ERROR: AddressSanitizer|runtime error:" "$out.bad-input.log"; then
    echo "sanitize.sh: sanitizer report in the bad-input cases" >&2
    return 1
  fi
}

tsan_stage() {
  build tsan tpb_thread_tests
  echo "== tsan: thread tests (x5, for more interleavings)"
  # Less the last-word death test: TSan holds back a signal that arrives inside a signal
  # handler until the handler returns, and that test's handler never does (it runs in the
  # plain build's unit stage).
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    build-tsan/tests/tpb_thread_tests --gtest_brief=1 --gtest_repeat=5 \
    --gtest_filter=-HangWatchdogDeathTest.*
}

case "$STAGE" in
  asan) asan_stage ;;
  tsan) tsan_stage ;;
  # Plain calls, not `asan_stage && tsan_stage`: bash ignores set -e inside a function run as
  # the left side of &&, so a failed build there would run on and end "clean".
  all)
    asan_stage
    tsan_stage
    ;;
  *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;;
esac
echo "sanitize.sh: $STAGE clean"
