// gemm_fp8 peer: cuBLASLt's fp8 GEMM, e4m3 x e4m3 with fp32 accumulation into bf16/fp16, the scales
// passed as CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER. Row-major D = A W^T is column-major
// D^T = W A^T: W cuBLAS's A read transposed, A its B as it is: the "TN" form cuBLASLt's fp8 kernels
// require. Per-tensor scales are the SCALAR_32F mode; block scales (sm_90, cuBLAS 12.9+) are W's
// BLK128x128_32F and A's VEC128_32F, passed as our [n/128][k/128] and [m][k/128] arrays, taken to be the
// column-major [k/128, .] tensors cuBLASLt reads (the block along K fastest): the simulator's
// cuBLASLt assumes the same, and a GPU's check of this peer is what tests it.
#include <cstring>

#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm/cuda/hopper_tile.cuh"  // device_cc
#include "ops/gemm_fp8/gemm_fp8.h"

namespace kl::KL_TARGET {

namespace {
constexpr size_t kWorkspace = size_t{32} << 20;

struct Plan {
  int64_t m = -1, n = -1, k = -1;
  DType dtype = DType::bf16;
  bool block = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, d = nullptr;  // cuBLAS's A (our W), B (our A), C and D
  cublasLtMatmulAlgo_t algo = {};

  bool fits(const Fp8Params& p) const { return m == p.m && n == p.n && k == p.k && dtype == p.dtype && block == p.block(); }
  void release() {
    const cublas::Api& x = cublas::api();
    if (desc) x.lt_desc_destroy(desc), x.lt_layout_destroy(w), x.lt_layout_destroy(a), x.lt_layout_destroy(d);
    desc = nullptr;
  }
};

const Plan& plan_for(const Fp8Params& p) {
  static Plan plan;
  if (plan.fits(p)) return plan;
  plan.release();
  const cublas::Api& x = cublas::api();
  Plan q{p.m, p.n, p.k, p.dtype, p.block()};
  cublas::check(x.lt_desc_create(&q.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "cublasLtMatmulDescSetAttribute");
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "cublasLtMatmulDescSetAttribute");
  if (q.block) {  // before the heuristic, which picks kernels for the scale modes
    const int32_t w_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &w_mode, sizeof w_mode), "cublasLtMatmulDescSetAttribute");
    cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &a_mode, sizeof a_mode), "cublasLtMatmulDescSetAttribute");
  }
  const uint64_t m = uint64_t(p.m), nn = uint64_t(p.n), k = uint64_t(p.k);
  cublas::check(x.lt_layout_create(&q.w, CUDA_R_8F_E4M3, k, nn, int64_t(k)), "cublasLtMatrixLayoutCreate");
  cublas::check(x.lt_layout_create(&q.a, CUDA_R_8F_E4M3, k, m, int64_t(k)), "cublasLtMatrixLayoutCreate");
  cublas::check(x.lt_layout_create(&q.d, p.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F, nn, m, int64_t(nn)),
                "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  cublas::check(x.lt_pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspace;
  cublas::check(x.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
                "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  std::memset(static_cast<void*>(&result), 0, sizeof result);
  int found = 0;
  const cublasStatus_t s = x.lt_heuristic(cublas::lt_handle(), q.desc, q.w, q.a, q.d, q.d, pref, 1, &result, &found);
  x.lt_pref_destroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    q.release();
    runtime_failure("cublasLtMatmulAlgoGetHeuristic found no fp8 algorithm for this gemm");
  }
  q.algo = result.algo;
  plan = q;
  return plan;
}

void launch(const Fp8Params& p, const Args& x) {
  const Plan& plan = plan_for(p);
  const cublas::Api& api = cublas::api();
  // cuBLAS's A is our W: its scale is sw; its B is our A, scaled by sa.
  const void *w_scale = x.in[p.kSw].data(), *a_scale = x.in[p.kSa].data();
  cublas::check(api.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale), "cublasLtMatmulDescSetAttribute");
  cublas::check(api.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale, sizeof a_scale), "cublasLtMatmulDescSetAttribute");
  const float alpha = 1, beta = 0;
  cublas::check(api.lt_matmul(cublas::lt_handle(), plan.desc, &alpha, x.in[p.kW].data(), plan.w, x.in[p.kA].data(), plan.a, &beta,
                              x.out[0].data(), plan.d, x.out[0].data(), plan.d, &plan.algo, x.workspace, kWorkspace,
                              static_cast<cudaStream_t>(x.stream)),
                "cublasLtMatmul");
}

Reason supports(const Fp8Params& p) {
  const int cc = gemm_hopper::device_cc();
  if (p.block() && cc != 0 && cc != 90)
    return "block scaling: cuBLASLt's VEC128_32F and BLK128x128_32F scale modes run on sm_90 only, and this GPU is sm_" +
           std::to_string(cc);
  if (p.n % 16 != 0) return "n a multiple of 16: cuBLASLt's fp8 kernels need 16-byte aligned leading dimensions and m (our n) % 16";
  if (p.m > INT32_MAX || p.n > INT32_MAX) return "m and n must fit in 32 bits";
  if (cc != 0 && cc < 89)
    return "cuBLASLt's fp8 GEMM needs sm_89 or newer, and this GPU is sm_" + std::to_string(cc);
  return {};
}
}  // namespace

KL_RUNGS {
  Rung<Fp8Params> r{.op = "gemm_fp8",
                    .name = "cublaslt_fp8",
                    .note = "cuBLASLt's fp8 e4m3 GEMM with its A/B scale pointers: per tensor (SCALAR_32F), or W per "
                            "128x128 and A per 1x128 (BLK128x128_32F, VEC128_32F; sm_90), fp32 accumulation, bf16/fp16 D, its "
                            "heuristic's first algorithm: the peer of both scaled rungs",
                    .peer = true,
                    .supports = supports,
                    .workspace_bytes = [](const Fp8Params&) { return kWorkspace; },
                    .configs = {{.name = "heuristic", .threads = 0, .kernels = {}, .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
