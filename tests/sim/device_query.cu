// What a program learns of its GPU, and a launch that needs more shared memory than some
// GPUs allow per block (150 KiB: an H100 allows 227 KiB, an L4 99 KiB).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void fill(float* out) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  std::printf("%s: %d SMs (attribute %d), compute capability %d.%d, %d threads/SM, %zu bytes shared/block opt-in, "
              "%d bytes L2\n",
              p.name, p.multiProcessorCount, sms, p.major, p.minor, p.maxThreadsPerMultiProcessor,
              p.sharedMemPerBlockOptin, p.l2CacheSize);
  const int bytes = 150 * 1024;
  cudaError_t set = cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  float* out;
  cudaMalloc(&out, 256 * sizeof(float));
  fill<<<1, 256, bytes>>>(out);
  cudaError_t launched = cudaGetLastError();
  std::printf("150 KiB of dynamic shared memory: %s, launch %s\n", cudaGetErrorString(set), cudaGetErrorString(launched));
  return 0;
}
