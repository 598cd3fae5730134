// `tpbench collectives`' options, nccl-tests' spellings first (-b -e -f -i -w -n -o -d -a -J
// -r). Sizes keep their suffixes (1K, 4M) as text; collectives_spec.cc reads them. The
// backend, collective and model-fabric options are the point options' (point_options.h).
#pragma once
#include "harness/config/options/point_options.h"

namespace tpb::opt {

// clang-format off
inline constexpr OptionDef minbytes{"minbytes", T::text, "8",
    "smallest message (K/M/G suffixes: powers of 1024)", 0, 0, "", "", "", "SIZE",
    "-b,--minbytes"};
inline constexpr OptionDef maxbytes{"maxbytes", T::text, "32M", "largest message", 0, 0, "", "",
    "", "SIZE", "-e,--maxbytes"};
inline constexpr OptionDef stepfactor{"stepfactor", T::integer, "2",
    "multiply the size by this each step", 1, 1 << 20, "", "", "", "", "-f,--stepfactor"};
inline constexpr OptionDef stepbytes{"stepbytes", T::text, "0",
    "add this many bytes each step (instead of -f)", 0, 0, "", "", "", "SIZE",
    "-i,--stepbytes"};
inline constexpr OptionDef warmup_iters{"warmup_iters", T::integer, "5",
    "untimed iterations per size", 0, 1000000, "", "", "", "", "-w,--warmup_iters,--warmup-iters"};
inline constexpr OptionDef iters{"iters", T::integer, "20", "timed iterations per size", 1,
    10000000, "", "", "", "", "-n,--iters"};
inline constexpr OptionDef op{"op", T::choice, "sum", "the reduction", 0, 0, "", "sum|max|min",
    "", "", "-o,--op"};
inline constexpr OptionDef coll_dtype{"dtype", T::text, "float",
    "nccl-tests' names float | half | bfloat16 (or fp32 | fp16 | bf16); mpi on host buffers: "
    "float only", 0, 0, "", "", "", "TYPE", "-d,--datatype,--dtype"};
inline constexpr OptionDef average{"average", T::integer, "1",
    "time over ranks, as nccl-tests: 0 rank 0's, 1 mean, 2 min, 3 max", 0, 3, "", "", "", "",
    "-a,--average"};
inline constexpr OptionDef output_file{"output_file", T::text, "",
    "also write nccl-tests' JSON (version 2) to this file (rank 0)", 0, 0, "", "", "none",
    "FILE", "-J,--output_file,--output-file"};
inline constexpr OptionDef kind{"kind", T::text, "all_reduce",
    "all_reduce | reduce_scatter | all_gather | broadcast | reduce", 0, 0, "", "", "", "KIND"};
inline constexpr OptionDef root{"root", T::integer, "0", "root rank of broadcast and reduce", 0,
    2147483647, "", "", "", "", "-r,--root"};
inline constexpr OptionDef coll_out = variant_of(out, "",
    "output directory (required: results.json goes there)");
inline constexpr OptionDef inplace{"inplace", T::boolean, "false",
    "the in-place half only (else out-of-place, then in-place, as nccl-tests)"};
inline constexpr OptionDef baseline{"baseline", T::boolean, "false",
    "also time a plain blocking MPI collective loop per size (mpi only)"};
inline constexpr OptionDef eager{"eager", T::boolean, "false",
    "model: a custom all-reduce (oneshot, twoshot, or auto's) called eagerly on an unregistered "
    "input, so the copy into its registered buffer comes first (the preset's eager_copy)"};
// clang-format on

// nccl-tests' options first, then the shared ones (point_options.h) collectives takes.
inline constexpr const OptionDef* kCollectiveOptions[] = {
    &minbytes,    &maxbytes,     &stepfactor,
    &stepbytes,   &warmup_iters, &iters,
    &op,          &coll_dtype,   &average,
    &output_file, &kind,         &root,
    &collective,  &mpi_mode,     &backend,
    &world,       &algo,         &gpus_per_node,
    &topology,    &coll_out,     &collective_timeout,
    &sync_rounds, &config_dir};

}  // namespace tpb::opt
