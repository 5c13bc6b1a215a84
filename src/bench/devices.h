// Device factories, one per backend; absent backends say why.
#pragma once
#include <memory>
#include <string>

#include "hw/specs.h"
#include "kernelab/device.h"

namespace kl {
std::unique_ptr<Device> make_cpu_device();
// The CUDA device 0, or nullptr with `why` set (built without CUDA, no device, driver error).
std::unique_ptr<Device> make_cuda_device(std::string& why);
// The SIMT simulator running the CUDA rungs on the CPU, or nullptr with `why` set.
std::unique_ptr<Device> make_sim_device(std::string& why);

// The peak FLOP/s for dtype t of the CUDA device named `gpu` ("NVIDIA H200"), with its source:
// the cuBLASLt rate `kernelab probe --gpu` stored for this GPU, else the hardware database's
// datasheet figure, else 0 and a source saying why (an unknown GPU, a dtype it lacks).
Figure cuda_peak_flops(const std::string& gpu, DType t);
}  // namespace kl
