// The registry of verb backends: one entry per --backend that the verbs run on, opened by
// name. This is the only place where cpu, cuda and model are told apart for the verbs; the
// devices behind cpu and cuda are made by harness/backends/registry.h, and what a name implies
// before anything is opened (defaults, options it honours) is harness/config/backend_traits.h.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/verbs/seam/verb_backend.h"
#include "layers/device_options.h"

namespace tpb {

// Opens the backend for this rank: `o.backend` names it; a device backend makes its Device
// (BadInput when it is not built in, or has no device here).
using OpenBackend = std::function<std::unique_ptr<VerbBackend>(const DeviceOptions& o)>;

struct SeamEntry {
  std::string name;  // --backend
  OpenBackend open;
};

// A value, not a global: the verbs use builtin_seams(); a test adds its own entry. A name no
// entry holds is opened by `otherwise`.
class BackendSeams {
 public:
  BackendSeams(std::vector<SeamEntry> entries, OpenBackend otherwise)
      : entries_(std::move(entries)), otherwise_(std::move(otherwise)) {}
  void add(SeamEntry e) { entries_.push_back(std::move(e)); }
  std::unique_ptr<VerbBackend> open(const DeviceOptions& o) const;

 private:
  std::vector<SeamEntry> entries_;
  OpenBackend otherwise_;
};

// model (virtual ranks); every other name is a Device on MPI ranks (cpu, cuda), made by
// harness/backends/registry.h, which refuses a name it does not hold (BadInput).
BackendSeams builtin_seams();

// The backends the results' context lists as built: the devices built in, and the one in use
// when it is not among them (the model's virtual ranks).
std::vector<std::string> context_backends(const std::string& backend);

// run's and serve's refusal of a dtype the device cannot compute in.
void check_run_dtype(const RunSpec& spec, const DeviceCaps& caps);

}  // namespace tpb
