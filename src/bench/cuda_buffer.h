// cudaMalloc'ed memory as a Buffer, for the two devices that allocate it: the CUDA device (the
// real runtime) and the simulator's (its runtime, through cuda_sim.h's renaming of the calls).
// Internal linkage on purpose: each file compiles it against its own runtime.
//
// Layout: [guard | data | guard], 256 guard bytes each side, so the data starts 256-byte
// aligned as cudaMalloc's does and a write one byte past either end lands in a guard.
#pragma once
#include <cstddef>
#include <memory>

#include "kernelab/tensor.h"

namespace kl {
namespace {
constexpr size_t kDeviceGuardBytes = 256;

// check(cudaError_t, const char* what) turns a failed call into the device's error.
template <class Check>
std::shared_ptr<Buffer> cuda_buffer(size_t bytes, Check check) {
  auto b = std::make_shared<Buffer>();
  void* p = nullptr;
  check(cudaMalloc(&p, bytes + 2 * kDeviceGuardBytes), "cudaMalloc");
  b->base = static_cast<std::byte*>(p);
  b->data = b->base + kDeviceGuardBytes;
  b->bytes = bytes;
  b->guard = kDeviceGuardBytes;
  b->where = Where::device;
  b->release = [](std::byte* q) { cudaFree(q); };
  check(cudaMemset(b->base, kGuardByte, kDeviceGuardBytes), "cudaMemset (guard bytes)");
  check(cudaMemset(b->data + bytes, kGuardByte, kDeviceGuardBytes), "cudaMemset (guard bytes)");
  // Synchronous copies: they wait for the kernels still running on any blocking stream.
  b->guards_intact = [check](const Buffer& buf) {
    unsigned char g[2 * kDeviceGuardBytes];
    check(cudaMemcpy(g, buf.base, kDeviceGuardBytes, cudaMemcpyDeviceToHost), "cudaMemcpy (guard bytes)");
    check(cudaMemcpy(g + kDeviceGuardBytes, buf.data + buf.bytes, kDeviceGuardBytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy (guard bytes)");
    for (unsigned char c : g)
      if (c != kGuardByte) return false;
    return true;
  };
  return b;
}

// Device::workspace for both: a guarded buffer of exactly `bytes`, so that its trailing guard
// sits where the variant's bytes end, filled with 0xFF on every call. A new size or a broken
// guard (reported already) gets a new buffer: the next variant is not blamed for the last one.
template <class Check>
void* poisoned_workspace(Tensor& scratch, size_t bytes, cudaStream_t stream, Check check) {
  if (bytes == 0) {
    scratch = Tensor();
    return nullptr;
  }
  if (scratch.nbytes() != bytes || !scratch.check_guards())
    scratch = Tensor::wrap(DType::i8, {static_cast<int64_t>(bytes)}, {}, cuda_buffer(bytes, check));
  check(cudaMemsetAsync(scratch.data(), 0xFF, bytes, stream), "cudaMemsetAsync (workspace poison)");
  return scratch.data();
}
}  // namespace
}  // namespace kl
