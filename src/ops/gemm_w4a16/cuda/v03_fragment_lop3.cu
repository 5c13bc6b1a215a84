// gemm_w4a16 v03: the weights read as the engine ships them, repacked offline into mma.sync's
// B-fragment order (W_packed, quant/w4_fragments.h). Against v02, no 16-bit weight tile exists:
// per k16 step and n16 strip each lane reads one 32-bit word from shared memory, which is already
// its four B registers' eight codes; one LOP3 per register ((w >> 4r) & 0x000f000f | magic) makes
// each half exactly magic + code, and one HSUB2 + one HFMA2 per two weights apply the zero point
// and the scale. No I2F, no conversion, no second shared-memory round trip, no ldmatrix for B.
// The packed words come in by cp.async 16 bytes at a time, 512 contiguous bytes per k16 step of a
// 64-column block: the 4-bit weights cross DRAM once, at half a byte each. A group's scales and
// zero points ride the same pipeline (4-byte cp.asyncs into the stage, at a group's first tile), so
// no dependent global load stalls the warps when a group starts. Two configs: split-K to 4 blocks per
// SM, and to 8 (at m = 1 an H200 had only 0.93 eligible warps per scheduler with 4: more warps, the
// same kernel). A config of 8 stages at m <= 16 bought nothing there (11.5 against 11.0 us) and went.
#include "ops/gemm_w4a16/cuda/w4a16_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace w4a16;

template <class Tl> constexpr int kAChunks = Tl::kBM * kChunksK;
template <class Tl> constexpr int kWChunks = kBK / 16 * (Tl::kBN / 16) * 8;  // 128 bytes per k16 x n16
// Per column, the aligned 4 bytes holding its scale, then those holding its zero point.
template <class Tl> constexpr int kGChunks = 2 * Tl::kBN * 4 / static_cast<int>(sizeof(Chunk));
template <class Tl> constexpr int kStageChunks = kAChunks<Tl> + kWChunks<Tl> + kGChunks<Tl>;
template <class Tl> constexpr int kSmem = kStages * kStageChunks<Tl> * static_cast<int>(sizeof(Chunk));

// Tile kt's packed words, [k16 step][n16 strip][32 lanes], strips past n zero-filled.
template <class Tl, class T> __device__ __forceinline__ void load_packed(Chunk* tile, const Operands<T>& o, int col0, int l0) {
  constexpr int kStrips = Tl::kBN / 16;
  for_each_chunk<kWChunks<Tl>>([&](int e) {
    const int kk = e / (kStrips * 8), strip = e / 8 % kStrips, j = e % 8;
    const int col_strip = col0 / 16 + strip;
    if (col_strip < o.n / 16)
      kl::ptx::cp_async_16(tile + e, o.packed + ((static_cast<int64_t>(l0 / 16 + kk) * (o.n / 16) + col_strip) * 32 + 4 * j));
    else tile[e] = Chunk{};
  });
}

// The group of k tile kt: groups are 64 or 128 (the op refuses others), one or two k64 tiles.
template <class T> __device__ __forceinline__ int group_index(const Operands<T>& o, int kt) { return kt >> (o.group == 128); }

// Group gi's scale and zero point words for the block's columns; columns past n get zeros.
template <class Tl, class T> __device__ __forceinline__ void load_groups(uint32_t* words, const Operands<T>& o, int col0, int gi) {
  for_each_chunk<Tl::kBN>([&](int c) {
    const int col = col0 + c;
    if (col >= o.n) {
      words[c] = words[Tl::kBN + c] = 0;
      return;
    }
    const int64_t t = static_cast<int64_t>(col) * o.groups + gi;
    kl::ptx::cp_async_4(words + c, word_of(o.scales, t));
    if (o.zero == W4Zero::gptq) kl::ptx::cp_async_4(words + Tl::kBN + c, word_of(o.zero_codes, t >> 1));
    if (o.zero == W4Zero::awq) kl::ptx::cp_async_4(words + Tl::kBN + c, word_of(o.zero_floats, t));
  });
}

