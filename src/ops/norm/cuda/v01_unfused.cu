// layernorm/rmsnorm v01: unfused, three kernels through memory: h = x + residual written out
// (residual=1), row statistics (two-pass mean and variance, a block per row) into a workspace
// of (mean, rstd) per row, then y elementwise. The baseline: the row is read three times from
// HBM (four with the residual sum read back), three launches.
#include "ops/norm/cuda/norm_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace norm;
constexpr int kThreads = 256;  // a power of two: tree reductions

template <class E> __global__ void residual_add(const E* __restrict__ x, const E* __restrict__ r, E* __restrict__ h, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    h[i] = from_f32<E>(to_f32(x[i]) + to_f32(r[i]));
}

// stats[2 row] = mean (0 for rmsnorm), stats[2 row + 1] = 1 / sqrt(mean((v - mean)^2) + eps).
template <class E, bool kLayer> __global__ void row_stats(const E* __restrict__ v, float* __restrict__ stats, int cols, float eps) {
  KL_SHARED(float, buf, [kThreads]);
  const E* vr = v + static_cast<int64_t>(blockIdx.x) * cols;
  float mean = 0;
  if constexpr (kLayer) {
    float sum = 0;
    for (int j = threadIdx.x; j < cols; j += kThreads) sum += to_f32(vr[j]);
    mean = block_reduce_smem(sum, Sum{}, buf) / cols;
  }
  float sq = 0;
  for (int j = threadIdx.x; j < cols; j += kThreads) sq += (to_f32(vr[j]) - mean) * (to_f32(vr[j]) - mean);
  sq = block_reduce_smem(sq, Sum{}, buf);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = mean;
    stats[2 * blockIdx.x + 1] = rsqrtf(sq / cols + eps);
  }
}

// One thread per element of y (grid-stride over the flat index).
template <class E, bool kLayer>
__global__ void normalise(const E* __restrict__ v, const float* __restrict__ stats, Tensors<E> t) {
  const int64_t n = static_cast<int64_t>(t.rows) * t.cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / t.cols;
    const int j = static_cast<int>(i % t.cols);
    const float b = kLayer ? to_f32(t.beta[j]) : 0.0f;
    t.y[i] = from_f32<E>((to_f32(v[i]) - stats[2 * row]) * stats[2 * row + 1] * to_f32(t.gamma[j]) + b);
  }
}

template <class E, bool kLayer> void run(const NormParams& p, const Args& a) {
  const Tensors<E> t = tensors_of<E>(p, a, kLayer);
  const int64_t n = static_cast<int64_t>(t.rows) * t.cols;
  const unsigned flat_grid = grid_for(n, kThreads);
  const E* v = t.x;  // the normalised values: x, or h = x + residual read back from memory
  if (t.res) {
    KL_LAUNCH(residual_add<E>, flat_grid, kThreads, 0, a.stream, t.x, t.res, t.h, n);
    v = t.h;
  }
  float* stats = static_cast<float*>(a.workspace);
  KL_LAUNCH((row_stats<E, kLayer>), t.rows, kThreads, 0, a.stream, v, stats, t.cols, t.eps);
  KL_LAUNCH((normalise<E, kLayer>), flat_grid, kThreads, 0, a.stream, v, stats, t);
}

template <bool kLayer> void launch(const NormParams& p, const Args& a) {
  with_element(p.x, [&](auto e) { run<decltype(e), kLayer>(p, a); });
}

template <bool kLayer> Rung<NormParams> rung() {
  return {.op = op_of(kLayer),
          .name = "cuda_unfused",
          .note = "three kernels through memory: residual sum written and read back, two-pass row statistics into a workspace, then y elementwise: the row read three or four times, three launches",
          .workspace_bytes = [](const NormParams& p) { return static_cast<size_t>(2 * p.rows) * sizeof(float); },
          .configs = {{.name = "256_threads",
                       .threads = kThreads,
                       .kernels = {{for_elements([](auto e) { return KL_KERNEL(residual_add<decltype(e)>); }), {}, {}},
                                   {for_elements([](auto e) { return KL_KERNEL(row_stats<decltype(e), kLayer>); }),
                                    {"bar.sync", "st.shared", "rsqrt.approx"},
                                    {"BAR.SYNC", "STS", "MUFU.RSQ"}},
                                   {for_elements([](auto e) { return KL_KERNEL(normalise<decltype(e), kLayer>); }), {}, {}}},
                       .run = launch<kLayer>}}};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS { return {variant_of(rung<true>()), variant_of(rung<false>())}; }

}  // namespace kl::KL_TARGET
