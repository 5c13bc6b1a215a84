// softmax v01: three kernels, each a full pass over x in HBM: row maxima, then sums of
// exponentials (both into a workspace of two floats per row), then the normalised y written
// elementwise. The baseline: x read three times, three launches, a block reduction per row.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace softmax;
constexpr int kThreads = 256;  // a block per row for the reductions (a power of two: tree)

template <class E> __global__ void row_max(const E* __restrict__ x, float* __restrict__ mx, Shape s) {
  KL_SHARED(float, buf, [kThreads]);
  const int row = blockIdx.x, valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < valid; j += kThreads) m = fmaxf(m, to_f32(xr[j]) * s.c);
  m = block_reduce_smem(m, Max{}, buf);
  if (threadIdx.x == 0) mx[row] = m;
}

template <class E>
__global__ void row_sum(const E* __restrict__ x, const float* __restrict__ mx, float* __restrict__ sum, Shape s) {
  KL_SHARED(float, buf, [kThreads]);
  const int row = blockIdx.x, valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  const float m = mx[row];
  float acc = 0;
  for (int j = threadIdx.x; j < valid; j += kThreads) acc += exp2f(to_f32(xr[j]) * s.c - m);
  acc = block_reduce_smem(acc, Sum{}, buf);
  if (threadIdx.x == 0) sum[row] = acc;
}

// One thread per element of y (grid-stride over the flat index).
template <class E>
__global__ void normalise(const E* __restrict__ x, const float* __restrict__ mx, const float* __restrict__ sum,
                          E* __restrict__ y, Shape s) {
  const int64_t n = static_cast<int64_t>(s.rows) * s.cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int row = static_cast<int>(i / s.cols), j = static_cast<int>(i % s.cols);
    const float v = j < valid_cols(s, row) ? exp2f(to_f32(x[i]) * s.c - mx[row]) * inv_or_zero(sum[row]) : 0.0f;
    y[i] = from_f32<E>(v);
  }
}

template <class E> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  float* mx = static_cast<float*>(a.workspace);  // (rows) maxima, then (rows) sums
  float* sum = mx + s.rows;
  KL_LAUNCH(row_max<E>, s.rows, kThreads, 0, a.stream, x, mx, s);
  KL_LAUNCH(row_sum<E>, s.rows, kThreads, 0, a.stream, x, mx, sum, s);
  KL_LAUNCH(normalise<E>, grid_for(int64_t{s.rows} * s.cols, kThreads), kThreads, 0, a.stream, x, mx, sum, y, s);
}

void launch(const SoftmaxParams& p, const Args& a) {
  rowwise::with_element(p.x, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<SoftmaxParams> r;
  r.op = "softmax";
  r.name = "cuda_three_kernels";
  r.note = "three kernels (row max, sum of exponentials, normalise) through a workspace of per-row max and sum: x read from HBM three times, three launches";
  r.workspace_bytes = [](const SoftmaxParams& p) { return static_cast<size_t>(2 * p.rows) * sizeof(float); };
  r.configs = {{.name = "256_threads",
                .threads = kThreads,
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(row_max<decltype(e)>); }), {"bar.sync", "max.f32"}, {"BAR.SYNC"}},
                            {for_elements([](auto e) { return KL_KERNEL(row_sum<decltype(e)>); }), {"bar.sync", "ex2.approx"}, {"BAR.SYNC", "MUFU.EX2"}},
                            {for_elements([](auto e) { return KL_KERNEL(normalise<decltype(e)>); }), {"ex2.approx"}, {"MUFU.EX2"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
