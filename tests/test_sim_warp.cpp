// Warp collectives against hand-computed results: every shuffle form at every width (with
// the PTX rules for lanes outside the segment), votes, __activemask in divergent code,
// match and reduce, kl::sim::warp_exchange, and the misuse each one reports.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

namespace {

using ::testing::HasSubstr;
constexpr unsigned kFull = 0xffffffffu;

// out[w][lane]: kind 0 idx(src), 1 up(d), 2 down(d), 3 xor(m); value shuffled: lane*10+1.
__global__ void shuffles(int* out, int kind, int arg) {
  const int lane = int(threadIdx.x) % 32, v = lane * 10 + 1;
  for (int wi = 0, width = 32; width >= 1; ++wi, width /= 2) {
    int r = 0;
    if (kind == 0) r = __shfl_sync(kFull, v, arg, width);
    if (kind == 1) r = __shfl_up_sync(kFull, v, unsigned(arg), width);
    if (kind == 2) r = __shfl_down_sync(kFull, v, unsigned(arg), width);
    if (kind == 3) r = __shfl_xor_sync(kFull, v, arg, width);
    out[wi * 32 + lane] = r;
  }
}

// The CUDA Programming Guide's definitions, lane by lane.
int expected_shuffle(int kind, int arg, int lane, int width) {
  const int first = lane / width * width;
  int src = lane;
  if (kind == 0) src = first + ((arg % width) + width) % width;
  if (kind == 1) src = lane - arg >= first ? lane - arg : lane;
  if (kind == 2) src = lane + arg < first + width ? lane + arg : lane;
  if (kind == 3) src = (lane ^ arg) < first + width ? (lane ^ arg) : lane;
  return src * 10 + 1;
}

TEST(SimWarp, EveryShuffleFormAtEveryWidth) {
  const struct {
    int kind;
    std::vector<int> args;
  } cases[] = {{0, {0, 3, 17, 31, -1}}, {1, {0, 1, 2, 5, 16}}, {2, {0, 1, 3, 8, 16}}, {3, {1, 2, 7, 16, 31}}};
  for (const auto& c : cases)
    for (int arg : c.args) {
      DeviceBuffer<int> out(6 * 32, -7);
      ASSERT_EQ(SIM_LAUNCH(shuffles, 1, 32, 0, out.p, c.kind, arg), cudaSuccess);
      for (int wi = 0, width = 32; width >= 1; ++wi, width /= 2)
        for (int lane = 0; lane < 32; ++lane)
          EXPECT_EQ(out[wi * 32 + lane], expected_shuffle(c.kind, arg, lane, width))
              << "kind " << c.kind << " arg " << arg << " width " << width << " lane " << lane;
    }
}

struct Pair {
  int a;
  float b;
};

__global__ void shuffle_types(double* d, __half2* h, Pair* p) {
  const unsigned lane = threadIdx.x;
  d[lane] = __shfl_xor_sync(kFull, 0.5 + lane, 1);
  h[lane] = __shfl_down_sync(kFull, __floats2half2_rn(float(lane), -float(lane)), 4);
  p[lane] = __shfl_sync(kFull, Pair{int(lane), lane * 0.25f}, 31 - int(lane));
}

TEST(SimWarp, ShufflesMoveAnyPlainType) {
  DeviceBuffer<double> d(32);
  DeviceBuffer<__half2> h(32);
  DeviceBuffer<Pair> p(32);
  ASSERT_EQ(SIM_LAUNCH(shuffle_types, 1, 32, 0, d.p, h.p, p.p), cudaSuccess);
  for (unsigned l = 0; l < 32; ++l) {
    EXPECT_EQ(d[l], 0.5 + (l ^ 1u));
    const unsigned src = l + 4 < 32 ? l + 4 : l;
    EXPECT_EQ(__low2float(h[l]), float(src));
    EXPECT_EQ(__high2float(h[l]), -float(src));
    EXPECT_EQ(p[l].a, int(31 - l));
    EXPECT_EQ(p[l].b, (31 - l) * 0.25f);
  }
}

// Lanes 0-15 and 16-31 shuffle within their own half, with their own mask.
__global__ void half_warps(int* out) {
  const unsigned lane = threadIdx.x % 32, mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_sync(mask, int(lane) * 2, lane < 16 ? 15 : 16);
}

TEST(SimWarp, DivergentHalvesShuffleWithTheirOwnMasks) {
  DeviceBuffer<int> out(64, -1);
  ASSERT_EQ(SIM_LAUNCH(half_warps, 1, 64, 0, out.p), cudaSuccess);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t % 32) < 16 ? 30 : 32);
}

