// The table of backend traits: one entry per --backend name.
#include "harness/config/backend_traits.h"

#include <stdexcept>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/config/options/point_options.h"

namespace tpb {
namespace {

const std::vector<BackendTraits>& table() {
  // clang-format off
  static const std::vector<BackendTraits> t = {
      // name, collective, hardware, dtype, device memory, nccl, sm clock, graphs, virtual,
      // helper threads, kernels, library attention, the op profile's prefill prompts
      {"cpu", "mpi", "cpu", DType::fp32, false, false, false, false, false, false, false, false,
       {128, 512}},
      {"cuda", "nccl", "h100-sxm", DType::bf16, true, true, true, true, false, true, true, true,
       {128, 512, 2048, 8192}},
      // Virtual ranks in one process; NCCL's tuning model on a topology preset's fabric.
      // --cuda-graph prices each kernel at the profile's graph_s (layers/profile/achievable.h).
      {"model", "model", "h100-sxm", DType::bf16, true, false, false, true, true, false, false,
       false, {128, 512}},
  };
  // clang-format on
  return t;
}

const BackendTraits* find(const std::string& name) {
  for (const BackendTraits& b : table())
    if (b.name == name) return &b;
  return nullptr;
}

void parse_model_noise(const std::string& text, ModelWorld& m) {
  m.noise = text;
  if (text == "off") return;
  const auto colon = text.find(':');
  const std::string bad =
      "--model-noise: expected SEED:CV (CV in [0, 1]) or off, got '" + text + "'";
  if (colon == std::string::npos) throw BadInput(bad);
  try {
    std::size_t a = 0, b = 0;
    const std::string seed = text.substr(0, colon), cv = text.substr(colon + 1);
    m.noise_seed = std::stoull(seed, &a);
    m.noise_cv = std::stod(cv, &b);
    if (a != seed.size() || b != cv.size() || seed.empty() || seed[0] == '-') throw BadInput(bad);
  } catch (const std::logic_error&) {  // stoull/stod: not a number, out of range
    throw BadInput(bad);
  }
  if (!(m.noise_cv >= 0 && m.noise_cv <= 1)) throw BadInput(bad);
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const BackendTraits& b : table()) names.push_back(b.name);
  return names;
}

const BackendTraits& backend_traits(const std::string& name) {
  if (const BackendTraits* b = find(name)) return *b;
  throw BadInput("--backend: unknown backend '" + name + "'");
}

const std::vector<CollectiveTraits>& collective_table() {
  static const std::vector<CollectiveTraits> t = {
      // name, host calls, device only, helper threads
      {"mpi", true, false, false},
      {"nccl", false, true, true},
      {"model", false, false, false},
  };
  return t;
}

const CollectiveTraits& collective_traits(const std::string& name) {
  for (const CollectiveTraits& c : collective_table())
    if (c.name == name) return c;
  throw BadInput("--collective: unknown collective '" + name + "' (expected mpi|nccl|model)");
}

const BackendTraits* find_backend_traits(const std::string& name) {
  return find(name);
}

std::vector<std::string> helper_thread_backends() {
  std::vector<std::string> names;
  for (const BackendTraits& b : table())
    if (b.helper_threads) names.push_back(b.name);
  return names;
}

std::vector<std::string> helper_thread_collectives() {
  std::vector<std::string> names;
  for (const CollectiveTraits& c : collective_table())
    if (c.helper_threads) names.push_back(c.name);
  return names;
}

bool virtual_collective(const std::string& name) {
  for (const BackendTraits& b : table())
    if (b.virtual_ranks && b.default_collective == name) return true;
  return false;
}

std::string default_collective(const std::string& backend) {
  const BackendTraits* b = find(backend);
  return b ? b->default_collective : "mpi";
}

BackendChoice choose_backend(ConfigFields& f, const std::string& default_config_dir) {
  BackendChoice c;
  c.config_dir = f.str(opt::config_dir, default_config_dir);
  c.backend = f.choice(opt::backend.key, opt::backend.def, backend_names());
  const BackendTraits& bt = backend_traits(c.backend);
  c.collective = f.choice(opt::collective, bt.default_collective);
  if (collective_traits(c.collective).device_only && !bt.device_collectives)
    throw BadInput("--collective: " + c.collective + " needs --backend cuda (got --backend " +
                   c.backend + ")");
  if (virtual_collective(c.collective) != bt.virtual_ranks)
    throw BadInput(
        "--collective: the model collective and --backend model go together (got "
        "--backend " +
        c.backend + " --collective " + c.collective + ")");
  c.mpi_mode = parse_mpi_mode(f.choice(opt::mpi_mode), "--mpi-mode");
  return c;
}

ModelWorld resolve_model_world(ConfigFields& f, const std::string& backend, int mpi_world,
                               const std::string& topology, const std::string& config_dir,
                               int default_world) {
  ModelWorld m;
  if (!backend_traits(backend).virtual_ranks) {
    for (const char* k :
         {opt::world.key, opt::algo.key, opt::gpus_per_node.key, opt::model_noise.key})
      if (f.has(k))
        throw BadInput(field_name(k) + ": only with --backend model (MPI decides the world of " +
                       "real ranks)");
    if (f.has(opt::engine.key) && f.raw(opt::engine.key) != opt::engine.def)
      throw BadInput(
          "--engine: only with --backend model (a measured run's engine is tpbench's "
          "own loop, and its host time is measured)");
    return m;
  }
  if (mpi_world > 1)
    throw BadInput(
        "--backend: model runs its virtual ranks in one process; launch it without "
        "mpirun (or with -np 1)");
  const Fabric fabric = load_fabric(topology, config_dir);
  m.gpus_per_node = static_cast<int>(f.integer(opt::gpus_per_node, fabric.gpus_per_node));
  m.world =
      static_cast<int>(f.integer(opt::world, default_world >= 1 ? default_world : m.gpus_per_node));
  if (m.world > m.gpus_per_node && m.world % m.gpus_per_node != 0)
    throw BadInput("--world: " + std::to_string(m.world) + " ranks do not fill nodes of " +
                   std::to_string(m.gpus_per_node) + " GPUs (--gpus-per-node)");
  m.algo = model_algo_name(parse_model_algo(f.str(opt::algo), "--algo"));
  parse_model_noise(f.str(opt::model_noise), m);
  return m;
}

void echo_model_world(nlohmann::ordered_json& j, const ModelWorld& m) {
  j[opt::world.key] = m.world;
  j[opt::algo.key] = m.algo;
  j[opt::gpus_per_node.key] = m.gpus_per_node;
  j[opt::model_noise.key] = m.noise;
}

}  // namespace tpb
