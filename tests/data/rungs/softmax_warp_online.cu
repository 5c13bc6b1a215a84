// A softmax rung of a user's own, for `kernelab check softmax --rung FILE.cu`: a warp per row,
// each lane keeping a running (max, sum) over its strided columns (the online softmax), the 32
// pairs merged by shuffles, then one pass writing y. Written as the built-in rungs are
// (src/ops/softmax/cuda/*.cu): kernels, a launcher, a KL_RUNGS block.
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

template <class E> __global__ void softmax_warp_online(const E* __restrict__ x, E* __restrict__ y, Shape s) {
  const int lane = threadIdx.x % 32, row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= s.rows) return;
  const int valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  E* yr = y + static_cast<int64_t>(row) * s.cols;
  float m = -INFINITY, sum = 0.0f;
  for (int j = lane; j < valid; j += 32) merge(m, sum, to_f32(xr[j]) * s.c, 1.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset), s2 = __shfl_xor_sync(0xffffffffu, sum, offset);
    merge(m, sum, m2, s2);
  }
  const float inv = inv_or_zero(sum);
  for (int j = lane; j < s.cols; j += 32) yr[j] = from_f32<E>(j < valid ? exp2f(to_f32(xr[j]) * s.c - m) * inv : 0.0f);
}

template <class E> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  KL_LAUNCH(softmax_warp_online<E>, (s.rows + kWarps - 1) / kWarps, 32 * kWarps, 0, a.stream,
            static_cast<const E*>(a.in[0].data()), static_cast<E*>(a.out[0].data()), s);
}

void launch(const SoftmaxParams& p, const Args& a) { rowwise::with_element(p.x, [&](auto e) { run<decltype(e)>(p, a); }); }
}  // namespace

KL_RUNGS {
  Rung<SoftmaxParams> r;
  r.op = "softmax";
  r.name = "user_warp_online";
  r.note = "a warp per row, online (max, sum) per lane merged by shuffles, then one pass writing y";
  r.configs = {{.name = "4_warps", .threads = 32 * kWarps, .kernels = {{for_elements([](auto e) { return KL_KERNEL(softmax_warp_online<decltype(e)>); }), {"shfl.sync"}, {"SHFL"}}}, .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
