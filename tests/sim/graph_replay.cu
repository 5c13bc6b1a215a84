// A CUDA Graph the way a serving loop uses one: a chain of small kernels captured once from a
// stream, then replayed many times with a single call each. Checked exactly.
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

__global__ void add(unsigned* x, int n, unsigned v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

__global__ void twice(unsigned* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}

int main() {
  const int n = 1000, steps = 5, replays = 100;
  unsigned* dev;
  CHECK(cudaMalloc(&dev, n * sizeof(unsigned)));
  CHECK(cudaMemset(dev, 0, n * sizeof(unsigned)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < steps; ++k) {
    add<<<(n + 255) / 256, 256, 0, s>>>(dev, n, unsigned(k + 1));  // captured, not run
    twice<<<(n + 255) / 256, 256, 0, s>>>(dev, n);
  }
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  unsigned first = 1;
  CHECK(cudaMemcpy(&first, dev, sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int r = 0; r < replays; ++r) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));

  // One replay maps v to (((((v+1)2+2)2+3)2+4)2+5)2 = 32 v + 114, modulo 2^32: order matters.
  unsigned want = 0;
  for (int r = 0; r < replays; ++r) want = 32 * want + 114;
  unsigned* host = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));
  CHECK(cudaMemcpy(host, dev, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != want;
  printf("%d kernels captured, %d replays: %s before the first replay, %d values wrong\n", 2 * steps, replays,
         first == 0 ? "untouched" : "CHANGED", wrong);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(dev));
  free(host);
  return wrong == 0 && first == 0 ? 0 : 1;
}
