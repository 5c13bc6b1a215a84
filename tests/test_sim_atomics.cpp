// Atomics from many blocks on several OS threads (so a missing atomic would lose updates),
// on global and shared memory, each against its hand-computed total; cooperative groups;
// and the intrinsics the simulator supplies in place of nvcc's built-ins.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

namespace {

constexpr unsigned kBlocks = 64, kThreads = 256, kN = kBlocks * kThreads;

struct Totals {
  int add, sub_neg, max, min, exch_sum;
  unsigned usub, band, bor, bxor, inc, dec, cas_count;
  unsigned long long ull_add, ull_max;
  long long ll_min;
  float fadd;
  double dadd;
  __half hadd;
};

__global__ void hammer(Totals* t, int* tickets) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  tickets[atomicAdd(&t->add, 1)] += 1;  // every old value once: the increments are atomic
  atomicSub(&t->sub_neg, 2);
  atomicSub(&t->usub, 1u);
  atomicMax(&t->max, int(i * 7919 % 100003) - 50000);
  atomicMin(&t->min, int(i * 7919 % 100003) - 50000);
  atomicAnd(&t->band, ~(1u << (i % 32)));
  atomicOr(&t->bor, 1u << (i % 32));
  atomicXor(&t->bxor, i);
  atomicInc(&t->inc, 9u);
  atomicDec(&t->dec, 6u);
  for (unsigned old = t->cas_count;;) {  // an increment built on compare-and-swap
    const unsigned seen = atomicCAS(&t->cas_count, old, old + 1);
    if (seen == old) break;
    old = seen;
  }
  atomicAdd(&t->exch_sum, atomicExch(&t->exch_sum, 0) + 0);  // exchange keeps the sum
  atomicAdd(&t->ull_add, 1ull << 33);
  atomicMax(&t->ull_max, 1ull << 40 | i);
  atomicMin(&t->ll_min, -(1ll << 40) - i);
  atomicAdd(&t->fadd, 1.0f);
  atomicAdd(&t->dadd, 0.5);
  if (i < 100) atomicAdd(&t->hadd, __float2half(1.0f));
}

TEST(SimAtomics, EveryOperationFromManyBlocks) {
  const kl::sim::Options saved = kl::sim::options();
  kl::sim::options().os_threads = 4;
  DeviceBuffer<Totals> t(1);
  DeviceBuffer<int> tickets(kN, 0);
  Totals init{};
  init.max = INT_MIN, init.min = INT_MAX, init.band = ~0u, init.dec = 3, init.exch_sum = 5, init.usub = kN + 10;
  init.ll_min = 0;
  init.hadd = __float2half(0.0f);
  t[0] = init;
  ASSERT_EQ(SIM_LAUNCH(hammer, kBlocks, kThreads, 0, t.p, tickets.p), cudaSuccess);
  kl::sim::options() = saved;
  int max_ref = INT_MIN, min_ref = INT_MAX;
  unsigned x = 0;
  for (unsigned i = 0; i < kN; ++i) {
    max_ref = std::max(max_ref, int(i * 7919 % 100003) - 50000), min_ref = std::min(min_ref, int(i * 7919 % 100003) - 50000);
    x ^= i;
  }
  const Totals r = t[0];
  EXPECT_EQ(r.add, int(kN));
  for (unsigned i = 0; i < kN; ++i) ASSERT_EQ(tickets[i], 1) << "ticket " << i;
  EXPECT_EQ(r.sub_neg, -2 * int(kN));
  EXPECT_EQ(r.usub, 10u);
  EXPECT_EQ(r.max, max_ref);
  EXPECT_EQ(r.min, min_ref);
  EXPECT_EQ(r.band, 0u);
  EXPECT_EQ(r.bor, ~0u);
  EXPECT_EQ(r.bxor, x);
  EXPECT_EQ(r.inc, kN % 10);  // counts 0..9 and wraps
  // atomicDec from 3 with limit 6 cycles 3,2,1,0,6,5,4,3,...: period 7.
  EXPECT_EQ(r.dec, unsigned((3 - int(kN % 7) + 7) % 7));
  EXPECT_EQ(r.cas_count, kN);
  EXPECT_EQ(r.exch_sum, 5);
  EXPECT_EQ(r.ull_add, (1ull << 33) * kN);
  EXPECT_EQ(r.ull_max, 1ull << 40 | (kN - 1));
  EXPECT_EQ(r.ll_min, -(1ll << 40) - (kN - 1));
  EXPECT_EQ(r.fadd, float(kN));  // exact: every partial sum is an integer below 2^24
  EXPECT_EQ(r.dadd, kN * 0.5);
  EXPECT_EQ(__half2float(r.hadd), 100.0f);
}

