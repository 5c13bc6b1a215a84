// A subtly wrong softmax rung, for the tests of `check --rung`: as softmax_warp_online.cu, but
// the warp reads only whole chunks of 32 columns: the last partial chunk of a row is left out
// of max and sum and never written. Right when cols is a multiple of 32, wrong on every other
// shape.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {

namespace {
using namespace softmax;
constexpr int kWarps = 4;  // rows a block

// (m, s) with s = sum of 2^(t - m), merged with another lane's.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;  // both empty
  s = s * exp2f(m - mm) + s2 * exp2f(m2 - mm);
  m = mm;
}

template <class E> __global__ void softmax_warp_whole_chunks(const E* __restrict__ x, E* __restrict__ y, Shape s) {
  const int lane = threadIdx.x % 32, row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= s.rows) return;
  const int valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  E* yr = y + static_cast<int64_t>(row) * s.cols;
  float m = -INFINITY, sum = 0.0f;
  const int whole = valid / 32 * 32;  // the bug: columns [whole, valid) are never read
  for (int j = lane; j < whole; j += 32) merge(m, sum, to_f32(xr[j]) * s.c, 1.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset), s2 = __shfl_xor_sync(0xffffffffu, sum, offset);
    merge(m, sum, m2, s2);
  }
  const float inv = inv_or_zero(sum);
  for (int j = lane; j < s.cols / 32 * 32; j += 32) yr[j] = from_f32<E>(j < valid ? exp2f(to_f32(xr[j]) * s.c - m) * inv : 0.0f);
}

template <class E> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  KL_LAUNCH(softmax_warp_whole_chunks<E>, (s.rows + kWarps - 1) / kWarps, 32 * kWarps, 0, a.stream,
            static_cast<const E*>(a.in[0].data()), static_cast<E*>(a.out[0].data()), s);
}

void launch(const SoftmaxParams& p, const Args& a) { rowwise::with_element(p.x, [&](auto e) { run<decltype(e)>(p, a); }); }
}  // namespace

KL_RUNGS {
  Rung<SoftmaxParams> r;
  r.op = "softmax";
  r.name = "user_whole_chunks";
  r.note = "as user_warp_online, but the last partial chunk of 32 columns is dropped (a planted bug)";
  r.configs = {{.name = "4_warps", .threads = 32 * kWarps, .kernels = {{for_elements([](auto e) { return KL_KERNEL(softmax_warp_whole_chunks<decltype(e)>); }), {"shfl.sync"}, {"SHFL"}}}, .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
