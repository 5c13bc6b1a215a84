// The simulator profiler against counts worked out here from each access pattern, never read
// back from the simulator: ncu's definitions (a request is a warp-level instruction; sectors are
// the distinct 32-byte sectors its lanes touch; a shared access needs, per phase, as many
// wavefronts as the most distinct words any bank must deliver) applied to the lane addresses.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "bench/devices.h"
#include "cuda/ptx.h"
#include "report/cuda_variants.h"
#include "sim/profile.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---- the definitions, applied by hand -----------------------------------------------------------

struct Access {
  std::uint64_t address;  // bytes from a 256-byte aligned allocation's start
  unsigned bytes;
};

double sectors(const std::vector<Access>& lanes) {
  std::set<std::uint64_t> s;
  for (const Access& a : lanes)
    for (std::uint64_t b = a.address; b < a.address + a.bytes; ++b) s.insert(b / 32);
  return double(s.size());
}

// Wavefronts of one shared-memory instruction: lanes in phases of 32 (<= 4 bytes), 16 (8 bytes)
// or 8 (16 bytes); in each, the largest number of distinct 4-byte words in one of the 32 banks.
double wavefronts(const std::vector<Access>& lanes) {
  const unsigned per_phase = lanes.front().bytes <= 4 ? 32 : lanes.front().bytes == 8 ? 16 : 8;
  double total = 0;
  for (std::size_t first = 0; first < lanes.size(); first += per_phase) {
    std::map<unsigned, std::set<std::uint64_t>> words_of_bank;
    for (std::size_t l = first; l < std::min<std::size_t>(first + per_phase, lanes.size()); ++l)
      for (std::uint64_t w = lanes[l].address / 4; w <= (lanes[l].address + lanes[l].bytes - 1) / 4; ++w)
        words_of_bank[unsigned(w % 32)].insert(w);
    std::size_t most = 0;
    for (const auto& [bank, words] : words_of_bank) most = std::max(most, words.size());
    total += double(most);
  }
  return total;
}
double phases(const std::vector<Access>& lanes) {
  const unsigned per_phase = lanes.front().bytes <= 4 ? 32 : lanes.front().bytes == 8 ? 16 : 8;
  return double((lanes.size() + per_phase - 1) / per_phase);
}

// The lanes of a full warp, lane l at f(l).
template <class F>
std::vector<Access> warp(unsigned bytes, F address_of_lane, unsigned lanes = 32) {
  std::vector<Access> v;
  for (unsigned l = 0; l < lanes; ++l) v.push_back({std::uint64_t(address_of_lane(l)), bytes});
  return v;
}

// ---- running kernelab -----------------------------------------------------------------------------

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

Outcome kernelab(const std::string& args) {
  static const fs::path build = fs::path(KERNELAB_BINARY).parent_path();
  const fs::path tmp = fs::temp_directory_path() / ("kernelab-profile-test-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string cmd = "KERNELAB_SIM_CACHE='" + (build / "sim-cache").string() + "' '" KERNELAB_BINARY "' " + args + " >'" +
                          (tmp / "out").string() + "' 2>'" + (tmp / "err").string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  Outcome r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(tmp / "out"), slurp(tmp / "err")};
  fs::remove_all(tmp);
  return r;
}

const json& kernel(const json& kernels, const std::string& name) {
  for (const json& k : kernels)
    if (k["name"] == name) return k;
  ADD_FAILURE() << "no kernel " << name << " in " << kernels.dump();
  static const json none = json{{"metrics", json::object()}};
  return none;
}
double m(const json& k, const std::string& metric) { return k["metrics"].value(metric, -1.0); }

const std::string kLdReq = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
const std::string kLdSec = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
const std::string kStReq = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
const std::string kStSec = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
const std::string kAtomReq = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum";
const std::string kAtomSec = "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum";
const std::string kShLdWave = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
const std::string kShStWave = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
const std::string kShLdConf = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
const std::string kShStConf = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
const std::string kLanes = "sim__active_lanes_per_memory_inst.ratio";

// ---- sim run --profile on a program it has never seen -------------------------------------------------

class ProfileProgram : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new Outcome(kernelab("sim run --profile --json '" KERNELAB_SOURCE_DIR "/tests/sim/access_patterns.cu'"));
    ASSERT_EQ(run_->code, 0) << run_->err;
    kernels_ = new json(json::parse(run_->out)["kernels"]);
  }
  static void TearDownTestSuite() { delete run_, delete kernels_; }
  static Outcome* run_;
  static json* kernels_;
};
Outcome* ProfileProgram::run_ = nullptr;
json* ProfileProgram::kernels_ = nullptr;

TEST_F(ProfileProgram, TheProgramsOwnOutputGoesToStderrAndItsChecksPass) {
  EXPECT_NE(run_->err.find("access patterns: 0 values wrong"), std::string::npos) << run_->err;
}

TEST_F(ProfileProgram, StridedLoadsTouchOneSectorPerLaneOnceTheStrideReachesASector) {
  for (int s : {1, 2, 8, 32}) {
    const json& k = kernel(*kernels_, "strided_load<" + std::to_string(s) + ">");
    EXPECT_EQ(m(k, kLdReq), 1) << s;
    EXPECT_EQ(m(k, kLdSec), sectors(warp(4, [s](unsigned l) { return 4 * l * s; }))) << s;
    EXPECT_EQ(m(k, kStReq), 1);
    EXPECT_EQ(m(k, kStSec), sectors(warp(4, [](unsigned l) { return 4 * l; })));
  }
}

