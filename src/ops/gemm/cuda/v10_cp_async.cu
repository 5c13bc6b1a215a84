// gemm v10: v09's warp tiles fed by a 4-stage cp.async pipeline. Tile k+3 is copied global ->
// shared (cp.async.cg, 16 bytes, no registers, no wait) while the warps multiply tile k, so a
// warp stalls on memory only when the copies fall 3 tiles behind. The stage count is Little's
// law: bytes in flight per SM = latency x bandwidth per SM; an H100 SXM moves 3.35 TB/s over 132
// SMs (25 B/ns each), so about 800 ns of DRAM latency needs ~20 KB in flight, more than one
// 16 KB stage: 3 stages in flight while a 4th is read. `explain gemm --rung cuda_cp_async`
// computes it for the chosen GPU. 64 KB of dynamic shared memory per block: 2 blocks per SM on
// sm_80 and sm_90. Chunks that run past the matrix, or rows whose length is not a multiple of
// 8 (not 16-byte aligned), are stored by the thread itself, zero-filled.
#include "ops/gemm/cuda/mma_tile.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace gemm_mma;
constexpr int kStages = 4;
constexpr int kSmem = kStages * static_cast<int>(sizeof(Stage));  // 64 KB

template <class T>
__device__ __forceinline__ void load_stage(Stage& s, const Operands<T>& o, int row0, int col0, int l0, bool a_vec, bool b_vec) {
  const int t = threadIdx.x;
  KL_UNROLL
  for (int q = 0; q < kLoads; ++q) {
    const int ra = a_row(t, q), ca = a_chunk(t, q), i = row0 + ra, a_left = i < o.m ? o.k - (l0 + 8 * ca) : 0;
    const int rb = b_row(t, q), cb = b_chunk(t, q), l = l0 + rb, b_left = l < o.k ? o.n - (col0 + 8 * cb) : 0;
    const int64_t a_at = static_cast<int64_t>(i) * o.k + l0 + 8 * ca, b_at = static_cast<int64_t>(l) * o.n + col0 + 8 * cb;
    Chunk* a_dst = &s.a[ra][swizzle_a(ra, ca)];
    Chunk* b_dst = &s.b[rb][swizzle_b(rb, cb)];
    if (a_vec && a_left > 0) kl::ptx::cp_async_16(a_dst, o.a + a_at);
    else *a_dst = gemm_tc::load_chunk(o.a, a_at, a_left, false);
    if (b_vec && b_left > 0) kl::ptx::cp_async_16(b_dst, o.b + b_at);
    else *b_dst = gemm_tc::load_chunk(o.b, b_at, b_left, false);
  }
}

template <class T> __global__ void __launch_bounds__(kThreads, 2) gemm_cp_async(Operands<T> o) {
  KL_DYNAMIC_SHARED(Stage, stages);
  const int t = threadIdx.x, warp = t / 32;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int wrow = (warp / (kBN / kWN)) * kWM, wcol = (warp % (kBN / kWN)) * kWN;
  const bool a_vec = o.k % 8 == 0, b_vec = o.n % 8 == 0;
  const int tiles = (o.k + kBK - 1) / kBK;
  float acc[kTilesM][kTilesN][4] = {};
  // One commit group per tile, empty ones included, so "all but the newest kStages-2 groups
  // landed" always means "tile kt landed".
  KL_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_stage(stages[s], o, row0, col0, s * kBK, a_vec, b_vec);
    kl::ptx::cp_async_commit();
  }
  for (int kt = 0; kt < tiles; ++kt) {
    kl::ptx::cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt is in for every thread, and stage (kt-1) % kStages is read by all
    const int next = kt + kStages - 1;
    if (next < tiles) load_stage(stages[next % kStages], o, row0, col0, next * kBK, a_vec, b_vec);
    kl::ptx::cp_async_commit();
    warp_tile_mma<T>(stages[kt % kStages], wrow, wcol, acc);
  }
  store_warp_tile(o, row0 + wrow, col0 + wcol, acc);
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  static const bool opted_in = [] {  // above the 48 KB a block gets without asking
    check_cuda(cudaFuncSetAttribute(gemm_cp_async<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem),
               "cudaFuncSetAttribute");
    return true;
  }();
  (void)opted_in;
  const dim3 grid((p.n + kBN - 1) / kBN, (p.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_cp_async<T>, grid, kThreads, kSmem, a.stream, gemm_tc::operands<T>(p, a));
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_cp_async",
      .note = "v09's warp tiles fed by a 4-stage cp.async pipeline (16-byte global->shared copies, no registers): "
              "tile k+3 is in flight while tile k is multiplied; 64 KB of shared memory per block",
      .supports = gemm_tc::half_row_major,
      .configs = {{.name = "128x128x32_w64x32_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_cp_async<decltype(e)>); }),
                                {"cp.async.cg.shared.global", "cp.async.wait_group", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.MT88.4"}}},
                   .run = launch,
                                  .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = kWM, .warp_n = kWN, .mma = "mma.sync.m16n8k16", .mma_m = 16, .mma_n = 8, .mma_k = 16, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
