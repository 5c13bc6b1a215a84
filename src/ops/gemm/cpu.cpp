// CPU rungs of gemm.
//   cpu_naive: the textbook triple loop over strided A and B, one thread, fp32 accumulation.
//   cpu_tiled: A and B packed into cache-sized fp32 panels (KC x NC of B in L2, a KC x NR strip
//              in L1) and a register tile of 6 rows by two vectors of FMAs per step (6x16 on
//              AVX2 and AVX-512, 6x8 on SSE2, where A is packed pre-broadcast), blocks of rows
//              spread over cores.
//   openblas:  the library peer (cblas_sgemm), fp32 only; its note names the kernels OpenBLAS chose.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/gemm/gemm.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

// A strided matrix view of typed storage.
template <class T> struct View {
  const T* p;
  int64_t s0, s1;
  float at(int64_t r, int64_t c) const { return to_float(p[r * s0 + c * s1]); }
};

template <class T> View<T> view(const Tensor& t) { return {t.as<T>(), t.strides()[0], t.strides()[1]}; }

// The epilogue on v = alpha*acc + beta*c, in fp32: the bias and the activation, then the residual.
template <class T> struct Epilogue {
  GemmEpilogue kind;
  const T* bias;
  const T* r;
  int64_t n;
  float operator()(int64_t i, int64_t j, float v) const {
    if (kind != GemmEpilogue::none) v = apply_activation(kind, v + to_float(bias[j]));
    return r ? v + to_float(r[i * n + j]) : v;
  }
};
template <class T> Epilogue<T> epilogue(const GemmParams& p, const Args& a) {
  const bool has_bias = p.epilogue != GemmEpilogue::none;
  return {p.epilogue, has_bias ? a.in[3].as<T>() : nullptr, p.residual ? a.in[has_bias ? 4 : 3].as<T>() : nullptr, p.n};
}

template <class T> void naive(const GemmParams& p, const Args& a) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  const View<T> A = view<T>(a.in[0]), B = view<T>(a.in[1]);
  const T* C = a.in[2].as<T>();
  T* D = a.out[0].as<T>();
  const Epilogue<T> epi = epilogue<T>(p, a);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += A.at(i, l) * B.at(l, j);
      D[i * n + j] = from_float<T>(epi(i, j, alpha * acc + (beta != 0 ? beta * to_float(C[i * n + j]) : 0.0f)));
    }
}

// Blocking: an MR x NR register tile, KC x NR strips of B (L1), MC x KC blocks of A and
// KC x NC panels of B (L2). The tile is 6 rows of two vector registers: 12 accumulators, two B
// vectors and a broadcast fit in 16 registers. 256-bit on AVX-512 too: on Zen 4 the 6x32 tile of
// 512-bit registers reached 77% and 86% of OpenBLAS at 1024^3 and 4096^3, this one 90% and 92%
// (12x16 in AVX-512's 32 registers: 76% and 80%).
#if defined(__AVX__)
constexpr int64_t VW = 8;  // floats per vector register
#else
constexpr int64_t VW = 4;
#endif
constexpr int64_t MR = 6, NR = 2 * VW, KC = 256, MC = 120, NC = 1024;
static_assert(MC % MR == 0, "a row block is whole panels");
typedef float vec __attribute__((vector_size(VW * sizeof(float))));

inline vec load_vec(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_vec(float* p, vec v) { std::memcpy(p, &v, sizeof v); }

// SSE2 has no broadcast from memory: a movss and a shufps for each of A's MR values a step, on the
// pipes the multiplies and adds need. There A is packed with each value already in all VW lanes
// (kBcast copies), so the step's broadcast is a plain load.
#if defined(__AVX__)
constexpr int64_t kBcast = 1;
#else
constexpr int64_t kBcast = VW;
#endif

// The MR x NR tile sum over l < kc of Ap[l][r] * Bp[l][j] (both packed, zero padded), times
// alpha, written to w (row stride ldw) on the first k block and added to it after; only `rows` x
// `cols` of it where the tile sticks out of the matrix. The tile's lines of w are prefetched
// first: they come from L3 or memory once per k block, and a load waiting for them at the end
// stalled the kernel (Zen 3, 2048^3 on one thread: 220 -> 210 ms).
inline void micro_kernel(int64_t kc, const float* Ap, const float* Bp, float* w, int64_t ldw, float alpha, bool first,
                         int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    __builtin_prefetch(w + r * ldw);
    __builtin_prefetch(w + r * ldw + cols - 1);
  }
  vec c[MR][2] = {};
  for (int64_t l = 0; l < kc; ++l) {
    const vec b0 = load_vec(Bp + l * NR), b1 = load_vec(Bp + l * NR + VW);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      if constexpr (kBcast == 1) {
        const float ar = Ap[l * MR + r];
        c[r][0] += ar * b0;
        c[r][1] += ar * b1;
      } else {
        const vec ar = load_vec(Ap + (l * MR + r) * kBcast);
        c[r][0] += ar * b0;
        c[r][1] += ar * b1;
      }
    }
  }
  if (rows == MR && cols == NR) {  // from registers; unrolled, so that c is never stored to the stack
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        float* p = w + r * ldw + h * VW;
        store_vec(p, first ? alpha * c[r][h] : load_vec(p) + alpha * c[r][h]);
      }
    return;
  }
  alignas(64) float tile[MR * NR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    store_vec(tile + r * NR, c[r][0]);
    store_vec(tile + r * NR + VW, c[r][1]);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float& o = w[r * ldw + j];
      o = (first ? 0.0f : o) + alpha * tile[r * NR + j];
    }
}

