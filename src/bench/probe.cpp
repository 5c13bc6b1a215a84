#include "kernelab/probe.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernelab/error.h"
#include "kernelab/tensor.h"
#include "bench/probe_cpu.h"

namespace kl {

namespace {
using clk = std::chrono::steady_clock;

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

typedef double v2d __attribute__((vector_size(16)));

// STREAM triad over arrays well past the last-level cache; best of several repetitions, each
// timing the loop as the compiler vectorised it and the same loop in 16-byte vectors: on a Zen 4
// VM the native build's 64-byte stores moved 50 GB/s where 16-byte ones moved 63, and the ceiling
// is what the memory can do. The arrays are allocated as tensors are, so the ceiling and the ops
// see the same page policy.
double measure_triad(size_t n, int reps) {
  Tensor ta = Tensor::host(DType::f64, {static_cast<int64_t>(n)}), tb = Tensor::host(DType::f64, {static_cast<int64_t>(n)}),
         tc = Tensor::host(DType::f64, {static_cast<int64_t>(n)});
  double *a = ta.as<double>(), *b = tb.as<double>(), *c = tc.as<double>();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {  // first touch by the thread that will use the page
    a[i] = 0;
    b[i] = 1.0 + static_cast<double>(i % 7);
    c[i] = 2.0;
  }
  const double s = 3.0;
  double best = 1e30;
  const size_t pairs = n / 2;  // n is even; the arrays are 64-byte aligned
  v2d *a2 = reinterpret_cast<v2d*>(a);
  const v2d *b2 = reinterpret_cast<const v2d*>(b), *c2 = reinterpret_cast<const v2d*>(c);
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    best = std::min(best, seconds_since(t0));
    t0 = clk::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < pairs; ++i) a2[i] = b2[i] + s * c2[i];
    best = std::min(best, seconds_since(t0));
  }
  if (a[n / 2] != b[n / 2] + s * c[n / 2]) runtime_failure("probe: triad computed a wrong value");
  return 3.0 * static_cast<double>(n) * sizeof(double) / best;
}

// The FMA loop of the level the CPU rungs run (src/bench/probe_cpu.cpp).
float fma_loop(long iters) {
  switch (cpu::isa()) {
    case cpu::Isa::avx512: return isa_avx512::probe_fma_loop(iters);
    case cpu::Isa::avx2: return isa_avx2::probe_fma_loop(iters);
    case cpu::Isa::generic: break;
  }
  return isa_generic::probe_fma_loop(iters);
}

// Best of three: every thread runs the FMA loop between two barriers; the span is timed, so
// thread start-up is outside it and the clock has ramped up after the first repetition.
double measure_fma(int threads) {
  const long iters = 50'000'000;
  double best = 1e30;
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  for (int r = 0; r < 4; ++r) {
    clk::time_point t0;
#pragma omp barrier
#pragma omp master
    t0 = clk::now();
    sink += fma_loop(iters);
#pragma omp barrier
#pragma omp master
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  if (!(sink == sink)) runtime_failure("probe: the FMA loop produced NaN");
  return 2.0 * 10 * 16 * static_cast<double>(iters) * threads / best;
}

}  // namespace

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Stored ceilings from another version of the probe are measured again: 2 is the FMA loop at each
// level's own width (version 1's avx2 loop spilled and measured a ninth of the peak).
constexpr int kProbeVersion = 2;

nlohmann::json host_ceilings_json(const HostCeilings& h) {
  return {{"probe_version", kProbeVersion},
          {"cpu", h.cpu},
          {"isa_used", h.isa.used},
          {"isa_extensions", h.isa.extensions},
          {"isa_cpu", h.isa.cpu},
          {"huge_pages", h.isa.huge_pages},
          {"threads", h.threads},
          {"triad_bytes_per_s", h.triad_bytes_per_s},
          {"triad_array_bytes", h.triad_array_bytes},
          {"fma_flops_1t", h.fma_flops_1t},
          {"fma_flops_all", h.fma_flops_all},
          {"measured_at", h.measured_at},
          {"path", h.path}};
}

nlohmann::json gpu_ceilings_json(const GpuCeilings& g) {
  nlohmann::json gemm = nlohmann::json::object();
  for (const GpuGemmRate& r : g.gemm) gemm[r.dtype] = {{"n", r.n}, {"flops_per_s", r.flops_per_s}};
  return {{"gpu", g.gpu},           {"copy_bytes_per_s", g.copy_bytes_per_s}, {"copy_buffer_bytes", g.copy_buffer_bytes},
          {"gemm", gemm},           {"skipped", g.skipped},                   {"measured_at", g.measured_at},
          {"method", "copy: cudaMemcpyAsync device to device, read + write counted; gemm: cuBLASLt TN, fp32 accumulate, "
                     "operands uniform in [-1, 1), median of 10 runs each"}};
}

std::string gpu_ceilings_path() {
  return (std::filesystem::path(host_ceilings_path()).parent_path() / "gpu-ceilings.json").string();
}

