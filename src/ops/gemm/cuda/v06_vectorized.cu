// gemm v06: v05's tiles loaded with 16-byte loads (float4: a quarter of the load instructions),
// and the A tile stored transposed (As[k][m]), so that a thread's 8 A values, like its 8 B
// values, lie side by side in shared memory and come in two 16-byte shared loads. Where k or n
// is not a multiple of 4 the tiles load element by element (a float4 would be misaligned).
// `sim profile gemm` at 256^3: global load requests 8192 -> 2048 and shared load requests
// 131072 -> 32768 against v05, at 16 sectors per request (512 bytes); the transposed A store
// costs 0.8 extra wavefronts per shared store request.
#include "ops/gemm/cuda/fp32.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_fp32::Operands;
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
static_assert(kBM * kBK / 4 == kThreads && kBK * kBN / 4 == kThreads, "one float4 of A and one of B per thread");

__global__ void gemm_vectorized(Operands o) {
  KL_SHARED(float4, As4, [kBK][kBM / 4]);  // float4s for 16-byte alignment, used as floats:
  KL_SHARED(float4, Bs4, [kBK][kBN / 4]);
  float(*As)[kBM] = reinterpret_cast<float(*)[kBM]>(As4);  // transposed: As[l][i]
  float(*Bs)[kBN] = reinterpret_cast<float(*)[kBN]>(Bs4);
  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int trow = t / (kBN / kTN), tcol = t % (kBN / kTN);
  const int ar = t / (kBK / 4), ac = (t % (kBK / 4)) * 4;  // this thread's float4 of A: row ar, k ac..ac+3
  const int br = t / (kBN / 4), bc = (t % (kBN / 4)) * 4;  // of B: k br, columns bc..bc+3
  const bool a_vec = o.k % 4 == 0, b_vec = o.n % 4 == 0;
  float acc[kTM][kTN] = {};
  alignas(16) float reg_m[kTM];
  alignas(16) float reg_n[kTN];
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    const int ai = row0 + ar, bl = l0 + br;
    const float4 a = gemm_fp32::load4(o.a, static_cast<int64_t>(ai) * o.k + l0 + ac, ai < o.m ? o.k - (l0 + ac) : 0, a_vec);
    const float4 b = gemm_fp32::load4(o.b, static_cast<int64_t>(bl) * o.n + col0 + bc, bl < o.k ? o.n - (col0 + bc) : 0, b_vec);
    As[ac + 0][ar] = a.x, As[ac + 1][ar] = a.y, As[ac + 2][ar] = a.z, As[ac + 3][ar] = a.w;
    *reinterpret_cast<float4*>(&Bs[br][bc]) = b;
    __syncthreads();
    KL_UNROLL
    for (int l = 0; l < kBK; ++l) {
      KL_UNROLL
      for (int r = 0; r < kTM; r += 4) *reinterpret_cast<float4*>(&reg_m[r]) = *reinterpret_cast<const float4*>(&As[l][trow * kTM + r]);
      KL_UNROLL
      for (int c = 0; c < kTN; c += 4) *reinterpret_cast<float4*>(&reg_n[c]) = *reinterpret_cast<const float4*>(&Bs[l][tcol * kTN + c]);
      gemm_fp32::outer_product(acc, reg_m, reg_n);
    }
    __syncthreads();
  }
  gemm_fp32::store_square(o, row0 + trow * kTM, col0 + tcol * kTN, acc);
}

void launch(const GemmParams& p, const Args& a) {
  const Operands o = gemm_fp32::operands(p, a);
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_vectorized, grid, kThreads, 0, a.stream, o);
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_vectorized",
                     .note = "v05 with 16-byte global and shared loads, the A tile stored transposed so a thread's 8 A "
                             "values are contiguous: a quarter of the load instructions",
                     .supports = gemm_fp32::fp32_row_major,
                     .configs = {{.name = "128x128x8_8x8",
                                  .threads = kThreads,
                                  .kernels = {{{KL_KERNEL(gemm_vectorized)}, {"ld.global.nc.v4.f32", "ld.shared.v4.f32"}, {"LDG.E.128", "LDS.128"}}},
                                  .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 2 * kTM, .warp_n = 16 * kTN, .thread_m = kTM, .thread_n = kTN}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