template <class T, class Tl> __global__ void __launch_bounds__(kThreads) w4a16_fragments(Operands<T> o) {
  KL_DYNAMIC_SHARED(Chunk, smem);  // kStages x (A tile, packed weight tile, group words)
  const int lane = threadIdx.x % 32, row0 = blockIdx.y * Tl::kBM, col0 = blockIdx.x * Tl::kBN;
  const int strip0 = warp_col<Tl>() / 16, t0 = first_tile(o.tiles_per_split);
  auto a_tile = [&](int s) { return smem + s * kStageChunks<Tl>; };
  auto group_words = [&](int s) { return reinterpret_cast<uint32_t*>(a_tile(s) + kAChunks<Tl> + kWChunks<Tl>); };
  Acc<Tl> acc = {};
  PairGroup groups[Tl::kNS][2];
  int loaded = -1;
  auto load = [&](int s, int kt) {
    load_a<Tl>(a_tile(s), o, row0, kt * kBK);
    load_packed<Tl>(a_tile(s) + kAChunks<Tl>, o, col0, kt * kBK);
    if (kt == t0 || group_index(o, kt) != group_index(o, kt - 1)) load_groups<Tl>(group_words(s), o, col0, group_index(o, kt));
  };
  auto compute = [&](int s, int kt) {
    if (const int gi = group_index(o, kt); gi != loaded) {  // columns g and g + 8 of each strip
      KL_UNROLL
      for (int j = 0; j < Tl::kNS; ++j)
        KL_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int c = 16 * (strip0 + j) + 8 * h + lane / 4;
          groups[j][h] = pair_group<Tl::kBN>(group_words(s), c, o, col0 + c, gi);
        }
      loaded = gi;
    }
    const uint32_t* words = reinterpret_cast<const uint32_t*>(a_tile(s) + kAChunks<Tl>);
    KL_UNROLL
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t a[Tl::kMT][4];
      KL_UNROLL
      for (int i = 0; i < Tl::kMT; ++i) a_fragment(a[i], a_tile(s), warp_row<Tl>() + 16 * i, 16 * kk);
      KL_UNROLL
      for (int j = 0; j < Tl::kNS; ++j) {
        const uint32_t word = words[(kk * (Tl::kBN / 16) + strip0 + j) * 32 + lane];
        KL_UNROLL
        for (int h = 0; h < 2; ++h) {  // n8 tile h: registers 2h (k 2t, 2t+1) and 2h + 1 (k 2t+8, 2t+9)
          const uint32_t b[2] = {dequant_register<T>(word, 2 * h, groups[j][h]), dequant_register<T>(word, 2 * h + 1, groups[j][h])};
          KL_UNROLL
          for (int i = 0; i < Tl::kMT; ++i) mma<T>(acc[i][2 * j + h], a[i], b);
        }
      }
    }
  };
  zero_rows_past_m<Tl>(a_tile, o, row0, kStages);
  pipeline(t0, end_tile(o), load, compute);
  store_tile<Tl>(o, acc);
}

template <class T, class Tl> void launch_tile(const W4A16Params& p, const Args& a, int blocks_per_sm) {
  const Grid g = grid_of<Tl>(p, std::min(sm_count(), kMostSms), blocks_per_sm);
  const Operands<T> o = operands<T>(p, a, g, nullptr, static_cast<float*>(a.workspace));
  allow_dynamic_smem<w4a16_fragments<T, Tl>>(kSmem<Tl>);
  KL_LAUNCH((w4a16_fragments<T, Tl>), dim3(g.n_blocks, g.m_blocks, g.splits), kThreads, kSmem<Tl>, a.stream, o);
  sum_splits(o, static_cast<cudaStream_t>(a.stream));
}
template <int BlocksPerSm> void launch(const W4A16Params& p, const Args& a) {
  static_assert(BlocksPerSm <= kMostBlocksPerSm, "the workspace holds the partials of at most kMostBlocksPerSm");
  with_tile(p, [&](auto e, auto tile) { launch_tile<decltype(e), decltype(tile)>(p, a, BlocksPerSm); });
}

template <int BlocksPerSm> RungConfig<W4A16Params> config(std::string name) {
  return {.name = std::move(name),
          .threads = kThreads,
          .dynamic_smem = kSmem<LargeTile>,
          .kernels = {{for_halves([](auto e) { return KL_KERNEL(w4a16_fragments<decltype(e), DecodeTile>); }),
                       {"lop3.b32", "cp.async.cg.shared.global", "cp.async.ca.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32",
                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
                       {"LOP3.LUT", "LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "LDSM.16.M88.4", "HFMA2"}},
                      {for_halves([](auto e) { return KL_KERNEL(w4a16_fragments<decltype(e), LargeTile>); }),
                       {"lop3.b32", "cp.async.cg.shared.global", "cp.async.ca.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32"},
                       {"LOP3.LUT", "LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "HFMA2"}},
                      {for_halves([](auto e) { return KL_KERNEL(w4a16_sum_splits<decltype(e)>); }), {}, {}}},
          .run = launch<BlocksPerSm>};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W4A16Params> r{
      .op = "gemm_w4a16",
      .name = "cuda_fragment_lop3",
      .note = "weights repacked offline into mma.sync's B-fragment order: a lane's one 32-bit shared-memory word is its "
              "registers' 8 codes, dequantized by LOP3 (magic-number exponent) + HSUB2 + HFMA2 right before the mma; "
              "no 16-bit weight tile, no I2F, no ldmatrix for B; scales and zero points by cp.async in the same stages",
      .supports = fits_int,
      .workspace_bytes = partial_bytes,
      .configs = {config<kBlocksPerSm>("16x64|64x128_k64_4stages"), config<kMostBlocksPerSm>("16x64|64x128_k64_4stages_8perSM")}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
