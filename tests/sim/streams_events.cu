// Two streams working on alternate chunks: pinned host buffers, asynchronous copies in and
// out around a kernel on each stream, events timing the whole. Checked exactly.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));  \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

__global__ void axpb(int* x, int n, int a, int b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}

int main() {
  const int chunks = 6, chunk = 5000, n = chunks * chunk;
  int *host, *dev;
  CHECK(cudaMallocHost(&host, n * sizeof(int)));
  CHECK(cudaMalloc(&dev, n * sizeof(int)));
  for (int i = 0; i < n; ++i) host[i] = i;
  cudaStream_t streams[2];
  cudaEvent_t start, stop;
  for (cudaStream_t& s : streams) CHECK(cudaStreamCreate(&s));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  CHECK(cudaEventRecord(start, streams[0]));
  for (int c = 0; c < chunks; ++c) {
    cudaStream_t s = streams[c % 2];
    int *h = host + c * chunk, *d = dev + c * chunk;
    CHECK(cudaMemcpyAsync(d, h, chunk * sizeof(int), cudaMemcpyHostToDevice, s));
    axpb<<<(chunk + 127) / 128, 128, 0, s>>>(d, chunk, 3, c);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, d, chunk * sizeof(int), cudaMemcpyDeviceToHost, s));
  }
  CHECK(cudaEventRecord(stop, streams[1]));
  for (cudaStream_t s : streams) CHECK(cudaStreamSynchronize(s));
  CHECK(cudaEventSynchronize(stop));
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != 3 * i + i / chunk;
  printf("%d chunks on 2 streams: %d values wrong, %s elapsed time\n", chunks, wrong, ms >= 0 ? "a" : "no");
  for (cudaStream_t s : streams) CHECK(cudaStreamDestroy(s));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
  return wrong == 0 ? 0 : 1;
}
