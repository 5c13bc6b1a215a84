// What the W4A16 CUDA rungs share: the block tiles (16 x 64 for m <= 16, where the weights are the
// whole cost; 64 x 128 otherwise), A's k64 tile in XOR-swizzled shared memory read by ldmatrix, the
// m16n8k16 product, a group's scale and zero point, split-K for grids smaller than the GPU, and
// the epilogue. A k tile of 64 lies inside one group (groups are 64 or 128), so one scale and one
// zero point per output column serve a whole tile.
//
// W is n x k, row-major: as mma's B (k x n, "col"), its rows are B's columns, so a B fragment's two
// consecutive k of column g are two consecutive weights of row g: no transpose anywhere.
#pragma once
#include <cstring>
#include <type_traits>

#include "cuda/ptx.h"
#include "ops/gemm_w4a16/gemm_w4a16.h"
#include "ops/gpu_rowwise.h"
#include "quant/w4_fragments.h"

namespace kl::KL_TARGET::w4a16 {

// Internal linkage: a kernel's host stub is local to each object, so a shared launcher must be too,
// or the linker keeps one object's copy and the others launch a stub their rung does not declare.
namespace {

using rowwise::from_f32;
using rowwise::to_f32;

struct alignas(16) Chunk {  // 16 bytes: 8 halves, 32 int4 codes or 4 packed words
  uint32_t w[4];
};

constexpr int kThreads = 128, kWarps = kThreads / 32;
constexpr int kBK = 64;                // k per tile: inside one group
constexpr int kChunksK = kBK * 2 / 16;  // 16-byte chunks per row of a 16-bit k tile: 8
constexpr int kStages = 4;
constexpr int kMaxSplits = 16;
constexpr int kMinTilesPerSplit = 4;  // a split shorter than this cannot fill its pipeline
constexpr int kBlocksPerSm = 4;       // the splits' target: enough loads in flight to cover DRAM latency
constexpr int kMostBlocksPerSm = 8;   // the most any config asks for (the workspace is sized for it)
constexpr int kMostSms = 256;         // the workspace is sized before a device is asked

template <int BM, int BN, int WarpsM> struct Tile {
  static constexpr int kBM = BM, kBN = BN, kWarpsM = WarpsM, kWarpsN = kWarps / WarpsM;
  static constexpr int kWM = BM / WarpsM, kWN = BN / kWarpsN;
  static constexpr int kMT = kWM / 16, kNS = kWN / 16;  // m16 tiles and n16 strips per warp
};
using DecodeTile = Tile<16, 64, 1>;  // m <= 16: four warps side by side, each 16 x 16
using LargeTile = Tile<64, 128, 2>;  // 2 x 2 warps, each 32 x 64

template <class T> struct Operands {
  const T* __restrict__ a;                // m x k
  const uint8_t* __restrict__ w;          // n x k int4, two per byte, low nibble first, each code ^ 8
  const uint32_t* __restrict__ packed;    // the codes in fragment order (quant/w4_fragments.h)
  const T* __restrict__ w16;              // v01: the weights dequantized into the dtype, n x k
  const T* __restrict__ scales;           // n x groups
  const uint8_t* __restrict__ zero_codes;  // gptq: int4 q_z - 8, n x groups
  const T* __restrict__ zero_floats;      // awq: z, n x groups
  T* __restrict__ d;                      // m x n
  float* __restrict__ partials;           // splits x m x n when split
  int m, n, k, group, groups;
  W4Zero zero;
  int tiles_per_split, splits;
};

// The grid of a tile: (n blocks, m blocks, splits of k), each split tiles_per_split k tiles.
struct Grid {
  int n_blocks, m_blocks, splits, tiles_per_split;
};
template <class Tl> Grid grid_of(const W4A16Params& p, int sms, int blocks_per_sm = kBlocksPerSm) {
  Grid g{int((p.n + Tl::kBN - 1) / Tl::kBN), int((p.m + Tl::kBM - 1) / Tl::kBM), 1, int(p.k / kBK)};
  const int tiles = g.tiles_per_split, blocks = g.n_blocks * g.m_blocks;
  const int most = std::min(kMaxSplits, std::max(1, tiles / kMinTilesPerSplit));
  // blocks_per_sm blocks per SM where k allows: at m = 1 each block has 3 tiles (6 KiB of int4 weights)
  // in flight. An H200 ran N = K = 4096 at 0.39 TB/s with about 1.5 blocks per SM; four took the v03
  // kernel from about 21 to 10.9 us (Little's law: bytes in flight over latency; 2.7x was predicted).
  const int want = std::min(most, (blocks_per_sm * sms + blocks - 1) / blocks);
  g.tiles_per_split = (tiles + want - 1) / want;
  g.splits = (tiles + g.tiles_per_split - 1) / g.tiles_per_split;
  return g;
}
inline bool decode_sized(const W4A16Params& p) { return p.m <= DecodeTile::kBM; }
inline Grid grid_of(const W4A16Params& p, int sms, int blocks_per_sm = kBlocksPerSm) {
  return decode_sized(p) ? grid_of<DecodeTile>(p, sms, blocks_per_sm) : grid_of<LargeTile>(p, sms, blocks_per_sm);
}
// fp32 partial sums of the splits, when there is more than one.
inline size_t partial_bytes(const W4A16Params& p) {
  const Grid g = grid_of(p, kMostSms, kMostBlocksPerSm);
  return g.splits > 1 ? size_t(g.splits) * size_t(p.m * p.n) * sizeof(float) : 0;
}

template <class T> Operands<T> operands(const W4A16Params& p, const Args& x, const Grid& g, const T* w16, float* partials) {
  return {x.in[p.kA].as<T>(),
          x.in[p.kW].as<uint8_t>(),
          x.in[p.packed_index()].as<uint32_t>(),
          w16,
          x.in[p.kScales].as<T>(),
          p.zero == W4Zero::gptq ? x.in[p.kZeros].as<uint8_t>() : nullptr,
          p.zero == W4Zero::awq ? x.in[p.kZeros].as<T>() : nullptr,
          x.out[0].as<T>(),
          partials,
          int(p.m), int(p.n), int(p.k), int(p.group), int(p.groups()), p.zero,
          g.tiles_per_split, g.splits};
}

// The bits of `from` as a To of the same size (a half2 as its 32-bit register, and back).
template <class To, class From> __device__ __forceinline__ To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(static_cast<void*>(&to), &from, sizeof(to));
  return to;
}

// ---- a group's dequantization: w = (code - zc) * s - z, one rounding -------------------------
// none: zc 8, z 0; gptq: zc = q_z, z 0; awq: zc 0, z the float zero. The product (code - zc) * s
// is exact in fp32 and in a 16-bit fma, so every form rounds once, as dtype_baseline does.
template <class T> struct Group {
  T s, z;
  int zc;
};
__device__ __forceinline__ int nibble(const uint8_t* __restrict__ p, int64_t i) { return p[i >> 1] >> (4 * (i & 1)) & 0xf; }

template <class T> __device__ __forceinline__ Group<T> group_of(const Operands<T>& o, int col, int gi) {
  if (col >= o.n) return {from_f32<T>(0.0f), from_f32<T>(0.0f), 8};
  const int64_t t = static_cast<int64_t>(col) * o.groups + gi;
  if (o.zero == W4Zero::gptq) return {o.scales[t], from_f32<T>(0.0f), nibble(o.zero_codes, t) ^ 8};
  if (o.zero == W4Zero::awq) return {o.scales[t], o.zero_floats[t], 0};
  return {o.scales[t], from_f32<T>(0.0f), 8};
}

// One weight in fp32 arithmetic (v01, v02): an I2F, an FFMA and the conversion to the dtype.
template <class T> __device__ __forceinline__ T dequant_one(int code, const Group<T>& g) {
  return from_f32<T>(fmaf(static_cast<float>(code - g.zc), to_f32(g.s), -to_f32(g.z)));
}

// Eight consecutive codes of a row (one 32-bit word of W) as one chunk of the dtype.
template <class T> __device__ __forceinline__ Chunk dequant_word(uint32_t word, const Group<T>& g) {
  T e[8];
  KL_UNROLL
  for (int i = 0; i < 8; ++i) e[i] = dequant_one<T>(static_cast<int>(word >> (4 * i) & 0xf) ^ 8, g);
  Chunk c;
  memcpy(&c, e, sizeof(c));
  return c;
}

// ---- the fragment-order words dequantized in registers (v03, v04) ---------------------------
// The 4 bytes around element i of a scale or zero array, as cp.async copies them (4-byte aligned:
// the arrays' element counts are even, so the word never passes the end), and i's offset in them.
template <class E> __device__ __forceinline__ const void* word_of(const E* base, int64_t i) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base + i) & ~uintptr_t{3});
}
template <class E> __device__ __forceinline__ int byte_in_word(const E* base, int64_t i) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(base + i) & 3);
}

