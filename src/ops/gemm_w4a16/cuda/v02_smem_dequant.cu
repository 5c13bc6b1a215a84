// gemm_w4a16 v02: dequantization moved into the GEMM's main loop. Each k tile's int4 weights (W as
// stored, row-major, two per byte) come into shared memory by cp.async, 4 stages deep, at half a
// byte each: against v01 the 16-bit weights are never written to nor read from DRAM. The block then
// dequantizes the tile into a 16-bit tile in shared memory (per weight: a shift and mask, an I2F,
// an FFMA with the scale and zero point, a conversion, and its share of a 16-byte store), waits,
// and the warps multiply it as v01 does (ldmatrix, mma.sync). That second pass through shared
// memory and the per-weight conversions are what v03 removes.
#include "ops/gemm_w4a16/cuda/w4a16_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace w4a16;

template <class Tl> constexpr int kAChunks = Tl::kBM * kChunksK;
template <class Tl> constexpr int kRawChunks = Tl::kBN * 2;       // a row's 64 codes: 32 bytes
template <class Tl> constexpr int kW16Chunks = Tl::kBN * kChunksK;  // the dequantized tile
template <class Tl>
constexpr int kSmem = (kStages * (kAChunks<Tl> + kRawChunks<Tl>) + kW16Chunks<Tl>) * static_cast<int>(sizeof(Chunk));

// Tile kt's int4 rows (output columns col0..), rows past n zero-filled.
template <class Tl, class T> __device__ __forceinline__ void load_raw(Chunk* tile, const Operands<T>& o, int col0, int l0) {
  for_each_chunk<kRawChunks<Tl>>([&](int e) {
    const int r = e / 2, h = e % 2;
    if (col0 + r < o.n) kl::ptx::cp_async_16(tile + e, o.w + (static_cast<int64_t>(col0 + r) * o.k + l0) / 2 + 16 * h);
    else tile[e] = Chunk{};
  });
}

template <class T, class Tl> __global__ void __launch_bounds__(kThreads) w4a16_smem_dequant(Operands<T> o) {
  KL_DYNAMIC_SHARED(Chunk, smem);  // kStages x (A tile, int4 tile), then the 16-bit weight tile
  const int row0 = blockIdx.y * Tl::kBM, col0 = blockIdx.x * Tl::kBN;
  auto a_tile = [&](int s) { return smem + s * (kAChunks<Tl> + kRawChunks<Tl>); };
  Chunk* w16 = smem + kStages * (kAChunks<Tl> + kRawChunks<Tl>);
  Acc<Tl> acc = {};
  auto load = [&](int s, int kt) {
    load_a<Tl>(a_tile(s), o, row0, kt * kBK);
    load_raw<Tl>(a_tile(s) + kAChunks<Tl>, o, col0, kt * kBK);
  };
  auto compute = [&](int s, int kt) {
    const Chunk* raw = a_tile(s) + kAChunks<Tl>;
    for_each_chunk<kRawChunks<Tl>>([&](int e) {  // 32 codes of row r: 4 chunks of w16
      const int r = e / 2, h = e % 2;
      const Group<T> g = group_of(o, col0 + r, kt * kBK / o.group);
      const Chunk c = raw[e];
      KL_UNROLL
      for (int q = 0; q < 4; ++q) w16[r * kChunksK + swz(r, 4 * h + q)] = dequant_word(c.w[q], g);
    });
    __syncthreads();  // the whole 16-bit tile is written
    KL_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) warp_step_16bit<Tl, T>(acc, a_tile(s), w16, kk);
  };
  zero_rows_past_m<Tl>(a_tile, o, row0, kStages);
  pipeline(first_tile(o.tiles_per_split), end_tile(o), load, compute);
  store_tile<Tl>(o, acc);
}

template <class T, class Tl> void launch_tile(const W4A16Params& p, const Args& a) {
  const Grid g = grid_of<Tl>(p, std::min(sm_count(), kMostSms));
  const Operands<T> o = operands<T>(p, a, g, nullptr, static_cast<float*>(a.workspace));
  allow_dynamic_smem<w4a16_smem_dequant<T, Tl>>(kSmem<Tl>);
  KL_LAUNCH((w4a16_smem_dequant<T, Tl>), dim3(g.n_blocks, g.m_blocks, g.splits), kThreads, kSmem<Tl>, a.stream, o);
  sum_splits(o, static_cast<cudaStream_t>(a.stream));
}
void launch(const W4A16Params& p, const Args& a) {
  with_tile(p, [&](auto e, auto tile) { launch_tile<decltype(e), decltype(tile)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W4A16Params> r{
      .op = "gemm_w4a16",
      .name = "cuda_smem_dequant",
      .note = "int4 tiles by cp.async into shared memory (half a byte per weight from DRAM), dequantized there into a "
              "16-bit tile (I2F + FFMA + conversion per weight, a second shared-memory pass), then ldmatrix + mma.sync",
      .supports = fits_int,
      .workspace_bytes = partial_bytes,
      .configs = {{.name = "16x64|64x128_k64_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem<LargeTile>,
                   .kernels = {{for_halves([](auto e) { return KL_KERNEL(w4a16_smem_dequant<decltype(e), DecodeTile>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.M88.4"}},
                               {for_halves([](auto e) { return KL_KERNEL(w4a16_smem_dequant<decltype(e), LargeTile>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.M88.4"}},
                               {for_halves([](auto e) { return KL_KERNEL(w4a16_sum_splits<decltype(e)>); }), {}, {}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
