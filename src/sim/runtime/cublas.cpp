// cuBLAS and cuBLASLt on the CPU (see sim/cublas_names.h): handles, streams, math modes and
// workspaces are accepted; every GEMM is computed at once, in float64 from its fp32, fp16, bf16, int8
// or fp8 e4m3 inputs (cuBLASLt: int8 into int32, fp8 with per-tensor or block scales) and rounded
// once to the output type (the GPU accumulates in fp32: the results agree to the output's rounding,
// within any GEMM test's tolerance; int8 sums are exact on both). Work runs at once, as all work
// here does.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sim/runtime/cublas_unsupported.h"
#include "sim/runtime/internal.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;  // device memory is host memory here: both read alike
};
struct cublasLtContext {};

namespace kl::sim::detail {

cublasStatus_t cublas_unsupported(const std::string& what) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard lock(m);
  if (said.insert(what).second) std::fprintf(stderr, "kernelab sim: cuBLAS: %s is not supported (CUBLAS_STATUS_NOT_SUPPORTED)\n", what.c_str());
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

namespace {

bool known_type(cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }
// cuBLASLt's further types: int8 in, int32 out and scalars (CUBLAS_COMPUTE_32I), fp8 e4m3 in.
bool known_lt_type(cudaDataType t) { return known_type(t) || t == CUDA_R_8I || t == CUDA_R_32I || t == CUDA_R_8F_E4M3; }
std::size_t size_of(cudaDataType t) {
  return t == CUDA_R_32F || t == CUDA_R_32I ? 4 : t == CUDA_R_8I || t == CUDA_R_8F_E4M3 ? 1 : 2;
}

double load(const void* p, std::int64_t i, cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return double(__half2float(static_cast<const __half*>(p)[i]));
    case CUDA_R_16BF: return double(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case CUDA_R_8I: return double(static_cast<const std::int8_t*>(p)[i]);
    case CUDA_R_32I: return double(static_cast<const std::int32_t*>(p)[i]);
    case CUDA_R_8F_E4M3: return double(float(static_cast<const __nv_fp8_e4m3*>(p)[i]));
    default: return double(static_cast<const float*>(p)[i]);
  }
}
void store(void* p, std::int64_t i, cudaDataType t, double v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(float(v)); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(float(v)); break;
    case CUDA_R_32I: static_cast<std::int32_t*>(p)[i] = std::int32_t(std::nearbyint(v)); break;  // int8 sums: exact
    default: static_cast<float*>(p)[i] = float(v);
  }
}

// One matrix operand: element (r, c) of the stored matrix, and whether it is read transposed.
struct Operand {
  const void* data;
  cudaDataType type;
  std::int64_t ld;
  bool row_major = false;
  bool transposed = false;
  double at(std::int64_t r, std::int64_t c) const {  // (r, c) of op(X)
    if (transposed) std::swap(r, c);
    return load(data, row_major ? r * ld + c : r + c * ld, type);
  }
};

enum class Epilogue { none, bias, gelu, gelu_bias, relu, relu_bias };

double gelu(double x) {  // the tanh approximation, as cuBLASLt's GELU epilogue
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// D (m x n) = alpha op(A) op(B) + beta C, then the epilogue (bias: one value per row of D).
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const Operand& a, const Operand& b, double beta,
          const Operand& c, void* d, cudaDataType d_type, std::int64_t ldd, bool d_row_major, Epilogue epi = Epilogue::none,
          const void* bias = nullptr, cudaDataType bias_type = CUDA_R_32F) {
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l) acc += a.at(i, l) * b.at(l, j);
      double v = alpha * acc + (beta != 0 ? beta * c.at(i, j) : 0.0);
      if (bias && (epi == Epilogue::bias || epi == Epilogue::gelu_bias || epi == Epilogue::relu_bias)) v += load(bias, i, bias_type);
      if (epi == Epilogue::gelu || epi == Epilogue::gelu_bias) v = gelu(v);
      if (epi == Epilogue::relu || epi == Epilogue::relu_bias) v = std::max(v, 0.0);
      store(d, d_row_major ? i * ldd + j : i + j * ldd, d_type, v);
    }
}