// A group's constants as pairs of the dtype: magic + zc (to subtract), s, and -z.
struct PairGroup {
  uint32_t sub, scale, neg_zero;
};
// w = (code - zc) * s - z from the bits of s and z (16 bits each) and the integer zc: zc 8 when
// symmetric, GPTQ's code q_z, or 0 with AWQ's float z.
template <class T> __device__ __forceinline__ PairGroup pair_group_of(uint32_t s, uint32_t zc, uint32_t z) {
  return {quant::w4_zero_pair<std::is_same_v<T, __nv_bfloat16>>(zc), s | s << 16, (z | z << 16) ^ 0x80008000u};
}
// Column c's (col's) constants from a stage's words (kColumns scale words, then kColumns zero
// words; GPTQ's q_z is a nibble stored ^ 8).
template <int kColumns, class T>
__device__ __forceinline__ PairGroup pair_group(const uint32_t* words, int c, const Operands<T>& o, int col, int gi) {
  const int64_t t = static_cast<int64_t>(min(col, o.n - 1)) * o.groups + gi;
  const uint32_t s = words[c] >> (8 * byte_in_word(o.scales, t)) & 0xffffu;
  uint32_t zc = 8, z = 0;
  if (o.zero == W4Zero::gptq) zc = (words[kColumns + c] >> (8 * byte_in_word(o.zero_codes, t >> 1) + 4 * (t & 1)) & 0xfu) ^ 8u;
  if (o.zero == W4Zero::awq) zc = 0, z = words[kColumns + c] >> (8 * byte_in_word(o.zero_floats, t)) & 0xffffu;
  return pair_group_of<T>(s, zc, z);
}

