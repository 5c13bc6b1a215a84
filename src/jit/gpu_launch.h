// The generated schedules on a GPU, for the `fused` op's CUDA rungs (src/ops/fused): NVRTC's PTX
// (nvrtc.h, its disk cache) loaded through the driver API and its kernels looked up, once per
// process and source, and launched on the caller's stream into the caller's buffers. libcuda is opened at the first use,
// so a machine without a driver still runs every other command.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jit/codegen.h"
#include "jit/expr.h"

namespace kl::jit {

struct GpuBuffers {
  std::vector<const void*> inputs;  // device pointers, Program::inputs order
  std::vector<void*> outputs;       // Program::outputs order
  void* workspace = nullptr;        // unfused: unfused_workspace_bytes() bytes
  void* stream = nullptr;           // a cudaStream_t (a CUstream)
};

// Bytes of the unfused chain's intermediates: every step's buffer that is not written straight
// into an output, each rounded up to 256 bytes.
std::size_t unfused_workspace_bytes(const Program& p, FuseDType t, int64_t rows, int64_t cols);

// Compiles for the current context's device (sm_XY; the generated code uses nothing newer),
// loads and launches one schedule: the fused kernel, or the chain in order. RuntimeFailure with
// NVRTC's or the driver's message when a step fails; nothing falls back here (`kernelab fuse` does).
void run_on_gpu(const Program& p, FuseDType t, bool fused, int64_t rows, int64_t cols, const GpuBuffers& b);

}  // namespace kl::jit
