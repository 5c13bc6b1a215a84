// gemm peer for the tensor-core rungs: cuBLASLt on fp16 or bf16 with fp32 accumulation, the
// algorithm its heuristic picks first with a 32 MiB workspace (what cuBLAS asks for on Hopper),
// and its bias epilogue when the problem has one.
// Like the SGEMM peer, the row-major D = A B is the column-major D^T = B^T A^T. The plan
// (descriptors, layouts, algorithm) is made once per problem, outside the timed launches.
#include <cstring>

#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm/cuda/tensor_core.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
constexpr size_t kWorkspace = size_t{32} << 20;

struct Plan {
  int64_t m = -1, n = -1, k = -1;
  DType dtype = DType::f32;
  bool a_col = false, b_col = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // cuBLAS's A (our B), B (our A), C and D
  cublasLtMatmulAlgo_t algo = {};

  GemmEpilogue epilogue = GemmEpilogue::none;

  bool fits(const GemmParams& p) const {
    return m == p.m && n == p.n && k == p.k && dtype == p.a && a_col == p.a_col && b_col == p.b_col && epilogue == p.epilogue;
  }
  void release() {
    const cublas::Api& x = cublas::api();
    if (desc) x.lt_desc_destroy(desc), x.lt_layout_destroy(a), x.lt_layout_destroy(b), x.lt_layout_destroy(d);
    desc = nullptr;
  }
};

const Plan& plan_for(const GemmParams& p) {
  static Plan plan;
  if (plan.fits(p)) return plan;
  plan.release();
  const cublas::Api& x = cublas::api();
  const cudaDataType type = p.a == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  Plan q{p.m, p.n, p.k, p.a, p.a_col, p.b_col};
  q.epilogue = p.epilogue;
  cublas::check(x.lt_desc_create(&q.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  if (p.epilogue == GemmEpilogue::bias) {  // along the rows of cuBLAS's D^T: our bias along columns
    const cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
    cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "cublasLtMatmulDescSetAttribute");
  }
  // cuBLAS's A is our B: B row-major (k x n) read as column-major is B^T (n x k), op N; column-major, op T.
  const cublasOperation_t op_a = p.b_col ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = p.a_col ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "cublasLtMatmulDescSetAttribute");
  cublas::check(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "cublasLtMatmulDescSetAttribute");
  const uint64_t m = uint64_t(p.m), n = uint64_t(p.n), k = uint64_t(p.k);
  cublas::check(p.b_col ? x.lt_layout_create(&q.a, type, k, n, int64_t(k)) : x.lt_layout_create(&q.a, type, n, k, int64_t(n)),
                "cublasLtMatrixLayoutCreate");
  cublas::check(p.a_col ? x.lt_layout_create(&q.b, type, m, k, int64_t(m)) : x.lt_layout_create(&q.b, type, k, m, int64_t(k)),
                "cublasLtMatrixLayoutCreate");
  cublas::check(x.lt_layout_create(&q.d, type, n, m, int64_t(n)), "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  cublas::check(x.lt_pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspace;
  cublas::check(x.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
                "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  std::memset(static_cast<void*>(&result), 0, sizeof result);
  int found = 0;
  const cublasStatus_t s = x.lt_heuristic(cublas::lt_handle(), q.desc, q.a, q.b, q.d, q.d, pref, 1, &result, &found);
  x.lt_pref_destroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    q.release();
    runtime_failure("cublasLtMatmulAlgoGetHeuristic found no algorithm for this gemm");
  }
  q.algo = result.algo;
  plan = q;
  return plan;
}

void launch(const GemmParams& p, const Args& x) {
  const Plan& plan = plan_for(p);
  if (p.epilogue == GemmEpilogue::bias) {
    const void* bias = x.in[3].data();
    cublas::check(cublas::api().lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                  "cublasLtMatmulDescSetAttribute");
  }
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  cublas::check(cublas::api().lt_matmul(cublas::lt_handle(), plan.desc, &alpha, x.in[1].data(), plan.a, x.in[0].data(),
                                        plan.b, &beta, x.in[2].data(), plan.d, x.out[0].data(), plan.d, &plan.algo,
                                        x.workspace, kWorkspace, static_cast<cudaStream_t>(x.stream)),
                "cublasLtMatmul");
}

}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cublaslt",
                     .note = "cuBLASLt on fp16/bf16 with fp32 accumulation, its heuristic's first algorithm, 32 MiB "
                             "workspace: the peer of the tensor-core rungs",
                     .peer = true,
                     .supports = [](const GemmParams& p) -> Reason {
                       if (Reason r = gemm_tc::half_inputs(p)) return r;
                       if (p.residual) return "cuBLASLt's epilogues add no residual after the activation";
                       if (p.epilogue != GemmEpilogue::none && p.epilogue != GemmEpilogue::bias)
                         return "cuBLASLt's GELU epilogue is the tanh approximation (this op's is the erf form) and it has no SiLU";
                       return {};
                     },
                     .workspace_bytes = [](const GemmParams&) { return kWorkspace; },
                     .configs = {{.name = "heuristic", .threads = 0, .kernels = {}, .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