TEST_F(ProfileProgram, ColumnWalkConflictsWithoutPaddingAndNotWithIt) {
  for (int w : {32, 33}) {
    const json& k = kernel(*kernels_, "column_walk<" + std::to_string(w) + ">");
    double loads = 0, stores = 0, ideal = 0;
    for (int c = 0; c < 32; ++c) {
      const auto column = warp(4, [w, c](unsigned lane) { return 4 * (lane * w + c); });  // tile[lane][c]
      const auto row = warp(4, [w, c](unsigned lane) { return 4 * (c * w + lane); });     // tile[c][lane]
      loads += wavefronts(column), stores += wavefronts(row), ideal += phases(column);
    }
    EXPECT_EQ(m(k, kShLdWave), loads) << w;
    EXPECT_EQ(m(k, kShStWave), stores) << w;
    EXPECT_EQ(m(k, kShLdConf), loads - ideal) << w;
    EXPECT_EQ(m(k, kShStConf), 0) << w;
    EXPECT_EQ(m(k, kLdReq), 32) << "one coalesced row load per k";
  }
  EXPECT_EQ(m(kernel(*kernels_, "column_walk<32>"), kShLdConf), 32 * 31) << "32-way: 31 extra wavefronts a column";
  EXPECT_EQ(m(kernel(*kernels_, "column_walk<33>"), kShLdConf), 0);
}

TEST_F(ProfileProgram, SixteenByteVectorsAreOneRequestOfSixteenSectorsAndFourConflictFreeWavefronts) {
  const json& k = kernel(*kernels_, "vector_copy");
  double gl = 0, sh_st = 0, sh_ld = 0, ideal = 0;
  for (unsigned w = 0; w < 2; ++w) {
    gl += sectors(warp(16, [w](unsigned l) { return 16 * (32 * w + l); }));
    sh_st += wavefronts(warp(16, [w](unsigned l) { return 16 * (32 * w + l); }));
    sh_ld += wavefronts(warp(16, [w](unsigned l) { return 16 * (63 - (32 * w + l)); }));
    ideal += phases(warp(16, [](unsigned l) { return 16 * l; }));
  }
  EXPECT_EQ(m(k, kLdReq), 2);
  EXPECT_EQ(m(k, kLdSec), gl);
  EXPECT_EQ(m(k, kStSec), gl);
  EXPECT_EQ(m(k, kShStWave), sh_st);
  EXPECT_EQ(m(k, kShLdWave), sh_ld);
  EXPECT_EQ(m(k, kShLdConf), sh_ld - ideal);
  EXPECT_EQ(m(k, kShLdConf), 0);
}

TEST_F(ProfileProgram, BroadcastIsOneWavefrontAndOneSector) {
  const json& k = kernel(*kernels_, "broadcast");
  EXPECT_EQ(m(k, kShLdWave), wavefronts(warp(4, [](unsigned) { return 0; })));
  EXPECT_EQ(m(k, kShLdConf), 0);
  EXPECT_EQ(m(k, kLdSec), sectors(warp(4, [](unsigned) { return 0; })));
  // s[0] by lane 0 (1), s[0] and in[0] by 32 lanes, out by 32: (1 + 32 + 32 + 32) / 4 instructions.
  EXPECT_DOUBLE_EQ(m(k, kLanes), (1 + 32 + 32 + 32) / 4.0);
}

TEST_F(ProfileProgram, HalfActiveWarpAndDivergentBranchesCountTheirLanes) {
  const json& k = kernel(*kernels_, "half_active");
  EXPECT_EQ(m(k, kLdReq), 1);
  EXPECT_EQ(m(k, kLdSec), sectors(warp(4, [](unsigned l) { return 4 * l; }, 16)));
  EXPECT_EQ(m(k, kStReq), 3) << "out (16 lanes), odd (16), even (16)";
  EXPECT_DOUBLE_EQ(m(k, kLanes), 16);
}

TEST_F(ProfileProgram, LanesSkippingALoopIterationsBranchAreNotInItsInstruction) {
  const json& k = kernel(*kernels_, "divergent_loop");
  EXPECT_EQ(m(k, kLdReq), 4) << "one load per path, 8 lanes each";
  EXPECT_EQ(m(k, kLdSec), 4);
  EXPECT_DOUBLE_EQ(m(k, kLanes), (4 * 8 + 32) / 5.0);
}

TEST_F(ProfileProgram, EightByteSharedAccessesRunInHalfWarpPhases) {
  const json& k = kernel(*kernels_, "wide_shared");
  double st = 0;
  for (unsigned half : {0u, 1u}) st += wavefronts(warp(8, [half](unsigned l) { return 8 * (2 * l + half); }));
  EXPECT_EQ(m(k, kShStWave), st);
  EXPECT_EQ(m(k, kShStConf), st - 2 * 2) << "two stores, two phases each";
  EXPECT_EQ(m(k, kShLdWave), wavefronts(warp(8, [](unsigned l) { return 8 * l; })));
  EXPECT_EQ(m(k, kShLdConf), 0);
}

TEST_F(ProfileProgram, AtomicsAreOneRequestPerWarpInstruction) {
  const json& k = kernel(*kernels_, "atomics");
  EXPECT_EQ(m(k, kAtomReq), 2);
  EXPECT_EQ(m(k, kAtomSec), sectors(warp(4, [](unsigned) { return 0; })) + sectors(warp(4, [](unsigned l) { return 4 * (l % 4); })));
}

TEST_F(ProfileProgram, StoresOfConvertedSixteenBitValuesAreCounted) {
  const json& k = kernel(*kernels_, "store_converted");
  EXPECT_EQ(m(k, kLdReq), 2);
  EXPECT_EQ(m(k, kStReq), 2) << "one __half and one __nv_bfloat16 store per lane, each a call's result";
  EXPECT_EQ(m(k, kStSec), 4);
}

