// Launches and the runtime API: the configurations CUDA refuses (reported through
// cudaGetLastError as CUDA does), copies and frees checked against the allocations, pointer
// arguments that no allocation holds, the race check and the thread orders behind it, and
// the simulated device's properties, events, streams and symbols.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

namespace {

using ::testing::HasSubstr;

__global__ void nothing(int*) {}

TEST(SimLaunch, ConfigurationsCudaRefuses) {
  DeviceBuffer<int> x(1);
  const struct {
    dim3 grid, block;
    size_t smem;
    cudaError_t error;
    const char* message;
  } cases[] = {
      {1, 1025, 0, cudaErrorInvalidConfiguration, "1025 threads per block (block (1025,1,1)) exceed the limit of 1024"},
      {1, dim3(512, 4), 0, cudaErrorInvalidConfiguration, "2048 threads per block"},
      {1, dim3(1, 1, 65), 0, cudaErrorInvalidConfiguration, "exceeds the per-dimension limits (1024,1024,64)"},
      {dim3(1, 65536), 32, 0, cudaErrorInvalidConfiguration, "grid (1,65536,1) exceeds the limits"},
      {0, 32, 0, cudaErrorInvalidConfiguration, "a grid or block dimension is 0"},
      {1, 32, 228 * 1024, cudaErrorInvalidValue, "233472 bytes of dynamic shared memory exceed the device's 232448"},
      {1, 32, 64 * 1024, cudaErrorInvalidValue, "above 48 KiB a kernel needs cudaFuncSetAttribute"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SIM_LAUNCH(nothing, c.grid, c.block, c.smem, x.p), c.error) << c.message;
    EXPECT_THAT(kl::sim::last_message(), HasSubstr(c.message));
    EXPECT_EQ(cudaPeekAtLastError(), c.error);
    EXPECT_EQ(cudaGetLastError(), c.error);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refused launch is not sticky";
  }
  EXPECT_EQ(SIM_LAUNCH(nothing, dim3(1, 65535), dim3(1, 1, 64), 0, x.p), cudaSuccess) << "limits are inclusive";
  EXPECT_EQ(SIM_LAUNCH(nothing, 1, dim3(1024), 0, x.p), cudaSuccess);
}

__global__ void fill_dynamic(int n) {
  int* s = kl::sim::dynamic_shared<int>();
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) s[i] = i;
}

