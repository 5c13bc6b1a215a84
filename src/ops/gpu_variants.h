// Registering CUDA rungs: one launcher per rung, built for the cuda backend (nvcc) and for the
// simulator (sim); a rung is a Variant of backend cuda whose sim_run runs the same source in
// the simulator. Either build may be absent.
#pragma once
#include <string>

#include "kernelab/error.h"
#include "kernelab/op.h"

// Declares rung launcher `fn` in both builds' namespaces.
#define KL_DECLARE_GPU_RUNG(fn)                    \
  namespace kl::cuda {                             \
  void fn(const Problem& p, const Args& a);        \
  }                                                \
  namespace kl::sim_ops {                          \
  void fn(const Problem& p, const Args& a);        \
  }

#ifdef KERNELAB_HAVE_CUDA
#define KL_CUDA_FN(fn) &::kl::cuda::fn
#else
#define KL_CUDA_FN(fn) nullptr
#endif
#ifdef KERNELAB_HAVE_SIM_OPS
#define KL_SIM_FN(fn) &::kl::sim_ops::fn
#else
#define KL_SIM_FN(fn) nullptr
#endif
#define KL_GPU_RUNG(fn) ::kl::GpuRung{KL_CUDA_FN(fn), KL_SIM_FN(fn), #fn}

namespace kl {

using RungFn = void (*)(const Problem&, const Args&);
struct GpuRung {
  RungFn cuda;
  RungFn sim;
  const char* launcher;
};

// A CUDA rung: its name, what it changes against the rung below, its launchers, its source
// file under src/ops, the PTX instructions it claims to use (checked by tests/test_cuda_static.cpp),
// and the threads per block of its main launch (0: not stated; its occupancy then stays unknown).
inline Variant gpu_variant(std::string name, std::string note, GpuRung fns, std::string source,
                           std::vector<std::string> ptx_claims = {}, int threads_per_block = 0) {
  Variant v;
  v.name = std::move(name);
  v.backend = Backend::cuda;
  v.note = std::move(note);
  v.source = std::move(source);
  v.ptx_claims = std::move(ptx_claims);
  v.threads_per_block = threads_per_block;
  if (fns.cuda) {
    v.run = fns.cuda;
  } else {
    v.run = [](const Problem&, const Args&) { runtime_failure("this build has no CUDA backend (nvcc was not found)"); };
  }
  if (fns.sim) v.sim_run = fns.sim;
  return v;
}

}  // namespace kl
