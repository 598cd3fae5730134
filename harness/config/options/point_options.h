// The point options: what `run` takes, and `sweep`, `serve` and `calibrate` share. Each is
// declared once here; RunSpec reads them (run_spec.cc), the CLI documents them from
// kPointOptions, and the results echo them under the same keys.
#pragma once
#include "harness/config/options/option_def.h"

namespace tpb::opt {

using T = OptType;

// The options that name a config (model, hardware, engine, topology): a file of configs/ by
// name or a JSON file by its path, found by base/config_loader.h's one rule for every kind.
constexpr OptionDef config_option(const char* key, const char* def, const char* help,
                                  const char* def_note = "") {
  return {key, T::text, def, help, 0, 0, "", "", def_note, "NAME|FILE"};
}

// clang-format off
inline constexpr OptionDef backend{"backend", T::choice, "cpu",
    "where the layers run: cpu | cuda | model (virtual ranks on a modelled fabric)",
    0, 0, "", "cpu|cuda|model"};
inline constexpr OptionDef collective{"collective", T::choice, "",
    "the all-reduce after each row-parallel GEMM", 0, 0, "", "mpi|nccl|model",
    "the backend's: mpi on cpu, nccl on cuda, model on model"};
inline constexpr OptionDef world{"world", T::integer, "",
    "model: virtual ranks", 1, 1 << 20, "", "", "--tp, else one node of the preset"};
inline constexpr OptionDef algo{"algo", T::choice, "auto",
    "model: the all-reduce algorithm (auto: the serving engine's, vLLM's custom all-reduce where "
    "it takes one, else NCCL's; nccl: NCCL's choice, the fastest)",
    0, 0, "", "ring|tree|nvls|oneshot|twoshot|nccl|auto"};
inline constexpr OptionDef gpus_per_node{"gpus_per_node", T::integer, "",
    "model: ranks per node", 1, 1024, "", "", "the preset's"};
inline constexpr OptionDef model_noise{"model_noise", T::text, "off",
    "model: seeded noise on every compute segment", 0, 0, "", "", "", "SEED:CV|off"};
inline constexpr OptionDef mpi_mode{"mpi_mode", T::choice, "blocking",
    "how --collective mpi waits", 0, 0, "", "blocking|nonblocking"};
inline constexpr OptionDef model = config_option("model", "tiny",
    "model name (configs/models, or a shipped Hugging Face id), JSON file (tpbench's or a HF "
    "config.json) or a HF checkpoint folder");
inline constexpr OptionDef hardware = config_option("hardware", "",
    "hardware profile name (configs/hardware) or JSON file",
    "the device's own profile, else the backend's");
inline constexpr OptionDef engine = config_option("engine", "none",
    "the serving engine's host work per step and kernel (configs/engines: eager-python) or JSON "
    "file; model backend");
inline constexpr OptionDef phase{"phase", T::choice, "decode", "the step's phase", 0, 0, "",
    "decode|prefill"};
inline constexpr OptionDef batch{"batch", T::integer, "1", "sequences per step", 1, 1 << 20};
inline constexpr OptionDef context{"context", T::integer, "1024",
    "decode: cached tokens per sequence", 0, 1 << 24};
inline constexpr OptionDef prompt{"prompt", T::integer, "512", "prefill: tokens per sequence",
    1, 1 << 24};
inline constexpr OptionDef layers{"layers", T::integer, "",
    "layers to run; auto: the model's, reduced to what fits in memory", 0, 100000, "", "",
    "the model's", "N|auto"};
inline constexpr OptionDef dtype{"dtype", T::choice, "",
    "the weights'; the activations and all-reduces run in it too, except under fp8 weights "
    "(bf16, as FP8 serving engines run)", 0, 0, "", "fp32|bf16|fp16|fp8",
    "the backend's: fp32 on cpu, bf16 on cuda and model"};
inline constexpr OptionDef kv_dtype{"kv_dtype", T::choice, "", "the KV cache's element type", 0,
    0, "", "fp32|bf16|fp16|fp8", "the activations': --dtype's, bf16 under fp8"};
inline constexpr OptionDef tp{"tp", T::integer, "", "tensor-parallel degree", 1, 1 << 16, "",
    "", "the world size"};
inline constexpr OptionDef steps{"steps", T::integer, "20", "measured steps", 1, 1000000};
inline constexpr OptionDef warmup{"warmup", T::integer, "3", "warm-up steps (left out)", 0,
    1000000};
inline constexpr OptionDef topology = config_option("topology", "default",
    "interconnect preset (configs/topologies) or JSON file",
    "the run's own fabric; nvlink4 on model");
inline constexpr OptionDef tp_groups{"tp_groups", T::choice, "contiguous",
    "how ranks form TP groups", 0, 0, "", "contiguous|strided"};
inline constexpr OptionDef out{"out", T::text, "",
    "output directory (required: results.json and the traces go there)", 0, 0, "", "", "", "DIR"};
inline constexpr OptionDef seed{"seed", T::integer, "1234", "seed of weights, cache and inputs",
    0, 2147483647};
inline constexpr OptionDef occupancy_window{"occupancy_window", T::time, "",
    "sampling window of occupancy_sampled (NVML-like)", 1e-4, 60.0, "s", "", "1/6 s"};
inline constexpr OptionDef collective_timeout{"collective_timeout", T::time, "600",
    "time before a collective or barrier is declared hung: 10min, 90s", 0.1, 86400.0, "s"};
inline constexpr OptionDef memory_budget{"memory_budget", T::size, "",
    "per-rank memory budget, e.g. 8G", 0, 0, "", "", "the device's memory"};
inline constexpr OptionDef blas_threads{"blas_threads", T::integer, "1",
    "BLAS threads per rank (cpu)", 1, 1024};
inline constexpr OptionDef sync_rounds{"sync_rounds", T::integer, "32",
    "ping-pong rounds per clock sync", 1, 100000};
inline constexpr OptionDef trace_steps{"trace_steps", T::integer, "20",
    "measured steps in the point's Chrome/Perfetto trace (0: no trace)", 0, 100000};
inline constexpr OptionDef stamps{"stamps", T::choice, "collectives",
    "device stamps at step and collective edges only, per-op times from the backend's own "
    "record; or a stamp around every op", 0, 0, "", "collectives|ops"};
inline constexpr OptionDef lm_head{"lm_head", T::boolean, "false",
    "end each step with the final norm, the vocab-parallel LM head and greedy sampling "
    "(serve: true)"};
inline constexpr OptionDef config_dir{"config_dir", T::text, "",
    "directory holding models/, hardware/ and topologies/", 0, 0, "", "",
    "the installed configs", "DIR"};
inline constexpr OptionDef check{"check", T::boolean, "false",
    "verify the TP output against an unsharded reference"};
inline constexpr OptionDef cuda_graph{"cuda_graph", T::boolean, "false",
    "capture one step in a CUDA graph and replay it"};
inline constexpr OptionDef attention{"attention", T::choice, "native",
    "attention kernels (cuda): tpbench's own, or cuDNN's fused SDPA for bf16/fp16 prefill, "
    "decode and serve's paged steps (fp32 keeps the native ones)", 0, 0, "", "native|cudnn"};
inline constexpr OptionDef inject{"inject", T::list, "",
    "imbalance spec rank=R:key=value (repeatable): slowdown=1.3, host_delay=2ms, "
    "jitter=0.1@500us, clock_offset=5ms, mem_reserve=8, mem_contend=1, ... (bare times: "
    "host_delay and jitter in us, clock_offset in ms)", 0, 0, "", "", "none", "SPEC"};
// clang-format on

// The point options in --help's order (check, cuda_graph and inject are flags: cli.cc).
inline constexpr const OptionDef* kPointOptions[] = {&backend,
                                                     &collective,
                                                     &world,
                                                     &algo,
                                                     &gpus_per_node,
                                                     &model_noise,
                                                     &mpi_mode,
                                                     &model,
                                                     &hardware,
                                                     &engine,
                                                     &attention,
                                                     &phase,
                                                     &batch,
                                                     &context,
                                                     &prompt,
                                                     &layers,
                                                     &dtype,
                                                     &kv_dtype,
                                                     &tp,
                                                     &steps,
                                                     &warmup,
                                                     &topology,
                                                     &tp_groups,
                                                     &out,
                                                     &seed,
                                                     &occupancy_window,
                                                     &collective_timeout,
                                                     &memory_budget,
                                                     &blas_threads,
                                                     &sync_rounds,
                                                     &trace_steps,
                                                     &stamps,
                                                     &lm_head,
                                                     &config_dir};

}  // namespace tpb::opt
