// The simulator twins of src/cuda/ptx.h against the PTX ISA's tables, not against the twins'
// own code: fragments here are built element by element from the ISA's "row = ... for ai
// where ..." formulas (sections 9.7.14.5.8 and .10), ldmatrix and movmatrix against the
// figure's rule (lane l: row l/4, columns 2(l%4), 2(l%4)+1) on matrices whose elements encode
// (matrix, row, column), plus literal hand-computed values. Then the header through nvcc:
// ptxas accepts every wrapper for sm_90a and sm_80, the PTX holds the instructions, and an
// fp8 mma for sm_80 is a compile error. Tolerance: none; all sums here are exact in fp32.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cuda/ptx.h"

namespace fs = std::filesystem;

namespace {

using ::testing::HasSubstr;

// ---- cp.async -------------------------------------------------------------------------------

constexpr int kCopyBytes = 64 * (4 + 8 + 16) + 64 * 16;

__global__ void cp_async_every_size(const unsigned char* src, unsigned char* out) {
  __shared__ __align__(16) unsigned char s[kCopyBytes];
  const int t = int(threadIdx.x);  // 64 threads: 256 bytes by 4, 512 by 8, 1024 by 16, then 1024 by 16
  kl::ptx::cp_async_4(s + 4 * t, src + 4 * t);
  kl::ptx::cp_async_8(s + 256 + 8 * t, src + 256 + 8 * t);
  kl::ptx::cp_async_commit();
  kl::ptx::cp_async_16(s + 768 + 16 * t, src + 768 + 16 * t);
  kl::ptx::cp_async_commit();
  kl::ptx::cp_async_wait<1>();
  kl::ptx::cp_async_wait<0>();
  kl::ptx::cp_async_16(s + 1792 + 16 * t, src + 1792 + 16 * t);  // not committed: wait_all covers it
  kl::ptx::cp_async_wait_all();
  __syncthreads();
  for (int i = t; i < kCopyBytes; i += 64) out[i] = s[i];
}

TEST(PtxTwins, CpAsyncMovesFourEightAndSixteenBytesIntoShared) {
  DeviceBuffer<unsigned char> src(kCopyBytes), out(kCopyBytes, 0xee);
  for (int i = 0; i < kCopyBytes; ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(SIM_LAUNCH(cp_async_every_size, 1, 64, 0, src.p, out.p), cudaSuccess);
  for (int i = 0; i < kCopyBytes; ++i) ASSERT_EQ(out[i], static_cast<unsigned char>(i * 7 + 3)) << "byte " << i;
}

// cp.async lands at its wait, not before: until then the twin leaves 0xFF bytes at the
// destination (NaN as floats), so a kernel that forgets cp.async.wait_group reads NaN.
template <bool Wait>
__global__ void stage_then_read(const float* src, float* out) {
  __shared__ __align__(16) float s[128];
  const int t = int(threadIdx.x);  // 32 threads, 16 bytes each
  kl::ptx::cp_async_16(s + 4 * t, src + 4 * t);
  kl::ptx::cp_async_commit();
  if constexpr (Wait) kl::ptx::cp_async_wait<0>();  // Wait = false: the planted bug
  __syncthreads();
  for (int i = t; i < 128; i += 32) out[i] = s[127 - i];  // other threads' copies
}

TEST(PtxTwins, CpAsyncReadWithoutItsWaitIsNan) {
  DeviceBuffer<float> src(128), out(128);
  for (int i = 0; i < 128; ++i) src[i] = float(i) + 0.25f;
  ASSERT_EQ(SIM_LAUNCH(stage_then_read<false>, 1, 32, 0, src.p, out.p), cudaSuccess);
  int nan = 0;
  for (int i = 0; i < 128; ++i) nan += std::isnan(out[i]);
  EXPECT_EQ(nan, 128) << "a missing cp.async.wait_group must not pass";
  ASSERT_EQ(SIM_LAUNCH(stage_then_read<true>, 1, 32, 0, src.p, out.p), cudaSuccess);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(out[i], float(127 - i) + 0.25f) << "element " << i;
}

// Three groups from one thread: wait_group 2 completes the oldest only, wait_group 1 the next;
// the newest, never waited for, never lands. A copy reads its source at the wait.
__global__ void cp_async_groups(unsigned* src, unsigned* out) {
  __shared__ __align__(16) unsigned s[3][4];
  for (int g = 0; g < 3; ++g) {
    kl::ptx::cp_async_16(s[g], src + 4 * g);
    kl::ptx::cp_async_commit();
  }
  src[0] = 100;
  kl::ptx::cp_async_wait<2>();
  std::memcpy(out, s, sizeof s);
  kl::ptx::cp_async_wait<1>();
  std::memcpy(out + 12, s, sizeof s);
}

TEST(PtxTwins, CpAsyncWaitGroupCompletesAllButTheNewestN) {
  DeviceBuffer<unsigned> src(12), out(24);
  for (unsigned i = 0; i < 12; ++i) src[i] = i;
  ASSERT_EQ(SIM_LAUNCH(cp_async_groups, 1, 1, 0, src.p, out.p), cudaSuccess);
  constexpr unsigned X = 0xffffffffu;  // not landed yet
  const std::vector<unsigned> after_wait2 = {100, 1, 2, 3, X, X, X, X, X, X, X, X};
  const std::vector<unsigned> after_wait1 = {100, 1, 2, 3, 4, 5, 6, 7, X, X, X, X};
  const std::vector<unsigned> got = out.host();
  EXPECT_EQ(std::vector<unsigned>(got.begin(), got.begin() + 12), after_wait2);
  EXPECT_EQ(std::vector<unsigned>(got.begin() + 12, got.end()), after_wait1);
}

__global__ void cp_async_misaligned(const unsigned char* src, unsigned char* out) {
  __shared__ __align__(16) unsigned char s[64];
  kl::ptx::cp_async_16(s + 8 * (threadIdx.x == 5), src);  // planted: thread 5's destination is 8 bytes off
  kl::ptx::cp_async_wait_all();
  out[threadIdx.x] = s[0];
}

TEST(PtxTwins, CpAsyncOffItsAlignmentFaultsNamingTheThreadAndLine) {
  ClearSimErrors clear;
  DeviceBuffer<unsigned char> src(64), out(64);
  EXPECT_EQ(SIM_LAUNCH(cp_async_misaligned, 1, 32, 0, src.p, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("fault in kernel 'cp_async_misaligned' block (0,0,0) thread (5,0,0)"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("cp.async.cg.shared.global 16 bytes with a shared address not 16-byte aligned at "));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("test_ptx_twins.cpp:"));
}

// ---- ldmatrix and movmatrix -------------------------------------------------------------------

constexpr unsigned enc(unsigned matrix, unsigned row, unsigned col) { return matrix << 8 | row << 4 | col; }
constexpr unsigned pair(unsigned lo, unsigned hi) { return lo | hi << 16; }

// Four 8x8 b16 matrices; row r of matrix i is shared row 4r + i, so a matrix's rows are not
// contiguous and each lane's address matters. Lane l gives row l%8 of matrix l/8: for .x1 and
// .x2 the lanes past the matrices read give rows of other matrices, which must be ignored.
__global__ void ldmatrix_every_form(unsigned* out) {
  __shared__ __align__(16) unsigned short rows[32][8];
  for (unsigned e = threadIdx.x; e < 256; e += 32) rows[e / 8][e % 8] = static_cast<unsigned short>(enc(e / 8 % 4, e / 32, e % 8));
  __syncwarp();
  const unsigned lane = threadIdx.x;
  const void* p = &rows[4 * (lane % 8) + lane / 8][0];
  uint32_t r1[1], r2[2], r4[4];
  unsigned* o = out + lane * 4;  // out[form][lane][register]
  kl::ptx::ldmatrix_x1(r1, p);
  o[0 * 128] = r1[0];
  kl::ptx::ldmatrix_x2(r2, p);
  for (int i = 0; i < 2; ++i) o[1 * 128 + i] = r2[i];
  kl::ptx::ldmatrix_x4(r4, p);
  for (int i = 0; i < 4; ++i) o[2 * 128 + i] = r4[i];
  kl::ptx::ldmatrix_x1_trans(r1, p);
  o[3 * 128] = r1[0];
  kl::ptx::ldmatrix_x2_trans(r2, p);
  for (int i = 0; i < 2; ++i) o[4 * 128 + i] = r2[i];
  kl::ptx::ldmatrix_x4_trans(r4, p);
  for (int i = 0; i < 4; ++i) o[5 * 128 + i] = r4[i];
}

TEST(PtxTwins, LdmatrixEveryFormFollowsTheFragmentFigure) {
  DeviceBuffer<unsigned> out(6 * 32 * 4, 0xdeadbeefu);
  ASSERT_EQ(SIM_LAUNCH(ldmatrix_every_form, 1, 32, 0, out.p), cudaSuccess);
  auto at = [&](int form, unsigned lane, int reg) { return out[(form * 32 + lane) * 4 + reg]; };
  const int count[6] = {1, 2, 4, 1, 2, 4};
  for (int form = 0; form < 6; ++form)
    for (unsigned l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        // PTX ISA figure "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements":
        // lane l holds row l/4, columns 2(l%4) and 2(l%4)+1; .trans loads column-major.
        const unsigned g = l / 4, c = 2 * (l % 4);
        const unsigned want = i >= count[form] ? 0xdeadbeefu
                              : form < 3      ? pair(enc(i, g, c), enc(i, g, c + 1))
                                              : pair(enc(i, c, g), enc(i, c + 1, g));
        EXPECT_EQ(at(form, l, i), want) << "form " << form << " lane " << l << " register " << i;
      }
  // By hand: lane 5 has g = 1, t = 1; lane 30 has g = 7, t = 2.
  EXPECT_EQ(at(0, 5, 0), 0x00130012u);  // x1: row 1, columns 2 and 3
  EXPECT_EQ(at(3, 5, 0), 0x00310021u);  // x1.trans: rows 2 and 3 of column 1
  EXPECT_EQ(at(2, 30, 3), 0x03750374u);  // x4, matrix 3: row 7, columns 4 and 5
  EXPECT_EQ(at(5, 30, 3), 0x03570347u);  // x4.trans, matrix 3: rows 4 and 5 of column 7
  EXPECT_EQ(at(1, 0, 1), 0x01010100u);  // x2, matrix 1: row 0, columns 0 and 1
}

__global__ void ldmatrix_misaligned(unsigned* out) {
  __shared__ __align__(16) unsigned short rows[8][16];
  uint32_t r[1];
  kl::ptx::ldmatrix_x1(r, &rows[threadIdx.x % 8][threadIdx.x == 6 ? 4 : 0]);  // planted: lane 6 is 8 bytes off
  out[threadIdx.x] = r[0];
}

TEST(PtxTwins, LdmatrixRowOffSixteenBytesFaults) {
  ClearSimErrors clear;
  DeviceBuffer<unsigned> out(32);
  EXPECT_EQ(SIM_LAUNCH(ldmatrix_misaligned, 1, 32, 0, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("thread (6,0,0)"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("ldmatrix.sync.aligned.m8n8.x1.shared.b16 with a row address not 16-byte aligned at "));
}

__global__ void movmatrix_twice(const unsigned* in, unsigned* once, unsigned* twice) {
  const unsigned t = kl::ptx::movmatrix_trans(in[threadIdx.x]);
  once[threadIdx.x] = t;
  twice[threadIdx.x] = kl::ptx::movmatrix_trans(t);
}

TEST(PtxTwins, MovmatrixTransposesTheFragment) {
  DeviceBuffer<unsigned> in(32), once(32), twice(32);
  for (unsigned l = 0; l < 32; ++l) in[l] = pair(enc(1, l / 4, 2 * (l % 4)), enc(1, l / 4, 2 * (l % 4) + 1));
  ASSERT_EQ(SIM_LAUNCH(movmatrix_twice, 1, 32, 0, in.p, once.p, twice.p), cudaSuccess);
  for (unsigned l = 0; l < 32; ++l) {
    // The result, in the same layout, is the transpose: lane l holds (2(l%4), l/4) and (2(l%4)+1, l/4).
    EXPECT_EQ(once[l], pair(enc(1, 2 * (l % 4), l / 4), enc(1, 2 * (l % 4) + 1, l / 4))) << "lane " << l;
    EXPECT_EQ(twice[l], in[l]) << "lane " << l;
  }
  EXPECT_EQ(once[1], 0x01300120u);   // by hand: lane 1 gets rows 2 and 3 of column 0
  EXPECT_EQ(once[31], 0x01770167u);  // lane 31: rows 6 and 7 of column 7
}

// ---- lop3 ------------------------------------------------------------------------------------

// Bit j of lop3<L>(a, b, c) is bit (a_j b_j c_j read as a 3-bit number) of L, for all 256 tables.
template <int... L> void expect_every_table(std::integer_sequence<int, L...>, uint32_t a, uint32_t b, uint32_t c) {
  auto one = [&](auto lut, uint32_t got) {
    for (int j = 0; j < 32; ++j) {
      const int row = int((a >> j & 1) << 2 | (b >> j & 1) << 1 | (c >> j & 1));
      ASSERT_EQ(got >> j & 1, uint32_t(lut >> row & 1)) << "table 0x" << std::hex << lut << " bit " << std::dec << j;
    }
  };
  (one(L, kl::ptx::lop3<uint8_t(L)>(a, b, c)), ...);
}

TEST(PtxTwins, Lop3EveryTruthTableIsItsFunction) {
  std::mt19937 rng(7);
  for (int i = 0; i < 4; ++i) expect_every_table(std::make_integer_sequence<int, 256>{}, rng(), rng(), rng());
  EXPECT_EQ(kl::ptx::lop3<0xEA>(0x12345678u, 0x000f000fu, 0x64006400u), 0x64046408u);  // by hand: (a & b) | c
}

// ---- mma.sync -------------------------------------------------------------------------------

enum class Kind { f16, bf16, s8, e4m3, e5m2 };
constexpr int depth(Kind k) { return k == Kind::f16 || k == Kind::bf16 ? 16 : 32; }
const char* name(Kind k) {
  const char* n[] = {"f16", "bf16", "s8", "e4m3", "e5m2"};
  return n[int(k)];
}

// A (16 x K) and B (K x 8) as element bits, C and D (16 x 8); s8 uses the int halves.
struct MmaCase {
  uint32_t a[16][32], b[32][8];
  float c[16][8], d[16][8];
  int ci[16][8], di[16][8];
};

uint32_t encode(Kind k, double v) {
  switch (k) {
    case Kind::f16: return __half_as_ushort(__float2half(float(v)));
    case Kind::bf16: return __bfloat16_as_ushort(__float2bfloat16(float(v)));
    case Kind::s8: return static_cast<uint8_t>(static_cast<int8_t>(v));
    case Kind::e4m3: return __nv_fp8_e4m3(float(v)).__x;
    case Kind::e5m2: return __nv_fp8_e5m2(float(v)).__x;
  }
  return 0;
}

// Each lane builds its fragments element by element with the PTX ISA's formulas
// (g = groupID, t = threadID_in_group), calls the wrapper, and stores D by the C/D formula.
// alias: the accumulator is passed as both c and d, as kernels do.
template <Kind kKind>
__global__ void mma_from_the_tables(MmaCase* p, int alias) {
  const int lane = int(threadIdx.x), g = lane / 4, t = lane % 4;
  uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  if constexpr (depth(kKind) == 16) {  // "Matrix Fragments for mma.m16n8k16 with floating point type"
    for (int i = 0; i < 8; ++i) {
      const int row = (i < 2 || (4 <= i && i < 6)) ? g : g + 8;
      const int col = i < 4 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;
      a[i / 2] |= p->a[row][col] << (16 * (i % 2));
    }
    for (int i = 0; i < 4; ++i) {
      const int row = i < 2 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;
      b[i / 2] |= p->b[row][g] << (16 * (i % 2));
    }
  } else {  // "Matrix Fragments for mma.m16n8k32" (.s8 / .e4m3 / .e5m2)
    for (int i = 0; i < 16; ++i) {
      const int row = (i < 4 || (8 <= i && i < 12)) ? g : g + 8;
      const int col = i < 8 ? t * 4 + (i & 3) : t * 4 + (i & 3) + 16;
      a[i / 4] |= p->a[row][col] << (8 * (i % 4));
    }
    for (int i = 0; i < 8; ++i) {
      const int row = i < 4 ? t * 4 + (i & 3) : t * 4 + (i & 3) + 16;
      b[i / 4] |= p->b[row][g] << (8 * (i % 4));
    }
  }
  auto row_of = [&](int i) { return i < 2 ? g : g + 8; };
  auto col_of = [&](int i) { return t * 2 + (i & 1); };
  if constexpr (kKind == Kind::s8) {
    int c[4], d[4];
    for (int i = 0; i < 4; ++i) c[i] = p->ci[row_of(i)][col_of(i)];
    if (alias) {
      kl::ptx::mma_m16n8k32_s8_s32(c, a, b, c);
      for (int i = 0; i < 4; ++i) d[i] = c[i];
    } else {
      kl::ptx::mma_m16n8k32_s8_s32(d, a, b, c);
    }
    for (int i = 0; i < 4; ++i) p->di[row_of(i)][col_of(i)] = d[i];
  } else {
    float c[4], d[4];
    for (int i = 0; i < 4; ++i) c[i] = p->c[row_of(i)][col_of(i)];
    float(&dst)[4] = alias ? c : d;
    if constexpr (kKind == Kind::f16) kl::ptx::mma_m16n8k16_f16_f32(dst, a, b, c);
    if constexpr (kKind == Kind::bf16) kl::ptx::mma_m16n8k16_bf16_f32(dst, a, b, c);
    if constexpr (kKind == Kind::e4m3) kl::ptx::mma_m16n8k32_e4m3_f32(dst, a, b, c);
    if constexpr (kKind == Kind::e5m2) kl::ptx::mma_m16n8k32_e5m2_f32(dst, a, b, c);
    for (int i = 0; i < 4; ++i) p->d[row_of(i)][col_of(i)] = dst[i];
  }
}

struct Matrices {
  double a[16][32], b[32][8], c[16][8];
};

// Runs the twin on A, B, C (values exactly representable in the kind); returns D as doubles.
std::vector<double> run_mma(Kind k, const Matrices& m, bool alias) {
  DeviceBuffer<MmaCase> buf(1);
  MmaCase& p = buf[0];
  std::memset(&p, 0, sizeof p);
  for (int r = 0; r < 16; ++r)
    for (int j = 0; j < depth(k); ++j) p.a[r][j] = encode(k, m.a[r][j]);
  for (int j = 0; j < depth(k); ++j)
    for (int n = 0; n < 8; ++n) p.b[j][n] = encode(k, m.b[j][n]);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) p.c[r][n] = float(m.c[r][n]), p.ci[r][n] = int(m.c[r][n]);
  cudaError_t e = cudaErrorInvalidValue;
  if (k == Kind::f16) e = SIM_LAUNCH(mma_from_the_tables<Kind::f16>, 1, 32, 0, buf.p, int(alias));
  if (k == Kind::bf16) e = SIM_LAUNCH(mma_from_the_tables<Kind::bf16>, 1, 32, 0, buf.p, int(alias));
  if (k == Kind::s8) e = SIM_LAUNCH(mma_from_the_tables<Kind::s8>, 1, 32, 0, buf.p, int(alias));
  if (k == Kind::e4m3) e = SIM_LAUNCH(mma_from_the_tables<Kind::e4m3>, 1, 32, 0, buf.p, int(alias));
  if (k == Kind::e5m2) e = SIM_LAUNCH(mma_from_the_tables<Kind::e5m2>, 1, 32, 0, buf.p, int(alias));
  EXPECT_EQ(e, cudaSuccess) << kl::sim::last_message();
  std::vector<double> d(128);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) d[r * 8 + n] = k == Kind::s8 ? double(p.di[r][n]) : double(p.d[r][n]);
  return d;
}

constexpr Kind kKinds[] = {Kind::f16, Kind::bf16, Kind::s8, Kind::e4m3, Kind::e5m2};

// Random small values, exact in every kind: quarters in [-8, 8] for f16/bf16, integers in
// [-8, 8] for fp8 (e5m2 has 2 mantissa bits: 5, 6, 7 are exact), [-128, 127] for s8. Non-zero C.
TEST(PtxTwins, MmaEveryKindMatchesAPlainLoopOnRandomMatrices) {
  for (Kind k : kKinds)
    for (unsigned seed = 1; seed <= 4; ++seed) {
      std::mt19937 rng(seed * 7919u + unsigned(k));
      auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
      auto value = [&] {
        if (k == Kind::f16 || k == Kind::bf16) return pick(-32, 32) / 4.0;
        return k == Kind::s8 ? double(pick(-128, 127)) : double(pick(-8, 8));
      };
      Matrices m{};
      for (auto& row : m.a)
        for (auto& v : row) v = value();
      for (auto& row : m.b)
        for (auto& v : row) v = value();
      for (auto& row : m.c)
        for (auto& v : row) v = k == Kind::s8 ? pick(-100000, 100000) : pick(-200, 200) / 4.0;
      const std::vector<double> d = run_mma(k, m, seed % 2 == 0);
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 8; ++n) {
          double want = m.c[r][n];
          for (int j = 0; j < depth(k); ++j) want += m.a[r][j] * m.b[j][n];
          ASSERT_EQ(d[r * 8 + n], want) << name(k) << " seed " << seed << " D[" << r << "][" << n << "]";
        }
    }
}

// A(m, k) = (m + 2k) % 5 - 2, B(k, n) = (3k + n) % 7 - 3, C(m, n) = m - n. D[9][6] by hand:
// k = 0..15: 2·3 + (-1)(-1) + 1·2 + (-2)(-2) + 0·1 + 2(-3) + (-1)0 + 1·3 + (-2)(-1) + 0·2
//            + 2(-2) + (-1)1 + 1(-3) + (-2)0 + 0·3 + 2(-1) = 2; plus C = 3: 5 for K = 16.
// k = 16..31: (-1)2 + 1(-2) + (-2)1 + 0(-3) + 2·0 + (-1)3 + 1(-1) + (-2)2 + 0(-2) + 2·1
//            + (-1)(-3) + 1·0 + (-2)3 + 0(-1) + 2·2 + (-1)(-2) = -9: -4 for K = 32.
// D[9][6] is lane 7's d[2] (g = 1, t = 3; row g + 8, column 2t).
TEST(PtxTwins, MmaOneElementByHand) {
  Matrices m{};
  for (int r = 0; r < 16; ++r)
    for (int j = 0; j < 32; ++j) m.a[r][j] = (r + 2 * j) % 5 - 2;
  for (int j = 0; j < 32; ++j)
    for (int n = 0; n < 8; ++n) m.b[j][n] = (3 * j + n) % 7 - 3;
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) m.c[r][n] = r - n;
  for (Kind k : kKinds) EXPECT_EQ(run_mma(k, m, false)[9 * 8 + 6], depth(k) == 16 ? 5.0 : -4.0) << name(k);
}

// The twin's documented order: start from c, add the products k = 0, 1, ... in fp32. With
// C = 2^24 each +1 rounds away (ties to even), so D = 2^24; a sum of the products first
// would give 2^24 + 16. Hardware may differ here: kernels test with a tolerance.
TEST(PtxTwins, MmaTwinAddsInTheDocumentedOrder) {
  Matrices m{};
  for (int j = 0; j < 16; ++j) m.a[0][j] = 1, m.b[j][0] = 1;
  m.c[0][0] = 16777216.0;
  EXPECT_EQ(run_mma(Kind::f16, m, false)[0], 16777216.0);
}

// The twins' element decoders (inlined where the toolkit's conversions are calls) give the
// toolkit's host conversion of every pattern, bit for bit (NaNs included).
TEST(PtxTwins, ElementDecodersAreTheToolkitsConversionsOfEveryPattern) {
  const auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  for (uint32_t h = 0; h < 65536; ++h) {
    __half_raw hr;
    hr.x = static_cast<unsigned short>(h);
    ASSERT_EQ(bits(kl::ptx::detail::f16_value(h)), bits(__half2float(__half(hr)))) << "fp16 " << h;
    ASSERT_EQ(bits(kl::sim::half_value(static_cast<uint16_t>(h))), bits(__half2float(__half(hr)))) << "fp16 " << h;
    __nv_bfloat16_raw br;
    br.x = static_cast<unsigned short>(h);
    ASSERT_EQ(bits(kl::ptx::detail::bf16_value(h)), bits(__bfloat162float(__nv_bfloat16(br)))) << "bf16 " << h;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    __nv_fp8_e4m3 e4;
    __nv_fp8_e5m2 e5;
    e4.__x = e5.__x = static_cast<__nv_fp8_storage_t>(b);
    ASSERT_EQ(bits(kl::ptx::detail::e4m3_value(b)), bits(float(e4))) << "e4m3 " << b;
    ASSERT_EQ(bits(kl::ptx::detail::e5m2_value(b)), bits(float(e5))) << "e5m2 " << b;
    ASSERT_EQ(kl::ptx::detail::s8_value(b), static_cast<int>(static_cast<int8_t>(b))) << "s8 " << b;
  }
}

// How kernels feed mma: ldmatrix.x4 of a row-major A (lane l gives row l%16 at column 8(l/16)),
// B by ldmatrix.x2.trans of a row-major B (lane l gives row k = l%16) or by ldmatrix.x2 of B
// stored transposed (lane l gives row n = l%8 at column 8(l/8 % 2)).
__global__ void ldmatrix_into_mma(const unsigned short* a, const unsigned short* b, const float* c, float* d) {
  __shared__ __align__(16) unsigned short sa[16][16], sb[16][8], sbt[8][16];
  const int lane = int(threadIdx.x);
  for (int i = lane; i < 256; i += 32) sa[i / 16][i % 16] = a[i];
  for (int i = lane; i < 128; i += 32) sb[i / 8][i % 8] = b[i], sbt[i % 8][i / 8] = b[i];
  __syncwarp();
  uint32_t ra[4], rb[2], rbt[2];
  kl::ptx::ldmatrix_x4(ra, &sa[lane % 16][8 * (lane / 16)]);
  kl::ptx::ldmatrix_x2_trans(rb, &sb[lane % 16][0]);
  kl::ptx::ldmatrix_x2(rbt, &sbt[lane % 8][8 * (lane / 8 % 2)]);
  const int g = lane / 4, t = lane % 4;
  float cf[4], d1[4], d2[4];
  for (int i = 0; i < 4; ++i) cf[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  kl::ptx::mma_m16n8k16_f16_f32(d1, ra, rb, cf);
  kl::ptx::mma_m16n8k16_f16_f32(d2, ra, rbt, cf);
  for (int i = 0; i < 4; ++i) {
    d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d1[i];
    d[128 + (g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d2[i];
  }
}

TEST(PtxTwins, LdmatrixFragmentsFeedMmaAsKernelsUseThem) {
  DeviceBuffer<unsigned short> a(256), b(128);
  DeviceBuffer<float> c(128), d(256, -1.0f);
  std::mt19937 rng(42);
  std::vector<int> av(256), bv(128);
  for (int i = 0; i < 256; ++i) a[i] = __half_as_ushort(__float2half(float(av[i] = int(rng() % 17) - 8)));
  for (int i = 0; i < 128; ++i) b[i] = __half_as_ushort(__float2half(float(bv[i] = int(rng() % 17) - 8)));
  for (int i = 0; i < 128; ++i) c[i] = float(int(rng() % 101) - 50);
  ASSERT_EQ(SIM_LAUNCH(ldmatrix_into_mma, 1, 32, 0, a.p, b.p, c.p, d.p), cudaSuccess);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      double want = c[r * 8 + n];
      for (int j = 0; j < 16; ++j) want += av[r * 16 + j] * bv[j * 8 + n];
      EXPECT_EQ(d[r * 8 + n], want) << "B by ldmatrix.x2.trans, D[" << r << "][" << n << "]";
      EXPECT_EQ(d[128 + r * 8 + n], want) << "B by ldmatrix.x2 of B transposed, D[" << r << "][" << n << "]";
    }
}

// mma.sync.aligned needs the whole warp: a lane that leaves first is reported at the call.
__global__ void mma_without_lane_3(float* out) {
  if (threadIdx.x == 3) return;  // planted
  const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  float d[4], c[4] = {0, 0, 0, 0};
  kl::ptx::mma_m16n8k16_f16_f32(d, a, b, c);
  out[threadIdx.x] = d[0];
}

TEST(PtxTwins, WarpWideTwinsReportALaneThatLeft) {
  ClearSimErrors clear;
  DeviceBuffer<float> out(32);
  EXPECT_EQ(SIM_LAUNCH(mma_without_lane_3, 1, 32, 0, out.p), cudaErrorLaunchFailure);
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("deadlock in kernel 'mma_without_lane_3'"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 at "));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("test_ptx_twins.cpp:"));
  EXPECT_THAT(kl::sim::last_message(), HasSubstr("waits for lane 3 (thread (3,0,0)), which has exited"));
}

// ---- the sample program, in the simulator and through nvcc ------------------------------------

struct Outcome {
  int code = -1;
  std::string out;
};

Outcome shell(const std::string& cmd) {
  const fs::path log = fs::temp_directory_path() / ("kernelab-ptx-" + std::to_string(getpid()) + "-" +
                                                    std::to_string(reinterpret_cast<std::uintptr_t>(&cmd) % 100000));
  const int status = std::system((cmd + " >'" + log.string() + "' 2>&1 </dev/null").c_str());
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  fs::remove(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, s.str()};
}

const std::string kSample = KERNELAB_SOURCE_DIR "/tests/sim/ptx_wrappers.cu";

TEST(PtxTwins, SampleProgramPassesInTheSimulator) {
  const fs::path build = fs::path(KERNELAB_BINARY).parent_path();
  const Outcome r = shell("KERNELAB_SIM_CACHE='" + (build / "sim-cache").string() + "' '" KERNELAB_BINARY "' sim run '" +
                      kSample + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("mma e5m2 m16n8k32: 0 of 128 wrong"));
  EXPECT_THAT(r.out, HasSubstr("lop3 (a & b) | c and a ^ b ^ c: 0 words wrong"));
  EXPECT_THAT(r.out, HasSubstr("ptx wrappers: all checks passed"));
}

std::string nvcc() {
#ifdef KERNELAB_NVCC
  if (fs::exists(KERNELAB_NVCC)) return KERNELAB_NVCC;
#endif
  const Outcome r = shell("command -v nvcc");
  return r.code == 0 ? r.out.substr(0, r.out.find('\n')) : "";
}

// nvcc ARCH FLAGS on the sample program, into a scratch file; returns the run and the output's text.
std::pair<Outcome, std::string> compile(const std::string& arch, const std::string& flags) {
  const fs::path dir = fs::temp_directory_path() / ("kernelab-ptx-nvcc-" + std::to_string(getpid()) + "-" + arch);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  // fmt, not a chain of operator+: GCC 12's -O3 warns falsely (-Wstringop-overflow) on that chain here.
  const Outcome r = shell(fmt::format("'{}' -std=c++20 -arch={} -I '{}/src' {} '{}' -o '{}'", nvcc(), arch, KERNELAB_SOURCE_DIR,
                                      flags, kSample, out.string()));
  std::ifstream in(out);
  std::stringstream s;
  s << in.rdbuf();
  fs::remove_all(dir);
  return {r, s.str()};
}

#define REQUIRE_NVCC() \
  if (nvcc().empty()) GTEST_SKIP() << "nvcc not found"

TEST(PtxNvcc, EveryWrapperCompilesForSm90a) {
  REQUIRE_NVCC();
  const auto [r, obj] = compile("sm_90a", "-c");  // ptxas assembles every instruction
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(obj.empty());
}

TEST(PtxNvcc, EveryWrapperButFp8CompilesForSm80) {
  REQUIRE_NVCC();
  const auto [r, obj] = compile("sm_80", "-c");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(obj.empty());
}

// The Hopper wrappers (cuda/ptx_sm90.h) through tests/sim/hopper_gemm.cu: for sm_90a the PTX holds
// each instruction and the SASS the Hopper units' (UTMALDG, HGMMA, SYNCS...); for sm_80 the kernel
// body is left out (KL_PTX_SM90A) and it still compiles.
TEST(PtxNvcc, HopperWrappersAssembleForSm90a) {
  REQUIRE_NVCC();
  const std::string hopper = KERNELAB_SOURCE_DIR "/tests/sim/hopper_gemm.cu";
  const fs::path dir = fs::temp_directory_path() / ("kernelab-ptx-hopper-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string base = fmt::format("'{}' -std=c++17 -I '{}/src' '{}' ", nvcc(), KERNELAB_SOURCE_DIR, hopper);
  Outcome r = shell(base + "-arch=sm_90a -ptx -o '" + (dir / "h.ptx").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir / "h.ptx");
  std::stringstream text;
  text << in.rdbuf();
  const std::string ptx = text.str();
  for (const char* instr : {"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "wgmma.fence.sync.aligned",
                            "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
                            "cp.async.bulk.wait_group.read", "mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
                            "mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async.shared::cta", "elect.sync",
                            "setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.dec.sync.aligned.u32", "bar.sync"})
    EXPECT_THAT(ptx, HasSubstr(instr));
  r = shell(base + "-arch=sm_80 -c -o '" + (dir / "h80.o").string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  fs::remove_all(dir);
}

// The 8-bit wgmma wrappers through tests/sim/wgmma_fp8.cu and wgmma_s8.cu: ptxas assembles them for
// sm_90a, the PTX holds each shape and type, and for sm_80 the kernel body is left out and it still compiles.
TEST(PtxNvcc, EightBitWgmmaWrappersAssembleForSm90a) {
  REQUIRE_NVCC();
  const std::vector<std::pair<std::string, std::vector<std::string>>> programs = {
      {"wgmma_fp8",
       {"wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2", "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2"}},
      {"wgmma_s8", {"wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8", "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8"}}};
  for (const auto& [name, instrs] : programs) {
    const std::string program = KERNELAB_SOURCE_DIR "/tests/sim/" + name + ".cu";
    const fs::path dir = fs::temp_directory_path() / ("kernelab-ptx-" + name + "-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string base = fmt::format("'{}' -std=c++17 -I '{}/src' '{}' ", nvcc(), KERNELAB_SOURCE_DIR, program);
    Outcome r = shell(base + "-arch=sm_90a -c -o '" + (dir / "w.o").string() + "'");
    EXPECT_EQ(r.code, 0) << name << ": " << r.out;
    r = shell(base + "-arch=sm_90a -ptx -o '" + (dir / "w.ptx").string() + "'");
    ASSERT_EQ(r.code, 0) << name << ": " << r.out;
    std::ifstream in(dir / "w.ptx");
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& instr : instrs) EXPECT_THAT(text.str(), HasSubstr(instr)) << name;
    r = shell(base + "-arch=sm_80 -c -o '" + (dir / "w80.o").string() + "'");
    EXPECT_EQ(r.code, 0) << name << ": " << r.out;
    fs::remove_all(dir);
  }
}

TEST(PtxNvcc, ThePtxHoldsEveryInstruction) {
  REQUIRE_NVCC();
  const auto [r90, ptx90] = compile("sm_90a", "-ptx");
  ASSERT_EQ(r90.code, 0) << r90.out;
  for (const char* instr :
       {"cp.async.commit_group;",
        "cp.async.wait_group 1;", "cp.async.wait_group 0;", "cp.async.wait_all;",
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", "movmatrix.sync.aligned.m8n8.trans.b16",
        "lop3.b32"})
    EXPECT_THAT(ptx90, HasSubstr(instr)) << "sm_90a PTX";
  for (const char* sized : {"ca\\.shared\\.global \\[%r[0-9]+\\], \\[%rd[0-9]+\\], 4;",
                            "ca\\.shared\\.global \\[%r[0-9]+\\], \\[%rd[0-9]+\\], 8;",
                            "cg\\.shared\\.global \\[%r[0-9]+\\], \\[%rd[0-9]+\\], 16;"})
    EXPECT_THAT(ptx90, ::testing::ContainsRegex(std::string("cp\\.async\\.") + sized)) << "sm_90a PTX";
  const auto [r80, ptx80] = compile("sm_80", "-ptx");
  ASSERT_EQ(r80.code, 0) << r80.out;
  EXPECT_THAT(ptx80, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  EXPECT_THAT(ptx80, HasSubstr("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
  EXPECT_THAT(ptx80, ::testing::Not(HasSubstr("e4m3"))) << "the sample leaves fp8 out before sm_89";
}

TEST(PtxNvcc, Fp8MmaForSm80IsACompileError) {
  REQUIRE_NVCC();
  const auto [r, obj] = compile("sm_80", "-c -DPTX_FP8_ON_EVERY_ARCH");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("mma.sync with e4m3/e5m2 needs sm_89 or newer"));
}

}  // namespace
#endif
