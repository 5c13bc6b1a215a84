// gemm_w4a16 v04: decode (m <= 16) as a GEMV over the fragment-order words, with no split-K kernel.
// At m = 1 an H200 ran v03 at 1.06 TB/s with 0.93 eligible warps per scheduler, and its split sum
// cost 2.4 us more: v03's blocks share one k range per 64 columns, so filling the GPU meant
// splitting k across blocks and summing fp32 partials in a second kernel. Here a block owns 16,
// 32 or 64 columns (1, 2 or 4 n16 strips) over all of k, and its 16 warps split k among
// themselves: contiguous runs of k64 chunks, each warp streaming its chunks' packed words through a
// private cp.async ring (cp.async.wait_group and __syncwarp: no block barrier in the loop), and
// the 16 partial sums meet once in shared memory at the end. At n = k = 4096, 128 blocks of 32
// columns, each warp's 4 chunks (4 KiB of weights) all in flight at once.
// The block's scales and zero points are contiguous rows of their [n, groups] arrays: one
// cooperative copy at the start, so each crosses L2 once, not once per chunk and column.
// A's fragments come by ld.global.nc from L1/L2, each serving all the block's strips. Every block
// reads all of A (m k 2 bytes), which passes a 32-column block's weights (16 k bytes) at m > 8:
// the first config then takes 64-column blocks where n still gives every SM one (n >= 64 x SMs).
// Dequantization as v03 (LOP3, HSUB2, HFMA2 per register of two weights).
#include <algorithm>
#include <string>

#include "ops/gemm_w4a16/cuda/w4a16_tile.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace w4a16;

constexpr int kDecodeWarps = 16, kDecodeThreads = 32 * kDecodeWarps;
constexpr int kChunkSteps = kBK / 16;  // k16 steps per chunk
// One warp's ring: per stage, each strip's packed words for a chunk's 4 k16 steps (32 words
// each); 6 stages, 3 with 4 strips (2 KiB a stage: 2 of them in flight is still 64 KiB an SM).
template <int Strips> constexpr int kRingStages = Strips == 4 ? 3 : 6;
constexpr int kStripChunks = kChunkSteps * 32 / 4;
template <int Strips>
constexpr int kRingBytes = kDecodeWarps * kRingStages<Strips> * Strips * kStripChunks * static_cast<int>(sizeof(Chunk));
// The block's scales and zero points live in shared memory beside the rings: at most this many
// bytes each (16 x groups elements a strip), which bounds k at 65536 / strips with groups of 64.
constexpr int kMostGroupBytes = 32 * 1024;
constexpr int kMostSmem = std::max(kRingBytes<2>, kRingBytes<4>) + 2 * kMostGroupBytes;  // 160 KiB: under an A100's 163

// Bytes of the block's scales (16 Strips columns x groups in the dtype) and zero points, 16-byte rounded.
__host__ __device__ constexpr int round16(int bytes) { return (bytes + 15) / 16 * 16; }
__host__ __device__ constexpr int scale_bytes(int strips, int groups) { return round16(32 * strips * groups); }
__host__ __device__ constexpr int zero_bytes(int strips, W4Zero zero, int groups) {
  return zero == W4Zero::gptq ? round16(8 * strips * groups) : zero == W4Zero::awq ? round16(32 * strips * groups) : 0;
}
// Whether a block of `strips` strips holds its scales and zero points.
bool groups_fit(int strips, const W4A16Params& p) {
  return std::max(scale_bytes(strips, int(p.groups())), zero_bytes(strips, p.zero, int(p.groups()))) <= kMostGroupBytes;
}
template <int Strips> int smem_bytes(const W4A16Params& p) {
  return kRingBytes<Strips> + scale_bytes(Strips, int(p.groups())) + zero_bytes(Strips, p.zero, int(p.groups()));
}

