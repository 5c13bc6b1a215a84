// gemm v11: Hopper's data path. TMA copies each 128x64 tile of A and of B into 128-byte-swizzled
// shared memory in one instruction (no thread computes an address; out-of-bounds rows come back
// as zeros), a 4-stage ring of full/empty mbarriers replaces __syncthreads, and two warpgroups
// each run wgmma.mma_async m64n128k16 straight from shared memory through descriptors: no
// ldmatrix, no fragments of B in registers. One thread of the first warpgroup also refills each
// stage once both warpgroups have released it, so the producer steals issue slots from a
// consumer; v12 gives it its own warpgroup.
#include "ops/gemm/cuda/hopper_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace gemm_hopper;
constexpr int kStages = 4;
constexpr int kSmem = static_cast<int>(sizeof(Smem<kStages>)) + kAlignSlack;

template <class T>
__global__ void __launch_bounds__(256, 1)
    gemm_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, Operands<T> o) {
#if KL_PTX_SM90A
  KL_DYNAMIC_SHARED(unsigned char, raw);
  Smem<kStages>& s = *aligned_smem<Smem<kStages>>(raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN, tiles = (o.k + kBK - 1) / kBK;
  auto issue = [&](int kt) {  // thread 0: the k slice kt into its stage
    const int st = kt % kStages;
    kl::ptx::mbarrier_arrive_expect_tx(&s.full[st], kStageBytes);
    kl::ptx::tma_load_2d(s.a[st], &map_a, kt * kBK, m0, &s.full[st]);
    kl::ptx::tma_load_2d(s.b[st], &map_b, kt * kBK, n0, &s.full[st]);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) kl::ptx::mbarrier_init(&s.full[i], 1), kl::ptx::mbarrier_init(&s.empty[i], 2);
    kl::ptx::fence_mbarrier_init();
    for (int kt = 0; kt < kStages && kt < tiles; ++kt) issue(kt);
  }
  __syncthreads();
  float acc[64] = {};
  for (int kt = 0; kt < tiles; ++kt) {
    const int st = kt % kStages, phase = (kt / kStages) & 1;
    kl::ptx::mbarrier_wait_parity(&s.full[st], phase);
    consume_stage<T>(s, st, wg, acc, kt == 0);
    if (tid == 0) kl::ptx::mbarrier_arrive(&s.empty[st]);
    if (threadIdx.x == 0 && kt + kStages < tiles) {  // refill the stage once both warpgroups are done with it
      kl::ptx::mbarrier_wait_parity(&s.empty[st], phase);
      issue(kt + kStages);
    }
  }
  store_fragment(o, m0 + wg * 64, n0, acc);
#endif
}

template <class T> void launch_as(const GemmParams& p, const Args& a) {
  allow_dynamic_smem<gemm_tma_wgmma<T>>(kSmem);
  const Operands<T> o = gemm_tc::operands<T>(p, a);
  const CUtensorMap map_a = tensor_map(o.a, o.m, o.k, kBM, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap map_b = tensor_map(o.b, o.n, o.k, kBN, kBK, CU_TENSOR_MAP_SWIZZLE_128B);  // B col-major: n rows of k
  const dim3 grid((o.n + kBN - 1) / kBN, (o.m + kBM - 1) / kBM);
  KL_LAUNCH(gemm_tma_wgmma<T>, grid, 256, kSmem, a.stream, map_a, map_b, o);
}
void launch(const GemmParams& p, const Args& a) {
  gemm_tc::with_half(p.a, [&](auto e) { launch_as<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<GemmParams> r{
      .op = "gemm",
      .name = "cuda_tma_wgmma",
      .note = "Hopper: TMA loads 128x64 tiles into 128-byte-swizzled shared memory, a 4-stage full/empty mbarrier ring, two "
              "warpgroups run wgmma m64n128k16 on shared-memory descriptors; one thread doubles as the producer",
      .supports = hopper_problem,
      .configs = {{.name = "128x128x64_2wg_4stages",
                   .threads = 256,
                   .dynamic_smem = kSmem,
                   .kernels = {{gemm_tc::for_halves([](auto e) { return KL_KERNEL(gemm_tma_wgmma<decltype(e)>); }),
                                {"wgmma.mma_async.sync.aligned.m64n128k16.f32", "cp.async.bulk.tensor.2d.shared::cluster.global",
                                 "mbarrier.try_wait.parity"},
                                {"HGMMA.64x128x16.F32", "UTMALDG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT"}}},
                   .run = launch,
                   .tiling = Tiling{.block_m = kBM, .block_n = kBN, .block_k = kBK, .warp_m = 64, .warp_n = kBN,  // a warpgroup's tile
                                    .mma = "wgmma.m64n128k16", .mma_m = 64, .mma_n = 128, .mma_k = 16, .stages = kStages}}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