TEST(ProfileRun, EventTimesUnderTheSimulatorAreCalledTheHostsTime) {
  const Outcome r = kernelab("sim run '" KERNELAB_SOURCE_DIR "/tests/sim/streams_events.cu'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("host's time to simulate the work, not a GPU's"), std::string::npos) << r.err;
}

TEST(ProfileRun, RefusesToCombineWithTheRaceCheck) {
  const Outcome r = kernelab("sim run --profile --race-check '" KERNELAB_SOURCE_DIR "/tests/sim/access_patterns.cu'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
}

// ---- sim profile: the ladders' lessons ---------------------------------------------------------------

json profile(const std::string& args) {
  const Outcome r = kernelab("sim profile " + args + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out) : json{{"rungs", json::array()}};
}

json rung(const json& p, const std::string& variant) {
  for (const json& r : p["rungs"])
    if (r["variant"] == variant) return r;
  ADD_FAILURE() << "no rung " << variant;
  return json{{"kernels", json::array()}};
}

double sum(const json& r, const std::string& metric) {
  double s = 0;
  for (const json& k : r["kernels"]) s += m(k, metric);
  return s;
}

TEST(SimProfile, TransposeNaiveStoresAColumnPerWarpAndTheTilesStoreRows) {
  const json p = profile("transpose --rows 1024 --cols 1024 --dtype fp32");
  // naive: lane l of a warp writes y[c + l][r], rows 1024 floats apart.
  const double column = sectors(warp(4, [](unsigned l) { return 4 * 1024 * l; }));
  const double row = sectors(warp(4, [](unsigned l) { return 4 * l; }));
  const json naive = rung(p, "cuda_naive");
  EXPECT_EQ(sum(naive, kStSec) / sum(naive, kStReq), column);
  EXPECT_EQ(column, 32);
  for (const char* v : {"cuda_smem", "cuda_padded", "cuda_swizzled"}) {
    const json r = rung(p, v);
    EXPECT_EQ(sum(r, kStSec) / sum(r, kStReq), row) << v;
    EXPECT_EQ(sum(r, kLdSec) / sum(r, kLdReq), row) << v;
    EXPECT_TRUE(r["checked"].get<bool>()) << v << ": " << r["check_failure"];
  }
  // The plain tile reads a column of float[32][32]; the padded one of float[32][33].
  const auto plain = warp(4, [](unsigned l) { return 4 * 32 * l; }), padded = warp(4, [](unsigned l) { return 4 * 33 * l; });
  const json smem = rung(p, "cuda_smem");
  EXPECT_EQ(sum(smem, kShLdConf), (wavefronts(plain) - phases(plain)) * (1024.0 * 1024 / 32));
  EXPECT_EQ(sum(rung(p, "cuda_padded"), kShLdConf), wavefronts(padded) - phases(padded));
  EXPECT_EQ(sum(rung(p, "cuda_padded"), kShLdConf), 0);
  EXPECT_EQ(sum(rung(p, "cuda_swizzled"), kShLdConf), 0);
  const json vec = rung(p, "cuda_vectorized");
  EXPECT_EQ(sum(vec, kLdSec) / sum(vec, kLdReq), sectors(warp(16, [](unsigned l) { return 16 * l; }))) << "16-byte loads";
  EXPECT_EQ(sum(vec, kShLdConf) + sum(vec, kShStConf), 0) << "its note: conflict-free 16-byte shared accesses";
  EXPECT_NEAR(naive["model_dram_over_min"].get<double>(), 1.0, 0.01) << "8 MiB fits the modelled 50 MiB L2";
}

// The gemm ladder at 256^3, each rung's note against its counts.
TEST(SimProfile, GemmLadderCountsWhatItsNotesClaim) {
  const json f = profile("gemm --dtype fp32 --m 256 --n 256 --k 256 --variant cuda_naive cuda_coalesced cuda_warptile");
  const json naive = rung(f, "cuda_naive"), coalesced = rung(f, "cuda_coalesced"), warptile = rung(f, "cuda_warptile");
  EXPECT_GT(sum(naive, kLdSec) / sum(naive, kLdReq), 4 * sum(coalesced, kLdSec) / sum(coalesced, kLdReq));
  EXPECT_EQ(sum(warptile, kShLdConf), 0) << "warp tiles: broadcast float4 loads, no conflicts";
  const double flops = 2.0 * 256 * 256 * 256;
  const json h = profile("gemm --dtype bf16 --m 256 --n 256 --k 256 --variant cuda_wmma cuda_mma_ldmatrix cuda_cp_async");
  for (const char* v : {"cuda_wmma", "cuda_mma_ldmatrix", "cuda_cp_async"}) {
    const json r = rung(h, v);
    EXPECT_TRUE(r["checked"].get<bool>()) << v << ": " << r["check_failure"];
    EXPECT_EQ(sum(r, "sim__tensor_flops.sum"), flops) << v;
    EXPECT_EQ(sum(r, "sm__inst_executed_pipe_tensor_op_hmma.sum"), flops / (2 * 16 * 8 * 16)) << v << ": m16n8k16 each";
  }
  // 128x128x32 tiles: per block, k tile and warp, 2 k16 steps of 4 ldmatrix.x4 (A) + 2 .x4.trans (B).
  const double ldsm = 4 * 8 * 8 * 2 * (4 + 2);
  for (const char* v : {"cuda_mma_ldmatrix", "cuda_cp_async"}) {
    const json r = rung(h, v);
    EXPECT_EQ(sum(r, "smsp__inst_executed_op_ldsm.sum"), ldsm) << v;
    EXPECT_EQ(sum(r, "sim__ldsm_bank_conflicts.sum"), 0) << v << ": the XOR swizzle";
    EXPECT_EQ(sum(r, kShStConf), 0) << v << ": swizzled 16-byte tile stores";
  }
  const json cp = rung(h, "cuda_cp_async");
  EXPECT_EQ(sum(cp, kLdReq), 0) << "A and B reach shared memory by cp.async only (256 is a multiple of 8)";
  EXPECT_EQ(sum(cp, "sim__ldgsts_bytes.sum"), 2.0 * 256 * 256 * 2 * 2) << "A and B once per block row/column: 2 blocks each";
  EXPECT_EQ(sum(cp, "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum") /
                sum(cp, "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"), 16);
  // Hopper: m64n128k16 per warpgroup instruction, counted per warp (4 each); no thread loads A or B.
  const json w = profile("gemm --dtype bf16 --m 256 --n 256 --k 256 --b-layout col --variant cuda_tma_wgmma cuda_warp_specialized");
  for (const char* v : {"cuda_tma_wgmma", "cuda_warp_specialized"}) {
    const json r = rung(w, v);
    EXPECT_TRUE(r["checked"].get<bool>()) << v << ": " << r["check_failure"];
    EXPECT_EQ(sum(r, "sim__tensor_flops.sum"), flops) << v;
    EXPECT_EQ(sum(r, "sm__inst_executed_pipe_tensor_op_gmma.sum"), 4 * flops / (2 * 64 * 128 * 16)) << v;
    EXPECT_EQ(sum(r, kLdReq), 0) << v << ": A and B arrive by TMA";
    EXPECT_EQ(sum(r, "sim__tma_ld_requests.sum"), 2 * 2 * (256 / 64) * 2) << v << ": per 128x128 tile and 64-deep k slice, a box of A and one of B";
    EXPECT_EQ(sum(r, "sim__tma_ld_bytes.sum"), 2.0 * 256 * 256 * 2 * 2) << v << ": A and B once per block column and row";
    EXPECT_EQ(sum(r, kShStConf), 0) << v;
  }
  const json ws = rung(w, "cuda_warp_specialized");
  EXPECT_EQ(sum(ws, kStReq), 0) << "D leaves by TMA store";
  EXPECT_EQ(sum(ws, "sim__tma_st_requests.sum"), 2 * 2 * 4) << "per tile, each consumer's 64 rows in two 64-column boxes";
  EXPECT_EQ(sum(ws, "sim__tma_st_bytes.sum"), 256.0 * 256 * 2) << "D (bf16) once";
}

// Naive attention writes S to HBM and rewrites it as P (and the flash rungs do not): at b 1, h 2, s 128 that is 2 x 128 x 128
// floats (128 KiB) twice, 4 sectors per 32-float warp store (two 64-byte rows of the 16 x 16 block,
// from a 256-byte-aligned workspace), before O (fp16) is written once. Each thread reads its own K
// row element by element: far more than 4 sectors per load request.
TEST(SimProfile, NaiveAttentionWritesSAndRewritesItAsP) {
  const json p = profile("attention --dtype fp16 --batch 1 --seq-q 128 --seq-kv 128 --heads 2 --kv-heads 2 --head-dim 64");
  const json r = rung(p, "cuda_naive");
  EXPECT_TRUE(r["checked"].get<bool>()) << r["check_failure"];
  const double s_bytes = 2.0 * 128 * 128 * 4;
  const json& scores = kernel(r["kernels"], "scores<__half>");
  EXPECT_EQ(m(scores, kStSec), s_bytes / 32);
  EXPECT_EQ(m(scores, kStSec) / m(scores, kStReq), 4) << "two aligned 64-byte rows per warp";
  EXPECT_GT(m(scores, kLdSec) / m(scores, kLdReq), 8) << "lanes read 16 different K rows";
  const json& softmax = kernel(r["kernels"], "softmax_rows");
  EXPECT_EQ(m(softmax, kStSec), s_bytes / 32 + 2 * 128) << "P over S, and one sector per row's LSE";
  EXPECT_EQ(m(kernel(r["kernels"], "pv<__half>"), kStSec), 128.0 * 2 * 64 * 2 / 32) << "O once";
  // The fused rung stores O and the LSE only, reads its padded K tile without bank conflicts, and
  // moves the fewest bytes through the modelled DRAM where the naive one moves about twice.
  const json f = rung(p, "cuda_fused_tiled");
  EXPECT_TRUE(f["checked"].get<bool>()) << f["check_failure"];
  EXPECT_EQ(sum(f, kStSec), 128.0 * 2 * 64 * 2 / 32 + 2 * 128) << "O, and one sector per row's LSE: no S";
  EXPECT_EQ(sum(f, kShLdConf), 0) << "K rows padded to an odd number of words";
  EXPECT_LT(sum(f, kLdSec) * 10, sum(r, kLdSec)) << "K and V once per 32 queries, not once per query";
  EXPECT_NEAR(f["model_dram_over_min"].get<double>(), 1.0, 1e-3) << "the fewest bytes, and the 48 of the offsets";
  EXPECT_GT(r["model_dram_over_min"].get<double>(), 1.9);
  // FlashAttention-2 on tensor cores: both products on mma.sync (4 b h s^2 d FLOPs, 4096 per
  // m16n8k16), every fragment by ldmatrix from the swizzled tiles without a bank conflict, K and V
  // (and Q) by cp.async, O staged in shared memory and stored as whole 16-byte chunks (16 sectors a warp).
  const json t = rung(p, "cuda_flash2_mma");
  EXPECT_TRUE(t["checked"].get<bool>()) << t["check_failure"];
  const double flops = 4.0 * 2 * 128 * 128 * 64;
  EXPECT_EQ(sum(t, "sm__inst_executed_pipe_tensor_op_hmma.sum"), flops / 4096);
  EXPECT_EQ(sum(t, "sim__ldsm_bank_conflicts.sum"), 0);
  EXPECT_EQ(sum(t, kShStConf), 0) << "O fragments into swizzled rows";
  EXPECT_EQ(sum(t, "sim__ldgsts_bytes.sum"), (128.0 * 2 * 64 * 2) * (1 + 2 * 2)) << "Q once, K and V once per 64 queries: twice at s 128";
  EXPECT_EQ(sum(t, kStSec), 128.0 * 2 * 64 * 2 / 32 + 2 * 128 / 8) << "O, and the LSE of 8 rows a sector";
  EXPECT_NEAR(t["model_dram_over_min"].get<double>(), 1.0, 1e-3);
  // FlashAttention-3 on Hopper: both products on wgmma (m64n64k16, 131072 FLOPs each, counted per
  // warp: 4 a warpgroup), Q, K and V by TMA once each (a box of Q and two of K and V per block of 128
  // queries), O through shared memory without a bank conflict.
  const json h = rung(p, "cuda_hopper_wgmma");
  EXPECT_TRUE(h["checked"].get<bool>()) << h["check_failure"];
  EXPECT_EQ(sum(h, "sm__inst_executed_pipe_tensor_op_gmma.sum"), 4 * flops / 131072);
  EXPECT_EQ(sum(h, "sim__tma_ld_requests.sum"), 2 * (1 + 2 + 2));
  EXPECT_EQ(sum(h, "sim__tma_ld_bytes.sum"), 3 * 128.0 * 2 * 64 * 2) << "Q, K and V once";
  EXPECT_EQ(sum(h, kStSec), 128.0 * 2 * 64 * 2 / 32 + 2 * 128 / 8) << "O staged over Q's rows, stored in 16-byte chunks";
  EXPECT_EQ(sum(h, kShStConf), 0);
  EXPECT_NEAR(h["model_dram_over_min"].get<double>(), 1.0, 1e-3);
}

// The naive backward writes P and dS (2 x 128 x 128 floats each at b 1, h 2, s 128); FlashAttention-2's
// recomputes them on chip. Its dQ by atomics costs an fp32 copy of dQ written and read back (and
// one request per warp, 4 query rows x 8 columns, per query tile each key tile sees); the
// deterministic pass has no atomics and moves the fewest bytes.
TEST(SimProfile, AttentionBackwardRecomputesPAndPaysForAtomicDq) {
  const std::string shape = "attention_bwd --dtype fp16 --batch 1 --seq-q 128 --seq-kv 128 --heads 2 --kv-heads 2 --head-dim 64";
  const json atomic = profile(shape + " --deterministic 0"), fixed = profile(shape + " --deterministic 1");
  const json naive = rung(atomic, "cuda_naive");
  EXPECT_TRUE(naive["checked"].get<bool>()) << naive["check_failure"];
  EXPECT_EQ(m(kernel(naive["kernels"], "probs<__half>"), kStSec), 2 * 2.0 * 128 * 128 * 4 / 32) << "P and dS";
  const double dq_fp32 = 128.0 * 2 * 64 * 4;
  const json a = rung(atomic, "cuda_flash2"), d = rung(fixed, "cuda_flash2");
  EXPECT_TRUE(a["checked"].get<bool>()) << a["check_failure"];
  EXPECT_TRUE(d["checked"].get<bool>()) << d["check_failure"];
  EXPECT_EQ(sum(a, kAtomReq), (128 / 32) * 2 * (128 / 32) * 8 * 8) << "key tiles x heads x query tiles x warps x 8 columns each";
  EXPECT_EQ(sum(d, kAtomReq), 0);
  EXPECT_NEAR(d["model_dram_over_min"].get<double>(), 1.0, 0.01);
  EXPECT_NEAR(a["model_dram_bytes"].get<double>() - d["model_dram_bytes"].get<double>(), 2 * dq_fp32, 0.02 * dq_fp32)
      << "the fp32 dQ written by the atomics, read by dq_convert";
  EXPECT_GT(naive["model_dram_over_min"].get<double>(), 1.9);
  // On tensor cores: the five products of 2 b h s^2 d FLOPs each (2.5x the forward's) as mma.sync,
  // 4096 FLOPs an instruction; the deterministic dQ pass recomputes S and dP (7 products, 1.4x).
  // Fragments by ldmatrix and dS^T, dK, dV through swizzled rows without a bank conflict; Q and dO
  // by cp.async once per 64 keys; one atomic request per 8 query rows x 4 column pairs.
  const json ta = rung(atomic, "cuda_flash2_mma"), td = rung(fixed, "cuda_flash2_mma");
  EXPECT_TRUE(ta["checked"].get<bool>()) << ta["check_failure"];
  EXPECT_TRUE(td["checked"].get<bool>()) << td["check_failure"];
  const double flops = 2.5 * 4 * 2 * 128 * 128 * 64, operand = 128.0 * 2 * 64 * 2;  // one of Q, K, V, dO in bytes
  EXPECT_EQ(sum(ta, "sm__inst_executed_pipe_tensor_op_hmma.sum"), flops / 4096);
  EXPECT_EQ(sum(td, "sm__inst_executed_pipe_tensor_op_hmma.sum"), 1.4 * flops / 4096);
  for (const json* r : {&ta, &td}) {
    EXPECT_EQ(sum(*r, "sim__ldsm_bank_conflicts.sum"), 0);
    EXPECT_EQ(sum(*r, kShStConf), 0);
  }
  EXPECT_EQ(sum(ta, "sim__ldgsts_bytes.sum"), 2 * operand + (128 / 64) * 2 * operand) << "K, V once; Q, dO once per 64 keys";
  EXPECT_EQ(sum(ta, kAtomReq), (128 / 64) * 2 * (128 / 32) * 4 * 16) << "key blocks x heads x query tiles x warps x 16";
  EXPECT_EQ(sum(ta, kAtomSec), 8 * sum(ta, kAtomReq));
  EXPECT_EQ(sum(ta, kAtomReq) * 2, sum(a, kAtomReq)) << "half the CUDA-core rung's requests: 64 keys a block, not 32";
  EXPECT_NEAR(td["model_dram_over_min"].get<double>(), 1.0, 0.01);
}

// Decode over a paged cache (b 1, 8 query heads on one kv head, 1024 tokens in 16-token pages):
// the group's 8 heads share one read of K and V (8192 sectors, not 8 x 8192) and the paged rung
// sits at the fewest bytes; four splits add only their fp32 partial O and LSE, which the L2
// holds for the merge (written back once, never read from DRAM).
TEST(SimProfile, DecodeReadsTheCacheOnceForTheGroupAndSplitsCostTheirPartials) {
  const json p = profile("decode --dtype fp16 --batch 1 --seq-q 1 --seq-kv 1024 --heads 8 --kv-heads 1 --head-dim 64 --page-size 16 --splits 4");
  const json one = rung(p, "cuda_paged"), split = rung(p, "cuda_split_kv");
  EXPECT_TRUE(one["checked"].get<bool>()) << one["check_failure"];
  EXPECT_TRUE(split["checked"].get<bool>()) << split["check_failure"];
  const double kv_sectors = 2.0 * 1024 * 64 * 2 / 32;
  const json& attend = kernel(one["kernels"], "attend<__half>");
  EXPECT_EQ(attend["blocks_total"], 1);
  EXPECT_GE(m(attend, kLdSec), kv_sectors);
  EXPECT_LT(m(attend, kLdSec), 1.1 * kv_sectors) << "K and V once for the 8 query heads";
  EXPECT_NEAR(one["model_dram_over_min"].get<double>(), 1.0, 1e-3);
  EXPECT_EQ(kernel(split["kernels"], "attend<__half>")["blocks_total"], 4);
  EXPECT_NEAR(split["model_dram_bytes"].get<double>() - one["model_dram_bytes"].get<double>(), 4.0 * 8 * (64 + 1) * 4, 64)
      << "each split's O and LSE in fp32, written back once";
}

// W4A16 at decode size (m 16, n 64, k 256, one block): what each rung's note says about the weights.
// v01 writes them back in 16 bits and reads them again; v02 and v03 bring 0.5 byte per weight into
// shared memory; v03 builds no 16-bit tile (no shared stores) and loads no B fragment by ldmatrix;
// v04 (the decode GEMV) is one kernel whose blocks each copy their scale rows once.
TEST(SimProfile, W4a16WeightsCrossDramOnceAtHalfAByteAndV03BuildsNoSixteenBitTile) {
  const double rows = 16, n = 64, k = 256;
  const json p = profile("gemm_w4a16 --dtype fp16 --m 16 --n 64 --k 256 --zero gptq");
  const json two = rung(p, "cuda_dequant_then_gemm"), smem = rung(p, "cuda_smem_dequant"), frag = rung(p, "cuda_fragment_lop3");
  const json gemv = rung(p, "cuda_decode_gemv");
  const double flops = 2 * rows * n * k, a_bytes = 2 * rows * k;
  for (const json* r : {&two, &smem, &frag, &gemv}) {
    EXPECT_TRUE((*r)["checked"].get<bool>()) << (*r)["variant"] << ": " << (*r)["check_failure"];
    EXPECT_EQ(sum(*r, "sim__tensor_flops.sum"), flops) << (*r)["variant"];
    EXPECT_EQ(sum(*r, "sm__inst_executed_pipe_tensor_op_hmma.sum"), flops / (2 * 16 * 8 * 16)) << (*r)["variant"];
    EXPECT_EQ(sum(*r, kShStConf) + sum(*r, kShLdConf) + sum(*r, "sim__ldsm_bank_conflicts.sum"), 0) << (*r)["variant"];
  }
  EXPECT_EQ(m(kernel(two["kernels"], "w4a16_dequantize<__half>"), "model__dram_bytes_write.sum"), 2 * n * k)
      << "the 16-bit weights written back";
  EXPECT_EQ(sum(two, "sim__ldgsts_bytes.sum"), a_bytes + 2 * n * k) << "and read again, 2 bytes each";
  EXPECT_EQ(sum(smem, "sim__ldgsts_bytes.sum"), a_bytes + n * k / 2) << "v02: 4-bit weights";
  // v03 also brings each group's scale and GPTQ zero code through the pipeline: one 4-byte word each
  // per column and group (2 groups of 128 here), no global load in the main loop.
  EXPECT_EQ(sum(frag, "sim__ldgsts_bytes.sum"), a_bytes + n * k / 2 + (k / 128) * n * 8) << "v03: 4-bit weights and group words";
  EXPECT_EQ(sum(frag, kLdReq), 0) << "v03: no ld.global";
  for (const json* r : {&smem, &frag}) EXPECT_NEAR((*r)["model_dram_over_min"].get<double>(), 1.0, 1e-3) << (*r)["variant"];
  EXPECT_GT(two["model_dram_over_min"].get<double>(), 2.5);
  EXPECT_EQ(sum(smem, kShStWave), 2 * n * k / 16 / 8)
      << "v02: the dequantized tile, 16-byte stores, 8 lanes per wavefront";
  EXPECT_EQ(sum(frag, kShStWave), 0) << "v03: no 16-bit tile";
  // ldmatrix.x4 per warp per k16 step: A (both) and B (v02 only); 4 warps, k / 16 steps.
  EXPECT_EQ(sum(smem, "smsp__inst_executed_op_ldsm.sum"), 2 * 4 * k / 16);
  EXPECT_EQ(sum(frag, "smsp__inst_executed_op_ldsm.sum"), 4 * k / 16);
  // v04, 32 columns a block (its first config, n being a multiple of 32): the 4-bit weights, and
  // each group's scale (2 bytes) and GPTQ zero code (half a byte) exactly once by cp.async; A's
  // fragments by ld.global, 16 four-byte loads a k64 chunk (rows g and g + 8, k 2t and 2t + 8, 4
  // k16 steps) in each of the n / 32 blocks, each load serving both strips; no split sum, no ldmatrix.
  const double groups = k / 128;
  EXPECT_EQ(sum(gemv, "sim__ldgsts_bytes.sum"), n * k / 2 + n * groups * 2 + n * groups / 2) << "v04: weights, scales, zeros once";
  EXPECT_EQ(sum(gemv, kLdReq), (k / 64) * (n / 32) * 16) << "v04: A by ld.global, every block";
  EXPECT_EQ(gemv["kernels"].size(), 1u) << "v04: no split-K sum";
  // Block barriers: v03's pipeline has one per k tile in each of its 4 warps; v04's 16 warps
  // meet three times a block (the scales in; before and after the partial sums), none in the loop.
  EXPECT_EQ(sum(frag, "sim__block_barriers.sum"), 4 * k / 64);
  EXPECT_EQ(sum(gemv, "sim__block_barriers.sum"), 3 * 16 * (n / 32));
  EXPECT_EQ(sum(gemv, "smsp__inst_executed_op_ldsm.sum"), 0);
  EXPECT_NEAR(gemv["model_dram_over_min"].get<double>(), 1.0, 1e-3);
}

TEST(SimProfile, BankSweepStrideKIsAGcdKWayConflict) {
  for (int stride : {1, 2, 3, 4, 8, 32}) {
    const json r = rung(profile("exp_smem_banks --blocks 1 --stride " + std::to_string(stride) + " --reps 4"), "cuda");
    const double requests = 8 * 4;  // 8 warps, 4 reps
    const auto lanes = warp(4, [stride](unsigned l) { return 4 * (l * stride % 1024); });
    EXPECT_EQ(sum(r, kShLdConf) / requests, wavefronts(lanes) - 1) << stride;
    EXPECT_EQ(wavefronts(lanes), std::gcd(stride, 32)) << stride;
  }
}

TEST(SimProfile, StrideExperimentSectorsGrowWithTheStride) {
  for (int stride : {1, 2, 4, 8, 16}) {
    const json r = rung(profile("exp_stride --n 16384 --stride " + std::to_string(stride) + " --bytes 4"), "cuda");
    const std::int64_t per_column = 16384 / stride;
    double expected = 0, requests = 0;
    for (int c = 0; c < stride; ++c)
      for (std::int64_t first = 0; first < per_column; first += 32, ++requests)
        expected += sectors(warp(4, [&](unsigned l) { return 4 * ((first + l) * stride + c); }));
    EXPECT_EQ(sum(r, kLdReq), requests) << stride;
    EXPECT_EQ(sum(r, kLdSec), expected) << stride;
  }
}

TEST(SimProfile, DivergenceExperimentsActiveLanes) {
  for (int paths : {1, 4, 32}) {
    const json p = profile("exp_divergence --n 4096 --paths " + std::to_string(paths) + " --work 2");
    // divergent: per warp x[e] (32 lanes), y[e] (32), and a[q], b[q] for each of min(paths, 32)
    // paths with 32 / paths lanes each.
    const double k = std::min(paths, 32);
    EXPECT_DOUBLE_EQ(sum(rung(p, "cuda_divergent"), kLanes), (64 + 2 * k * (32 / k)) / (2 + 2 * k)) << paths;
    EXPECT_DOUBLE_EQ(sum(rung(p, "cuda_uniform"), kLanes), 32) << paths;
  }
}

TEST(SimProfile, SampledGridsSayByHowMuch) {
  const json p = profile("transpose --rows 1024 --cols 1024 --variant cuda_naive --sample-blocks 64");
  const json r = rung(p, "cuda_naive");
  EXPECT_EQ(r["kernels"][0]["blocks_run"], 64);
  EXPECT_EQ(r["kernels"][0]["blocks_total"], 32 * 128);
  EXPECT_FALSE(r["checked"].get<bool>());
  EXPECT_EQ(sum(r, kStReq), 32768) << "scaled back to the whole grid";
}

// With no shape, the op's profile cases (the report's shapes) instead of its default problem, which
// for gemm took the simulator over 9 minutes.
TEST(SimProfile, NoShapeProfilesTheOpsProfileCases) {
  const kl::Op& op = kl::find_op("bias_gelu");
  const auto cases = op.profile_cases(op);
  const Outcome r = kernelab("sim profile bias_gelu --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json p = json::parse(r.out);
  ASSERT_TRUE(p.contains("cases")) << r.out;
  ASSERT_EQ(p["cases"].size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(p["cases"][i]["problem"], cases[i].label());
    EXPECT_EQ(p["cases"][i]["dtype"], kl::dtype_name(cases[i].dtype));
    EXPECT_FALSE(p["cases"][i]["rungs"].empty());
  }
  const Outcome text = kernelab("sim profile bias_gelu");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("no shape given"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(cases.front().label()), std::string::npos) << text.out;
}

TEST(SimProfile, BadInputIsRefused) {
  EXPECT_EQ(kernelab("sim profile no_such_op").code, 2);
  EXPECT_EQ(kernelab("sim profile transpose --gpu no_such_gpu").code, 2);
  EXPECT_EQ(kernelab("sim profile transpose --variant cpu_naive").code, 2) << "no CUDA rung chosen";
}

// ---- the report: every CUDA rung's memory column ---------------------------------------------------

TEST(ReportProfiles, EveryCudaRungHasItsMemoryColumnAndTheTransposeLadderShowsItsLessons) {
  std::string why;
  auto sim = kl::make_sim_device(why);
  ASSERT_TRUE(sim) << why;
  const auto rows = kl::cuda_variant_rows({}, "", "/nonexistent", nullptr, sim.get());
  std::map<std::string, const kl::RungProfileSummary*> transpose;
  for (const kl::CudaVariantRow& r : rows) {
    const kl::Op& op = kl::find_op(r.op);
    if (!op.profile_cases || op.find_variant(r.variant)->peer) {
      EXPECT_NE(r.memory.find("not profiled"), std::string::npos) << r.op;
      continue;
    }
    ASSERT_FALSE(r.profiles.empty()) << r.op << " " << r.variant << ": " << r.memory;
    EXPECT_EQ(r.memory.find("not profiled"), std::string::npos) << r.memory;
    for (const auto& p : r.profiles) EXPECT_TRUE(p.failure.empty()) << r.op << " " << r.variant << ": " << p.failure;
    if (r.op == "transpose") transpose[r.variant] = &r.profiles.front();
  }
  ASSERT_EQ(transpose.count("cuda_naive"), 1u);
  EXPECT_EQ(transpose["cuda_naive"]->st_sectors_per_request, 32);
  EXPECT_EQ(transpose["cuda_smem"]->st_sectors_per_request, 4);
  EXPECT_EQ(transpose["cuda_smem"]->ld_conflicts_per_request, 31);
  EXPECT_EQ(transpose["cuda_padded"]->ld_conflicts_per_request, 0);
  EXPECT_EQ(transpose["cuda_swizzled"]->ld_conflicts_per_request, 0);
}

// ---- the library: the L2 model and the record format -----------------------------------------------

// Each lane adds to one int of its own sector: a warp instruction touches 32 sectors.
void touch_sectors(int* p) { atomicAdd(&p[8 * (blockIdx.x * blockDim.x + threadIdx.x)], 1); }

TEST(ProfileL2, StreamingTwiceThroughAnL2HalfItsSizeMissesEveryTime) {
  const int sectors_n = 2048;  // 64 KiB
  int* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, sectors_n * 32), cudaSuccess);
  for (std::uint64_t l2 : {std::uint64_t(1) << 20, std::uint64_t(32) << 10}) {
    kl::sim::profile_begin({l2, 0});
    for (int pass = 0; pass < 2; ++pass)
      ASSERT_EQ(kl::sim::launch(touch_sectors, dim3(sectors_n / 256), dim3(256), 0, nullptr, buf), cudaSuccess);
    const auto launches = kl::sim::profile_end();
    ASSERT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches[0].counts.global_atom_requests, sectors_n / 32u);
    EXPECT_EQ(launches[0].counts.global_atom_sectors, std::uint64_t(sectors_n));
    const bool fits = l2 >= sectors_n * 32u;
    EXPECT_EQ(launches[0].counts.dram_read_bytes, sectors_n * 32u) << l2;
    EXPECT_EQ(launches[1].counts.dram_read_bytes, fits ? 0u : sectors_n * 32u) << l2;
    // Dirty sectors are written back once each by whichever launch dirtied them last.
    EXPECT_EQ(launches[0].counts.dram_write_bytes, fits ? 0u : sectors_n * 32u) << l2;
    EXPECT_EQ(launches[1].counts.dram_write_bytes, sectors_n * 32u) << l2;
  }
  cudaFree(buf);
}

