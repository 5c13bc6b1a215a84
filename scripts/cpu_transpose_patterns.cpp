// Where the tiled transpose's time goes (README, "Results on this machine's CPU"): 16384 x 8192
// fp32 in and out (512 MiB each, huge pages asked), every store streamed, the 64 x 64 tiles split
// over the threads as cpu_tiled splits them, each variant run in turn and its median printed:
//   copy:        x to y in address order
//   tile-order:  64-byte pieces moved as they are, no shuffles: x read in address order or in the
//                tile's order (64 rows, 256 bytes each, the next tile prefetched into L2), y written
//                in address order or in the tile's (64 rows of y, 256 bytes each)
//   transpose:   the tile order both ways with the 16 x 16 register transposes (cpu_tiled's loop)
// Build and run (AVX-512; -O3: at -O2 GCC keeps the 16 registers of a block in memory):
//   g++ -O3 -march=x86-64-v4 -fopenmp scripts/cpu_transpose_patterns.cpp -o /tmp/tp && OMP_NUM_THREADS=2 /tmp/tp
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

constexpr long R = 16384, C = 8192, T = 64;  // x is R x C, y is C x R, tiles T x T
float* alloc() {
  void* p = aligned_alloc(2 << 20, R * C * 4);
  madvise(p, R * C * 4, MADV_HUGEPAGE);
  return static_cast<float*>(p);
}

// 16 rows of x (stride ldx) to 16 rows of y (stride ldy) through four rounds of shuffles.
inline void transpose16(const float* x, long ldx, float* y, long ldy) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(x + i * ldx);
  for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  const auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k)
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88), t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xDD);
  for (int k = 0; k < 8; ++k) r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88), r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
  for (int k = 0; k < 16; ++k) _mm512_stream_ps(y + k * ldy, r[k]);
}

// Each tile's 256 pieces of 64 bytes: piece (a, b, k) is row a + k, columns b..b+15 of the tile.
template <bool kSeqRead, bool kSeqWrite, bool kTranspose> void tiles(const float* x, float* y) {
#pragma omp parallel
  {
#pragma omp for schedule(static) collapse(2)
    for (long bi = 0; bi < R / T; ++bi)
      for (long bj = 0; bj < C / T; ++bj) {
        const long i0 = bi * T, j0 = bj * T, tile = bi * (C / T) + bj;
        const float* next = j0 + 2 * T <= C ? x + i0 * C + j0 + T : nullptr;
        long line = 0;
        for (long a = 0; a < T; a += 16)
          for (long b = 0; b < T; b += 16) {
            for (int k = 0; !kSeqRead && next && k < 16; ++k, ++line) _mm_prefetch(reinterpret_cast<const char*>(next + line / 4 * C + line % 4 * 16), _MM_HINT_T1);
            if (kTranspose) {
              transpose16(x + (i0 + a) * C + j0 + b, C, y + (j0 + b) * R + i0 + a, R);
              continue;
            }
            for (long k = 0; k < 16; ++k) {
              const long piece = ((a / 16) * (T / 16) + b / 16) * 16 + k;
              const float* from = kSeqRead ? x + tile * T * T + piece * 16 : x + (i0 + a + k) * C + j0 + b;
              float* to = kSeqWrite ? y + tile * T * T + piece * 16 : y + (j0 + b + k) * R + i0 + a;
              _mm512_stream_ps(to, _mm512_loadu_ps(from));
            }
          }
      }
    _mm_sfence();
  }
}

int main() {
  float *x = alloc(), *y = alloc();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < R * C; ++i) x[i] = static_cast<float>(i), y[i] = 0;
  const std::vector<std::pair<const char*, std::function<void()>>> variants = {
      {"copy", [&] {
#pragma omp parallel for schedule(static)
         for (long i = 0; i < R * C; i += 16) _mm512_stream_ps(y + i, _mm512_load_ps(x + i));
       }},
      {"address-order read and write", [&] { tiles<true, true, false>(x, y); }},
      {"address-order read, tile-order write", [&] { tiles<true, false, false>(x, y); }},
      {"tile-order read, address-order write", [&] { tiles<false, true, false>(x, y); }},
      {"tile-order read and write", [&] { tiles<false, false, false>(x, y); }},
      {"transpose (cpu_tiled's loop)", [&] { tiles<false, false, true>(x, y); }},
  };
  constexpr int kRuns = 7;
  std::vector<std::vector<double>> ms(variants.size());
  for (int r = 0; r < kRuns; ++r)
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      variants[v].second();
      ms[v].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  for (long i = 0; i < R; i += 997)  // the last variant run is the transpose
    for (long j = 0; j < C; j += 331)
      if (y[j * R + i] != x[i * C + j]) return std::printf("wrong at x[%ld][%ld]\n", i, j), 1;
  const double bytes = 2.0 * R * C * 4;
  for (size_t v = 0; v < variants.size(); ++v) {
    std::sort(ms[v].begin(), ms[v].end());
    const double med = ms[v][kRuns / 2];
    std::printf("%-40s median %6.1f ms (%5.1f GB/s; runs %.1f-%.1f)\n", variants[v].first, med, bytes / med / 1e6, ms[v].front(), ms[v].back());
  }
}