// Register r of a packed word, dequantized: two weights (code - zc) * s - z of the dtype.
template <class T> __device__ __forceinline__ uint32_t dequant_register(uint32_t word, int r, const PairGroup& g) {
  using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  // quant::w4_biased_pair's expression, as the one instruction it is meant to be.
  const uint32_t biased = kl::ptx::lop3<0xEA>(word >> (4 * r), 0x000f000fu, quant::kW4Magic<kBf16>);
  const Pair q = __hsub2(bits_as<Pair>(biased), bits_as<Pair>(g.sub));  // exact: small integers
  return bits_as<uint32_t>(__hfma2(q, bits_as<Pair>(g.scale), bits_as<Pair>(g.neg_zero)));
}

// ---- tiles in shared memory -------------------------------------------------------------------
// A 16-bit k64 tile row is 128 bytes: chunk c of row r at c ^ (r & 7), so the 8 rows of an
// ldmatrix phase, and the 8 chunks of a store phase, fall in 8 different 16-byte bank groups.
__device__ __forceinline__ int swz(int r, int c) { return c ^ (r & 7); }

// f(e) for e = 0..N-1, dealt to the block's threads: a trip count the compiler knows, so the loop
// unrolls into straight-line code (a loop from threadIdx.x compiled into a generic loop with
// remainder branches, most of v03's instructions per k tile on an H200).
template <int N, class F> __device__ __forceinline__ void for_each_chunk(const F& f) {
  static_assert(N % kThreads == 0 || N < kThreads, "a tile's chunks are dealt evenly to the block");
  KL_UNROLL
  for (int i = 0; i < (N + kThreads - 1) / kThreads; ++i)
    if (N % kThreads == 0 || threadIdx.x + i * kThreads < N) f(static_cast<int>(threadIdx.x) + i * kThreads);
}

// A(row0.., l0..l0+64) into tile [kBM][8], rows below m only: zero_rows_past_m zeroed the others once.
template <class Tl, class T>
__device__ __forceinline__ void load_a(Chunk* tile, const Operands<T>& o, int row0, int l0) {
  for_each_chunk<Tl::kBM * kChunksK>([&](int e) {
    const int r = e / kChunksK, c = e % kChunksK;
    if (row0 + r < o.m) kl::ptx::cp_async_16(tile + r * kChunksK + swz(r, c), o.a + static_cast<int64_t>(row0 + r) * o.k + l0 + 8 * c);
  });
}

