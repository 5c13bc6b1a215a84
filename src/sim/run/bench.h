// What the simulator costs: a simulated thread (fiber start to exit), a barrier and a warp
// shuffle, per thread, measured on this machine. `kernelab sim bench` prints it.
#pragma once
#include <vector>

namespace kl::sim {

struct BenchPoint {
  unsigned os_threads;          // OS threads running blocks
  unsigned blocks, threads_per_block;
  double ns_per_thread;         // an empty kernel's launch, divided by its threads
  double ns_per_thread_barrier; // one __syncthreads(), per thread that waits at it
  double ns_per_block_barrier;  // the same for the whole block
  double ns_per_thread_shuffle; // one __shfl_xor_sync, per lane
};

// One point on one OS thread, one with `os_threads` (0: all cores).
std::vector<BenchPoint> bench_simulator(unsigned os_threads);

}  // namespace kl::sim
