// The runtime calls and device idioms of the CUDA toolkit's samples that change nothing a
// simulation shows but must work: device attributes, flags and limits, host registration,
// stream callbacks and host functions, events with flags, the profiler range, cooperative groups' generic
// thread_group and grid_group ranks, umin, code under __CUDA_ARCH__, a kernel's default
// argument, `extern T __shared__ x[]`, and a device-side assert that the host sees as
// cudaErrorAssert. Prints one line per check; exits 0 when all hold.
#include <cooperative_groups.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cassert>
#include <cstdio>
#include <cstring>

namespace cg = cooperative_groups;

__device__ int block_sum(cg::thread_group g, int* scratch, int v) {  // a generic group, made from the block
  scratch[g.thread_rank()] = v;
  g.sync();
  int total = 0;
  for (unsigned i = 0; i < g.size(); ++i) total += scratch[i];
  g.sync();
  return total;
}

__global__ void sums(int* out, int scale = 1) {
  extern int __shared__ scratch[];
  const int total = block_sum(cg::this_thread_block(), scratch, int(threadIdx.x));
  cg::grid_group grid = cg::this_grid();
#if __CUDA_ARCH__ >= 700
  if (threadIdx.x == 0) out[blockIdx.x] = scale * total + int(umin(grid.thread_rank(), 1000u));
#endif
}

__global__ void checked(const int* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(v[i] >= 0);
}

void CUDART_CB after_stream(cudaStream_t, cudaError_t status, void* flag) { *static_cast<int*>(flag) = 1 + status; }
void CUDART_CB host_function(void* flag) { *static_cast<int*>(flag) += 10; }

int main() {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    std::printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    failures += !ok;
  };
  int mode = -1, clock = 0, overlap = 0;
  cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0);
  cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&overlap, cudaDevAttrGpuOverlap, 0);
  check(mode == cudaComputeModeDefault && clock > 0 && overlap == 1, "attributes");
  unsigned flags = 0;
  check(cudaSetDeviceFlags(cudaDeviceMapHost) == cudaSuccess && cudaGetDeviceFlags(&flags) == cudaSuccess &&
            flags == cudaDeviceMapHost,
        "device flags");
  size_t heap = 0;
  check(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20) == cudaSuccess &&
            cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize) == cudaSuccess && heap == (1 << 20),
        "limits");
  check(cudaProfilerStart() == cudaSuccess && cudaProfilerStop() == cudaSuccess, "profiler range");

  static int host[64];
  int* mapped = nullptr;
  check(cudaHostRegister(host, sizeof host, cudaHostRegisterMapped) == cudaSuccess &&
            cudaHostGetDevicePointer(&mapped, host, 0) == cudaSuccess && mapped == host,
        "host registration");
  sums<<<2, 32, 32 * sizeof(int)>>>(mapped);  // the default argument: scale 1
  cudaDeviceSynchronize();
  check(host[0] == 496 && host[1] == 496 + 32, "default argument, thread_group, grid_group, __CUDA_ARCH__ code");
  check(cudaHostUnregister(host) == cudaSuccess, "host unregistration");

  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEvent_t event;  // cuda_runtime.h's C++ overload with flags
  check(cudaEventCreate(&event, cudaEventDisableTiming) == cudaSuccess && cudaEventRecord(event, s) == cudaSuccess,
        "event with flags");
  int flag = 0;
  cudaStreamAddCallback(s, after_stream, &flag, 0);
  cudaLaunchHostFunc(s, host_function, &flag);
  cudaStreamSynchronize(s);
  check(flag == 11, "stream callback and host function");

  int values[3] = {4, -1, 2}, *d;
  cudaMalloc(&d, sizeof values);
  cudaMemcpy(d, values, sizeof values, cudaMemcpyHostToDevice);
  checked<<<1, 32>>>(d, 3);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("device assert: %s\n", cudaGetErrorString(e));
  failures += e != cudaErrorAssert;
  return failures == 0 ? 0 : 1;
}
