// `kernelab bench ... --trace FILE.json`: records what the GPU and the CUDA runtime do while the
// tracer lives, with CUPTI's activity API (kernels, memcpy, memset, runtime API calls,
// synchronisation, NVTX ranges, correlation ids), and writes a Chrome/Perfetto trace in the
// PyTorch profiler (Kineto) layout, which `kernelab trace analyze` reads.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace kl::trace {

class CuptiTracer {
 public:
  // Starts recording; RuntimeFailure saying why when it cannot (built without CUPTI, no GPU).
  static std::unique_ptr<CuptiTracer> start();
  ~CuptiTracer();
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Flushes CUPTI's buffers, stops recording and writes the trace; returns the events written.
  size_t stop_and_write(const std::string& path);

 private:
  CuptiTracer() = default;
  bool running_ = false;
};

}  // namespace kl::trace
