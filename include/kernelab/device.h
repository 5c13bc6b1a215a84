// A place variants run: the host CPU, a CUDA GPU, or the SIMT simulator. The harness moves
// tensors there, times launches with the device's own clock and flushes its caches. Every
// buffer a device allocates, tensors and workspace, has guard bytes on both sides.
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

// One timed run of a launcher: the device's time for its launches and the host's for issuing them.
struct Timing {
  double device_s = 0;      // the launches alone, on the device's clock (CUDA events)
  double host_s = 0;        // wall time of the launcher on the host (dispatch, launch calls)
  bool host_bound = false;  // the device waited for the host: device_s includes host time
};

class Device {
 public:
  virtual ~Device() = default;
  virtual Backend backend() const = 0;
  virtual std::string name() const = 0;  // "Intel(R) Xeon(R) Processor (2 threads)", "NVIDIA H200"
  virtual Tensor upload(const Tensor& host) = 0;  // same shape/strides, on this device
  virtual Tensor allocate(const TensorSpec& spec) = 0;
  virtual Tensor download(const Tensor& t) = 0;   // to a host tensor (the CPU device's own: read it, do not write it)
  // Scratch of `bytes` (nullptr for 0), valid until the next call, guarded like a tensor and
  // filled with 0xFF bytes on every call: no variant can depend on what the last one left there.
  virtual void* workspace(size_t bytes) = 0;
  // The guard bytes around the last workspace() are untouched (true when it is empty); call
  // after a run, as check_guards() on its tensors. RuntimeFailure if they cannot be read back.
  virtual bool workspace_intact() const = 0;
  virtual void poison(Tensor& t) = 0;             // NaN / pattern fill on the device
  virtual void synchronize() = 0;
  virtual void* stream() { return nullptr; }
  // Times fn (which launches on stream()) once. On a GPU the stream is held by a spinning
  // kernel while fn issues its launches, so the events bracket the kernels, not the host work;
  // if fn needs longer than about a second (or blocks), the hold times out: host_bound. On the
  // CPU, device_s = host_s = the wall time. The simulator refuses (BadInput).
  virtual Timing time(const std::function<void()>& fn) = 0;
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
