// Resolution and validation of a RunSpec. Contradictions between fields are checked here,
// once, so the drivers can trust what they get.
#include "harness/config/run_spec.h"

#include <algorithm>
#include <limits>
#include <set>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/point_options.h"
#include "layers/device.h"
#include "layers/tp_model_config.h"

namespace tpb {

CostQuery RunSpec::cost_query() const {
  CostQuery q;
  q.shape = shape;
  q.phase = phase;
  q.batch = batch;
  q.context = context;
  q.prompt = prompt;
  q.tp = tp;
  q.dtype = dtype;
  q.kv_dtype = kv_dtype;
  q.layers = planned_layers();
  q.lm_head = lm_head;
  return q;
}

TpModelConfig RunSpec::model_config(int64_t layers_built, int tp_rank) const {
  CostQuery q = cost_query();
  q.layers = layers_built;  // what this rank builds: the plan may have reduced the depth
  return fixed_model_config(q, tp_rank, seed);
}

namespace {

// Options only some backends honour, and the combinations a CUDA graph cannot replay.
void check_backend_options(const RunSpec& s, const BackendTraits& bt) {
  if (s.attention != opt::attention.def && !bt.library_attention)
    throw BadInput("--attention: " + s.attention + " runs on the cuda backend only (" + s.backend +
                   " has its own attention)");
  for (const InjectSpec& i : s.inject)
    if ((i.sm_clock_mhz > 0 || i.sm_hold_fraction > 0) && !bt.clock_control && !bt.virtual_ranks)
      throw BadInput("--inject: sm_clock needs --backend cuda (or model)");
  if (s.cuda_graph) {
    if (!bt.graphs) throw BadInput("--cuda-graph: needs --backend cuda (or model)");
    if (s.lm_head)
      throw BadInput(
          "--cuda-graph: not with --lm-head (greedy sampling picks the token on the host "
          "between the argmax and its all-gather, which a graph cannot replay)");
    if (s.warmup < 1)
      throw BadInput(
          "--cuda-graph: needs --warmup >= 1 (capture follows a warm-up step, which "
          "sizes the workspaces a graph cannot allocate)");
    if (collective_traits(s.collective).host_calls && s.tp > 1)
      throw BadInput(
          "--cuda-graph: needs --collective nccl when tp > 1 (mpi stages through host "
          "memory, which a graph cannot capture)");
    for (const InjectSpec& i : s.inject)
      if (i.jitter_p > 0)
        throw BadInput(
            "--cuda-graph: does not combine with --inject jitter (a replayed graph "
            "runs the same work every step)");
  }
}

// What virtual ranks cannot do, refused by name rather than run wrongly.
void check_model_options(RunSpec& s) {
  if (s.topology == "default") s.topology = "nvlink4";
  if (s.check) throw BadInput("--check: the model backend computes no tensors to verify");
}

// The first TP group's all-reduce, modelled once before any point runs, so a fabric that cannot
// carry the group (a measured curve of another size, a group across the nodes of a one-node
// preset, nvls across nodes) is refused by name at setup. The nodes are counted as
// drive/model/virtual_ranks.cc places ranks.
void check_model_group(const RunSpec& s, int world) {
  const int groups = world / s.tp;
  std::set<int> nodes;
  for (int k = 0; k < s.tp; ++k)
    nodes.insert((s.tp_groups == "strided" ? k * groups : k) / s.gpus_per_node);
  const int n = static_cast<int>(nodes.size());
  if (s.tp % n != 0)
    throw BadInput("--tp-groups: a TP group of " + std::to_string(s.tp) + " ranks spans " +
                   std::to_string(n) + " nodes unevenly");
  (void)model_collective(load_fabric(s.topology, s.config_dir), CollKind::all_reduce, 1024,
                         {s.tp, n}, parse_model_algo(s.algo, "--algo"));
}

// What the model backend needs of the loaded profile: a peak for the dtype, a fabric that
// carries the group, and the clock its peaks are stated at for --inject sm_clock.
void check_model_profile(const RunSpec& s, int world) {
  s.hw.flops_for(s.dtype);  // a dtype the profile has no peak for
  check_model_group(s, world);
  for (const InjectSpec& i : s.inject)
    if (i.sm_clock_mhz > 0 && !(s.hw.sm_clock_mhz > 0))
      throw BadInput(
          "--inject: sm_clock on --backend model needs the profile's sm_clock_mhz (the clock its "
          "FLOP peaks are stated at); '" +
          s.hw.name + "' has none");
}

// An engine priced from measured tables needs them for this GPU: refused by name, with the way
// to make them, where they are not shipped.
void load_engine_tables(RunSpec& s) {
  if (!s.engine.has_tables()) return;
  std::string gpu = s.hw.name;
  if (const auto colon = gpu.find(':'); colon != std::string::npos) gpu.resize(colon);
  auto t = EngineTables::find(s.engine.tables, gpu, s.config_dir);
  if (!t)
    throw BadInput("--engine: " + s.engine.name + " has no measured tables for --hardware " +
                   s.hw.name + " (configs/engine_tables/" + s.engine.tables + "/" + gpu +
                   ".json); make them with `tpbench calibrate --from-aiconfigurator SYSTEM " +
                   "ENGINE VERSION` after `pip install aiconfigurator`");
  s.engine_tables = std::make_shared<const EngineTables>(std::move(*t));
}

// The model and hardware profile, and the checks that need the model's shape.
void load_shapes(RunSpec& s, int world) {
  if (backend_traits(s.backend).virtual_ranks && world % s.tp != 0)
    throw BadInput("--world: " + std::to_string(world) + " virtual ranks are not divisible by " +
                   "--tp " + std::to_string(s.tp));
  if (world % s.tp != 0)
    throw BadInput("--tp: world size " + std::to_string(world) + " is not divisible by tp " +
                   std::to_string(s.tp));
  s.shape = load_model(s.model, s.config_dir);
  s.hw = load_hardware(s.hardware, s.config_dir);
  s.engine = load_engine(s.engine_name, s.config_dir);
  load_engine_tables(s);
  shard_shape(s.shape, s.tp);  // throws when tp does not divide heads / KV heads / MLP width
  if (s.layers > s.shape.n_layers)
    throw BadInput("--layers: " + std::to_string(s.layers) + " exceeds the model's " +
                   std::to_string(s.shape.n_layers) + " layers");
  // The byte counts are doubles, but the kernels index with int64: keep tokens x width sane.
  const double tokens =
      static_cast<double>(s.batch) * static_cast<double>(s.phase == Phase::decode ? 1 : s.prompt);
  if (tokens * static_cast<double>(s.shape.intermediate) > 9e15)
    throw BadInput("--batch: batch x prompt x intermediate overflows the index range");
}

}  // namespace

RunSpec resolve_run_spec(const nlohmann::json& cfg, int world,
                         const std::string& default_config_dir) {
  ConfigFields f(cfg);
  RunSpec s;
  BackendChoice bc = choose_backend(f, default_config_dir);
  s.config_dir = std::move(bc.config_dir);
  s.backend = std::move(bc.backend);
  s.collective = std::move(bc.collective);
  s.mpi_mode = bc.mpi_mode;
  const BackendTraits& bt = backend_traits(s.backend);
  s.model = f.str(opt::model);
  s.hardware_given = f.has(opt::hardware.key);
  s.hardware = f.str(opt::hardware, bt.default_hardware);
  s.engine_name = f.str(opt::engine);
  s.phase = f.choice(opt::phase) == "decode" ? Phase::decode : Phase::prefill;
  s.batch = f.integer(opt::batch);
  s.context = f.integer(opt::context);
  s.prompt = f.integer(opt::prompt);
  // A sweep compares points of one depth, so the depth never changes unless asked to: "auto"
  // lets the memory plan shrink it, and the point then says so (params.layers, a warning).
  s.layers_auto = f.has(opt::layers.key) && f.raw(opt::layers.key) == "auto";
  if (s.layers_auto)
    f.mark_known(opt::layers.key);
  else
    s.layers = f.integer(opt::layers, 0);
  s.dtype = parse_dtype(f.str(opt::dtype, dtype_name(bt.default_dtype)), "--dtype");
  // Not given (or "" in a recorded config): the activations', so a rerun at another --dtype
  // keeps following it.
  const std::string kv = f.str(opt::kv_dtype, "");
  s.kv_dtype_given = !kv.empty();
  s.kv_dtype =
      parse_dtype(s.kv_dtype_given ? kv : dtype_name(activation_dtype(s.dtype)), "--kv-dtype");
  const ModelWorld mw =
      resolve_model_world(f, s.backend, world, f.str(opt::topology), s.config_dir,
                          f.has(opt::tp.key) ? static_cast<int>(f.integer(opt::tp, 1)) : 0);
  if (mw.world > 0) {
    world = s.world = mw.world;
    s.algo = mw.algo;
    s.gpus_per_node = mw.gpus_per_node;
    s.model_noise = mw.noise;
    s.noise_seed = mw.noise_seed;
    s.noise_cv = mw.noise_cv;
  }
  s.tp = static_cast<int>(f.integer(opt::tp, world));
  s.steps = static_cast<int>(f.integer(opt::steps));
  s.warmup = static_cast<int>(f.integer(opt::warmup));
  s.inject_text = f.strings(opt::inject);
  for (const auto& t : s.inject_text) {
    auto v = parse_inject(t);
    s.inject.insert(s.inject.end(), v.begin(), v.end());
  }
  validate_inject_ranks(s.inject, world);
  s.topology = f.str(opt::topology);
  s.tp_groups = f.choice(opt::tp_groups);
  s.out = f.str(opt::out);
  s.check = f.boolean(opt::check);
  s.cuda_graph = f.boolean(opt::cuda_graph);
  s.attention = f.choice(opt::attention);
  s.lm_head = f.boolean(opt::lm_head);
  s.seed = static_cast<uint64_t>(f.integer(opt::seed));
  s.occupancy_window_s = f.duration(opt::occupancy_window, 1.0 / 6.0);
  s.collective_timeout_s = f.duration(opt::collective_timeout);
  s.memory_budget_bytes = f.bytes(opt::memory_budget);
  s.blas_threads = static_cast<int>(f.integer(opt::blas_threads));
  s.sync_rounds = static_cast<int>(f.integer(opt::sync_rounds));
  s.trace_steps = static_cast<int>(f.integer(opt::trace_steps));
  s.stamps = f.choice(opt::stamps) == "ops" ? StampLevel::ops : StampLevel::collectives;
  f.reject_unknown();

  check_backend_options(s, bt);
  if (bt.virtual_ranks) check_model_options(s);
  load_shapes(s, world);
  if (bt.virtual_ranks && s.hw.measure_at_startup)
    throw BadInput("--hardware: '" + s.hw.name +
                   "' measures its peaks at start-up; the model backend needs a profile with "
                   "stated peaks (h100-sxm, h200-sxm, b200, a100-sxm-80g, or calibrate's)");
  if (bt.virtual_ranks) check_model_profile(s, world);
  return s;
}

nlohmann::ordered_json run_spec_to_json(const RunSpec& s) {
  // The keys resolve_run_spec reads, so a recorded config resolves back to the same spec.
  nlohmann::ordered_json j{{opt::backend.key, s.backend},
                           {opt::collective.key, s.collective},
                           {opt::mpi_mode.key, mpi_mode_name(s.mpi_mode)},
                           {opt::model.key, s.model},
                           {opt::hardware.key, s.hardware},
                           {opt::phase.key, phase_name(s.phase)},
                           {opt::batch.key, s.batch},
                           {opt::context.key, s.context},
                           {opt::prompt.key, s.prompt},
                           {opt::layers.key, s.layers_auto ? nlohmann::ordered_json("auto")
                                                           : nlohmann::ordered_json(s.layers)},
                           {opt::dtype.key, dtype_name(s.dtype)},
                           {opt::kv_dtype.key, s.kv_dtype_given ? dtype_name(s.kv_dtype) : ""},
                           {opt::tp.key, s.tp},
                           {opt::steps.key, s.steps},
                           {opt::warmup.key, s.warmup},
                           {opt::inject.key, s.inject_text},
                           {opt::topology.key, s.topology},
                           {opt::tp_groups.key, s.tp_groups},
                           {opt::out.key, s.out},
                           {opt::check.key, s.check},
                           {opt::cuda_graph.key, s.cuda_graph},
                           {opt::lm_head.key, s.lm_head},
                           {opt::seed.key, s.seed},
                           {opt::occupancy_window.key, s.occupancy_window_s},
                           {opt::collective_timeout.key, s.collective_timeout_s},
                           {opt::memory_budget.key, s.memory_budget_bytes},
                           {opt::blas_threads.key, s.blas_threads},
                           {opt::sync_rounds.key, s.sync_rounds},
                           {opt::trace_steps.key, s.trace_steps},
                           {opt::stamps.key, stamp_level_name(s.stamps)},
                           {opt::config_dir.key, s.config_dir},
                           {"model_shape", model_to_json(s.shape)},
                           {"hardware_profile", hardware_to_json(s.hw)}};
  if (backend_traits(s.backend).library_attention) j[opt::attention.key] = s.attention;
  if (backend_traits(s.backend).virtual_ranks) {
    echo_model_world(j,
                     {s.world, s.algo, s.gpus_per_node, s.model_noise, s.noise_seed, s.noise_cv});
    j[opt::engine.key] = s.engine_name;
    j["engine_profile"] = engine_to_json(s.engine);
  }
  return j;
}

std::vector<std::string> rerun_keys() {
  std::vector<std::string> keys;
  const nlohmann::ordered_json echo = run_spec_to_json(RunSpec{});  // items() does not own it
  for (const auto& [k, v] : echo.items())
    if (k != opt::out.key && k != "model_shape" && k != "hardware_profile") keys.push_back(k);
  nlohmann::ordered_json model_only;
  echo_model_world(model_only, {});
  for (const auto& [k, v] : model_only.items()) keys.push_back(k);
  keys.push_back(opt::engine.key);
  keys.push_back(opt::attention.key);
  return keys;
}

std::string dtype_refusal(const RunSpec& s, const DeviceCaps& caps) {
  const auto has = [&](DType t) {
    return std::find(caps.dtypes.begin(), caps.dtypes.end(), t) != caps.dtypes.end();
  };
  std::string runs;
  for (DType t : caps.dtypes) runs += (runs.empty() ? "" : "|") + std::string(dtype_name(t));
  const std::string backend = "the " + caps.backend + " backend";
  if (!has(s.dtype))
    return "--dtype: " + backend + " has no " + dtype_name(s.dtype) + " (it runs " + runs + ")";
  const DTypes t = s.dtypes();
  if (!has(t.kv))
    return "--kv-dtype: " + backend + " has no " + dtype_name(t.kv) + " (it runs " + runs + ")";
  // FP8 GEMM weights between activations, cache and all-reduces in bf16, where FP8 GEMMs run.
  const bool fp8_weights = caps.fp8_gemm && t == DTypes(DType::fp8);
  if (!caps.separate_dtypes && !t.uniform() && !fp8_weights)
    return "--kv-dtype: " + backend + " keeps the KV cache in the activations' dtype (" +
           dtype_name(activation_dtype(s.dtype)) + " at --dtype " + dtype_name(s.dtype) +
           "); --kv-dtype " + dtype_name(t.kv) + " needs --backend model";
  if (fp8_weights && s.check)
    return "--check: no host reference for fp8 weights yet (tpb_device_check checks the FP8 "
           "GEMMs); run without --check";
  return "";
}

std::string adopt_device_hardware(RunSpec& s, const DeviceCaps& caps) {
  if (!caps.device_memory) return "";
  const std::string own = hardware_for_device(caps.name);
  if (own.empty())
    return "hardware_unknown: no profile in configs/hardware describes the device '" + caps.name +
           "'; peaks are " + s.hardware + "'s" +
           (s.hardware_given ? "" : " (the backend's default): give --hardware") +
           ", and MBU and MFU are against them";
  if (own == s.hardware) return "";
  if (s.hardware_given)
    return "hardware_mismatch: the device is '" + caps.name + "' (profile " + own +
           ") but --hardware " + s.hardware + " was given; its peaks are used";
  s.hardware = own;
  s.hw = load_hardware(own, s.config_dir);
  return "";
}

}  // namespace tpb
