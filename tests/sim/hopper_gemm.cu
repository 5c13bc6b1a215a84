// A Hopper GEMM in miniature, written the way CUTLASS-style sm_90a kernels are: a producer
// warpgroup loads A and B tiles with TMA into 128-byte-swizzled shared memory, full/empty
// mbarriers pass each of 3 stages between it and two consumer warpgroups, each consumer runs
// wgmma.mma_async m64n128k16 on shared-memory descriptors, setmaxnreg moves registers from the
// producer to the consumers, and the consumers store D twice: fp32 from their fragments, and
// bf16 through shared memory with a TMA store. Shapes are off the tiles (TMA zero-fills the
// edges); small integers keep every sum exact, so the GPU and the simulator agree bit for bit.
// Modes (argv[1]) plant the mistakes the simulator must catch:
//   wrong-swizzle  the B descriptors say 64-byte swizzle where TMA wrote 128-byte: wrong D
//   deadlock       the full barriers expect 2 arrivals and get 1: consumers wait forever
//   no-fence       the consumers skip wgmma.fence before their first wgmma
//   half-group     only 64 of a consumer warpgroup's 128 threads issue the wgmma
//   past-window    the B descriptors start at the mbarriers, so the tile runs past the shared memory
// Build for a GPU: nvcc -std=c++17 -arch=sm_90a -I src tests/sim/hopper_gemm.cu
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/ptx.h"

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int M = 200, N = 136, K = 328;
constexpr int BM = 128, BN = 128, BK = 64, kStages = 3;  // BK: 64 bf16 = one 128-byte swizzle row
enum Mode { kNormal, kWrongSwizzle, kDeadlock, kNoFence, kHalfGroup, kPastWindow };

struct alignas(1024) Smem {
  __nv_bfloat16 a[kStages][BM * BK];
  __nv_bfloat16 b[kStages][BN * BK];
  uint64_t full[kStages], empty[kStages];
};

__global__ void __launch_bounds__(384, 1)
    hopper_gemm(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                const __grid_constant__ CUtensorMap map_d, float* d, int mode) {
#if KL_PTX_SM90A
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int k_tiles = (K + BK - 1) / BK;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      kl::ptx::mbarrier_init(&s.full[i], mode == kDeadlock ? 2 : 1);
      kl::ptx::mbarrier_init(&s.empty[i], 2);  // one arrival per consumer warpgroup
    }
    kl::ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (wg == 0) {  // producer
    kl::ptx::setmaxnreg_dec<40>();
    if (tid / 32 == 0 && kl::ptx::elect_sync()) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int st = kt % kStages, phase = (kt / kStages) & 1;
        kl::ptx::mbarrier_wait_parity(&s.empty[st], phase ^ 1);  // the consumers freed the stage
        kl::ptx::mbarrier_arrive_expect_tx(&s.full[st], (BM + BN) * BK * 2);  // both tiles' bytes
        kl::ptx::tma_load_2d(s.a[st], &map_a, kt * BK, m0, &s.full[st]);
        kl::ptx::tma_load_2d(s.b[st], &map_b, kt * BK, n0, &s.full[st]);
      }
    }
    return;
  }
  kl::ptx::setmaxnreg_inc<232>();
  const int c = wg - 1;  // consumer 0 computes rows 0-63 of the block tile, consumer 1 rows 64-127
  float acc[64] = {};
  const kl::ptx::Swizzle b_swizzle = mode == kWrongSwizzle ? kl::ptx::Swizzle::b64 : kl::ptx::Swizzle::b128;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int st = kt % kStages, phase = (kt / kStages) & 1;
    kl::ptx::mbarrier_wait_parity(&s.full[st], phase);
    if (mode != kNoFence) kl::ptx::wgmma_fence();
    if (mode != kHalfGroup || tid < 64) {
      for (int kk = 0; kk < BK / 16; ++kk) {
        // K-major, 128-byte rows: 8-row atoms 1024 bytes apart; the k16 step moves the start 32 bytes.
        const uint64_t da = kl::ptx::smem_descriptor(&s.a[st][c * 64 * BK + kk * 16], 16, 1024, kl::ptx::Swizzle::b128);
        const void* b_tile = mode == kPastWindow ? static_cast<const void*>(s.full) : &s.b[st][kk * 16];
        const uint64_t db = kl::ptx::smem_descriptor(b_tile, 16, 1024, b_swizzle);
        kl::ptx::wgmma_m64n128k16_f32_bf16_ss(acc, da, db, 1);
      }
    }
    kl::ptx::wgmma_commit();
    kl::ptx::wgmma_wait<0>();
    if (tid == 0) kl::ptx::mbarrier_arrive(&s.empty[st]);
  }
  // D fragment: warp w of the warpgroup, lane 4g+t: acc[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2.
  const int w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  for (int i = 0; i < 64; ++i) {
    const int row = m0 + c * 64 + 16 * w + g + 8 * ((i % 4) / 2), col = n0 + 8 * (i / 4) + 2 * t + i % 2;
    if (row < M && col < N) d[row * N + col] = acc[i];
  }
  // The bf16 copy: both consumers are done with stage 0 once they pass this named barrier.
  kl::ptx::bar_sync(1, 256);
  __nv_bfloat16* tile = s.a[0] + c * 64 * BN;  // 64 x 128 bf16, row-major, unswizzled
  for (int i = 0; i < 64; ++i) tile[(16 * w + g + 8 * ((i % 4) / 2)) * BN + 8 * (i / 4) + 2 * t + i % 2] = __float2bfloat16(acc[i]);
  kl::ptx::fence_proxy_async();  // the generic-proxy writes above, before the async proxy reads them
  kl::ptx::bar_sync(2 + c, 128);
  if (tid == 0) {
    kl::ptx::tma_store_2d(&map_d, n0, m0 + c * 64, tile);
    kl::ptx::bulk_commit();
    kl::ptx::bulk_wait_read<0>();
  }
