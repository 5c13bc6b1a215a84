// Device factories, one per backend; absent backends say why.
#pragma once
#include <memory>
#include <string>

#include "kernelab/device.h"

namespace kl {
std::unique_ptr<Device> make_cpu_device();
// The CUDA device 0, or nullptr with `why` set (built without CUDA, no device, driver error).
std::unique_ptr<Device> make_cuda_device(std::string& why);
// The SIMT simulator running the CUDA rungs on the CPU, or nullptr with `why` set.
std::unique_ptr<Device> make_sim_device(std::string& why);
}  // namespace kl
