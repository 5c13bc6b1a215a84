// `kernelab sim profile OP [shape] [--variant V] [--gpu NAME] [--json]`: every CUDA rung of an op
// run once on the simulator's profiling build (on the op's profile cases when no shape is given),
// with ncu's memory metrics, the modelled DRAM bytes against the op's fewest, and a modelled time.
#if KERNELAB_HAVE_SIM
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "cli/common.h"
#include "cli/sim_profile_view.h"
#include "kernelab/error.h"
#include "sim/device/sim_profile.h"

namespace kl::cli {

namespace {
double metric(const std::vector<sim::Metric>& ms, std::string_view name) {
  for (const sim::Metric& m : ms)
    if (name == m.name) return m.value;
  return 0;
}
std::string per(double a, double b) { return b > 0 ? fmt::format("{:.2f}", a / b) : "-"; }
std::string count(double x) { return x >= 1e6 ? fmt::format("{:.3g}", x) : fmt::format("{:.0f}", x); }

std::vector<std::string> memory_cells(const sim::ProfileCounts& c, double k) {
  const auto ms = sim::profile_metrics(c, k);
  const double ld = metric(ms, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
               st = metric(ms, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum");
  const double sld = k * double(c.shared_ld_requests), sst = k * double(c.shared_st_requests);
  return {count(ld),
          per(metric(ms, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), ld),
          count(st),
          per(metric(ms, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"), st),
          count(k * double(c.global_atom_requests)),
          count(sld),
          per(metric(ms, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), sld),
          count(sst),
          per(metric(ms, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"), sst),
          per(double(c.memory_lanes), double(c.memory_requests()))};
}
const std::vector<std::string> kMemoryHeader = {"ld req",  "ld sect/req",   "st req",  "st sect/req",   "atom req",
                                                "smem ld", "conflicts/ld",  "smem st", "conflicts/st",  "lanes/inst"};
}  // namespace

nlohmann::json kernel_profile_json(const sim::KernelProfile& k) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const sim::Metric& m : sim::profile_metrics(k.counts, k.scale())) metrics[m.name] = m.value;
  return {{"name", k.name},
          {"launches", k.launches},
          {"grid", {k.grid.x, k.grid.y, k.grid.z}},
          {"block", {k.block.x, k.block.y, k.block.z}},
          {"blocks_total", k.blocks_total},
          {"blocks_run", k.blocks_run},
          {"metrics", metrics}};
}

void print_kernel_profiles(const std::vector<sim::KernelProfile>& kernels) {
  std::vector<std::vector<std::string>> rows;
  for (const sim::KernelProfile& k : kernels) {
    std::vector<std::string> row = {k.name, fmt::format("{}", k.launches)};
    for (std::string& cell : memory_cells(k.counts, k.scale())) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"kernel", "launches"};
  header.insert(header.end(), kMemoryHeader.begin(), kMemoryHeader.end());
  print_table(header, rows);
  for (const sim::KernelProfile& k : kernels)
    if (k.blocks_run != k.blocks_total)
      fmt::print("{}: sampled, {} of {} blocks counted, counts scaled by {:.2f}\n", k.name, k.blocks_run, k.blocks_total,
                 k.scale());
  fmt::print("(counted by the simulator as Nsight Compute defines the metrics; every metric: --json)\n");
}

namespace {
// One problem's profiled rungs (and, with --vs-plain, each one's plain simulated run in seconds).
struct ProblemProfile {
  Problem problem;
  std::vector<RungProfile> rungs;
  std::vector<double> plain_seconds;
};

nlohmann::json profile_json(const Op& op, const ProblemProfile& pp, const GpuSpec& gpu, bool vs_plain) {
  nlohmann::json out = nlohmann::json::array();
  for (const RungProfile& r : pp.rungs) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const sim::KernelProfile& k : r.kernels) kernels.push_back(kernel_profile_json(k));
    out.push_back({{"variant", r.variant}, {"config", r.config}, {"kernels", kernels},
                   {"sampled_blocks", r.sampled() ? nlohmann::json{{"scale", r.scale}} : nlohmann::json(nullptr)},
                   {"min_bytes", r.min_bytes}, {"model_dram_bytes", r.dram_bytes()},
                   {"model_dram_over_min", r.min_bytes > 0 ? r.dram_bytes() / r.min_bytes : 0.0},
                   {"modelled_time_s", r.time.seconds}, {"modelled_bound", r.time.bound}, {"model_source", r.time.source},
                   {"checked", r.check.passed}, {"check_failure", r.check.failure}, {"profiled_run_s", r.seconds}});
    if (vs_plain) out.back()["plain_run_s"] = pp.plain_seconds[out.size() - 1];
  }
  return {{"op", op.name}, {"problem", pp.problem.label()}, {"dtype", dtype_name(pp.problem.dtype)}, {"gpu", gpu.id}, {"rungs", out}};
}

void print_profile_table(const Op& op, const ProblemProfile& pp, const GpuSpec& gpu, bool vs_plain) {
  const Problem& p = pp.problem;
  fmt::print("{} {} {}: simulator counts; DRAM bytes and time modelled for {} ({:.0f} MiB L2)\n", op.name, p.label(),
             dtype_name(p.dtype), gpu.name, gpu.l2_bytes.value / 1048576);
  std::vector<std::vector<std::string>> rows;
  for (const RungProfile& r : pp.rungs) {
    std::vector<std::string> row = {r.variant, r.config};
    for (std::string& cell : memory_cells(r.total, r.scale)) row.push_back(std::move(cell));
    row.push_back(fmt::format("{:.3g}", r.dram_bytes()));
    row.push_back(r.min_bytes > 0 ? fmt::format("{:.2f}x", r.dram_bytes() / r.min_bytes) : "-");
    row.push_back(format_seconds(r.time.seconds) + " " + r.time.bound);
    row.push_back(r.check.passed ? "ok" : r.check.failure);
    if (vs_plain) {
      const double plain = pp.plain_seconds[rows.size()];
      row.push_back(fmt::format("{} / {} = {:.1f}x", format_seconds(r.seconds), format_seconds(plain), r.seconds / plain));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"variant", "config"};
  header.insert(header.end(), kMemoryHeader.begin(), kMemoryHeader.end());
  header.insert(header.end(), {"DRAM B (modelled)", "x min", "time (modelled)", "check"});
  if (vs_plain) header.push_back("profiled / plain run (this host)");
  print_table(header, rows);
  for (const RungProfile& r : pp.rungs)
    if (r.sampled()) fmt::print("{} {}: sampled, counts scaled by {:.2f}\n", r.variant, r.config, r.scale);
  fmt::print("(modelled: {}; a lower bound, not a measurement. Per kernel and every metric: --json)\n", pp.rungs.front().time.source);
}
}  // namespace

void add_sim_profile(CLI::App& sim) {
  auto* sub = sim.add_subcommand("profile", "every CUDA rung of an op on the simulator's profiling build: ncu's memory metrics, "
                                            "modelled DRAM bytes and time");
  static ProblemFlags problem;
  static std::vector<std::string> variants, configs;
  static std::string gpu_id = "h200";
  static std::uint64_t sample_blocks = 0, seed = 1;
  static bool json = false, vs_plain = false;
  static std::string op_name;
  sub->add_option("op", op_name, "the op (kernelab list)")->required();
  sub->add_option("--variant", variants, "rungs to profile (default: every CUDA rung)")->delimiter(',');
  static std::string rung_file;
  sub->add_option("--rung", rung_file, "a rung file of your own (FILE.cu, written as src/ops/*/cuda/*.cu are), profiled beside the others");
  sub->add_option("--config", configs, "configs to profile (default: every config)")->delimiter(',');
  sub->add_option("--gpu", gpu_id, "the GPU whose L2 size, bandwidth and clocks the model uses (kernelab specs)");
  sub->add_option("--sample-blocks", sample_blocks, "count only the first N blocks of each launch and scale (0: all)");
  sub->add_option("--seed", seed, "seed of the random inputs");
  sub->add_flag("--json", json, "print one JSON object");
  sub->add_flag("--vs-plain", vs_plain, "also time each rung's plain simulated run: the profiler's cost as a ratio");
  problem.attach(*sub);
  sub->callback([] {
    if (!rung_file.empty()) load_rung_file(rung_file, op_name, {.sim = true, .sim_profile = true});
    const Op& op = find_op(op_name);
    const GpuSpec& gpu = find_gpu(gpu_id);
    // No shape, option or dtype given: the op's profile cases, the small shapes the report profiles
    // (its default problem can take the simulator many minutes per rung).
    const bool report_cases = !problem.any_given(op) && op.profile_cases;
    const std::vector<Problem> problems = report_cases ? op.profile_cases(op) : std::vector<Problem>{problem.problem(op)};
    check_config_names(op, chosen_variants(op, variants), configs);
    DeviceSet devs = open_devices({Backend::sim});
    if (devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    const bool progress = isatty(2);  // a large problem takes minutes: say which rung is running
    const sim::ProfileOptions options{std::uint64_t(gpu.l2_bytes.value), sample_blocks};
    std::vector<ProblemProfile> profiled;
    for (const Problem& p : problems) {
      ProblemProfile pp{p, {}, {}};
      const Prepared prep = prepare(op, p, seed);
      for (const Variant* v : chosen_variants(op, variants)) {
        if (v->backend != Backend::cuda || v->peer) continue;  // a library peer's kernels are not ours to count
        for (const Config* c : chosen_configs(*v, configs, false)) {
          if (v->supports_config(p, *c)) continue;
          if (progress) fmt::print(stderr, "kernelab sim profile: {} {} on {} {} ...\n", v->name, c->name, p.label(), dtype_name(p.dtype));
          pp.rungs.push_back(profile_variant(op, *v, *c, prep, *devs.present.front(), options, gpu));
          if (!vs_plain) continue;
          const auto start = std::chrono::steady_clock::now();
          check_variant(op, *v, *c, prep, *devs.present.front());
          pp.plain_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
      }
      if (!pp.rungs.empty()) profiled.push_back(std::move(pp));
    }
    if (profiled.empty())
      bad_input(report_cases ? fmt::format("no chosen CUDA rung of {} runs any of its profile cases; give a shape", op.name)
                             : fmt::format("no chosen CUDA rung of {} runs {}", op.name, problems.front().label()));
    if (json) {
      if (!report_cases) {
        fmt::print("{}\n", profile_json(op, profiled.front(), gpu, vs_plain).dump(2));
        return;
      }
      nlohmann::json cases = nlohmann::json::array();
      for (const ProblemProfile& pp : profiled) cases.push_back(profile_json(op, pp, gpu, vs_plain));
      fmt::print("{}\n", nlohmann::json{{"op", op.name}, {"gpu", gpu.id}, {"cases", cases}}.dump(2));
      return;
    }
    if (report_cases)
      fmt::print("no shape given: {}'s {}, the shapes the report profiles (give a shape for another)\n\n", op.name,
                 problems.size() == 1 ? std::string("profile case") : fmt::format("{} profile cases", problems.size()));
    for (std::size_t i = 0; i < profiled.size(); ++i) {
      if (i) fmt::print("\n");
      print_profile_table(op, profiled[i], gpu, vs_plain);
    }
  });
}

}  // namespace kl::cli
#endif  // KERNELAB_HAVE_SIM
