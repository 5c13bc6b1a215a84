// `kernelab fuse`: CUDA C++ source for the two schedules of one expression (expr.h).
//
// - Unfused: one kernel per step (each node that is not a leaf), every intermediate stored in
//   the tensors' dtype as an eager framework does; elementwise steps are grid-stride loops,
//   reductions one block per row.
// - Fused: one kernel, one block per row. The row is walked in a loop over columns once per
//   reduction level (softmax: the max and the sum in one online pass, then the outputs; see
//   fold_online_softmax in expr.cpp), intermediates in fp32
//   registers, block reductions by warp shuffles and shared memory. An input a later pass
//   needs again is kept in shared memory (fp32) by the pass that first reads it, so each input
//   is read once from global memory when the row fits (`staged`, up to 48 KiB per block; else
//   the later pass reads it again). Where every row starts 16-byte aligned (`vec`: cols a
//   multiple of 4 fp32 or 8 16-bit elements, and aligned pointers) each thread loads and stores
//   16 bytes (V columns) per step: ld.global.nc.v4 and st.global.v4 in the PTX.
//
// The source is plain CUDA with cuda_fp16.h / cuda_bf16.h for the 16-bit dtypes.
#pragma once
#include <string>
#include <vector>

#include "jit/expr.h"

namespace kl::jit {

enum class FuseDType { fp32, fp16, bf16 };
const char* fuse_dtype_name(FuseDType t);  // "fp32", "fp16", "bf16"
const char* fuse_dtype_ctype(FuseDType t); // "float", "__half", "__nv_bfloat16"
int fuse_dtype_bytes(FuseDType t);
// The tolerance on max |y - ref| / max |ref| per output: fp32 1e-5, fp16 2e-3, bf16 2e-2.
double fuse_tolerance(FuseDType t);

// Whole translation units for one dtype: what --emit prints and NVRTC compiles (the fused one).
std::string fused_source(const Program& p, FuseDType t);
std::string unfused_source(const Program& p, FuseDType t);

// The fused kernel's name in the source and its launch shape.
inline constexpr const char* kFusedKernel = "kl_fused";
int block_threads(int64_t cols);                       // a multiple of 32, at most 256
int64_t fused_stage_floats(const Program& p);          // staged inputs per column (times cols: the floats)

// The unfused chain's launches, in order: kernel kl_step<node> takes the buffers of `operands`
// (node ids of inputs or earlier steps, ascending), then its own output buffer, rows and cols; a
// reduction runs one block of block_threads(cols) per row, any other step a grid-stride loop over
// elements(kind) elements.
struct UnfusedStep {
  int node = -1;
  std::vector<int> operands;
  bool reduction = false;
};
std::vector<UnfusedStep> unfused_steps(const Program& p);

// A program for the simulator (`sim run`): both schedules for all three dtypes, the shape taken
// at run time, so one compile serves every dtype and shape of an expression.
//   PROGRAM fp32|fp16|bf16 fused|unfused ROWS COLS INPUTS.bin OUTPUTS.bin
// INPUTS.bin: the inputs in Program::inputs order, each its elements (row-major) in the dtype;
// OUTPUTS.bin: the outputs likewise. Outputs are poisoned (0xFF bytes: NaN) before the run.
std::string simulator_program(const Program& p);

}  // namespace kl::jit