void store_gpu_ceilings(const GpuCeilings& g) {
  const std::string path = gpu_ceilings_path();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path);
  f << gpu_ceilings_json(g).dump(2) << "\n";
  if (!f) runtime_failure("probe: cannot write " + path);
}

std::optional<GpuCeilings> load_gpu_ceilings(const std::string& gpu) {
  std::ifstream f(gpu_ceilings_path());
  if (!f) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    GpuCeilings g;
    g.gpu = j.at("gpu");
    if (g.gpu != gpu) return std::nullopt;
    g.copy_bytes_per_s = j.at("copy_bytes_per_s");
    g.copy_buffer_bytes = j.at("copy_buffer_bytes");
    for (const auto& [dtype, r] : j.at("gemm").items())
      g.gemm.push_back({dtype, r.at("n").get<int>(), r.at("flops_per_s").get<double>()});
    g.skipped = j.at("skipped").get<std::vector<std::string>>();
    g.measured_at = j.at("measured_at");
    return g;
  } catch (const std::exception&) {
    return std::nullopt;  // a stale or damaged file counts as no measurement
  }
}

#ifndef KERNELAB_HAVE_CUDA
GpuCeilings probe_gpu() { runtime_failure("probe: this build has no CUDA backend (no CUDA compiler was found at configure time)"); }
#endif

HostIsa host_isa() {
  HostIsa i;
  i.used = cpu::isa_name(cpu::isa());
  i.extensions = cpu::isa_extensions(cpu::isa());
  i.cpu = cpu::isa_name(cpu::isa_supported());
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");  // "always [madvise] never": the chosen one bracketed
  std::string word;
  i.huge_pages = "unknown";
  while (f >> word)
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') i.huge_pages = word.substr(1, word.size() - 2);
  return i;
}

// The model string, and the family and model numbers: a VM may name every EPYC generation "AMD EPYC".
std::string host_cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, family, model;
  auto value = [&] { return line.substr(std::min(line.find(':') + 2, line.size())); };
  while (std::getline(f, line) && !line.empty()) {  // the first processor's block
    if (line.find(':') == std::string::npos) continue;
    if (line.rfind("model name", 0) == 0) name = value();
    else if (line.rfind("cpu family", 0) == 0) family = value();
    else if (line.rfind("model", 0) == 0) model = value();
  }
  if (name.empty()) return "unknown CPU";
  return family.empty() || model.empty() ? name : name + " (family " + family + ", model " + model + ")";
}

std::string host_ceilings_path() {
  if (const char* p = std::getenv("KERNELAB_PROBE_FILE")) return p;
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dir = cache ? std::string(cache) : (home ? std::string(home) + "/.cache" : "/tmp");
  return dir + "/kernelab/host-ceilings-" + host_isa().used + ".json";  // one per level: their FMA peaks differ
}

HostCeilings probe_host() {
  HostCeilings h;
  h.cpu = host_cpu_name();
  h.isa = host_isa();
  h.threads = omp_get_max_threads();
  const size_t n = size_t{64} << 20;  // 512 MiB per array: past any last-level cache here
  h.triad_array_bytes = static_cast<double>(n * sizeof(double));
  h.triad_bytes_per_s = measure_triad(n, 5);
  h.fma_flops_1t = measure_fma(1);
  h.fma_flops_all = measure_fma(h.threads);
  h.measured_at = utc_now();
  h.path = host_ceilings_path();
  std::filesystem::create_directories(std::filesystem::path(h.path).parent_path());
  std::ofstream(h.path) << host_ceilings_json(h).dump(2) << "\n";
  return h;
}

HostCeilings load_or_probe_host(bool quiet) {
  const std::string path = host_ceilings_path();
  std::ifstream f(path);
  if (f) {
    try {
      nlohmann::json j = nlohmann::json::parse(f);
      HostCeilings h;
      h.cpu = j.at("cpu");
      h.isa = {j.value("isa_used", ""), j.value("isa_extensions", ""), j.value("isa_cpu", ""), j.value("huge_pages", "")};
      h.threads = j.at("threads");
      h.triad_bytes_per_s = j.at("triad_bytes_per_s");
      h.triad_array_bytes = j.at("triad_array_bytes");
      h.fma_flops_1t = j.at("fma_flops_1t");
      h.fma_flops_all = j.at("fma_flops_all");
      h.measured_at = j.at("measured_at");
      h.path = path;
      // Another level's FMA peak (AVX-512 against SSE2: 4x) is not this one's: measured again then.
      if (j.value("probe_version", 1) == kProbeVersion && h.cpu == host_cpu_name() && h.isa.used == host_isa().used &&
          h.threads == omp_get_max_threads() && h.triad_bytes_per_s > 0)
        return h;
    } catch (const std::exception&) {
      // A stale or damaged file: measure again below.
    }
  }
  if (!quiet) std::fprintf(stderr, "kernelab: no stored ceilings for this CPU; running probe (a few seconds)\n");
  return probe_host();
}

}  // namespace kl
