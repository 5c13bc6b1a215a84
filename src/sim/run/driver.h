// `kernelab sim run`: a CUDA program, rewritten (rewrite.h), compiled by the host compiler
// against the simulator's header and runtime, cached by content, and run with its output,
// arguments and exit code passed through.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/profile.h"

namespace kl::sim {

struct RunRequest {
  std::string file;                       // the .cu program (its main file: messages name it)
  std::vector<std::string> more_sources;  // its other .cu/.cpp files, compiled and linked with it
  std::vector<std::string> args;          // its argv after the program name
  std::vector<std::string> defines;       // -D NAME[=VALUE]
  std::vector<std::string> include_dirs;  // -I DIR
  std::vector<std::string> host_flags;    // -Xcompiler: for the host compiler, when compiling and linking
  std::string std = "c++17";              // the language dialect, nvcc's default unless -std= says otherwise
  std::string device;                     // KERNELAB_SIM_DEVICE: the GPU the program sees (empty: H100-like)
  int cuda_arch = 900;                    // __CUDA_ARCH__ for the program: the GPU's compute capability
  bool race_check = false;  // every launch forward and reverse; a difference fails the run
  bool memcheck = false;    // AddressSanitizer build, blocks one at a time; a bad access fails the run
  bool profile = false;     // instrumented build; every launch counted (sim/profile.h)
  std::uint64_t profile_l2_bytes = 0;  // the modelled L2 for the DRAM bytes (0: none)
  std::uint64_t profile_blocks = 0;    // count only the first N blocks of each launch (0: all)
  bool program_stdout_to_stderr = false;  // keep our stdout for a JSON report
  bool debug_info = true;   // -g, for gdb and AddressSanitizer's line numbers (a third of a compile)
  bool verbose = false;     // print the compile command and whether the cache served it
  bool no_cache = false;
};

struct Build {
  std::string binary;
  bool cached = false;
  double seconds = 0;  // compile time, 0 when cached
};

// Throws kl::BadInput (after printing the compiler's messages) when the program does not compile.
Build build_program(const RunRequest& request);

// Builds and runs; returns the program's exit code, 128+N when signal N killed it, or 1 when
// it exited 0 but the simulator found a deadlock, race or bad access.
// With request.profile, `profile` receives every launch's counts (empty if the program did not
// exit normally, which the message on stderr then says).
int run_program(const RunRequest& request, std::vector<LaunchProfile>* profile = nullptr);

// `--rung FILE.cu`: a rung file written as the built-in ones are (kernels, a launcher and a
// KL_RUNGS block, src/ops/*/cuda/*.cu), built as a shared object for this kernelab to load (it
// exports the simulator's runtime and the op contract's symbols): for the simulator, for its
// profiling build (`sim profile`), or by nvcc for the GPU (sm_80 and sm_90a, the CUDA runtime
// shared with kernelab's). Its kl::sim_ops::rung_user() (kl::sim_profile::, kl::cuda::) gives the
// variants. Cached by content, the included headers, the flags and this kernelab binary. Returns
// the library's path; BadInput (after the compiler's messages) when the file does not compile, or
// when this build has no nvcc for the GPU build.
enum class RungBuild { sim, sim_profile, cuda };
std::string build_rung_library(const std::string& file, RungBuild kind);

// KERNELAB_SIM_CACHE, else $XDG_CACHE_HOME/kernelab/sim, else ~/.cache/kernelab/sim.
std::string cache_dir();

}  // namespace kl::sim
