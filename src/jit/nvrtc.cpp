// NVRTC compile and the disk cache of `kernelab fuse` (nvrtc.h).
#include "jit/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#if KERNELAB_HAVE_NVRTC
#include <cuda.h>  // CUDA_VERSION: the NVRTC of the toolkit's major version
#include <nvrtc.h>

#include <type_traits>
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
namespace {
// NVRTC opened at its first use: a machine without the library still runs kernelab (fuse falls back
// to the unfused chain, saying why), and no other command loads its 109 MB, whose relocations were
// most of a bare command's start-up here.
struct Nvrtc {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  std::string missing;  // why it is not usable; empty when it is
};

const Nvrtc& nvrtc() {
  static const Nvrtc n = [] {
    Nvrtc x;
    const std::string name = "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      x.missing = "cannot open " + name + ": " + dlerror();
      return x;
    }
    const auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn && x.missing.empty()) x.missing = name + " has no " + symbol;
    };
    load(x.version, "nvrtcVersion"), load(x.create, "nvrtcCreateProgram"), load(x.compile, "nvrtcCompileProgram");
    load(x.log_size, "nvrtcGetProgramLogSize"), load(x.log, "nvrtcGetProgramLog"), load(x.ptx_size, "nvrtcGetPTXSize");
    load(x.ptx, "nvrtcGetPTX"), load(x.destroy, "nvrtcDestroyProgram"), load(x.error_string, "nvrtcGetErrorString");
    return x;
  }();
  return n;
}
}  // namespace

JitResult jit_compile(const std::string& source, const std::string& arch) {
  JitResult r;
  if (const char* f = std::getenv("KERNELAB_JIT_FAIL"); f && std::string(f) == "1") {
    r.error = "KERNELAB_JIT_FAIL=1 is set (a planted NVRTC failure)";
    return r;
  }
  const Nvrtc& api = nvrtc();
  if (!api.missing.empty()) {
    r.error = api.missing;
    return r;
  }
  int major = 0, minor = 0;
  if (api.version(&major, &minor) != NVRTC_SUCCESS) {
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
    if (api.create(&prog, source.c_str(), "kernelab_fused.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
      r.error = "nvrtcCreateProgram failed";
      return r;
    }
    std::vector<const char*> opts;
    for (const std::string& o : options) opts.push_back(o.c_str());
    const nvrtcResult res = api.compile(prog, int(opts.size()), opts.data());
    if (res != NVRTC_SUCCESS) {
      std::size_t n = 0;
      api.log_size(prog, &n);
      std::string log(n, '\0');
      api.log(prog, log.data());
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
      r.error = std::string("NVRTC: ") + api.error_string(res) + (log.empty() ? "" : ": " + log);
      api.destroy(&prog);
      return r;
    }
    std::size_t n = 0;
    api.ptx_size(prog, &n);
    std::string ptx(n, '\0');
    api.ptx(prog, ptx.data());
    api.destroy(&prog);
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
JitResult jit_compile(const std::string&, const std::string&) {
  JitResult r;
  r.error = "this kernelab was built without NVRTC";
  return r;
}
#endif

}  // namespace kl::jit
