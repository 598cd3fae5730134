// The table of backend traits: one entry per --backend name.
#include "harness/config/backend_traits.h"

#include "layers/base/errors.h"

namespace tpb {
namespace {

const std::vector<BackendTraits>& table() {
  static const std::vector<BackendTraits> t = {
      // name, collective, hardware, dtype, device memory, nccl, sm clock, graphs
      {"cpu", "mpi", "cpu", DType::fp32, false, false, false, false},
      {"cuda", "nccl", "h100-sxm", DType::bf16, true, true, true, true},
      // Virtual ranks in one process; NCCL's tuning model on a topology preset's fabric.
      {"model", "model", "h100-sxm", DType::bf16, true, false, false, false},
  };
  return t;
}

const BackendTraits* find(const std::string& name) {
  for (const BackendTraits& b : table())
    if (b.name == name) return &b;
  return nullptr;
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

std::string default_collective(const std::string& backend) {
  const BackendTraits* b = find(backend);
  return b ? b->default_collective : "mpi";
}

BackendChoice choose_backend(ConfigFields& f) {
  BackendChoice c;
  c.backend = f.choice("backend", "cpu", backend_names());
  const BackendTraits& bt = backend_traits(c.backend);
  c.collective = f.choice("collective", bt.default_collective, {"mpi", "nccl", "model"});
  if (c.collective == "nccl" && !bt.device_collectives)
    throw BadInput("--collective: nccl needs --backend cuda (got --backend " + c.backend + ")");
  if ((c.collective == "model") != (c.backend == "model"))
    throw BadInput(
        "--collective: the model collective and --backend model go together (got "
        "--backend " +
        c.backend + " --collective " + c.collective + ")");
  return c;
}

}  // namespace tpb