double scalar(const void* p, cudaDataType scale_type) {
  return scale_type == CUDA_R_64F ? *static_cast<const double*>(p) : load(p, 0, scale_type);
}
cudaDataType scale_type_of(cublasComputeType_t c) {
  return c == CUBLAS_COMPUTE_64F || c == CUBLAS_COMPUTE_64F_PEDANTIC ? CUDA_R_64F
         : c == CUBLAS_COMPUTE_16F || c == CUBLAS_COMPUTE_16F_PEDANTIC ? CUDA_R_16F
                                                                       : CUDA_R_32F;
}

cublasStatus_t strided_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,
                               cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct, int ldc,
                               long long sc, int batch, cudaDataType scale, const char* what) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!known_type(at) || !known_type(bt) || !known_type(ct)) return cublas_unsupported(std::string(what) + " with these data types");
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) return cublas_unsupported(std::string(what) + " with a conjugate transpose");
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ta == CUBLAS_OP_N ? m : k) ||
      ldb < std::max(1, tb == CUBLAS_OP_N ? k : n) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  const double al = scalar(alpha, scale), be = scalar(beta, scale);
  auto offset = [](const void* p, cudaDataType t, long long elements) {
    const std::size_t size = t == CUDA_R_32F ? 4 : 2;
    return static_cast<const char*>(p) + elements * (long long)size;
  };
  for (int i = 0; i < batch; ++i) {
    const Operand a{offset(A, at, i * sa), at, lda, false, ta == CUBLAS_OP_T};
    const Operand b{offset(B, bt, i * sb), bt, ldb, false, tb == CUBLAS_OP_T};
    void* c = const_cast<char*>(offset(C, ct, i * sc));
    gemm(m, n, k, al, a, b, be, Operand{c, ct, ldc}, c, ct, ldc, false);
  }
  return CUBLAS_STATUS_SUCCESS;
}

// cuBLASLt's descriptors, behind its opaque handles.
struct MatmulDesc {
  cublasComputeType_t compute;
  cudaDataType scale;
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int bias_type = -1;  // the output's type unless set
  const float *a_scale = nullptr, *b_scale = nullptr;  // fp8's scales, in device memory
  std::int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
};
struct Layout {
  cudaDataType type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t order = CUBLASLT_ORDER_COL;
  std::int32_t batch = 1;
  std::int64_t stride = 0;
};

// An fp8 operand with block scales, as fp32 values times their scales. K is the stored rows (the "TN"
// form Hopper's fp8 kernels take), the operand's other dimension its outer one. The scale layouts are
// those PyTorch's ScaledBlas.cpp checks before it calls cuBLASLt: VEC128_32F one fp32 per 128 k of
// each outer row, [ceil(k / 128)][outer] with the outer index fastest; BLK128x128_32F one per
// 128 x 128 block, [ceil(outer / 128)][ceil(k / 128)] with rows padded to a multiple of 4 floats.
// Either mode may be on either operand, as NVIDIA's LtBlk128x128Fp8Matmul sample and kernelab's peer
// assign them differently.
std::vector<float> block_scaled(const void* data, const Layout& l, const float* scales, std::int32_t mode) {
  const std::int64_t k = std::int64_t(l.rows), outer = std::int64_t(l.cols), kb = (k + 127) / 128, blk_row = (kb + 3) / 4 * 4;
  std::vector<float> out(std::size_t(k * outer));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t r = 0; r < k; ++r) {
      const std::int64_t at = mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F ? r / 128 * outer + o : o / 128 * blk_row + r / 128;
      out[std::size_t(r + o * k)] = float(load(data, r + o * l.ld, l.type) * double(scales[at]));
    }
  return out;
}

template <class T>
bool set_from(void* field, const void* buf, std::size_t size) {
  if (!buf || size != sizeof(T)) return false;
  std::memcpy(field, buf, sizeof(T));
  return true;
}

}  // namespace
}  // namespace kl::sim::detail

using namespace kl::sim::detail;

