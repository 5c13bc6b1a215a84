// cudaMalloc'ed memory as a Buffer, for the two devices that allocate it: the CUDA device (the
// real runtime) and the simulator's (its runtime, through cuda_sim.h's renaming of the calls).
// Internal linkage on purpose: each file compiles it against its own runtime.
#pragma once
#include <cstddef>
#include <memory>

#include "kernelab/tensor.h"

namespace kl {
namespace {
// check(cudaError_t, const char* what) turns a failed call into the device's error.
template <class Check>
std::shared_ptr<Buffer> cuda_buffer(size_t bytes, Check check) {
  auto b = std::make_shared<Buffer>();
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  b->base = b->data = static_cast<std::byte*>(p);
  b->bytes = bytes;
  b->where = Where::device;
  b->release = [](std::byte* q) { cudaFree(q); };
  return b;
}
}  // namespace
}  // namespace kl
