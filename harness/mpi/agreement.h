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

}  // namespace tpb
