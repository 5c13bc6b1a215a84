// The simulator as a Device: tensors in simulated device memory (the simulator's cudaMalloc,
// which tracks allocations, guards their ends and refuses stray pointers; inside each, the
// guard zones of bench/cuda_buffer.h, as on a GPU), kernels on fibers. It checks; it never times.
#include <cstring>
#include <string>
#include <thread>

#include "bench/cuda_buffer.h"
#include "bench/devices.h"
#include "kernelab/error.h"

namespace kl {

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) runtime_failure(std::string("simulator: ") + what + ": " + cudaGetErrorString(e));
}

std::shared_ptr<Buffer> sim_buffer(size_t bytes) { return cuda_buffer(bytes, check); }

class SimDevice final : public Device {
 public:
  Backend backend() const override { return Backend::sim; }
  std::string name() const override {
    return "kernelab SIMT simulator (" + std::to_string(std::thread::hardware_concurrency()) + " OS threads)";
  }
  bool times() const override { return false; }
  Tensor upload(const Tensor& host) override {
    auto b = sim_buffer(host.nbytes());
    std::memcpy(b->data, host.data(), host.nbytes());
    return Tensor::wrap(host.dtype(), host.shape(), host.strides(), b);
  }
  Tensor allocate(const TensorSpec& s) override {
    Tensor shape = s.strides.empty() ? Tensor::host(s.dtype, s.shape) : Tensor::host_strided(s.dtype, s.shape, s.strides);
    return Tensor::wrap(s.dtype, s.shape, shape.strides(), sim_buffer(shape.nbytes()));
  }
  Tensor download(const Tensor& t) override {
    Tensor h = Tensor::host_strided(t.dtype(), t.shape(), t.strides());
    std::memcpy(h.data(), t.data(), t.nbytes());
    return h;
  }
  void* workspace(size_t bytes) override { return poisoned_workspace(scratch_, bytes, nullptr, check); }
  bool workspace_intact() const override { return scratch_.check_guards(); }
  void poison(Tensor& t) override { std::memset(t.data(), dtype_is_float(t.dtype()) ? 0xFF : 0x5A, t.nbytes()); }
  // A failed launch is sticky in CUDA; here it is reported once and cleared, so the next
  // variant checked starts clean. A race found under KERNELAB_SIM_RACE_CHECK fails it too: no
  // CUDA error says so, and the reverse pass's result may still match the reference.
  void synchronize() override {
    const cudaError_t e = cudaDeviceSynchronize();
    const int found = kl::sim::findings();
    if (e == cudaSuccess && found == findings_seen_) return;
    findings_seen_ = found;
    const std::string what = kl::sim::last_message();
    kl::sim::clear_errors();
    if (e == cudaSuccess) runtime_failure("simulator: " + what);
    runtime_failure(std::string("simulator: ") + cudaGetErrorString(e) + (what.empty() ? "" : ": " + what));
  }
  Timing time(const std::function<void()>&) override {
    bad_input("the simulator checks correctness; it does not time (time CUDA rungs with --backend cuda on a GPU)");
  }
  void flush_caches() override {}
  size_t last_level_cache_bytes() const override { return 0; }
  Ceilings ceilings(DType) override { return {}; }
  std::string clocks() const override { return "not applicable: simulated"; }

 private:
  Tensor scratch_;
  int findings_seen_ = kl::sim::findings();
};
}  // namespace

std::unique_ptr<Device> make_sim_device(std::string&) { return std::make_unique<SimDevice>(); }

}  // namespace kl
