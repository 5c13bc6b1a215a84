// The simulator's block-level semantics: built-in indices, barriers and their
// count/and/or forms, static and dynamic shared memory (0xFF bytes until written, in every
// block), blocks on several OS threads, and the deadlocks a barrier can cause, each reported
// with the threads and barriers involved.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

using ::testing::HasSubstr;

__global__ void record_indices(uint4* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  out[block * n + thread] = make_uint4(threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16,
                                       blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16,
                                       blockDim.x | blockDim.y << 8 | blockDim.z << 16,
                                       gridDim.x | gridDim.y << 8 | gridDim.z << 16);
}

TEST(SimSync, BuiltInIndicesCoverA3dGridOnce) {
  const dim3 grid(3, 2, 2), block(4, 3, 5);
  DeviceBuffer<uint4> out(12 * 60, make_uint4(~0u, 0, 0, 0));
  ASSERT_EQ(SIM_LAUNCH(record_indices, grid, block, 0, out.p), cudaSuccess);
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 5; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const uint4 v = out[((bz * 2 + by) * 3 + bx) * 60 + (tz * 3 + ty) * 4 + tx];
              EXPECT_EQ(v.x, tx | ty << 8 | tz << 16);
              EXPECT_EQ(v.y, bx | by << 8 | bz << 16);
              EXPECT_EQ(v.z, 4u | 3u << 8 | 5u << 16);
              EXPECT_EQ(v.w, 3u | 2u << 8 | 2u << 16);
            }
}

// Each thread reads what its neighbour wrote before the barrier: right in either order.
__global__ void rotate_through_shared(const int* in, int* out) {
  __shared__ int s[200];
  const unsigned t = threadIdx.x, n = blockDim.x;
  s[t] = in[blockIdx.x * n + t];
  __syncthreads();
  const int v = s[(t + 1) % n];
  __syncthreads();  // everyone has read before anyone overwrites
  s[t] = v * 2;
  __syncthreads();
  out[blockIdx.x * n + t] = s[(t + n - 1) % n];
}

TEST(SimSync, BarrierOrdersSharedMemoryInBothThreadOrders) {
  const unsigned blocks = 7, n = 200;  // not a whole number of warps
  DeviceBuffer<int> in(blocks * n), out(blocks * n, -1);
  for (unsigned i = 0; i < blocks * n; ++i) in[i] = int(i * 3 + 1);
  const kl::sim::Buffer buffers[] = {{out.p, blocks * n * sizeof(int)}};
  const auto r = kl::sim::check_races(buffers, [&] { SIM_LAUNCH(rotate_through_shared, blocks, n, 0, in.p, out.p); });
  EXPECT_FALSE(r.race) << r.message;
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < n; ++t) EXPECT_EQ(out[b * n + t], in[b * n + t] * 2) << "block " << b << " thread " << t;
}

__global__ void barrier_votes(int* out) {
  const int t = int(threadIdx.x), n = int(blockDim.x);
  int* o = out + blockIdx.x * 6;
  const int c = __syncthreads_count(t % 3 == 0);
  const int all_true = __syncthreads_and(t < n);
  const int all_false = __syncthreads_and(t < n - 1);
  const int any_true = __syncthreads_or(t == 17);
  const int any_false = __syncthreads_or(0);
  const int c0 = __syncthreads_count(0);
  if (t == 42) o[0] = c, o[1] = all_true, o[2] = all_false, o[3] = any_true, o[4] = any_false, o[5] = c0;
}

TEST(SimSync, SyncthreadsCountAndOrAreBlockWide) {
  DeviceBuffer<int> out(2 * 6, -1);
  ASSERT_EQ(SIM_LAUNCH(barrier_votes, 2, 100, 0, out.p), cudaSuccess);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(out[b * 6 + 0], 34);  // t = 0, 3, ..., 99
    EXPECT_EQ(out[b * 6 + 1], 1);
    EXPECT_EQ(out[b * 6 + 2], 0);
    EXPECT_EQ(out[b * 6 + 3], 1);
    EXPECT_EQ(out[b * 6 + 4], 0);
    EXPECT_EQ(out[b * 6 + 5], 0);
  }
}

// Static shared memory is private to a block even with blocks on several OS threads.
__global__ void own_block_id(int* out) {
  __shared__ int id;
  __shared__ int seen[64];
  if (threadIdx.x == 0) id = int(blockIdx.x);
  __syncthreads();
  seen[threadIdx.x] = id;
  __syncthreads();
  int ok = 1;
  for (int i = 0; i < 64; ++i) ok &= seen[i] == int(blockIdx.x);
  if (threadIdx.x == 0) out[blockIdx.x] = ok;
}

