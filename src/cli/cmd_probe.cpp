#include <fmt/format.h>

#include <optional>

#include "cli/common.h"
#include "kernelab/probe.h"

namespace kl::cli {

void add_probe(CLI::App& app) {
  auto* sub = app.add_subcommand("probe", "measure this machine's ceilings (bandwidth, FLOP/s) and store them");
  static bool json = false;
  sub->add_flag("--json", json, "print one JSON object");
  static bool gpu = false;
  sub->add_flag("--gpu", gpu, "also measure GPU 0: copy bandwidth and cuBLASLt GEMM rates (fails without a GPU)");
  sub->callback([] {
    HostCeilings h = probe_host();
    std::optional<GpuCeilings> g;
    if (gpu) g = probe_gpu();
    if (json) {
      nlohmann::json j = host_ceilings_json(h);
      if (g) j["gpu"] = gpu_ceilings_json(*g);
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("cpu: {} ({} threads); CPU rungs: {} ({}), the best this CPU runs: {}; transparent huge pages: {}\n", h.cpu,
               h.threads, h.isa.used, h.isa.extensions, h.isa.cpu, h.isa.huge_pages);
    fmt::print("memory bandwidth (STREAM triad, {} MiB arrays): {:.1f} GB/s\n", h.triad_array_bytes / (1 << 20), h.triad_bytes_per_s / 1e9);
    fmt::print("fp32 FMA peak, 1 thread: {:.1f} GFLOP/s\n", h.fma_flops_1t / 1e9);
    fmt::print("fp32 FMA peak, {} threads: {:.1f} GFLOP/s\n", h.threads, h.fma_flops_all / 1e9);
    fmt::print("stored in {}\n", h.path);
    if (!g) return;
    fmt::print("gpu: {}\n", g->gpu);
    fmt::print("copy bandwidth (device to device, {} MiB): {:.1f} GB/s\n", g->copy_buffer_bytes / (1 << 20), g->copy_bytes_per_s / 1e9);
    for (const GpuGemmRate& r : g->gemm) fmt::print("cuBLASLt {} GEMM {}^3: {:.1f} TFLOP/s\n", r.dtype, r.n, r.flops_per_s / 1e12);
    for (const std::string& why : g->skipped) fmt::print("not measured: {}\n", why);
  });
}

}  // namespace kl::cli