#endif
}

CUtensorMap tensor_map(const void* base, uint64_t cols, uint64_t rows, uint32_t box_cols, uint32_t box_rows,
                       CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  const CUresult r = kl::ptx::encode_tensor_map_2d(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, base, cols, rows, cols * 2, box_cols,
                                                   box_rows, swizzle);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", int(r));
    exit(1);
  }
  return map;
}

int main(int argc, char** argv) {
  Mode mode = kNormal;
  if (argc > 1) {
    const char* names[] = {"", "wrong-swizzle", "deadlock", "no-fence", "half-group", "past-window"};
    for (int i = 1; i < 6; ++i)
      if (strcmp(argv[1], names[i]) == 0) mode = Mode(i);
  }
  std::vector<int> ai(M * K), bi(N * K);  // B stored N x K (K-major: column-major B)
  for (int i = 0; i < M * K; ++i) ai[i] = (i * 7 + 3) % 9 - 4;
  for (int i = 0; i < N * K; ++i) bi[i] = (i * 5 + 1) % 7 - 3;
  std::vector<__nv_bfloat16> a(M * K), b(N * K), dh(M * N);
  for (int i = 0; i < M * K; ++i) a[i] = __float2bfloat16(float(ai[i]));
  for (int i = 0; i < N * K; ++i) b[i] = __float2bfloat16(float(bi[i]));
  __nv_bfloat16 *da, *db, *dd16;
  float* dd;
  CHECK(cudaMalloc(&da, sizeof(__nv_bfloat16) * M * K));
  CHECK(cudaMalloc(&db, sizeof(__nv_bfloat16) * N * K));
  CHECK(cudaMalloc(&dd16, sizeof(__nv_bfloat16) * M * N));
  CHECK(cudaMalloc(&dd, sizeof(float) * M * N));
  CHECK(cudaMemcpy(da, a.data(), sizeof(__nv_bfloat16) * M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), sizeof(__nv_bfloat16) * N * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dd, 0xff, sizeof(float) * M * N));
  CHECK(cudaMemset(dd16, 0xff, sizeof(__nv_bfloat16) * M * N));
  const CUtensorMap map_a = tensor_map(da, K, M, BK, BM, CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap map_b = tensor_map(db, K, N, BK, BN, CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap map_d = tensor_map(dd16, N, M, BN, 64, CU_TENSOR_MAP_SWIZZLE_NONE);
  const int smem = int(sizeof(Smem));
  CHECK(cudaFuncSetAttribute(hopper_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  hopper_gemm<<<dim3((N + BN - 1) / BN, (M + BM - 1) / BM), 384, smem>>>(map_a, map_b, map_d, dd, int(mode));
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("hopper_gemm: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::vector<float> d(M * N);
  CHECK(cudaMemcpy(d.data(), dd, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dh.data(), dd16, sizeof(__nv_bfloat16) * M * N, cudaMemcpyDeviceToHost));
  int wrong = 0, wrong16 = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int want = 0;
      for (int l = 0; l < K; ++l) want += ai[i * K + l] * bi[j * K + l];
      wrong += d[i * N + j] != float(want);
      wrong16 += __bfloat162float(dh[i * N + j]) != __bfloat162float(__float2bfloat16(float(want)));
    }
  printf("hopper gemm %dx%dx%d bf16: fp32 D %d of %d wrong, bf16 D (TMA store) %d wrong\n", M, N, K, wrong, M * N, wrong16);
  return wrong + wrong16 == 0 ? 0 : 1;
}
