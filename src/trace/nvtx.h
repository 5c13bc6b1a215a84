// NVTX ranges (the toolkit's header-only NVTX3) so an Nsight Systems timeline of kernelab reads by
// op, rung and phase. Without the CUDA toolkit at build time they compile to nothing; with it and
// no profiler attached, each costs a few nanoseconds.
#pragma once
#include <string>

namespace kl {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);  // no allocation: fit for every launch
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace kl
