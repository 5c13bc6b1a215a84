// gemm_w8a8 peer: cuBLASLt does the GEMM, int8 x int8 into int32 (CUBLAS_COMPUTE_32I), and the
// per-token and per-channel scaling is our own epilogue kernel, one pass over the int32 product.
// Row-major D = A_q W_q^T is column-major D^T = W_q A_q^T: W_q (n x k row-major) is cuBLAS's A read
// transposed, A_q cuBLAS's B as it is: the "TN" form cuBLASLt's int8 kernels require in COL order,
// with A, B, C leading dimensions (k, k, n) multiples of 4.
#include <cstring>

#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm_w8a8/gemm_w8a8.h"
#include "ops/gpu_rowwise.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
constexpr size_t kLibWorkspace = size_t{32} << 20;
constexpr int kScaleThreads = 256;

size_t product_bytes(const W8A8Params& p) { return (size_t(p.m * p.n) * sizeof(int32_t) + 255) / 256 * 256; }

struct Plan {
  int64_t m = -1, n = -1, k = -1;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, d = nullptr;  // cuBLAS's A (our W), B (our A), C and D
  cublasLtMatmulAlgo_t algo = {};

  bool fits(const W8A8Params& p) const { return m == p.m && n == p.n && k == p.k; }
  void release() {
    const cublas::Api& x = cublas::api();
    if (desc) x.lt_desc_destroy(desc), x.lt_layout_destroy(w), x.lt_layout_destroy(a), x.lt_layout_destroy(d);
    desc = nullptr;
  }
};

const Plan& plan_for(const W8A8Params& p) {
  static Plan plan;
  if (plan.fits(p)) return plan;
  plan.release();
  const cublas::Api& x = cublas::api();
  Plan q{p.m, p.n, p.k};
  cublas::check(x.lt_desc_create(&q.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "cublasLtMatmulDescSetAttribute");
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "cublasLtMatmulDescSetAttribute");
  const uint64_t m = uint64_t(p.m), nn = uint64_t(p.n), k = uint64_t(p.k);
  cublas::check(x.lt_layout_create(&q.w, CUDA_R_8I, k, nn, int64_t(k)), "cublasLtMatrixLayoutCreate");
  cublas::check(x.lt_layout_create(&q.a, CUDA_R_8I, k, m, int64_t(k)), "cublasLtMatrixLayoutCreate");
  cublas::check(x.lt_layout_create(&q.d, CUDA_R_32I, nn, m, int64_t(nn)), "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  cublas::check(x.lt_pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kLibWorkspace;
  cublas::check(x.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
                "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  std::memset(static_cast<void*>(&result), 0, sizeof result);
  int found = 0;
  const cublasStatus_t s = x.lt_heuristic(cublas::lt_handle(), q.desc, q.w, q.a, q.d, q.d, pref, 1, &result, &found);
  x.lt_pref_destroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    q.release();
    runtime_failure("cublasLtMatmulAlgoGetHeuristic found no int8 algorithm for this gemm");
  }
  q.algo = result.algo;
  plan = q;
  return plan;
}

// D(i, j) = float(acc(i, j)) * sa[i] * sw[j], rounded to the dtype: the scaling cuBLASLt's int8 GEMM leaves to us.
template <class T>
__global__ void __launch_bounds__(kScaleThreads) scale_int32(const int32_t* __restrict__ acc, const float* __restrict__ sa,
                                                              const float* __restrict__ sw, T* __restrict__ d, int m, int n) {
  const int64_t total = int64_t(m) * n;
  for (int64_t e = blockIdx.x * int64_t(kScaleThreads) + threadIdx.x; e < total; e += int64_t(gridDim.x) * kScaleThreads) {
    const int64_t i = e / n, j = e % n;
    d[e] = rowwise::from_f32<T>(float(acc[e]) * sa[i] * sw[j]);
  }
}

template <class T> void scale_as(const W8A8Params& p, const Args& x, const int32_t* acc) {
  const int64_t blocks = std::min<int64_t>((p.m * p.n + kScaleThreads - 1) / kScaleThreads, 65535 * 8);
  KL_LAUNCH(scale_int32<T>, dim3(unsigned(blocks)), kScaleThreads, 0, x.stream, acc, static_cast<const float*>(x.in[p.kSa].data()),
            static_cast<const float*>(x.in[p.kSw].data()), static_cast<T*>(x.out[0].data()), int(p.m), int(p.n));
}

void launch(const W8A8Params& p, const Args& x) {
  const Plan& plan = plan_for(p);
  auto* acc = static_cast<int32_t*>(x.workspace);
  void* lib_workspace = static_cast<char*>(x.workspace) + product_bytes(p);
  const int32_t alpha = 1, beta = 0;
  cublas::check(cublas::api().lt_matmul(cublas::lt_handle(), plan.desc, &alpha, x.in[p.kW].data(), plan.w, x.in[p.kA].data(),
                                        plan.a, &beta, acc, plan.d, acc, plan.d, &plan.algo, lib_workspace, kLibWorkspace,
                                        static_cast<cudaStream_t>(x.stream)),
                "cublasLtMatmul");
  if (p.dtype == DType::f16) scale_as<__half>(p, x, acc);
  else scale_as<__nv_bfloat16>(p, x, acc);
}

Reason supports(const W8A8Params& p) {
  if (p.n % 4 != 0) return "n a multiple of 4: cuBLASLt's int8 kernels (COL order) need every leading dimension a multiple of 4";
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.m * p.n > int64_t{1} << 40) return "m and n must fit in 32 bits";
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W8A8Params> r{
      .op = "gemm_w8a8",
      .name = "cublaslt_int8",
      .note = "cuBLASLt does the GEMM (int8 x int8 into int32, CUBLAS_COMPUTE_32I, the TN form its int8 kernels require); "
              "the per-row and per-channel scaling is our epilogue kernel, one more pass over an int32 D",
      .peer = true,
      .supports = supports,
      .workspace_bytes = [](const W8A8Params& p) { return product_bytes(p) + kLibWorkspace; },
      .configs = {{.name = "heuristic",
                   .threads = kScaleThreads,
                   .kernels = {{{KL_KERNEL(scale_int32<__half>), KL_KERNEL(scale_int32<__nv_bfloat16>)}, {"cvt.rn.f32.s32"}, {}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
