#include "sim/device/sim_profile.h"

#include <algorithm>
#include <chrono>

#include "kernelab/error.h"

namespace kl {

ModelledTime modelled_time(const sim::ProfileCounts& c, double k, const GpuSpec& g) {
  const double clock = g.boost_clock_mhz.value * 1e6, sms = g.sm_count.value;
  const double wavefronts = double(c.shared_ld_wavefronts + c.shared_st_wavefronts + c.ldsm_wavefronts);
  struct Unit {
    const char* name;
    double seconds;
  };
  const Unit units[] = {
      {"DRAM", k * double(c.dram_read_bytes + c.dram_write_bytes) / g.memory_bandwidth.value},
      {"L1", k * double(c.global_lines) / (sms * clock)},  // one 128-byte line per clock per SM
      {"shared memory", k * wavefronts / (sms * clock)},  // one wavefront (32 banks x 4 bytes) per clock per SM
      {"tensor cores", k * double(c.tensor_flops) / g.peak.at("fp16").value},
  };
  const Unit& top = *std::max_element(std::begin(units), std::end(units),
                                      [](const Unit& a, const Unit& b) { return a.seconds < b.seconds; });
  return ModelledTime{top.seconds, top.name,
                      g.name + ": DRAM " + g.memory_bandwidth.source + ", " + std::to_string(int(sms)) + " SMs at " +
                          std::to_string(int(g.boost_clock_mhz.value)) + " MHz (" + g.boost_clock_mhz.source +
                          "), L1 one 128-byte line and shared memory one wavefront (32 banks x 4 B) per clock per SM, fp16 tensor peak"};
}

RungProfile profile_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& dev,
                            const sim::ProfileOptions& options, const GpuSpec& gpu) {
  if (!c.sim_profile_run) runtime_failure(v.name + " has no profiling build (a CPU variant, or a build without the simulator)");
  // The same check as any run, with the profiling build's launcher and kernel addresses.
  Config profiled = c;
  profiled.sim_run = c.sim_profile_run;
  for (KernelGroup& g : profiled.kernels)
    for (KernelRef& r : g.kernels) r.sim = r.sim_profile;
  sim::profile_begin(options);
  const auto start = std::chrono::steady_clock::now();
  CheckResult check;
  try {
    check = check_variant(op, v, profiled, prep, dev);
  } catch (...) {
    sim::profile_end();
    throw;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<sim::LaunchProfile> launches = sim::profile_end();
  if (check.launched.size() == launches.size())
    for (size_t i = 0; i < launches.size(); ++i) launches[i].name = check.launched[i];
  RungProfile r;
  r.variant = v.name, r.config = c.name;
  r.kernels = sim::profile_by_kernel(launches);
  std::uint64_t total = 0, run = 0;
  for (const sim::KernelProfile& k : r.kernels) r.total.add(k.counts), total += k.blocks_total, run += k.blocks_run;
  r.scale = run ? double(total) / double(run) : 1.0;
  r.min_bytes = op.cost(prep.problem).bytes;
  r.time = modelled_time(r.total, r.scale, gpu);
  r.check = std::move(check);
  r.seconds = seconds;
  if (r.sampled()) r.check.passed = false, r.check.failure = "not checked: the grid was sampled";
  return r;
}

}  // namespace kl
