// cudnn-frontend's CUDA runtime (layers/cuda/cudnn/frontend_cudart.h): pinned to the one this
// binary links, so the frontend never picks libcudart.so.12 first beside a CUDA 13 build; a
// user's own CUDNN_FRONTEND_CUDART_LIB_NAME wins.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "layers/cuda/cudnn/frontend_cudart.h"

namespace tpb {
namespace {

TEST(FrontendCudart, TheLinkedRuntimeOrItsMajorsSoname) {
  EXPECT_EQ(frontend_cudart("/usr/local/cuda/lib64/libcudart.so.13", 13000),
            "/usr/local/cuda/lib64/libcudart.so.13");
  // cudart linked statically: dladdr names the executable itself.
  EXPECT_EQ(frontend_cudart("/opt/bundle/bin/tpbench", 13000), "libcudart.so.13");
  EXPECT_EQ(frontend_cudart(nullptr, 12080), "libcudart.so.12");
  EXPECT_EQ(frontend_cudart("libcudart.so.13.0.48", 13000), "libcudart.so.13.0.48");
}

TEST(FrontendCudart, SetUnlessTheUserChose) {
  unsetenv(kFrontendCudartVar);
  EXPECT_EQ(pin_frontend_cudart("/x/nvidia/cu13/lib/libcudart.so.13", 13000),
            "/x/nvidia/cu13/lib/libcudart.so.13");
  EXPECT_STREQ(std::getenv(kFrontendCudartVar), "/x/nvidia/cu13/lib/libcudart.so.13");
  setenv(kFrontendCudartVar, "libcudart.so.12", 1);
  EXPECT_EQ(pin_frontend_cudart("/x/libcudart.so.13", 13000), "libcudart.so.12");
  EXPECT_STREQ(std::getenv(kFrontendCudartVar), "libcudart.so.12");
  unsetenv(kFrontendCudartVar);
}

}  // namespace
}  // namespace tpb