// The rows past m of every stage's A tile, zeroed before the pipeline: cp.async never writes them,
// so at m = 1 the 15 padding rows cost one store each per block instead of one per k tile.
template <class Tl, class T, class ATile>
__device__ __forceinline__ void zero_rows_past_m(const ATile& a_tile, const Operands<T>& o, int row0, int stages) {
  if (row0 + Tl::kBM <= o.m) return;
  for (int s = 0; s < stages; ++s)
    for_each_chunk<Tl::kBM * kChunksK>([&](int e) {
      if (row0 + e / kChunksK >= o.m) a_tile(s)[e] = Chunk{};
    });
}

// mma's A fragment of rows r0..r0+15, k kk..kk+15 of the tile (kk a multiple of 16).
__device__ __forceinline__ void a_fragment(uint32_t (&a)[4], const Chunk* tile, int r0, int kk) {
  const int lane = threadIdx.x % 32;
  // Lanes 0-7 rows 0-7 and 8-15 rows 8-15 of k 0-7, lanes 16-31 the same rows of k 8-15: a0..a3.
  const int r = r0 + lane % 8 + 8 * ((lane / 8) % 2), c = kk / 8 + lane / 16;
  kl::ptx::ldmatrix_x4(a, tile + r * kChunksK + swz(r, c));
}

// The B fragments of the n8 tiles n0..n0+7 and n0+8..n0+15, k kk..kk+15, from a 16-bit weight
// tile [BN][8] (rows = output columns): b[h][0] k 0-7, b[h][1] k 8-15 of n8 tile h.
__device__ __forceinline__ void b_fragments(uint32_t (&b)[2][2], const Chunk* tile, int n0, int kk) {
  const int lane = threadIdx.x % 32;
  const int r = n0 + lane % 8 + 8 * (lane / 16), c = kk / 8 + (lane / 8) % 2;
  uint32_t x[4];
  kl::ptx::ldmatrix_x4(x, tile + r * kChunksK + swz(r, c));
  b[0][0] = x[0], b[0][1] = x[1], b[1][0] = x[2], b[1][1] = x[3];
}

template <class T> __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) kl::ptx::mma_m16n8k16_f16_f32(d, a, b, d);
  else kl::ptx::mma_m16n8k16_bf16_f32(d, a, b, d);
}

// The warp's place in the block tile.
template <class Tl> __device__ __forceinline__ int warp_row() { return (threadIdx.x / 32) / Tl::kWarpsN * Tl::kWM; }
template <class Tl> __device__ __forceinline__ int warp_col() { return (threadIdx.x / 32) % Tl::kWarpsN * Tl::kWN; }

template <class Tl> using Acc = float[Tl::kMT][2 * Tl::kNS][4];

// One k16 step of the warp tile from a 16-bit weight tile (v01, v02).
template <class Tl, class T>
__device__ __forceinline__ void warp_step_16bit(Acc<Tl>& acc, const Chunk* a_tile, const Chunk* w_tile, int kk) {
  uint32_t a[Tl::kMT][4];
  KL_UNROLL
  for (int i = 0; i < Tl::kMT; ++i) a_fragment(a[i], a_tile, warp_row<Tl>() + 16 * i, kk);
  KL_UNROLL
  for (int s = 0; s < Tl::kNS; ++s) {
    uint32_t b[2][2];
    b_fragments(b, w_tile, warp_col<Tl>() + 16 * s, kk);
    KL_UNROLL
    for (int i = 0; i < Tl::kMT; ++i) {
      mma<T>(acc[i][2 * s], a[i], b[0]);
      mma<T>(acc[i][2 * s + 1], a[i], b[1]);
    }
  }
}

// The k tiles [t0, t1) through a ring of Stages shared-memory stages: load(stage, kt) issues tile
// kt's cp.asyncs, compute(stage, kt) uses it; tile kt + Stages - 1 is in flight while tile kt is
// computed. One commit group per tile, empty ones included, so "all but the newest Stages - 2
// groups landed" always means "tile kt landed".
// `barrier` is the block's (__syncthreads) where the block shares the stages, a warp's
// (__syncwarp) where each warp has its own ring (v04); `started` runs once the first Stages - 1
// tiles are in flight.
struct BlockBarrier {
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
};
struct Nothing {
  __device__ __forceinline__ void operator()() const {}
};
template <int Stages = kStages, class Load, class Compute, class Barrier = BlockBarrier, class Started = Nothing>
__device__ __forceinline__ void pipeline(int t0, int t1, const Load& load, const Compute& compute, const Barrier& barrier = {},
                                         const Started& started = {}) {
  KL_UNROLL
  for (int s = 0; s < Stages - 1; ++s) {
    if (t0 + s < t1) load(s, t0 + s);
    kl::ptx::cp_async_commit();
  }
  started();
  for (int kt = t0; kt < t1; ++kt) {
    kl::ptx::cp_async_wait<Stages - 2>();
    barrier();  // tile kt is in for every thread, and the stage computed before it is free
    const int next = kt + Stages - 1;
    if (next < t1) load((next - t0) % Stages, next);
    kl::ptx::cp_async_commit();
    compute((kt - t0) % Stages, kt);
  }
}

