// The CUDA rungs' static facts (conventions 8), with no GPU, taken from the built objects: what
// `cuobjdump -res-usage -sass -ptx` prints for each rung object (cmake/ops.cmake writes one file
// per family under build/cuda_static), parsed per kernel and arch; the checks a config must pass
// on the kernels it declares (and so launches: the harness refuses any other); and the summary
// `kernelab list` and `kernelab report` print.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kernelab/op.h"

namespace kl {

inline constexpr const char* kNoCudaCompiler = "no CUDA compiler: static checks skipped";
inline constexpr const char* kStaticArch = "sm_90a";  // the arch whose PTX and SASS hold the claims; list and report show it
// What list and report say of a rung generated per problem (Variant::generated): no built object.
inline constexpr const char* kGeneratedRung =
    "generated per problem at run time: no built object; `kernelab fuse EXPR --arch sm_90a` shows NVRTC's PTX and checks it for local memory";
inline constexpr int kMaxRegistersPerThread = 255;

// One kernel on one arch, as cuobjdump reported it.
struct KernelFacts {
  std::string mangled, name;  // name: plain_kernel_name of the demangled one
  int registers = 0;
  int64_t smem_bytes = 0;   // static shared memory
  int64_t stack_bytes = 0;  // the stack frame: spills and local arrays live there
  int64_t local_bytes = 0;
  std::vector<std::string> sass;  // SASS opcodes in order ("LDG.E.128", "BAR.SYNC.DEFER_BLOCKING", ...)
  std::string ptx;                // the entry's PTX body (kStaticArch only)
  bool shared = false;            // in no rung file's namespace: a shared header's, in the facts of each file of its unit
};

// One rung object: its kernels by arch.
struct ObjectFacts {
  std::string source;             // relative to src/ops
  std::vector<std::string> unit;  // the rung files built as one unit with it (cmake/ops.cmake's batches), itself included
  std::map<std::string, std::vector<KernelFacts>> kernels;  // arch -> kernels
  const KernelFacts* find(const std::string& arch, const std::string& plain_name) const;
};

struct CudaStatic {
  std::string why_not;  // empty when the facts are here; otherwise why not (kNoCudaCompiler, ...)
  std::string dir;
  std::vector<std::string> archs;
  std::map<std::string, ObjectFacts> objects;  // by source
  bool available() const { return why_not.empty(); }
  const ObjectFacts* find(const std::string& source) const;
};

// True when the build had nvcc (and so must have written the files).
bool cuda_static_expected();
// The build's facts, loaded once; why_not says what is missing.
const CudaStatic& cuda_static();
// Reads a folder of cuobjdump dumps; a missing or malformed one gives why_not, never throws.
CudaStatic load_cuda_static(const std::string& dir);
// Parses what cmake/cuda_static_dump.cmake wrote ("#kernelab-object REL..." + cuobjdump's text).
CudaStatic parse_cuobjdump(std::string_view text);

// --- instruction claims ---
// Every instruction's opcode in PTX text, in order ("ld.global.nc.v4.f32", "bar.sync", ...):
// the first word of each statement, past a predicate guard; directives, labels and comments skipped.
std::vector<std::string> ptx_opcodes(std::string_view ptx);
// The claim rule: a claim matches an opcode when the claim's dot-separated parts appear in the
// opcode's parts in the same order, the first (the instruction) being the opcode's first.
// So "ld.global.v4" matches "ld.global.v4.f32" and also "ld.global.nc.v4.u32" (the read-only
// path is the same vector load), "shfl.sync" matches "shfl.sync.bfly.b32"; "st.shared" does not
// match "st.global", and "mma" does not match "wgmma.mma_async". SASS claims follow the same rule.
bool claim_matches(std::string_view claim, std::string_view opcode);

// Everything wrong with one config: a declared kernel missing from its object on some arch, local
// memory (a stack frame, ld.local/st.local, LDL/STL: spills or a stack array), registers over 255,
// a PTX or SASS claim of a group that one of the group's kernels does not hold (kStaticArch).
std::vector<std::string> config_violations(const Variant& v, const Config& c, const CudaStatic& s);

// --- summaries ---
// For `list --json`: per config the kernels it launches with registers, smem (static, + dynamic),
// stack, claims and occupancy_sm90 at its threads per block; at the variant level (the first
// config's) registers, smem_bytes, spill_bytes, kernels, source, ptx_claims; or {"static": why not}.
nlohmann::json variant_static_json(const Variant& v, const CudaStatic& s = cuda_static());
// One line: "sm_90a: 28 registers, 4096 B smem, no spills" (the first config) or why it is not known.
std::string variant_resources_line(const Variant& v, const CudaStatic& s = cuda_static());

}  // namespace kl
