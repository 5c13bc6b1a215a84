// CPU rungs of transpose.
//   cpu_naive: reads rows, writes columns: every store to y lands on a different cache line.
//   cpu_tiled: 64x64 tiles (32x32 for 1-byte elements): whole lines of x read into an L1 tile,
//              transposed there, and whole lines of y written out (fp32 with streaming stores);
//              tiles spread over cores, the next tile prefetched into L2 meanwhile. A whole tile
//              is transposed in registers instead for 4- and 2-byte elements (16x16 at a time;
//              32x32 for 2 bytes on AVX-512), streamed too.
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

#if defined(__AVX2__) && !defined(KL_CPU_AVX512)
// A 64-byte line of y from two 256-bit halves, streamed where aligned.
void store_line(void* out, __m256i lo, __m256i hi) {
  auto* p = static_cast<__m256i*>(out);
  if ((reinterpret_cast<uintptr_t>(p) & 31) == 0) {
    _mm256_stream_si256(p, lo);
    _mm256_stream_si256(p + 1, hi);
  } else {
    _mm256_storeu_si256(p, lo);
    _mm256_storeu_si256(p + 1, hi);
  }
}
#endif

#if defined(KL_CPU_AVX512)
// y's 16x16 block = x's transposed, for 4-byte elements: 16 rows of x in registers, then four
// rounds of shuffles (32-bit, 64-bit, and twice 128-bit lanes) leave register k holding column k;
// 64 shuffles for 256 elements, where the scalar tile moves each element through memory twice.
void transpose16x16(const uint32_t* x, int64_t ldx, uint32_t* y, int64_t ldy) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(x + i * ldx);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  const auto lo64 = [](__m512 u, __m512 v) { return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u), _mm512_castps_pd(v))); };
  const auto hi64 = [](__m512 u, __m512 v) { return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u), _mm512_castps_pd(v))); };
  for (int i = 0; i < 16; i += 4) {
    r[i] = lo64(t[i], t[i + 2]);
    r[i + 1] = hi64(t[i], t[i + 2]);
    r[i + 2] = lo64(t[i + 1], t[i + 3]);
    r[i + 3] = hi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
      t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xDD);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
  }
  for (int k = 0; k < 16; ++k) {
    float* out = reinterpret_cast<float*>(y + k * ldy);
    if ((reinterpret_cast<uintptr_t>(out) & 63) == 0) _mm512_stream_ps(out, r[k]);
    else _mm512_storeu_ps(out, r[k]);
  }
}
#elif defined(__AVX2__)
// x's 8x8 block of 4-byte elements transposed into r (register k = column k): 32-bit unpacks,
// 64-bit shuffles and 128-bit lane permutes, 24 shuffles for 64 elements. Inlined by force: GCC
// kept it a call, r going through the stack, and fp32 at 16384 x 8192 took 35 ms against 28.
[[gnu::always_inline]] inline void transpose8x8(const uint32_t* x, int64_t ldx, __m256* r) {
  __m256 t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(x + i * ldx));
  for (int i = 0; i < 8; i += 2) {  // t[i] = a0 b0 a1 b1 | a4 b4 a5 b5, t[i+1] = a2 b2 a3 b3 | a6 b6 a7 b7
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // r[i + k] = column k (and k + 4) of rows i..i+3
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20);
    t[k + 4] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
  }
  for (int k = 0; k < 8; ++k) r[k] = t[k];
}
// y's 16x16 block = x's transposed, as four 8x8 blocks, the two down x stored together so that
// each store to y is a whole 64-byte line (streamed where aligned).
void transpose16x16(const uint32_t* x, int64_t ldx, uint32_t* y, int64_t ldy) {
  for (int c = 0; c < 16; c += 8) {
    __m256 top[8], bottom[8];
    transpose8x8(x + c, ldx, top);
    transpose8x8(x + 8 * ldx + c, ldx, bottom);
    for (int k = 0; k < 8; ++k) store_line(y + (c + k) * ldy, _mm256_castps_si256(top[k]), _mm256_castps_si256(bottom[k]));
  }
}
#else
// SSE2: y's 16x16 block in 4x4 blocks (_MM_TRANSPOSE4_PS, 8 shuffles for 16 elements), the four
// down 4 columns of x transposed before any is stored, so that each line of y is written by four
// streamed 16-byte stores in a row (GCC keeps some of the 16 vectors in L1). Storing each block as
// it was transposed, four lines a quarter at a time, took 39-40 ms at 16384 x 8192 on 2 Zen 4
// cores, this 27.5-29 (the scalar tile: 44-45).
void transpose16x16(const uint32_t* x, int64_t ldx, uint32_t* y, int64_t ldy) {
  for (int c = 0; c < 16; c += 4) {
    __m128 col[4][4];  // col[b][k]: column c + k of rows 4b..4b+3
    for (int b = 0; b < 4; ++b) {
      __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(x + 4 * b * ldx + c));
      __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(x + (4 * b + 1) * ldx + c));
      __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(x + (4 * b + 2) * ldx + c));
      __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(x + (4 * b + 3) * ldx + c));
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      col[b][0] = r0, col[b][1] = r1, col[b][2] = r2, col[b][3] = r3;
    }
    for (int k = 0; k < 4; ++k) {
      float* out = reinterpret_cast<float*>(y + (c + k) * ldy);
      for (int b = 0; b < 4; ++b) {
        if ((reinterpret_cast<uintptr_t>(out) & 15) == 0) _mm_stream_ps(out + 4 * b, col[b][k]);
        else _mm_storeu_ps(out + 4 * b, col[b][k]);
      }
    }
  }
}
// The same for 2-byte elements: y's 16 rows by 32 columns = x's 32 rows by 16 columns, in 8x8
// blocks (16-, 32- and 64-bit unpacks, 24 for 64 elements), the four down 8 columns of x
// transposed before each line of y is written by four streamed 16-byte stores in a row.
void transpose16x16(const uint16_t* x, int64_t ldx, uint16_t* y, int64_t ldy) {
  for (int c = 0; c < 16; c += 8) {
    __m128i col[4][8];  // col[b][k]: column c + k of rows 8b..8b+7
    for (int b = 0; b < 4; ++b) {
      __m128i r[8], t[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + (8 * b + i) * ldx + c));
      for (int i = 0; i < 8; i += 2) t[i] = _mm_unpacklo_epi16(r[i], r[i + 1]), t[i + 1] = _mm_unpackhi_epi16(r[i], r[i + 1]);
      for (int i = 0; i < 8; i += 4)  // r[i + q]: columns 2q, 2q + 1 of rows i..i+3
        for (int q = 0; q < 2; ++q)
          r[i + 2 * q] = _mm_unpacklo_epi32(t[i + q], t[i + q + 2]), r[i + 2 * q + 1] = _mm_unpackhi_epi32(t[i + q], t[i + q + 2]);
      for (int q = 0; q < 4; ++q)
        col[b][2 * q] = _mm_unpacklo_epi64(r[q], r[q + 4]), col[b][2 * q + 1] = _mm_unpackhi_epi64(r[q], r[q + 4]);
    }
    for (int k = 0; k < 8; ++k) {
      auto* out = reinterpret_cast<__m128i*>(y + (c + k) * ldy);
      for (int b = 0; b < 4; ++b) {
        if ((reinterpret_cast<uintptr_t>(out) & 15) == 0) _mm_stream_si128(out + b, col[b][k]);
        else _mm_storeu_si128(out + b, col[b][k]);
      }
    }
  }
}
#endif

