// Setup errors must end every rank the same way: one line from rank 0, the same exit code
// everywhere, nobody left waiting in a collective. agree() turns "some ranks failed" into
// "all ranks throw the first failure".
#pragma once
#include <mpi.h>

#include <exception>
#include <functional>

#include "base/errors.h"

namespace tpb {

// A failure every rank knows about and reports the same way: no abort needed.
class AgreedError : public Error {
 public:
  AgreedError(ExitCode code, const std::string& what) : Error(code, what) {}
};

// Runs `step` on every rank, then agrees over `comm`: when any rank threw a tpb::Error (or
// any std::exception), every rank throws an AgreedError carrying the lowest failing rank's message
// and code.
void agree(MPI_Comm comm, const std::function<void()>& step);

// A point's allocation that did not fit after its plan, on some rank: every rank of the
// agreement throws it, so each ends the point as `oom` with the same reason.
class AgreedOom : public AgreedError {
 public:
  explicit AgreedOom(const std::string& what) : AgreedError(ExitCode::internal, what) {}
};

// Runs `step` on every rank, then agrees over `comm`: when any rank's step threw DeviceOom,
// every rank throws AgreedOom with the lowest such rank's message ("rank R: ..."). Any other
// exception passes through untouched (main ends the job on it). `step` must not wait on a rank
// that can fail inside it: a rank left in a collective by a peer's DeviceOom is not released
// (an allocation that fails alike on every rank, as a lazily grown workspace does, is).
void agree_oom(MPI_Comm comm, const std::function<void()>& step);

}  // namespace tpb
