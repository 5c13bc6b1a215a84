// The fused op's CUDA rungs, generated from each problem's expression (src/jit/codegen.h): on a
// GPU compiled by NVRTC and launched through the driver API (src/jit/gpu_launch.h); in the
// simulator, the program `kernelab fuse` runs, built by the host compiler against the simulator's
// header (cached by `sim run`), its inputs and outputs passed through files.
#include <cstring>
#include <string>

#include "jit/gpu_launch.h"
#include "kernelab/error.h"
#include "ops/fused/fused.h"

#if KERNELAB_HAVE_FUSE
#include "jit/fuse.h"
#include "sim/launch.h"
#endif

namespace kl {

namespace {

jit::GpuBuffers buffers(const Args& a) {
  jit::GpuBuffers b;
  for (const Tensor& t : a.in) b.inputs.push_back(t.data());
  for (Tensor& t : a.out) b.outputs.push_back(t.data());
  b.workspace = a.workspace;
  b.stream = a.stream;
  return b;
}

#if KERNELAB_HAVE_FUSE
// The simulator's tensors are host memory: their bytes go to the program and come back.
// `profiled`: the program's profiling build, its launches counted into this process's profile (`sim profile`).
void simulate(const Problem& problem, const Args& a, const char* schedule, bool profiled) {
  const FusedParams& f = problem.as<FusedParams>();
  std::string inputs;
  for (const Tensor& t : a.in) inputs.append(static_cast<const char*>(t.data()), t.nbytes());
  // The program runs in its own process: this one's race check (`check --race-check`, the tests') goes with it.
  const std::string outputs =
      profiled ? jit::simulate_schedule_profiled(f.program, f.dtype, schedule, f.rows, f.cols, inputs)
               : jit::simulate_schedule(f.program, f.dtype, schedule, f.rows, f.cols, inputs, sim::options().race_check);
  std::size_t at = 0;
  for (Tensor& t : a.out) {
    if (at + t.nbytes() > outputs.size()) runtime_failure(std::string("fused: the ") + schedule + " schedule wrote too few outputs");
    std::memcpy(t.data(), outputs.data() + at, t.nbytes());
    at += t.nbytes();
  }
}
#endif

Variant generated_variant(const char* name, bool fused, const char* note) {
  Variant v;
  v.op = "fused";
  v.name = name;
  v.backend = Backend::cuda;
  v.generated = true;
  v.note = note;
  if (!fused)
    v.workspace_bytes = [](const Problem& p) {
      const FusedParams& f = p.as<FusedParams>();
      return jit::unfused_workspace_bytes(f.program, f.dtype, f.rows, f.cols);
    };
  Config c;
  c.name = fused ? "block_per_row" : "kernel_per_step";
  c.threads_per_block = 256;  // the fused kernel: at most, a block follows the row length (block_threads)
  c.run = [fused](const Problem& p, const Args& a) {
    const FusedParams& f = p.as<FusedParams>();
    jit::run_on_gpu(f.program, f.dtype, fused, f.rows, f.cols, buffers(a));
  };
#if KERNELAB_HAVE_FUSE
  c.sim_run = [fused](const Problem& p, const Args& a) { simulate(p, a, fused ? "fused" : "unfused", false); };
  c.sim_profile_run = [fused](const Problem& p, const Args& a) { simulate(p, a, fused ? "fused" : "unfused", true); };
#endif
  v.configs = {std::move(c)};
  return v;
}

}  // namespace

std::vector<Variant> fused_cuda_variants() {
  return {generated_variant("cuda_unfused", false,
                            "the eager chain: one generated kernel per step, every intermediate written to and read back from "
                            "memory in the dtype"),
          generated_variant("cuda_fused", true,
                            "one generated kernel, a block per row: each input read once, intermediates in fp32 registers, "
                            "inputs a later pass needs kept in shared memory")};
}

}  // namespace kl
