// Shared by the simulator's tests: device buffers readable from the host (managed memory is
// host memory on the simulator), a launch macro that names the kernel, and a guard that
// clears the sticky error a planted failure leaves behind.
#pragma once
#if KERNELAB_HAVE_SIM
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "sim/cuda_sim.h"

#define SIM_LAUNCH(kernel, grid, block, smem, ...) kl::sim::launch_named(#kernel, kernel, grid, block, smem, 0, __VA_ARGS__)

template <class T>
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t n, T fill = T{}) : n(n) {
    EXPECT_EQ(cudaMallocManaged(&p, n * sizeof(T)), cudaSuccess);
    for (std::size_t i = 0; i < n; ++i) p[i] = fill;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T& operator[](std::size_t i) { return p[i]; }
  std::vector<T> host() const { return std::vector<T>(p, p + n); }
  T* p = nullptr;
  std::size_t n;
};

// Tests that plant a failure end with the context usable again.
struct ClearSimErrors {
  ~ClearSimErrors() {
    kl::sim::clear_errors();
    (void)cudaGetLastError();
  }
};
#endif
