// NVRTC compile and the disk cache of `kernelab fuse` (nvrtc.h).
#include "jit/nvrtc.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#if KERNELAB_HAVE_NVRTC
#include <nvrtc.h>
#endif

#include "kernelab/cache_dir.h"

namespace fs = std::filesystem;

namespace kl::jit {
namespace {

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void store(const fs::path& p, const std::string& text) {  // written whole, then renamed: concurrent runs may race
  const fs::path tmp = p.string() + "." + std::to_string(getpid());
  std::ofstream(tmp, std::ios::binary) << text;
  std::error_code ec;
  fs::rename(tmp, p, ec);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string jit_cache_dir() { return cache_dir("KERNELAB_JIT_CACHE", "jit"); }

#if KERNELAB_HAVE_NVRTC
bool have_nvrtc() { return true; }

JitResult jit_compile(const std::string& source, const std::string& arch) {
  JitResult r;
  if (const char* f = std::getenv("KERNELAB_JIT_FAIL"); f && std::string(f) == "1") {
    r.error = "KERNELAB_JIT_FAIL=1 is set (a planted NVRTC failure)";
    return r;
  }
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    r.error = "nvrtcVersion failed";
    return r;
  }
  r.nvrtc_version = std::to_string(major) + "." + std::to_string(minor);
  // PTX for the virtual arch of sm_XX (compute_XX): what a driver JIT-compiles at load.
  const std::string virt = "compute_" + arch.substr(3);
  std::vector<std::string> options = {"--gpu-architecture=" + virt, "--std=c++17", "-I" KERNELAB_JIT_CUDA_INCLUDE};
  for (const std::string& o : options) r.options += (r.options.empty() ? "" : " ") + o;
  const fs::path dir = jit_cache_dir();
  auto entry = [&] {  // the cache's path for this source, arch, NVRTC and options
    char key[17];
    std::snprintf(key, sizeof key, "%016llx",
                  static_cast<unsigned long long>(fnv1a(source + '\0' + arch + '\0' + r.nvrtc_version + '\0' + r.options)));
    return dir / key;
  };
  const fs::path ptx_path = entry().string() + ".ptx", meta_path = entry().string() + ".cold_s";
  r.cache_file = ptx_path.string();
  std::error_code ec;
  if (!(fs::exists(ptx_path, ec) && fs::exists(meta_path, ec))) {
    const auto t0 = std::chrono::steady_clock::now();
    nvrtcProgram prog = nullptr;
    if (nvrtcCreateProgram(&prog, source.c_str(), "kernelab_fused.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
      r.error = "nvrtcCreateProgram failed";
      return r;
    }
    std::vector<const char*> opts;
    for (const std::string& o : options) opts.push_back(o.c_str());
    const nvrtcResult res = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
    if (res != NVRTC_SUCCESS) {
      std::size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
      r.error = std::string("NVRTC: ") + nvrtcGetErrorString(res) + (log.empty() ? "" : ": " + log);
      nvrtcDestroyProgram(&prog);
      return r;
    }
    std::size_t n = 0;
    nvrtcGetPTXSize(prog, &n);
    std::string ptx(n, '\0');
    nvrtcGetPTX(prog, ptx.data());
    nvrtcDestroyProgram(&prog);
    while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    r.compile_s_cold = seconds_since(t0);
    store(ptx_path, ptx);
    store(meta_path, std::to_string(r.compile_s_cold) + "\n");
  } else {
    r.cache_hit = true;
    r.compile_s_cold = std::atof(slurp(meta_path).c_str());
  }
  // The warm path, measured: what a second compile of the same source takes (key, lookup, read).
  const auto t1 = std::chrono::steady_clock::now();
  const fs::path warm = entry().string() + ".ptx";
  if (fs::exists(warm, ec)) r.ptx = slurp(warm);
  r.compile_s_warm = seconds_since(t1);
  if (r.ptx.empty()) {
    r.error = "the cache entry " + ptx_path.string() + " is empty";
    return r;
  }
  r.ok = true;
  return r;
}
#else
bool have_nvrtc() { return false; }

JitResult jit_compile(const std::string&, const std::string&) {
  JitResult r;
  r.error = "this kernelab was built without NVRTC";
  return r;
}
#endif

}  // namespace kl::jit
