// gemm_fp8 peer: cuBLASLt's fp8 GEMM, e4m3 x e4m3 with fp32 accumulation into bf16/fp16, in the "TN"
// form (cuBLAS's A read transposed, B as it is) its fp8 kernels require. Per-tensor scales
// (SCALAR_32F): row-major D = A W^T as column-major D^T = W A^T, W cuBLAS's A.
// Block scales (sm_90, cuBLAS 12.9+): the first of three formulations cuBLASLt's heuristic takes, as
// NVIDIA's LtBlk128x128Fp8Matmul sample assigns the roles (A VEC128_32F, B BLK128x128_32F):
//   F1 A := our activations (VEC128_32F), B := W (BLK128x128_32F), D row-major (ORDER_ROW) in place;
//   F2 the same roles, D column-major in the workspace, then our transpose into the output;
//   F3 A := W (BLK128x128_32F), B := our activations (VEC128_32F), D as with per-tensor scales.
// The scales repacked into the workspace in the layouts PyTorch's ScaledBlas.cpp checks: sa as
// [k/128][m] (m fastest), sw's rows padded to round_up(k/128, 4) floats. Not yet run on a GPU.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "ops/gemm/cuda/cublas_api.cuh"
#include "ops/gemm/cuda/hopper_tile.cuh"  // device_cc
#include "ops/gemm_fp8/gemm_fp8.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
constexpr size_t kWorkspace = size_t{32} << 20;  // cuBLASLt's own; block scaling's scratch follows it
constexpr int kTransposeThreads = 256;

enum class Formulation { activations_a_row_d, activations_a_col_d, weights_a };

const char* name_of(Formulation f) {
  switch (f) {
    case Formulation::activations_a_row_d: return "F1 (A := activations VEC128_32F, B := W BLK128x128_32F, D ORDER_ROW in place)";
    case Formulation::activations_a_col_d:
      return "F2 (A := activations VEC128_32F, B := W BLK128x128_32F, D column-major in the workspace, then transposed)";
    case Formulation::weights_a: return "F3 (A := W BLK128x128_32F, B := activations VEC128_32F, D^T column-major in place)";
  }
  return "";
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
int64_t sw_row_floats(const Fp8Params& p) { return round_up(p.k_blocks(), 4); }
int64_t d_col_ld(const Fp8Params& p) { return round_up(p.m, 8); }  // 16-byte columns, as cuBLASLt wants every ld

// Byte offsets of block scaling's scratch in the workspace: sa transposed, sw padded, F2's column-major D.
struct Scratch {
  size_t sa_t = 0, sw_padded = 0, d_col = 0, end = 0;
};
Scratch scratch_of(const Fp8Params& p) {
  const auto aligned = [](int64_t bytes) { return size_t(round_up(bytes, 256)); };
  Scratch s;
  s.sa_t = kWorkspace;
  s.sw_padded = s.sa_t + aligned(p.m * p.k_blocks() * 4);
  s.d_col = s.sw_padded + aligned(p.n_blocks() * sw_row_floats(p) * 4);
  s.end = s.d_col + aligned(d_col_ld(p) * p.n * 2);
  return s;
}

struct Plan {
  int64_t m = -1, n = -1, k = -1;
  DType dtype = DType::bf16;
  bool block = false;
  Formulation form = Formulation::weights_a;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // cuBLAS's A, B, and C = D
  cublasLtMatmulAlgo_t algo = {};

  bool fits(const Fp8Params& p) const { return m == p.m && n == p.n && k == p.k && dtype == p.dtype && block == p.block(); }
  void release() {
    const cublas::Api& x = cublas::api();
    if (desc) x.lt_desc_destroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) x.lt_layout_destroy(l);
    desc = nullptr, a = b = d = nullptr;
  }
};

