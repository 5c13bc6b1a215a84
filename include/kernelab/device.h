// A place variants run: the host CPU, a CUDA GPU, or (later) the SIMT simulator. The harness
// moves tensors there, times launches with the device's own clock and flushes its caches.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernelab/op.h"
#include "kernelab/tensor.h"

namespace kl {

// The ceilings a point is placed against, with where each figure came from.
struct Ceilings {
  double peak_flops = 0;      // FLOP/s for the dtype
  double bandwidth = 0;       // bytes/s
  std::string flops_source;
  std::string bandwidth_source;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual Backend backend() const = 0;
  virtual std::string name() const = 0;  // "Intel(R) Xeon(R) Processor (2 threads)", "NVIDIA H200"
  virtual Tensor upload(const Tensor& host) = 0;  // same shape/strides, on this device
  virtual Tensor allocate(const TensorSpec& spec) = 0;
  virtual Tensor download(const Tensor& t) = 0;   // to a host tensor
  virtual void* workspace(size_t bytes) = 0;      // reused scratch, valid until the next call
  virtual void poison(Tensor& t) = 0;             // NaN / pattern fill on the device
  virtual void synchronize() = 0;
  virtual void* stream() { return nullptr; }
  // Times fn once: seconds, with the device's own clock (CUDA events on a GPU).
  virtual double time(const std::function<void()>& fn) = 0;
  virtual void flush_caches() = 0;  // evicts caches (cold runs)
  virtual size_t last_level_cache_bytes() const = 0;
  virtual Ceilings ceilings(DType t) = 0;
  virtual std::string clocks() const = 0;  // what the clocks were, as text
  virtual bool times() const { return true; }  // false for the simulator: it checks, never times
};

// Devices present on this machine for the requested backends, with the reason for each absent
// one (no GPU, built without CUDA, ...).
struct DeviceSet {
  std::vector<std::unique_ptr<Device>> present;
  std::vector<std::string> absent;  // "cuda: no CUDA device found (cudaGetDeviceCount: ...)"
};
DeviceSet open_devices(const std::vector<Backend>& wanted);
Device* find_device(DeviceSet& set, Backend b);

}  // namespace kl
