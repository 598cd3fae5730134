// TPB_MPI_CHECK: the MPI wrapper of the generic check macro.
#pragma once
#include <mpi.h>

#include <string>

#include "base/errors.h"

namespace tpb {
inline bool mpi_ok(int rc) {
  return rc == MPI_SUCCESS;
}
inline std::string mpi_detail(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, static_cast<std::size_t>(len));
}
}  // namespace tpb

#define TPB_MPI_CHECK(expr) TPB_CHECK_GEN("MPI", expr, ::tpb::mpi_ok, ::tpb::mpi_detail)
