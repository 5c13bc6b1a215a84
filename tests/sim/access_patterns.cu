// Memory access patterns whose Nsight Compute counts a person can work out by hand:
// strided loads, a column walk over shared memory with and without padding, 16-byte vector
// copies, a broadcast, a half-active warp, a divergent branch, atomics and stores of computed
// 16-bit values. Each kernel runs
// one launch; the program checks its own results. tests/test_sim_profile.cpp runs it under
// `kernelab sim run --profile --json` and compares the counts with its own arithmetic.
#include <cstdio>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    cudaError_t e = (call);                                                       \
    if (e != cudaSuccess) {                                                       \
      std::printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

// Lane i loads in[i * S]: 32 requests' worth of lanes, one request.
template <int S>
__global__ void strided_load(float* out, const float* in) {
  out[threadIdx.x] = in[threadIdx.x * S];
}

// Rows written, then columns read: tile[lane][k] for k = 0..31. With W = 32 every lane of a
// column read hits the same bank; with W = 33 the lanes spread over all 32.
template <int W>
__global__ void column_walk(float* out, const float* in) {
  __shared__ float tile[32][W];
  const int lane = threadIdx.x;
  for (int k = 0; k < 32; ++k) tile[k][lane] = in[k * 32 + lane];
  __syncthreads();
  float sum = 0;
  for (int k = 0; k < 32; ++k) sum += tile[lane][k];
  out[lane] = sum;
}

// 16-byte vectors: global copy, then through shared memory in reverse lane order.
__global__ void vector_copy(float4* out, const float4* in) {
  __shared__ float4 s[64];
  const int i = threadIdx.x;
  s[i] = in[i];
  __syncthreads();
  out[i] = s[63 - i];
}

// Every lane reads the same shared word and the same global word.
__global__ void broadcast(float* out, const float* in) {
  __shared__ float s[32];
  if (threadIdx.x == 0) s[0] = 2.0f;
  __syncthreads();
  out[threadIdx.x] = s[0] + in[0];
}

// Half the warp loads and stores; then odd and even lanes store to different arrays.
__global__ void half_active(float* out, float* odd, float* even, const float* in) {
  const int lane = threadIdx.x;
  if (lane < 16) out[lane] = in[lane];
  if (lane % 2) odd[lane / 2] = 1.0f;
  else even[lane / 2] = 2.0f;
}

// Lane l takes path l % 4: each iteration's load runs with the 8 lanes on that path.
__global__ void divergent_loop(float* out, const float* a) {
  const int lane = threadIdx.x, path = lane % 4;
  float v = 0;
  for (int q = 0; q < 4; ++q)
    if (path == q) v += a[q];
  out[lane] = v;
}

// 8-byte shared accesses, two half-warp phases: d[2 * lane] puts lanes l and l + 8 on the same banks.
__global__ void wide_shared(double* out) {
  __shared__ double d[64];
  const int lane = threadIdx.x;
  d[2 * lane] = lane, d[2 * lane + 1] = -lane;
  __syncthreads();
  out[lane] = d[lane];
}

// 32 lanes add to one counter, then to four counters in one sector.
__global__ void atomics(int* one, int* four) {
  atomicAdd(one, 1);
  atomicAdd(&four[threadIdx.x % 4], 1);
}

// A converted value stored straight to global memory: one 64-byte request per dtype (2 sectors).
// GCC's TSan pass leaves `out[i] = call()` uninstrumented while the conversion stays a call, which
// the profiling build's flattened kernels (src/sim/cuda_sim.h) prevent.
__global__ void store_converted(__half* h, __nv_bfloat16* b, const float* in) {
  h[threadIdx.x] = __float2half_rn(in[threadIdx.x] + 1.0f);
  b[threadIdx.x] = __float2bfloat16_rn(in[threadIdx.x] - 1.0f);
}

int main() {
  const int n = 32 * 32 * 4;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = float(i % 97) * 0.5f;
  float *in, *out, *odd, *even;
  int *one, *four;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&odd, 16 * sizeof(float)));
  CHECK(cudaMalloc(&even, 16 * sizeof(float)));
  CHECK(cudaMalloc(&one, sizeof(int)));
  CHECK(cudaMalloc(&four, 4 * sizeof(int)));
  CHECK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(one, 0, sizeof(int)));
  CHECK(cudaMemset(four, 0, 4 * sizeof(int)));
  int wrong = 0;
  std::vector<float> r(n);

  strided_load<1><<<1, 32>>>(out, in);
  strided_load<2><<<1, 32>>>(out + 32, in);
  strided_load<8><<<1, 32>>>(out + 64, in);
  strided_load<32><<<1, 32>>>(out + 96, in);
  CHECK(cudaMemcpy(r.data(), out, 128 * sizeof(float), cudaMemcpyDeviceToHost));
  const int strides[4] = {1, 2, 8, 32};
  for (int s = 0; s < 4; ++s)
    for (int i = 0; i < 32; ++i) wrong += r[32 * s + i] != h[i * strides[s]];

  column_walk<32><<<1, 32>>>(out, in);
  column_walk<33><<<1, 32>>>(out + 32, in);
  CHECK(cudaMemcpy(r.data(), out, 64 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int lane = 0; lane < 32; ++lane) {
    float sum = 0;
    for (int k = 0; k < 32; ++k) sum += h[lane * 32 + k];
    wrong += r[lane] != sum;
    wrong += r[32 + lane] != sum;
  }

  vector_copy<<<1, 64>>>(reinterpret_cast<float4*>(out), reinterpret_cast<const float4*>(in));
  CHECK(cudaMemcpy(r.data(), out, 256 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i)
    for (int c = 0; c < 4; ++c) wrong += r[4 * i + c] != h[4 * (63 - i) + c];

  broadcast<<<1, 32>>>(out, in);
  CHECK(cudaMemcpy(r.data(), out, 32 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) wrong += r[i] != 2.0f + h[0];

  half_active<<<1, 32>>>(out + 64, odd, even, in);
  CHECK(cudaMemcpy(r.data(), out + 64, 16 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 16; ++i) wrong += r[i] != h[i];

  divergent_loop<<<1, 32>>>(out, in);
  CHECK(cudaMemcpy(r.data(), out, 32 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int lane = 0; lane < 32; ++lane) wrong += r[lane] != h[lane % 4];

  wide_shared<<<1, 32>>>(reinterpret_cast<double*>(out));
  std::vector<double> dr(32);
  CHECK(cudaMemcpy(dr.data(), out, 32 * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) wrong += dr[i] != (i % 2 ? -(i / 2) : i / 2);

  atomics<<<1, 32>>>(one, four);
  int got_one = 0, got_four[4] = {};
  CHECK(cudaMemcpy(&got_one, one, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(got_four, four, sizeof got_four, cudaMemcpyDeviceToHost));
  wrong += got_one != 32;
  for (int c : got_four) wrong += c != 8;

  __half* h16;
  __nv_bfloat16* b16;
  CHECK(cudaMalloc(&h16, 32 * sizeof(__half)));
  CHECK(cudaMalloc(&b16, 32 * sizeof(__nv_bfloat16)));
  store_converted<<<1, 32>>>(h16, b16, in);
  std::vector<__half> hr(32);
  std::vector<__nv_bfloat16> br(32);
  CHECK(cudaMemcpy(hr.data(), h16, 32 * sizeof(__half), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(br.data(), b16, 32 * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) wrong += __half2float(hr[i]) != h[i] + 1.0f || __bfloat162float(br[i]) != h[i] - 1.0f;

  CHECK(cudaGetLastError());
  std::printf("access patterns: %d values wrong\n", wrong);
  return wrong == 0 ? 0 : 1;
}
