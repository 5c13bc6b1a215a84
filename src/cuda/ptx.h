// kl::ptx — the only place kernelab writes inline PTX (style.md, convention 7), with its Hopper part ptx_sm90.h. Each wrapper is
// one PTX instruction, named after it. nvcc's device pass emits the instruction; the host
// compiler with the simulator (KERNELAB_SIM, or no __CUDACC__) gets a twin written from the
// PTX ISA's fragment layouts on kl::sim::warp_exchange. nvcc's host pass sees empty bodies.
//
// Fragment vocabulary (PTX ISA 9.7.14.5, "Matrix Fragments for mma.m16n8k16 with floating
// point type" and "... for mma.m16n8k32"): lane l has groupID g = l / 4 and threadID_in_group
// t = l % 4; a 32-bit register that holds several elements holds them low bits first.
//
// The twins check what the hardware would fault on (alignment); like the hardware, the
// warp-wide ones (.sync.aligned) need all 32 lanes of the warp, and the simulator reports a
// lane that exits or waits elsewhere, naming the call in the kernel.
#pragma once
#include <cstdint>

#if defined(__CUDA_ARCH__) && !defined(KERNELAB_SIM)  // `sim run` defines __CUDA_ARCH__ too
#define KL_PTX_ASM 1  // nvcc, device pass: the instruction itself
#elif defined(KERNELAB_SIM) || !defined(__CUDACC__)
#define KL_PTX_TWIN 1  // host compiler: the simulator's twin
#ifndef KERNELAB_SIM
#include <sim/cuda_sim.h>
#endif
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#endif

#define KL_PTX_FN __device__ __forceinline__
// The twins take the caller's source location, so the simulator's messages name the kernel's line.
#if defined(KL_PTX_TWIN)
#define KL_PTX_SITE , const kl::sim::Site& kl_site = kl::sim::Site::current()
#define KL_PTX_SITE_ONLY const kl::sim::Site& kl_site = kl::sim::Site::current()
#else
#define KL_PTX_SITE
#define KL_PTX_SITE_ONLY
#endif

