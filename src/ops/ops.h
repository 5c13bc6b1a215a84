// The op factories the registry walks, one per op folder.
#pragma once
#include "kernelab/op.h"

namespace kl {
Op make_gemm_op();
Op make_gemm_w4a16_op();
Op make_gemm_w8a8_op();
Op make_gemm_fp8_op();
Op make_attention_op();
Op make_attention_bwd_op();
Op make_decode_op();
Op make_softmax_op();
Op make_layernorm_op();
Op make_rmsnorm_op();
Op make_transpose_op();
Op make_reduce_op();
Op make_bias_gelu_op();
Op make_fused_op();
Op make_exp_stride_op();
Op make_exp_occupancy_op();
Op make_exp_smem_banks_op();
Op make_exp_divergence_op();
Op make_exp_launch_op();
Op make_exp_cache_bandwidth_op();
Op make_exp_cache_latency_op();
}  // namespace kl
