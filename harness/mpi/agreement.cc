// Agreement on setup failures.
#include "harness/mpi/agreement.h"

#include <climits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/mpi_check.h"

namespace tpb {

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
  int rank = 0;
  TPB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  int mine = code ? rank : INT_MAX, first = INT_MAX;
  TPB_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == INT_MAX) return;
  int payload[2] = {code, static_cast<int>(msg.size())};
  TPB_MPI_CHECK(MPI_Bcast(payload, 2, MPI_INT, first, comm));
  std::vector<char> text(static_cast<std::size_t>(payload[1]));
  if (rank == first) text.assign(msg.begin(), msg.end());
  TPB_MPI_CHECK(MPI_Bcast(text.data(), payload[1], MPI_CHAR, first, comm));
  throw AgreedError(static_cast<ExitCode>(payload[0]), std::string(text.begin(), text.end()));
}

}  // namespace tpb
