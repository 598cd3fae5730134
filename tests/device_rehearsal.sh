#!/usr/bin/env bash
# A rehearsal of the GPU device check on this CPU machine (CI runs it): what a lent H200 would
# meet, short of the GPU itself.
# 1. The bundle (launch/device-bundle.sh): tpbench (without and with MPI), the layer check and
#    a relocated Open MPI, built and packed here.
# 2. A minimal root (debootstrap minbase + python3), as a fresh machine is, with none of this
#    build's libraries and no MPI. Into it go the bundle and only what a GPU machine provides:
#    the CUDA toolkit's library folder and NCCL's library, bound read-only at the paths they
#    have here.
# 3. In that root: every library the binaries ask for resolves, `tpbench info` starts, a CPU
#    run finds its model in the bundle's configs/ (no source tree there), and the bundle's own
#    mpirun (OPAL_PREFIX: device_mpi.sh) starts 2 ranks of tpbench-mpi.
# 4. In that root: device-check.sh --rehearse, whose GPU steps run on the CPU backend, checked
#    for what the device tool brings back: at most 8 files, printed output under 8,000
#    characters, a table, an archive of every step, the failing peer step (no PyTorch here)
#    recorded with the steps after it still run; the steps of 2 and 4 ranks under the bundle's
#    mpirun with the table's lines for them; the layer check's verdict line in summary.txt;
#    then again with one step hung and a short
#    deadline: the call ends inside it, the later steps are listed as skipped, and the three
#    files are still written.
# Usage: tests/device_rehearsal.sh [--bundle DIR] [--scripts DIR] [--keep-root DIR]
#        tests/device_rehearsal.sh --make-root DIR
#   --bundle    rehearse this bundle instead of making one
#   --scripts   take device-check.sh, device_plan.sh, device_libs.sh, device_mpi.sh,
#               device_table.py, device_table_ranks.py from DIR
#               (to rehearse other versions of the scripts against the same bundle)
#   --keep-root reuse (or make and keep) the minimal root at DIR: debootstrap is ~1-2 min
#   --make-root only make the minimal root at DIR, and exit (tests/run.sh makes it in the
#               background during the build: it is mostly downloads)
# Exits 1 on the first failed check; needs root (chroot, mount) and Debian's mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BUNDLE="" SCRIPTS="" KEEP="" MAKE_ONLY=""
while (($#)); do
  case "$1" in
    --bundle) BUNDLE=$2; shift 2 ;;
    --scripts) SCRIPTS=$2; shift 2 ;;
    --keep-root) KEEP=$2; shift 2 ;;
    --make-root) KEEP=$2 MAKE_ONLY=1; shift 2 ;;
    *) echo "device_rehearsal.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "device_rehearsal.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
T0=$SECONDS
WORK=$(mktemp -d /tmp/tpb-rehearsal.XXXXXX)
ROOTFS=${KEEP:-$WORK/root}
MOUNTS=()
cleanup() {
  local m
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  [[ -n "$KEEP" && -z "${TPB_REHEARSAL_LEAVE:-}" ]] && rm -rf "$ROOTFS/bundle" "$ROOTFS/out" "$ROOTFS/tmp/"*
  rm -rf "$WORK"
}
trap cleanup EXIT

# The minimal root (step 2): debootstrap minbase with python3, unless DIR already holds one.
make_root() {
  source launch/deps.sh
  tpb_install_deps debootstrap >/dev/null
  [[ -x "$ROOTFS/usr/bin/python3" ]] && return 0
  local mirror
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  debootstrap --variant=minbase --include=python3 bookworm "$ROOTFS" "${mirror:-http://deb.debian.org/debian}" \
    >"$WORK/debootstrap.log" 2>&1 || fail "debootstrap: $(tail -n 3 "$WORK/debootstrap.log")"
}
if [[ -n "$MAKE_ONLY" ]]; then
  make_root
  ok "minimal root made at $ROOTFS ($((SECONDS - T0)) s)"
  exit 0
fi

# 1. The bundle.
if [[ -z "$BUNDLE" ]]; then
  BUNDLE=$WORK/bundle
  launch/device-bundle.sh "$BUNDLE" | tail -n 3
