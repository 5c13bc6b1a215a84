// `kernelab fuse EXPR`: an elementwise / row-reduction chain fused into one kernel, both
// schedules run in the simulator and checked against float64, the fused source compiled with
// NVRTC (cached) for --arch, and the unfused chain as the fallback when that fails.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/common.h"
#include "kernelab/error.h"

#if KERNELAB_HAVE_FUSE
#include "jit/fuse.h"
#include "jit/presets.h"
#endif

namespace kl::cli {

#if KERNELAB_HAVE_FUSE
namespace {

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string shape_of(jit::Kind k, int64_t rows, int64_t cols) {
  switch (k) {
    case jit::Kind::row: return fmt::format("{} (one per row)", rows);
    case jit::Kind::col: return fmt::format("{} (row vector)", cols);
    default: return fmt::format("{}x{}", rows, cols);
  }
}

std::string human_bytes(int64_t b) {
  if (b >= 1000000) return fmt::format("{:.2f} MB", double(b) / 1e6);
  if (b >= 1000) return fmt::format("{:.1f} kB", double(b) / 1e3);
  return fmt::format("{} B", b);
}

nlohmann::json err_json(double e) { return std::isfinite(e) ? nlohmann::json(e) : nlohmann::json("inf"); }

}  // namespace

void add_fuse(CLI::App& app) {
  auto* sub = app.add_subcommand("fuse", "fuse an elementwise / row-reduction expression, check both schedules in the simulator, "
                                         "compile with NVRTC (cached), fall back to the unfused chain on any failure");
  static std::string expr, dtype = "fp32", arch;
  static std::vector<std::string> vectors;
  static int64_t rows = 127, cols = 1000;
  static uint64_t seed = 1;
  static bool json = false, emit = false, compile_only = false, profile = false;
  sub->add_option("EXPR", expr,
                  "statements NAME = EXPRESSION separated by ';', e.g. 'h = x + r; y = h * rsqrt(rowmean(h * h) + 1e-6) * g', or a "
                  "named one: softmax_causal, layernorm, rmsnorm_residual, bias_gelu, swiglu")
      ->required();
  sub->add_option("--rows", rows, "rows of the full inputs and outputs")->default_val(127);
  sub->add_option("--cols", cols, "columns (the length of the row vectors)")->default_val(1000);
  sub->add_option("--dtype", dtype, "fp32, fp16 or bf16 (storage; arithmetic in fp32)")->default_val("fp32");
  sub->add_option("--vector", vectors, "inputs that are row vectors of length cols, broadcast over the rows")->delimiter(',');
  sub->add_option("--arch", arch, "compile the fused kernel to PTX for this arch with NVRTC (sm_80, sm_90a, ...)");
  sub->add_option("--seed", seed, "seed of the random inputs")->default_val(1);
  sub->add_flag("--json", json, "print one JSON object");
  sub->add_flag("--emit", emit, "print the generated CUDA source of both schedules");
  sub->add_flag("--profile", profile,
                "also run each schedule in the simulator's profiling build: the global-memory bytes its warps request and the "
                "DRAM bytes behind a modelled L2");
  sub->add_flag("--compile-only", compile_only, "with --arch: NVRTC's compile (and its cache) alone, no simulator run and no check");
  sub->callback([] {
    jit::FuseRequest q;
    jit::Expression e = jit::resolve_expression(expr, std::set<std::string>(vectors.begin(), vectors.end()));
    q.expr = std::move(e.text);
    q.vectors = std::move(e.vectors);
    q.compile_only = compile_only;
    q.profile = profile;
    q.rows = rows, q.cols = cols, q.seed = seed;
    if (dtype == "fp32") q.dtype = jit::FuseDType::fp32;
    else if (dtype == "fp16") q.dtype = jit::FuseDType::fp16;
    else if (dtype == "bf16") q.dtype = jit::FuseDType::bf16;
    else bad_input("fuse: --dtype " + dtype + " is not one of fp32, fp16, bf16");
    if (!arch.empty()) {
      if (!std::regex_match(arch, std::regex("sm_[0-9]{2,3}[a-z]?"))) bad_input("fuse: --arch " + arch + " is not of the form sm_XX (sm_80, sm_90a)");
      q.arch = arch;
    }
    const jit::FuseReport r = jit::run_fuse(q);
    if (r.fallback) std::fprintf(stderr, "kernelab fuse: falling back to the unfused chain: %s\n", r.fallback->c_str());
    if (json) {
      nlohmann::json j;
      j["expr"] = q.expr;
      j["rows"] = rows, j["cols"] = cols, j["dtype"] = dtype;
      nlohmann::json outs = nlohmann::json::array(), ins = nlohmann::json::array(), err = nlohmann::json::object(),
                     err_u = nlohmann::json::object();
      for (const auto& o : r.program.outputs) outs.push_back(o.name);
      for (const auto& i : r.program.inputs) ins.push_back({{"name", i.name}, {"kind", jit::kind_name(i.kind)}});
      for (const auto& c : r.outputs) err[c.name] = err_json(c.max_rel_err), err_u[c.name] = err_json(c.max_rel_err_unfused);
      j["outputs"] = outs;
      j["inputs"] = ins;
      j["schedule"] = r.schedule;
      j["fallback"] = r.fallback ? nlohmann::json(*r.fallback) : nlohmann::json(nullptr);
      j["max_rel_err"] = err;
      j["max_rel_err_unfused"] = err_u;
      j["tolerance"] = r.tolerance;
      j["passed"] = r.passed;
      j["bytes_unfused"] = r.bytes_unfused;
      j["bytes_fused"] = r.bytes_fused;
      j["kernels_unfused"] = r.kernels_unfused;
      j["passes_fused"] = r.passes_fused;
      j["compile_s_cold"] = r.jit ? nlohmann::json(r.jit->compile_s_cold) : nlohmann::json(nullptr);
      j["compile_s_warm"] = r.jit ? nlohmann::json(r.jit->compile_s_warm) : nlohmann::json(nullptr);
      if (r.jit) {
        j["arch"] = arch;
        j["nvrtc_version"] = r.jit->nvrtc_version;
        j["nvrtc_cache"] = r.jit->cache_hit ? "hit" : "miss";
        j["ptx_bytes"] = r.jit->ptx.size();
        j["ptx_local_memory"] = r.jit->ptx.find(".local") != std::string::npos;
        j["ptx_vector_loads"] = occurrences(r.jit->ptx, "ld.global.nc.v4");  // the 16-byte path (codegen.h)
        j["ptx_vector_stores"] = occurrences(r.jit->ptx, "st.global.v4");
      }
      if (r.traffic_unfused) {
        j["profile_l2_bytes"] = r.profile_l2_bytes;
        j["launches_unfused"] = r.traffic_unfused->launches;
        j["requested_bytes_unfused"] = r.traffic_unfused->requested_bytes;
        j["dram_bytes_unfused"] = r.traffic_unfused->dram_bytes;
      }
      if (r.traffic_fused) {
        j["requested_bytes_fused"] = r.traffic_fused->requested_bytes;
        j["dram_bytes_fused"] = r.traffic_fused->dram_bytes;
      }
      if (emit) j["source_fused"] = r.fused_source, j["source_unfused"] = r.unfused_source;
      fmt::print("{}\n", j.dump(2));
    } else {
      if (emit) {
        fmt::print("// ===== fused kernel ({} dtype) =====\n{}\n", dtype, r.fused_source);
        fmt::print("// ===== unfused chain ({} kernels) =====\n{}\n", r.kernels_unfused, r.unfused_source);
      }
      fmt::print("kernelab fuse: {}\n", q.expr);
      std::string ins, outs;
      for (const auto& i : r.program.inputs) ins += fmt::format("{}{} {}", ins.empty() ? "" : ", ", i.name, shape_of(i.kind, rows, cols));
      for (const auto& o : r.program.outputs) outs += fmt::format("{}{} {}", outs.empty() ? "" : ", ", o.name, shape_of(o.kind, rows, cols));
      fmt::print("  {} x {}, {}; inputs {}; outputs {}\n", rows, cols, dtype, ins, outs);
      fmt::print("  schedule {}: fused = 1 kernel, {} pass{} over each row; unfused = {} kernels{}\n", r.schedule, r.passes_fused,
                 r.passes_fused > 1 ? "es" : "", r.kernels_unfused, r.fallback ? " (fallback: " + *r.fallback + ")" : "");
      if (!q.compile_only) {
        std::vector<std::vector<std::string>> table;
        for (const auto& c : r.outputs)
          table.push_back({c.name, fmt::format("{:.3g}", c.max_rel_err), fmt::format("{:.3g}", c.max_rel_err_unfused), fmt::format("{:.0e}", r.tolerance),
                           c.max_rel_err <= r.tolerance ? "yes" : "NO"});
        print_table({"output", r.fallback ? std::string("max_rel_err (unfused: the result)") : std::string("max_rel_err (fused)"), "max_rel_err (unfused)", "tolerance", "passed"}, table);
      }
      fmt::print("  bytes: unfused {}, fused {} ({:.2f}x fewer)\n", human_bytes(r.bytes_unfused), human_bytes(r.bytes_fused),
                 double(r.bytes_unfused) / double(r.bytes_fused));
      if (r.traffic_unfused)
        fmt::print("  simulator profiler: requested unfused {} ({} launches), fused {}; DRAM behind a {} L2 (the H100 SXM's, modelled): "
                   "unfused {}, fused {}\n",
                   human_bytes(r.traffic_unfused->requested_bytes), r.traffic_unfused->launches,
                   r.traffic_fused ? human_bytes(r.traffic_fused->requested_bytes) : "-", human_bytes(r.profile_l2_bytes),
                   human_bytes(r.traffic_unfused->dram_bytes), r.traffic_fused ? human_bytes(r.traffic_fused->dram_bytes) : "-");
      if (r.jit)
        fmt::print("  NVRTC {} {}: compile cold {:.3f} s, warm {:.6f} s (cache {}), PTX {} bytes, {}, {} 16-byte loads and {} stores\n",
                   r.jit->nvrtc_version, arch, r.jit->compile_s_cold, r.jit->compile_s_warm, r.jit->cache_hit ? "hit" : "miss",
                   r.jit->ptx.size(), r.jit->ptx.find(".local") == std::string::npos ? "no local memory" : "USES LOCAL MEMORY (.local)",
                   occurrences(r.jit->ptx, "ld.global.nc.v4"), occurrences(r.jit->ptx, "st.global.v4"));
      fmt::print("  {}\n", r.passed ? "passed" : "FAILED");
    }
    if (!r.passed) throw CLI::RuntimeError(1);
  });
}
#else
void add_fuse(CLI::App& app) {
  auto* sub = app.add_subcommand("fuse", "fuse an elementwise / row-reduction expression (not in this build)");
  sub->allow_extras();
  sub->callback([] { runtime_failure("this kernelab was built without the simulator, which `fuse` checks its kernels in"); });
}
#endif

}  // namespace kl::cli
