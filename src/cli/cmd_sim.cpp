// `kernelab sim run FILE.cu [-- ARGS]`: a CUDA program on the CPU simulator, with its output
// and exit code; `--race-check` and `--memcheck` make races and bad accesses fail it.
// `kernelab sim bench`: what a simulated thread, barrier and shuffle cost on this machine.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "kernelab/error.h"

#if KERNELAB_HAVE_SIM
#include "cli/sim_profile_view.h"
#include "hw/specs.h"
#include "sim/run/bench.h"
#include "sim/run/driver.h"
#endif

namespace kl::cli {

#if KERNELAB_HAVE_SIM

// The hardware database's figures for a GPU as the simulated device takes them (KERNELAB_SIM_DEVICE).
static std::string sim_device_text(const GpuSpec& g) {
  const ArchLimits& a = find_arch(g.arch);
  return fmt::format(
      "name={};sms={};cc={}{};threads_per_sm={};blocks_per_sm={};regs_per_sm={};regs_per_block={};smem_per_sm={};"
      "smem_optin={};reserved_smem={};l2_bytes={};memory_bytes={};clock_khz={}",
      g.device_names.empty() ? g.name : g.device_names.front(), int(g.sm_count.value), a.cc_major, a.cc_minor,
      a.max_threads_per_sm, a.max_blocks_per_sm, a.regs_per_sm, a.max_regs_per_block, a.smem_per_sm, a.max_smem_per_block, a.reserved_smem_per_block,
      std::uint64_t(g.l2_bytes.value), std::uint64_t(g.memory_bytes.value), int(g.boost_clock_mhz.value * 1000));
}

// Before `--`, arguments that name source files are more of the program's sources.
static void split_sources(kl::sim::RunRequest& r) {
  const std::size_t before = r.args.size() - std::min<std::size_t>(r.args.size(), std::size_t(args_after_separator));
  std::vector<std::string> program_args;
  for (std::size_t i = 0; i < r.args.size(); ++i) {
    const std::string ext = std::filesystem::path(r.args[i]).extension().string();
    const bool source = ext == ".cu" || ext == ".cpp" || ext == ".cc" || ext == ".cxx";
    if (i < before && source) r.more_sources.push_back(r.args[i]);
    else program_args.push_back(r.args[i]);
  }
  r.args = program_args;
}

void add_sim(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "run CUDA programs on the CPU SIMT simulator (no GPU needed)");
  sim->require_subcommand(1);