// The block's rows of scales (and zero points): its 16 Strips columns' rows are contiguous in each
// [n, groups] array; 16-byte aligned for the scales and AWQ's zeros, 8 for GPTQ's nibbles.
template <int Strips, class T> __device__ __forceinline__ void load_block_groups(unsigned char* dst, const Operands<T>& o) {
  const auto copy = [&](unsigned char* to, const void* from, int bytes, int piece) {
    const auto* src = static_cast<const unsigned char*>(from) + static_cast<int64_t>(blockIdx.x) * bytes;
    for (int i = static_cast<int>(threadIdx.x) * piece; i < bytes; i += kDecodeThreads * piece)
      piece == 16 ? kl::ptx::cp_async_16(to + i, src + i) : kl::ptx::cp_async_8(to + i, src + i);
  };
  copy(dst, o.scales, 32 * Strips * o.groups, 16);
  if (o.zero == W4Zero::gptq) copy(dst + scale_bytes(Strips, o.groups), o.zero_codes, 8 * Strips * o.groups, 8);
  if (o.zero == W4Zero::awq) copy(dst + scale_bytes(Strips, o.groups), o.zero_floats, 32 * Strips * o.groups, 16);
}

// Column c's (of the block) constants for group gi, from the block's copy.
template <int Strips, class T>
__device__ __forceinline__ PairGroup block_group(const unsigned char* groups, const Operands<T>& o, int c, int gi) {
  const int t = c * o.groups + gi;
  const auto* s = reinterpret_cast<const uint16_t*>(groups);
  const unsigned char* z = groups + scale_bytes(Strips, o.groups);
  if (o.zero == W4Zero::gptq) return pair_group_of<T>(s[t], (z[t >> 1] >> 4 * (t & 1) & 0xfu) ^ 8u, 0);
  if (o.zero == W4Zero::awq) return pair_group_of<T>(s[t], 0, reinterpret_cast<const uint16_t*>(z)[t]);
  return pair_group_of<T>(s[t], 8, 0);
}

// Two consecutive elements of A as one 32-bit register (k is even: 4-byte aligned), by the
// read-only path: A does not change during the kernel, and every block reads it.
template <class T> __device__ __forceinline__ uint32_t a_pair(const T* p) { return __ldg(reinterpret_cast<const unsigned*>(p)); }

struct WarpBarrier {
  __device__ __forceinline__ void operator()() const { __syncwarp(); }
};

