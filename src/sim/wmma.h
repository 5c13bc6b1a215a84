// nvcuda::wmma on the simulator: the warp-level matrix API of <mma.h>, whose device-only
// declarations the host compiler never sees. The m16n16k16 shape with __half or __nv_bfloat16
// inputs and a float or __half accumulator, the one the gemm ladder's wmma rung and the CUDA
// samples use; any other shape or type is a compile error saying so.
//
// CUDA leaves a fragment's element-to-lane map unspecified. The twin uses the sm_80 one that a
// 16x16x16 wmma compiles to, two mma.sync.m16n8k16 (PTX ISA 9.7.14.5; g = lane/4, t = lane%4):
//   matrix_a x[i]:    A[g + 8((i/2)&1)][2t + i%2 + 8(i/4)]
//   matrix_b x[i]:    B[2t + i%2 + 8((i/2)&1)][g + 8(i/4)]
//   accumulator x[i]: C[g + 8((i%4)/2)][8(i/4) + 2t + i%2]
// so x[] is 8 elements per lane for every fragment. Like the hardware, each call is warp-wide:
// all 32 lanes must make it with the same pointer and ldm; the pointer must be 32-byte aligned
// and ldm a multiple of 16 bytes. mma_sync adds each product in k order, one fp32 rounding per
// addition (the products of these formats are exact in fp32), as the mma.sync twin does.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class T>
inline constexpr bool kInput = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
inline constexpr bool kAccumulator = std::is_same_v<T, float> || std::is_same_v<T, __half>;

inline float to_float(float x) { return x; }
inline float to_float(__half x) { return kl::sim::half_value(static_cast<__half_raw>(x).x); }
inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(x);
  else return __float2bfloat16_rn(x);
}

// Lane (g, t)'s element i of a 16x16 fragment: its (row, column) in the matrix.
struct Cell {
  int row, col;
};
inline Cell cell_a(int i, unsigned g, unsigned t) { return {int(g + 8 * ((i / 2) & 1)), int(2 * t + i % 2 + 8 * (i / 4))}; }
inline Cell cell_b(int i, unsigned g, unsigned t) { return {int(2 * t + i % 2 + 8 * ((i / 2) & 1)), int(g + 8 * (i / 4))}; }
inline Cell cell_c(int i, unsigned g, unsigned t) { return {int(g + 8 * ((i % 4) / 2)), int(8 * (i / 4) + 2 * t + i % 2)}; }

// The checks a wmma load or store makes: every lane of the warp, one pointer and ldm among
// them, a 32-byte aligned pointer and an ldm of a multiple of 16 bytes.
inline void check_access(const void* p, unsigned ldm, std::size_t element_bytes, const char* what,
                         const kl::sim::Site& site) {
  struct Call {
    const void* p;
    unsigned ldm;
  };
  const auto all = kl::sim::warp_exchange(0xffffffffu, Call{p, ldm}, what, site);
  for (const Call& c : all)
    if (c.p != p || c.ldm != ldm)
      kl::sim::detail::fault((std::string(what) + ": the lanes of the warp passed different pointers or ldm").c_str(), site);
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0)
    kl::sim::detail::fault((std::string(what) + " with a pointer not 32-byte aligned").c_str(), site);
  if (ldm * element_bytes % 16 != 0)
    kl::sim::detail::fault(
        (std::string(what) + " with ldm " + std::to_string(ldm) + " not a multiple of 16 bytes").c_str(), site);
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the simulator's wmma knows the m16n16k16 shape only");
  static_assert(std::is_same_v<Use, accumulator> ? detail::kAccumulator<T> : detail::kInput<T>,
                "the simulator's wmma takes __half or __nv_bfloat16 inputs and a float or __half accumulator");
  static_assert(std::is_same_v<Use, accumulator> == std::is_same_v<Layout, void>,
                "matrix_a and matrix_b fragments name a layout (row_major, col_major), accumulators do not");

 public:
  using element_type = T;
  using storage_element_type = T;
  enum { num_elements = 8 };
  T x[num_elements];
};

template <class Use, class T, class Layout, class V>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, const V& value) {
  for (T& e : f.x) e = static_cast<T>(value);
}

