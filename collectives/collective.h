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
  // `times` in-place sums back to back, as nccl-tests' timed loop issues them: a device-side
  // collective queues them with no host wait between calls. Same timeout as all_reduce.
  virtual void all_reduce_repeated(void* buf, std::size_t count, DType t, int times) {
    for (int i = 0; i < times; ++i) all_reduce(buf, count, t);
  }
  virtual void barrier() = 0;
};

}  // namespace tpb
