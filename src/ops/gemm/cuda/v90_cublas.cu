// gemm peer: cuBLAS SGEMM, the library a user would call. cuBLAS is column-major, so the
// row-major D = A B is computed as its transpose D^T = B^T A^T, which cuBLAS reads straight
// from the row-major buffers (a row-major X is a column-major X^T); a column-major A or B is
// passed transposed. C is copied into D first when beta reads it (cuBLAS updates in place).
// A second peer row runs the same call in TF32 (CUBLAS_TF32_TENSOR_OP_MATH): A and B rounded to
// 10 mantissa bits on the tensor cores, what PyTorch's allow_tf32 gives.
#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {

template <cublasMath_t kMath> void launch(const GemmParams& p, const Args& x) {
  const gemm_fp32::Operands o = gemm_fp32::operands(p, x);
  const cudaStream_t stream = static_cast<cudaStream_t>(x.stream);
  if (o.beta != 0.0f)
    check_cuda(cudaMemcpyAsync(o.d, o.c, sizeof(float) * o.m * o.n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  const cublasHandle_t h = cublas::handle(x.stream);
  cublas::check(cublas::api().set_math_mode(h, kMath), "cublasSetMathMode");
  // D^T (n x m) = op(B') op(A'): B' is B's buffer as column-major, A' is A's.
  const cublasOperation_t op_b = p.b_col ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = p.a_col ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = p.b_col ? o.k : o.n, lda = p.a_col ? o.m : o.k;
  cublas::check(cublas::api().sgemm(h, op_b, op_a, o.n, o.m, o.k, &o.alpha, o.b, ldb, o.a, lda, &o.beta, o.d, o.n),
                "cublasSgemm");
}

Reason fp32_only(const GemmParams& p) {
  if (p.a != DType::f32 || p.b != DType::f32 || p.c != DType::f32 || p.d != DType::f32) return "cuBLAS SGEMM takes fp32 only";
  if (!p.plain()) return "cublasSgemm has no epilogue (bias, activation, residual): cuBLASLt has, for fp16/bf16";
  return {};
}

// TF32 keeps 10 of fp32's 23 mantissa bits: each input errs by up to 2^-11 relative, each product
// by 2^-10; four times that against the output's scale.
double tf32_tolerance(const GemmParams&) { return 4.0 / 1024; }

}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> sgemm{.op = "gemm",
                         .name = "cublas",
                         .note = "cuBLAS SGEMM (fp32 on CUDA cores, no TF32), row-major D = A B as column-major D^T = B^T A^T",
                         .peer = true,
                         .supports = fp32_only,
                         .configs = {{.name = "default", .threads = 0, .kernels = {}, .run = launch<CUBLAS_DEFAULT_MATH>}}};
  Rung<GemmParams> tf32{.op = "gemm",
                        .name = "cublas_tf32",
                        .note = "cuBLAS SGEMM in TF32 on the tensor cores (A and B rounded to 10 mantissa bits, fp32 "
                                "accumulation): the speed fp32 models get with TF32 allowed",
                        .peer = true,
                        .supports = fp32_only,
                        .tolerance = tf32_tolerance,
                        .configs = {{.name = "default", .threads = 0, .kernels = {}, .run = launch<CUBLAS_TF32_TENSOR_OP_MATH>}}};
  return {variant_of(sgemm), variant_of(tf32)};
}

}  // namespace kl::KL_TARGET