// Rows: 8 when m <= 8 (A's rows 8-15, registers a1 and a3, are zero and not loaded), else 16.
// Strips: n16 strips per block, each warp computing all of them with each A fragment it loads.
template <class T, int Rows, int Strips> __global__ void __launch_bounds__(kDecodeThreads, 1) w4a16_decode(Operands<T> o) {
  KL_DYNAMIC_SHARED(Chunk, smem);  // a ring per warp, then the block's scales and zero points
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // The warp's chunks: a contiguous sixteenth of k, so that consecutive chunks share their group.
  const int chunks = o.k / kBK, first = warp * chunks / kDecodeWarps, mine = (warp + 1) * chunks / kDecodeWarps - first;
  Chunk* ring = smem + warp * kRingStages<Strips> * Strips * kStripChunks;
  unsigned char* groups = reinterpret_cast<unsigned char*>(smem) + kRingBytes<Strips>;
  // Lane l copies k16 step l / 8's words of lanes 4 (l % 8) .. + 3 of each strip: 512 contiguous
  // bytes per strip and chunk. The source moves on by a chunk per load.
  const uint32_t* w_src = o.packed + ((static_cast<int64_t>(first * kChunkSteps + lane / 8) * (o.n / 16) + Strips * blockIdx.x) * 32 + 4 * (lane % 8));
  const int64_t w_step = static_cast<int64_t>(kChunkSteps) * (o.n / 16) * 32;
  auto load = [&](int s, int) {
    KL_UNROLL
    for (int j = 0; j < Strips; ++j) kl::ptx::cp_async_16(ring + (s * Strips + j) * kStripChunks + lane, w_src + 32 * j);
    w_src += w_step;
  };
  // Rows g and g + 8 of A at k 2t of the warp's chunk: a fragment's elements, read from L1/L2.
  // Rows past m read row m - 1 instead: D's rows past m are never stored, and no load is predicated.
  const T* a_lo = o.a + static_cast<int64_t>(min(g, o.m - 1)) * o.k + first * kBK + 2 * t;
  const T* a_hi = o.a + static_cast<int64_t>(min(g + 8, o.m - 1)) * o.k + first * kBK + 2 * t;
  const int group_shift = o.group == 128;  // groups are 64 or 128 (the op refuses others)
  float acc[Strips][2][4] = {};            // n8 tiles 0 and 1 of each strip
  PairGroup pg[Strips][2];                 // columns g and g + 8 of each strip, for group `loaded`
  int loaded = -1;
  auto compute = [&](int s, int i) {
    uint32_t a[kChunkSteps][4];
    KL_UNROLL
    for (int kk = 0; kk < kChunkSteps; ++kk) {
      a[kk][0] = a_pair(a_lo + 16 * kk), a[kk][2] = a_pair(a_lo + 16 * kk + 8);
      a[kk][1] = Rows == 16 ? a_pair(a_hi + 16 * kk) : 0u, a[kk][3] = Rows == 16 ? a_pair(a_hi + 16 * kk + 8) : 0u;
    }
    a_lo += kBK, a_hi += kBK;
    if (const int gi = (first + i) >> group_shift; gi != loaded) {
      KL_UNROLL
      for (int j = 0; j < Strips; ++j)
        KL_UNROLL
        for (int h = 0; h < 2; ++h) pg[j][h] = block_group<Strips>(groups, o, 16 * j + 8 * h + g, gi);
      loaded = gi;
    }
    KL_UNROLL
    for (int j = 0; j < Strips; ++j) {
      const uint32_t* words = reinterpret_cast<const uint32_t*>(ring + (s * Strips + j) * kStripChunks);
      KL_UNROLL
      for (int kk = 0; kk < kChunkSteps; ++kk) {
        const uint32_t word = words[kk * 32 + lane];
        KL_UNROLL
        for (int h = 0; h < 2; ++h) {
          const uint32_t b[2] = {dequant_register<T>(word, 2 * h, pg[j][h]), dequant_register<T>(word, 2 * h + 1, pg[j][h])};
          mma<T>(acc[j][h], a[kk], b);
        }
      }
    }
  };
  load_block_groups<Strips>(groups, o);  // the oldest commit group
  kl::ptx::cp_async_commit();
  // Once the ring's first chunks are in flight: this thread's share of the scales landed, then everyone's.
  const auto scales_in = [] {
    kl::ptx::cp_async_wait<kRingStages<Strips> - 1>();
    __syncthreads();
  };
  pipeline<kRingStages<Strips>>(0, mine, load, compute, WarpBarrier{}, scales_in);

  // The warps' partial sums, [warp][slot][lane] over the rings (every warp is past its ring), then
  // each element's sum over the 16 warps: slot 8j + 4h + c of lane (g, t) is strip j's row g + 8 (c / 2),
  // column 8h + 2t + c % 2. With 8 rows, the slots of rows 8-15 (c >= 2) are skipped.
  __syncthreads();
  constexpr int kSlots = 8 * Strips;
  static_assert(kDecodeWarps * kSlots * 32 * sizeof(float) <= kRingBytes<Strips>, "the partial sums fit over the rings");
  const auto kept = [](int slot) { return Rows == 16 || slot % 4 < 2; };
  float* part = reinterpret_cast<float*>(smem);
  KL_UNROLL
  for (int slot = 0; slot < kSlots; ++slot)
    if (kept(slot)) part[(warp * kSlots + slot) * 32 + lane] = acc[slot / 8][slot / 4 % 2][slot % 4];
  __syncthreads();
  for (int e = threadIdx.x; e < kSlots * 32; e += kDecodeThreads) {
    const int slot = e / 32, l = e % 32, c = slot % 4, row = l / 4 + 8 * (c / 2);
    if (!kept(slot) || row >= o.m) continue;
    float sum = 0.0f;
    KL_UNROLL
    for (int w = 0; w < kDecodeWarps; ++w) sum += part[(w * kSlots + slot) * 32 + l];
    const int col = 16 * (Strips * blockIdx.x + slot / 8) + 8 * (slot / 4 % 2) + 2 * (l % 4) + c % 2;
    o.d[static_cast<int64_t>(row) * o.n + col] = from_f32<T>(sum);
  }
}