namespace kl::ptx {

namespace detail {
template <class>
inline constexpr bool kDependentFalse = false;

#if defined(KL_PTX_ASM)
KL_PTX_FN uint32_t smem_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
#endif

#if defined(KL_PTX_TWIN)
using Site = kl::sim::Site;

inline void check_aligned(const void* p, std::size_t bytes, const char* what, const char* operand, const Site& site) {
  if (reinterpret_cast<std::uintptr_t>(p) % bytes == 0) return;
  const std::string message = std::string(what) + " with " + operand + " not " + std::to_string(bytes) + "-byte aligned";
  kl::sim::detail::fault(message.c_str(), site);
}

// cp.async: the copy joins the thread's open group and lands when a wait covers that group,
// reading the source then; until it lands the destination holds 0xFF bytes (NaN as a float),
// so a kernel that reads before its wait_group sees the poison, not the data by luck.
KL_SIM_TWIN KL_SIM_UNCOUNTED void cp_async(void* dst, const void* src, std::size_t bytes, const char* what, const Site& site) {
  check_aligned(dst, bytes, what, "a shared address", site);
  check_aligned(src, bytes, what, "a global address", site);
  kl::sim::detail::profile_note(kl::sim::detail::Counted::cp_async, src, unsigned(bytes), kl::sim::detail::site_key(site));
  std::memset(dst, 0xff, bytes);
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  q.pending.push_back({dst, src, bytes, q.committed});
}

KL_SIM_UNCOUNTED inline void cp_async_wait_group(unsigned n) { kl::sim::detail::land_cp_async(n); }

inline uint32_t half_of(uint32_t word, unsigned which) { return word >> (16 * which) & 0xffffu; }

// ldmatrix.m8n8.b16: lanes 8i..8i+7 give the addresses of rows 0..7 of matrix i (16 bytes
// each, 16-byte aligned). Lane l receives in r[i] the elements (l/4, 2(l%4)) and
// (l/4, 2(l%4)+1) of matrix i, low half first; .trans reads the matrix column-major, so the
// elements are (2(l%4), l/4) and (2(l%4)+1, l/4) of the rows as stored.
template <int N, bool Trans>
KL_SIM_TWIN KL_SIM_UNCOUNTED void ldmatrix(uint32_t (&r)[N], const void* row, const char* what, const Site& site) {
  const unsigned lane = kl::sim::lane_id();
  if (lane < 8u * N) {
    check_aligned(row, 16, what, "a row address", site);
    kl::sim::detail::profile_note(kl::sim::detail::Counted::ldmatrix, row, 16, kl::sim::detail::site_key(site));
  }
  const auto rows = kl::sim::warp_exchange(0xffffffffu, row, what, site);
  const auto word = [&](int matrix, unsigned rw) { return static_cast<const unsigned char*>(rows[8 * matrix + rw]); };
  for (int i = 0; i < N; ++i) {
    if constexpr (!Trans) {
      std::memcpy(&r[i], word(i, lane / 4) + 4 * (lane % 4), 4);
    } else {
      uint16_t lo, hi;
      std::memcpy(&lo, word(i, 2 * (lane % 4)) + 2 * (lane / 4), 2);
      std::memcpy(&hi, word(i, 2 * (lane % 4) + 1) + 2 * (lane / 4), 2);
      r[i] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
}

// movmatrix.m8n8.trans.b16: the source is an 8x8 matrix in the ldmatrix fragment layout
// (lane l: row l/4, columns 2(l%4), 2(l%4)+1); the result is its transpose in that layout.
KL_SIM_TWIN uint32_t movmatrix_trans(uint32_t src, const Site& site) {
  const auto all = kl::sim::warp_exchange(0xffffffffu, src, "movmatrix.sync.aligned.m8n8.trans.b16", site);
  const unsigned lane = kl::sim::lane_id(), col = lane / 4, row = 2 * (lane % 4);
  // Element (r, c) of the source sits in lane 4r + c/2, half c%2.
  return half_of(all[4 * row + col / 2], col % 2) | half_of(all[4 * (row + 1) + col / 2], col % 2) << 16;
}

// Element decoders, exact for every value of these formats: the toolkit's host conversions (fp16's
// through kl::sim::half_value, equal to it for every pattern; the 8-bit formats' 256 values computed
// once). Types, not function pointers, so that the twins, which are calls (KL_SIM_TWIN), inline them.
struct F16Value {
  float operator()(uint32_t bits) const { return kl::sim::half_value(static_cast<uint16_t>(bits)); }
};
struct Bf16Value {
  float operator()(uint32_t bits) const {
    __nv_bfloat16_raw r;
    r.x = static_cast<unsigned short>(bits);
    return __bfloat162float(__nv_bfloat16(r));
  }
};
template <class Fp8> struct Fp8Value {
  float operator()(uint32_t bits) const {
    static const auto table = [] {
      std::array<float, 256> t;
      for (unsigned b = 0; b < 256; ++b) {
        Fp8 v;
        v.__x = static_cast<__nv_fp8_storage_t>(b);
        t[b] = float(v);
      }
      return t;
    }();
    return table[bits & 0xFFu];
  }
};
struct S8Value {
  int operator()(uint32_t bits) const { return static_cast<int8_t>(static_cast<uint8_t>(bits)); }
};
inline constexpr F16Value f16_value;
inline constexpr Bf16Value bf16_value;
inline constexpr Fp8Value<__nv_fp8_e4m3> e4m3_value;
inline constexpr Fp8Value<__nv_fp8_e5m2> e5m2_value;
inline constexpr S8Value s8_value;

// mma.sync.aligned.m16n8kK.row.col with E elements per 32-bit register (E = 2 for f16/bf16,
// K = 16; E = 4 for s8/e4m3/e5m2, K = 32). From the PTX ISA layouts:
//   A (16xK, row): register r, element e is A[g + 8(r&1)][E t + e + 4E (r>>1)]
//   B (Kx8, col):  register r, element e is B[E t + e + 4E r][g]
//   C, D (16x8):   c[i] is C[g + 8(i>>1)][2t + (i&1)]
// Each lane computes its own four D elements: d = c + sum over k = 0..K-1 of A[m][k]·B[k][n],
// added in that order, one rounding per addition in fp32 (every product of these formats is
// exact in fp32); s32 adds wrap (no .satfinite). Tensor cores may add in another order or
// with wider sums: twin and hardware agree exactly whenever the partial sums are exact.
template <class Acc, int E, class Decode>
KL_SIM_TWIN void mma_m16n8(Acc (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const Acc (&c)[4], Decode decode,
               const char* what, const Site& site) {
  constexpr int K = 8 * E, kBits = 32 / E;
  using kl::sim::detail::Counted;
  const Counted kind = E == 2 ? Counted::mma_f16 : std::is_same_v<Acc, int> ? Counted::mma_s8 : Counted::mma_f8;
  kl::sim::detail::profile_note(kind, nullptr, 0, kl::sim::detail::site_key(site));
  struct Operands {
    uint32_t a[4], b[2];
  };
  const auto all = kl::sim::warp_exchange(0xffffffffu, Operands{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, what, site);
  using Value = decltype(decode(0u));
  const unsigned lane = kl::sim::lane_id(), g = lane / 4, t = lane % 4;
  constexpr uint32_t kMask = (1u << kBits) - 1;
  // This lane's rows g, g+8 of A (held by lanes 4g..4g+3) and columns 2t, 2t+1 of B (lanes 8t..8t+7).
  Value A[2][K], B[2][K];
  for (unsigned lt = 0; lt < 4; ++lt)
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < E; ++e) A[r & 1][E * lt + e + 4 * E * (r >> 1)] = decode(all[4 * g + lt].a[r] >> (kBits * e) & kMask);
  for (unsigned n = 0; n < 2; ++n)
    for (unsigned lt = 0; lt < 4; ++lt)
      for (int r = 0; r < 2; ++r)
        for (int e = 0; e < E; ++e) B[n][E * lt + e + 4 * E * r] = decode(all[4 * (2 * t + n) + lt].b[r] >> (kBits * e) & kMask);
  Acc out[4] = {c[0], c[1], c[2], c[3]};  // d may alias c
  for (int k = 0; k < K; ++k)  // k outermost: the four sums, each in k order, side by side
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<Acc, int>)
        out[i] = static_cast<int>(static_cast<uint32_t>(out[i]) + static_cast<uint32_t>(A[i >> 1][k] * B[i & 1][k]));
      else
        out[i] = out[i] + A[i >> 1][k] * B[i & 1][k];
    }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}
#endif  // KL_PTX_TWIN
}  // namespace detail

// ---- cp.async (sm_80+): global -> shared without registers --------------------------------

// cp.async.ca.shared.global, 4 bytes (cached in L1); both addresses 4-byte aligned.
KL_PTX_FN void cp_async_4(void* smem_dst, const void* gmem_src KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(detail::smem_address(smem_dst)), "l"(gmem_src) : "memory");
#elif defined(KL_PTX_TWIN)
  detail::cp_async(smem_dst, gmem_src, 4, "cp.async.ca.shared.global 4 bytes", kl_site);
#endif
}
// cp.async.ca.shared.global, 8 bytes (cached in L1); both addresses 8-byte aligned.
KL_PTX_FN void cp_async_8(void* smem_dst, const void* gmem_src KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(detail::smem_address(smem_dst)), "l"(gmem_src) : "memory");
#elif defined(KL_PTX_TWIN)
  detail::cp_async(smem_dst, gmem_src, 8, "cp.async.ca.shared.global 8 bytes", kl_site);
#endif
}
// cp.async.cg.shared.global, 16 bytes (L2 only, bypassing L1); both addresses 16-byte aligned.
KL_PTX_FN void cp_async_16(void* smem_dst, const void* gmem_src KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(detail::smem_address(smem_dst)), "l"(gmem_src) : "memory");
#elif defined(KL_PTX_TWIN)
  detail::cp_async(smem_dst, gmem_src, 16, "cp.async.cg.shared.global 16 bytes", kl_site);
