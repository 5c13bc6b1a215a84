#include <fmt/format.h>

#include "cli/common.h"
#include "kernelab/probe.h"

namespace kl::cli {

void add_probe(CLI::App& app) {
  auto* sub = app.add_subcommand("probe", "measure this machine's ceilings (bandwidth, FLOP/s) and store them");
  static bool json = false;
  sub->add_flag("--json", json, "print one JSON object");
  sub->callback([] {
    HostCeilings h = probe_host();
    if (json) {
      fmt::print("{}\n", host_ceilings_json(h).dump(2));
      return;
    }
    fmt::print("cpu: {} ({} threads)\n", h.cpu, h.threads);
    fmt::print("memory bandwidth (STREAM triad, {} MiB arrays): {:.1f} GB/s\n", h.triad_array_bytes / (1 << 20), h.triad_bytes_per_s / 1e9);
    fmt::print("fp32 FMA peak, 1 thread: {:.1f} GFLOP/s\n", h.fma_flops_1t / 1e9);
    fmt::print("fp32 FMA peak, {} threads: {:.1f} GFLOP/s\n", h.threads, h.fma_flops_all / 1e9);
    fmt::print("stored in {}\n", h.path);
  });
}

}  // namespace kl::cli