__global__ void shared_counters(unsigned* out) {
  __shared__ unsigned count, mask;
  if (threadIdx.x == 0) count = 0, mask = 0;
  __syncthreads();
  atomicAdd(&count, 1u);
  atomicOr(&mask, 1u << (threadIdx.x % 32));
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x * 2] = count, out[blockIdx.x * 2 + 1] = mask;
}

TEST(SimAtomics, SharedMemoryAtomics) {
  DeviceBuffer<unsigned> out(2 * 40);
  ASSERT_EQ(SIM_LAUNCH(shared_counters, 40, 200, 0, out.p), cudaSuccess);
  for (int b = 0; b < 40; ++b) {
    EXPECT_EQ(out[b * 2], 200u);
    EXPECT_EQ(out[b * 2 + 1], ~0u);
  }
}

namespace cg = cooperative_groups;

// Per thread: block rank, size; then for tile sizes 32..2: rank, meta rank, shfl,
// shfl_down, shfl_xor, ballot, reduce(+), reduce(max), inclusive and exclusive scan.
__global__ void groups(int* out, int per_thread) {
  const cg::thread_block block = cg::this_thread_block();
  int* o = out + block.thread_rank() * per_thread;
  o[0] = int(block.thread_rank()), o[1] = int(block.size());
  int k = 2;
  auto run = [&](auto tile) {
    const int r = int(tile.thread_rank());
    o[k++] = r, o[k++] = int(tile.meta_group_rank());
    o[k++] = tile.shfl(r * 3, 1), o[k++] = tile.shfl_down(r, 1), o[k++] = tile.shfl_xor(r, 1);
    o[k++] = int(tile.ballot(r % 2 == 1));
    o[k++] = cg::reduce(tile, r, cg::plus<int>()), o[k++] = cg::reduce(tile, r, cg::greater<int>());
    o[k++] = cg::inclusive_scan(tile, 1), o[k++] = cg::exclusive_scan(tile, 1);
    tile.sync();
  };
  run(cg::tiled_partition<32>(block));
  run(cg::tiled_partition<16>(block));
  run(cg::tiled_partition<8>(block));
  run(cg::tiled_partition<4>(block));
  run(cg::tiled_partition<2>(block));
  run(cg::tiled_partition(block, 8));
  block.sync();
}

TEST(SimCooperativeGroups, TilesOfEverySize) {
  const int per_thread = 2 + 6 * 10, n = 64;
  DeviceBuffer<int> out(n * per_thread, -99);
  ASSERT_EQ(SIM_LAUNCH(groups, 1, n, 0, out.p, per_thread), cudaSuccess);
  const int sizes[] = {32, 16, 8, 4, 2, 8};
  for (int t = 0; t < n; ++t) {
    const int* o = &out[t * per_thread];
    EXPECT_EQ(o[0], t);
    EXPECT_EQ(o[1], n);
    for (int s = 0; s < 6; ++s) {
      const int size = sizes[s], r = t % size, *v = o + 2 + s * 10;
      EXPECT_EQ(v[0], r) << "size " << size;
      EXPECT_EQ(v[1], t / size);
      EXPECT_EQ(v[2], 3 * (1 % size));
      EXPECT_EQ(v[3], r + 1 < size ? r + 1 : r);
      EXPECT_EQ(v[4], (r ^ 1) < size ? (r ^ 1) : r);
      EXPECT_EQ(unsigned(v[5]), 0xaaaaaaaau & (size == 32 ? ~0u : (1u << size) - 1u));
      EXPECT_EQ(v[6], size * (size - 1) / 2);
      EXPECT_EQ(v[7], size - 1);
      EXPECT_EQ(v[8], r + 1);
      EXPECT_EQ(v[9], r);
    }
  }
}

__global__ void coalesced(int* out) {
  if (threadIdx.x % 3 == 0) {
    const cg::coalesced_group g = cg::coalesced_threads();
    out[threadIdx.x] = int(g.size()) * 100 + int(g.thread_rank());
  }
}

TEST(SimCooperativeGroups, CoalescedThreadsOfADivergentBranch) {
  DeviceBuffer<int> out(32, -1);
  ASSERT_EQ(SIM_LAUNCH(coalesced, 1, 32, 0, out.p), cudaSuccess);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], t % 3 == 0 ? 1100 + t / 3 : -1);
}