// Packing walks the operand along its contiguous dimension (row- or column-major), so that each
// load is the next element of a line. Element by element through the strided view, it was about
// 2 ms of 12.9 at 1024^3 on AVX2 (timed by skipping it).
// dst[l][jj] = B(pc + l, j0 + jj) for a KC x NR strip, zero past `cols` columns.
template <class T> void pack_b(const View<T>& B, int64_t pc, int64_t kc, int64_t j0, int64_t cols, float* dst) {
  if (cols < NR) std::fill(dst, dst + kc * NR, 0.0f);
  if (B.s0 == 1) {  // column-major: a column's kc values are contiguous
    for (int64_t jj = 0; jj < cols; ++jj) {
      const T* col = B.p + pc + (j0 + jj) * B.s1;
      for (int64_t l = 0; l < kc; ++l) dst[l * NR + jj] = to_float(col[l]);
    }
    return;
  }
  for (int64_t l = 0; l < kc; ++l) {
    const T* row = B.p + (pc + l) * B.s0 + j0 * B.s1;
    for (int64_t jj = 0; jj < cols; ++jj) dst[l * NR + jj] = to_float(row[jj * B.s1]);
  }
}

// dst[l][ii] (each value kBcast times) = A(i0 + ii, pc + l) for an MR x KC panel, zero past `rows` rows.
template <class T> void pack_a(const View<T>& A, int64_t i0, int64_t rows, int64_t pc, int64_t kc, float* dst) {
  if (rows < MR) std::fill(dst, dst + kc * MR * kBcast, 0.0f);
  if (A.s1 == 1) {  // row-major: a row's kc values are contiguous
    for (int64_t ii = 0; ii < rows; ++ii) {
      const T* row = A.p + (i0 + ii) * A.s0 + pc;
      for (int64_t l = 0; l < kc; ++l)
        for (int64_t q = 0; q < kBcast; ++q) dst[(l * MR + ii) * kBcast + q] = to_float(row[l]);
    }
    return;
  }
  for (int64_t l = 0; l < kc; ++l) {
    const T* col = A.p + i0 * A.s0 + (pc + l) * A.s1;
    for (int64_t ii = 0; ii < rows; ++ii)
      for (int64_t q = 0; q < kBcast; ++q) dst[(l * MR + ii) * kBcast + q] = to_float(col[ii * A.s0]);
  }
}

// fp32 D accumulates in place; a narrower D in an fp32 (m, n) buffer ahead of the packed panels.
size_t tiled_workspace(const GemmParams& p) {
  const size_t acc = p.d == DType::f32 ? 0 : static_cast<size_t>(p.m * p.n);
  return (acc + KC * NC + static_cast<size_t>(omp_get_max_threads()) * MC * KC * kBcast) * sizeof(float);
}

template <class T> void tiled(const GemmParams& p, const Args& a) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  const View<T> A = view<T>(a.in[0]), B = view<T>(a.in[1]);
  const T* C = a.in[2].as<T>();
  // fp32 results accumulate in D itself; narrower ones in an fp32 buffer rounded once at the end.
  float* W = std::is_same_v<T, float> ? reinterpret_cast<float*>(a.out[0].as<T>()) : static_cast<float*>(a.workspace);
  float* Bp = static_cast<float*>(a.workspace) + (std::is_same_v<T, float> ? 0 : m * n);
  float* Ap_all = Bp + KC * NC;
  // Row blocks of whole MR-row panels, at most MC rows, their count a multiple of the threads and
  // their sizes a panel apart: 1024 rows in blocks of 120 gave one thread 544 and the other 480.
  const int64_t panels = (m + MR - 1) / MR, threads = omp_get_max_threads();
  const int64_t blocks = ((panels + MC / MR - 1) / (MC / MR) + threads - 1) / threads * threads;