TEST(SimSync, StaticSharedMemoryIsPerBlock) {
  DeviceBuffer<int> out(500, 0);
  ASSERT_EQ(SIM_LAUNCH(own_block_id, 500, 64, 0, out.p), cudaSuccess);
  for (int b = 0; b < 500; ++b) EXPECT_EQ(out[b], 1) << "block " << b;
}

// Shared memory that nothing wrote reads as 0xFF bytes (a float NaN) in every block, also in
// the second and later blocks an OS thread runs, where the block before left its values.
__global__ void read_before_write(float* out) {
  __shared__ float tile[32];
  kl::sim::poison_shared_once(&tile, sizeof tile);  // what `sim run` puts after the declaration, as KL_SHARED does
  float* dyn = kl::sim::dynamic_shared<float>();
  const unsigned t = threadIdx.x, b = blockIdx.x;
  out[2 * b * 32 + t] = tile[t];  // planted: both read before any write
  out[(2 * b + 1) * 32 + t] = dyn[t];
  tile[t] = float(b), dyn[t] = float(b);  // what the next block would find without the poison
}

TEST(SimSync, UnwrittenSharedMemoryIsNanInEveryBlock) {
  const kl::sim::Options saved = kl::sim::options();
  constexpr int blocks = 6;
  for (const bool serial : {true, false}) {  // serial: all blocks on one OS thread
    kl::sim::options().serial = serial, kl::sim::options().os_threads = 2;
    DeviceBuffer<float> out(2 * blocks * 32, 0.0f);
    ASSERT_EQ(SIM_LAUNCH(read_before_write, blocks, 32, 32 * sizeof(float), out.p), cudaSuccess);
    for (int b = 0; b < blocks; ++b)
      for (const int dynamic : {0, 1}) {
        int poisoned = 0;
        for (int t = 0; t < 32; ++t) poisoned += std::bit_cast<std::uint32_t>(out[(2 * b + dynamic) * 32 + t]) == 0xffffffffu;
        EXPECT_EQ(poisoned, 32) << (dynamic ? "dynamic" : "static") << " shared memory, block " << b << ", serial " << serial;
      }
  }
  kl::sim::options() = saved;
}

// The fill comes with the first call in a block only: a later first call (here every thread
// but 0, after thread 0 has written) leaves the value alone.
__device__ float& block_total() {
  __shared__ float total;
  kl::sim::poison_shared_once(&total, sizeof total);
  return total;
}

__global__ void sum_through_helper(const float* in, float* out) {
  if (threadIdx.x == 0) block_total() = 0;
  __syncthreads();
  atomicAdd(&block_total(), in[blockIdx.x * blockDim.x + threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = block_total();
}

TEST(SimSync, SharedMemoryIsPoisonedOncePerBlockNotPerCall) {
  DeviceBuffer<float> in(4 * 64), out(4, -1.0f);
  for (int i = 0; i < 4 * 64; ++i) in[i] = float(i % 64);
  ASSERT_EQ(SIM_LAUNCH(sum_through_helper, 4, 64, 0, in.p, out.p), cudaSuccess);
  for (int b = 0; b < 4; ++b) EXPECT_EQ(out[b], 63.0f * 64 / 2) << "block " << b;
}

__global__ void reverse_in_dynamic_shared(const float* in, float* out, int n) {
  float* s = kl::sim::dynamic_shared<float>();  // what `extern __shared__ float s[];` becomes
  double* d = kl::sim::dynamic_shared<double>();
  if (threadIdx.x == 0) out[gridDim.x * n] = reinterpret_cast<std::uintptr_t>(d) % 16 == 0 ? 1.0f : 0.0f;
  s[threadIdx.x] = in[blockIdx.x * n + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * n + threadIdx.x] = s[n - 1 - threadIdx.x];
}

TEST(SimSync, DynamicSharedMemoryHasTheLaunchSize) {
  const int n = 96, blocks = 5;
  DeviceBuffer<float> in(blocks * n), out(blocks * n + n, 0.0f);
  for (int i = 0; i < blocks * n; ++i) in[i] = float(i);
  ASSERT_EQ(SIM_LAUNCH(reverse_in_dynamic_shared, blocks, n, n * sizeof(float), in.p, out.p, n), cudaSuccess);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) EXPECT_EQ(out[b * n + t], float(b * n + n - 1 - t));
  EXPECT_EQ(out[blocks * n], 1.0f) << "dynamic shared memory is 16-byte aligned";
}

__global__ void write_one_past(int n) {
  int* s = kl::sim::dynamic_shared<int>();
  s[threadIdx.x] = 1;
  if (threadIdx.x == 3) s[n] = 2;  // one int past the launch's n ints
}

TEST(SimSyncDeathTest, DynamicSharedMemoryEndsAtTheLaunchSize) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(SIM_LAUNCH(write_one_past, 1, 64, 64 * sizeof(int), 64),
               "kernel 'write_one_past' block \\(0,0,0\\) thread \\(3,0,0\\): access to byte 256 of dynamic shared "
               "memory, beyond the launch's 256 bytes");
}

