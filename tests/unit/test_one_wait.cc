// The cuda backend's one blocking wait (issue 54, defect 6): the poll loop ends in the
// collective's timeout when the work never completes, and no raw driver wait (which would
// block past that timeout: TP 2 with rank 1 hung left rank 0 in row_argmax forever) is left in
// layers/cuda. Host-only: a fake query stands in for cudaStreamQuery.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/errors.h"
#include "layers/cuda/poll_wait.h"

namespace tpb {
namespace {

TEST(OneWait, AHookThatTimesOutEndsAWaitThatNeverCompletes) {
  int polls = 0, hooks = 0;
  double last = -1;
  auto never = [&] {
    ++polls;
    return false;  // a stream whose all-reduce waits for a peer that hung
  };
  auto hook = [&](double waited_s) {
    ++hooks;
    EXPECT_GE(waited_s, last);
    last = waited_s;
    if (waited_s > 0.02) throw CollectiveTimeout("nccl all_reduce did not complete in 0.02 s");
  };
  EXPECT_THROW(poll_until(never, hook), CollectiveTimeout);
  EXPECT_EQ(hooks, polls);  // the hook runs after every unfinished poll
  EXPECT_GT(last, 0.02);
}

TEST(OneWait, FinishedWorkReturnsAndTheHookSeesOnlyUnfinishedPolls) {
  int polls = 0, hooks = 0;
  poll_until([&] { return ++polls == 3; }, [&](double) { ++hooks; });
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(hooks, 2);
  poll_until([] { return true; }, nullptr);  // no hook: the collective set none
}

TEST(OneWait, ADeviceErrorFromTheQueryEndsTheWait) {
  EXPECT_THROW(poll_until([]() -> bool { throw BackendError("cudaStreamQuery: launch failed"); },
                          [](double) {}),
               BackendError);
}

// Code without its // comments (a comment may name the calls it avoids).
std::string code_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) out << line.substr(0, line.find("//")) << "\n";
  return out.str();
}

TEST(OneWait, NoRawDriverWaitInTheCudaBackend) {
  const std::filesystem::path root = std::filesystem::path(TPB_SOURCE_DIR) / "layers" / "cuda";
  // cudaMemcpy( without Async blocks on the legacy stream until the copy and the work before
  // it are done; the others wait inside the driver with no timeout.
  const std::vector<std::string> raw = {"cudaStreamSynchronize(", "cudaDeviceSynchronize(",
                                        "cudaEventSynchronize(", "cudaMemcpy("};
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
    ++files;
    const std::string code = code_of(e.path());
    for (const std::string& r : raw)
      EXPECT_EQ(code.find(r), std::string::npos)
          << e.path().lexically_relative(root).string() << " calls " << r
          << "...): wait through cuda_wait.h (the device's synchronize) instead";
  }
  EXPECT_GT(files, 20);  // the scan saw the backend
}

}  // namespace
}  // namespace tpb
