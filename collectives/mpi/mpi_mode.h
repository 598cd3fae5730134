// --mpi-mode: how an MPI collective waits for its calls (collectives/mpi/mpi_wait.h). A plain
// header with no MPI in it, so the config layer can hold the choice.
#pragma once
#include <string>
#include <vector>

#include "base/errors.h"

namespace tpb {

enum class MpiMode {
  blocking,     // MPI_Allreduce and its kin, as applications call them; a watchdog ticking beside
  nonblocking,  // MPI_Iallreduce and its kin, polled with MPI_Test against the deadline
};

inline const char* mpi_mode_name(MpiMode m) {
  return m == MpiMode::blocking ? "blocking" : "nonblocking";
}

inline const std::vector<std::string>& mpi_mode_names() {
  static const std::vector<std::string> names{mpi_mode_name(MpiMode::blocking),
                                              mpi_mode_name(MpiMode::nonblocking)};
  return names;
}

// Throws BadInput naming `field` for anything but the two names.
inline MpiMode parse_mpi_mode(const std::string& text, const std::string& field) {
  for (MpiMode m : {MpiMode::blocking, MpiMode::nonblocking})
    if (text == mpi_mode_name(m)) return m;
  throw BadInput(field + ": unknown value '" + text + "' (expected blocking|nonblocking)");
}

}  // namespace tpb
