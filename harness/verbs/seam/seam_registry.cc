// The registry's table: one line per backend that is not a Device on MPI ranks. A device
// backend needs none: its line in harness/backends/registry.cc is enough.
#include "harness/verbs/seam/seam_registry.h"

#include <algorithm>

#include "harness/backends/registry.h"
#include "harness/verbs/seam/device_backend.h"
#include "harness/verbs/seam/model_backend.h"

namespace tpb {

BackendSeams builtin_seams() {
  return BackendSeams(
      {
          {"model", open_model_backend},
      },
      open_device_backend);
}

std::unique_ptr<VerbBackend> BackendSeams::open(const DeviceOptions& o) const {
  for (const SeamEntry& e : entries_)
    if (e.name == o.backend) return e.open(o);
  return otherwise_(o);
}

std::vector<std::string> context_backends(const std::string& backend) {
  std::vector<std::string> built = built_backends();
  if (std::find(built.begin(), built.end(), backend) == built.end()) built.push_back(backend);
  return built;
}

void check_run_dtype(const RunSpec& spec, const DeviceCaps& caps) {
  if (std::string why = dtype_refusal(spec, caps); !why.empty()) throw BadInput(why);
}

}  // namespace tpb
