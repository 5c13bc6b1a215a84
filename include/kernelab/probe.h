// The host CPU's measured ceilings: STREAM-style triad bandwidth and fp32 FMA peak on one
// thread and on all. Stored once per machine and read back by the benchmarks.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kl {

struct HostCeilings {
  std::string cpu;             // model name
  int threads = 0;             // OpenMP threads used
  double triad_bytes_per_s = 0;  // STREAM triad a = b + s*c, 3 arrays of doubles counted (no write-allocate)
  double triad_array_bytes = 0;  // bytes of each array
  double fma_flops_1t = 0;     // fp32 FMA FLOP/s, one thread
  double fma_flops_all = 0;    // fp32 FMA FLOP/s, all threads
  std::string measured_at;     // UTC time
  std::string path;            // where it is stored
};

HostCeilings probe_host();                  // measures now (a few seconds)
HostCeilings load_or_probe_host(bool quiet);  // the stored result for this CPU, else probes and stores
std::string host_cpu_name();
std::string host_ceilings_path();
nlohmann::json host_ceilings_json(const HostCeilings& h);

}  // namespace kl
