// `kernelab sim run FILE.cu [-- ARGS]`: a CUDA program on the CPU simulator, with its output
// and exit code; `--race-check` and `--memcheck` make races and bad accesses fail it.
// `kernelab sim bench`: what a simulated thread, barrier and shuffle cost on this machine.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "kernelab/error.h"

#if KERNELAB_HAVE_SIM
#include "sim/run/bench.h"
#include "sim/run/driver.h"
#endif

namespace kl::cli {

#if KERNELAB_HAVE_SIM

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
  run->add_flag("-v,--verbose", req.verbose, "print the compile command and whether the build came from the cache");
  run->add_flag("--no-cache", req.no_cache, "compile even if a cached build exists");
  run->add_option("file", req.file, "the CUDA program (.cu)")->required();
  run->add_option("args", req.args, "arguments for the program, after --");
  run->callback([] {
    const int code = kl::sim::run_program(req);
    if (code != 0) throw CLI::RuntimeError(code);
  });

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
