// transpose v05: every global access is a 16-byte vector (4 fp32 or 8 16-bit elements). A thread
// loads a VxV micro-tile as V row vectors, transposes it in registers and writes V vectors to
// shared memory; the tile is read back a vector per thread and stored as rows of y: 4x (fp32)
// or 8x (16-bit) fewer global load/store instructions than v04. Shared accesses are 16-byte and
// conflict-free (XOR-swizzled 16-byte chunks). Edges and rows not 16-byte aligned: element-wise.
#include <cstdint>

#include "ops/gpu_rowwise.h"  // KL_UNROLL
#include "ops/transpose/cuda/elements.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using transpose_raw::Word;
constexpr int kSide = 16;  // a 16x16-thread block, each thread a VxV micro-tile: a (16V)x(16V) tile

// Element c of a 16-byte vector held as four 32-bit words.
template <int B> __device__ __forceinline__ uint32_t element(const uint32_t (&w)[4], int c) {
  if constexpr (B == 4) return w[c];
  else return (w[c / 2] >> (16 * (c % 2))) & 0xffffu;
}

// 16-byte global accesses. A GPU faults on one that is not 16-byte aligned; the host does not,
// so the simulator build checks, to catch what the hardware would.
__device__ __forceinline__ void check16([[maybe_unused]] const void* p) {
#ifdef KERNELAB_SIM
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) kl::sim::detail::fault("misaligned 16-byte access", kl::sim::Site::current());
#endif
}

// Tile row r holds 16 chunks of V elements; chunk q sits at slot q ^ swizzle(r), so the 8
// threads of a quarter-warp (one 16-byte access each) hit 8 different groups of 4 banks.
template <int V> __device__ __forceinline__ int swizzle(int r) { return (r / V) % 8; }

template <int B>
__global__ void __launch_bounds__(kSide * kSide)
    transpose_vectorized(const Word<B>* __restrict__ x, Word<B>* __restrict__ y, int rows, int cols) {
  using E = Word<B>;
  constexpr int V = 16 / B, kTile = kSide * V;  // elements per vector; tile side (64 fp32, 128 16-bit)
  KL_SHARED(uint4, tile, [kTile][kSide]);       // row c: column j0 + c of x (row j0 + c of y), 16 chunks
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const bool x16 = reinterpret_cast<uintptr_t>(x) % 16 == 0, y16 = reinterpret_cast<uintptr_t>(y) % 16 == 0;

  // 1. The micro-tile: rows i0 + V*ty + r of x, columns j0 + V*tx .. + V-1, as 4 words per row.
  uint32_t m[V][4];
  const int j = j0 + V * tx;
  KL_UNROLL
  for (int r = 0; r < V; ++r) {
    const int i = i0 + V * ty + r;
    const int64_t at = static_cast<int64_t>(i) * cols + j;
    if (i < rows && j + V <= cols && x16 && at % V == 0) {
      check16(x + at);
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(x + at));
      m[r][0] = q.x, m[r][1] = q.y, m[r][2] = q.z, m[r][3] = q.w;
    } else {
      KL_UNROLL
      for (int w = 0; w < 4; ++w) m[r][w] = 0;
      KL_UNROLL
      for (int c = 0; c < V; ++c)
        if (i < rows && j + c < cols) m[r][c * B / 4] |= static_cast<uint32_t>(x[at + c]) << (8 * B * c % 32);
    }
  }
  // 2. Transposed in registers: tile row V*tx + c gets, as chunk ty, column c of the micro-tile.
  KL_UNROLL
  for (int c = 0; c < V; ++c) {
    uint32_t w[4];
    KL_UNROLL
    for (int k = 0; k < 4; ++k) {
      if constexpr (B == 4) w[k] = m[k][c];
      else w[k] = element<2>(m[2 * k], c) | element<2>(m[2 * k + 1], c) << 16;
    }
    const int r = V * tx + c;
    tile[r][ty ^ swizzle<V>(r)] = make_uint4(w[0], w[1], w[2], w[3]);
  }
  __syncthreads();
  // 3. Rows of y: row j0 + r, columns i0 + V*tx .. + V-1, one vector per thread and row.
  for (int r = ty; r < kTile && j0 + r < cols; r += kSide) {
    const int i = i0 + V * tx;
    const uint4 q = tile[r][tx ^ swizzle<V>(r)];
    const int64_t at = static_cast<int64_t>(j0 + r) * rows + i;
    if (i + V <= rows && y16 && at % V == 0) {
      check16(y + at);
      *reinterpret_cast<uint4*>(y + at) = q;
    } else {
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
      KL_UNROLL
      for (int c = 0; c < V; ++c)
        if (i + c < rows) y[at + c] = static_cast<E>(element<B>(w, c));
    }
  }
}

template <int B> void run(const TransposeParams& p, const Args& a) {
  using E = Word<B>;
  constexpr int kTile = kSide * 16 / B;
  const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols);
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  KL_LAUNCH(transpose_vectorized<B>, grid, dim3(kSide * kSide), 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), rows, cols);
}

void launch(const TransposeParams& p, const Args& a) {
  transpose_raw::with_bytes(p, [&](auto b) { run<decltype(b)::value>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<TransposeParams> r{.op = "transpose",
                          .name = "cuda_vectorized",
                          .note = "16-byte global loads and stores (4 fp32 or 8 16-bit elements), micro-tiles transposed in registers, swizzled 16-byte shared accesses: 4-8x fewer memory instructions",
                          .configs = {{.name = "16x16_threads",
                                       .threads = kSide * kSide,
                                       .kernels = {{transpose_raw::for_sizes([](auto b) { return KL_KERNEL(transpose_vectorized<decltype(b)::value>); }),
                                                    {"ld.global.nc.v4", "st.global.v4", "st.shared.v4", "ld.shared.v4", "bar.sync"},
                                                    {"LDG.E.128.CONSTANT", "STG.E.128", "STS.128", "LDS.128", "BAR.SYNC"}}},
                                       .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
