// gemm v12: warp specialisation and a persistent grid. A producer warpgroup (one elected thread)
// only issues TMA loads and gives most of its registers away (setmaxnreg.dec 40); two consumer
// warpgroups take them (setmaxnreg.inc 232) and only multiply, so neither waits on the other's
// instruction stream. One block per SM loops over output tiles in an L2-friendly order (bands of
// 8 tile rows: the B columns a band needs stay in L2 while its A rows stream), and the producer
// runs ahead into the next tile while the consumers finish this one. The epilogue stages D in
// shared memory and writes it with TMA stores (out-of-bounds rows and columns dropped by the
// copy, not by branches); a D that does not start 16-byte aligned is stored from the registers.
#include "ops/gemm/cuda/hopper_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_hopper;
constexpr int kStages = 4;

struct alignas(1024) SmemWs {
  Smem<kStages> pipe;
  uint16_t d[2][2][64 * 64];  // each consumer's 64 x 128 D tile for the TMA store: two 64 x 64 halves, 128-byte swizzled
};
constexpr int kSmem = static_cast<int>(sizeof(SmemWs)) + kAlignSlack;

#if KL_PTX_SM90A
constexpr int kBand = 8;
// Tile t of the persistent loop: bands of kBand tile rows, column by column within a band.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_band = kBand * tiles_n, band = t / per_band, first = band * kBand;
  const int rows = min(kBand, tiles_m - first), in_band = t % per_band;
  tm = first + in_band % rows, tn = in_band / rows;
}
#endif

template <class T>
__global__ void __launch_bounds__(384, 1)
    gemm_warp_specialized(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          const __grid_constant__ CUtensorMap map_d, Operands<T> o, bool tma_store) {
#if KL_PTX_SM90A
  KL_DYNAMIC_SHARED(unsigned char, raw);
  SmemWs* sp = aligned_smem<SmemWs>(raw);
  Smem<kStages>& s = sp->pipe;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int tiles_m = (o.m + kBM - 1) / kBM, tiles_n = (o.n + kBN - 1) / kBN, k_tiles = (o.k + kBK - 1) / kBK;
  const int tiles = tiles_m * tiles_n;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) kl::ptx::mbarrier_init(&s.full[i], 1), kl::ptx::mbarrier_init(&s.empty[i], 2);
    kl::ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (wg == 0) {  // producer
    kl::ptx::setmaxnreg_dec<40>();
    if (tid / 32 == 0 && kl::ptx::elect_sync()) {
      int it = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        tile_coords(t, tiles_m, tiles_n, tm, tn);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int st = it % kStages, phase = (it / kStages) & 1;
          kl::ptx::mbarrier_wait_parity(&s.empty[st], phase ^ 1);  // both consumers released the stage
          kl::ptx::mbarrier_arrive_expect_tx(&s.full[st], kStageBytes);
          kl::ptx::tma_load_2d(s.a[st], &map_a, kt * kBK, tm * kBM, &s.full[st]);
          kl::ptx::tma_load_2d(s.b[st], &map_b, kt * kBK, tn * kBN, &s.full[st]);
        }
      }
    }
    return;
  }
  kl::ptx::setmaxnreg_inc<232>();
  const int c = wg - 1, w = tid / 32, g = tid % 32 / 4, q = tid % 4;
  int it = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    float acc[64];
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const int st = it % kStages, phase = (it / kStages) & 1;
      kl::ptx::mbarrier_wait_parity(&s.full[st], phase);
      consume_stage<T>(s, st, c, acc, kt == 0);
      if (tid == 0) kl::ptx::mbarrier_arrive(&s.empty[st]);
    }
    if (!tma_store) {  // D not 16-byte aligned (a view into a larger buffer): stores from the registers
      store_fragment(o, tm * kBM + c * 64, tn * kBN, acc);
      continue;
    }
    // Epilogue: alpha, beta, bias, activation and residual in registers, D through shared memory, TMA stores. Each half of the
    // warpgroup's 64 x 128 tile is 64 rows of 128 bytes, 128-byte swizzled: the 8 rows a warp's
    // pair stores touch land in 8 different 16-byte bank groups.
    const int row0 = tm * kBM + c * 64, col0 = tn * kBN;
    if (tid == 0) kl::ptx::bulk_wait_read<0>();  // the previous tile's stores have read the staging tiles
    kl::ptx::bar_sync(1 + c, 128);
    KL_UNROLL
    for (int i = 0; i < 64; i += 2) {
      const int r = 16 * w + g + 8 * ((i % 4) / 2), col = 8 * (i / 4) + 2 * q;
      T pair[2];
      KL_UNROLL
      for (int e = 0; e < 2; ++e)  // alpha, beta and the epilogue inside D; the TMA store drops the rest
        pair[e] = gemm_tc::from_f32<T>(row0 + r < o.m && col0 + col + e < o.n ? gemm_tc::finish(o, row0 + r, col0 + col + e, acc[i + e])
                                                                              : 0.0f);
      const int byte = r * 128 + (col % 64) * 2, swizzled = byte ^ ((r & 7) << 4);
      memcpy(reinterpret_cast<unsigned char*>(sp->d[c][col / 64]) + swizzled, pair, 4);
    }
    kl::ptx::fence_proxy_async();  // the stores above, before the TMA stores read them
    kl::ptx::bar_sync(1 + c, 128);
    if (tid == 0) {
      kl::ptx::tma_store_2d(&map_d, col0, row0, sp->d[c][0]);
      if (col0 + 64 < o.n) kl::ptx::tma_store_2d(&map_d, col0 + 64, row0, sp->d[c][1]);
      kl::ptx::bulk_commit();
    }
  }
  if (tid == 0) kl::ptx::bulk_wait_read<0>();
