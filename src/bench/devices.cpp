#include "bench/devices.h"

#include <fmt/format.h>

#include "kernelab/error.h"
#include "kernelab/probe.h"

namespace kl {

#ifndef KERNELAB_HAVE_CUDA
std::unique_ptr<Device> make_cuda_device(std::string& why) {
  why = "this build has no CUDA backend (no CUDA compiler was found at configure time)";
  return nullptr;
}
#endif

#ifndef KERNELAB_HAVE_SIM_OPS
std::unique_ptr<Device> make_sim_device(std::string& why) {
  why = "this build has no simulator (it needs the CUDA toolkit's headers and Boost.Context)";
  return nullptr;
}
#endif

DeviceSet open_devices(const std::vector<Backend>& wanted) {
  DeviceSet set;
  for (Backend b : wanted) {
    std::string why;
    std::unique_ptr<Device> d;
    switch (b) {
      case Backend::cpu: d = make_cpu_device(); break;
      case Backend::cuda: d = make_cuda_device(why); break;
      case Backend::sim: d = make_sim_device(why); break;
    }
    if (d) set.present.push_back(std::move(d));
    else set.absent.push_back(fmt::format("{}: {}", backend_name(b), why));
  }
  return set;
}

Figure cuda_peak_flops(const std::string& gpu, DType t) {
  const std::string dtype(dtype_name(t));
  if (auto probed = load_gpu_ceilings(gpu))
    for (const GpuGemmRate& r : probed->gemm)
      if (r.dtype == dtype)
        return {r.flops_per_s, fmt::format("measured by kernelab probe --gpu on {}: cuBLASLt {} GEMM {}^3 ({})",
                                           probed->measured_at, dtype, r.n, gpu_ceilings_path())};
  const GpuSpec* spec = find_gpu_by_device_name(gpu);
  if (!spec)
    return {0, fmt::format("no FLOP ceiling: '{}' is not in the hardware database (src/hw/gpus.json) and kernelab "
                           "probe --gpu has not measured it",
                           gpu)};
  try {
    const Figure f = gpu_peak(*spec, dtype, false);
    return {f.value, fmt::format("datasheet: {} {} dense, {}", spec->id, dtype, f.source)};
  } catch (const BadInput& e) {  // a dtype the part lacks (fp8 before Ada) or no datasheet lists
    return {0, fmt::format("no FLOP ceiling: {}", e.what())};
  }
}

Device* find_device(DeviceSet& set, Backend b) {
  for (auto& d : set.present)
    if (d->backend() == b) return d.get();
  return nullptr;
}

}  // namespace kl