template <class Use, class T, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm,
                      const kl::sim::Site& site = kl::sim::Site::current()) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator's load_matrix_sync takes a layout_t");
  detail::check_access(p, ldm, sizeof(T), "wmma::load_matrix_sync", site);
  const unsigned lane = kl::sim::lane_id(), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 8; ++i) {
    const detail::Cell c = std::is_same_v<Use, matrix_a> ? detail::cell_a(i, g, t) : detail::cell_b(i, g, t);
    f.x[i] = std::is_same_v<Layout, row_major> ? p[std::size_t(c.row) * ldm + c.col] : p[std::size_t(c.col) * ldm + c.row];
  }
}

template <class T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const T* p, unsigned ldm, layout_t layout,
                      const kl::sim::Site& site = kl::sim::Site::current()) {
  detail::check_access(p, ldm, sizeof(T), "wmma::load_matrix_sync", site);
  const unsigned lane = kl::sim::lane_id(), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 8; ++i) {
    const detail::Cell c = detail::cell_c(i, g, t);
    f.x[i] = layout == mem_row_major ? p[std::size_t(c.row) * ldm + c.col] : p[std::size_t(c.col) * ldm + c.row];
  }
}

template <class T>
void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm, layout_t layout,
                       const kl::sim::Site& site = kl::sim::Site::current()) {
  detail::check_access(p, ldm, sizeof(T), "wmma::store_matrix_sync", site);
  const unsigned lane = kl::sim::lane_id(), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 8; ++i) {
    const detail::Cell c = detail::cell_c(i, g, t);
    (layout == mem_row_major ? p[std::size_t(c.row) * ldm + c.col] : p[std::size_t(c.col) * ldm + c.row]) = f.x[i];
  }
}

// D = A B + C for the warp's 16x16x16 tile. Counted by `sim profile` as the two
// mma.sync.m16n8k16 it compiles to on sm_80 and later.
template <class In, class LA, class LB, class Acc>
KL_SIM_TWIN void mma_sync(fragment<accumulator, 16, 16, 16, Acc>& d, const fragment<matrix_a, 16, 16, 16, In, LA>& a,
              const fragment<matrix_b, 16, 16, 16, In, LB>& b, const fragment<accumulator, 16, 16, 16, Acc>& c,
              bool satf = false, const kl::sim::Site& site = kl::sim::Site::current()) {
  (void)satf;  // saturation to the finite range applies to __half accumulators, which never overflow here
  for (int half = 0; half < 2; ++half)
    kl::sim::detail::profile_note(kl::sim::detail::Counted::mma_f16, nullptr, 0, kl::sim::detail::site_key(site));
  struct Operands {
    In a[8], b[8];
  };
  Operands mine;
  std::memcpy(mine.a, a.x, sizeof(mine.a));
  std::memcpy(mine.b, b.x, sizeof(mine.b));
  const auto all = kl::sim::warp_exchange(0xffffffffu, mine, "wmma::mma_sync", site);
  const unsigned lane = kl::sim::lane_id(), g = lane / 4, t = lane % 4;
  float A[16][16], B[16][16];  // filled where this lane's D cells read: A's rows g, g+8, B's columns 2t, 2t+1 (+8)
  for (unsigned l = 0; l < 32; ++l)
    for (int i = 0; i < 8; ++i) {
      const detail::Cell ca = detail::cell_a(i, l / 4, l % 4), cb = detail::cell_b(i, l / 4, l % 4);
      if (unsigned(ca.row) % 8 == g) A[ca.row][ca.col] = detail::to_float(all[l].a[i]);
      if (unsigned(cb.col) % 8 / 2 == t) B[cb.row][cb.col] = detail::to_float(all[l].b[i]);
    }
  float acc[8];
  detail::Cell cc[8];
  for (int i = 0; i < 8; ++i) cc[i] = detail::cell_c(i, g, t), acc[i] = detail::to_float(c.x[i]);
  for (int k = 0; k < 16; ++k)  // k outermost: the eight sums, each in k order, side by side
    for (int i = 0; i < 8; ++i) acc[i] = acc[i] + A[cc[i].row][k] * B[k][cc[i].col];
  Acc out[8];
  for (int i = 0; i < 8; ++i) out[i] = detail::from_float<Acc>(acc[i]);
  std::memcpy(d.x, out, sizeof(out));  // d may alias c
}

}  // namespace nvcuda::wmma
