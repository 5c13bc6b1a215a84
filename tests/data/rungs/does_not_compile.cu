// A rung file with a type error on line 6, for the test that `check --rung` shows the compiler's
// message on the user's own line and exits 2.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {
__global__ void broken(float* y) { y[threadIdx.x] = undefined_name_in_a_user_rung; }
}  // namespace kl::KL_TARGET
