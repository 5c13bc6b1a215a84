// The CUDA device 0 as a Device: tensors in guarded device memory, time from CUDA events on one
// stream held by a spinning kernel while the launches are issued, caches flushed by writing a
// buffer twice the size of L2, ceilings from probe --gpu or the hardware database.
#include <cuda_runtime.h>

#include <chrono>
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

// Mapped pinned host memory shared with hold_stream: the host releases, the kernel reports.
struct HoldFlags {
  int release;
  int timed_out;
};

// Spins until the host releases the stream, or for timeout_cycles (SM clocks), so that launches
// queued behind it run back to back. A launcher that blocks on the stream, or fills the launch
// queue, would otherwise wait forever: the timeout ends the hold and says so.
__global__ void hold_stream(const volatile int* release, int* timed_out, long long timeout_cycles) {
  const long long start = clock64();
  while (*release == 0)
    if (clock64() - start > timeout_cycles) {
      *timed_out = 1;
      return;
    }
}

class CudaDevice final : public Device {
 public:
  CudaDevice() {
    check(cudaGetDeviceProperties(&prop_, 0), "cudaGetDeviceProperties");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    check(cudaHostAlloc(&hold_host_, sizeof(HoldFlags), cudaHostAllocMapped), "cudaHostAlloc (stream hold flags)");
    check(cudaHostGetDevicePointer(&hold_dev_, hold_host_, 0), "cudaHostGetDevicePointer");
    int khz = 0;
    check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), "cudaDeviceGetAttribute");
    hold_timeout_cycles_ = 1000LL * khz;  // a second at the maximum clock; a slower clock waits longer
  }
  ~CudaDevice() override {
    cudaFreeHost(hold_host_);
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
  void* workspace(size_t bytes) override { return poisoned_workspace(scratch_, bytes, stream_, check); }
  bool workspace_intact() const override { return scratch_.check_guards(); }
  void poison(Tensor& t) override {  // 0xFF bytes are NaN in every float format; ints get a pattern
    const int byte = dtype_is_float(t.dtype()) ? 0xFF : 0x5A;
    check(cudaMemsetAsync(t.data(), byte, t.nbytes(), stream_), "cudaMemsetAsync");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* stream() override { return stream_; }
  // The start event queues behind hold_stream, so it fires only when the host has issued every
  // launch of fn and the stop event (or the hold timed out): the events bracket the kernels alone.
  Timing time(const std::function<void()>& fn) override {
    synchronize();  // no earlier hold still reads the flags (a launcher that threw left one)
    volatile HoldFlags* flags = hold_host_;
    flags->release = 0;
    flags->timed_out = 0;
    hold_stream<<<1, 1, 0, stream_>>>(&hold_dev_->release, &hold_dev_->timed_out, hold_timeout_cycles_);
    check(cudaGetLastError(), "hold_stream launch");
    Timing t;
    {
      struct Release {  // whatever fn does, even throw, the hold ends here
        volatile HoldFlags* flags;
        ~Release() { flags->release = 1; }
      } release{flags};
      check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      t.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(cudaGetLastError(), "kernel launch");
      check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    }
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    t.host_bound = flags->timed_out != 0;  // written by the kernel, which the stop event follows
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    t.device_s = ms * 1e-3;
    return t;
  }
  void flush_caches() override {
    const size_t n = 2 * last_level_cache_bytes();
    if (!flush_) flush_ = device_buffer(n);
    check(cudaMemsetAsync(flush_->data, 0, n, stream_), "cudaMemsetAsync");
  }
  size_t last_level_cache_bytes() const override { return static_cast<size_t>(prop_.l2CacheSize); }
  Ceilings ceilings(DType t) override {
    if (copy_bw_ == 0) copy_bw_ = measure_copy_bandwidth();
    Ceilings c;
    c.bandwidth = copy_bw_;
    c.bandwidth_source = "measured now: device-to-device cudaMemcpy of 1 GiB, read + write bytes counted";
    const Figure peak = cuda_peak_flops(name(), t);
    c.peak_flops = peak.value;
    c.flops_source = peak.source;
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
    auto copy = [&] { check(cudaMemcpyAsync(b->data, a->data, n, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync"); };
    for (int i = 0; i < 5; ++i) best = std::min(best, time(copy).device_s);
    return 2.0 * static_cast<double>(n) / best;
  }

  cudaDeviceProp prop_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  HoldFlags* hold_host_ = nullptr;  // mapped pinned memory
  HoldFlags* hold_dev_ = nullptr;   // the same, as the device addresses it
  long long hold_timeout_cycles_ = 0;
  Tensor scratch_;
  std::shared_ptr<Buffer> flush_;
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
