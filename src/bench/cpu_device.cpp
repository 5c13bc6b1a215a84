// The host CPU as a device: tensors live in host memory, time is the steady clock, ceilings
// come from the stored probe.
#include <omp.h>

#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <vector>

#include "bench/devices.h"
#include "kernelab/probe.h"

namespace kl {

namespace {
class CpuDevice final : public Device {
 public:
  Backend backend() const override { return Backend::cpu; }
  std::string name() const override {  // with the level its rungs run: the generic rungs are another machine
    const HostIsa isa = host_isa();
    return fmt::format("{} ({} threads, {} rungs on an {} CPU, THP {})", host_cpu_name(), omp_get_max_threads(), isa.used, isa.cpu,
                       isa.huge_pages);
  }
  Tensor upload(const Tensor& host) override { return host.clone(); }
  Tensor allocate(const TensorSpec& s) override {
    return s.strides.empty() ? Tensor::host(s.dtype, s.shape) : Tensor::host_strided(s.dtype, s.shape, s.strides);
  }
  // Already a host tensor: the same buffer, no copy (the harness only reads what it downloads).
  Tensor download(const Tensor& t) override { return t; }
  // A new size is a new tensor, so that its trailing guard sits where the variant's bytes end;
  // so is a broken guard (reported already), so that the next variant is not blamed for it.
  void* workspace(size_t bytes) override {
    if (bytes == 0) {
      scratch_ = Tensor();
      return nullptr;
    }
    if (scratch_.nbytes() != bytes || !scratch_.check_guards())
      scratch_ = Tensor::host(DType::i8, {static_cast<int64_t>(bytes)});
    scratch_.fill_bytes(0xFF);
    return scratch_.data();
  }
  bool workspace_intact() const override { return scratch_.check_guards(); }
  void poison(Tensor& t) override { t.poison(); }
  void synchronize() override {}
  Timing time(const std::function<void()>& fn) override {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {s, s, false};
  }
  void flush_caches() override {
    const size_t n = last_level_cache_bytes() * 2;
    if (flush_.size() < n) flush_.resize(n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += 64) flush_[i] = static_cast<char>(flush_[i] + 1);
  }
  size_t last_level_cache_bytes() const override {
    for (int level : {3, 2}) {
      std::ifstream f(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", level));
      std::string s;
      if (f >> s && !s.empty()) {
        size_t v = std::stoull(s);
        if (s.back() == 'K') v <<= 10;
        if (s.back() == 'M') v <<= 20;
        return v;
      }
    }
    return size_t{32} << 20;
  }
  Ceilings ceilings(DType t) override {
    if (!host_) host_ = std::make_unique<HostCeilings>(load_or_probe_host(false));
    Ceilings c;
    c.peak_flops = host_->fma_flops_all;
    c.bandwidth = host_->triad_bytes_per_s;
    c.flops_source = fmt::format("kernelab probe {}: fp32 FMA peak on {} threads{}", host_->measured_at, host_->threads,
                                 t == DType::f32 ? "" : " (the CPU variants compute in fp32)");
    c.bandwidth_source = fmt::format("kernelab probe {}: STREAM-style triad, {} MiB arrays", host_->measured_at,
                                     static_cast<long>(host_->triad_array_bytes / (1 << 20)));
    return c;
  }
  std::string clocks() const override {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("cpu MHz", 0) == 0) return "cpu0 " + line.substr(line.find(':') + 2) + " MHz";
    return "unknown";
  }

 private:
  Tensor scratch_;
  std::vector<char> flush_;
  std::unique_ptr<HostCeilings> host_;
};
}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace kl