#endif
}
// cp.async.commit_group: closes this thread's cp.asyncs since the last commit into one group.
KL_PTX_FN void cp_async_commit() {
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(KL_PTX_TWIN)
  ++kl::sim::detail::async_copies().committed;
#endif
}
// cp.async.wait_group N: waits until at most N of this thread's committed groups are pending.
template <int N>
KL_PTX_FN void cp_async_wait() {
  static_assert(N >= 0, "cp.async.wait_group takes a non-negative constant");
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(KL_PTX_TWIN)
  detail::cp_async_wait_group(N);
#endif
}
// cp.async.wait_all: waits for all of this thread's cp.asyncs, committed or not.
KL_PTX_FN void cp_async_wait_all() {
#if defined(KL_PTX_ASM)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#elif defined(KL_PTX_TWIN)
  cp_async_commit();  // the PTX ISA: commit_group then wait_group 0
  detail::cp_async_wait_group(0);
#endif
}

// ---- ldmatrix (sm_75+): 8x8 b16 matrices from shared memory into the mma fragment layout ----
// Lanes 8i..8i+7 give the 16-byte-aligned addresses of rows 0..7 of matrix i; lane l gets in
// r[i] row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (.trans: those of its transpose).

#define KL_PTX_LDMATRIX(NAME, N, TRANS, SUFFIX, OUTS, ...)                                                    \
  KL_PTX_FN void NAME(uint32_t (&r)[N], const void* smem_row_ptr KL_PTX_SITE) {                            \
    KL_PTX_LDMATRIX_BODY(N, TRANS, "ldmatrix.sync.aligned.m8n8.x" #N SUFFIX ".shared.b16", OUTS ", [%" #N "];\n", \
                         __VA_ARGS__)                                                                     \
  }
