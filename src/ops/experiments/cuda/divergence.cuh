// What the two exp_divergence rungs share. Both run the same loop over paths, entering the body
// of path q only for elements on path q; they differ in which element a thread takes:
//   divergent (v01): thread t takes element t, so a warp holds min(paths, 32) paths and runs each body;
//   uniform (v02):   thread t takes the (t mod G)-th element of path t / G (G = threads per path),
//                    so a warp's lanes share one path (but for warps straddling two groups) and
//                    the other paths' bodies are skipped by a uniform branch.
#pragma once
#include "ops/experiments/experiments.h"
#include "ops/gpu_rung.h"

namespace kl::KL_TARGET {

namespace {
constexpr int kDivergenceThreads = 256;

template <bool Uniform>
__global__ void __launch_bounds__(kDivergenceThreads)
    path_chains(const float* __restrict__ x, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, int n,
                int paths, int work) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= n) return;
  int e = t;
  if constexpr (Uniform) {
    // Path p has ceil((n - p) / paths) elements: p, p + paths, ... Thread t takes them in path order.
    const int base = n / paths, extra = n % paths;  // paths 0..extra-1 have one more element
    const int big = extra * (base + 1);
    const int p = t < big ? t / (base + 1) : extra + (t - big) / base;
    const int i = t < big ? t % (base + 1) : (t - big) % base;
    e = p + i * paths;
  }
  const int path = e % paths;
  float v = x[e];
  for (int q = 0; q < paths; ++q) {
    if (path == q) {
      const float aq = a[q], bq = b[q];
      for (int k = 0; k < work; ++k) v = fmaf(v, aq, bq);
    }
  }
  y[e] = v;
}

template <bool Uniform> void run_path_chains(const ExpDivergenceParams& p, const Args& a) {
  const int n = static_cast<int>(p.n);
  KL_LAUNCH(path_chains<Uniform>, dim3(static_cast<unsigned>((n + kDivergenceThreads - 1) / kDivergenceThreads)), dim3(kDivergenceThreads),
            0, a.stream, static_cast<const float*>(a.in[0].data()), static_cast<const float*>(a.in[1].data()),
            static_cast<const float*>(a.in[2].data()), static_cast<float*>(a.out[0].data()), n, static_cast<int>(p.paths),
            static_cast<int>(p.work));
}
}  // namespace

}  // namespace kl::KL_TARGET
