// Agreement on setup failures.
#include "harness/mpi/agreement.h"

#include <climits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/mpi_check.h"

namespace tpb {

namespace {

// The lowest failing rank's code and message, on every rank (code 0: none failed).
struct Failure {
  int rank = INT_MAX, code = 0;
  std::string msg;
};

Failure first_failure(MPI_Comm comm, int code, const std::string& msg) {
  int rank = 0;
  TPB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  Failure f;
  int mine = code ? rank : INT_MAX;
  TPB_MPI_CHECK(MPI_Allreduce(&mine, &f.rank, 1, MPI_INT, MPI_MIN, comm));
  if (f.rank == INT_MAX) return f;
  int payload[2] = {code, static_cast<int>(msg.size())};
  TPB_MPI_CHECK(MPI_Bcast(payload, 2, MPI_INT, f.rank, comm));
  std::vector<char> text(static_cast<std::size_t>(payload[1]));
  if (rank == f.rank) text.assign(msg.begin(), msg.end());
  TPB_MPI_CHECK(MPI_Bcast(text.data(), payload[1], MPI_CHAR, f.rank, comm));
  f.code = payload[0];
  f.msg.assign(text.begin(), text.end());
  return f;
}

}  // namespace

void agree(MPI_Comm comm, const std::function<void()>& step) {
  int code = 0;
  std::string msg;
  try {
    step();
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    msg = e.what();
  } catch (const std::exception& e) {
    code = static_cast<int>(ExitCode::internal);
    msg = e.what();
  }
  const Failure f = first_failure(comm, code, msg);
  if (f.code) throw AgreedError(static_cast<ExitCode>(f.code), f.msg);
}

void agree_oom(MPI_Comm comm, const std::function<void()>& step) {
  std::string msg;
  try {
    step();
  } catch (const DeviceOom& e) {
    msg = e.what();
  }
  const Failure f = first_failure(comm, msg.empty() ? 0 : 1, msg);
  if (f.code) throw AgreedOom("rank " + std::to_string(f.rank) + ": " + f.msg);
}

}  // namespace tpb