template <class T, int Rows, int Strips> void launch_rows(const W4A16Params& p, const Args& a) {
  const Grid g{int(p.n / (16 * Strips)), 1, 1, int(p.k / kBK)};
  const Operands<T> o = operands<T>(p, a, g, nullptr, nullptr);
  static const int allowed = std::min(kMostSmem, smem_optin_bytes());
  if (smem_bytes<Strips>(p) > allowed)
    runtime_failure("cuda_decode_gemv: " + std::to_string(smem_bytes<Strips>(p)) + " bytes of shared memory a block (the rings, and " +
                    std::to_string(p.groups()) + " groups' scales and zero points), over the " + std::to_string(allowed) +
                    " this GPU lets a block use");
  allow_dynamic_smem<w4a16_decode<T, Rows, Strips>>(allowed);
  KL_LAUNCH((w4a16_decode<T, Rows, Strips>), dim3(unsigned(g.n_blocks)), kDecodeThreads, smem_bytes<Strips>(p), a.stream, o);
}
template <int Strips> void launch_strips(const W4A16Params& p, const Args& a) {
  with_half(p.dtype, [&](auto e) {
    if (p.m <= 8) launch_rows<decltype(e), 8, Strips>(p, a);
    else launch_rows<decltype(e), 16, Strips>(p, a);
  });
}
// The widest block n and the scales allow. Every block reads all of A (m k 2 bytes) from L2: at m > 8
// that passes a 32-column block's weights (16 k bytes), so 64 columns where n still gives every SM
// a block; else 32, each A fragment serving two strips.
void launch_widest(const W4A16Params& p, const Args& a) {
  if (p.m > 8 && p.n % 64 == 0 && p.n / 64 >= sm_count() && groups_fit(4, p)) launch_strips<4>(p, a);
  else if (p.n % 32 == 0 && groups_fit(2, p)) launch_strips<2>(p, a);
  else launch_strips<1>(p, a);
}

Reason supports(const W4A16Params& p) {
  if (p.m > 16) return "a decode GEMV: m <= 16 (one m16 tile of tokens); cuda_fragment_lop3 takes larger m";
  if (!groups_fit(1, p))
    return "k / group = " + std::to_string(p.groups()) + " groups: a block's scales and zero points (32 bytes a group each, at least) must fit in " +
           std::to_string(kMostGroupBytes / 1024) + " KiB of shared memory each";
  return fits_int(p);
}

template <int Strips> KernelGroup kernels_of(auto rows) {
  return {for_halves([](auto e) { return KL_KERNEL(w4a16_decode<decltype(e), decltype(rows)::value, Strips>); }),
          {"lop3.b32", "cp.async.cg.shared.global", "mma.sync.aligned.m16n8k16.row.col.f32", "bar.warp.sync", "ld.global.nc.u32"},
          {"LOP3.LUT", "LDGSTS.E.BYPASS.128", "HMMA.16816.F32", "HFMA2", "LDG.E.CONSTANT"}};
}
template <int Strips> std::vector<KernelGroup> kernels() {
  return {kernels_of<Strips>(std::integral_constant<int, 8>{}), kernels_of<Strips>(std::integral_constant<int, 16>{})};
}
std::vector<KernelGroup> widest_kernels() {
  std::vector<KernelGroup> k = kernels<2>();
  for (const KernelGroup& g : kernels<1>()) k.push_back(g);
  k.push_back(kernels_of<4>(std::integral_constant<int, 16>{}));  // m > 8 only
  return k;
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<W4A16Params> r{
      .op = "gemm_w4a16",
      .name = "cuda_decode_gemv",
      .note = "decode (m <= 16): a block per 16, 32 or 64 columns, its 16 warps splitting k and each streaming its chunks' "
              "packed words through a private cp.async ring (no block barrier in the loop), A's fragments "
              "read from L1/L2, the partial sums added once in shared memory: no split-K kernel; the block's scales "
              "copied once; v03's LOP3 dequantization and mma.sync",
      .supports = supports,
      .configs = {{.name = "16warps_64|32|16cols",
                   .threads = kDecodeThreads,
                   .dynamic_smem = kRingBytes<2>,  // plus the block's scales (32 bytes a group and strip) and zeros
                   .kernels = widest_kernels(),
                   .run = launch_widest},
                  {.name = "16warps_16cols_6stages",
                   .threads = kDecodeThreads,
                   .dynamic_smem = kRingBytes<1>,
                   .kernels = kernels<1>(),
                   .run = launch_strips<1>},
                  {.name = "16warps_64cols_3stages",
                   .threads = kDecodeThreads,
                   .dynamic_smem = kRingBytes<4>,
                   .kernels = kernels<4>(),
                   .run = launch_strips<4>,
                   .supports = [](const W4A16Params& p) -> Reason {
                     if (p.n % 64 != 0) return "n = " + std::to_string(p.n) + ": four n16 strips a block need n a multiple of 64";
                     if (!groups_fit(4, p)) return "k / group = " + std::to_string(p.groups()) + ": the scales of 64 columns pass 32 KiB";
                     return {};
                   }}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
