// The op factories the registry walks, one per op folder.
#pragma once
#include "kernelab/op.h"

namespace kl {
Op make_gemm_op();
Op make_softmax_op();
Op make_layernorm_op();
Op make_rmsnorm_op();
Op make_transpose_op();
Op make_reduce_op();
Op make_bias_gelu_op();
}  // namespace kl
