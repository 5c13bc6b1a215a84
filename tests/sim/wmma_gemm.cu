// nvcuda::wmma, the way a program uses it: one warp per 16x16 tile of D = A B + C, A and B
// in every layout, __half and __nv_bfloat16 inputs, float and __half accumulators, and an
// element-wise pass over an accumulator fragment (x[] / num_elements). Small integer values
// keep every sum exact, so the GPU and the simulator's twin must agree bit for bit.
// `wmma_gemm misaligned`: a load from a pointer that is not 32-byte aligned (the twin faults).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace nvcuda;

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int M = 32, N = 48, K = 64;

// D (row-major, ld N) = 2 * (A B + C) for the warp's tile (blockIdx.y, blockIdx.x).
template <class In, class Acc, class LA, class LB>
__global__ void tile_gemm(const In* a, const In* b, const Acc* c, Acc* d, int lda, int ldb) {
  const int i0 = blockIdx.y * 16, j0 = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, In, LA> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, In, LB> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc;
  wmma::load_matrix_sync(acc, c + i0 * N + j0, N, wmma::mem_row_major);
  for (int l = 0; l < K; l += 16) {
    const bool a_row = std::is_same<LA, wmma::row_major>::value, b_row = std::is_same<LB, wmma::row_major>::value;
    wmma::load_matrix_sync(fa, a + (a_row ? i0 * lda + l : l * lda + i0), lda);
    wmma::load_matrix_sync(fb, b + (b_row ? l * ldb + j0 : j0 * ldb + l), ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  for (int e = 0; e < acc.num_elements; ++e) acc.x[e] = acc.x[e] * Acc(2.0f);
  wmma::store_matrix_sync(d + i0 * N + j0, acc, N, wmma::mem_row_major);
}

__global__ void misaligned_load(const __half* a) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, a + 1, 16);
}

template <class T>
T from_int(int v) {
  return T(static_cast<float>(v));
}
template <class T>
float to_float(T v) {
  return static_cast<float>(v);
}

template <class In, class Acc, class LA, class LB>
int run(const char* name) {
  const bool a_row = std::is_same<LA, wmma::row_major>::value, b_row = std::is_same<LB, wmma::row_major>::value;
  std::vector<int> ai(M * K), bi(K * N), ci(M * N);
  for (int i = 0; i < M * K; ++i) ai[i] = (i * 7 + 3) % 9 - 4;
  for (int i = 0; i < K * N; ++i) bi[i] = (i * 5 + 1) % 7 - 3;
  for (int i = 0; i < M * N; ++i) ci[i] = (i * 3) % 11 - 5;
  // a_at(i, l), b_at(l, j): the stored buffers in the kernel's layouts.
  std::vector<In> a(M * K), b(K * N);
  std::vector<Acc> c(M * N), d(M * N, from_int<Acc>(-999));
  for (int i = 0; i < M; ++i)
    for (int l = 0; l < K; ++l) a[a_row ? i * K + l : l * M + i] = from_int<In>(ai[i * K + l]);
  for (int l = 0; l < K; ++l)
    for (int j = 0; j < N; ++j) b[b_row ? l * N + j : j * K + l] = from_int<In>(bi[l * N + j]);
  for (int i = 0; i < M * N; ++i) c[i] = from_int<Acc>(ci[i]);
  In *da, *db;
  Acc *dc, *dd;
  CHECK(cudaMalloc(&da, sizeof(In) * M * K));
  CHECK(cudaMalloc(&db, sizeof(In) * K * N));
  CHECK(cudaMalloc(&dc, sizeof(Acc) * M * N));
  CHECK(cudaMalloc(&dd, sizeof(Acc) * M * N));
  CHECK(cudaMemcpy(da, a.data(), sizeof(In) * M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), sizeof(In) * K * N, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), sizeof(Acc) * M * N, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dd, d.data(), sizeof(Acc) * M * N, cudaMemcpyHostToDevice));
  tile_gemm<In, Acc, LA, LB><<<dim3(N / 16, M / 16), 32>>>(da, db, dc, dd, a_row ? K : M, b_row ? N : K);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(d.data(), dd, sizeof(Acc) * M * N, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int want = ci[i * N + j];
      for (int l = 0; l < K; ++l) want += ai[i * K + l] * bi[l * N + j];
      if (to_float(d[i * N + j]) != 2.0f * want) ++wrong;
    }
  printf("wmma %s: %d of %d wrong\n", name, wrong, M * N);
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(dd));
  return wrong;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "misaligned") == 0) {
    __half* a;
    CHECK(cudaMalloc(&a, 1024));
    misaligned_load<<<1, 32>>>(a);
    const cudaError_t e = cudaDeviceSynchronize();
    printf("misaligned load: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
  }
  using R = wmma::row_major;
  using C = wmma::col_major;
  int wrong = run<__half, float, R, R>("f16 f32 A row B row");
  wrong += run<__half, float, R, C>("f16 f32 A row B col");
  wrong += run<__half, float, C, R>("f16 f32 A col B row");
  wrong += run<__half, float, C, C>("f16 f32 A col B col");
  wrong += run<__nv_bfloat16, float, R, R>("bf16 f32 A row B row");
  wrong += run<__nv_bfloat16, float, C, C>("bf16 f32 A col B col");
  wrong += run<__half, __half, R, C>("f16 f16 A row B col");
  if (wrong == 0) printf("wmma: all checks passed\n");
  return wrong == 0 ? 0 : 1;
}
