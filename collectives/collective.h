// The Collective interface: the TP group's communication, passed explicitly (no globals).
// Implementations: MPI (collectives/mpi/mpi_collective), NCCL (collectives/nccl/nccl_collective).
// Stamping enter/exit is the step driver's job (Device::mark around the call), so device-side
// backends stamp on the stream where the collective really runs.
#pragma once
#include <cstddef>
#include <string>

#include "base/dtype.h"

namespace tpb {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;          // rank within the TP group
  virtual int size() const = 0;          // TP group size
  virtual std::string name() const = 0;  // "mpi" | "nccl"

  // In-place sum over the group. `buf` is a Device buffer of the rank's backend.
  // Throws CollectiveTimeout when the group does not complete within the configured timeout.
  virtual void all_reduce(void* buf, std::size_t count, DType t) = 0;
  virtual void barrier() = 0;
};

}  // namespace tpb