// ---- the grid's k range and the epilogue --------------------------------------------------------
__device__ __forceinline__ int first_tile(const int tiles_per_split) { return static_cast<int>(blockIdx.z) * tiles_per_split; }
template <class T> __device__ __forceinline__ int end_tile(const Operands<T>& o) {
  return min(first_tile(o.tiles_per_split) + o.tiles_per_split, o.k / kBK);
}

// Element (g + 8h, 2t + e) of n8 tile j, m16 tile i: D rounded once, or this split's fp32 partial.
template <class Tl, class T> __device__ __forceinline__ void store_tile(const Operands<T>& o, const Acc<Tl>& acc) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * Tl::kBM + warp_row<Tl>(), col0 = blockIdx.x * Tl::kBN + warp_col<Tl>();
  KL_UNROLL
  for (int i = 0; i < Tl::kMT; ++i)
    KL_UNROLL
    for (int j = 0; j < 2 * Tl::kNS; ++j)
      KL_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + 16 * i + g + 8 * h, c = col0 + 8 * j + 2 * t;  // n is a multiple of 16: c + 1 < n too
        if (r >= o.m || c >= o.n) continue;
        const int64_t at = static_cast<int64_t>(r) * o.n + c;
        if (o.splits > 1) {
          *reinterpret_cast<float2*>(o.partials + blockIdx.z * static_cast<int64_t>(o.m) * o.n + at) =
              make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        } else if (reinterpret_cast<uintptr_t>(o.d) % 4 == 0) {  // c is even: the pair is aligned too
          struct alignas(4) Pair {
            T x, y;
          };
          *reinterpret_cast<Pair*>(o.d + at) = Pair{from_f32<T>(acc[i][j][2 * h]), from_f32<T>(acc[i][j][2 * h + 1])};
        } else {
          o.d[at] = from_f32<T>(acc[i][j][2 * h]);
          o.d[at + 1] = from_f32<T>(acc[i][j][2 * h + 1]);
        }
      }
}

// D = the sum of the splits' partials, rounded once.
template <class T> __global__ void __launch_bounds__(256) w4a16_sum_splits(Operands<T> o) {
  const int64_t size = static_cast<int64_t>(o.m) * o.n;
  for (int64_t i = blockIdx.x * int64_t{256} + threadIdx.x; i < size; i += int64_t{256} * gridDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < o.splits; ++s) sum += o.partials[s * size + i];
    o.d[i] = from_f32<T>(sum);
  }
}
template <class T> void sum_splits(const Operands<T>& o, cudaStream_t stream) {
  if (o.splits == 1) return;
  const int64_t blocks = std::min<int64_t>((int64_t(o.m) * o.n + 255) / 256, 4096);
  KL_LAUNCH(w4a16_sum_splits<T>, dim3(unsigned(blocks)), 256, 0, stream, o);
}

// Calls f(__half{}) or f(__nv_bfloat16{}) for the problem's dtype.
template <class F> void with_half(DType t, F&& f) {
  if (t == DType::f16) f(__half{});
  else f(__nv_bfloat16{});
}
template <class F> std::vector<KernelRef> for_halves(F&& f) { return {f(__half{}), f(__nv_bfloat16{})}; }
// f(T{}, Tile{}) for the problem's dtype and its block tile (16 x 64 up to m 16, 64 x 128 above).
template <class F> void with_tile(const W4A16Params& p, F&& f) {
  with_half(p.dtype, [&](auto e) {
    if (decode_sized(p)) f(e, DecodeTile{});
    else f(e, LargeTile{});
  });
}

inline Reason fits_int(const W4A16Params& p) {
  if (p.m * p.k > INT32_MAX || p.n * p.k > INT32_MAX || p.m * p.n > INT32_MAX) return "m*k, n*k and m*n must fit in 32 bits";
  return {};
}

}  // namespace

}  // namespace kl::KL_TARGET::w4a16
