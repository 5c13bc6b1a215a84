// What the two Hopper rungs on 1-byte operands share (gemm_fp8 v02 on e4m3, gemm_w8a8 v02 on s8):
// 128 x 128 x 128 block tiles (128 k of one-byte elements is one 128-byte swizzle row), two consumer
// warpgroups of 64 rows, the 4-stage ring of full/empty mbarriers that TMA fills, and the tensor maps.
#pragma once
#include <string>

#include "cuda/ptx_sm90_fp8.h"
#include "ops/gemm/cuda/hopper_tile.cuh"  // aligned_smem, kAlignSlack, device_cc

namespace kl::KL_TARGET::ring8 {
namespace {  // internal linkage, as every header shared by rung objects here

constexpr int kBM = 128, kBN = 128, kBK = 128, kStages = 4, kThreads = 256;  // two consumer warpgroups of 64 rows
static_assert(kBK == 128, "128-byte swizzle: a tile row of 128 one-byte elements is one swizzle row");
static_assert(kBK % 32 == 0, "wgmma k32 steps");

struct alignas(1024) Smem {
  uint8_t a[kStages][kBM * kBK];  // one-byte codes, 128-byte swizzled as TMA wrote them
  uint8_t w[kStages][kBN * kBK];
  uint64_t full[kStages], empty[kStages];
};
constexpr int kSmem = static_cast<int>(sizeof(Smem)) + gemm_hopper::kAlignSlack;

struct Operands {
  const float* __restrict__ sa;
  const float* __restrict__ sw;
  int m, n, k;
};

#if KL_PTX_SM90A
constexpr int kStageBytes = (kBM + kBN) * kBK;  // 32 KiB: one byte an element

// The stage ring: full[s] completes when both boxes of stage s have landed (one arrival and their
// bytes), empty[s] when both consumer warpgroups have released it. k slice kt uses stage kt % kStages
// in phase (kt / kStages) & 1. Thread 0 is the producer, and a consumer of warpgroup 0 besides.
struct Ring {
  Smem& s;
  const CUtensorMap* map_a;
  const CUtensorMap* map_w;
  int m0, n0;

  __device__ void init() const {
    for (int i = 0; i < kStages; ++i) kl::ptx::mbarrier_init(&s.full[i], 1), kl::ptx::mbarrier_init(&s.empty[i], 2);
    kl::ptx::fence_mbarrier_init();
  }
  __device__ void producer_issue(int kt) const {
    const int st = kt % kStages;
    kl::ptx::mbarrier_arrive_expect_tx(&s.full[st], kStageBytes);
    kl::ptx::tma_load_2d(s.a[st], map_a, kt * kBK, m0, &s.full[st]);
    kl::ptx::tma_load_2d(s.w[st], map_w, kt * kBK, n0, &s.full[st]);
  }
  __device__ void producer_wait_empty(int kt) const { kl::ptx::mbarrier_wait_parity(&s.empty[kt % kStages], (kt / kStages) & 1); }
  __device__ void consumer_wait(int kt) const { kl::ptx::mbarrier_wait_parity(&s.full[kt % kStages], (kt / kStages) & 1); }
  __device__ void consumer_release(int kt, int tid) const {
    if (tid == 0) kl::ptx::mbarrier_arrive(&s.empty[kt % kStages]);
  }
};
#endif

// An m x k (or n x k) one-byte matrix as TMA boxes of 128 rows of 128 bytes, 128-byte swizzle, zeros outside.
CUtensorMap tensor_map(const void* base, int rows, int k, int box_rows) {
  CUtensorMap map;
  const CUresult r = kl::ptx::encode_tensor_map_2d(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, base, uint64_t(k), uint64_t(rows),
                                                   uint64_t(k), uint32_t(kBK), uint32_t(box_rows), CU_TENSOR_MAP_SWIZZLE_128B);
  if (r != CUDA_SUCCESS) runtime_failure("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

}  // namespace
}  // namespace kl::KL_TARGET::ring8