#if defined(KL_PTX_ASM)
#define KL_PTX_LDMATRIX_BODY(N, TRANS, INSTR, OPERANDS, ...) \
  asm volatile(INSTR " " OPERANDS : __VA_ARGS__ : "r"(detail::smem_address(smem_row_ptr)) : "memory");
#elif defined(KL_PTX_TWIN)
#define KL_PTX_LDMATRIX_BODY(N, TRANS, INSTR, OPERANDS, ...) detail::ldmatrix<N, TRANS>(r, smem_row_ptr, INSTR, kl_site);
#else
#define KL_PTX_LDMATRIX_BODY(N, TRANS, INSTR, OPERANDS, ...)
#endif

// ldmatrix .x1: one matrix (lanes 0-7 give its rows) into r[0].
KL_PTX_LDMATRIX(ldmatrix_x1, 1, false, "", "{%0}", "=r"(r[0]))
// ldmatrix .x2: two matrices (lanes 0-7, 8-15) into r[0], r[1].
KL_PTX_LDMATRIX(ldmatrix_x2, 2, false, "", "{%0, %1}", "=r"(r[0]), "=r"(r[1]))
// ldmatrix .x4: four matrices (lanes 0-7, 8-15, 16-23, 24-31) into r[0..3].
KL_PTX_LDMATRIX(ldmatrix_x4, 4, false, "", "{%0, %1, %2, %3}", "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]))
// ldmatrix .x1.trans: one matrix, transposed (lane l: rows 2(l%4), 2(l%4)+1 of column l/4).
KL_PTX_LDMATRIX(ldmatrix_x1_trans, 1, true, ".trans", "{%0}", "=r"(r[0]))
// ldmatrix .x2.trans: two matrices, each transposed.
KL_PTX_LDMATRIX(ldmatrix_x2_trans, 2, true, ".trans", "{%0, %1}", "=r"(r[0]), "=r"(r[1]))
// ldmatrix .x4.trans: four matrices, each transposed.
KL_PTX_LDMATRIX(ldmatrix_x4_trans, 4, true, ".trans", "{%0, %1, %2, %3}", "=r"(r[0]), "=r"(r[1]), "=r"(r[2]),
                "=r"(r[3]))
#undef KL_PTX_LDMATRIX
#undef KL_PTX_LDMATRIX_BODY

// ---- mma.sync: D (16x8) = A (16xK, row) · B (Kx8, col) + C, one warp -----------------------
// Fragments (g = lane/4, t = lane%4): see detail::mma_m16n8 above; D/C: d[0], d[1] at row g,
// columns 2t, 2t+1; d[2], d[3] at row g+8.

#define KL_PTX_MMA_OPERANDS(DC)                                                                                    \
  "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"                                          \
      : "=" DC(d[0]), "=" DC(d[1]), "=" DC(d[2]), "=" DC(d[3])                                                     \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), DC(c[0]), DC(c[1]), DC(c[2]), DC(c[3])

// m16n8k16, f16 inputs, f32 accumulate (sm_80+). a[r] = 2 halves of A, b[r] = 2 halves of B.
KL_PTX_FN void mma_m16n8k16_f16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                    const float (&c)[4] KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " KL_PTX_MMA_OPERANDS("f"));
#elif defined(KL_PTX_TWIN)
  detail::mma_m16n8<float, 2>(d, a, b, c, detail::f16_value, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", kl_site);
#endif
}
// m16n8k16, bf16 inputs, f32 accumulate (sm_80+). Same fragments as f16.
KL_PTX_FN void mma_m16n8k16_bf16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                     const float (&c)[4] KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 " KL_PTX_MMA_OPERANDS("f"));
#elif defined(KL_PTX_TWIN)
  detail::mma_m16n8<float, 2>(d, a, b, c, detail::bf16_value, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                              kl_site);
