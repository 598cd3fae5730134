// The TP group of one: an all-reduce over one rank is the buffer itself. For a step that needs
// no peers (the mixed-step reference, unit tests) without an MPI communicator.
#pragma once
#include <string>

#include "collectives/collective.h"

namespace tpb {

class SelfCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "self"; }
  void all_reduce(void*, std::size_t, DType) override {}
  void barrier() override {}
};

}  // namespace tpb
