// gemm_w4a16 v01: what a framework without a fused kernel runs, two kernels. The first dequantizes
// all of W into the dtype in the workspace (reads n*k/2 bytes, writes n*k*2); the second is a
// 16-bit tensor-core GEMM on it (cp.async 4 stages, ldmatrix, mma.sync), reading the 16-bit weights
// back (n*k*2 bytes more). Weight traffic is 4.5 bytes per weight against v02's 0.5: at decode
// sizes, where the weights are nearly all the bytes, that is the whole of the gap.
#include "ops/gemm_w4a16/cuda/w4a16_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace w4a16;

template <class Tl> constexpr int kAChunks = Tl::kBM * kChunksK;
template <class Tl> constexpr int kWChunks = Tl::kBN * kChunksK;
template <class Tl> constexpr int kSmem = kStages * (kAChunks<Tl> + kWChunks<Tl>) * static_cast<int>(sizeof(Chunk));
constexpr int kDequantThreads = 256;

// One thread per 8 weights: a 4-byte word of W in, a 16-byte chunk of the dtype out.
template <class T> __global__ void __launch_bounds__(kDequantThreads) w4a16_dequantize(Operands<T> o, T* __restrict__ w16) {
  const int64_t words = static_cast<int64_t>(o.n) * o.k / 8;
  for (int64_t i = blockIdx.x * int64_t{kDequantThreads} + threadIdx.x; i < words; i += int64_t{kDequantThreads} * gridDim.x) {
    const int64_t at = 8 * i;
    const int r = static_cast<int>(at / o.k), l = static_cast<int>(at % o.k);
    const uint32_t word = reinterpret_cast<const uint32_t*>(o.w)[i];
    *reinterpret_cast<Chunk*>(w16 + at) = dequant_word(word, group_of(o, r, l / o.group));
  }
}

// Tile kt of the 16-bit weights, rows past n zero-filled.
template <class Tl, class T> __device__ __forceinline__ void load_w16(Chunk* tile, const Operands<T>& o, int col0, int l0) {
  for_each_chunk<kWChunks<Tl>>([&](int e) {
    const int r = e / kChunksK, c = e % kChunksK;
    Chunk* dst = tile + r * kChunksK + swz(r, c);
    if (col0 + r < o.n) kl::ptx::cp_async_16(dst, o.w16 + static_cast<int64_t>(col0 + r) * o.k + l0 + 8 * c);
    else *dst = Chunk{};
  });
}

template <class T, class Tl> __global__ void __launch_bounds__(kThreads) w4a16_gemm16(Operands<T> o) {
  KL_DYNAMIC_SHARED(Chunk, smem);  // kStages x (A tile, 16-bit weight tile)
  const int row0 = blockIdx.y * Tl::kBM, col0 = blockIdx.x * Tl::kBN;
  auto a_tile = [&](int s) { return smem + s * (kAChunks<Tl> + kWChunks<Tl>); };
  Acc<Tl> acc = {};
  auto load = [&](int s, int kt) {
    load_a<Tl>(a_tile(s), o, row0, kt * kBK);
    load_w16<Tl>(a_tile(s) + kAChunks<Tl>, o, col0, kt * kBK);
  };
  auto compute = [&](int s, int) {
    KL_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) warp_step_16bit<Tl, T>(acc, a_tile(s), a_tile(s) + kAChunks<Tl>, kk);
  };
  zero_rows_past_m<Tl>(a_tile, o, row0, kStages);
  pipeline(first_tile(o.tiles_per_split), end_tile(o), load, compute);
  store_tile<Tl>(o, acc);
}

size_t w16_bytes(const W4A16Params& p) { return (size_t(p.n * p.k) * 2 + 255) / 256 * 256; }

template <class T, class Tl> void launch_tile(const W4A16Params& p, const Args& a) {
  const Grid g = grid_of<Tl>(p, std::min(sm_count(), kMostSms));
  T* w16 = static_cast<T*>(a.workspace);
  const Operands<T> o = operands<T>(p, a, g, w16, reinterpret_cast<float*>(static_cast<char*>(a.workspace) + w16_bytes(p)));
  const auto stream = static_cast<cudaStream_t>(a.stream);
  const int64_t blocks = std::min<int64_t>((p.n * p.k / 8 + kDequantThreads - 1) / kDequantThreads, 8192);
  KL_LAUNCH(w4a16_dequantize<T>, dim3(unsigned(blocks)), kDequantThreads, 0, stream, o, w16);
  allow_dynamic_smem<w4a16_gemm16<T, Tl>>(kSmem<Tl>);
  KL_LAUNCH((w4a16_gemm16<T, Tl>), dim3(g.n_blocks, g.m_blocks, g.splits), kThreads, kSmem<Tl>, stream, o);
  sum_splits(o, stream);
}
void launch(const W4A16Params& p, const Args& a) {
  with_tile(p, [&](auto e, auto tile) { launch_tile<decltype(e), decltype(tile)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W4A16Params> r{
      .op = "gemm_w4a16",
      .name = "cuda_dequant_then_gemm",
      .note = "two kernels: W dequantized whole into the dtype in the workspace (written back in 16 bits), then a "
              "16-bit mma.sync GEMM (cp.async 4 stages, ldmatrix) reading it again: 4.5 bytes of weight traffic per weight",
      .supports = fits_int,
      .workspace_bytes = [](const W4A16Params& p) { return w16_bytes(p) + partial_bytes(p); },
      .configs = {{.name = "16x64|64x128_k64_4stages",
                   .threads = kThreads,
                   .dynamic_smem = kSmem<LargeTile>,
                   .kernels = {{for_halves([](auto e) { return KL_KERNEL(w4a16_dequantize<decltype(e)>); }), {}, {}},
                               {for_halves([](auto e) { return KL_KERNEL(w4a16_gemm16<decltype(e), DecodeTile>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.M88.4"}},
                               {for_halves([](auto e) { return KL_KERNEL(w4a16_gemm16<decltype(e), LargeTile>); }),
                                {"cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32",
                                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
                                {"LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.M88.4"}},
                               {for_halves([](auto e) { return KL_KERNEL(w4a16_sum_splits<decltype(e)>); }), {}, {}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
