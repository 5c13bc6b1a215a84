// CPU rungs of transpose.
//   cpu_naive: reads rows, writes columns: every store to y lands on a different cache line.
//   cpu_tiled: 32x32 tiles: whole lines of x read into an L1 tile, transposed there, and whole
//              lines of y written out (fp32 with streaming stores); tiles spread over cores.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/transpose/transpose.h"

namespace kl {

namespace {
// Storage is moved as raw elements of this many bytes: a transpose never converts.
template <class E> void naive(const TransposeParams& p, const Args& a) {
  const int64_t rows = p.rows, cols = p.cols;
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y[j * rows + i] = x[i * cols + j];
}

template <class E> void tiled(const TransposeParams& p, const Args& a) {
  constexpr int64_t TR = 32, TC = 32;  // both the x tile and the y tile fit in L1, in whole lines
  const int64_t rows = p.rows, cols = p.cols;
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  const int64_t tr = (rows + TR - 1) / TR, tc = (cols + TC - 1) / TC;
#pragma omp parallel
  {
    alignas(64) E tile[TR * TC];  // tile[jj][ii] = x[i0 + ii][j0 + jj]
#pragma omp for schedule(static) collapse(2)
    for (int64_t bi = 0; bi < tr; ++bi)  // along a band of x rows: T sequential read streams
      for (int64_t bj = 0; bj < tc; ++bj) {
        const int64_t i0 = bi * TR, j0 = bj * TC;
        const int64_t ni = std::min(TR, rows - i0), nj = std::min(TC, cols - j0);
        for (int64_t ii = 0; ii < ni; ++ii) {  // whole lines of x in
          const E* xr = x + (i0 + ii) * cols + j0;
          for (int64_t jj = 0; jj < nj; ++jj) tile[jj * TR + ii] = xr[jj];
        }
        for (int64_t jj = 0; jj < nj; ++jj) {  // whole lines of y out
          E* yr = y + (j0 + jj) * rows + i0;
          if constexpr (sizeof(E) == sizeof(float))
            cpu::stream_row(reinterpret_cast<float*>(yr), reinterpret_cast<const float*>(tile + jj * TR), ni);
          else
            std::memcpy(yr, tile + jj * TR, static_cast<size_t>(ni) * sizeof(E));
        }
      }
    cpu::stream_fence();
  }
}

// The storage element of x's dtype, by its size (a transpose never converts).
template <class F> void by_size(const TransposeParams& p, F&& f) {
  switch (dtype_bits(p.x)) {
    case 32: f(uint32_t{}); return;
    case 16: f(uint16_t{}); return;
    default: f(uint8_t{}); return;
  }
}
void run_naive(const TransposeParams& p, const Args& a) { by_size(p, [&](auto e) { naive<decltype(e)>(p, a); }); }
void run_tiled(const TransposeParams& p, const Args& a) { by_size(p, [&](auto e) { tiled<decltype(e)>(p, a); }); }
}  // namespace

std::vector<Variant> transpose_cpu_variants() {
  return {cpu_variant("transpose", "cpu_naive", "reads x along rows and writes y down columns: every store touches a new cache line, one thread", run_naive),
          cpu_variant("transpose", "cpu_tiled",
                      "32x32 tiles transposed in L1 so x is read and y written in whole cache lines (fp32 y streamed); all cores", run_tiled)};
}

}  // namespace kl
