# The relocatable Open MPI that a device bundle carries (the GPU machine has no MPI): sourced
# by launch/device-bundle.sh to pack it, and by device-check.sh (from the bundle) to use it.
# Debian's Open MPI 4.1 with its external PMIx, laid out under BUNDLE/mpi as its own prefix:
#   bin/mpirun, bin/orted                      (mpirun is Debian's orterun)
#   lib/x86_64-linux-gnu/openmpi/lib/          the libraries (Open MPI's libdir under its prefix)
#   lib/x86_64-linux-gnu/openmpi/lib/openmpi3/ the plugins (its pkglibdir): only those whose
#                                              every library is carried or is glibc's
#   share/openmpi/                             the help texts that mpirun's errors print
#   pmix2/lib/pmix/, pmix2/share/pmix/         PMIx's plugins and help texts
# OPAL_PREFIX moves every Open MPI path under BUNDLE/mpi (`ompi_info --path all` shows its
# layout is relative to the prefix); PMIX_INSTALL_PREFIX does the same for PMIx.

TPB_OMPI_LIBDIR=lib/x86_64-linux-gnu/openmpi/lib  # relative to the prefix, as Debian built it

# device_mpi_pack OUT: packs the Open MPI of this machine into OUT/mpi; one line and exit 1
# when this machine has none (the bundle's multi-rank steps need it).
device_mpi_pack() {
  local out=$1/mpi sys=/usr/lib/x86_64-linux-gnu
  local run
  run=$(readlink -f "$(command -v mpirun 2>/dev/null || echo /nonexistent)")
  [[ -x "$run" && -d $sys/openmpi/lib/openmpi3 && -x /usr/bin/orted ]] ||
    { echo "device_mpi_pack: no Debian Open MPI here (openmpi-bin)" >&2; return 1; }
  mkdir -p "$out/bin" "$out/$TPB_OMPI_LIBDIR/openmpi3" "$out/share" "$out/pmix2/lib" "$out/pmix2/share"
  cp -L "$run" "$out/bin/mpirun"
  cp -L /usr/bin/orted "$out/bin/orted"
  cp -r /usr/share/openmpi "$out/share/openmpi"
  cp -rL $sys/pmix2/lib/pmix "$out/pmix2/lib/pmix"
  cp -r $sys/pmix2/share/pmix "$out/pmix2/share/pmix"
  # The libraries mpirun, orted, libmpi and the PMIx plugin load, but glibc's (every machine
  # has it); a plugin that needs anything more (UCX, libfabric, verbs, PSM) stays behind.
  local libdir=$out/$TPB_OMPI_LIBDIR name path so
  for so in "$out/bin/mpirun" "$out/bin/orted" $sys/libmpi.so.40 $sys/openmpi/lib/openmpi3/mca_pmix_ext3x.so \
    $sys/openmpi/lib/openmpi3/mca_btl_vader.so $sys/openmpi/lib/openmpi3/mca_coll_tuned.so; do
    ldd "$so" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    device_mpi_glibc "$name" || cp -L "$path" "$libdir/$name"
  done
  for so in $sys/openmpi/lib/openmpi3/*.so; do
    device_mpi_loadable "$so" "$libdir" && cp -L "$so" "$libdir/openmpi3/"
  done
  return 0
}

# glibc's own libraries, which every Linux machine brings.
device_mpi_glibc() {
  [[ "$1" =~ ^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.so ]]
}

# device_mpi_loadable PLUGIN LIBDIR: true when each library PLUGIN needs is glibc's or in LIBDIR.
device_mpi_loadable() {
  local name
  for name in $(ldd "$1" | awk '$2 == "=>" {print $1}'); do
    device_mpi_glibc "$name" || [[ -e "$2/$name" ]] || return 1
  done
  return 0
}

# device_mpi_env BUNDLE: exports what runs the bundle's Open MPI from wherever the bundle lies;
# nothing of this machine's own MPI (there is none on a device machine) is used.
device_mpi_env() {
  local p=$1/mpi
  [[ -x "$p/bin/mpirun" ]] || return 1
  export OPAL_PREFIX=$p PMIX_INSTALL_PREFIX=$p/pmix2
  export PMIX_MCA_mca_base_component_path=$p/pmix2/lib/pmix
  export PATH=$p/bin:$PATH LD_LIBRARY_PATH=$p/$TPB_OMPI_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # Device calls run as root; the plugins left out are not to be warned about; one machine
  # and no ssh there (the rsh launcher refuses to start without it): the local launcher.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_plm=isolated
}

# device_mpirun_args NP: mpirun's placement for NP ranks sharing this machine's one GPU: two
# cores each (one for the rank, one for its CUPTI, NVML and progress threads) where the
# machine has them, else no binding (the rehearsal's 2 CPUs under 4 ranks).
device_mpirun_args() {
  local np=$1 cores
  cores=$(getconf _NPROCESSORS_ONLN)
  if ((cores >= 2 * np)); then
    echo "-np $np --oversubscribe --map-by slot:PE=2 --bind-to core"
  else
    echo "-np $np --oversubscribe --bind-to none"
  fi
}
