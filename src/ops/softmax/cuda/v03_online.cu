// softmax v03: online softmax: one read of the row keeps a running max m and a sum rescaled by
// 2^(m_old - m_new) whenever the max grows, and the block combines (m, sum) pairs in one
// reduction; a second read writes y. Two reads of x instead of three, one reduction instead of two.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace softmax;
constexpr int kThreads = 256;  // a power of two: tree reduction

struct MaxSum {
  float m, sum;  // running max of t, and sum of 2^(t - m)
};
// Merges two partial softmax states onto the larger max; an empty state is (-inf, 0).
struct Merge {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.sum * exp2f(a.m - m) + b.sum * exp2f(b.m - m)};
  }
};

template <class E> __global__ void softmax_online(const E* __restrict__ x, E* __restrict__ y, Shape s) {
  KL_SHARED(MaxSum, buf, [kThreads]);
  const int row = blockIdx.x, valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  E* yr = y + static_cast<int64_t>(row) * s.cols;

  MaxSum st{-INFINITY, 0.0f};  // pass 1: max and sum together, one exp2 per element
  for (int j = threadIdx.x; j < valid; j += kThreads) {
    const float t = to_f32(xr[j]) * s.c;
    if (t > st.m) {
      st.sum = st.sum * exp2f(st.m - t) + 1.0f;  // rescale the sum to the new max
      st.m = t;
    } else {
      st.sum += exp2f(t - st.m);
    }
  }
  st = block_reduce_smem(st, Merge{}, buf);
  const float inv = inv_or_zero(st.sum);

  for (int j = threadIdx.x; j < s.cols; j += kThreads)  // pass 2: y, zeros where masked
    yr[j] = from_f32<E>(j < valid ? exp2f(to_f32(xr[j]) * s.c - st.m) * inv : 0.0f);
}

template <class E> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  KL_LAUNCH(softmax_online<E>, s.rows, kThreads, 0, a.stream, static_cast<const E*>(a.in[0].data()),
            static_cast<E*>(a.out[0].data()), s);
}

void launch(const SoftmaxParams& p, const Args& a) {
  rowwise::with_element(p.x, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<SoftmaxParams> r;
  r.op = "softmax";
  r.name = "cuda_online";
  r.note = "online softmax: a running max and a rescaled sum in one read of the row and one (max, sum) block reduction, then a pass writing y: two reads of x instead of three";
  r.configs = {{.name = "256_threads",
                .threads = kThreads,
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(softmax_online<decltype(e)>); }), {"bar.sync", "st.shared"}, {"BAR.SYNC", "STS"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