extern "C" {

cublasStatus_t kl_sim_cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasDestroy_v2(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (s) *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasSetWorkspace_v2(cublasHandle_t h, void*, size_t) {
  return h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t kl_sim_cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->math = mode;  // TF32 and reduced-precision modes: the sums here are float64 whatever the mode
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasGetMathMode(cublasHandle_t h, cublasMath_t* mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode) *mode = h->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t* mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode) *mode = h->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasGetVersion_v2(cublasHandle_t h, int* version) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;  // the toolkit's headers the program was compiled against
  return CUBLAS_STATUS_SUCCESS;
}
const char* kl_sim_cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

cublasStatus_t kl_sim_cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                     const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                                     float* C, int ldc) {
  return strided_batched(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, beta, C, CUDA_R_32F, ldc, 0,
                         1, CUDA_R_32F, "cublasSgemm");
}
cublasStatus_t kl_sim_cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                                int k, const float* alpha, const float* A, int lda, long long sa,
                                                const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                                long long sc, int batch) {
  return strided_batched(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F, ldb, sb, beta, C, CUDA_R_32F, ldc,
                         sc, batch, CUDA_R_32F, "cublasSgemmStridedBatched");
}
cublasStatus_t kl_sim_cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                                   int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                                   cublasGemmAlgo_t) {
  return strided_batched(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, scale_type_of(compute),
                         "cublasGemmEx");
}
cublasStatus_t kl_sim_cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                                 int k, const void* alpha, const void* A, cudaDataType at, int lda,
                                                 long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
                                                 const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
                                                 cublasComputeType_t compute, cublasGemmAlgo_t) {
  return strided_batched(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch,
                         scale_type_of(compute), "cublasGemmStridedBatchedEx");
}

// ---- cuBLASLt ------------------------------------------------------------------------------------

