// The MPI thread level a command asks for (harness/mpi/thread_need.h), from the config its
// command line parses to: SINGLE unless a helper thread may start.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/config/backend_traits.h"
#include "harness/config/cli.h"
#include "harness/mpi/thread_need.h"

namespace tpb {
namespace {

bool needs(std::vector<std::string> args) {
  args.insert(args.begin(), "tpbench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return needs_helper_threads(parse_cli(static_cast<int>(argv.size()), argv.data()).config,
                              {helper_thread_backends(), helper_thread_collectives()});
}

TEST(ThreadNeed, PlainCommandsNeedNoHelperThread) {
  EXPECT_FALSE(needs({"run", "--model", "tiny"}));
  EXPECT_FALSE(needs({"sweep", "--batch", "1,2", "--inject", "rank=1:slowdown=1.5"}));
  EXPECT_FALSE(needs({"collectives", "-b", "4K", "-e", "1M"}));
  EXPECT_FALSE(needs({"serve", "--concurrency", "1,2"}));
  EXPECT_FALSE(needs({"run", "--blas-threads", "1"}));
}

TEST(ThreadNeed, HelperThreadsAskForMore) {
  EXPECT_TRUE(needs({"run", "--inject", "rank=0:mem_contend=1"}));
  EXPECT_TRUE(needs({"sweep", "--inject", "none;rank=0:mem_contend=1:mem_reserve=0.1"}));
  EXPECT_TRUE(needs({"run", "--backend", "cuda"}));
  EXPECT_TRUE(needs({"collectives", "--backend", "cuda", "--collective", "nccl"}));
  EXPECT_TRUE(needs({"run", "--blas-threads", "2"}));
  EXPECT_TRUE(needs({"run", "--set", "backend=cuda"}));
}

TEST(ThreadNeed, TextThatIsNotUtf8IsLeftToTheFieldsParsers) {
  // Refusing it is the verb's job (exit 2 naming the field), after MPI_Init: not a throw here.
  EXPECT_FALSE(needs({"run", "--inject", "rank=0:slowdown=2\xff"}));
  EXPECT_TRUE(needs({"run", "--inject", "\xffrank=0:mem_contend=1"}));
}

}  // namespace
}  // namespace tpb