#endif
}
// m16n8k32, s8 inputs, s32 accumulate, wrapping (sm_80+). a[r], b[r] = 4 int8 each.
KL_PTX_FN void mma_m16n8k32_s8_s32(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                   const int (&c)[4] KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 " KL_PTX_MMA_OPERANDS("r"));
#elif defined(KL_PTX_TWIN)
  detail::mma_m16n8<int, 4>(d, a, b, c, detail::s8_value, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", kl_site);
#endif
}

// The fp8 forms need sm_89+ (and PTX ISA 8.4, CUDA 12.4+): a kernel compiled for an older
// arch that calls one fails to compile, so guard the call with __CUDA_ARCH__ >= 890.
#if defined(KL_PTX_ASM)
#if __CUDA_ARCH__ >= 890 && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define KL_PTX_MMA_FP8(TYPE) asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE ".f32 " KL_PTX_MMA_OPERANDS("f"));
#else
#define KL_PTX_MMA_FP8(TYPE) \
  static_assert(detail::kDependentFalse<Guard>, "mma.sync with e4m3/e5m2 needs sm_89 or newer and CUDA 12.4 or newer");
#endif
#else
#define KL_PTX_MMA_FP8(TYPE)
#endif

// m16n8k32, e4m3 inputs, f32 accumulate (sm_89+). a[r], b[r] = 4 fp8 each.
template <class Guard = void>
KL_PTX_FN void mma_m16n8k32_e4m3_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                     const float (&c)[4] KL_PTX_SITE) {
  KL_PTX_MMA_FP8("e4m3")
#if defined(KL_PTX_TWIN)
  detail::mma_m16n8<float, 4>(d, a, b, c, detail::e4m3_value, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", kl_site);
#endif
}
// m16n8k32, e5m2 inputs, f32 accumulate (sm_89+). a[r], b[r] = 4 fp8 each.
template <class Guard = void>
KL_PTX_FN void mma_m16n8k32_e5m2_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                     const float (&c)[4] KL_PTX_SITE) {
  KL_PTX_MMA_FP8("e5m2")
#if defined(KL_PTX_TWIN)
  detail::mma_m16n8<float, 4>(d, a, b, c, detail::e5m2_value, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", kl_site);
#endif
}
#undef KL_PTX_MMA_FP8
#undef KL_PTX_MMA_OPERANDS

// ---- lop3 (sm_50+): any bitwise function of three words ------------------------------------

// lop3.b32: bit i of d is bit (a_i << 2 | b_i << 1 | c_i) of kLut, the function's truth table; the
// table of an expression is the expression on a = 0xF0, b = 0xCC, c = 0xAA ((a & b) | c: 0xEA).
template <uint8_t kLut>
KL_PTX_FN uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d = 0;
#if defined(KL_PTX_ASM)
  asm("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
#elif defined(KL_PTX_TWIN)
  for (int i = 0; i < 8; ++i)  // the OR of the minterms of the rows where the table has a 1
    d |= (0u - (kLut >> i & 1u)) & (i & 4 ? a : ~a) & (i & 2 ? b : ~b) & (i & 1 ? c : ~c);
#endif
  return d;
}

// ---- movmatrix (sm_75+) ---------------------------------------------------------------------

// movmatrix.sync.aligned.m8n8.trans.b16: transposes an 8x8 b16 matrix held in the ldmatrix
// fragment layout (lane l: row l/4, columns 2(l%4), 2(l%4)+1) across the warp.
KL_PTX_FN uint32_t movmatrix_trans(uint32_t src KL_PTX_SITE) {
  uint32_t d = src;
#if defined(KL_PTX_ASM)
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(src));
#elif defined(KL_PTX_TWIN)
  d = detail::movmatrix_trans(src, kl_site);
#endif
  return d;
}

}  // namespace kl::ptx

#include "cuda/ptx_sm90.h"

#undef KL_PTX_SITE
#undef KL_PTX_SITE_ONLY
#undef KL_PTX_FN
