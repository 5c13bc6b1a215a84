// What every transpose rung shares: elements are moved as raw bits (a transpose never converts),
// by their size in bytes, B = 4 (fp32) or 2 (fp16, bf16). Kernels take B as an int template
// argument rather than the storage type: the host compiler spells uint16_t "short unsigned int"
// where cuobjdump writes "unsigned short", and kernel names must match across the two.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/gpu_rung.h"
#include "ops/transpose/transpose.h"

namespace kl::KL_TARGET::transpose_raw {

template <int B> struct Bits;
template <> struct Bits<4> { using T = uint32_t; };
template <> struct Bits<2> { using T = uint16_t; };
template <int B> using Word = typename Bits<B>::T;

template <int B> using Bytes = std::integral_constant<int, B>;

// Calls f with Bytes<B>{} for the size of x's elements.
template <class F> void with_bytes(const TransposeParams& p, F&& f) {
  if (dtype_bits(p.x) == 32) f(Bytes<4>{});
  else f(Bytes<2>{});
}

// One kernel ref per element size a transpose rung takes: f(Bytes<4>{}), f(Bytes<2>{}).
template <class F> std::vector<KernelRef> for_sizes(F&& f) { return {f(Bytes<4>{}), f(Bytes<2>{})}; }

}  // namespace kl::KL_TARGET::transpose_raw
