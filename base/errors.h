// Typed errors and check macros. Every failure is thrown once and caught once in main(),
// which prints one line and picks the exit code, so no rank calls exit() on its own.
#pragma once
#include <stdexcept>
#include <string>

namespace tpb {

// Exit codes are part of the CLI contract (docs/USAGE.md "Exit codes").
enum class ExitCode : int {
  ok = 0,
  internal = 1,            // a broken invariant or a library failure
  bad_input = 2,           // config, CLI or environment the user can fix
  collective_timeout = 3,  // a collective or barrier did not complete in --collective-timeout
  peer_failure = 4,        // another rank failed; this one stops
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input: the message must name the offending field, e.g. "--batch: must be >= 1 (got 0)".
class BadInput : public Error {
 public:
  explicit BadInput(const std::string& what) : Error(ExitCode::bad_input, what) {}
};

class CollectiveTimeout : public Error {
 public:
  explicit CollectiveTimeout(const std::string& what) : Error(ExitCode::collective_timeout, what) {}
};

class BackendError : public Error {
 public:
  explicit BackendError(const std::string& what) : Error(ExitCode::internal, what) {}
};

// A device allocation that did not fit (the rank's budget, or the device's memory). Where the
// plan fit and a later allocation did not (a workspace the first steps grow, a library's own
// buffers), the point is `oom`, agreed over the ranks (harness/mpi/agreement.h agree_oom),
// not a failure of the job.
class DeviceOom : public BackendError {
 public:
  explicit DeviceOom(const std::string& what) : BackendError(what) {}
};

// "tpbench: error on rank R: <what>", the line a failure on one rank ends the job with (main()
// prints it; so does the hang watchdog, which ends the process from its own thread).
std::string rank_error_line(int rank, const std::string& what);

// nlohmann::json's exception text without its "[json.exception.type_error.302] " tag: what a
// reader that names the field or event itself adds after it.
std::string json_error_text(const std::exception& e);

// Formats "<lib> error: <expr> -> <detail> at file:line" and throws BackendError.
[[noreturn]] void throw_check_failure(const char* lib, const char* expr, const std::string& detail,
                                      const char* file, int line);

}  // namespace tpb

// One generic check; thin per-library wrappers: TPB_MPI_CHECK in base/mpi_check.h (every floor
// from collectives/ up calls MPI), TPB_CUDA_CHECK etc. next to the CUDA code in
// base/cuda_check.h.
#define TPB_CHECK_GEN(lib, expr, is_ok, detail_fn)                                              \
  do {                                                                                          \
    auto tpb_check_status_ = (expr);                                                            \
    if (!(is_ok(tpb_check_status_)))                                                            \
      ::tpb::throw_check_failure(lib, #expr, detail_fn(tpb_check_status_), __FILE__, __LINE__); \
  } while (0)

#define TPB_ASSERT(cond, msg)                                                            \
  do {                                                                                   \
    if (!(cond)) ::tpb::throw_check_failure("assert", #cond, (msg), __FILE__, __LINE__); \
  } while (0)