// The PTX twins count themselves: one warp's cp.async of 16 bytes a lane, ldmatrix .x4 from rows
// 16 bytes apart (conflict-free) and 128 bytes apart (every row of a phase on the same 4 banks),
// and one mma.sync m16n8k16.
__global__ void twins(const uint4* src, float* out) {
  alignas(16) __shared__ unsigned char tile[32 * 128];
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < sizeof tile; i += 32) tile[i] = 0;
  __syncthreads();
  kl::ptx::cp_async_16(tile + 16 * lane, src + lane);
  kl::ptx::cp_async_wait_all();
  __syncthreads();
  uint32_t a[4], b[4];
  kl::ptx::ldmatrix_x4(a, tile + 16 * lane);
  kl::ptx::ldmatrix_x4(b, tile + 128 * lane);
  float d[4] = {};
  const uint32_t bb[2] = {b[0], b[1]};
  kl::ptx::mma_m16n8k16_f16_f32(d, a, bb, d);
  out[lane] = d[0];
}

TEST(ProfileTwins, CpAsyncLdmatrixAndMmaCountThemselvesWithTheirBytesAndFlops) {
  uint4* src = nullptr;
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 32 * sizeof(uint4)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, 32 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(src, 0, 32 * sizeof(uint4)), cudaSuccess);
  kl::sim::profile_begin({0, 0});
  ASSERT_EQ(kl::sim::launch(twins, dim3(1), dim3(32), 0, nullptr, src, out), cudaSuccess);
  const auto launches = kl::sim::profile_end();
  ASSERT_EQ(launches.size(), 1u);
  const kl::sim::ProfileCounts& c = launches[0].counts;
  EXPECT_EQ(c.ldgsts_requests, 1u);
  EXPECT_EQ(c.ldgsts_sectors, std::uint64_t(sectors(warp(16, [](unsigned l) { return 16 * l; }))));
  EXPECT_EQ(c.ldgsts_bytes, 32u * 16);
  EXPECT_EQ(c.ldsm_requests, 2u);
  EXPECT_EQ(c.ldsm_bytes, 2u * 32 * 16);
  const double packed = wavefronts(warp(16, [](unsigned l) { return 16 * l; })),
               strided = wavefronts(warp(16, [](unsigned l) { return 128 * l; }));
  EXPECT_EQ(c.ldsm_wavefronts, std::uint64_t(packed + strided));
  EXPECT_EQ(c.ldsm_wavefronts - c.ldsm_ideal, std::uint64_t(packed + strided - 2 * 4));
  EXPECT_EQ(packed, 4) << "four conflict-free 8-row phases";
  EXPECT_EQ(c.mma_f16, 1u);
  EXPECT_EQ(c.tensor_flops, 2u * 16 * 8 * 16);
  cudaFree(src), cudaFree(out);
}

