// Kernels the launch cannot name by address: templates whose arguments nvcc deduces from the
// launch's arguments (a type, and non-type and bool values carried by tag types), and a kernel
// overloaded with a host function of the same name. The program checks every value itself.
#include <cuda_runtime.h>

#include <cstdio>
#include <type_traits>
#include <vector>

template <class T>
__global__ void scale(T* out, const T* in, T factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

template <int N>
__global__ void add_n(int* x, std::integral_constant<int, N>) {
  x[threadIdx.x] += N;
}

template <bool Negate>
__global__ void maybe_negate(float* x, std::bool_constant<Negate>) {
  if (Negate) x[threadIdx.x] = -x[threadIdx.x];
}

__global__ void fill(float* out, float value) { out[threadIdx.x] = value; }
void fill(std::vector<float>& v, float value) {  // a host function of the same name
  for (float& x : v) x = value;
}

int main() {
  const int n = 100;
  std::vector<float> h(n);
  fill(h, 0.0f);
  for (int i = 0; i < n; ++i) h[i] = float(i);
  float *in, *out;
  double *din, *dout;
  int* ints;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&din, n * sizeof(double));
  cudaMalloc(&dout, n * sizeof(double));
  cudaMalloc(&ints, 32 * sizeof(int));
  cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  std::vector<double> hd(h.begin(), h.end());
  cudaMemcpy(din, hd.data(), n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemset(ints, 0, 32 * sizeof(int));

  scale<<<(n + 31) / 32, 32>>>(out, in, 2.0f, n);   // T = float
  scale<<<(n + 31) / 32, 32>>>(dout, din, 0.5, n);  // T = double
  add_n<<<1, 32>>>(ints, std::integral_constant<int, 3>{});
  add_n<<<1, 32>>>(ints, std::integral_constant<int, 4>{});
  std::vector<float> r(n);
  std::vector<double> rd(n);
  std::vector<int> ri(32);
  cudaMemcpy(r.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(rd.data(), dout, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaMemcpy(ri.data(), ints, 32 * sizeof(int), cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += r[i] != 2.0f * h[i], wrong += rd[i] != 0.5 * hd[i];
  for (int v : ri) wrong += v != 7;

  maybe_negate<<<1, 32>>>(out, std::bool_constant<true>{});
  maybe_negate<<<1, 32>>>(out + 32, std::bool_constant<false>{});
  fill<<<1, 32>>>(out + 64, 1.5f);
  cudaMemcpy(r.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; ++i) wrong += r[i] != -2.0f * h[i], wrong += r[32 + i] != 2.0f * h[32 + i], wrong += r[64 + i] != 1.5f;
  printf("deduced kernels: %d values wrong (%s)\n", wrong, cudaGetErrorString(cudaGetLastError()));
  return wrong == 0 ? 0 : 1;
}
