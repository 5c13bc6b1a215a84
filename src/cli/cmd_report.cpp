#include <ctime>
#include <fmt/format.h>
#include <set>

#include "cli/common.h"
#include "kernelab/probe.h"
#include "report/report.h"

namespace kl::cli {

namespace {
std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}
}  // namespace

void add_report(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "check and benchmark the default suite on every backend present; write the report");
  static std::string out = "report";
  static double max_seconds = 0.3;
  sub->add_option("--out", out, "output folder (index.html, report.md, results.json)");
  sub->add_option("--max-seconds", max_seconds, "timing budget per point")->check(CLI::PositiveNumber);
  sub->callback([] {
    ReportData r;
    r.generated_at = utc_now();
    r.commit = build_commit();
    r.host = host_cpu_name();
    DeviceSet devs = open_devices({Backend::cpu, Backend::cuda, Backend::sim});
    r.absent_backends = devs.absent;
    BenchOptions opt;
    opt.max_seconds = max_seconds;
    opt.min_runs = 5;
    opt.cold = true;  // caches flushed before every run: no point rides on a cache-resident working set
    std::set<std::pair<std::string, std::string>> roofs_done;
    for (const Op& op : registry()) {
      int points = 0;
      for (const Problem& p : op.report_cases(op)) {
        for (const Variant& v : op.variants) {
          Device* dev = find_device(devs, v.backend);
          if (!dev || v.supports(p)) continue;
          fmt::print(stderr, "report: {} {} {} {}\n", op.name, v.name, dtype_name(p.dtype), p.label());
          r.points.push_back(bench_variant(op, v, p, *dev, opt));
          ++points;
          if (roofs_done.insert({dev->name(), std::string(dtype_name(p.dtype))}).second) {
            Ceilings c = dev->ceilings(p.dtype);
            r.roofs.push_back({dev->name(), std::string(backend_name(dev->backend())), std::string(dtype_name(p.dtype)),
                               c.peak_flops, c.bandwidth, c.flops_source, c.bandwidth_source});
          }
        }
      }
      r.check_summary.push_back(fmt::format("{}: {} points timed, each checked against the float64 reference first", op.name, points));
    }
    write_report(r, out);
    fmt::print("wrote {0}/index.html, {0}/report.md, {0}/results.json ({1} points)\n", out, r.points.size());
    for (const std::string& a : devs.absent) fmt::print("not run: {}\n", a);
  });
}

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