TEST(SimIntrinsics, IntegerAndFloatBuiltIns) {
  EXPECT_EQ(__popc(0xf0f0u), 8);
  EXPECT_EQ(__popcll(~0ull), 64);
  EXPECT_EQ(__clz(1), 31);
  EXPECT_EQ(__clz(0), 32);
  EXPECT_EQ(__clzll(1ll << 40), 23);
  EXPECT_EQ(__ffs(0), 0);
  EXPECT_EQ(__ffs(0x50), 5);
  EXPECT_EQ(__brev(1u), 0x80000000u);
  EXPECT_EQ(__brev(0x12345678u), 0x1e6a2c48u);
  EXPECT_EQ(__byte_perm(0x33221100u, 0x77665544u, 0x5140u), 0x55114400u);
  EXPECT_EQ(__funnelshift_l(0x80000000u, 0x1u, 1), 0x3u);
  EXPECT_EQ(__funnelshift_r(0x2u, 0x1u, 1), 0x80000001u);
  EXPECT_EQ(__umulhi(0x80000000u, 4u), 2u);
  EXPECT_EQ(__mulhi(-2, 0x40000000), -1);
  EXPECT_EQ(__umul24(0x1000001u, 3u), 3u);
  EXPECT_EQ(__sad(3, 7, 10u), 14u);
  EXPECT_EQ(__hadd(7, 8), 7);
  EXPECT_EQ(__rhadd(7, 8), 8);
  EXPECT_EQ(min(-1, 2u), 2u) << "CUDA's mixed overload converts to unsigned, as C++ does";
  EXPECT_EQ(max(3, 7L), 7L);
  EXPECT_EQ(min(2.0f, NAN), 2.0f) << "fminf semantics";
  EXPECT_EQ(__float_as_int(1.0f), 0x3f800000);
  EXPECT_EQ(__int_as_float(0x40000000), 2.0f);
  EXPECT_EQ(__double_as_longlong(1.0), 0x3ff0000000000000ll);
  EXPECT_EQ(__float2int_rn(2.5f), 2);
  EXPECT_EQ(__float2int_rn(3.5f), 4);
  EXPECT_EQ(__float2int_rz(-2.7f), -2);
  EXPECT_EQ(__float2int_rd(-2.2f), -3);
  EXPECT_EQ(__saturatef(1.5f), 1.0f);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
  EXPECT_FLOAT_EQ(rsqrtf(4.0f), 0.5f);
  EXPECT_FLOAT_EQ(__expf(1.0f), std::exp(1.0f));
  EXPECT_FLOAT_EQ(__fdividef(1.0f, 8.0f), 0.125f);
  EXPECT_FLOAT_EQ(__frcp_rn(4.0f), 0.25f);
  EXPECT_FLOAT_EQ(normcdff(0.0f), 0.5f);
  const float4 v = make_float4(1, 2, 3, 4);
  EXPECT_EQ(__ldg(&v).w, 4.0f);
}

TEST(SimIntrinsics, HalfAndBfloat16) {
  const __half a = __float2half(1.5f), b = __float2half(2.0f), c = __float2half(0.25f);
  EXPECT_EQ(__half2float(__hfma(a, b, c)), 3.25f);
  EXPECT_EQ(__half2float(a * b + c), 3.25f);
  // (1 + 2^-10)^2 - (1 + 2^-9) is 2^-20 when fused; rounding the product first gives 0.
  const __half p = __float2half(1.0009765625f), q = __float2half(-1.001953125f);
  EXPECT_EQ(__half2float(__hfma(p, p, q)), 0x1p-20f);
  EXPECT_EQ(__half2float(p * p + q), 0.0f);
  EXPECT_NEAR(__half2float(hexp(__float2half(1.0f))), 2.71875f, 1e-3);
  EXPECT_EQ(__half2float(hsqrt(__float2half(9.0f))), 3.0f);
  EXPECT_EQ(__half2float(hrcp(__float2half(4.0f))), 0.25f);
  const __half2 h2 = h2exp(__floats2half2_rn(0.0f, 1.0f));
  EXPECT_EQ(__low2float(h2), 1.0f);
  EXPECT_EQ(__half2int_rn(__float2half(2.5f)), 2);
  const __nv_bfloat16 x = __float2bfloat16(3.0f), y = __float2bfloat16(0.5f);
  EXPECT_EQ(__bfloat162float(__hfma(x, y, y)), 2.0f);
  EXPECT_EQ(__bfloat162float(hsqrt(__float2bfloat16(16.0f))), 4.0f);
  const __nv_fp8_e4m3 f8(1.75f);
  EXPECT_EQ(float(f8), 1.75f);
}

}  // namespace
#endif