#if defined(__AVX2__) && !defined(KL_CPU_AVX512)
// The same for 2-byte elements in 256-bit registers (16-, 32- and 64-bit unpacks, then one 128-bit
// lane permute leave register k holding column k), two blocks down x at once so that each store
// to y is a whole 64-byte line: half-line streaming stores to 32 rows of y at a time cost 1.6x.
[[gnu::always_inline]] inline void transpose16x16(const uint16_t* x, int64_t ldx, __m256i* r) {
  __m256i t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i * ldx));
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm256_unpacklo_epi16(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi16(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm256_unpacklo_epi32(t[i], t[i + 2]);
    r[i + 1] = _mm256_unpackhi_epi32(t[i], t[i + 2]);
    r[i + 2] = _mm256_unpacklo_epi32(t[i + 1], t[i + 3]);
    r[i + 3] = _mm256_unpackhi_epi32(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k) {
      t[i + 2 * k] = _mm256_unpacklo_epi64(r[i + k], r[i + k + 4]);
      t[i + 2 * k + 1] = _mm256_unpackhi_epi64(r[i + k], r[i + k + 4]);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm256_permute2x128_si256(t[k], t[k + 8], 0x20);
    r[k + 8] = _mm256_permute2x128_si256(t[k], t[k + 8], 0x31);
  }
}
// y's 16 rows by 32 columns = x's 32 rows by 16 columns, transposed.
void transpose16x16(const uint16_t* x, int64_t ldx, uint16_t* y, int64_t ldy) {
  __m256i top[16], bottom[16];
  transpose16x16(x, ldx, top);
  transpose16x16(x + 16 * ldx, ldx, bottom);
  for (int k = 0; k < 16; ++k) store_line(y + k * ldy, top[k], bottom[k]);
}
#endif

#if defined(KL_CPU_AVX512)
// y's 32x32 block = x's transposed, for 2-byte elements: each row of x and of y one 64-byte line,
// one 512-bit load or streamed store. 16-, 32- and 64-bit unpacks leave, in register 8g + m, lane
// l, column 8l + m of rows 8g..8g+7; a 4x4 transpose of 128-bit lanes (two rounds of vshufi32x4)
// gathers each column's four lanes. 160 shuffles for 1024 elements. The 256-bit blocks, which
// store each line of y in two halves from two blocks, took 17-18.8 ms at 16384 x 8192 bf16 on 2
// Zen 4 cores, these 13.7-15.8 in the same minutes (fp32's 16x16: 24.5 ms for twice the bytes).
void transpose32x32(const uint16_t* x, int64_t ldx, uint16_t* y, int64_t ldy) {
  __m512i r[32], t[32];
  for (int i = 0; i < 32; ++i) r[i] = _mm512_loadu_si512(x + i * ldx);
  for (int i = 0; i < 32; i += 2) {
    t[i] = _mm512_unpacklo_epi16(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi16(r[i], r[i + 1]);
  }
  for (int i = 0; i < 32; i += 4) {
    r[i] = _mm512_unpacklo_epi32(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi32(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi32(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi32(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 32; i += 8)
    for (int k = 0; k < 4; ++k) {
      t[i + 2 * k] = _mm512_unpacklo_epi64(r[i + k], r[i + k + 4]);
      t[i + 2 * k + 1] = _mm512_unpackhi_epi64(r[i + k], r[i + k + 4]);
    }
  for (int m = 0; m < 8; ++m) {
    const __m512i u0 = _mm512_shuffle_i32x4(t[m], t[8 + m], 0x44), u1 = _mm512_shuffle_i32x4(t[m], t[8 + m], 0xEE);
    const __m512i u2 = _mm512_shuffle_i32x4(t[16 + m], t[24 + m], 0x44), u3 = _mm512_shuffle_i32x4(t[16 + m], t[24 + m], 0xEE);
    r[m] = _mm512_shuffle_i32x4(u0, u2, 0x88), r[8 + m] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
    r[16 + m] = _mm512_shuffle_i32x4(u1, u3, 0x88), r[24 + m] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
  }
  for (int k = 0; k < 32; ++k) {
    auto* out = reinterpret_cast<__m512i*>(y + k * ldy);
    if ((reinterpret_cast<uintptr_t>(out) & 63) == 0) _mm512_stream_si512(out, r[k]);
    else _mm512_storeu_si512(out, r[k]);
  }
}
#endif

// The tile fits in L1 and its rows are whole lines of x and of y: 64x64 (fp32 in registers: 31 ms
// against 43 for 32x32 at 16384x8192 on Zen 4; the 16-bit scalar tile took 2.3x as long at 64x64 as
// at 32x32, the register one 17.6 ms). 16-bit on AVX-512: 128 rows of x by 64 columns, so that y's
// rows, like fp32's, are 4 lines long (64x64: 14.4-15.8 ms, 128x64: 12.9-14.1, interleaved runs).
#if defined(KL_CPU_AVX512)
template <class E> constexpr int64_t kTileRows = sizeof(E) == 2 ? 128 : sizeof(E) > 2 ? 64 : 32;
#else
template <class E> constexpr int64_t kTileRows = sizeof(E) >= 2 ? 64 : 32;
#endif
template <class E> constexpr int64_t kTileCols = sizeof(E) >= 2 ? 64 : 32;

// The next tile along the band has its short rows asked into L2 while this one is transposed, a
// share before each step: TR streams of TC elements are more than the hardware prefetcher follows.
// At 16384 x 8192 on 2 Zen 4 cores, fp32 32-35 -> 24-28 ms (avx2 46 -> 33, generic 62 -> 45), bf16
// 17.3 -> 15.0 ms.
template <class E> struct NextTile {
  static constexpr int64_t kLinesPerRow = (kTileCols<E> * int64_t(sizeof(E)) + 63) / 64;
  const E* next;  // its first element; null when there is no next tile in the band
  int64_t cols, lines, line = 0;
  void prefetch(int64_t count) {
    for (int64_t k = 0; next && k < count && line < lines; ++k, ++line)
      cpu::prefetch_l2(next + line / kLinesPerRow * cols + line % kLinesPerRow * (64 / int64_t(sizeof(E))));
  }
};

// A tile through an L1 buffer: whole lines of x in, whole lines of y out (fp32 streamed): tiles cut
// by the matrix's edge, and every tile of 1-byte elements. Its own function, so that its buffer is
// not in the register path's frame: there it made the 16-bit AVX2 transpose slower (bf16 at 16384 x
// 8192 on 2 Zen 3 cores: 28.0-28.5 ms with it, 25.3-26.5 without, four alternations; fp32 within
// noise; the cause not isolated).
template <class E>
[[gnu::noinline]] void tile_through_l1(const E* x, E* y, int64_t rows, int64_t cols, int64_t i0, int64_t j0, NextTile<E>& next) {
  constexpr int64_t TR = kTileRows<E>, TC = kTileCols<E>;
  alignas(64) E tile[TR * TC];  // tile[jj][ii] = x[i0 + ii][j0 + jj]
  const int64_t ni = std::min(TR, rows - i0), nj = std::min(TC, cols - j0);
  for (int64_t ii = 0; ii < ni; ++ii) {  // whole lines of x in
    const E* xr = x + (i0 + ii) * cols + j0;
    for (int64_t jj = 0; jj < nj; ++jj) tile[jj * TR + ii] = xr[jj];
  }
  for (int64_t jj = 0; jj < nj; ++jj) {  // whole lines of y out
    next.prefetch(NextTile<E>::kLinesPerRow);
    E* yr = y + (j0 + jj) * rows + i0;
    if constexpr (sizeof(E) == sizeof(float))
      cpu::stream_row(reinterpret_cast<float*>(yr), reinterpret_cast<const float*>(tile + jj * TR), ni);
    else
      std::memcpy(yr, tile + jj * TR, static_cast<size_t>(ni) * sizeof(E));
  }
}

template <class E> void tiled(const TransposeParams& p, const Args& a) {
  constexpr int64_t TR = kTileRows<E>, TC = kTileCols<E>;
  const int64_t rows = p.rows, cols = p.cols;
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  const int64_t tr = (rows + TR - 1) / TR, tc = (cols + TC - 1) / TC;
#pragma omp parallel
  {
#pragma omp for schedule(static) collapse(2)
    for (int64_t bi = 0; bi < tr; ++bi)  // along a band of x rows: T sequential read streams
      for (int64_t bj = 0; bj < tc; ++bj) {
        const int64_t i0 = bi * TR, j0 = bj * TC;
        const int64_t ni = std::min(TR, rows - i0), nj = std::min(TC, cols - j0);
        NextTile<E> next{j0 + 2 * TC <= cols ? x + i0 * cols + j0 + TC : nullptr, cols, ni * NextTile<E>::kLinesPerRow};
        constexpr bool kInRegisters = sizeof(E) == 4 || sizeof(E) == 2;
        if (!kInRegisters || ni < TR || nj < TC) {
          tile_through_l1(x, y, rows, cols, i0, j0, next);
          continue;
        }
        if constexpr (kInRegisters) {  // a whole tile in registers
          constexpr int64_t kRowsPerCall = sizeof(E) == 2 ? 32 : 16;  // x rows a call: a line of y a store
#if defined(KL_CPU_AVX512)
          constexpr int64_t kColsPerCall = sizeof(E) == 2 ? 32 : 16;
#else
          constexpr int64_t kColsPerCall = 16;
#endif
          constexpr int64_t kCalls = TR / kRowsPerCall * (TC / kColsPerCall);
          // Down x first: 16 (or 32) rows of y take their lines in turn, not all TC rows of the tile. At
          // 16384 x 8192 fp32 on 2 Zen 3 cores: 37.0-46.1 ms against 43.7-51.3 along x's rows (five
          // alternations); generic 44.6-50.2 against 52.9-58.9; bf16 within noise.
          for (int64_t bj2 = 0; bj2 < TC; bj2 += kColsPerCall)
            for (int64_t bi2 = 0; bi2 < TR; bi2 += kRowsPerCall) {
              next.prefetch(TR * NextTile<E>::kLinesPerRow / kCalls);
              const E* from = x + (i0 + bi2) * cols + j0 + bj2;
              E* to = y + (j0 + bj2) * rows + i0 + bi2;
#if defined(KL_CPU_AVX512)
              if constexpr (sizeof(E) == 2) transpose32x32(from, cols, to, rows);
              else
#endif
                transpose16x16(from, cols, to, rows);
            }
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

std::vector<Variant> KL_CPU_ISA::transpose_cpu_variants() {
  return {cpu_variant("transpose", "cpu_naive", "reads x along rows and writes y down columns: every store touches a new cache line, one thread", run_naive),
          cpu_variant("transpose", "cpu_tiled",
                      "64x64 tiles transposed in L1 (in registers 16x16 at a time for 4- and 2-byte elements) so x is read and y written in whole cache lines (y streamed); all cores", run_tiled)};
}

}  // namespace kl
