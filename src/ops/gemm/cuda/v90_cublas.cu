// gemm peer: cuBLAS SGEMM, the library a user would call. cuBLAS is column-major, so the
// row-major D = A B is computed as its transpose D^T = B^T A^T, which cuBLAS reads straight
// from the row-major buffers (a row-major X is a column-major X^T); a column-major A or B is
// passed transposed. C is copied into D first when beta reads it (cuBLAS updates in place).
#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace {

void launch(const GemmParams& p, const Args& x) {
  const gemm_fp32::Operands o = gemm_fp32::operands(p, x);
  const cudaStream_t stream = static_cast<cudaStream_t>(x.stream);
  if (o.beta != 0.0f)
    check_cuda(cudaMemcpyAsync(o.d, o.c, sizeof(float) * o.m * o.n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  const cublasHandle_t h = cublas::handle(x.stream);
  cublas::check(cublas::api().set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  // D^T (n x m) = op(B') op(A'): B' is B's buffer as column-major, A' is A's.
  const cublasOperation_t op_b = p.b_col ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = p.a_col ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = p.b_col ? o.k : o.n, lda = p.a_col ? o.m : o.k;
  cublas::check(cublas::api().sgemm(h, op_b, op_a, o.n, o.m, o.k, &o.alpha, o.b, ldb, o.a, lda, &o.beta, o.d, o.n),
                "cublasSgemm");
}

}  // namespace

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cublas",
                     .note = "cuBLAS SGEMM (fp32 on CUDA cores, no TF32), row-major D = A B as column-major D^T = B^T A^T",
                     .peer = true,
                     .supports = [](const GemmParams& p) -> Reason {
                       if (p.a != DType::f32 || p.b != DType::f32 || p.c != DType::f32 || p.d != DType::f32)
                         return "cuBLAS SGEMM takes fp32 only";
                       return {};
                     },
                     .configs = {{.name = "default", .threads = 0, .kernels = {}, .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