TEST(ProfileL2, SampledLaunchesRunOnlyTheirFirstBlocks) {
  int* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 64 * 256 * 32), cudaSuccess);
  kl::sim::profile_begin({0, 3});
  ASSERT_EQ(kl::sim::launch(touch_sectors, dim3(64), dim3(256), 0, nullptr, buf), cudaSuccess);
  const auto launches = kl::sim::profile_end();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].blocks_total, 64u);
  EXPECT_EQ(launches[0].blocks_run, 3u);
  EXPECT_EQ(launches[0].counts.global_atom_requests, 3u * 8);
  cudaFree(buf);
}

TEST(ProfileRecord, ALaunchSurvivesTheTextRecordAndAWrongLineIsRefused) {
  kl::sim::LaunchProfile p;
  p.name = "k<1, 2>";
  p.grid = dim3(3, 2, 1), p.block = dim3(32, 4, 1), p.smem = 96, p.blocks_total = 6, p.blocks_run = 5;
  std::uint64_t v = 1;
  for (auto f : kl::sim::ProfileCounts::fields()) p.counts.*f = v++ * 1000003;
  kl::sim::LaunchProfile q;
  ASSERT_TRUE(kl::sim::parse_profile_record(kl::sim::profile_record(p), q));
  EXPECT_EQ(q.name, p.name);
  EXPECT_EQ(q.grid.y, 2u);
  EXPECT_EQ(q.block.y, 4u);
  EXPECT_EQ(q.blocks_run, 5u);
  for (auto f : kl::sim::ProfileCounts::fields()) EXPECT_EQ(q.counts.*f, p.counts.*f);
  EXPECT_FALSE(kl::sim::parse_profile_record("k\t1,1", q));
  EXPECT_FALSE(kl::sim::parse_profile_record("no tab", q));
}

TEST(ProfileMetrics, EveryMetricHasADefinitionAndTheNcuNamesAreNcus) {
  const auto metrics = kl::sim::profile_metrics(kl::sim::ProfileCounts{});
  ASSERT_EQ(metrics.size(), kl::sim::profile_metric_definitions().size());
  for (const auto& d : kl::sim::profile_metric_definitions()) {
    const std::string name = d.name;
    EXPECT_TRUE(name.rfind("l1tex__", 0) == 0 || name.rfind("smsp__", 0) == 0 || name.rfind("sm__", 0) == 0 ||
                name.rfind("sim__", 0) == 0 || name.rfind("model__", 0) == 0)
        << name;
    EXPECT_GT(std::string(d.definition).size(), 10u) << name;
  }
}

}  // namespace
#endif