// q's descriptors for formulation f and the heuristic's first algorithm; false, q released, if none.
// The scale pointers are set before the heuristic: an H200's cuBLASLt 13 found no block-scaled
// algorithm for the peer without them at 4096^3, where a program setting them first (tests/sim/
// cublaslt_fp8_block.cu) got one in every formulation at 512^3.
bool try_formulation(Plan& q, const Fp8Params& p, Formulation f, const void* act_scale, const void* w_scale) {
  const cublas::Api& x = cublas::api();
  bool ok = true;
  const auto call = [&](cublasStatus_t s) { ok = ok && s == CUBLAS_STATUS_SUCCESS; };
  const auto set = [&](cublasLtMatmulDescAttributes_t attr, int32_t v) { call(x.lt_desc_set(q.desc, attr, &v, sizeof v)); };
  const uint64_t m = uint64_t(p.m), n = uint64_t(p.n), k = uint64_t(p.k);
  const bool weights_a = f == Formulation::weights_a;
  call(x.lt_desc_create(&q.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (!ok) return false;
  set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (p.block()) {  // before the heuristic, which picks kernels for the scale modes
    const int32_t vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, weights_a ? blk : vec);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, weights_a ? vec : blk);
  }
  const void *a_scale = weights_a ? w_scale : act_scale, *b_scale = weights_a ? act_scale : w_scale;
  call(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale));
  call(x.lt_desc_set(q.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale));
  const cudaDataType d_type = p.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  call(x.lt_layout_create(&q.a, CUDA_R_8F_E4M3, k, weights_a ? n : m, int64_t(k)));
  call(x.lt_layout_create(&q.b, CUDA_R_8F_E4M3, k, weights_a ? m : n, int64_t(k)));
  if (f == Formulation::weights_a) call(x.lt_layout_create(&q.d, d_type, n, m, int64_t(n)));
  else if (f == Formulation::activations_a_col_d) call(x.lt_layout_create(&q.d, d_type, m, n, d_col_ld(p)));
  else {
    call(x.lt_layout_create(&q.d, d_type, m, n, int64_t(n)));
    const int32_t row = CUBLASLT_ORDER_ROW;
    if (ok) call(x.lt_layout_set(q.d, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
  }
  cublasLtMatmulPreference_t pref = nullptr;
  call(x.lt_pref_create(&pref));
  const uint64_t workspace = kWorkspace;
  if (ok) call(x.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  cublasLtMatmulHeuristicResult_t result;
  std::memset(static_cast<void*>(&result), 0, sizeof result);
  int found = 0;
  if (ok) call(x.lt_heuristic(cublas::lt_handle(), q.desc, q.a, q.b, q.d, q.d, pref, 1, &result, &found));
  if (pref) x.lt_pref_destroy(pref);
  if (!ok || found == 0) {
    q.release();
    return false;
  }
  q.form = f;
  q.algo = result.algo;
  return true;
}

constexpr Formulation kBlockOrder[] = {Formulation::activations_a_row_d, Formulation::activations_a_col_d, Formulation::weights_a};

// The first formulation of kBlockOrder the heuristic takes, into q; false when none does.
bool try_block_formulations(Plan& q, const Fp8Params& p, const void* act_scale, const void* w_scale) {
  for (Formulation f : kBlockOrder)
    if (try_formulation(q, p, f, act_scale, w_scale)) return true;
  return false;
}

const Plan& plan_for(const Fp8Params& p, const void* act_scale, const void* w_scale) {
  static Plan plan;
  if (plan.fits(p)) return plan;
  plan.release();
  Plan q{p.m, p.n, p.k, p.dtype, p.block()};
  if (!p.block()) {
    if (!try_formulation(q, p, Formulation::weights_a, act_scale, w_scale))
      runtime_failure("cublasLtMatmulAlgoGetHeuristic found no fp8 algorithm for this gemm");
  } else {
    if (!try_block_formulations(q, p, act_scale, w_scale))
      runtime_failure(std::string("cublasLtMatmulAlgoGetHeuristic found no block-scaled fp8 algorithm for this gemm in any of ") +
                      name_of(kBlockOrder[0]) + ", " + name_of(kBlockOrder[1]) + " and " + name_of(kBlockOrder[2]));
    std::fprintf(stderr, "cublaslt_fp8: block scales as %s\n", name_of(q.form));
  }
  plan = q;
  return plan;
}

// dst [cols][rows] = src [rows][cols] (rows ld elements apart), of 4-byte elements (sa into [k/128][m])
// or 2-byte ones (F2's D into the row-major output): one kernel, so that the simulator's F1 launches it.
__global__ void __launch_bounds__(kTransposeThreads) transpose_elements(const void* __restrict__ src, int64_t rows, int64_t cols,
                                                                        int64_t ld, int element_bytes, void* __restrict__ dst) {
  for (int64_t e = blockIdx.x * int64_t(kTransposeThreads) + threadIdx.x; e < rows * cols; e += int64_t(gridDim.x) * kTransposeThreads) {
    const int64_t from = (e % rows) * ld + e / rows;
    if (element_bytes == 4) static_cast<uint32_t*>(dst)[e] = static_cast<const uint32_t*>(src)[from];
    else static_cast<uint16_t*>(dst)[e] = static_cast<const uint16_t*>(src)[from];
  }
}

void transpose_into(const void* src, int64_t rows, int64_t cols, int64_t ld, int element_bytes, void* dst, void* stream) {
  const int64_t blocks = std::min<int64_t>((rows * cols + kTransposeThreads - 1) / kTransposeThreads, 65535 * 8);
  KL_LAUNCH(transpose_elements, dim3(unsigned(blocks)), kTransposeThreads, 0, stream, src, rows, cols, ld, element_bytes, dst);
}

void launch(const Fp8Params& p, const Args& x) {
  const void *act = x.in[p.kA].data(), *act_scale = x.in[p.kSa].data(), *w = x.in[p.kW].data(), *w_scale = x.in[p.kSw].data();
  char* ws = static_cast<char*>(x.workspace);
  const Scratch s = scratch_of(p);
  const Plan& plan = p.block() ? plan_for(p, ws + s.sa_t, ws + s.sw_padded) : plan_for(p, act_scale, w_scale);
  const cublas::Api& api = cublas::api();
  void* d = x.out[0].data();
  if (plan.block) {
    transpose_into(act_scale, p.m, p.k_blocks(), p.k_blocks(), 4, ws + s.sa_t, x.stream);
    check_cuda(cudaMemcpy2DAsync(ws + s.sw_padded, size_t(sw_row_floats(p)) * 4, w_scale, size_t(p.k_blocks()) * 4,
                                 size_t(p.k_blocks()) * 4, size_t(p.n_blocks()), cudaMemcpyDeviceToDevice,
                                 static_cast<cudaStream_t>(x.stream)),
               "cudaMemcpy2DAsync");
    act_scale = ws + s.sa_t, w_scale = ws + s.sw_padded;
    if (plan.form == Formulation::activations_a_col_d) d = ws + s.d_col;
  }
  const bool weights_a = plan.form == Formulation::weights_a;
  const void *a = weights_a ? w : act, *b = weights_a ? act : w;
  const void *a_scale = weights_a ? w_scale : act_scale, *b_scale = weights_a ? act_scale : w_scale;
  cublas::check(api.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale), "cublasLtMatmulDescSetAttribute");
  cublas::check(api.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale), "cublasLtMatmulDescSetAttribute");
  const float alpha = 1, beta = 0;
  cublas::check(api.lt_matmul(cublas::lt_handle(), plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d, d, plan.d, &plan.algo,
                              x.workspace, kWorkspace, static_cast<cudaStream_t>(x.stream)),
                "cublasLtMatmul");
  // D's m x n column-major in the workspace is [n][m] rows: transposed into the row-major [m][n] output.
  if (plan.form == Formulation::activations_a_col_d)
    transpose_into(d, p.n, p.m, d_col_ld(p), 2, x.out[0].data(), x.stream);
}

