// softmax v02: the three passes fused into one kernel, a block per row: max and sum are block
// reductions in shared memory and stay on chip. Saves two launches and the workspace round
// trip; x is still read three times, but a row's second and third reads follow its first
// within one block, so they are mostly L2 hits rather than fresh HBM streams.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace softmax;
constexpr int kThreads = 256;  // a power of two: tree reductions

template <class E> __global__ void softmax_block(const E* __restrict__ x, E* __restrict__ y, Shape s) {
  KL_SHARED(float, buf, [kThreads]);
  const int row = blockIdx.x, valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  E* yr = y + static_cast<int64_t>(row) * s.cols;

  float m = -INFINITY;  // pass 1: the row's maximum of t = x * scale * log2(e)
  for (int j = threadIdx.x; j < valid; j += kThreads) m = fmaxf(m, to_f32(xr[j]) * s.c);
  m = block_reduce_smem(m, Max{}, buf);

  float sum = 0;  // pass 2: sum of 2^(t - m)
  for (int j = threadIdx.x; j < valid; j += kThreads) sum += exp2f(to_f32(xr[j]) * s.c - m);
  const float inv = inv_or_zero(block_reduce_smem(sum, Sum{}, buf));

  for (int j = threadIdx.x; j < s.cols; j += kThreads)  // pass 3: y, zeros where masked
    yr[j] = from_f32<E>(j < valid ? exp2f(to_f32(xr[j]) * s.c - m) * inv : 0.0f);
}

template <class E> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  KL_LAUNCH(softmax_block<E>, s.rows, kThreads, 0, a.stream, static_cast<const E*>(a.in[0].data()),
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
  r.name = "cuda_fused_block";
  r.note = "one kernel, a block per row, max and sum as shared-memory block reductions: no workspace round trip, one launch, the re-reads of a row mostly hit L2";
  r.configs = {{.name = "256_threads",
                .threads = kThreads,
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(softmax_block<decltype(e)>); }), {"bar.sync", "st.shared"}, {"BAR.SYNC", "STS"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
