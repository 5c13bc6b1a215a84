// What a norm's two passes cost against bias_gelu's one, with the arithmetic taken out (README,
// "Results on this machine's CPU"): 16384 x 8192 fp32 in and out (512 MiB each, huge pages asked),
// rows split over the threads as the rungs split them, every store streamed, each variant run six
// times in turn and its median printed:
//   one pass:  y = 2 x, the next row's lines prefetched as the row goes (bias_gelu's structure)
//   two pass:  a sum of squares over the row, then y = x r g streamed out (rmsnorm's), the next
//              row prefetched in the second pass, in none, or in the first.
// Build and run (AVX-512):  g++ -O2 -march=x86-64-v4 -fopenmp scripts/cpu_pass_structure.cpp -o /tmp/passes && OMP_NUM_THREADS=2 /tmp/passes
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
const long R = 16384, C = 8192;
float* alloc() { void* p = aligned_alloc(2 << 20, R * C * 4); madvise(p, R * C * 4, MADV_HUGEPAGE); memset(p, 0, R * C * 4); return (float*)p; }
static inline void pf(const float* p) { __builtin_prefetch(p, 0, 2); }
template <int mode> void run(const float* x, float* y, const float* g) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < R; ++i) {
    const float* xr = x + i * C; float* yr = y + i * C; const float* nx = i + 1 < R ? xr + C : nullptr;
    if (mode == 0) {  // one pass, next row prefetched as we go
      for (long j = 0; j < C; j += 16) { if (nx) pf(nx + j); _mm512_stream_ps(yr + j, _mm512_mul_ps(_mm512_load_ps(xr + j), _mm512_set1_ps(2.f))); }
    } else {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (long j = 0; j < C; j += 64) {
        if (mode == 3 && nx) { pf(nx + j); pf(nx + j + 16); pf(nx + j + 32); pf(nx + j + 48); }
        __m512 v0 = _mm512_load_ps(xr + j), v1 = _mm512_load_ps(xr + j + 16), v2 = _mm512_load_ps(xr + j + 32), v3 = _mm512_load_ps(xr + j + 48);
        a0 = _mm512_fmadd_ps(v0, v0, a0); a1 = _mm512_fmadd_ps(v1, v1, a1); a2 = _mm512_fmadd_ps(v2, v2, a2); a3 = _mm512_fmadd_ps(v3, v3, a3);
      }
      const __m512 r = _mm512_set1_ps(1.0f / (1.f + _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)))));
      for (long j = 0; j < C; j += 16) {
        if (mode == 1 && nx) pf(nx + j);
        _mm512_stream_ps(yr + j, _mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(xr + j), r), _mm512_load_ps(g + j)));
      }
    }
  }
  _mm_sfence();
}
int main() {
  float *x = alloc(), *y = alloc(); std::vector<float> gv(C, 1.0f);
  for (long i = 0; i < R * C; ++i) x[i] = (i % 7) * 0.1f;
  const char* names[4] = {"one pass + prefetch", "two pass, prefetch in pass 2", "two pass, no prefetch", "two pass, prefetch in pass 1"};
  std::vector<double> t[4];
  for (int rep = 0; rep < 6; ++rep)
    for (int m = 0; m < 4; ++m) {
      auto t0 = std::chrono::steady_clock::now();
      if (m == 0) run<0>(x, y, gv.data()); else if (m == 1) run<1>(x, y, gv.data()); else if (m == 2) run<2>(x, y, gv.data()); else run<3>(x, y, gv.data());
      t[m].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
    }
  for (int m = 0; m < 4; ++m) { std::sort(t[m].begin(), t[m].end()); printf("%-32s median %.1f ms (min %.1f, max %.1f)\n", names[m], t[m][3], t[m][0], t[m][5]); }
}