TEST(SimLaunch, LargeDynamicSharedMemoryNeedsTheAttribute) {
  const int bytes = 200 * 1024;
  ASSERT_EQ(cudaFuncSetAttribute(fill_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 0), cudaSuccess);  // the default
  EXPECT_EQ(SIM_LAUNCH(fill_dynamic, 2, 128, bytes, bytes / 4), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaFuncSetAttribute(fill_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), cudaSuccess);
  EXPECT_EQ(SIM_LAUNCH(fill_dynamic, 2, 128, bytes, bytes / 4), cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(fill_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

__global__ void copy_kernel(const int* in, int* out) { out[threadIdx.x] = in[threadIdx.x]; }

TEST(SimLaunch, PointerArgumentsMustBeDeviceMemory) {
  ClearSimErrors clear;
  int host[32] = {};
  DeviceBuffer<int> dev(32);
  EXPECT_EQ(SIM_LAUNCH(copy_kernel, 1, 32, 0, host, dev.p), cudaErrorIllegalAddress);
  EXPECT_THAT(kl::sim::last_message(),
              HasSubstr("invalid pointer: argument 1 of kernel 'copy_kernel' is 0x"));
  kl::sim::clear_errors();
  int* freed = nullptr;
  ASSERT_EQ(cudaMalloc(&freed, 32 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaFree(freed), cudaSuccess);
  EXPECT_EQ(SIM_LAUNCH(copy_kernel, 1, 32, 0, dev.p, freed), cudaErrorIllegalAddress);
  EXPECT_THAT(kl::sim::last_message(),
              HasSubstr("use after free: argument 2 of kernel 'copy_kernel' points into a 128-byte cudaMalloc buffer"));
}

__global__ void write_past_end(int* x, int n) { x[n + threadIdx.x] = 1; }

TEST(SimLaunch, WritesPastABufferAreCaughtAfterTheLaunch) {
  ClearSimErrors clear;
  DeviceBuffer<int> x(100);
  EXPECT_EQ(SIM_LAUNCH(write_past_end, 1, 3, 0, x.p, 100), cudaErrorIllegalAddress);
  EXPECT_THAT(kl::sim::last_message(),
              HasSubstr("out-of-bounds write: kernel 'write_past_end' wrote past the end of the 400-byte cudaMallocManaged buffer"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("bytes 0..11 after its end"));
}

TEST(SimLaunch, CopiesAndFreesAreChecked) {
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 10 * sizeof(int)), cudaSuccess);
  int h[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, back[10] = {};
  EXPECT_EQ(cudaMemcpy(d, h, 10 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d + 5, d, 5 * sizeof(int), cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back, d, 10 * sizeof(int), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(back[7], 3);
  EXPECT_EQ(cudaMemset(d, 0xff, 10 * sizeof(int)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back, d, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[0], -1);
  EXPECT_EQ(cudaMemcpy(d, h, 12 * sizeof(int), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_THAT(kl::sim::last_message(),
              HasSubstr("cudaMemcpy: the destination range of 48 bytes runs 8 bytes past the end of its 40-byte cudaMalloc buffer"));
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h, back, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "a host destination";
  EXPECT_EQ(cudaMemset(d + 8, 0, 3 * sizeof(int)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  (void)cudaGetLastError();
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 64), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

__device__ int device_counter;
__constant__ float constants[4];

__global__ void use_symbols(float* out) {
  atomicAdd(&device_counter, 1);
  out[threadIdx.x] = constants[threadIdx.x % 4];
}
__global__ void bump(int* p) { atomicAdd(p, 10); }

TEST(SimLaunch, DeviceAndConstantSymbols) {
  const float c[4] = {1, 2, 3, 4};
  const int zero = 0;
  ASSERT_EQ(cudaMemcpyToSymbol(constants, c, sizeof c), cudaSuccess);
  ASSERT_EQ(cudaMemcpyToSymbol(device_counter, &zero, sizeof zero), cudaSuccess);
  DeviceBuffer<float> out(8);
  ASSERT_EQ(SIM_LAUNCH(use_symbols, 1, 8, 0, out.p), cudaSuccess);
  EXPECT_EQ(out[6], 3.0f);
  int* counter = nullptr;
  ASSERT_EQ(cudaGetSymbolAddress(reinterpret_cast<void**>(&counter), device_counter), cudaSuccess);
  ASSERT_EQ(SIM_LAUNCH(bump, 1, 1, 0, counter), cudaSuccess) << "a symbol's address is a valid argument";
  int host = 0;
  ASSERT_EQ(cudaMemcpyFromSymbol(&host, device_counter, sizeof host), cudaSuccess);
  EXPECT_EQ(host, 18);
  EXPECT_EQ(cudaMemcpyToSymbol(constants, c, sizeof c, 4), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST(SimLaunch, TheSimulatedDevice) {
  int count = 0, device = -1, value = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "kernelab SIMT simulator");
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.maxThreadsDim[2], 64);
  EXPECT_EQ(p.maxGridSize[1], 65535);
  EXPECT_EQ(p.sharedMemPerBlockOptin, 232448u);
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.major * 10 + p.minor, 90);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(value, 132);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidConfiguration), "invalid configuration argument");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorLaunchFailure), "cudaErrorLaunchFailure");
}

TEST(SimLaunch, StreamsAndEvents) {
  cudaStream_t s;
  cudaEvent_t a, b;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  DeviceBuffer<int> x(64, 0);
  EXPECT_EQ(cudaEventRecord(a, s), cudaSuccess);
  EXPECT_EQ(kl::sim::launch_named("bump", bump, 1, 64, 0, s, x.p), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(b, s), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(x[0], 640);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(kl::sim::launch_named("bump", bump, 1, 1, 0, s, x.p), cudaErrorInvalidResourceHandle) << "a destroyed stream";
  (void)cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
}

__global__ void double_it(int* p) { p[threadIdx.x] *= 2; }

TEST(SimLaunch, GraphsReplayWhatAStreamCaptured) {
  DeviceBuffer<int> x(64, 1);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(kl::sim::launch_named("bump", bump, 1, 64, 0, s, x.p), cudaSuccess);
  EXPECT_EQ(kl::sim::launch_named("double_it", double_it, 1, 64, 0, s, x.p), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(x.p + 63, 0, sizeof(int), s), cudaSuccess);
  EXPECT_EQ(x[0], 1) << "captured work does not run at capture";
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);  // the graph outlives the stream it was captured on
  for (int replay = 0; replay < 2; ++replay) ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  // bump adds 10 per thread to x[0] (64 threads: 640), double_it doubles each word, then x[63] = 0.
  EXPECT_EQ(x[0], ((1 + 640) * 2 + 640) * 2);
  EXPECT_EQ(x[1], 4);
  EXPECT_EQ(x[63], 0);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
}

// The ticket each thread draws shows the order the scheduler ran them in.
__global__ void draw_tickets(int* counter, int* ticket) { ticket[threadIdx.x] = atomicAdd(counter, 1); }

TEST(SimRace, ThreadOrderFollowsTheOption) {
  DeviceBuffer<int> counter(1, 0), ticket(64, -1);
  const kl::sim::Options saved = kl::sim::options();
  kl::sim::options().order = kl::sim::Order::reverse;
  ASSERT_EQ(SIM_LAUNCH(draw_tickets, 1, 64, 0, counter.p, ticket.p), cudaSuccess);
  kl::sim::options() = saved;
  for (int t = 0; t < 64; ++t) EXPECT_EQ(ticket[t], 63 - t);
}

__global__ void racy_shift(const int* in, int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = in[threadIdx.x];
  out[threadIdx.x] = s[(threadIdx.x + 63) % 64];  // planted: no barrier after the store
}
__global__ void float_sum(const float* in, float* total) { atomicAdd(total, in[threadIdx.x + blockIdx.x * 64]); }

TEST(SimRace, PlantedRaceIsFoundAndAtomicsAreNot) {
  DeviceBuffer<int> in(64), out(64, 0);
  for (int i = 0; i < 64; ++i) in[i] = i + 1;
  const kl::sim::Buffer bufs[] = {{out.p, 64 * sizeof(int)}};
  const auto racy = kl::sim::check_races(bufs, [&] { SIM_LAUNCH(racy_shift, 1, 64, 0, in.p, out.p); }, "racy_shift");
  EXPECT_TRUE(racy.race);
  EXPECT_THAT(racy.message, HasSubstr("race in racy_shift"));
  EXPECT_THAT(racy.message, HasSubstr("buffer 1 of 1 (256 bytes at"));

  DeviceBuffer<int> counter(1, 0), ticket(64, 0);
  const kl::sim::Buffer counted[] = {{counter.p, sizeof(int)}};
  EXPECT_FALSE(kl::sim::check_races(counted, [&] { SIM_LAUNCH(draw_tickets, 1, 64, 0, counter.p, ticket.p); }).race);

  DeviceBuffer<float> values(64 * 8), total(1, 0.0f);
  for (int i = 0; i < 64 * 8; ++i) values[i] = 1.0f / float(i + 3);
  const kl::sim::Buffer sums[] = {{total.p, sizeof(float)}};
  const auto r = kl::sim::check_races(sums, [&] { SIM_LAUNCH(float_sum, 8, 64, 0, values.p, total.p); }, "float_sum");
  EXPECT_FALSE(r.race) << r.message;
  if (!r.message.empty()) {
    EXPECT_THAT(r.message, HasSubstr("within the rounding of its floating-point atomics"));
  }
}

}  // namespace
#endif
