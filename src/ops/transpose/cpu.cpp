// CPU rungs of transpose.
//   cpu_naive: reads rows, writes columns: every store to y lands on a different cache line.
//   cpu_tiled: square tiles small enough that the tile of x and of y both stay in L1, so each
//              cache line is filled once and written whole; tiles spread over cores.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/transpose/transpose.h"

namespace kl {

namespace {
// Storage is moved as raw elements of this many bytes: a transpose never converts.
template <class E> void naive(const Problem& p, const Args& a) {
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y[j * rows + i] = x[i * cols + j];
}

template <class E> void tiled(const Problem& p, const Args& a) {
  constexpr int64_t T = 64 / sizeof(E) * 2;  // two cache lines of elements per tile row
  const int64_t rows = p.dim("rows"), cols = p.dim("cols");
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  const int64_t tr = (rows + T - 1) / T, tc = (cols + T - 1) / T;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t bi = 0; bi < tr; ++bi)
    for (int64_t bj = 0; bj < tc; ++bj) {
      const int64_t i0 = bi * T, j0 = bj * T;
      const int64_t i1 = std::min(rows, i0 + T), j1 = std::min(cols, j0 + T);
      for (int64_t j = j0; j < j1; ++j)
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) y[j * rows + i] = x[i * cols + j];
    }
}

template <template <class> class Kernel> void by_size(const Problem& p, const Args& a) {
  switch (dtype_bits(p.dtype)) {
    case 32: Kernel<uint32_t>{}(p, a); return;
    case 16: Kernel<uint16_t>{}(p, a); return;
    default: Kernel<uint8_t>{}(p, a); return;
  }
}
template <class E> struct Naive { void operator()(const Problem& p, const Args& a) { naive<E>(p, a); } };
template <class E> struct Tiled { void operator()(const Problem& p, const Args& a) { tiled<E>(p, a); } };
}  // namespace

std::vector<Variant> transpose_cpu_variants() {
  Variant n;
  n.name = "cpu_naive";
  n.note = "reads x along rows and writes y down columns: every store touches a new cache line, one thread";
  n.run = by_size<Naive>;
  Variant t;
  t.name = "cpu_tiled";
  t.note = "square tiles whose x and y halves both fit in L1, so every cache line is filled once and written whole; all cores";
  t.run = by_size<Tiled>;
  return {n, t};
}

}  // namespace kl
