// RunSpec: one validated, resolved benchmark point. Built from a flat config object
// (JSON file, then CLI options, then --set overrides); every check names its field.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/mpi/mpi_mode.h"
#include "harness/config/inject_spec.h"
#include "layers/cost_model.h"
#include "layers/hardware.h"
#include "layers/model_shape.h"
#include "layers/profile/engine.h"
#include "layers/profile/engine_tables.h"
#include "layers/timeline.h"

namespace tpb {

struct TpModelConfig;  // layers/tp_model.h

struct RunSpec {
  std::string backend = "cpu";           // cpu | cuda | model (virtual ranks)
  std::string collective = "mpi";        // mpi | nccl | model
  MpiMode mpi_mode = MpiMode::blocking;  // how --collective mpi waits (collectives/mpi/mpi_wait.h)
  std::string model = "tiny";
  std::string hardware;              // "" = the backend's default profile
  std::string engine_name = "none";  // --engine: a name of configs/engines or a file
  bool hardware_given = false;       // --hardware was set (else the device may pick its profile)
  std::string hardware_note;         // adopt_device_hardware's warning, carried into the points
  Phase phase = Phase::decode;
  int64_t batch = 1;
  int64_t context = 1024;
  int64_t prompt = 512;
  int64_t layers = 0;            // 0 = the model's own count
  bool layers_auto = false;      // --layers auto: the model's count reduced to what fits in memory
  DType dtype = DType::fp32;     // the weights' (base/dtype.h DTypes)
  DType kv_dtype = DType::fp32;  // the KV cache's: --kv-dtype, else the activations'
  bool kv_dtype_given = false;   // --kv-dtype was given (echoed as "" otherwise)
  int tp = 0;                    // 0 = world size
  int steps = 20;
  int warmup = 3;
  std::vector<std::string> inject_text;
  std::vector<InjectSpec> inject;
  std::string topology = "default";
  std::string tp_groups = "contiguous";  // contiguous | strided
  std::string out;
  bool check = false;
  std::string attention = "native";  // --attention native|cudnn (cuda: layers/cuda/cudnn)
  bool cuda_graph = false;  // capture one step into a CUDA graph and replay it (cuda backend)
  bool lm_head = false;     // end each step with the LM head and greedy sampling
  uint64_t seed = 1234;
  double occupancy_window_s = 1.0 / 6.0;
  double collective_timeout_s = 600;
  double memory_budget_bytes = 0;  // 0 = the device's memory
  int blas_threads = 1;
  int sync_rounds = 32;
  int trace_steps = 20;  // measured steps written to the point's Chrome trace; 0 = no trace
  StampLevel stamps = StampLevel::collectives;  // --stamps (layers/timeline.h)
  std::string trace_file;  // set by the verb, not by config: the trace's name inside `out`
  std::string config_dir;
  // --backend model: virtual ranks in this one process on the preset's modelled fabric.
  int world = 0;  // virtual ranks; 0: real ranks (MPI's world)
  std::string algo = "auto";
  int gpus_per_node = 0;
  std::string model_noise = "off";  // --model-noise as given (backend_traits.h ModelWorld)
  uint64_t noise_seed = 0;
  double noise_cv = 0;

  ModelShape shape;      // resolved from `model`
  Hardware hw;           // resolved from `hardware`
  EngineProfile engine;  // resolved from --engine (model backend; "none" elsewhere)
  // The engine's measured kernel tables for `hw` (engine.tables; null without).
  std::shared_ptr<const EngineTables> engine_tables;

  int groups(int world) const { return world / tp; }
  // The layers a point runs unless --layers auto reduces them: --layers N or the model's.
  int64_t planned_layers() const { return layers > 0 ? layers : shape.n_layers; }
  CostQuery cost_query() const;
  // Weights, activations, KV cache and all-reduce payload (--dtype and --kv-dtype).
  DTypes dtypes() const { return DTypes(dtype, kv_dtype); }
  // What one rank builds of the point's TP model: shard `tp_rank` of `layers` layers, at the
  // spec's shape, dtype, phase, batch, context, prompt, seed and LM head.
  TpModelConfig model_config(int64_t layers, int tp_rank) const;
};

struct DeviceCaps;  // layers/device.h

// A GPU's own profile instead of the backend's default (layers/hardware.h hardware_for_device):
// without --hardware, the profile the device's name maps to replaces the default (an H200 is
// judged against 4.8 TB/s, not the H100's 3.35). Returns a warning, or "": the device maps to
// no profile (the default stays), or --hardware names another profile than the device's (it
// is kept: the user may mean it). Backends without device memory are left alone.
std::string adopt_device_hardware(RunSpec& s, const DeviceCaps& caps);

// Why a device cannot run the spec's dtypes, naming the field to change ("--dtype: ...",
// "--kv-dtype: ...", "--check: ..."), or "" when it can: each of them must be among
// caps.dtypes, and they must all be one unless caps.separate_dtypes, or be fp8 weights with
// bf16 elsewhere (DTypes(fp8)) on a device with caps.fp8_gemm, which --check refuses (no host
// reference for them). run, serve and calibrate refuse with it (exit 2); a sweep records the
// point as skipped.
std::string dtype_refusal(const RunSpec& s, const DeviceCaps& caps);

// Validates `cfg` against the world size; throws BadInput naming the field.
// `default_config_dir` is where configs/ lives when the config does not say.
RunSpec resolve_run_spec(const nlohmann::json& cfg, int world,
                         const std::string& default_config_dir);

// The config echoed into results.json, in the keys resolve_run_spec reads.
nlohmann::ordered_json run_spec_to_json(const RunSpec& s);

// The echoed keys a rerun (--from) carries: all but --out and the blocks derived from the
// model and hardware names (model_shape, hardware_profile), which are resolved again.
std::vector<std::string> rerun_keys();

}  // namespace tpb
