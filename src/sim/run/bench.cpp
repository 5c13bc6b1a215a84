// Kernels built for the simulator inside kernelab itself, timed with the host clock: each
// cost is the difference between a kernel with N switch points and the empty kernel,
// divided by N and by the threads, best of five runs.
#include "sim/run/bench.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "sim/cuda_sim.h"

namespace kl::sim {
namespace {

__global__ void empty_kernel(int*) {}

__global__ void barrier_kernel(int* out, int n) {
  for (int i = 0; i < n; ++i) __syncthreads();
  if (threadIdx.x == 0 && n < 0) *out = 1;  // keeps the loop
}

__global__ void shuffle_kernel(int* out, int n) {
  int v = int(threadIdx.x);
  for (int i = 0; i < n; ++i) v += __shfl_xor_sync(0xffffffffu, v, 1);
  if (v == 42) *out = v;
}

template <class F>
double best_seconds(F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

BenchPoint measure(unsigned os_threads) {
  constexpr unsigned kBlocks = 64, kThreads = 256;
  constexpr int kSteps = 64;
  const Options saved = options();
  options().os_threads = os_threads, options().serial = false, options().race_check = false;
  int* out = nullptr;
  cudaMalloc(&out, sizeof(int));
  const double t_empty = best_seconds([&] { launch(empty_kernel, kBlocks, kThreads, 0, 0, out); });
  const double t_bar = best_seconds([&] { launch(barrier_kernel, kBlocks, kThreads, 0, 0, out, kSteps); });
  const double t_shfl = best_seconds([&] { launch(shuffle_kernel, kBlocks, kThreads, 0, 0, out, kSteps); });
  cudaFree(out);
  options() = saved;
  const double threads = double(kBlocks) * kThreads;
  BenchPoint p{os_threads, kBlocks, kThreads, 0, 0, 0, 0};
  p.ns_per_thread = t_empty / threads * 1e9;
  p.ns_per_thread_barrier = (t_bar - t_empty) / (threads * kSteps) * 1e9;
  p.ns_per_block_barrier = p.ns_per_thread_barrier * kThreads;
  p.ns_per_thread_shuffle = (t_shfl - t_empty) / (threads * kSteps) * 1e9;
  return p;
}

}  // namespace

std::vector<BenchPoint> bench_simulator(unsigned os_threads) {
  if (os_threads == 0) os_threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<BenchPoint> points = {measure(1)};
  if (os_threads > 1) points.push_back(measure(os_threads));
  return points;
}

}  // namespace kl::sim
