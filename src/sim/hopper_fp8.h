// The simulator's twin of the 8-bit wgmma (src/cuda/ptx_sm90_fp8.h) on hopper.h's machinery:
// wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2} and .s32.s8.s8, A and B K-major from shared memory
// through descriptors, one byte an element (PTX ISA, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate": the K-major layouts are given in bytes, the same for 8- and 16-bit types).
// The same checks and the same asynchrony as the 16-bit twin: a warpgroup collective after a
// wgmma.fence, the multiply run at the wgmma.wait_group that covers it.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace kl::sim::hopper {

// How the 8-bit wgmma adds into D, modelled: its 32 products (exact) summed, then added to D keeping
// 14 significant bits (13 after the leading one) of the larger addend, truncated toward zero. As an
// H200 does it (tests/sim/wgmma_fp8.cu on the chip, bench/results/h200/2026-12-04-88c522b22460:
// 2^13 + 1 exact, 2^14 + 1 not, 2^14 + 3 -> 2^14 + 2 and -2^14 - 3 -> -2^14 - 2); DeepSeek-V3 (arXiv
// 2412.19437, section 3.3.2) measured "around 14 bits" on an H800. `check gemm_fp8 --variant
// cuda_tma_wgmma_fp8` (promoted every 128 k) errs at most 4.56e-4 (fp16 D) and 2.93e-3 (bf16) over its
// sweep here, 9.66e-4 and 2.91e-3 on the H200: the model is still kinder than the chip with fp16 D.
inline float fp8_wgmma_accumulate(float d, double products) {
  const double sum = double(d) + products, larger = std::max(std::fabs(double(d)), std::fabs(products));
  if (larger == 0.0) return 0.0f;
  const double ulp = std::ldexp(1.0, std::ilogb(larger) - 13);
  return float(std::trunc(sum / ulp) * ulp);
}

// The shared address of element (mn, k) of a K-major 8-bit operand: byte k of row mn. No swizzle:
// 8 x 16-byte core matrices SBO apart along M/N and LBO apart along K. Swizzled: rows of the
// swizzle width, 8-row atoms SBO apart, the 16-byte chunks XOR-permuted.
inline std::uintptr_t operand_address_8bit(const Descriptor& d, unsigned mn, unsigned k) {
  std::uintptr_t a;
  if (d.swizzle_mode == 0) {
    a = d.start + mn / 8 * d.sbo + k / 16 * d.lbo + mn % 8 * 16 + k % 16;
  } else {
    const std::uintptr_t width = d.swizzle_mode == 1 ? 128 : d.swizzle_mode == 2 ? 64 : 32;
    a = swizzle(d.start + mn / 8 * d.sbo + mn % 8 * width + k, d.swizzle_mode);
  }
  return a;
}

inline constexpr unsigned kK8 = 32;  // the K of an 8-bit wgmma

// Every byte's value under `decode` (one of ptx.h's decoders: a stateless type), computed once.
template <class Product, class Decode>
const std::array<Product, 256>& byte_values(Decode decode) {
  static const std::array<Product, 256> table = [&] {
    std::array<Product, 256> t;
    for (unsigned b = 0; b < 256; ++b) t[b] = Product(decode(b));
    return t;
  }();
  return table;
}

// The int32 form's addition: the 32 products summed exactly and added to D modulo 2^32 (no .satfinite),
// as the s32 mma.sync twin in ptx.h adds; no bits dropped: integer wgmma is exact.
inline int s8_wgmma_accumulate(int d, long long products) {
  return static_cast<int>(static_cast<std::uint32_t>(d) + static_cast<std::uint32_t>(products));
}

// wgmma.mma_async m64nNk32 with 8-bit A (64 x 32) and B (32 x N): D = A B + (scale_d ? D : 0), D of
// f32 added as fp8_wgmma_accumulate models, or of s32 (s8 operands) as s8_wgmma_accumulate. D as the
// 16-bit twin's: thread (warp w, lane 4g+t), d[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2.
template <int N, class Acc, class Decode>
KL_SIM_TWIN void wgmma_8bit(Acc* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d, Decode decode_element,
                            const char* what, const Site& site) {
  constexpr bool kInt = std::is_same_v<Acc, int>;
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  if (!q.wgmma_fenced)
    fault(std::string(what) + " with no wgmma.fence before it since the warpgroup's last wgmma.wait_group (or the kernel's start)",
          site);
  const WgmmaCall call{desc_a, desc_b, {}, scale_d, false, false};
  for (const WgmmaCall& o : warpgroup_exchange(call, what, site))
    if (o.desc_a != desc_a || o.desc_b != desc_b || o.scale_d != scale_d)
      fault(std::string(what) + ": the warpgroup's threads passed different descriptors or scale-d", site);
  const unsigned tid = kl::sim::detail::thread_rank() % 128;
  const Descriptor da = decode(desc_a), db = decode(desc_b);
  const OperandShare<2, kK8> a_at = operand_share<2, kK8>(
      1, 16, [tid](unsigned j) { return a_line_row(tid, j); }, [&](unsigned mn, unsigned k) { return operand_address_8bit(da, mn, k); },
      "A", what, site);
  const OperandShare<N / 4, kK8> b_at = operand_share<N / 4, kK8>(
      1, 16, [tid](unsigned j) { return b_line_col(tid, j); }, [&](unsigned mn, unsigned k) { return operand_address_8bit(db, mn, k); },
      "B", what, site);
  // The profiler's bytes field is N/8 x K/16 (src/sim/runtime/profile.cpp: a lane's FLOPs over 128).
  kl::sim::detail::profile_note(kl::sim::detail::Counted::wgmma, nullptr, unsigned(N / 8 * (kK8 / 16)), kl::sim::detail::site_key(site));
  using Product = std::conditional_t<kInt, long long, double>;
  q.wgmma.push_back({[=] {
                       const unsigned char* smem = kl::sim::detail::dynamic_shared_window().host;
                       std::array<Product, 2 * kK8> av;
                       std::array<Product, N / 4 * kK8> bv;
                       const std::array<Product, 256>& value = byte_values<Product>(decode_element);
                       const auto element = [&](const unsigned char* p) { return value[*p]; };
                       a_at.read(smem, element, av.data());
                       b_at.read(smem, element, bv.data());
                       // products[4c + 2h + p]: A line h times B line 2c + p in k order; k
                       // outermost, so that the N/2 sums proceed side by side.
                       std::array<Product, N / 2> products{};
                       for (unsigned k = 0; k < kK8; ++k) {
                         const Product a0 = av[k], a1 = av[kK8 + k];
                         for (unsigned c = 0; c < N / 8; ++c) {
                           const Product b0 = bv[2 * c * kK8 + k], b1 = bv[(2 * c + 1) * kK8 + k];
                           Product* x = &products[4 * c];
                           x[0] += a0 * b0, x[1] += a0 * b1, x[2] += a1 * b0, x[3] += a1 * b1;
                         }
                       }
                       for (int i = 0; i < N / 2; ++i) {
                         if constexpr (kInt) d[i] = s8_wgmma_accumulate(scale_d ? d[i] : 0, products[i]);
                         else d[i] = fp8_wgmma_accumulate(scale_d ? d[i] : 0.0f, products[i]);
                       }
                     },
                     q.wgmma_committed});
}

}  // namespace kl::sim::hopper