// Blocks run side by side: each waits (bounded) until two blocks are in flight.
__global__ void meet(int* in_flight, int* met) {
  if (threadIdx.x != 0) return;
  atomicAdd(in_flight, 1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (atomicAdd(in_flight, 0) < 2 && std::chrono::steady_clock::now() < until) __nanosleep(1000);
  if (atomicAdd(in_flight, 0) >= 2) atomicAdd(met, 1);
}

TEST(SimSync, BlocksRunConcurrentlyOnSeveralOsThreads) {
  const kl::sim::Options saved = kl::sim::options();
  kl::sim::options().os_threads = 2, kl::sim::options().serial = false;
  DeviceBuffer<int> in_flight(1, 0), met(1, 0);
  ASSERT_EQ(SIM_LAUNCH(meet, 2, 32, 0, in_flight.p, met.p), cudaSuccess);
  kl::sim::options() = saved;
  EXPECT_EQ(met[0], 2);
}

// Warp 0 waits (politely, with __nanosleep) for a flag that warp 1 sets: the scheduler
// must leave a yielding warp to run the others, as a GPU's warp scheduler would.
__global__ void wait_for_other_warp(int* out) {
  __shared__ volatile int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x == 5) {
    while (flag == 0) __nanosleep(100);
    out[0] = flag;
  } else if (threadIdx.x == 63) {
    flag = 42;
  }
}

TEST(SimSync, SpinningWarpLetsTheOthersRun) {
  DeviceBuffer<int> out(1, 0);
  kl::sim::Options saved = kl::sim::options();
  for (kl::sim::Order order : {kl::sim::Order::forward, kl::sim::Order::reverse}) {
    kl::sim::options().order = order;
    out[0] = 0;
    ASSERT_EQ(SIM_LAUNCH(wait_for_other_warp, 1, 64, 0, out.p), cudaSuccess);
    EXPECT_EQ(out[0], 42);
  }
  kl::sim::options() = saved;
}

__global__ void early_return(int* out) {
  if (threadIdx.x == 5) return;  // thread 5 skips the barrier: allowed since Volta
  out[threadIdx.x] = 1;
  __syncthreads();
  out[blockDim.x + threadIdx.x] = out[threadIdx.x] + out[(threadIdx.x + 1) % blockDim.x];
}

// CUDA since Volta: a block barrier waits for the threads that have not exited.
TEST(SimSync, ABarrierWaitsOnlyForTheThreadsThatHaveNotExited) {
  ClearSimErrors clear;
  DeviceBuffer<int> out(128, 0);
  const int before = kl::sim::findings();
  ASSERT_EQ(SIM_LAUNCH(early_return, 1, 64, 0, out.p), cudaSuccess) << kl::sim::last_message();
  EXPECT_EQ(kl::sim::findings(), before);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[64 + t], t == 5 ? 0 : t == 4 ? 1 : 2) << t;  // thread 4 adds thread 5's 0
}

__global__ void split_barriers(int* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();  // planted: a different barrier
  }
  out[threadIdx.x] = 1;
}

TEST(SimSync, ThreadsAtDifferentBarriersAreADeadlock) {
  ClearSimErrors clear;
  DeviceBuffer<int> out(64, 0);
  EXPECT_EQ(SIM_LAUNCH(split_barriers, 1, 64, 0, out.p), cudaErrorLaunchFailure);
  const std::string m = kl::sim::last_message();
  EXPECT_THAT(m, HasSubstr("deadlock in kernel 'split_barriers' block (0,0,0): threads wait at different barriers"));
  EXPECT_THAT(m, HasSubstr("thread (0,0,0) at __syncthreads() at"));
  EXPECT_THAT(m, HasSubstr("thread (32,0,0) at __syncthreads() at"));
  EXPECT_THAT(m, HasSubstr("test_sim_sync.cpp:"));
  EXPECT_EQ(out[0], 0) << "the launch stopped at the deadlock";
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure) << "a failed kernel's error is sticky";
  EXPECT_EQ(SIM_LAUNCH(split_barriers, 1, 32, 0, out.p), cudaErrorLaunchFailure) << "no launch after it";
  kl::sim::clear_errors();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

__global__ void throws() { throw std::runtime_error("boom"); }

TEST(SimSync, AnExceptionInAKernelFailsTheLaunch) {
  ClearSimErrors clear;
  EXPECT_EQ(kl::sim::launch_named("throws", throws, 1, 1, 0, 0), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("kernel 'throws' block (0,0,0) thread (0,0,0): the kernel threw an exception: boom"));
}

}  // namespace
#endif