__global__ void votes(unsigned* out) {
  const unsigned lane = threadIdx.x % 32;
  unsigned* o = out + threadIdx.x * 8;
  o[0] = __ballot_sync(kFull, lane % 3 == 0);
  o[1] = unsigned(__any_sync(kFull, lane == 31));
  o[2] = unsigned(__any_sync(kFull, 0));
  o[3] = unsigned(__all_sync(kFull, lane < 32));
  o[4] = unsigned(__all_sync(kFull, lane != 7));
  o[5] = lane >= 8 && lane < 16 ? __ballot_sync(0x0000ff00u, lane & 1) : 0u;  // a partial mask
  o[6] = lane < 10 ? __activemask() : 0u;
  o[7] = lane >= 10 ? __activemask() : 0u;
}

TEST(SimWarp, VotesAndActiveMask) {
  DeviceBuffer<unsigned> out(32 * 8, 0xdeadu);
  ASSERT_EQ(SIM_LAUNCH(votes, 1, 32, 0, out.p), cudaSuccess);
  for (unsigned l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l * 8 + 0], 0x49249249u);
    EXPECT_EQ(out[l * 8 + 1], 1u);
    EXPECT_EQ(out[l * 8 + 2], 0u);
    EXPECT_EQ(out[l * 8 + 3], 1u);
    EXPECT_EQ(out[l * 8 + 4], 0u);
    EXPECT_EQ(out[l * 8 + 5], l >= 8 && l < 16 ? 0x0000aa00u : 0u);
    EXPECT_EQ(out[l * 8 + 6], l < 10 ? 0x3ffu : 0u) << "the converged set of the lanes < 10 branch";
    EXPECT_EQ(out[l * 8 + 7], l >= 10 ? 0xfffffc00u : 0u);
  }
}

__global__ void matches_and_reductions(unsigned* out) {
  const unsigned lane = threadIdx.x;
  int all_pred = -1;
  out[lane * 8 + 0] = __match_any_sync(kFull, lane / 4);
  out[lane * 8 + 1] = __match_all_sync(kFull, 5, &all_pred);
  out[lane * 8 + 2] = unsigned(all_pred);
  out[lane * 8 + 3] = __match_all_sync(kFull, lane == 3 ? 1.0f : 2.0f, &all_pred);
  out[lane * 8 + 4] = unsigned(all_pred);
  out[lane * 8 + 5] = __reduce_add_sync(kFull, lane);
  out[lane * 8 + 6] = unsigned(__reduce_min_sync(kFull, int(lane) - 5));
  out[lane * 8 + 7] = __reduce_or_sync(kFull, 1u << (lane % 8));
}

TEST(SimWarp, MatchAndReduce) {
  DeviceBuffer<unsigned> out(32 * 8);
  ASSERT_EQ(SIM_LAUNCH(matches_and_reductions, 1, 32, 0, out.p), cudaSuccess);
  for (unsigned l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l * 8 + 0], 0xfu << (l / 4 * 4));
    EXPECT_EQ(out[l * 8 + 1], kFull);
    EXPECT_EQ(out[l * 8 + 2], 1u);
    EXPECT_EQ(out[l * 8 + 3], 0u);
    EXPECT_EQ(out[l * 8 + 4], 0u);
    EXPECT_EQ(out[l * 8 + 5], 496u);
    EXPECT_EQ(int(out[l * 8 + 6]), -5);
    EXPECT_EQ(out[l * 8 + 7], 0xffu);
  }
}

struct Fragment {
  int lane;
  float v[3];
};

__global__ void exchange(int* out) {
  const unsigned lane = kl::sim::lane_id();
  const Fragment mine{int(lane), {lane * 1.0f, lane * 2.0f, lane * 3.0f}};
  const auto all = kl::sim::warp_exchange(kFull, mine, "test exchange");
  int ok = 1;
  for (unsigned l = 0; l < 32; ++l) ok &= all[l].lane == int(l) && all[l].v[2] == l * 3.0f;
  out[lane] = ok;
}

TEST(SimWarp, WarpExchangeGivesEveryLaneAllDeposits) {
  DeviceBuffer<int> out(32, 0);
  ASSERT_EQ(SIM_LAUNCH(exchange, 1, 32, 0, out.p), cudaSuccess);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], 1);
}