  auto* run = sim->add_subcommand("run", "compile a CUDA program for the simulator and run it; its exit code is ours");
  static kl::sim::RunRequest req;
  run->add_flag("--race-check", req.race_check,
                "run every launch with each barrier interval's threads forward and reversed; a difference fails the run");
  run->add_flag("--memcheck", req.memcheck,
                "AddressSanitizer build: out-of-bounds and use-after-free accesses in kernels fail the run");
  run->add_option("-D", req.defines, "define a macro for the program (NAME or NAME=VALUE)")->allow_extra_args(false);
  run->add_option("-I", req.include_dirs, "add an include directory")->allow_extra_args(false);
  run->add_option("--std", req.std, "the C++ dialect, also as -std=c++20 (default c++17, nvcc's default)")
      ->check(CLI::IsMember({"c++17", "c++20", "gnu++17", "gnu++20"}));
  run->add_option("--Xcompiler", req.host_flags,
                  "flags for the host compiler, comma-separated, as nvcc's -Xcompiler takes them (e.g. -Xcompiler -fopenmp)")
      ->allow_extra_args(false)
      ->delimiter(',');
  run->add_flag("-v,--verbose", req.verbose, "print the compile command and whether the build came from the cache");
  run->add_flag("--no-cache", req.no_cache, "compile even if a cached build exists");
  static bool profile_json = false;
  static std::string gpu;
  run->add_flag("--profile", req.profile,
                "count every launch's memory accesses as Nsight Compute does (instrumented build; blocks run one at a time)");
  run->add_flag("--json", profile_json, "with --profile: the counts as one JSON object on stdout (the program's output goes to stderr)");
  run->add_option("--gpu", gpu,
                  "the GPU the program sees (kernelab specs: name, SMs, compute capability, per-SM limits, L2; "
                  "default H100-like); with --profile also the L2 of the DRAM model (default h200)");
  run->add_option("--profile-blocks", req.profile_blocks, "with --profile: count only the first N blocks of each launch (0: all)");
  run->add_option("file", req.file, "the CUDA program (.cu)")->required();
  run->add_option("args", req.args,
                  "the program's other source files (.cu, .cpp, .cc, .cxx), then, after --, its arguments");
  run->callback([] {
    split_sources(req);
    if (!gpu.empty()) {
      const ArchLimits& a = find_arch(find_gpu(gpu).arch);
      req.device = sim_device_text(find_gpu(gpu));
      req.cuda_arch = a.cc_major * 100 + a.cc_minor * 10;
    }
    if (!req.profile) {
      if (profile_json) bad_input("sim run: --json goes with --profile");
      const int code = kl::sim::run_program(req);
      if (code != 0) throw CLI::RuntimeError(code);
      return;
    }
    if (req.race_check || req.memcheck) bad_input("sim run: --profile cannot be combined with --race-check or --memcheck");
    req.profile_l2_bytes = std::uint64_t(find_gpu(gpu.empty() ? "h200" : gpu).l2_bytes.value);
    req.program_stdout_to_stderr = profile_json;
    std::vector<kl::sim::LaunchProfile> launches;
    const int code = kl::sim::run_program(req, &launches);
    const auto kernels = kl::sim::profile_by_kernel(launches);
    if (profile_json) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& k : kernels) list.push_back(kernel_profile_json(k));
      fmt::print("{}\n", nlohmann::json{{"kernels", list}}.dump(2));
    } else {
      fmt::print("\nkernelab sim profile of {}:\n", req.file);
      print_kernel_profiles(kernels);
    }
    if (code != 0) throw CLI::RuntimeError(code);
  });
  add_sim_profile(*sim);

  auto* bench = sim->add_subcommand("bench", "cost per simulated thread, barrier and shuffle on this machine");
  static unsigned threads = 0;
  static bool json = false;
  bench->add_option("--threads", threads, "OS threads for the parallel point (default: all cores)");
  bench->add_flag("--json", json, "print one JSON object");
  bench->callback([] {
    const auto points = kl::sim::bench_simulator(threads);
    if (json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& p : points)
        rows.push_back({{"os_threads", p.os_threads}, {"blocks", p.blocks}, {"threads_per_block", p.threads_per_block},
                        {"ns_per_thread", p.ns_per_thread}, {"ns_per_thread_barrier", p.ns_per_thread_barrier},
                        {"ns_per_block_barrier", p.ns_per_block_barrier},
                        {"ns_per_thread_shuffle", p.ns_per_thread_shuffle}});
      fmt::print("{}\n", nlohmann::json{{"simulator", rows}}.dump(2));
      return;
    }
    std::vector<std::vector<std::string>> table;
    for (const auto& p : points)
      table.push_back({fmt::format("{}", p.os_threads), fmt::format("{} x {}", p.blocks, p.threads_per_block),
                       fmt::format("{:.1f}", p.ns_per_thread), fmt::format("{:.1f}", p.ns_per_thread_barrier),
                       fmt::format("{:.0f}", p.ns_per_block_barrier), fmt::format("{:.1f}", p.ns_per_thread_shuffle)});
    print_table({"OS threads", "grid x block", "ns/thread", "ns/thread/barrier", "ns/block barrier", "ns/lane/shuffle"}, table);
    fmt::print("(ns/thread: an empty kernel's time per thread; barrier and shuffle: extra time per thread and call)\n");
  });
}

#else

void add_sim(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "run CUDA programs on the CPU SIMT simulator (not in this build)");
  sim->allow_extras();
  sim->callback([] {
    runtime_failure("this kernelab was built without the simulator (it needs the CUDA toolkit's headers and Boost.Context)");
  });
}

#endif

}  // namespace kl::cli
