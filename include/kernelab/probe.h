// The host CPU's measured ceilings: STREAM-style triad bandwidth and fp32 FMA peak on one
// thread and on all. Stored once per machine and read back by the benchmarks.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kl {

// The host's vector ISA as kernelab's CPU rungs meet it: the level they run ("generic", "avx2",
// "avx512": chosen at run time, src/ops/cpu_isa.h) and its extensions, the best level the CPU
// runs, and transparent huge pages' mode (/sys/kernel/mm/transparent_hugepage/enabled: "always",
// "madvise", "never", or "unknown").
struct HostIsa {
  std::string used, extensions, cpu, huge_pages;
};
HostIsa host_isa();

struct HostCeilings {
  std::string cpu;             // model name
  HostIsa isa;                 // the level and CPU the ceilings were measured with (the FMA peak depends on the level)
  int threads = 0;             // OpenMP threads used
  double triad_bytes_per_s = 0;  // STREAM triad a = b + s*c, 3 arrays of doubles counted (no write-allocate)
  double triad_array_bytes = 0;  // bytes of each array
  double fma_flops_1t = 0;     // fp32 FMA FLOP/s, one thread
  double fma_flops_all = 0;    // fp32 FMA FLOP/s, all threads
  std::string measured_at;     // UTC time
  std::string path;            // where it is stored
};

// A GPU's ceilings (device 0), measured by `kernelab probe --gpu` where a GPU is present:
// device-to-device copy bandwidth and cuBLASLt GEMM rates per input type, each a median of timed
// runs. Stored once per machine, as the host's are, and read back by the CUDA device's ceilings.
struct GpuGemmRate {
  std::string dtype;  // fp32, tf32, bf16, fp8e4m3 (dtype_name's names, and tf32)
  int n = 0;          // an n x n x n GEMM
  double flops_per_s = 0;
};
struct GpuCeilings {
  std::string gpu;
  double copy_bytes_per_s = 0;  // cudaMemcpyAsync device to device, read + write counted
  double copy_buffer_bytes = 0;
  std::vector<GpuGemmRate> gemm;
  std::vector<std::string> skipped;  // rates not measured, each with why (fp8 before sm_89)
  std::string measured_at;
};

HostCeilings probe_host();                  // measures now (a few seconds)
HostCeilings load_or_probe_host(bool quiet);  // the stored result for this CPU, else probes and stores
std::string host_cpu_name();
std::string utc_now();  // "2026-12-02T15:24:59Z", the time stamp of measurements and reports
std::string host_ceilings_path();
nlohmann::json host_ceilings_json(const HostCeilings& h);
// Measures device 0 and stores the result; RuntimeFailure saying why where there is no GPU or no
// CUDA backend.
GpuCeilings probe_gpu();
nlohmann::json gpu_ceilings_json(const GpuCeilings& g);
std::string gpu_ceilings_path();  // gpu-ceilings.json beside host_ceilings_path()
void store_gpu_ceilings(const GpuCeilings& g);
// The stored probe of the GPU named `gpu` ("NVIDIA H200"); nullopt if none (or another GPU's).
std::optional<GpuCeilings> load_gpu_ceilings(const std::string& gpu);

}  // namespace kl
