// `kernelab sim run` as a user runs it: ordinary CUDA programs it has never seen
// (tests/sim/*.cu, each also checked with nvcc by ctest) give the right results, and the
// planted race, deadlock and bad accesses fail with a message that names the problem, and a
// planted read of unwritten shared memory gives NaN.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct SimResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// kernelab sim run ARGS, with the build cache in the build tree (not the user's home).
SimResult sim_run(const std::string& args) {
  static const fs::path build = fs::path(KERNELAB_BINARY).parent_path();
  const fs::path tmp = fs::temp_directory_path() / ("kernelab-sim-test-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  const std::string cmd = "KERNELAB_SIM_CACHE='" + (build / "sim-cache").string() + "' '" KERNELAB_BINARY "' sim run " + args +
                          " >'" + (tmp / "out").string() + "' 2>'" + (tmp / "err").string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  SimResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(tmp / "out"), slurp(tmp / "err")};
  fs::remove_all(tmp);
  return r;
}

std::string program(const std::string& name) { return std::string("'") + KERNELAB_SOURCE_DIR "/tests/sim/" + name + "'"; }

TEST(SimRun, TiledMatmulWithSizesOffTheTile) {
  SimResult r = sim_run(program("matmul_tiled.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("matmul 100x77x53: max abs error"));
  r = sim_run(program("matmul_tiled.cu") + " -- 33 1 129");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("matmul 33x1x129")) << "arguments after -- reach the program";
}

// nvcuda::wmma: every layout, both input formats, a __half accumulator; exact integer sums.
TEST(SimRun, WarpMatrixApi) {
  SimResult r = sim_run(program("wmma_gemm.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* c : {"f16 f32 A row B row", "f16 f32 A col B col", "bf16 f32 A row B row", "f16 f16 A row B col"})
    EXPECT_THAT(r.out, HasSubstr(std::string("wmma ") + c + ": 0 of 1536 wrong"));
  EXPECT_THAT(r.out, HasSubstr("wmma: all checks passed"));
  r = sim_run(program("wmma_gemm.cu") + " -- misaligned");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("wmma::load_matrix_sync with a pointer not 32-byte aligned at"));
}

// A float4 load 4 bytes off its alignment faults as on a GPU, naming the type and the line.
TEST(SimRun, MisalignedVectorLoadFaults) {
  SimResult r = sim_run(program("misaligned.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sum4 with offset 0: 0 of 32 wrong"));
  r = sim_run(program("misaligned.cu") + " -- 1");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("misaligned load of 'const struct float4' at 0x"));
  EXPECT_THAT(r.err, HasSubstr("which needs 16-byte alignment (a GPU faults: misaligned address) at "));
  EXPECT_THAT(r.err, HasSubstr("misaligned.cu:10"));
}

// wgmma's K-major layouts written by hand (no swizzle, 32-, 64-, 128-byte swizzle), A from
// registers, and B MN-major (imm-trans-b), each multiplied exactly.
TEST(SimRun, WgmmaSharedMemoryLayouts) {
  const SimResult r = sim_run(program("wgmma_layouts.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* layout :
       {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle", "A from registers", "A from registers, B MN-major"})
    EXPECT_THAT(r.out, HasSubstr(std::string("wgmma m64n64k16 bf16, ") + layout + ": 0 of 4096 wrong"));
}

// 8-bit wgmma (m64n64k32 and m64n128k32, e4m3 and e5m2) on 1-byte K-major layouts written by hand
// (no swizzle, 32-, 64-, 128-byte swizzle): every element of D, so every lane's fragment, exact.
TEST(SimRun, WgmmaFp8SharedMemoryLayouts) {
  const SimResult r = sim_run(program("wgmma_fp8.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* shape : {"m64n64k32", "m64n128k32"})
    for (const char* type : {"e4m3", "e5m2"})
      for (const char* layout : {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle"})
        EXPECT_THAT(r.out, HasSubstr(std::string("wgmma ") + shape + " " + type + ", " + layout + ": 0 of " +
                                     (std::string(shape) == "m64n64k32" ? "4096" : "8192") + " wrong"));
  EXPECT_THAT(r.out, HasSubstr("wgmma fp8 layouts: all checks passed"));
  // The modelled accumulation (src/sim/hopper_fp8.h) prints the line an H200 printed: 2^13 + 1 survives,
  // 2^14 + 1 does not, and the bit dropped is truncated toward zero.
  EXPECT_THAT(r.out, HasSubstr("wgmma e4m3 accumulation: 2^E + 1 exact up to 14 significant bits (fp32: 24); "
                               "2^14 + 3 -> 2^14 +2, -2^14 - 3 -> -2^14 -2: rounds toward zero"));
}

// Integer wgmma (m64n64k32 and m64n128k32 s8 -> s32) on the same hand-written layouts: every element
// of D exact, from zero (scale-d 0) and onto accumulators preloaded with 2^30 + 1 (scale-d 1).
TEST(SimRun, WgmmaS8SharedMemoryLayouts) {
  const SimResult r = sim_run(program("wgmma_s8.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* shape : {"m64n64k32", "m64n128k32"})
    for (const char* onto : {"", " onto 2^30 + 1"})
      for (const char* layout : {"no swizzle", "32-byte swizzle", "64-byte swizzle", "128-byte swizzle"})
        EXPECT_THAT(r.out, HasSubstr(std::string("wgmma ") + shape + " s8" + onto + ", " + layout + ": 0 of " +
                                     (std::string(shape) == "m64n64k32" ? "4096" : "8192") + " wrong"));
  EXPECT_THAT(r.out, HasSubstr("wgmma s8 layouts: all checks passed"));
}

// A CUTLASS-style Hopper GEMM (TMA into 128-byte-swizzled shared memory, full/empty mbarriers,
// a producer and two consumer warpgroups, wgmma on descriptors, a TMA store): exact, and each
// planted mistake caught, a descriptor whose tile runs past the shared memory among them.
TEST(SimRun, HopperGemmWithTmaMbarriersAndWgmma) {
  SimResult r = sim_run(program("hopper_gemm.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hopper gemm 200x136x328 bf16: fp32 D 0 of 27200 wrong, bf16 D (TMA store) 0 wrong"));
  r = sim_run(program("hopper_gemm.cu") + " -- wrong-swizzle");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("bf16: fp32 D ")) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("fp32 D 0 of"))) << "a 64-byte-swizzle descriptor over 128-byte-swizzled tiles";
  r = sim_run(program("hopper_gemm.cu") + " -- deadlock");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("deadlock in kernel 'hopper_gemm'"));
  EXPECT_THAT(r.err, HasSubstr("mbarrier.try_wait.parity at " KERNELAB_SOURCE_DIR "/tests/sim/hopper_gemm.cu:80 by thread (128,0,0)"));
  EXPECT_THAT(r.err, HasSubstr("of the mbarrier at dynamic shared memory + 0x18000, which never completes: 1 of 2 arrivals pending"));
  r = sim_run(program("hopper_gemm.cu") + " -- no-fence");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("with no wgmma.fence before it"));
  EXPECT_THAT(r.err, HasSubstr("hopper_gemm.cu:88"));
  r = sim_run(program("hopper_gemm.cu") + " -- half-group");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("all 128 threads of its warpgroup (warps 4-7) must make it, and thread (192,0,0) (warp 6) waits at "
                               "wgmma.commit_group"));
  r = sim_run(program("hopper_gemm.cu") + " -- past-window");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("the B descriptor names bytes outside the block's dynamic shared memory"));
  EXPECT_THAT(r.err, HasSubstr("hopper_gemm.cu:88"));
}

// The toolkit's own C++ API (libcu++) as the Programming Guide's examples use it: TMA through
// cuda::barrier and cuda::device::experimental, memcpy_async into a barrier, block pipelines
// (all threads, and producer/consumer roles) and a thread's own pipeline: exact, and each planted
// mistake caught.
TEST(SimRun, LibcudacxxBarriersPipelinesAndTma) {
  SimResult r = sim_run(program("libcudacxx_async.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("libcu++ async copies: all exact"));
  r = sim_run(program("libcudacxx_async.cu") + " -- early-read");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("FAIL: barrier")) << "shared memory read before arrive_and_wait holds 0xFF bytes";
  EXPECT_THAT(r.err, Not(HasSubstr("FAIL: tma")));
  r = sim_run(program("libcudacxx_async.cu") + " -- no-tx");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("FAIL: tma")) << "a phase completed without the TMA's bytes";
  r = sim_run(program("libcudacxx_async.cu") + " -- deadlock");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("deadlock in kernel 'tma_kernel'"));
  EXPECT_THAT(r.err, HasSubstr("cuda::barrier::wait at " KERNELAB_SOURCE_DIR "/tests/sim/libcudacxx_async.cu:78"));
  EXPECT_THAT(r.err, HasSubstr("which never completes: 1 of 33 arrivals pending"));
}

TEST(SimRun, TemplatedBlockReductionWithWarpShuffles) {
  const SimResult r = sim_run(program("reduce_warp.cu") + " -- 100003");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("block_sum<128, double> over 100003 values"));
}

TEST(SimRun, HistogramInDynamicSharedMemory) {
  SimResult r = sim_run(program("histogram.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("into 100 bins (400 bytes of shared memory): 0 bins wrong"));
  r = sim_run(program("histogram.cu") + " -- 20000 50000");  // 80000 bytes: needs cudaFuncSetAttribute
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(80000 bytes of shared memory): 0 bins wrong"));
}

TEST(SimRun, StreamsEventsAndAsyncCopies) {
  const SimResult r = sim_run(program("streams_events.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("6 chunks on 2 streams: 0 values wrong, a elapsed time"));
}

TEST(SimRun, GraphCapturedFromAStreamAndReplayed) {
  const SimResult r = sim_run(program("graph_replay.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("10 kernels captured, 100 replays: untouched before the first replay, 0 values wrong"));
}

TEST(SimRun, PlantedRaceIsCaughtByTheRaceCheck) {
  SimResult r = sim_run(program("race.cu"));
  EXPECT_EQ(r.code, 0) << "in launch order the racy kernel happens to be right: " << r.err;
  r = sim_run("--race-check " + program("race.cu"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("race in kernel 'differences': its results depend on the order in which threads run"));
  EXPECT_THAT(r.err, HasSubstr("in the 4000-byte cudaMalloc buffer at"));
  EXPECT_THAT(r.err, HasSubstr("the simulator found problems (1 race)"));
}

TEST(SimRun, RaceFreeProgramsPassTheRaceCheck) {
  const SimResult r = sim_run("--race-check " + program("reduce_warp.cu") + " -- 5000");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("race")));
}

// Before: NULL for a pointer parameter did not convert, cudaMallocPitch/cudaMemcpy2D(Async)/
// cudaMemset2D were missing, and a __forceinline__ function passed by pointer did not compile.
TEST(SimRun, NullArgumentsPitchedCopiesAndAForceinlineOperatorByPointer) {
  const SimResult r = sim_run(program("runtime_calls.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("runtime calls: pitch 512, 0 values wrong (no error)"));
}

// Before: "no matches converting function 'scale' to type 'void (*)()'": the launch needed an
// address, which a template deduced from the arguments or an overload set does not have.
TEST(SimRun, TemplateKernelsDeducedFromTheArgumentsAndKernelsOverloadedWithHostFunctions) {
  const SimResult r = sim_run(program("deduced_kernels.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("deduced kernels: 0 values wrong (no error)"));
  const SimResult p = sim_run("--profile --json " + program("deduced_kernels.cu"));
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("\"name\": \"scale\""));
  EXPECT_THAT(p.out, HasSubstr("\"name\": \"maybe_negate\""));
}

// Before: compiled as C++20, the program's own lerp was ambiguous with std::lerp. nvcc's
// default is C++17, and so is sim run's; -std= is passed through.
TEST(SimRun, CompilesCpp17ByDefaultAndTakesStd) {
  SimResult r = sim_run(program("own_lerp.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("own lerp: 0 values wrong"));
  r = sim_run("-std=c++20 " + program("own_lerp.cu"));
  EXPECT_EQ(r.code, 2) << "C++20 brings std::lerp";
  EXPECT_THAT(r.err, HasSubstr("ambiguous"));
  EXPECT_EQ(sim_run("-std=c++98 " + program("own_lerp.cu")).code, 2);
}

TEST(SimRun, PlantedDeadlockAlwaysFails) {
  const SimResult r = sim_run(program("deadlock.cu"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("deadlock in kernel 'normalize' block ("));
  EXPECT_THAT(r.err, HasSubstr("): threads wait at different barriers: thread (0,0,0) at __syncthreads() at "));
  EXPECT_THAT(r.err, HasSubstr("deadlock.cu:15"));
  EXPECT_THAT(r.err, HasSubstr("deadlock.cu:17"));
  EXPECT_THAT(r.out, HasSubstr("normalize: unspecified launch failure")) << "the program sees the error, as on a GPU";
}

// Before: "thread (232,0,0) exited while 232 threads wait at __syncthreads()", and the shuffle's
// exited lanes a deadlock too; CUDA allows both. -v says where the program relies on it.
TEST(SimRun, ExitedThreadsAtBarriersAndShufflesAsCudaAllows) {
  SimResult r = sim_run(program("early_exit.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("normalize with early exits: 0 values wrong (no error)"));
  EXPECT_THAT(r.err, Not(HasSubstr("note:")));
  r = sim_run("-v " + program("early_exit.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("kernelab sim: note: kernel 'normalize': "));
}

// Before: lane 4's read of exited lane 20 silently gave lane 4 its own value (a sum 4x off in
// llm.c's matmul_backward_bias kernel 8 with no word why). Now warned at the shuffle.
TEST(SimRun, ShuffleReadingAnExitedLaneIsWarnedAsUndefined) {
  SimResult r = sim_run(program("shuffle_exited_source.cu"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("kernelab sim: warning: kernel 'warp_sum': __shfl_down_sync at "));
  EXPECT_THAT(r.err, HasSubstr("shuffle_exited_source.cu:13"));
  EXPECT_THAT(r.err, HasSubstr("(warp 0 lane 4) reads lane 20, which took no part"));
  r = sim_run(program("shuffle_exited_source.cu") + " -- padded");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("warp sum of 20 values (padded): 210, expected 210"));
  EXPECT_THAT(r.err, Not(HasSubstr("warning")));
}

// Before: every program saw one H100-like device, so a program sized for its GPU (llm.c's
// global_norm asserts grid < 1024 from the SM count) could not be tried as on a smaller one.
TEST(SimRun, GpuOptionGivesTheProgramThatGpusFiguresAndLimits) {
  SimResult r = sim_run(program("device_query.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kernelab SIMT simulator: 132 SMs (attribute 132), compute capability 9.0, 2048 threads/SM"));
  EXPECT_THAT(r.out, HasSubstr("150 KiB of dynamic shared memory: no error, launch no error"));
  r = sim_run("--gpu l4 " + program("device_query.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("NVIDIA L4: 58 SMs (attribute 58), compute capability 8.9, 1536 threads/SM"));
  EXPECT_THAT(r.out, HasSubstr("150 KiB of dynamic shared memory: invalid argument, launch invalid argument"));
  r = sim_run("--gpu no-such-gpu " + program("device_query.cu"));
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("no-such-gpu"));
}

// Before: each of these failed to link, to compile, or (code under __CUDA_ARCH__) was left out.
TEST(SimRun, TheToolkitSamplesCallsAndIdioms) {
  const SimResult r = sim_run(program("toolkit_calls.cu"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("WRONG")));
  EXPECT_THAT(r.out, HasSubstr("default argument, thread_group, grid_group, __CUDA_ARCH__ code: ok"));
  EXPECT_THAT(r.out, HasSubstr("device assert: device-side assert triggered"));
  EXPECT_THAT(r.err, HasSubstr("toolkit_calls.cu:37: void checked(const int*, int): block: [0,0,0], thread: [1,0,0] "
                               "Assertion `v[i] >= 0` failed."));
}

// Before: one source file only.
TEST(SimRun, ProgramInSeveralFiles) {
  SimResult r = sim_run(program("two_files_main.cc") + " " + program("two_files_kernels.cu"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("two files: 0 of 1000 wrong (no error)"));
  r = sim_run(program("device_query.cu") + " -- " + program("two_files_kernels.cu"));  // after --: an argument
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(SimRun, PlantedOutOfBoundsAccessesUnderMemcheck) {
  SimResult r = sim_run("--memcheck " + program("oob.cu") + " -- global");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("AddressSanitizer: heap-buffer-overflow"));
  EXPECT_THAT(r.err, HasSubstr("oob.cu:14"));
  EXPECT_THAT(r.err, HasSubstr("the access reported above was made in kernel 'scale' block (3,0,0) thread (232,0,0)"));
  r = sim_run("--memcheck " + program("oob.cu") + " -- shared");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("AddressSanitizer: global-buffer-overflow"));
  EXPECT_THAT(r.err, HasSubstr("global variable 'tile'"));
  EXPECT_THAT(r.err, HasSubstr("made in kernel 'stage' block (0,0,0) thread (64,0,0)"));
  r = sim_run("--memcheck " + program("oob.cu") + " -- freed");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("use after free: argument 1 of kernel 'scale' points into a 4000-byte cudaMalloc buffer"));
}

TEST(SimRun, PlantedUninitialisedSharedReadIsNanInEveryBlock) {
  for (const std::string mode : {"static", "dynamic"}) {
    const SimResult r = sim_run(program("uninit_shared.cu") + " -- " + mode);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("row sums in " + mode + " shared memory: 8 of 8 rows wrong (8 NaN)"));
  }
  const SimResult r = sim_run("--memcheck " + program("uninit_shared.cu") + " -- static");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("8 of 8 rows wrong (8 NaN)")) << "__shared__ is a plain static under --memcheck";
}

TEST(SimRun, OutOfBoundsWriteIsCaughtWithoutMemcheckToo) {
  const SimResult r = sim_run(program("oob.cu") + " -- global");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("out-of-bounds write: kernel 'scale' wrote past the end of the 4000-byte cudaMalloc buffer"));
}

struct TempProgram {
  explicit TempProgram(const std::string& text) {
    path = fs::temp_directory_path() / ("kernelab_sim_" + std::to_string(getpid()) + "_" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this) % 100000) + ".cu");
    std::ofstream(path) << text;
  }
  ~TempProgram() { fs::remove(path); }
  std::string arg() const { return fmt::format("'{}'", path.string()); }  // not operator+: GCC 12 warns falsely
  fs::path path;
};

TEST(SimRun, ExitCodeOutputAndArgumentsPassThrough) {
  const TempProgram p(
      "#include <cstdio>\n"
      "__global__ void k(int* x) { x[threadIdx.x] = threadIdx.x; }\n"
      "int main(int argc, char** argv) {\n"
      "  int* x; cudaMalloc(&x, 32 * sizeof(int)); k<<<1, 32>>>(x);\n"
      "  int h[32]; cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);\n"
      "  printf(\"argc=%d last=%s h31=%d\\n\", argc, argv[argc - 1], h[31]);\n"
      "  fprintf(stderr, \"to stderr\\n\");\n"
      "  return 7;\n"
      "}\n");
  const SimResult r = sim_run(p.arg() + " -- --flag 'two words'");
  EXPECT_EQ(r.code, 7);
  EXPECT_THAT(r.out, HasSubstr("argc=3 last=two words h31=31"));
  EXPECT_THAT(r.err, HasSubstr("to stderr"));
}

TEST(SimRun, KernelsAndLaunchesInTheProgramsOwnHeaders) {
  const fs::path dir = fs::temp_directory_path() / ("kernelab_sim_headers_" + std::to_string(getpid()));
  fs::create_directories(dir / "include");
  std::ofstream(dir / "include" / "kernels.cuh") << "#pragma once\n"
                                                  "__global__ void twice(int* x) {\n"
                                                  "  extern __shared__ int s[];\n"
                                                  "  s[threadIdx.x] = 2 * int(threadIdx.x);\n"
                                                  "  __syncthreads();\n"
                                                  "  x[threadIdx.x] = s[threadIdx.x];\n"
                                                  "}\n"
                                                  "inline void run(int* x) { twice<<<1, 64, 64 * sizeof(int)>>>(x); }\n";
  std::ofstream(dir / "main.cu") << "#include <cstdio>\n#include \"kernels.cuh\"\n"
                                    "int main() { int* x; cudaMallocManaged(&x, 256); run(x); cudaDeviceSynchronize();\n"
                                    "  printf(\"x[63]=%d\\n\", x[63]); }\n";
  const SimResult r = sim_run("-I '" + (dir / "include").string() + "' '" + (dir / "main.cu").string() + "'");
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("x[63]=126"));
}

TEST(SimRun, CompileErrorsPointAtTheUsersLineAndExit2) {
  const TempProgram p("#include <cstdio>\n__global__ void k() {}\nint main() { undeclared_thing(); k<<<1, 1>>>(); }\n");
  const SimResult r = sim_run(p.arg());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(p.path.filename().string() + ":3:"));
  EXPECT_THAT(r.err, HasSubstr("undeclared_thing"));
  EXPECT_THAT(r.err, HasSubstr("does not compile for the simulator"));
}

// Before: cublasCreate_v2 and the rest were undefined; now computed on the CPU.
TEST(SimRun, CublasAndCublasLtWithABiasEpilogue) {
  const SimResult r = sim_run(program("cublas_matmul.cu"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cublas matmul: 0 values wrong"));
}

// cuBLASLt's fp8 GEMM with VEC128_32F and BLK128x128_32F scales on either operand and D in either
// order: the simulator reads the scale layouts PyTorch passes cuBLASLt (k / 128 = 3: W's rows padded).
TEST(SimRun, CublasLtFp8BlockScalesInEveryFormulationOfTheGemmFp8Peer) {
  const SimResult r = sim_run(program("cublaslt_fp8_block.cu"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("F1 activations as A, D row-major: 0 of 16384 values wrong"));
  EXPECT_THAT(r.out, HasSubstr("F2 activations as A, D column-major: 0 of 16384 values wrong"));
  EXPECT_THAT(r.out, HasSubstr("F3 weights as A: 0 of 16384 values wrong"));
}

// Before: a cuBLAS call the simulator lacks (cublasDgemm_v2) failed the link; now it answers
// CUBLAS_STATUS_NOT_SUPPORTED and is named once. Entry points that return no status stay named at link.
TEST(SimRun, UncomputedCublasCallsAnswerNotSupportedAndAreNamedOnce) {
  const SimResult r = sim_run(program("cublas_unsupported.cu"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("cublasDgemm: 15 and 15 (CUBLAS_STATUS_NOT_SUPPORTED is 15)"));
  EXPECT_THAT(r.out, HasSubstr("version known, pointer mode device, cublasSgemm status 0, 0 of 9 wrong"));
  const std::string said = "kernelab sim: cuBLAS: cublasDgemm_v2 is not supported (CUBLAS_STATUS_NOT_SUPPORTED)";
  ASSERT_THAT(r.err, HasSubstr(said));
  EXPECT_EQ(r.err.find(said), r.err.rfind(said)) << "said more than once: " << r.err;
  const TempProgram p("#include <cublas_v2.h>\nint main() { return int(cublasGetCudartVersion()); }\n");
  const SimResult d = sim_run(p.arg());
  EXPECT_EQ(d.code, 2);
  EXPECT_THAT(d.err, HasSubstr("the simulator does not implement cublasGetCudartVersion"));
}

// nvcc's -Xcompiler passes host-compiler flags (OpenMP here) to the compile and the link.
TEST(SimRun, XcompilerFlagsReachTheHostCompiler) {
  const TempProgram p("#include <omp.h>\n#include <cstdio>\nint main() { int n = 0;\n"
                      "#pragma omp parallel reduction(+ : n)\n  n += 1;\n"
                      "  std::printf(\"threads %d\\n\", n == omp_get_max_threads() ? 1 : 0); }\n");
  const SimResult r = sim_run("-Xcompiler -fopenmp " + p.arg());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("threads 1"));
}

TEST(SimRun, UnsimulatedRuntimeCallsAreNamed) {
  const TempProgram p("int main() { cudaPitchedPtr p; return cudaMalloc3D(&p, make_cudaExtent(16, 16, 16)); }\n");
  const SimResult r = sim_run(p.arg());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("the simulator does not implement cudaMalloc3D"));
}

TEST(SimBench, ReportsCostsPerThreadBarrierAndShuffle) {
  const fs::path out = fs::temp_directory_path() / ("kernelab_sim_bench_" + std::to_string(getpid()));
  const int status = std::system(("'" KERNELAB_BINARY "' sim bench --json --threads 2 >'" + out.string() + "'").c_str());
  const std::string json = slurp(out);
  fs::remove(out);
  ASSERT_EQ(status, 0);
  for (const char* key : {"\"ns_per_thread\"", "\"ns_per_thread_barrier\"", "\"ns_per_block_barrier\"", "\"ns_per_thread_shuffle\""})
    EXPECT_THAT(json, HasSubstr(key));
  EXPECT_THAT(json, HasSubstr("\"os_threads\": 2"));
}

TEST(SimRun, BadInputExits2) {
  EXPECT_EQ(sim_run("/no/such/file.cu").code, 2);
  const TempProgram p("int main() { k<<<1, 2, 3, 4, 5>>>(); }\n");
  const SimResult r = sim_run(p.arg());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(":1: a launch takes 2 to 4 values inside <<< >>>"));
}

}  // namespace
#endif
