// The registry: every op, its CPU variants from its folder, then its CUDA rungs in ladder order.
// The rungs come from the generated list (cmake/ops.cmake: one line per src/ops/*/cuda/*.cu);
// each file is built by nvcc and for the simulator, and the two builds of a rung are merged here
// into one variant whose configs run on either.
#include <algorithm>
#include <fmt/format.h>

#include "kernelab/error.h"
#include "ops/ops.h"

#define KL_RUNG_FILE(id)                  \
  namespace kl::cuda {                    \
  std::vector<Variant> rung_##id();       \
  }                                       \
  namespace kl::sim_ops {                 \
  std::vector<Variant> rung_##id();       \
  }                                       \
  namespace kl::sim_profile {             \
  std::vector<Variant> rung_##id();       \
  }
#include "ops/rung_files.h"
#undef KL_RUNG_FILE

namespace kl {

namespace {

// The variants of one rung file: the nvcc build's, with the simulator build's launchers and kernel
// addresses added; or the simulator's alone, whose `run` then says there is no CUDA backend.
void add_rung_file(std::vector<Variant>& out, RungFile cuda, RungFile sim, RungFile sim_profile, const char* id) {
  std::vector<Variant> c = cuda ? cuda() : std::vector<Variant>{};
  std::vector<Variant> s = sim ? sim() : std::vector<Variant>{};
  const std::vector<Variant> prof = sim_profile ? sim_profile() : std::vector<Variant>{};
  for (size_t i = 0; i < s.size() && i < prof.size(); ++i)  // the profiling build rides on the simulator's
    for (size_t j = 0; j < s[i].configs.size() && j < prof[i].configs.size(); ++j) {
      s[i].configs[j].sim_profile_run = prof[i].configs[j].sim_profile_run;
      for (size_t g = 0; g < s[i].configs[j].kernels.size() && g < prof[i].configs[j].kernels.size(); ++g)
        for (size_t k = 0; k < s[i].configs[j].kernels[g].kernels.size() && k < prof[i].configs[j].kernels[g].kernels.size(); ++k)
          s[i].configs[j].kernels[g].kernels[k].sim_profile = prof[i].configs[j].kernels[g].kernels[k].sim_profile;
    }
  if (!cuda) {
    for (Variant& v : s)
      for (Config& cfg : v.configs)
        cfg.run = [](const Problem&, const Args&) { runtime_failure("this build has no CUDA backend (nvcc was not found)"); };
    c = std::move(s);
    s.clear();
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (i >= c.size() || c[i].name != s[i].name || c[i].configs.size() != s[i].configs.size())
      runtime_failure(fmt::format("rung file {}: its nvcc and simulator builds declare different rungs", id));
    for (size_t j = 0; j < s[i].configs.size(); ++j) {
      Config& to = c[i].configs[j];
      const Config& from = s[i].configs[j];
      to.sim_run = from.sim_run;
      to.sim_profile_run = from.sim_profile_run;
      for (size_t g = 0; g < to.kernels.size() && g < from.kernels.size(); ++g)
        for (size_t k = 0; k < to.kernels[g].kernels.size() && k < from.kernels[g].kernels.size(); ++k) {
          to.kernels[g].kernels[k].sim = from.kernels[g].kernels[k].sim;
          to.kernels[g].kernels[k].sim_profile = from.kernels[g].kernels[k].sim_profile;
        }
    }
  }
  for (Variant& v : c) out.push_back(std::move(v));
}

#ifdef KERNELAB_HAVE_CUDA
#define KL_CUDA_FN(fn) &::kl::cuda::fn
#else
#define KL_CUDA_FN(fn) nullptr
#endif
#ifdef KERNELAB_HAVE_SIM_OPS
#define KL_SIM_FN(fn) &::kl::sim_ops::fn
#define KL_SIM_PROFILE_FN(fn) &::kl::sim_profile::fn
#else
#define KL_SIM_FN(fn) nullptr
#define KL_SIM_PROFILE_FN(fn) nullptr
#endif

// Every CUDA rung, ordered by the number of its file (ties: by path).
std::vector<Variant> gpu_rungs() {
  std::vector<Variant> all;
#define KL_RUNG_FILE(id) add_rung_file(all, KL_CUDA_FN(rung_##id), KL_SIM_FN(rung_##id), KL_SIM_PROFILE_FN(rung_##id), #id);
#include "ops/rung_files.h"
#undef KL_RUNG_FILE
  std::stable_sort(all.begin(), all.end(), [](const Variant& a, const Variant& b) {
    return std::tie(a.ladder_number, a.source) < std::tie(b.ladder_number, b.source);
  });
  return all;
}

std::vector<Op> make_ops() {
  std::vector<Op> ops = {make_gemm_op(),    make_gemm_w4a16_op(), make_gemm_w8a8_op(), make_gemm_fp8_op(), make_attention_op(), make_attention_bwd_op(), make_decode_op(), make_softmax_op(),   make_layernorm_op(),
                         make_rmsnorm_op(), make_transpose_op(), make_reduce_op(),
                         make_bias_gelu_op(), make_fused_op(),
                         // the execution-model and memory-hierarchy experiments
                         make_exp_stride_op(), make_exp_occupancy_op(), make_exp_smem_banks_op(),
                         make_exp_divergence_op(), make_exp_launch_op(), make_exp_cache_bandwidth_op(),
                         make_exp_cache_latency_op()};
  std::vector<Variant> rungs = gpu_rungs();
  for (Op& op : ops)
    for (const Variant& v : rungs)
      if (v.op == op.name) op.variants.push_back(v);
  for (const Variant& v : rungs)
    if (std::none_of(ops.begin(), ops.end(), [&](const Op& op) { return op.name == v.op; }))
      runtime_failure(fmt::format("rung {} ({}) declares op '{}', which is not registered", v.name, v.source, v.op));
  return ops;
}

std::vector<Op>& mutable_registry() {
  static std::vector<Op> ops = make_ops();
  return ops;
}
}  // namespace

const std::vector<Op>& registry() { return mutable_registry(); }

std::vector<Variant> add_user_rungs(RungFile cuda, RungFile sim, RungFile sim_profile, const std::string& file) {
  std::vector<Variant> rungs;
  add_rung_file(rungs, cuda, sim, sim_profile, file.c_str());
  if (rungs.empty()) bad_input(fmt::format("--rung {}: its KL_RUNGS block returns no rung", file));
  for (Variant& v : rungs) {
    v.source = file;
    if (!cuda)
      for (Config& c : v.configs)
        c.run = [file](const Problem&, const Args&) { runtime_failure(fmt::format("--rung {}: built for the simulator only here", file)); };
    const auto op = std::find_if(mutable_registry().begin(), mutable_registry().end(), [&](const Op& o) { return o.name == v.op; });
    if (op == mutable_registry().end()) bad_input(fmt::format("--rung {}: rung {} declares op '{}', which is not registered", file, v.name, v.op));
    if (op->find_variant(v.name)) bad_input(fmt::format("--rung {}: {} already has a variant named {}", file, v.op, v.name));
    op->variants.push_back(v);
  }
  return rungs;
}

const Op& find_op(std::string_view name) {
  std::string known;
  for (const Op& op : registry()) {
    if (op.name == name) return op;
    known += (known.empty() ? "" : ", ") + op.name;
  }
  bad_input(fmt::format("unknown op '{}' (known: {})", name, known));
}

}  // namespace kl
