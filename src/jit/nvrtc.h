// `kernelab fuse --arch sm_XX`: the fused source compiled to PTX with NVRTC (a library: no GPU
// needed), cached on disk. The cache key is the source, the arch, NVRTC's version and the
// options; a hit still reports the cold compile's time, stored beside the PTX when it was made.
#pragma once
#include <string>

namespace kl::jit {

struct JitResult {
  bool ok = false;
  std::string error;         // why not, when !ok (NVRTC's log or the reason)
  std::string ptx;
  std::string nvrtc_version; // "13.0"
  std::string options;       // as passed to NVRTC, space separated
  double compile_s_cold = 0; // NVRTC's compile of this source (now, or when the cache entry was made)
  double compile_s_warm = 0; // a lookup served from the cache, measured now
  bool cache_hit = false;    // the cold compile was not run in this call
  std::string cache_file;    // the PTX's path in the cache
};

// KERNELAB_JIT_CACHE, else $XDG_CACHE_HOME/kernelab/jit, else ~/.cache/kernelab/jit.
std::string jit_cache_dir();

// `arch` is sm_XX[a] (compiled for compute_XX[a]). Never throws for a compile failure: !ok and
// the reason. KERNELAB_JIT_FAIL=1 makes it fail on purpose (for tests of the fallback).
JitResult jit_compile(const std::string& source, const std::string& arch);

}  // namespace kl::jit