// The shape of a PTX twin built on warp_exchange (src/sim/README.md): ldmatrix.x1, where
// lanes 0-7 give the addresses of 8 rows of 8 halves, and lane l receives row l/4's 32-bit
// word l%4 (the PTX ISA's fragment layout for m8n8.b16).
inline unsigned ldmatrix_x1(const void* row_address) {
  const auto rows = kl::sim::warp_exchange(0xffffffffu, row_address, "ldmatrix.x1");
  const unsigned lane = kl::sim::lane_id();
  unsigned v;
  std::memcpy(&v, static_cast<const char*>(rows[lane / 4]) + 4 * (lane % 4), 4);
  return v;
}

__global__ void ldmatrix_twin(unsigned* out) {
  __shared__ unsigned short tile[8][8];
  for (int i = int(threadIdx.x); i < 64; i += 32) tile[i / 8][i % 8] = static_cast<unsigned short>(i);
  __syncwarp();
  out[threadIdx.x] = ldmatrix_x1(&tile[threadIdx.x % 8][0]);
}

TEST(SimWarp, LdmatrixTwinOnWarpExchange) {
  DeviceBuffer<unsigned> out(32);
  ASSERT_EQ(SIM_LAUNCH(ldmatrix_twin, 1, 32, 0, out.p), cudaSuccess);
  for (unsigned l = 0; l < 32; ++l) {
    const unsigned first = (l / 4) * 8 + 2 * (l % 4);  // elements (row l/4, columns 2(l%4) and 2(l%4)+1)
    EXPECT_EQ(out[l], first | (first + 1) << 16) << "lane " << l;
  }
}

// __syncwarp waits for the non-exited lanes it names (CUDA's wording), so this is legal.
__global__ void syncwarp_after_exit(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = 1;
  __syncwarp();
  out[threadIdx.x] += out[(threadIdx.x + 1) % 16];
}

TEST(SimWarp, SyncwarpIgnoresExitedLanes) {
  DeviceBuffer<int> out(16, 0);
  ASSERT_EQ(SIM_LAUNCH(syncwarp_after_exit, 1, 32, 0, out.p), cudaSuccess);
  for (int l = 0; l < 16; ++l) EXPECT_GE(out[l], 2);
}

__global__ void shuffle_after_exit(int* out) {
  if (threadIdx.x == 7) return;  // lane 7 is named by the mask below
  out[threadIdx.x] = __shfl_sync(kFull, int(threadIdx.x), 0);
}
__global__ void ballot_after_exit(int* out) {
  if (threadIdx.x == 7) return;
  const unsigned b = __ballot_sync(kFull, 1);
  if (threadIdx.x == 0) out[0] = int(b);
}
__global__ void mask_without_caller(int* out) { out[threadIdx.x] = __shfl_sync(0x1u, 1, 0); }
__global__ void shuffle_against_barrier(int* out) {
  if (threadIdx.x == 0) __syncthreads();
  else out[threadIdx.x] = __shfl_down_sync(kFull, 1, 1);
}
__global__ void bad_width(int* out) { out[threadIdx.x] = __shfl_sync(kFull, 1, 0, 12); }

TEST(SimWarp, MisusedCollectivesAreReportedWithTheLanesInvolved) {
  ClearSimErrors clear;
  DeviceBuffer<int> out(64);
  // CUDA: all non-exited threads named in the mask execute the intrinsic; lane 7 exited, so it takes no part.
  for (int l = 0; l < 32; ++l) out[l] = -1;
  ASSERT_EQ(SIM_LAUNCH(shuffle_after_exit, 1, 32, 0, out.p), cudaSuccess) << kl::sim::last_message();
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], l == 7 ? -1 : 0) << l;
  ASSERT_EQ(SIM_LAUNCH(ballot_after_exit, 1, 32, 0, out.p), cudaSuccess) << kl::sim::last_message();
  EXPECT_EQ(unsigned(out[0]), ~(1u << 7)) << "an exited lane votes nothing";

  EXPECT_EQ(SIM_LAUNCH(mask_without_caller, 1, 32, 0, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("warp collective in kernel 'mask_without_caller' block (0,0,0) thread (1,0,0)"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("with mask 0x00000001, which leaves out the calling lane 1"));
  kl::sim::clear_errors();

  EXPECT_EQ(SIM_LAUNCH(shuffle_against_barrier, 1, 64, 0, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("__shfl_down_sync at"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("waits for lane 0 (thread (0,0,0)), which waits at __syncthreads() at"));
  kl::sim::clear_errors();

  EXPECT_EQ(SIM_LAUNCH(bad_width, 1, 32, 0, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("__shfl_sync with a width that is not a power of 2 in 1..32"));
}

}  // namespace
#endif
