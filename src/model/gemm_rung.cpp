// The model behind `explain gemm --rung`: tile sizes, arithmetic intensity at each level of the
// hierarchy, traffic, occupancy, the stages Little's law asks for, and the modelled bound.
#include "model/gemm_rung.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hw/occupancy.h"
#include "hw/specs.h"
#include "kernelab/error.h"
#include "model/text.h"
#include "ops/static_facts.h"

namespace kl::model {

namespace {

std::string bytes_text(double b) {
  if (b >= 1 << 30) return fmt::format("{:.4g} GiB", b / (1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.4g} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.4g} KiB", b / (1 << 10));
  return fmt::format("{:.4g} B", b);
}
double ceil_div(double a, double b) { return std::ceil(a / b); }

// The registers and static shared memory of the config's kernels on the arch closest to the
// GPU's (sm_90a's objects for sm_90, sm_80's for the others): the most of each over the kernels.
struct Resources {
  bool known = false;
  std::string why_not, arch;
  int registers = 0;
  int64_t smem = 0;  // static + the config's dynamic
};

Resources resources_of(const Variant& v, const Config& c, const GpuSpec& g) {
  Resources r;
  const CudaStatic& s = cuda_static();
  if (!s.available()) return {false, s.why_not, {}};
  const ObjectFacts* obj = s.find(v.source);
  if (!obj) return {false, "no static facts for " + v.source, {}};
  r.arch = g.arch == "sm_90" ? "sm_90a" : "sm_80";
  int64_t smem = 0;
  for (const KernelGroup& group : c.kernels)
    for (const KernelRef& k : group.kernels) {
      const KernelFacts* f = obj->find(r.arch, k.name);
      if (!f) return {false, fmt::format("no {} facts for kernel {}", r.arch, k.name), {}};
      r.registers = std::max(r.registers, f->registers);
      smem = std::max(smem, f->smem_bytes);
    }
  r.smem = smem + c.dynamic_smem_bytes;
  r.known = true;
  return r;
}

}  // namespace

RungExplanation explain_gemm_rung(const Request& req, const std::string& rung, const std::string& config_name) {
  const Op& op = find_op("gemm");
  const Variant* v = op.find_variant(rung);
  if (!v || v->backend != Backend::cuda) {
    std::string names;
    for (const Variant& x : op.variants)
      if (x.backend == Backend::cuda) names += (names.empty() ? "" : ", ") + x.name;
    bad_input(fmt::format("--rung {}: not a CUDA gemm rung (the rungs: {})", rung, names));
  }
  if (v->peer) bad_input(fmt::format("--rung {}: a library peer; its tiles are the library's own, nothing to model", rung));
  const Config& c = config_name.empty() ? v->configs.front() : v->config(config_name);
  const GpuSpec& g = find_gpu(req.gpu);
  const GemmShape shape = gemm_shape(req);
  const DType dtype = parse_format(req.dtype).storage;
  // The first layout of A and B the rung takes (the Hopper rungs want B column-major).
  std::string layouts;
  Reason why;
  for (const char* epi : {"none", "bias"})  // the unfused pair takes only problems with an epilogue
    for (const char* la : {"row", "col"})
      for (const char* lb : {"row", "col"}) {
        if (!layouts.empty()) continue;
        const Problem p = make_problem(op, dtype, {{"m", shape.m}, {"n", shape.n}, {"k", shape.k}},
                                       {{"a_layout", la}, {"b_layout", lb}, {"epilogue", epi}}, Use::cost_only);
        const Reason r = v->supports_config(p, c);
        if (!r) layouts = fmt::format("A {}-major, B {}-major{}", la, lb, std::string(epi) == "bias" ? ", a bias epilogue" : "");
        else if (!why) why = r;
      }
  if (layouts.empty()) bad_input(fmt::format("--rung {} does not take this problem: {}", rung, *why));
  const double m = double(shape.m), n = double(shape.n), k = double(shape.k), e = dtype_bits(dtype) / 8.0;

  RungExplanation out;
  nlohmann::json& j = out.json;
  j = {{"rung", v->name}, {"config", c.name}, {"source", v->source}, {"gpu", g.id}, {"dtype", req.dtype},
       {"m", shape.m}, {"n", shape.n}, {"k", shape.k}, {"modelled", true}};
  std::string& s = out.text;
  s += fmt::format("gemm rung {} ({}), config {}, {} m={} n={} k={} ({}), on {} ({}); every time below is modelled\n",
                   v->name, v->source, c.name, req.dtype, shape.m, shape.n, shape.k, layouts, g.name, g.id);
  j["layouts"] = layouts;
  s += fmt::format("  note         {}\n", v->note);
  if (!c.tiling) {  // the naive and coalesced rungs
    s += "  tiles        none: each thread reads its own row of A and column of B from global memory, 2 FLOPs per "
         "2 elements loaded (the caches, not the kernel, provide any reuse)\n";
    j["tiling"] = nullptr;
    return out;
  }
  const Tiling& t = *c.tiling;
  const bool tensor = !t.mma.empty();
  const double sms = g.sm_count.value, clock = g.boost_clock_mhz.value * 1e6;

  // Tiles and the grid.
  const double splits = t.split_k ? std::max(1.0, std::min({16.0, std::floor(k / t.split_k), ceil_div(k, t.block_k)})) : 1;
  const double tiles_m = ceil_div(m, t.block_m), tiles_n = ceil_div(n, t.block_n), k_steps = ceil_div(ceil_div(k, t.block_k), splits);
  const double blocks = tiles_m * tiles_n * splits;
  const double flops = 2 * m * n * k, executed = 2 * tiles_m * t.block_m * tiles_n * t.block_n * k_steps * t.block_k;
  s += fmt::format("  tiles        block {}x{}x{} ({} threads, {} warps), warp {}x{}, {}; {} stage{} of k in shared memory\n",
                   t.block_m, t.block_n, t.block_k, c.threads_per_block, c.threads_per_block / 32, t.warp_m, t.warp_n,
                   tensor ? fmt::format("{} ({} FLOPs each)", t.mma, 2 * t.mma_m * t.mma_n * t.mma_k)
                          : fmt::format("{}x{} accumulators per thread (FFMA)", t.thread_m, t.thread_n),
                   t.stages, t.stages == 1 ? "" : "s");
  s += fmt::format("  grid         {} x {}{} = {} blocks, {} k steps each; the tiles cover {}% of the padded work (edges)\n",
                   num(tiles_n), num(tiles_m), splits > 1 ? fmt::format(" x {} k slices", num(splits)) : "", num(blocks),
                   num(k_steps), num(100 * flops / executed));
  j["k_slices"] = splits;
  j["tiling"] = {{"block_m", t.block_m}, {"block_n", t.block_n}, {"block_k", t.block_k}, {"warp_m", t.warp_m},
                 {"warp_n", t.warp_n}, {"thread_m", t.thread_m}, {"thread_n", t.thread_n}, {"mma", t.mma},
                 {"stages", t.stages}, {"threads", c.threads_per_block}};
  j["blocks"] = blocks;

  // Occupancy from the built kernels.
  const Resources res = resources_of(*v, c, g);
  int per_sm = 1;
  if (res.known) {
    const ArchLimits& arch = find_arch(g.arch);
    const Occupancy o = compute_occupancy(arch, c.threads_per_block, res.registers, res.smem);
    per_sm = std::max(1, o.active_blocks_per_sm);
    s += fmt::format("  occupancy    {} registers/thread, {} shared memory/block ({} objects): {} block{}/SM, {} warps, "
                     "limited by {}\n",
                     res.registers, bytes_text(double(res.smem)), res.arch, o.active_blocks_per_sm,
                     o.active_blocks_per_sm == 1 ? "" : "s", o.active_warps_per_sm, o.limiter);
    j["occupancy"] = occupancy_json(o);
  } else {
    s += fmt::format("  occupancy    not known ({}); 1 block/SM assumed below\n", res.why_not);
    j["occupancy"] = nullptr;
  }
  const double concurrent = sms * per_sm, waves = blocks / concurrent, wave_eff = waves / std::ceil(waves);
  s += fmt::format("  waves        {} blocks over {} SMs x {} = {} waves; the last is {}% full\n", num(blocks), num(sms),
                   per_sm, num(waves), num(100 * (waves - std::floor(waves) > 0 ? waves - std::floor(waves) : 1.0)));

  // Arithmetic intensity at each level.
  const double ai_block = 2.0 * t.block_m * t.block_n / ((t.block_m + t.block_n) * e);
  const double ai_warp = 2.0 * t.warp_m * t.warp_n / ((t.warp_m + t.warp_n) * e);
  s += "  intensity    FLOPs per byte moved into each level:\n";
  s += fmt::format("    global -> shared     2*BM*BN / ((BM+BN)*e) = {} FLOP/B (each k slice of A and B serves the block's tile)\n",
                   num(ai_block));
  const bool wgmma = t.mma.rfind("wgmma", 0) == 0;  // operands straight from shared memory, per warpgroup
  s += fmt::format("    {}  2*WM*WN / ((WM+WN)*e) = {} FLOP/B ({})\n", wgmma ? "shared -> tensor core" : "shared -> registers ",
                   num(ai_warp), wgmma ? "a warpgroup's wgmma operands, read from shared memory" : "a warp's distinct reads");
  if (tensor) {
    const double ai_mma = 2.0 * t.mma_m * t.mma_n * t.mma_k / ((t.mma_m * t.mma_k + t.mma_k * t.mma_n) * e);
    s += fmt::format("    per instruction      {} FLOPs from {} B of A and B operands = {} FLOP/B\n",
                     2 * t.mma_m * t.mma_n * t.mma_k, num((t.mma_m * t.mma_k + t.mma_k * t.mma_n) * e), num(ai_mma));
    j["intensity_mma"] = ai_mma;
  } else {
    const double ai_thread = 2.0 * t.thread_m * t.thread_n / ((t.thread_m + t.thread_n) * e);
    s += fmt::format("    per thread           2*TM*TN / ((TM+TN)*e) = {} FLOP/B loaded into its registers\n", num(ai_thread));
    j["intensity_thread"] = ai_thread;
  }
  j["intensity_global_to_shared"] = ai_block;
  j["intensity_shared_to_registers"] = ai_warp;

  // Traffic, and the modelled time of each level.
  const Figure peak = gpu_peak(g, tensor ? req.dtype : "fp32", req.measured);
  const Figure bw = gpu_bandwidth(g, req.measured);
  // Split-K adds its fp32 partials: written by the slices, read by the reduction.
  const double l2_bytes = e * (m * k * tiles_n + k * n * tiles_m);
  const double dram_bytes = e * (m * k + k * n + m * n) + (splits > 1 ? 8 * splits * m * n : 0);
  const double smem_bytes = e * m * n * k * (1.0 / t.warp_n + 1.0 / t.warp_m);
  const double t_compute = executed / peak.value / wave_eff, t_dram = dram_bytes / bw.value;
  const double t_smem = smem_bytes / (sms * 128 * clock);
  s += "  traffic\n";
  s += fmt::format("    L2 -> shared         {} (A read {} times, once per block column; B {} times); the database has no L2 "
                   "bandwidth to time it\n",
                   bytes_text(l2_bytes), num(tiles_n), num(tiles_m));
  s += fmt::format("    DRAM                 {} at least (A, B, D once; beta = 0{}): {} at {} GB/s ({})\n", bytes_text(dram_bytes),
                   splits > 1 ? "; the partials 8*S*m*n" : "",
                   secs(t_dram), num(bw.value / 1e9), bw.source);
  s += fmt::format("    shared memory        {} read: {} at 32 banks x 4 B per clock per SM, {} SMs at {} MHz ({})\n",
                   bytes_text(smem_bytes), secs(t_smem), num(sms), num(g.boost_clock_mhz.value), g.boost_clock_mhz.source);
  s += fmt::format("    compute              {} FLOPs executed at {} TFLOP/s {} ({}), over {}% full waves: {}\n", num(executed),
                   num(peak.value / 1e12), tensor ? req.dtype : "fp32 FFMA", peak.source, num(100 * wave_eff), secs(t_compute));
  j["bytes_l2_to_shared"] = l2_bytes;
  j["bytes_dram_min"] = dram_bytes;
  j["bytes_shared_to_registers"] = smem_bytes;
  j["t_compute_s"] = t_compute;
  j["t_dram_s"] = t_dram;
  j["t_shared_s"] = t_smem;

  // Little's law: at peak the SM consumes (peak / SMs) / ai_block bytes of tiles per second; to
  // keep it fed across a load latency L, L times that many bytes must be in flight.
  const double stage_bytes = (t.block_m + t.block_n) * t.block_k * e;
  const double demand = peak.value / sms / ai_block;  // bytes per second per SM
  s += fmt::format("  stages       one stage is (BM+BN)*BK*e = {}; at peak an SM consumes {} GB/s of tiles ((peak/SMs) / {} FLOP/B).\n"
                   "               In flight to cover a load latency L (the database has no latency; `kernelab bench "
                   "exp_cache_latency` measures it):\n",
                   bytes_text(stage_bytes), num(demand / 1e9), num(ai_block));
  nlohmann::json little = nlohmann::json::array();
  for (double latency_ns : {300.0, 600.0, 1000.0}) {
    const double in_flight = demand * latency_ns * 1e-9;
    const double stages = ceil_div(in_flight, stage_bytes * per_sm) + 1;
    s += fmt::format("    L = {:4} ns: {} in flight per SM = {} stage{} per block in flight, {} with the one being read\n",
                     latency_ns, bytes_text(in_flight), num(stages - 1), stages == 2 ? "" : "s", num(stages));
    little.push_back({{"latency_ns", latency_ns}, {"bytes_in_flight", in_flight}, {"stages", stages}});
  }
  s += t.stages > 1 ? fmt::format("    this config: {} stages, {} in flight while one is read\n", t.stages, t.stages - 1)
                    : fmt::format("    this config: 1 stage, loaded while its warps wait; {} overlap the latency\n",
                                  per_sm == 1 ? "no other block on the SM to" : fmt::format("{} other block{} on the SM",
                                                                                           per_sm - 1, per_sm == 2 ? "" : "s"));
  j["stage_bytes"] = stage_bytes;
  j["littles_law"] = little;

  const double bound = std::max({t_compute, t_dram, t_smem});
  const char* limiter = bound == t_compute ? "compute" : bound == t_dram ? "DRAM" : "shared memory";
  s += fmt::format("  bound        {} (modelled), set by {}: {}% of the {} peak at best\n", secs(bound), limiter,
                   num(100 * (flops / bound) / peak.value), tensor ? req.dtype : "fp32");
  j["t_bound_s"] = bound;
  j["limiter"] = limiter;
  return out;
}

}  // namespace kl::model