#endif
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  allow_dynamic_smem<gemm_warp_specialized<T>>(kSmem);
  const Operands<T> o = gemm_tc::operands<T>(p, a);
  const CUtensorMap map_a = tensor_map(o.a, o.m, o.k, kBM, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap map_b = tensor_map(o.b, o.n, o.k, kBN, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
  const bool tma_store = reinterpret_cast<uintptr_t>(o.d) % 16 == 0;  // TMA's global address rule
  const CUtensorMap map_d = tma_store ? tensor_map(o.d, o.m, o.n, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B) : map_a;
  const int tiles = ((o.m + kBM - 1) / kBM) * ((o.n + kBN - 1) / kBN);
  static const int sms = sm_count();
  KL_LAUNCH(gemm_warp_specialized<T>, dim3(std::min(tiles, sms)), 384, kSmem, a.stream, map_a, map_b, map_d, o, tma_store);
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_warp_specialized",
      .note = "a producer warpgroup (TMA only, setmaxnreg.dec 40) and two consumer warpgroups (wgmma only, setmaxnreg.inc "
              "232); one persistent block per SM over tiles in bands of 8 rows for L2 reuse; D leaves by TMA store",
      .supports = hopper_problem,
      .configs = {{.name = "128x128x64_1p2c_4stages_persistent",
                   .threads = 384,
                   .dynamic_smem = kSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_warp_specialized<decltype(e)>); }),
                                {"wgmma.mma_async.sync.aligned.m64n128k16.f32", "cp.async.bulk.tensor.2d.shared::cluster.global",
                                 "cp.async.bulk.tensor.2d.global.shared::cta", "setmaxnreg.inc.sync.aligned.u32",
                                 "setmaxnreg.dec.sync.aligned.u32", "elect.sync"},
                                {"HGMMA.64x128x16.F32", "UTMALDG.2D", "UTMASTG.2D", "USETMAXREG"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 64, .warp_n = kBN,  // a warpgroup's tile
                                    .mma = "wgmma.m64n128k16", .mma_m = 64, .mma_n = 128, .mma_k = 16, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
