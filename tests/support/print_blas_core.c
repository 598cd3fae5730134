/* Prints the core OpenBLAS chose at load time (from OPENBLAS_CORETYPE or its own detection):
   the child process test_blas_core.cc starts with each core name tpbench may force. */
#include <cblas.h>
#include <stdio.h>

int main(void) {
  printf("blas_core=%s\n", openblas_get_corename());
  return 0;
}
