#include "bench/devices.h"

#include <fmt/format.h>

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

Device* find_device(DeviceSet& set, Backend b) {
  for (auto& d : set.present)
    if (d->backend() == b) return d.get();
  return nullptr;
}

}  // namespace kl
