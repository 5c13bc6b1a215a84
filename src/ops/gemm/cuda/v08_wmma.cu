// gemm v08: tensor cores through the wmma API. Four warps share a 64x64x32 block tile staged in
// shared memory; each warp owns 32x32 of D as 2x2 wmma 16x16 accumulators, and every k16 step
// of it is one wmma::mma_sync (two HMMA.16816 on sm_80+): 8192 multiply-adds per warp
// instruction pair instead of the 32 of an FFMA. The fragments' layout is the compiler's; D
// goes through shared memory (wmma::store_matrix_sync) so the epilogue can bound-check and
// apply alpha/beta. Rows are padded by 16 bytes against bank conflicts of the fragment loads.
#include <mma.h>

#include "ops/gemm/cuda/tensor_core.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using gemm_tc::Chunk;
using gemm_tc::Operands;
constexpr int kBM = 64, kBN = 64, kBK = 32, kPad = 8;  // elements; a row of A is 80 bytes, of B 144
constexpr int kWarps = 4, kThreads = kWarps * 32, kWM = 32, kWN = 32;
constexpr int kChunksA = kBM * kBK / 8 / kThreads, kChunksB = kBK * kBN / 8 / kThreads;  // 2 and 2

template <class T> struct alignas(128) Tiles {
  T a[kBM][kBK + kPad];
  T b[kBK][kBN + kPad];
  float d[kBM][kBN + 4];  // the block's accumulators for the epilogue
};

template <class T> __global__ void gemm_wmma(Operands<T> o) {
  using namespace nvcuda;
  KL_SHARED(Tiles<T>, s, [1]);
  const int t = threadIdx.x, warp = t / 32;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / 2) * kWM, wcol = (warp % 2) * kWN;
  const bool a_vec = o.k % 8 == 0, b_vec = o.n % 8 == 0;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  KL_UNROLL
  for (int i = 0; i < 2; ++i)
    KL_UNROLL
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int l0 = 0; l0 < o.k; l0 += kBK) {
    KL_UNROLL
    for (int q = 0; q < kChunksA; ++q) {
      const int e = t + q * kThreads, r = e / (kBK / 8), c = (e % (kBK / 8)) * 8, i = row0 + r;
      *reinterpret_cast<Chunk*>(&s[0].a[r][c]) =
          gemm_tc::load_chunk(o.a, static_cast<int64_t>(i) * o.k + l0 + c, i < o.m ? o.k - (l0 + c) : 0, a_vec);
    }
    KL_UNROLL
    for (int q = 0; q < kChunksB; ++q) {
      const int e = t + q * kThreads, r = e / (kBN / 8), c = (e % (kBN / 8)) * 8, l = l0 + r;
      *reinterpret_cast<Chunk*>(&s[0].b[r][c]) =
          gemm_tc::load_chunk(o.b, static_cast<int64_t>(l) * o.n + col0 + c, l < o.k ? o.n - (col0 + c) : 0, b_vec);
    }
    __syncthreads();
    KL_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
      KL_UNROLL
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &s[0].a[wrow + 16 * i][kk], kBK + kPad);
      KL_UNROLL
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &s[0].b[kk][wcol + 16 * j], kBN + kPad);
      KL_UNROLL
      for (int i = 0; i < 2; ++i)
        KL_UNROLL
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  KL_UNROLL
  for (int i = 0; i < 2; ++i)
    KL_UNROLL
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&s[0].d[wrow + 16 * i][wcol + 16 * j], acc[i][j], kBN + 4, wmma::mem_row_major);
  __syncthreads();
  for (int e = t; e < kBM * kBN; e += kThreads) {
    const int r = e / kBN, c = e % kBN;
    if (row0 + r < o.m && col0 + c < o.n) gemm_tc::store(o, row0 + r, col0 + c, s[0].d[r][c]);
  }
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_wmma<T>, grid, kThreads, 0, a.stream, gemm_tc::operands<T>(p, a));
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{.op = "gemm",
                     .name = "cuda_wmma",
                     .note = "tensor cores through wmma: 4 warps each own 32x32 of a 64x64x32 block tile as 2x2 16x16 "
                             "fragments, one mma_sync per k16 step; D goes through shared memory for the epilogue",
                     .supports = gemm_tc::half_row_major,
                     .configs = {{.name = "64x64x32_w32x32",
                                  .threads = kThreads,
                                  .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_wmma<decltype(e)>); }),
                                               {"wmma.load.a.sync", "wmma.mma.sync"},
                                               {"HMMA.16816.F32"}}},
                                  .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN, .mma = "wmma.m16n16k16", .mma_m = 16, .mma_n = 16, .mma_k = 16}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
