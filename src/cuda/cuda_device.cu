// The CUDA device 0 as a Device: tensors in device memory, time from CUDA events on one stream,
// caches flushed by writing a buffer twice the size of L2.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "bench/cuda_buffer.h"
#include "bench/devices.h"
#include "kernelab/error.h"

namespace kl {

namespace {
void check(cudaError_t e, const char* what) {
  if (e == cudaErrorMemoryAllocation) runtime_failure(std::string("out of GPU memory in ") + what);
  if (e != cudaSuccess) runtime_failure(std::string(what) + ": " + cudaGetErrorString(e));
}

std::shared_ptr<Buffer> device_buffer(size_t bytes) { return cuda_buffer(bytes, check); }

class CudaDevice final : public Device {
 public:
  CudaDevice() {
    check(cudaGetDeviceProperties(&prop_, 0), "cudaGetDeviceProperties");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~CudaDevice() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  Backend backend() const override { return Backend::cuda; }
  std::string name() const override { return prop_.name; }
  Tensor upload(const Tensor& host) override {
    auto b = device_buffer(host.nbytes());
    check(cudaMemcpy(b->data, host.data(), host.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    return Tensor::wrap(host.dtype(), host.shape(), host.strides(), b);
  }
  Tensor allocate(const TensorSpec& s) override {
    Tensor shape_only = s.strides.empty() ? Tensor::host(s.dtype, s.shape) : Tensor::host_strided(s.dtype, s.shape, s.strides);
    return Tensor::wrap(s.dtype, s.shape, shape_only.strides(), device_buffer(shape_only.nbytes()));
  }
  Tensor download(const Tensor& t) override {
    Tensor h = Tensor::host_strided(t.dtype(), t.shape(), t.strides());
    check(cudaMemcpy(h.data(), t.data(), t.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return h;
  }
  void* workspace(size_t bytes) override {
    if (bytes > scratch_bytes_) {
      scratch_.reset();
      scratch_ = device_buffer(bytes);
      scratch_bytes_ = bytes;
    }
    return scratch_ ? scratch_->data : nullptr;
  }
  void poison(Tensor& t) override {  // 0xFF bytes are NaN in every float format; ints get a pattern
    const int byte = dtype_is_float(t.dtype()) ? 0xFF : 0x5A;
    check(cudaMemsetAsync(t.data(), byte, t.nbytes(), stream_), "cudaMemsetAsync");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* stream() override { return stream_; }
  double time(const std::function<void()>& fn) override {
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    fn();
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
  void flush_caches() override {
    const size_t n = 2 * last_level_cache_bytes();
    if (!flush_) flush_ = device_buffer(n);
    check(cudaMemsetAsync(flush_->data, 0, n, stream_), "cudaMemsetAsync");
  }
  size_t last_level_cache_bytes() const override { return static_cast<size_t>(prop_.l2CacheSize); }
  Ceilings ceilings(DType) override {
    if (copy_bw_ == 0) copy_bw_ = measure_copy_bandwidth();
    Ceilings c;
    c.bandwidth = copy_bw_;
    c.bandwidth_source = "measured now: device-to-device cudaMemcpy of 1 GiB, read + write bytes counted";
    c.flops_source = "no FLOP ceiling known for this GPU in this build";
    return c;
  }
  std::string clocks() const override {
    int sm = 0, mem = 0;
    cudaDeviceGetAttribute(&sm, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&mem, cudaDevAttrMemoryClockRate, 0);
    return "max SM clock " + std::to_string(sm / 1000) + " MHz, memory clock " + std::to_string(mem / 1000) + " MHz";
  }

 private:
  double measure_copy_bandwidth() {
    const size_t n = size_t{1} << 30;
    auto a = device_buffer(n), b = device_buffer(n);
    double best = 1e30;
    for (int i = 0; i < 5; ++i)
      best = std::min(best, time([&] { check(cudaMemcpyAsync(b->data, a->data, n, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync"); }));
    return 2.0 * static_cast<double>(n) / best;
  }

  cudaDeviceProp prop_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::shared_ptr<Buffer> scratch_, flush_;
  size_t scratch_bytes_ = 0;
  double copy_bw_ = 0;
};
}  // namespace

std::unique_ptr<Device> make_cuda_device(std::string& why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    why = std::string("no GPU present (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return nullptr;
  }
  if (count == 0) {
    why = "no GPU present (cudaGetDeviceCount found 0 devices)";
    return nullptr;
  }
  return std::make_unique<CudaDevice>();
}

}  // namespace kl
