// layernorm/rmsnorm v02: one kernel, a block per row: the residual add (h written once) and
// Welford's mean and variance in a single read of the row, merged across the block by warp
// shuffles and shared memory, then a second read to normalise. Saves two launches, the
// workspace, and the h read-back: two reads of the row instead of three or four. Configs: 256 or
// 512 threads a block (a row's share per thread halves with the larger block).
#include "ops/norm/cuda/norm_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace norm;

// kThreads a block: a multiple of 32, at most 1024 (block_welford's 32 slots).
template <class E, bool kLayer, int kThreads> __global__ void norm_welford(Tensors<E> t) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024);
  KL_SHARED(Welford, buf, [33]);
  const int64_t offs = static_cast<int64_t>(blockIdx.x) * t.cols;
  const auto value = [&](int j) {  // the row's j-th value: x, or x + residual
    return t.res ? to_f32(t.x[offs + j]) + to_f32(t.res[offs + j]) : to_f32(t.x[offs + j]);
  };
  Welford w{0, 0, 0};  // read 1: statistics, and h
  for (int j = threadIdx.x; j < t.cols; j += kThreads) {
    const float v = value(j);
    if (t.h) t.h[offs + j] = from_f32<E>(v);
    welford_add(w, v);
  }
  const Coeffs c = coeffs_of<kLayer>(block_welford(w, buf), t.eps);
  for (int j = threadIdx.x; j < t.cols; j += kThreads) {  // read 2: y
    const float b = kLayer ? to_f32(t.beta[j]) : 0.0f;
    t.y[offs + j] = from_f32<E>((value(j) - c.shift) * c.rstd * to_f32(t.gamma[j]) + b);
  }
}

template <class E, bool kLayer, int kThreads> void run(const NormParams& p, const Args& a) {
  const Tensors<E> t = tensors_of<E>(p, a, kLayer);
  KL_LAUNCH((norm_welford<E, kLayer, kThreads>), t.rows, kThreads, 0, a.stream, t);
}

template <bool kLayer, int kThreads> void launch(const NormParams& p, const Args& a) {
  with_element(p.x, [&](auto e) { run<decltype(e), kLayer, kThreads>(p, a); });
}

template <bool kLayer, int kThreads> RungConfig<NormParams> config() {
  return {.name = std::to_string(kThreads) + "_threads",
          .threads = kThreads,
          .kernels = {{for_elements([](auto e) { return KL_KERNEL(norm_welford<decltype(e), kLayer, kThreads>); }),
                       {"shfl.sync", "bar.sync"},
                       {"SHFL.BFLY", "BAR.SYNC"}}},
          .run = launch<kLayer, kThreads>};
}

template <bool kLayer> Rung<NormParams> rung() {
  return {.op = op_of(kLayer),
          .name = "cuda_welford",
          .note = "one kernel, a block per row: residual add and Welford mean/variance in one read, merged by warp shuffles and shared memory, then a normalising read: two reads of the row, one launch",
          .configs = {config<kLayer, 256>(), config<kLayer, 512>()}};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS { return {variant_of(rung<true>()), variant_of(rung<false>())}; }

}  // namespace kl::KL_TARGET
