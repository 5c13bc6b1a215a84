// The CUDA rungs' static facts (conventions 8), with no GPU: ptxas's resource report per kernel
// and arch, and the PTX, as cmake/cuda_static.cmake gathers them at build time into
// build/cuda_static.json; the checks the tests run on them; and the per-variant summary that
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
inline constexpr const char* kStaticArch = "sm_90a";   // the arch list, report and occupancy show
inline constexpr int kMaxRegistersPerThread = 255;

// One kernel on one arch, as ptxas -v reported it.
struct KernelResources {
  std::string name;  // demangled where c++filt could
  int registers = 0;
  int64_t smem_bytes = 0;  // static shared memory
  int64_t spill_store_bytes = 0, spill_load_bytes = 0;
  int64_t stack_frame_bytes = 0, lmem_bytes = 0;
  int64_t spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

// One rung's source file: its PTX files and its kernels, by arch.
struct RungStatic {
  std::string source;                                          // relative to src/ops
  std::map<std::string, std::string> ptx_files;                // arch -> path
  std::map<std::string, std::vector<KernelResources>> kernels;  // arch -> entry kernels
  std::map<std::string, std::vector<KernelResources>> device_functions;  // arch -> non-inlined callees
  // The largest registers, smem, spills, stack over the rung's kernels on arch (name: "max").
  KernelResources max_over_kernels(const std::string& arch) const;
};

struct CudaStatic {
  std::string why_not;  // empty when the facts are here; otherwise why not (kNoCudaCompiler, ...)
  std::string path;     // the JSON file
  std::vector<std::string> archs;
  std::map<std::string, RungStatic> rungs;  // by source
  bool available() const { return why_not.empty(); }
  const RungStatic* find(const std::string& source) const;
};

// True when the build had nvcc (and so must have written the file).
bool cuda_static_expected();
// The build's file, loaded once; why_not says what is missing.
const CudaStatic& cuda_static();
// Reads one such file; a missing or malformed file gives why_not, never throws.
CudaStatic load_cuda_static(const std::string& path);

// --- PTX checks ---
// Every instruction's opcode in PTX text, in order ("ld.global.nc.v4.f32", "bar.sync", ...):
// the first word of each statement, past a predicate guard; directives, labels and comments skipped.
std::vector<std::string> ptx_opcodes(std::string_view ptx);
// The claim rule: a claim matches an opcode when the claim's dot-separated parts appear in the
// opcode's parts in the same order, the first (the instruction) being the opcode's first.
// So "ld.global.v4" matches "ld.global.v4.f32" and also "ld.global.nc.v4.u32" (the read-only
// path is the same vector load), "shfl.sync" matches "shfl.sync.bfly.b32"; "st.shared" does not
// match "st.global", and "mma" does not match "wgmma.mma_async".
bool claim_matches(std::string_view claim, std::string_view opcode);
// What is wrong with one PTX text: each claim no opcode matches, and each ld.local/st.local
// (local memory: spills or a stack array). Empty when clean.
std::vector<std::string> ptx_violations(std::string_view ptx, const std::vector<std::string>& claims);
// What is wrong with a rung's resources on every arch: spills, registers over 255.
std::vector<std::string> resource_violations(const RungStatic& r);

// --- per-variant summary ---
// For `list --json`: registers, smem_bytes, spill_bytes (kStaticArch, the max over kernels),
// kernels (per-kernel detail), source, ptx_claims and occupancy_sm90 at the rung's launch size;
// or {"static": "not available: ..."}.
nlohmann::json variant_static_json(const Variant& v, const CudaStatic& s = cuda_static());
// One line: "sm_90a: 28 registers, 4096 B smem, no spills" or why it is not known.
std::string variant_resources_line(const Variant& v, const CudaStatic& s = cuda_static());

}  // namespace kl