cublasStatus_t kl_sim_cublasLtCreate(cublasLtHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasLtContext();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(new MatmulDesc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete reinterpret_cast<MatmulDesc*>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                     const void* buf, size_t size) {
  MatmulDesc& d = *reinterpret_cast<MatmulDesc*>(desc);
  bool ok = true;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: ok = set_from<std::int32_t>(&d.compute, buf, size); break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: ok = set_from<std::int32_t>(&d.scale, buf, size); break;
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = set_from<std::int32_t>(&d.ta, buf, size); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = set_from<std::int32_t>(&d.tb, buf, size); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = set_from<std::uint32_t>(&d.epilogue, buf, size); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = set_from<const void*>(&d.bias, buf, size); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = set_from<std::int32_t>(&d.bias_type, buf, size); break;
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: ok = set_from<const float*>(&d.a_scale, buf, size); break;
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: ok = set_from<const float*>(&d.b_scale, buf, size); break;
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE: {
      std::int32_t mode = -1;
      ok = set_from<std::int32_t>(&mode, buf, size);
      if (ok && mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F && mode != CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F &&
          mode != CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F)
        return cublas_unsupported("a scale mode other than SCALAR_32F, VEC128_32F and BLK128x128_32F");
      (attr == CUBLASLT_MATMUL_DESC_A_SCALE_MODE ? d.a_mode : d.b_mode) = mode;
      break;
    }
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:  // host or device scalars: the same memory here
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:    // accumulation is float64 here whatever is asked
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: break;
    default: return cublas_unsupported("cublasLtMatmulDescSetAttribute attribute " + std::to_string(int(attr)));
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t kl_sim_cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete reinterpret_cast<Layout*>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                       const void* buf, size_t size) {
  Layout& l = *reinterpret_cast<Layout*>(layout);
  bool ok = true;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: ok = set_from<std::uint32_t>(&l.type, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: ok = set_from<std::int32_t>(&l.order, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: ok = set_from<std::uint64_t>(&l.rows, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_COLS: ok = set_from<std::uint64_t>(&l.cols, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_LD: ok = set_from<std::int64_t>(&l.ld, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: ok = set_from<std::int32_t>(&l.batch, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: ok = set_from<std::int64_t>(&l.stride, buf, size); break;
    default: return cublas_unsupported("cublasLtMatrixLayoutSetAttribute attribute " + std::to_string(int(attr)));
  }
  if (ok && l.order != CUBLASLT_ORDER_COL && l.order != CUBLASLT_ORDER_ROW) return cublas_unsupported("a matrix order other than COL or ROW");
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t kl_sim_cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new int(0));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<int*>(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t kl_sim_cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                           const void* buf, size_t) {
  return buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;  // limits (workspace...) bind nothing here
}
// One algorithm, needing no workspace.
cublasStatus_t kl_sim_cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatmulPreference_t, int requested,
                                                     cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested < 1 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(static_cast<void*>(&results[0]), 0, sizeof results[0]);
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t kl_sim_cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                                     cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                                     const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                     cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  if (!h || !desc) return CUBLAS_STATUS_NOT_INITIALIZED;
  const MatmulDesc& d = *reinterpret_cast<MatmulDesc*>(desc);
  const Layout &la = *reinterpret_cast<Layout*>(Adesc), &lb = *reinterpret_cast<Layout*>(Bdesc),
               &lc = *reinterpret_cast<Layout*>(Cdesc), &ld = *reinterpret_cast<Layout*>(Ddesc);
  if (!known_lt_type(la.type) || !known_lt_type(lb.type) || !known_lt_type(lc.type) || !known_lt_type(ld.type))
    return cublas_unsupported("cublasLtMatmul with these data types");
  Epilogue epi;
  switch (d.epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT: epi = Epilogue::none; break;
    case CUBLASLT_EPILOGUE_BIAS: epi = Epilogue::bias; break;
    case CUBLASLT_EPILOGUE_GELU: epi = Epilogue::gelu; break;
    case CUBLASLT_EPILOGUE_GELU_BIAS: epi = Epilogue::gelu_bias; break;
    case CUBLASLT_EPILOGUE_RELU: epi = Epilogue::relu; break;
    case CUBLASLT_EPILOGUE_RELU_BIAS: epi = Epilogue::relu_bias; break;
    default: return cublas_unsupported("cublasLtMatmul epilogue " + std::to_string(int(d.epilogue)));
  }
  const bool ta = d.ta == CUBLAS_OP_T, tb = d.tb == CUBLAS_OP_T;
  const std::int64_t m = std::int64_t(ld.rows), n = std::int64_t(ld.cols), k = std::int64_t(ta ? la.rows : la.cols);
  if ((ta ? la.cols : la.rows) != ld.rows || (tb ? lb.rows : lb.cols) != ld.cols || (tb ? lb.cols : lb.rows) != std::uint64_t(k) ||
      lc.rows != ld.rows || lc.cols != ld.cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (epi != Epilogue::none && epi != Epilogue::gelu && epi != Epilogue::relu && !d.bias) return CUBLAS_STATUS_INVALID_VALUE;
  const bool a_blocks = d.a_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, b_blocks = d.b_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  if ((a_blocks || b_blocks) && (!ta || tb || la.type != CUDA_R_8F_E4M3 || lb.type != CUDA_R_8F_E4M3 || !d.a_scale || !d.b_scale ||
                                 la.order != CUBLASLT_ORDER_COL || lb.order != CUBLASLT_ORDER_COL || ld.batch > 1))
    return cublas_unsupported("block scale modes outside the TN form (A and B column-major; C and D either order), unbatched e4m3 with both scale pointers");
  const double al = scalar(alpha, d.scale) * (d.a_scale && !a_blocks ? double(*d.a_scale) : 1.0) *
                    (d.b_scale && !b_blocks ? double(*d.b_scale) : 1.0);
  const double be = scalar(beta, d.scale);
  const cudaDataType bias_type = d.bias_type < 0 ? ld.type : cudaDataType(d.bias_type);
  auto at = [](const void* p, const Layout& l, int b) {
    return static_cast<const char*>(p) + b * l.stride * std::int64_t(size_of(l.type));
  };
  const std::vector<float> a_scaled = a_blocks ? block_scaled(A, la, d.a_scale, d.a_mode) : std::vector<float>{},
                           b_scaled = b_blocks ? block_scaled(B, lb, d.b_scale, d.b_mode) : std::vector<float>{};
  for (int b = 0; b < ld.batch; ++b) {
    const Operand oa = a_blocks ? Operand{a_scaled.data(), CUDA_R_32F, std::int64_t(la.rows), false, ta}
                                : Operand{at(A, la, la.batch > 1 ? b : 0), la.type, la.ld, la.order == CUBLASLT_ORDER_ROW, ta};
    const Operand ob = b_blocks ? Operand{b_scaled.data(), CUDA_R_32F, std::int64_t(lb.rows), false, tb}
                                : Operand{at(B, lb, lb.batch > 1 ? b : 0), lb.type, lb.ld, lb.order == CUBLASLT_ORDER_ROW, tb};
    const Operand oc{at(C, lc, b), lc.type, lc.ld, lc.order == CUBLASLT_ORDER_ROW};
    gemm(m, n, k, al, oa, ob, be, oc, const_cast<char*>(at(D, ld, b)), ld.type, ld.ld, ld.order == CUBLASLT_ORDER_ROW, epi, d.bias,
         bias_type);
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
