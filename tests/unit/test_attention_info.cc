// `tpbench info`'s attention libraries: the JSON keys it prints (field names pinned here), the
// cuDNN version text, and the run-time probe against a stand-in libcudnn and a missing one,
// none of which needs a GPU. Before them, info said nothing about cuDNN: a user learnt what
// `--attention cudnn` does only from a run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/backends/registry.h"
#include "harness/record/context_record.h"
#include "harness/record/json/results_json.h"
#if defined(TPB_HAVE_CUDA)
#include "layers/cuda/cudnn/cudnn_probe.h"
#endif

namespace tpb {
namespace {

TEST(AttentionInfo, JsonKeys) {
  const AttentionLibrariesRecord a{true, true, "1.32.0", "9.15.0", "libcudnn.so.9"};
  const nlohmann::ordered_json j = to_json(a);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"native", "cudnn_compiled", "cudnn_frontend_version",
                                            "cudnn_runtime_version", "cudnn_runtime_note"}));
  EXPECT_EQ(j["cudnn_runtime_version"], "9.15.0");
  EXPECT_EQ(j["cudnn_compiled"], true);
}

TEST(AttentionInfo, WhatThisBuildHas) {
  const AttentionLibraries a = attention_libraries();
#if defined(TPB_HAVE_CUDA)
  EXPECT_TRUE(a.native);
  EXPECT_EQ(a.cudnn_compiled, !a.cudnn_frontend.empty());
  EXPECT_FALSE(a.cudnn_note.empty());  // the library loaded, or dlerror's reason
#else
  EXPECT_FALSE(a.native);
  EXPECT_FALSE(a.cudnn_compiled);
#endif
}

#if defined(TPB_HAVE_CUDA)
TEST(AttentionInfo, CudnnVersionText) {
  EXPECT_EQ(cudnn_version_text(91500), "9.15.0");  // 9 * 10000 + 15 * 100 + 0
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_text(8907), "8.9.7");  // cuDNN 8: 8 * 1000 + 9 * 100 + 7
}

TEST(AttentionInfo, ProbeReadsTheLibrarysVersion) {
#if defined(TPB_FAKE_CUDNN)
  const CudnnRuntime r = probe_cudnn_runtime(TPB_FAKE_CUDNN);
  EXPECT_EQ(r.version, "9.15.0");
  EXPECT_EQ(r.note, TPB_FAKE_CUDNN);
#endif
  const CudnnRuntime none = probe_cudnn_runtime("libcudnn_absent_for_tpbench.so.9");
  EXPECT_EQ(none.version, "");
  EXPECT_NE(none.note.find("libcudnn_absent_for_tpbench.so.9"), std::string::npos) << none.note;
}
#endif

}  // namespace
}  // namespace tpb