// Whether cuBLASLt has a block-scaled kernel for p's shape in any formulation: an H200's cuBLASLt 13
// had none at m 1, n 48, k 128 or m 7, n 272, k 384, and had one at 64 x 256 x 384 and 512^3
// (tests/sim/cublaslt_fp8_block.cu), so only its heuristic can say. Asked once per shape.
bool library_takes_block(const Fp8Params& p) {
  static std::map<std::tuple<int64_t, int64_t, int64_t, DType>, bool> known;
  const auto key = std::make_tuple(p.m, p.n, p.k, p.dtype);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  static void* const placeholder = [] {  // the heuristic wants scale pointers; it reads none
    void* b = nullptr;
    check_cuda(cudaMalloc(&b, 256), "cudaMalloc");
    return b;
  }();
  Plan q{p.m, p.n, p.k, p.dtype, true};
  const bool any = try_block_formulations(q, p, placeholder, placeholder);
  if (any) q.release();
  return known[key] = any;
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
  if (p.block() && cc == 90 && !library_takes_block(p))
    return "cuBLASLt has no block-scaled fp8 kernel for this shape: its heuristic found none with the activations or the "
           "weights as its A";
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<Fp8Params> r{.op = "gemm_fp8",
                    .name = "cublaslt_fp8",
                    .note = "cuBLASLt's fp8 e4m3 GEMM with its A/B scale pointers: per tensor (SCALAR_32F), or A per 1x128 "
                            "and W per 128x128 (VEC128_32F, BLK128x128_32F; sm_90; the scales repacked by our kernel and a 2-D copy, the "
                            "first formulation its heuristic takes), fp32 accumulation, bf16/fp16 D, its heuristic's first "
                            "algorithm: the peer of both scaled rungs",
                    .peer = true,
                    .supports = supports,
                    .workspace_bytes = [](const Fp8Params& p) { return p.block() ? scratch_of(p).end : kWorkspace; },
                    .configs = {{.name = "heuristic",
                                 .threads = kTransposeThreads,
                                 .kernels = {{{KL_KERNEL(transpose_elements)}, {}, {}}},
                                 .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
