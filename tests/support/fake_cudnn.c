/* A stand-in libcudnn for `tpbench info`'s run-time probe (layers/cuda/cudnn/cudnn_probe.h):
   the one symbol the probe reads, answering cuDNN 9.15.0 as PyTorch's CUDA 13 wheel pins it. */
#include <stddef.h>

size_t cudnnGetVersion(void) {
  return 91500;
}
