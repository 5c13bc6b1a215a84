// What the Hopper gemm rungs (v11, v12) share: a 128x128 block tile of D computed by two consumer
// warpgroups, each 64x128 with wgmma.mma_async m64n128k16 on shared-memory descriptors; A and B
// staged 64 k at a time by TMA into 128-byte-swizzled shared memory (a k slice of 64 bf16 is one
// 128-byte swizzle row); full/empty mbarriers per stage. B must be K-major (b_layout=col: the
// layout of a Linear layer's [out, in] weights), A row-major; TMA needs 16-byte row strides.
#pragma once
#include "cuda/ptx.h"
#include "ops/gemm/cuda/tensor_core.cuh"

namespace kl::KL_TARGET::gemm_hopper {

using gemm_tc::Operands;

constexpr int kBM = 128, kBN = 128, kBK = 64;
constexpr int kStageBytes = (kBM + kBN) * kBK * 2;  // 32 KiB: A and B tiles of one k slice

template <int kStages> struct alignas(1024) Smem {
  uint16_t a[kStages][kBM * kBK];  // bf16 or fp16 bits, as TMA wrote them (128-byte swizzle)
  uint16_t b[kStages][kBN * kBK];
  uint64_t full[kStages], empty[kStages];
};

// The block's dynamic shared memory from its first 1024-byte-aligned shared address: the 128-byte
// swizzle of TMA and wgmma acts on shared address bits 4-9, so tiles must start on 1024 bytes.
// The kernels ask for 1 KB more than their tiles (kAlignSlack).
constexpr int kAlignSlack = 1024;
template <class S> __device__ __forceinline__ S* aligned_smem(unsigned char* p) {
  const unsigned skip = (1024 - static_cast<unsigned>(__cvta_generic_to_shared(p) % 1024)) % 1024;
  return reinterpret_cast<S*>(p + skip);
}

// Compute capability of the current device (0 when there is none): the Hopper rungs need 9.0.
inline int device_cc() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return 10 * major + minor;
}

inline Reason hopper_problem(const GemmParams& p) {
  if (Reason r = gemm_tc::half_inputs(p)) return r;
  if (p.a_col || !p.b_col)
    return "A row-major and B column-major only (a_layout=row, b_layout=col): wgmma reads K-major tiles, as TMA loads them";
  if (p.k % 8 != 0 || p.n % 8 != 0) return "k and n multiples of 8: TMA needs rows of A, B and D 16-byte aligned";
  if (const int cc = device_cc(); cc != 0 && cc != 90)
    return "a Hopper rung: wgmma, TMA and setmaxnreg need sm_90a, and this GPU is sm_" + std::to_string(cc);
  return {};
}

// A row-major rows x cols bf16/fp16 matrix as TMA boxes of box_rows x box_cols, 128-byte swizzle.
template <class T>
CUtensorMap tensor_map(const T* base, int rows, int cols, int box_rows, int box_cols, CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  const CUtensorMapDataType type = std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUresult r = kl::ptx::encode_tensor_map_2d(&map, type, base, uint64_t(cols), uint64_t(rows), uint64_t(cols) * 2,
                                                   uint32_t(box_cols), uint32_t(box_rows), swizzle);
  if (r != CUDA_SUCCESS) runtime_failure("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

#if KL_PTX_SM90A
template <class T> __device__ __forceinline__ void wgmma(float (&acc)[64], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (std::is_same_v<T, __half>) kl::ptx::wgmma_m64n128k16_f32_f16_ss(acc, da, db, scale_d);
  else kl::ptx::wgmma_m64n128k16_f32_bf16_ss(acc, da, db, scale_d);
}

// Consumer c (0, 1) of the block multiplies its 64 rows of stage `st` into acc: 4 k16 steps, the
// descriptors' start moving 32 bytes along the 128-byte swizzled rows (8-row atoms 1024 bytes apart).
template <class T, int kStages>
__device__ __forceinline__ void consume_stage(Smem<kStages>& s, int st, int c, float (&acc)[64], bool first) {
  kl::ptx::wgmma_fence();
  KL_UNROLL
  for (int kk = 0; kk < kBK / 16; ++kk) {
    const uint64_t da = kl::ptx::smem_descriptor(&s.a[st][c * 64 * kBK + kk * 16], 16, 1024, kl::ptx::Swizzle::b128);
    const uint64_t db = kl::ptx::smem_descriptor(&s.b[st][kk * 16], 16, 1024, kl::ptx::Swizzle::b128);
    wgmma<T>(acc, da, db, first && kk == 0 ? 0 : 1);
  }
  kl::ptx::wgmma_commit();
  kl::ptx::wgmma_wait<0>();
}
#endif

// The warpgroup's 64x128 accumulators into D at (row0, col0): thread (warp w, lane 4g+t) holds
// acc[i] at row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2; pairs of columns as one store.
template <class T>
__device__ __forceinline__ void store_fragment(const Operands<T>& o, int row0, int col0, const float (&acc)[64]) {
  const int tid = threadIdx.x % 128, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
  KL_UNROLL
  for (int i = 0; i < 64; i += 4) {
    const int r = row0 + 16 * w + g, c = col0 + 8 * (i / 4) + 2 * t;
    gemm_tc::store_pair(o, r, c, acc[i], acc[i + 1]);
    gemm_tc::store_pair(o, r + 8, c, acc[i + 2], acc[i + 3]);
  }
}

}  // namespace kl::KL_TARGET::gemm_hopper