#pragma omp parallel
  {
    float* Ap = Ap_all + omp_get_thread_num() * MC * KC * kBcast;
    if (beta != 0) {  // W = beta C first; the k blocks then all add
#pragma omp for schedule(static)
      for (int64_t i = 0; i < m * n; ++i) W[i] = beta * to_float(C[i]);
    }
    for (int64_t jc = 0; jc < n; jc += NC) {
      const int64_t nc = std::min(NC, n - jc);
      for (int64_t pc = 0; pc < k; pc += KC) {
        const int64_t kc = std::min(KC, k - pc);
        const bool first = pc == 0 && beta == 0;
#pragma omp for schedule(static)
        for (int64_t js = 0; js < nc; js += NR)  // pack B panel: strips of NR columns
          pack_b(B, pc, kc, jc + js, std::min(NR, nc - js), Bp + js * kc);
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t ic = MR * (b * panels / blocks), mc = std::min(m, MR * ((b + 1) * panels / blocks)) - ic;
          for (int64_t is = 0; is < mc; is += MR)  // pack A block: panels of MR rows
            pack_a(A, ic + is, std::min(MR, mc - is), pc, kc, Ap + is * kc * kBcast);
          for (int64_t js = 0; js < nc; js += NR)
            for (int64_t is = 0; is < mc; is += MR)
              micro_kernel(kc, Ap + is * kc * kBcast, Bp + js * kc, W + (ic + is) * n + jc + js, n, alpha, first,
                           std::min(MR, mc - is), std::min(NR, nc - js));
        }
      }
    }
    const Epilogue<T> epi = epilogue<T>(p, a);
    if constexpr (!std::is_same_v<T, float>) {
      T* D = a.out[0].as<T>();
#pragma omp for schedule(static)
      for (int64_t i = 0; i < m * n; ++i) D[i] = from_float<T>(epi(i / n, i % n, W[i]));
    } else if (!p.plain()) {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < m * n; ++i) W[i] = epi(i / n, i % n, W[i]);
    }
  }
}

void openblas(const GemmParams& p, const Args& a) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  float* D = a.out[0].as<float>();
  if (beta != 0) std::memcpy(D, a.in[2].as<float>(), static_cast<size_t>(m * n) * sizeof(float));
  const bool ta = p.a_col, tb = p.b_col;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a.in[0].as<float>(), static_cast<int>(ta ? m : k),
              a.in[1].as<float>(), static_cast<int>(tb ? k : n), beta, D, static_cast<int>(n));
}

void run_naive(const GemmParams& p, const Args& a) { cpu::with_float_type(p.a, [&](auto t) { naive<decltype(t)>(p, a); }); }
void run_tiled(const GemmParams& p, const Args& a) { cpu::with_float_type(p.a, [&](auto t) { tiled<decltype(t)>(p, a); }); }
}  // namespace

std::vector<Variant> KL_CPU_ISA::gemm_cpu_variants() {
  Variant nv = cpu_variant("gemm", "cpu_naive", "the textbook triple loop over strided A and B on one thread, fp32 accumulation", run_naive);
  Variant tv = cpu_variant("gemm", "cpu_tiled",
                           "A and B packed into cache-sized fp32 panels and a register tile of 6 rows by two vectors of FMAs, row blocks over all cores",
                           run_tiled);
  tv.workspace_bytes = [](const Problem& p) { return tiled_workspace(p.as<GemmParams>()); };
  // The kernels OpenBLAS chose for this CPU at load (OPENBLAS_CORETYPE overrides), named in the note.
  Variant ob = cpu_variant("gemm", "openblas",
                           "OpenBLAS cblas_sgemm, the CPU library a user would otherwise call; its " + std::string(openblas_get_corename()) +
                               " kernels here",
                           openblas, /*peer=*/true);
  ob.supports = [](const Problem& problem) -> Reason {
    const GemmParams& p = problem.as<GemmParams>();
    if (p.a != DType::f32 || p.b != DType::f32 || p.c != DType::f32 || p.d != DType::f32) return "OpenBLAS (this build) has sgemm only: fp32";
    if (!p.plain()) return "cblas_sgemm has no epilogue (bias, activation, residual)";
    const int64_t lim = int64_t{1} << 31;
    if (p.m >= lim || p.n >= lim || p.k >= lim) return "a dimension does not fit cblas' int";
    return std::nullopt;
  };
  return {nv, tv, ob};
}

}  // namespace kl