fi
[[ -x "$BUNDLE/tpbench" || -e "$BUNDLE/tpbench.gz" ]] || fail "no tpbench in $BUNDLE"
if [[ -n "$SCRIPTS" ]]; then
  cp "$SCRIPTS"/device-check.sh "$SCRIPTS"/device_table.py "$BUNDLE/" 2>/dev/null || true
  cp "$SCRIPTS"/device_plan.sh "$SCRIPTS"/device_libs.sh "$BUNDLE/" 2>/dev/null || true
  cp "$SCRIPTS"/device_mpi.sh "$SCRIPTS"/device_table_ranks.py "$BUNDLE/" 2>/dev/null || true
fi
ok "bundle $(du -sm "$BUNDLE" | cut -f1) MiB ($((SECONDS - T0)) s)"

# 2. The minimal root.
make_root
ok "minimal root ($((SECONDS - T0)) s): $(chroot "$ROOTFS" dpkg -l | grep -c '^ii') packages"
source "$SRC/launch/device_libs.sh"
bind() {  # bind SRC DEST-inside-root: read-only, undone at exit
  local dst=$ROOTFS$2
  if [[ -d "$1" ]]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; touch "$dst"; fi
  mount --bind "$1" "$dst" && MOUNTS+=("$dst")
  mount -o remount,bind,ro "$dst" 2>/dev/null || true
}
mount -t proc proc "$ROOTFS/proc" && MOUNTS+=("$ROOTFS/proc")
bind /dev /dev
bind /sys /sys  # hwloc reads the topology there, as Open MPI does on the GPU machine
# What a GPU machine provides: the toolkit's library folder, and NCCL's library (here it sits
# in the system folder, so only its own files are bound there).
toolkit=$(dirname "$(readlink -f /usr/local/cuda/lib64/libcublasLt.so* | head -n 1)")
bind "$toolkit" "$toolkit"
for f in $(ls /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null); do bind "$f" "$f"; done
rm -rf "$ROOTFS/bundle" && cp -a "$BUNDLE" "$ROOTFS/bundle"
in_root() { chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
# The bundle's large libraries travel gzipped; device-check.sh unpacks them with this function
# before anything loads them, as done here for the checks below.
packed=$(ls "$ROOTFS"/bundle/*.gz "$ROOTFS"/bundle/lib/*.gz 2>/dev/null | wc -l)
in_root bash -c 'source /bundle/device_libs.sh && device_unpack /bundle' ||
  fail "device_unpack in the minimal root"
[[ -z "$(ls "$ROOTFS"/bundle/*.gz "$ROOTFS"/bundle/lib/*.gz 2>/dev/null)" ]] || fail "device_unpack left packed files"
[[ -x "$ROOTFS/bundle/tpbench" && -x "$ROOTFS/bundle/tpbench-mpi" ]] || fail "unpacked binaries are not executable"
ok "the bundle's $packed packed files (libraries and binaries) unpacked in the minimal root"
LIBS="/bundle/lib:$toolkit:/usr/lib/x86_64-linux-gnu"

# 3. The bundle starts there, with no MPI but its own.
[[ -z "$(in_root bash -c 'command -v mpirun orterun; ls /usr/lib/*/libmpi.so* /usr/lib/*/openmpi' 2>/dev/null)" ]] ||
  fail "the minimal root has an MPI of its own: the bundle's would go untested"
MPILIBS="/bundle/mpi/$(bash -c "source launch/device_mpi.sh && echo \$TPB_OMPI_LIBDIR")"
missing=$(in_root env LD_LIBRARY_PATH="$LIBS:$MPILIBS" ldd /bundle/tpbench /bundle/tpb_device_check \
  /bundle/tpbench-mpi /bundle/mpi/bin/mpirun /bundle/mpi/bin/orted | grep 'not found' || true)
[[ -z "$missing" ]] || fail "libraries missing in the minimal root: $missing"
ok "every library of tpbench, tpbench-mpi, tpb_device_check and mpirun resolves from the bundle, the toolkit and NCCL"
in_root env LD_LIBRARY_PATH="$LIBS" /bundle/tpbench info >"$WORK/info.txt" 2>&1 ||
  fail "tpbench info in the minimal root: $(tail -n 3 "$WORK/info.txt")"
ok "tpbench info starts there"
in_root env LD_LIBRARY_PATH="$LIBS" OPENBLAS_NUM_THREADS=1 /bundle/tpbench run --backend cpu --model tiny \
  --layers 2 --batch 1 --context 32 --steps 2 --warmup 1 --out /tmp/run >"$WORK/run.txt" 2>&1 ||
  fail "a CPU run in the minimal root: $(tail -n 3 "$WORK/run.txt")"
ok "a CPU run there finds --model tiny in the bundle's configs/"
in_root env LD_LIBRARY_PATH="$LIBS" OPENBLAS_NUM_THREADS=1 bash -c 'source /bundle/device_mpi.sh &&
  device_mpi_env /bundle && mpirun -np 2 --oversubscribe --bind-to none /bundle/tpbench-mpi run \
  --backend cpu --model tiny --layers 2 --tp 2 --batch 1 --context 32 --steps 2 --warmup 1 --out /tmp/run2' \
  >"$WORK/mpirun.txt" 2>&1 || fail "the bundle's mpirun in the minimal root: $(tail -n 5 "$WORK/mpirun.txt")"
ok "the bundle's relocated Open MPI runs 2 ranks of tpbench-mpi there (nothing of this machine's MPI)"

# A PyTorch image's CUDA 13 wheels keep their libraries in nvidia/cu13/lib (CUDA 12's in
# nvidia/<name>/lib): with no toolkit and no system copy, those are the folders found.
mkdir -p "$WORK/site/nvidia/cu13/lib" "$WORK/site/nvidia/nccl/lib"
touch "$WORK/site/nvidia/cu13/lib/libcublasLt.so.13" "$WORK/site/nvidia/nccl/lib/libnccl.so.2"
found=$(PYTHONPATH=$WORK/site TPB_SYSTEM_LIB_DIRS="" bash -c "source launch/device_libs.sh; device_lib_path" 2>/dev/null)
[[ "$found" == "$WORK/site/nvidia/cu13/lib:$WORK/site/nvidia/nccl/lib" ]] ||
  fail "the wheels' library folders: found '$found'"
ok "the cu13 wheel layout: $found"

# 4. The check itself, GPU steps on the CPU. run_check NAME ARGS...: OUT=/out/NAME in the root,
# the printed output kept in WORK/NAME.txt, the exit code in CHECK_RC.
run_check() {
  local name=$1
  shift
  rm -rf "$ROOTFS/out/$name"
  set +e
  in_root env OUT=/out/"$name" "$@" >"$WORK/$name.txt" 2>&1
  CHECK_RC=$?
  set -e
  OUTDIR=$ROOTFS/out/$name
}
# What the device tool brings back: at most 8 files; output kept to what a 12,000-character
# tail holds with room for the tool's own lines.
brought_back() {
  local n chars
  [[ -d "$OUTDIR" ]] || fail "$1: nothing under OUT (exit $CHECK_RC): $(head -c 300 "$WORK/$1.txt")"
  n=$(find "$OUTDIR" -type f | wc -l)
  chars=$(wc -c <"$WORK/$1.txt")
  ((n <= 8)) || fail "$1: $n files under OUT, a call brings back 8: $(ls "$OUTDIR" | head)"
  ((chars < 8000)) || fail "$1: printed $chars characters (over 8,000): $(head -c 400 "$WORK/$1.txt")"
  for f in device-check.tgz summary.txt table.txt; do
    [[ -s "$OUTDIR/$f" ]] || fail "$1: no $f under OUT ($(ls "$OUTDIR" 2>/dev/null))"
  done
  ! grep -q Traceback "$OUTDIR/table.txt" || fail "$1: the table crashed: $(tail -n 3 "$OUTDIR/table.txt")"
  ok "$1: $n files under OUT, $chars characters printed, table and archive there"
}
step_rc() { awk -F'\t' -v s="$2" '$1 == s {print $2}' "$WORK/$1.steps"; }

t=$SECONDS
run_check full bash /bundle/device-check.sh --rehearse --deadline 300
brought_back full
tar -xzf "$OUTDIR/device-check.tgz" -C "$WORK" ./steps.tsv && mv "$WORK/steps.tsv" "$WORK/full.steps"
tar -tzf "$OUTDIR/device-check.tgz" >"$WORK/full.files"
RANK_STEPS="tp2-check tp4-check tp2-serve-check tp2-slowdown tp2-host-delay"
for s in decode-first decode-eager decode-graph prefill check serve serve-cudnn calibrate 70b-layer slow-op $RANK_STEPS; do
  [[ "$(step_rc full "$s")" == 0 ]] || fail "full: step $s exit '$(step_rc full "$s")': $(grep -A2 "^$s" "$WORK/full.txt")"
  grep -q "^./$s.log$" "$WORK/full.files" || fail "full: no $s.log in the archive"
done
[[ "$(step_rc full layer-check)" == 77 ]] || fail "full: the layer check without a GPU exited '$(step_rc full layer-check)', not 77"
[[ "$(step_rc full peer)" == 1 ]] && [[ "$(step_rc full peer-compile)" == 1 ]] ||
  fail "full: the peer steps (no PyTorch in the root) exited '$(step_rc full peer)', not 1"
[[ $CHECK_RC == 1 ]] || fail "full: exit $CHECK_RC with a failed step (expected 1)"
grep -q "no PyTorch here" "$WORK/full.txt" || fail "full: the peer's failure is not shown"
grep -q '^--check (check): PASS' "$OUTDIR/table.txt" || fail "full: no --check verdict in the table"
grep -q '^slow_op (slow-op): attention x[0-9]' "$OUTDIR/table.txt" || fail "full: no slow_op line in the table"
[[ $(grep -c '^FAIL .*no point measured it' "$OUTDIR/table.txt") == 6 ]] ||
  fail "full: the targets were judged on another model than llama-3.1-8b: $(grep -E '^(PASS|FAIL)' "$OUTDIR/table.txt")"
ok "full: every step ran ($((SECONDS - t)) s); the peer's failure recorded, the steps after it run; no target judged on tiny"
# Ranks sharing the machine, judged by the table as they would be on the GPU (on 2 shared CPUs
# the injected excess is noise-bound: its line is asserted, not its verdict).
for s in tp2-check tp4-check; do
  grep -q "^--check ($s): PASS" "$OUTDIR/table.txt" || fail "full: no --check PASS for $s: $(grep -A1 "^$s" "$WORK/full.txt")"
  grep -qE "^kernel choices \($s\): (PASS|none recorded)" "$OUTDIR/table.txt" || fail "full: $s: $(grep "choices ($s)" "$OUTDIR/table.txt")"
  grep -q "^clock conversion ($s): " "$OUTDIR/table.txt" || fail "full: no clock conversion line for $s"
done
grep -qE '^inject slowdown \(tp2-slowdown\): (PASS|FAIL) rank [0-9]' "$OUTDIR/table.txt" || fail "full: no slowdown line"
grep -qE '^inject host_delay \(tp2-host-delay\): (PASS|FAIL) rank [0-9]' "$OUTDIR/table.txt" || fail "full: no host_delay line"
ok "full: 2 and 4 ranks under the bundle's mpirun: --check, equal kernel choices, the injections and the clock judged"
grep -qE '^layer check: device-check: (PASS|FAIL|SKIP|error)' "$OUTDIR/summary.txt" ||
  fail "full: no layer check verdict line in summary.txt: $(grep -i 'layer' "$OUTDIR/summary.txt")"
ok "full: summary.txt has the layer check's verdict line: $(grep '^layer check: ' "$OUTDIR/summary.txt" | cut -c1-80)"

# A step that hangs, under a deadline it cannot meet: cut at the deadline, the rest skipped.
t=$SECONDS
run_check deadline TPB_REHEARSE_HANG=decode-eager bash /bundle/device-check.sh --rehearse --deadline 30
took=$((SECONDS - t))
brought_back deadline
((took <= 40)) || fail "deadline: took $took s under a 30 s deadline"
[[ $CHECK_RC == 1 ]] || fail "deadline: exit $CHECK_RC (expected 1)"
grep -qE '^decode-eager +rc=124' "$WORK/deadline.txt" || fail "deadline: the hung step was not cut: $(head -n 20 "$WORK/deadline.txt")"
grep -qE '^70b-layer +SKIPPED' "$WORK/deadline.txt" || fail "deadline: later steps not listed as skipped"
ok "deadline: the hung step cut (rc 124), later steps skipped, the call took $took s of 30"
echo "device rehearsal passed in $((SECONDS - T0)) s"
